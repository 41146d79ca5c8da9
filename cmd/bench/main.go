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

func run(sizesFlag string, runs, applyMax int, out string) error {
	ctx := context.Background()
	work, err := os.MkdirTemp("", "jupyter-bench-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(work) }()
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
		return err
	}
	ws, cluster, err := startBed(ctx, work, testcluster.Options{APIServerArgs: []string{
		"--audit-policy-file=" + policy, "--audit-log-path=" + auditLog, "--audit-log-mode=blocking",
	}})
	if err != nil {
		return err
	}
	defer cluster.Stop()
	cs := cluster.Admin()

	loadStart := loadAverage()
	floorDir, err := writeConfig(work, "floor", "")
	if err != nil {
		return err
	}
	if err := ws.Run(ctx, floorDir, "init", "-no-color"); err != nil {
		return err
	}
	floor, _, _, err := timeTofu(ctx, ws, floorDir, auditLog, runs, "plan", "-no-color", "-lock=false")
	if err != nil {
		return err
	}
	fmt.Printf("floor: empty plan %s\n", floor)
	floorTrace, err := traceTofu(ctx, ws, floorDir, "plan", "-no-color", "-lock=false")
	if err != nil {
		return err
	}
	fixed, err := fixedCosts(ctx, ws, cs, work, auditLog, runs, floorDir)
	if err != nil {
		return err
	}
	fixed.FloorTrace = floorTrace
	fmt.Printf("fixed cost: plan over an empty namespace %s, apply of one user %s\n", fixed.Plan, fixed.Apply1)

	var rows []row
	for _, f := range strings.Split(sizesFlag, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			return err
		}
		r, err := measure(ctx, ws, cs, cluster, work, auditLog, n, runs, n <= applyMax)
		if err != nil {
			return fmt.Errorf("size %d: %w", n, err)
		}
		fmt.Printf("N=%d: list %s (protobuf %s), plan %s, listed %s, flip %s, data source %s, apply %s (bare client-go %s, protobuf %s), %d/%d requests\n",
			n, r.List, r.ListPB, r.PlanNoop, r.PlanListed, r.PlanFlip, r.PlanData, r.Apply, r.Bare, r.BarePB, r.ReqPlan, r.ReqApply)
		rows = append(rows, r)
	}
	const spawns = 20
	costs, err := measureSpawnHooks(ctx, spawns)
	if err != nil {
		return err
	}
	load := fmt.Sprintf("%s at the start, %s at the end", loadStart, loadAverage())
	return os.WriteFile(out, []byte(report(floor, fixed, rows, runs, load)+spawnSection(costs, spawns)), 0o644)
}

func users(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s%05d", prefix, i)
	}
	return out
}
