package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"
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

// measureFloor times `tofu plan` of an empty configuration that requires
// the provider (the floor) and traces one more; it returns the
// configuration's directory too.
func (b *bench) measureFloor(ctx context.Context) (floor time.Duration, trace breakdown, dir string, err error) {
	if dir, err = writeConfig(b.work, "floor", ""); err != nil {
		return 0, trace, "", err
	}
	if err := b.ws.Run(ctx, dir, "init", "-no-color"); err != nil {
		return 0, trace, "", err
	}
	if floor, _, _, err = timeTofu(ctx, b.ws, dir, b.auditLog, b.runs, "plan", "-no-color", "-lock=false"); err != nil {
		return 0, trace, "", err
	}
	fmt.Printf("floor: empty plan %s\n", floor)
	trace, err = traceTofu(ctx, b.ws, dir, "plan", "-no-color", "-lock=false")
	return floor, trace, dir, err
}

// fixedCosts times a no-change plan of the same resource over a namespace
// without claims, and an apply of one new user: what any plan or apply of
// one resource of this provider costs (OpenTofu's validate and plan walks,
// three or four provider starts) before claims count. floorDir is the
// floor's configuration, planned again without mTLS.
func (b *bench) fixedCosts(ctx context.Context, floorDir string) (fixed, error) {
	var f fixed
	const ns = "bench-empty"
	if err := namespace(ctx, b.cs, ns); err != nil {
		return f, err
	}
	dir, err := b.planConfig(ctx, ns)
	if err != nil {
		return f, err
	}
	if f.Plan, _, _, err = timeTofu(ctx, b.ws, dir, b.auditLog, b.runs, "plan", "-no-color", "-lock=false", "-detailed-exitcode"); err != nil {
		return f, err
	}
	if f.PlanTrace, err = traceTofu(ctx, b.ws, dir, "plan", "-no-color", "-lock=false"); err != nil {
		return f, err
	}
	if f.PlanNoTLS, f.FloorNoTLS, err = b.withoutTLS(ctx, dir, floorDir); err != nil {
		return f, err
	}
	// Profiled several times: a plan over no claims is a few samples long.
	if f.MTLS, err = profileMTLS(ctx, b.ws, dir, 5*b.runs, "plan", "-no-color", "-lock=false"); err != nil {
		return f, err
	}
	if f.Builtin, err = b.builtinPlan(ctx); err != nil {
		return f, err
	}
	f.Apply1, f.ApplyTrace, err = b.applyOne(ctx)
	return f, err
}

// withoutTLS times the plan over no claims (dir) and the floor (floorDir)
// without go-plugin's automatic mTLS, which OpenTofu turns off when
// TF_DISABLE_PLUGIN_TLS is set.
func (b *bench) withoutTLS(ctx context.Context, dir, floorDir string) (plan, floor time.Duration, err error) {
	noTLS := *b.ws
	noTLS.Env = append(slices.Clone(b.ws.Env), "TF_DISABLE_PLUGIN_TLS=1")
	if plan, _, _, err = timeTofu(ctx, &noTLS, dir, b.auditLog, b.runs, "plan", "-no-color", "-lock=false", "-detailed-exitcode"); err != nil {
		return 0, 0, err
	}
	floor, _, _, err = timeTofu(ctx, &noTLS, floorDir, b.auditLog, b.runs, "plan", "-no-color", "-lock=false")
	return plan, floor, err
}

// builtinPlan times OpenTofu's no-change plan of one resource of its own
// (a terraform_data), without any provider process.
func (b *bench) builtinPlan(ctx context.Context) (time.Duration, error) {
	bdir := filepath.Join(b.work, "cfg-builtin")
	if err := os.MkdirAll(bdir, 0o755); err != nil {
		return 0, err
	}
	if err := os.WriteFile(filepath.Join(bdir, "main.tf"), []byte("resource \"terraform_data\" \"one\" {\n  input = \"x\"\n}\n"), 0o644); err != nil {
		return 0, err
	}
	for _, args := range [][]string{{"init", "-no-color"}, {"apply", "-auto-approve", "-no-color"}} {
		if err := b.ws.Run(ctx, bdir, args...); err != nil {
			return 0, err
		}
	}
	d, _, _, err := timeTofu(ctx, b.ws, bdir, "", b.runs, "plan", "-no-color", "-lock=false", "-detailed-exitcode")
	return d, err
}

// applyOne times the apply of one new user (the median of runs, each in a
// namespace of its own) and traces one more.
func (b *bench) applyOne(ctx context.Context) (time.Duration, breakdown, error) {
	var applies []time.Duration
	var apply1 time.Duration
	for i := 0; i < b.runs; i++ {
		adir, err := b.applyConfig(ctx, fmt.Sprintf("bench-apply-one-%d", i), 1)
		if err != nil {
			return apply1, breakdown{}, err
		}
		d, _, _, err := timeTofu(ctx, b.ws, adir, b.auditLog, 1, "apply", "-auto-approve", "-no-color")
		if err != nil {
			return apply1, breakdown{}, err
		}
		applies = append(applies, d)
		apply1 = median(applies)
	}
	adir, err := b.applyConfig(ctx, fmt.Sprintf("bench-apply-one-%d", b.runs), 1)
	if err != nil {
		return apply1, breakdown{}, err
	}
	trace, err := traceTofu(ctx, b.ws, adir, "apply", "-auto-approve", "-no-color")
	return apply1, trace, err
}
