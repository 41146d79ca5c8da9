package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/tofurun"
)

// fixed is what a plan or an apply of one resource costs before a claim
// is read or created, timed and traced.
type fixed struct {
	Plan, Apply1          time.Duration // no-change plan over no claims; apply of one new user
	PlanTrace, ApplyTrace breakdown
	FloorTrace            breakdown
	Builtin               time.Duration // no-change plan of one terraform_data: OpenTofu alone, no provider process
	FloorNoTLS, PlanNoTLS time.Duration // the floor and the plan over no claims with TF_DISABLE_PLUGIN_TLS=1
	MTLS                  mtlsShare     // of profiled plans over no claims
}

// fixedCosts times a no-change plan of the same resource over a namespace
// without claims, and an apply of one new user: what any plan or apply of
// one resource of this provider costs (OpenTofu's validate and plan walks,
// three or four provider starts) before claims count.
func fixedCosts(ctx context.Context, ws *tofurun.Workspace, cs kubernetes.Interface, work, auditLog string, runs int, floorDir string) (fixed, error) {
	var f fixed
	const ns = "bench-empty"
	if err := namespace(ctx, cs, ns); err != nil {
		return f, err
	}
	dir, err := planConfig(ctx, ws, work, ns)
	if err != nil {
		return f, err
	}
	if f.Plan, _, _, err = timeTofu(ctx, ws, dir, auditLog, runs, "plan", "-no-color", "-lock=false", "-detailed-exitcode"); err != nil {
		return f, err
	}
	if f.PlanTrace, err = traceTofu(ctx, ws, dir, "plan", "-no-color", "-lock=false"); err != nil {
		return f, err
	}
	// The same plans without go-plugin's automatic mTLS, which OpenTofu
	// turns off when TF_DISABLE_PLUGIN_TLS is set.
	noTLS := *ws
	noTLS.Env = append(slices.Clone(ws.Env), "TF_DISABLE_PLUGIN_TLS=1")
	if f.PlanNoTLS, _, _, err = timeTofu(ctx, &noTLS, dir, auditLog, runs, "plan", "-no-color", "-lock=false", "-detailed-exitcode"); err != nil {
		return f, err
	}
	if f.FloorNoTLS, _, _, err = timeTofu(ctx, &noTLS, floorDir, auditLog, runs, "plan", "-no-color", "-lock=false"); err != nil {
		return f, err
	}
	// Profiled several times: a plan over no claims is a few samples long.
	if f.MTLS, err = profileMTLS(ctx, ws, dir, 5*runs, "plan", "-no-color", "-lock=false"); err != nil {
		return f, err
	}
	// OpenTofu's plan of one resource of its own, without any provider process.
	bdir := filepath.Join(work, "cfg-builtin")
	if err := os.MkdirAll(bdir, 0o755); err != nil {
		return f, err
	}
	if err := os.WriteFile(filepath.Join(bdir, "main.tf"), []byte("resource \"terraform_data\" \"one\" {\n  input = \"x\"\n}\n"), 0o644); err != nil {
		return f, err
	}
	for _, args := range [][]string{{"init", "-no-color"}, {"apply", "-auto-approve", "-no-color"}} {
		if err := ws.Run(ctx, bdir, args...); err != nil {
			return f, err
		}
	}
	if f.Builtin, _, _, err = timeTofu(ctx, ws, bdir, "", runs, "plan", "-no-color", "-lock=false", "-detailed-exitcode"); err != nil {
		return f, err
	}
	var applies []time.Duration
	for i := 0; i <= runs; i++ {
		adir, err := applyConfig(ctx, ws, cs, work, fmt.Sprintf("bench-apply-one-%d", i), 1)
		if err != nil {
			return f, err
		}
		if i == runs { // one more, traced
			f.ApplyTrace, err = traceTofu(ctx, ws, adir, "apply", "-auto-approve", "-no-color")
			return f, err
		}
		d, _, _, err := timeTofu(ctx, ws, adir, auditLog, 1, "apply", "-auto-approve", "-no-color")
		if err != nil {
			return f, err
		}
		applies = append(applies, d)
		f.Apply1 = median(applies)
	}
	return f, nil
}
