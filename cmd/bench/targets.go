package main

import (
	"fmt"
	"time"
)

// target is one of the targets at one N: the measured value as a
// multiple of its base, the bound, and why it is not met where the cause
// is measured in the same run.
type target struct {
	Name    string
	N       int
	Ratio   float64
	Bound   float64
	Measure string
	Cause   string
}

func (t target) Met() string {
	if t.Ratio <= t.Bound {
		return "✓"
	}
	return "✗"
}

// beyond says what a plan or apply spends beyond the least any provider
// could take (own seconds; less than 5 ms, or below it in a noisy run, is
// nothing measurable).
func beyond(what string, own float64) string {
	if own > 0.005 {
		return fmt.Sprintf("; the %s spends %.2f s beyond them", what, own)
	}
	return fmt.Sprintf("; the %s spends nothing measurable beyond them", what)
}

// targets are the targets, each with its ratio in this run and
// whether it is met. A plan target whose bound is below the fixed cost (a
// plan of the resource over no claims) or leaves less than the List after
// it, or an apply target below the apply of one user plus the bare loop,
// says so: that part is OpenTofu's, the same for any provider.
func targets(floor time.Duration, fixed fixed, rows []row) []target {
	var ts []target
	for _, r := range rows {
		ts = append(ts, planTargets(floor, fixed, r)...)
		ts = append(ts, readTarget(r))
		if r.Applied {
			ts = append(ts, applyTarget(fixed, r))
		}
		if r.N >= 20000 {
			ts = append(ts, sizeTargets(r)...)
		}
	}
	return ts
}

// planBase is a plan target's base (seconds): 1.5 × the floor and one List.
func planBase(floor, list time.Duration) float64 { return 1.5*floor.Seconds() + list.Seconds() }

// planBound is a plan target's bound (seconds): 1.25 × its base.
func planBound(floor, list time.Duration) float64 { return 1.25 * planBase(floor, list) }

// plannedRun is one of the timed plans a plan target is about, with what
// OpenTofu alone spends in it.
type plannedRun struct {
	name    string
	d       time.Duration
	strings time.Duration // OpenTofu's own cost of the state's per-user strings
	config  time.Duration // OpenTofu's own evaluation of the configuration's expressions over the names
}

// planTargets are the plan targets at one N: each timed plan within 1.25 ×
// (1.5 × floor + one List).
func planTargets(floor time.Duration, fixed fixed, r row) []target {
	base, bound := planBase(floor, r.List), planBound(floor, r.List)
	// OpenTofu's evaluation of users = jsonencode({ for u in var.users : u => {} }):
	// the plan with the users listed so, less the same plan with users = file(...).
	forExpr := max(r.PlanListed-r.PlanFile, 0)
	var ts []target
	for _, p := range []plannedRun{{"no-change plan", r.PlanNoop, r.TofuStrings, 0}, {"no-change plan, users listed", r.PlanListed, r.TofuStringsListed, forExpr},
		{"no-change plan, users from a file", r.PlanFile, r.TofuStringsListed, 0}, {"RWX flip under keep_existing", r.PlanFlip, r.TofuStringsFlip, 0}} {
		t := target{p.name, r.N, p.d.Seconds() / base, 1.25, fmt.Sprintf("%s; bound %.2f s", secs(p.d), bound), ""}
		if t.Ratio > t.Bound {
			t.Cause = planCause(fixed, r, p, bound)
		}
		ts = append(ts, t)
	}
	return ts
}

// planCause says why a plan target is not met: the least any provider
// could take against the bound (seconds).
func planCause(fixed fixed, r row, p plannedRun, bound float64) string {
	// The least any provider could take: OpenTofu's fixed cost of a plan of
	// one resource, one List, what OpenTofu alone spends on the state's
	// strings and on the configuration's expression over the names.
	least := fixed.Plan.Seconds() + r.List.Seconds() + p.strings.Seconds() + p.config.Seconds()
	parts := fmt.Sprintf("the fixed cost (%s), one List (%s), OpenTofu's own cost of the state's strings (%s)", secs(fixed.Plan), secs(r.List), secs(p.strings))
	if p.config > 0 {
		parts += fmt.Sprintf(" and its evaluation of the `for` expression over the names (%s: the same plan with users from a file takes %s)", secs(p.config), secs(r.PlanFile))
	}
	// claims is this provider's choice (every user's claim in the state,
	// for per-user drift), unlike the users the configuration gives and the
	// fixed cost.
	withoutClaims := least - r.TofuStrings.Seconds()
	var cause string
	switch {
	case withoutClaims > bound:
		cause = fmt.Sprintf("unreachable for any provider: %s already take %.2f s", parts, least)
	case least > bound:
		cause = fmt.Sprintf("unreachable with every user's claim in the state (`claims`, kept on purpose: DESIGN.md): %s already take %.2f s; without `claims` the least would be %.2f s, %.0f %% of the bound",
			parts, least, withoutClaims, 100*withoutClaims/bound)
	default:
		cause = fmt.Sprintf("%s take %.2f s, %.0f %% of the bound", parts, least, 100*least/bound)
	}
	return cause + beyond("plan", p.d.Seconds()-least)
}

