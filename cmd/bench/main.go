package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/testcluster"
)

const class = "bench-nfs"

func main() {
	sizes := flag.String("sizes", "1000,5000,20000", "numbers of users")
	applyMax := flag.Int("apply-max", 5000, "largest N whose apply of N new users is timed")
	runs := flag.Int("runs", 3, "runs per measurement (the median is reported)")
	out := flag.String("out", "BENCHMARKS.md", "report file")
	flag.StringVar(&keepProfiles, "profiles", "", "a directory to keep the raw CPU profiles in (go tool pprof reads them)")
	listOnce := flag.String("list-once", "", "internal: list the claims of this namespace once, as a new process, and print how long the List took (ns); the connection from KUBE_HOST, KUBE_TOKEN and KUBE_CLUSTER_CA_CERT_DATA")
	hold := flag.Int("hold", 0, "instead of measuring, seed this many claims, apply the plans' configuration with them listed, print how to plan it, and keep the cluster until interrupted")
	flag.Parse()
	var err error
	switch {
	case *listOnce != "":
		err = listOnceCold(*listOnce)
	case *hold > 0:
		err = holdCluster(*hold)
	default:
		err = run(*sizes, *runs, *applyMax, *out)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// spawns is how many spawns of each kind BenchmarkSpawnHooks times.
const spawns = 20

// run is the bench: it measures on a new test bed and writes the report to out.
func run(sizesFlag string, runs, applyMax int, out string) error {
	ctx := context.Background()
	work, err := os.MkdirTemp("", "jupyter-bench-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(work) }()
	b, err := startAudited(ctx, work, runs)
	if err != nil {
		return err
	}
	defer b.cluster.Stop()

	d := reportData{Runs: runs, Spawns: spawns}
	loadStart := loadAverage()
	floor, floorTrace, floorDir, err := b.measureFloor(ctx)
	if err != nil {
		return err
	}
	d.Floor = floor
	if d.Fixed, err = b.fixedCosts(ctx, floorDir); err != nil {
		return err
	}
	d.Fixed.FloorTrace = floorTrace
	fmt.Printf("fixed cost: plan over an empty namespace %s, apply of one user %s\n", d.Fixed.Plan, d.Fixed.Apply1)
	if d.Rows, err = b.measureSizes(ctx, sizesFlag, applyMax); err != nil {
		return err
	}
	if d.Costs, err = measureSpawnHooks(ctx, spawns); err != nil {
		return err
	}
	d.Load = fmt.Sprintf("%s at the start, %s at the end", loadStart, loadAverage())
	d.Machine = thisMachine()
	text, err := report(d)
	if err != nil {
		return err
	}
	return os.WriteFile(out, []byte(text), 0o644)
}

// startAudited starts the test bed (startBed) with the API server's audit
// log of the provider's requests in work.
func startAudited(ctx context.Context, work string, runs int) (*bench, error) {
	policy := filepath.Join(work, "audit.yaml")
	auditLog := filepath.Join(work, "audit.log")
	if err := os.WriteFile(policy, []byte(`apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
  - level: Metadata
    users: ["`+testcluster.LimitedUser+`"]
  - level: None
`), 0o600); err != nil {
		return nil, err
	}
	ws, cluster, err := startBed(ctx, work, testcluster.Options{APIServerArgs: []string{
		"--audit-policy-file=" + policy, "--audit-log-path=" + auditLog, "--audit-log-mode=blocking",
	}})
	if err != nil {
		return nil, err
	}
	return &bench{ws: ws, cluster: cluster, cs: cluster.Admin(), work: work, auditLog: auditLog, runs: runs}, nil
}

// measureSizes measures each N of sizesFlag (a comma-separated list): the
// plans, and the applies up to applyMax users.
func (b *bench) measureSizes(ctx context.Context, sizesFlag string, applyMax int) ([]row, error) {
	var rows []row
	for _, f := range strings.Split(sizesFlag, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			return nil, err
		}
		r, err := b.measure(ctx, n)
		if err == nil && n <= applyMax {
			err = b.measureApplies(ctx, &r)
		}
		if err != nil {
			return nil, fmt.Errorf("size %d: %w", n, err)
		}
		fmt.Printf("N=%d: list %s (protobuf %s), plan %s, listed %s, flip %s, data source %s, apply %s (bare client-go %s, protobuf %s), %d/%d requests\n",
			n, r.List, r.ListPB, r.PlanNoop, r.PlanListed, r.PlanFlip, r.PlanData, r.Apply, r.Bare, r.BarePB, r.ReqPlan, r.ReqApply)
		rows = append(rows, r)
	}
	return rows, nil
}

func users(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s%05d", prefix, i)
	}
	return out
}
