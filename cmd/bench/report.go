package main

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"time"
)

func secs(d time.Duration) string { return fmt.Sprintf("%.2f s", d.Seconds()) }

// loadAverage is the machine's one-minute load average (other work on it
// slows every measurement).
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(b)); err == nil && len(f) > 0 {
		return f[0]
	}
	return "unknown"
}

func report(floor time.Duration, fixed fixed, rows []row, runs int, load string) string {
	var b strings.Builder
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
	fmt.Fprintf(&b, "# Benchmarks\n\nWritten by `make bench` on %s: %d CPUs (%s), %s, %s/%s, host %s.\n",
		time.Now().UTC().Format("2006-01-02"), runtime.NumCPU(), cpu, runtime.Version(), runtime.GOOS, runtime.GOARCH, host)
	fmt.Fprintf(&b, "OpenTofu 1.12.6 and kube-apiserver 1.37.2 of the local test bed, on the same machine. "+
		"Times are wall-clock medians of %d runs; ratios are computed within this run. Requests are the provider's, "+
		"counted in the API server's audit log; memory is the provider process's peak RSS (VmHWM). "+
		"The client-go baselines connect as the provider's identity, so the API server audits their requests as it audits the provider's. "+
		"Load average (1 min) of the machine: %s; on a machine shared with other work single runs of the same plan vary by ±30 %% or more, so compare within a row "+
		"and across N rather than with other runs.\n\n", runs, load)
	fmt.Fprintf(&b, "Floor: `tofu plan` of an empty configuration that requires the provider: **%s**.\n\n", secs(floor))
	fmt.Fprintf(&b, "Fixed cost: `tofu plan` of the same `jupyter_home_storage` over a namespace without claims: **%s**; `tofu apply` of one new user: **%s**. "+
		"This is what any plan or apply of one resource costs before claims count: OpenTofu validates and plans in separate walks, "+
		"each with its own provider process, so a plan starts the provider three times where the floor starts it once (traced below).\n\n", secs(fixed.Plan), secs(fixed.Apply1))
	b.WriteString("| traced run | wall time | provider starts | start-up of each (median) | in the provider | outside the provider |\n|---|---:|---:|---:|---:|---:|\n")
	for _, t := range []struct {
		label string
		bd    breakdown
	}{{"floor: plan of an empty configuration", fixed.FloorTrace}, {"plan over no claims", fixed.PlanTrace}, {"apply of one user", fixed.ApplyTrace}} {
		var in time.Duration
		for _, d := range t.bd.RPCs {
			in += d
		}
		up := "–"
		if len(t.bd.StartUp) > 0 {
			up = fmt.Sprintf("%.0f ms", float64(median(t.bd.StartUp))/float64(time.Millisecond))
		}
		fmt.Fprintf(&b, "| %s | %s | %d | %s | %s | %s |\n", t.label, secs(t.bd.Total), t.bd.Starts, up, secs(in), secs(t.bd.Total-in))
	}
	b.WriteString("\n")
	b.WriteString(fixedCauses(floor, fixed))
	b.WriteString("Content types: the provider asks the API server for protobuf (JSON as fallback). The client-go baselines the targets use, " +
		"\"one List\" and \"bare client-go create\", are plain default client-go, which speaks JSON; the same baselines with protobuf, " +
		"the provider's content type, are shown next to them (\"pb\").\n\n")

	b.WriteString(targets(floor, fixed, rows))
	b.WriteString("## Plans over N existing claims\n\n" +
		"\"Listed\": the same claims with the N users listed in `users` (`users = jsonencode({ for u in var.users : u => {} })`, with `variable \"users\" { type = set(string) }` set from a `.tfvars.json` file), applied once, then planned with no change. " +
		"\"From a file\": the same state planned with `users = file(\"users.json\")`, the file in the form `jsonencode` writes (OpenTofu evaluates no expression over the names). " +
		"State per user: the size of `terraform.tfstate` divided by N, without and with the users listed.\n\n")
	b.WriteString("| users (N) | one List (client-go, JSON) | one List (pb) | plan, no change | plan, users listed | plan, users from a file | plan, RWX flip under keep_existing | requests per plan | provider peak memory (plan) | (listed) | (from a file) | state per user | state per user, listed |\n")
	b.WriteString("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| %d | %s | %s | %s | %s | %s | %s | %d | %.0f MiB | %.0f MiB | %.0f MiB | %d B | %d B |\n",
			r.N, secs(r.List), secs(r.ListPB), secs(r.PlanNoop), secs(r.PlanListed), secs(r.PlanFile),
			secs(r.PlanFlip), r.ReqPlan, mib(r.MemPlan), mib(r.MemListed), mib(r.MemFile),
			r.StateBare/int64(r.N), r.StateListed/int64(r.N))
	}
	b.WriteString(usersForms(rows))
	b.WriteString("\n### What the state's per-user strings cost OpenTofu itself\n\n" +
		"The state of `jupyter_home_storage` holds two strings that grow with N: `claims` (every user's claim name and what differs from the most common claim) and, listed, `users`. " +
		"OpenTofu passes over a resource's state bytes several times in every plan, without any provider: it reads the state file, upgrades and deep-copies each object, " +
		"decodes it into values, and writes the refreshed state. Measured here with OpenTofu's built-in `terraform_data` holding strings of the same content " +
		"(`triggers_replace`), less the same plan with empty strings; no provider process is involved.\n\n")
	b.WriteString("The RWX flip under `keep_existing` keeps every user on the claim they have, so `legacy_users` lists them all and the plan shows each added " +
		"(OpenTofu renders a JSON string's change key by key); measured the same way, with the state holding the strings before the flip and the configuration the planned ones.\n\n")
	b.WriteString("| users (N) | claims | OpenTofu alone, claims | claims and users | OpenTofu alone, claims and users | strings the flip changes, planned | OpenTofu alone, the flip |\n|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| %d | %d KB | %s | %d KB | %s | %d KB | %s |\n", r.N, r.StateStrings/1000, secs(r.TofuStrings), r.StateStringsListed/1000, secs(r.TofuStringsListed),
			r.FlipStrings/1000, secs(r.TofuStringsFlip))
	}
	b.WriteString("\n`claims` is this provider's choice, not OpenTofu's: it records every user's claim so that a plan shows a change of any of them, " +
		"drift included (a claim resized, lost or deleted outside OpenTofu), user by user, and `changes` only what the plan does. " +
		"Without it in state, the least a no-change plan could take (the fixed cost and one List) would be:")
	for i, r := range rows {
		sep := ","
		if i == len(rows)-1 {
			sep = "."
		}
		fmt.Fprintf(&b, " %.2f s at %d users against a bound of %.2f s%s", fixed.Plan.Seconds()+r.List.Seconds(), r.N, 1.25*(1.5*floor.Seconds()+r.List.Seconds()), sep)
	}
	b.WriteString("\n")
	b.WriteString("\n## Reading the claims with the data source\n\n" +
		"`tofu plan` of a configuration with only `data \"jupyter_home_claims\"` over the N claims (and an output of `claim_count`); ReadDataSource is the provider's time serving it, " +
		"the median over as many traced runs (`tf_req_duration_ms`; tracing slows it, so read it next to the traced run's wall time).\n\n")
	b.WriteString("| users (N) | one List (client-go, JSON) | the List by a new process | plan of the data source | plan − floor | (plan − floor) / List | traced wall time | ReadDataSource | ReadDataSource / List |\n")
	b.WriteString("|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range rows {
		rd := r.ReadData
		fmt.Fprintf(&b, "| %d | %s | %s | %s | %s | %.2f | %s | %s | %.2f |\n", r.N, secs(r.List), secs(r.ListCold), secs(r.PlanData), secs(r.PlanData-floor),
			(r.PlanData-floor).Seconds()/r.List.Seconds(), secs(r.BreakdownData.Total), secs(rd), rd.Seconds()/r.List.Seconds())
	}

	b.WriteString(hubSection(rows))
	b.WriteString("\n## Apply of N new users\n\n")
	b.WriteString("\"With KubeSpawner's metadata\": the bare loop in protobuf creating claims with the labels and annotations KubeSpawner's claims have " +
		"(`hub.jupyter.org/username`, `component`, `app`, `heritage`, ...), as the provider's claims must, so that KubeSpawner and the provider find them; " +
		"the API server stores and audits the larger objects.\n\n")
	b.WriteString("| users (N) | apply of N new users | bare client-go create (JSON) | bare create (pb) | bare create (pb), with KubeSpawner's metadata | apply / bare | apply / bare pb | apply / bare with metadata | requests per apply | provider peak memory (apply) |\n")
	b.WriteString("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range rows {
		if !r.Applied {
			continue
		}
		fmt.Fprintf(&b, "| %d | %s | %s | %s | %s | %.2f× | %.2f× | %.2f× | %d | %.0f MiB |\n",
			r.N, secs(r.Apply), secs(r.Bare), secs(r.BarePB), secs(r.BareMeta), r.Apply.Seconds()/r.Bare.Seconds(), r.Apply.Seconds()/r.BarePB.Seconds(),
			r.Apply.Seconds()/r.BareMeta.Seconds(), r.ReqApply, float64(r.MemApply)/1024)
	}
	b.WriteString("\nSizes above `-apply-max` are not applied.\n")

	b.WriteString("\n## Where a no-change plan's time goes\n\n" +
		"One more plan per N, run with `TF_LOG=trace` and the framework's own trace lines off (tracing still slows it, so read the proportions): the provider processes OpenTofu started, " +
		"and the time the provider spent serving each kind of request (`tf_req_duration_ms` in the log). " +
		"ReadResource holds the List (one per plan: the refresh and the plan share it) and the classification; the rest of the wall time is OpenTofu's own " +
		"(loading configuration and state, its graph walks, rendering the plan, starting and stopping provider processes).\n\n")
	b.WriteString("| users (N) | traced wall time | provider starts | ReadResource | PlanResourceChange | UpgradeResourceState | other requests | outside the provider |\n")
	b.WriteString("|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range rows {
		for _, v := range []struct {
			label string
			bd    breakdown
		}{{fmt.Sprint(r.N), r.Breakdown}, {fmt.Sprintf("%d, listed in `users`", r.N), r.BreakdownListed}} {
			var other, in time.Duration
			for rpc, d := range v.bd.RPCs {
				in += d
				if rpc != "ReadResource" && rpc != "PlanResourceChange" && rpc != "UpgradeResourceState" {
					other += d
				}
			}
			fmt.Fprintf(&b, "| %s | %s | %d | %s | %s | %s | %s | %s |\n", v.label, secs(v.bd.Total), v.bd.Starts,
				secs(v.bd.RPCs["ReadResource"]), secs(v.bd.RPCs["PlanResourceChange"]), secs(v.bd.RPCs["UpgradeResourceState"]), secs(other), secs(v.bd.Total-in))
		}
	}
	b.WriteString("\n## Where an apply's time goes\n\n" +
		"One more apply of N new users per applied N, traced the same way. ApplyResourceChange is the provider creating the claims " +
		"(the same concurrency and client limits as the bare loop, shown again for comparison); the plan OpenTofu makes first, and everything outside the provider, come on top.\n\n")
	b.WriteString("| users (N) | traced wall time | provider starts | ApplyResourceChange | bare client-go create (JSON) | PlanResourceChange | other requests | outside the provider |\n")
	b.WriteString("|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range rows {
		if !r.Applied {
			continue
		}
		bd := r.BreakdownApply
		var other, in time.Duration
		for rpc, d := range bd.RPCs {
			in += d
			if rpc != "ApplyResourceChange" && rpc != "PlanResourceChange" {
				other += d
			}
		}
		fmt.Fprintf(&b, "| %d | %s | %d | %s | %s | %s | %s | %s |\n", r.N, secs(bd.Total), bd.Starts,
			secs(bd.RPCs["ApplyResourceChange"]), secs(r.Bare), secs(bd.RPCs["PlanResourceChange"]), secs(other), secs(bd.Total-in))
	}
	if len(rows) > 0 {
		r := rows[len(rows)-1]
		fmt.Fprintf(&b, "\n## Profiles of a no-change plan over %d claims, users listed\n\n"+
			"One more such plan with CPU profiles on: of every provider process OpenTofu started (`JUPYTER_PROVIDER_CPU_PROFILE`, read together), and of OpenTofu itself "+
			"(`TOFU_CPU_PROFILE`). The top 25 functions by cumulative time, as `go tool pprof -top -cum` prints them.\n\n"+
			"Provider:\n\n```\n%s\n```\n\nOpenTofu:\n\n```\n%s\n```\n", r.N, r.ProfProvider, r.ProfTofu)
	}
	b.WriteString(whyString)
	return b.String()
}