// readTarget is the data source's read within 2 × one List.
func readTarget(r row) target {
	read := target{"read of jupyter_home_claims (ReadDataSource / List)", r.N, r.ReadData.Seconds() / r.List.Seconds(), 2,
		fmt.Sprintf("%s; a List %s", secs(r.ReadData), secs(r.List)), ""}
	if !(read.Ratio > read.Bound && r.ListCold > 0) {
		return read
	}
	// The least any provider could take: the List as the first request of
	// a new process, which every provider process is.
	read.Measure = fmt.Sprintf("%.1f ms; a List %.1f ms", ms(r.ReadData), ms(r.List))
	cold := fmt.Sprintf("the same List as the first request of a new process (a new connection, nothing warm), as every provider process makes it (client-go, JSON, as one List), takes %.1f ms, %.2f × one List",
		ms(r.ListCold), r.ListCold.Seconds()/r.List.Seconds())
	if r.ListCold.Seconds() > read.Bound*r.List.Seconds() {
		read.Cause = "unreachable for any provider: " + cold
	} else {
		read.Cause = cold
	}
	// readData comes from traced runs, which tracing slows a little.
	if own := ms(r.ReadData - r.ListCold); own >= 0.5 {
		read.Cause += fmt.Sprintf("; the read (traced) spends %.1f ms beyond it", own)
	} else {
		read.Cause += "; the read (traced) spends nothing measurable beyond it"
	}
	return read
}

// applyTarget is the apply of N new claims within 1.5 × the bare loop.
func applyTarget(fixed fixed, r row) target {
	t := target{"apply of N new claims / bare client-go loop", r.N, r.Apply.Seconds() / r.Bare.Seconds(), 1.5,
		fmt.Sprintf("%s; the loop %s", secs(r.Apply), secs(r.Bare)), ""}
	// The least any provider could take: OpenTofu's apply of one user, then
	// the loop creating claims that carry KubeSpawner's metadata, as every
	// home claim must.
	least := fixed.Apply1.Seconds() + r.BareMeta.Seconds()
	bound := t.Bound * r.Bare.Seconds()
	switch {
	case t.Ratio <= t.Bound:
	case least > bound:
		t.Cause = fmt.Sprintf("unreachable for any provider: an apply of one user (%s) and the loop creating claims with KubeSpawner's labels and annotations (%s) already take %.2f s, %.2f × the bare loop",
			secs(fixed.Apply1), secs(r.BareMeta), least, least/r.Bare.Seconds()) + beyond("apply", r.Apply.Seconds()-least)
	default:
		t.Cause = fmt.Sprintf("an apply of one user (%s) and the loop creating claims with KubeSpawner's labels and annotations (%s) take %.2f s, %.0f %% of the bound",
			secs(fixed.Apply1), secs(r.BareMeta), least, 100*least/bound) + beyond("apply", r.Apply.Seconds()-least)
	}
	return t
}

// sizeTargets are the targets at 20,000 users: the provider's peak memory
// and the hub Secret Helm makes.
func sizeTargets(r row) []target {
	peak := max(r.MemPlan, r.MemListed, r.MemFile, r.MemApply)
	return []target{
		{"provider peak memory (MiB / 200 MiB)", r.N, mib(peak) / 200, 1, fmt.Sprintf("%.0f MiB", mib(peak)), ""},
		{"hub Secret Helm makes (KiB / 64 KiB)", r.N, float64(r.Hub.Secret) / hubSecretBound, 1,
			fmt.Sprintf("%.1f KiB (The hub's configuration at N users)", float64(r.Hub.Secret)/1024), ""},
	}
}
