package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/tofurun"
)

// breakdown is where one run's wall time went, from OpenTofu's trace log:
// the provider processes started and the time the provider spent serving
// each kind of request (tf_req_duration_ms). Tracing slows the run, so these
// are proportions, not the timed figures.
type breakdown struct {
	Total  time.Duration
	Starts int
	RPCs   map[string]time.Duration
	// startUp is, for each provider process, the time from OpenTofu's
	// "starting plugin" to the provider's first answer, less that answer's
	// own duration: process start, Go's init, go-plugin's handshake and
	// automatic mTLS, the gRPC connection.
	StartUp []time.Duration
}

// traceTofu runs a tofu command once with TF_LOG=trace and reads the breakdown from the log.
func traceTofu(ctx context.Context, ws *tofurun.Workspace, dir string, args ...string) (breakdown, error) {
	b := breakdown{RPCs: map[string]time.Duration{}}
	logPath := filepath.Join(dir, "trace.log")
	_ = os.Remove(logPath)
	cmd := ws.Command(ctx, dir, args...)
	// The framework's own trace lines (several per list element) are left
	// out: they would slow the provider more than anything it does.
	cmd.Env = append(cmd.Env, "TF_LOG=trace", "TF_LOG_SDK_FRAMEWORK=off", "TF_LOG_PATH="+logPath)
	start := time.Now()
	if out, err := cmd.CombinedOutput(); err != nil {
		return b, fmt.Errorf("tofu %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	total := time.Since(start)
	raw, err := os.ReadFile(logPath)
	if err != nil {
		return b, err
	}
	b = parseTrace(string(raw))
	b.Total = total
	return b, nil
}

// parseTrace reads a breakdown (all but its total) from an OpenTofu trace
// log: the provider processes started, the provider's time per kind of
// request (tf_req_duration_ms of each "Received downstream response"), and
// each process's start-up, from "starting plugin" to its first answer less
// that answer's own duration.
func parseTrace(raw string) breakdown {
	b := breakdown{RPCs: map[string]time.Duration{}}
	durRe := regexp.MustCompile(`tf_req_duration_ms=(\d+)`)
	rpcRe := regexp.MustCompile(`tf_rpc=(\w+)`)
	var started time.Time // of the provider process not yet answering
	for _, line := range strings.Split(raw, "\n") {
		at, _ := time.Parse(time.RFC3339Nano, strings.SplitN(line, " ", 2)[0])
		if strings.Contains(line, "provider: starting plugin") {
			b.Starts++
			started = at
		}
		d, rpc := durRe.FindStringSubmatch(line), rpcRe.FindStringSubmatch(line)
		if d != nil && rpc != nil {
			ms, _ := strconv.Atoi(d[1])
			took := time.Duration(ms) * time.Millisecond
			b.RPCs[rpc[1]] += took
			if !started.IsZero() && !at.IsZero() {
				b.StartUp = append(b.StartUp, at.Sub(started)-took)
				started = time.Time{}
			}
		}
	}
	return b
}

// timeTofu runs a tofu command runs times and returns the median wall time,
// the provider's requests in the last run and its peak resident memory (KiB).
func timeTofu(ctx context.Context, ws *tofurun.Workspace, dir, auditLog string, runs int, args ...string) (time.Duration, int, int64, error) {
	var ds []time.Duration
	var reqs int
	var peak int64
	for i := 0; i < runs; i++ {
		before := countLines(auditLog)
		cmd := ws.Command(ctx, dir, args...)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		start := time.Now()
		if err := cmd.Start(); err != nil {
			return 0, 0, 0, err
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		var err error
		peak = 0
	wait:
		for {
			select {
			case err = <-done:
				break wait
			case <-time.After(20 * time.Millisecond):
				peak = max(peak, providerPeak(ws.ProviderBin))
			}
		}
		ds = append(ds, time.Since(start))
		if err != nil {
			return 0, 0, 0, fmt.Errorf("tofu %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
		}
		reqs = countLines(auditLog) - before
	}
	return median(ds), reqs, peak, nil
}

// providerPeak returns the largest VmHWM (peak RSS, KiB) of running provider processes.
func providerPeak(bin string) int64 {
	entries, _ := os.ReadDir("/proc")
	var peak int64
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		exe, err := os.Readlink(filepath.Join("/proc", e.Name(), "exe"))
		if err != nil || exe != bin {
			continue
		}
		status, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "status"))
		for _, line := range strings.Split(string(status), "\n") {
			if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmHWM:" {
				v, _ := strconv.ParseInt(f[1], 10, 64)
				peak = max(peak, v)
			}
		}
	}
	return peak
}

func countLines(path string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	return strings.Count(string(b), "\n")
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}