// whyString closes the report: why users is one JSON string.
const whyString = `
## Why ` + "`users` and `legacy_users`" + ` are JSON strings

OpenTofu 1.12.6 renders every plan, a no-change one too, by diffing each resource's prior and planned values
(` + "`jsonformat.precomputeDiffs`" + ` runs ` + "`differ.ComputeDiffForBlock`" + ` for every resource change, no-ops included, before it drops them).
A list is diffed with a longest-common-subsequence table (` + "`collections.ProcessSlice` → `objchange.LongestCommonSubsequence`" + `),
whose time and memory grow with the square of its length even when nothing changed: with 20,000 users listed in a list a no-change
plan took 26 s, most of it there. A set is worse: ` + "`differ.processSet`" + ` compares every pair of elements, and the refresh's
` + "`objchange.AssertObjectCompatible`" + ` (` + "`assertSetValuesCompatible`" + `) does too, formatting an error message for every pair that
differs; terraform-plugin-framework adds a third pass over all pairs (` + "`fwschemadata.ValueSemanticEqualitySetElements`" + `, in ReadResource).
A map is diffed key by key, but OpenTofu and the framework still convert, walk (` + "`NullifyCollectionBlocks`" + `, ` + "`tftypes.Transform`" + `)
and encode each entry in every request: with the 20,000 users in a map attribute a no-change plan took 9.9 s, against 1.4 s without
them (the last run of this bench before the change, at a load average of 10). A string is passed whole, and OpenTofu still renders a change of a JSON string key by key
(` + "`jsonencode(`" + ` … ` + "`+ zed = {}`" + `, the unchanged users hidden), so ` + "`users`" + ` is one JSON object from each username to ` + "`{}`" + `
(` + "`internal/userset`" + `), and a JSON array, which OpenTofu would diff as a list, is refused. ` + "`legacy_users`" + ` is one JSON string for the
same reason: after a flip to ReadWriteMany under ` + "`keep_existing`" + ` it lists every user, in every plan after it.
`

