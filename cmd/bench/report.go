package main

import (
	_ "embed"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"text/template"
	"time"
)

// reportText is BENCHMARKS.md's template: the prose and the tables' shapes;
// the Go side computes what goes in them.
//
//go:embed report.tmpl
var reportText string

var reportTemplate = template.Must(template.New("report.tmpl").Funcs(template.FuncMap{
	"secs":      secs,
	"ms":        ms,
	"mib":       mib,
	"kib":       func(bytes int) float64 { return float64(bytes) / 1024 },
	"kb":        func(bytes int) int { return bytes / 1000 },
	"median":    median,
	"sub":       func(a, b time.Duration) time.Duration { return a - b },
	"ratio":     func(a, b time.Duration) float64 { return a.Seconds() / b.Seconds() },
	"percent":   func(a, b time.Duration) float64 { return 100 * a.Seconds() / b.Seconds() },
	"addSecs":   func(a, b time.Duration) float64 { return a.Seconds() + b.Seconds() },
	"planBound": planBound,
	"last":      func(i int, rows []row) bool { return i == len(rows)-1 },
}).Parse(reportText))

// reportData is what BENCHMARKS.md reports: one run's measurements.
type reportData struct {
	Machine machine
	Runs    int    // runs per measurement
	Load    string // the machine's load average at the start and at the end
	Floor   time.Duration
	Fixed   fixed
	Rows    []row // one per N
	Spawns  int   // spawns per kind in BenchmarkSpawnHooks
	Costs   []spawnCost
}

// machine is the report's first line: where and when it was measured.
type machine struct {
	Date, CPU, Go, OS, Arch, Host string
	CPUs                          int
}

// thisMachine is the machine the bench runs on, today.
func thisMachine() machine {
	host, _ := os.Hostname()
	cpu := "unknown CPU"
	if info, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(info), "\n") {
			if strings.HasPrefix(line, "model name") {
				cpu = strings.TrimSpace(strings.SplitN(line, ":", 2)[1])
				break
			}
		}
	}
	return machine{Date: time.Now().UTC().Format("2006-01-02"), CPUs: runtime.NumCPU(), CPU: cpu,
		Go: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH, Host: host}
}

// report is BENCHMARKS.md.
func report(d reportData) (string, error) { return render("report", d) }

// render executes one of report.tmpl's templates (a section) with d.
func render(name string, d reportData) (string, error) {
	var b strings.Builder
	if err := reportTemplate.ExecuteTemplate(&b, name, d); err != nil {
		return "", err
	}
	return b.String(), nil
}

// Targets are the targets, each with its verdict in this run.
func (d reportData) Targets() []target { return targets(d.Floor, d.Fixed, d.Rows) }

// Largest is the row of the largest N, whose profiles the report shows (nil
// without rows).
func (d reportData) Largest() *row {
	if len(d.Rows) == 0 {
		return nil
	}
	return &d.Rows[len(d.Rows)-1]
}

// InProvider is the time the provider spent serving requests.
func (b breakdown) InProvider() time.Duration {
	var in time.Duration
	for _, d := range b.RPCs {
		in += d
	}
	return in
}

// Outside is the wall time outside the provider's requests.
func (b breakdown) Outside() time.Duration { return b.Total - b.InProvider() }

// Other is the provider's time in the requests not named.
func (b breakdown) Other(named ...string) time.Duration {
	var other time.Duration
	for rpc, d := range b.RPCs {
		if !slices.Contains(named, rpc) {
			other += d
		}
	}
	return other
}

// StatePerUser is the state's size over N, without the users listed.
func (r row) StatePerUser() int64 { return r.StateBare / int64(r.N) }

// StateListedPerUser is the state's size over N, with the users listed.
func (r row) StateListedPerUser() int64 { return r.StateListed / int64(r.N) }

// PerPlan is the mTLS's CPU time per profiled plan, provider and OpenTofu (ms).
func (m mtlsShare) PerPlan() float64 { return ms(m.Provider+m.Tofu) / float64(m.Plans) }

// TLSPerStart is what the mTLS adds to each provider start (ms): the plan
// over no claims with it less the same plan without it, over the starts.
func (f fixed) TLSPerStart() float64 {
	return ms(f.Plan-f.PlanNoTLS) / float64(max(f.PlanTrace.Starts, 1))
}

func secs(d time.Duration) string { return fmt.Sprintf("%.2f s", d.Seconds()) }

// mib is KiB in MiB.
func mib(kib int64) float64 { return float64(kib) / 1024 }

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