// usersForms is the section that compares the ways of passing users: the
// same no-change plan over the same state, users from a set(string)
// variable, a list(string) variable and a file.
func usersForms(rows []row) string {
	var b strings.Builder
	b.WriteString("\n### How users are passed\n\n" +
		"The same no-change plan over the same state, the N users passed three ways: `users = jsonencode({ for u in var.users : u => {} })` with " +
		"`variable \"users\"` typed `set(string)` (the form the docs show) or `list(string)` (the form most configurations write), set from the same " +
		"`.tfvars.json` file, and `users = file(\"users.json\")`, the file in the form `jsonencode` writes. OpenTofu converts a `list(string)` variable " +
		"set from a `.tfvars` file (a tuple) with go-cty's type unification, which compares the element types pairwise, and a `set(string)` variable in linear time.\n\n")
	b.WriteString("| users (N) | `set(string)` variable | `list(string)` variable | `file(\"users.json\")` | list / set | provider peak memory (list) |\n|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| %d | %s | %s | %s | %.2f× | %.0f MiB |\n", r.N, secs(r.PlanListed), secs(r.PlanList), secs(r.PlanFile),
			r.PlanList.Seconds()/r.PlanListed.Seconds(), mib(r.MemList))
	}
	return b.String()
}

// mib is KiB in MiB.
func mib(kib int64) float64 { return float64(kib) / 1024 }

// fixedCauses says where the fixed cost goes beyond the floor, from this
// run's measurements: OpenTofu's own plan of one resource, the provider's
// starts, and go-plugin's automatic mTLS in the profiled plans.
func fixedCauses(floor time.Duration, f fixed) string {
	var b strings.Builder
	m := f.MTLS
	fmt.Fprintf(&b, "Where the fixed cost goes beyond the floor (all of it OpenTofu's or its plugin library's, the same for any provider):\n\n"+
		"- OpenTofu's plan of one resource of its own (`terraform_data`, no provider process): **%s**, against %s for the floor, which starts the provider once and plans nothing.\n",
		secs(f.Builtin), secs(floor))
	fmt.Fprintf(&b, "- A plan of a provider's resource starts the provider %d times (its schema, the validate walk, the plan walk); each start takes the time in the table's start-up column "+
		"before the provider's first answer: the process and Go's start, go-plugin's handshake and its automatic mTLS, the gRPC connection.\n", f.PlanTrace.Starts)
	if m.Plans > 0 && m.ProviderAll > 0 && m.TofuAll > 0 {
		fmt.Fprintf(&b, "- go-plugin's automatic mTLS, which OpenTofu turns on for every provider (a P-521 key and a self-signed certificate made at every start on both sides, "+
			"then a TLS handshake with P-521 signatures; Go has no assembly for P-521: one signature check took %.1f ms here, one signature %.1f ms): in %d profiled plans over no claims, "+
			"%.0f ms of the provider processes' %.0f ms of CPU (%.0f %%) and %.0f ms of OpenTofu's %.0f ms (%.0f %%), %.0f ms of CPU per plan in all.\n",
			ms(m.Verify), ms(m.Sign), m.Plans, ms(m.Provider), ms(m.ProviderAll), 100*m.Provider.Seconds()/m.ProviderAll.Seconds(),
			ms(m.Tofu), ms(m.TofuAll), 100*m.Tofu.Seconds()/m.TofuAll.Seconds(), ms(m.Provider+m.Tofu)/float64(m.Plans))
	}
	if f.PlanNoTLS > 0 {
		fmt.Fprintf(&b, "- With the mTLS off (`TF_DISABLE_PLUGIN_TLS=1`, which OpenTofu reads; measured here, not advised: it is the user's choice to make) the plan over no claims takes **%s** instead of %s, "+
			"and the floor %s instead of %s: the mTLS is %.0f ms of every provider start.\n",
			secs(f.PlanNoTLS), secs(f.Plan), secs(f.FloorNoTLS), secs(floor),
			ms(f.Plan-f.PlanNoTLS)/float64(max(f.PlanTrace.Starts, 1)))
	}
	b.WriteString("\n")
	return b.String()
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
