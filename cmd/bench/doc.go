// Command bench measures the provider on the local test cluster and writes
// BENCHMARKS.md. Run it with `make bench`.
//
// For each N it seeds N KubeSpawner-style claims with client-go and times
// `tofu plan` of a jupyter_home_storage covering them (no change without
// and with the N users listed in users, from a variable and from a file,
// and a ReadWriteMany flip under keep_existing; one such plan with CPU
// profiles of the provider and of OpenTofu), a plan that reads them with the jupyter_home_claims data
// source, the state's size per user, and, up to -apply-max users, `tofu
// apply` of N new users next to a bare client-go loop with the same
// concurrency and rate limits; the floor: `tofu plan` of an empty
// configuration; the fixed costs of the resource: a plan over no
// claims and an apply of one user; and what OpenTofu alone spends on the
// state's per-user strings (the same strings in a terraform_data). The report starts with the issue's
// targets, each met or not. The client-go baselines
// (one List, the bare loop) run twice: as plain default client-go (JSON),
// and with protobuf, the content type the provider uses. Requests are counted in
// the API server's audit log (the provider connects as its own identity);
// the provider's peak memory is read from /proc while tofu runs.
//
// The files by role: main.go runs the bench (the flags, the sizes, the
// report written); bed.go is the test bed (the cluster, the seeded claims,
// the configurations, -hold); measure.go times the runs at each N (plans,
// lists, the data source, applies next to the bare client-go loops);
// fixed.go the floor and the fixed costs; tofu.go runs tofu timed and
// traced; profile.go takes the CPU profiles (pprof); hub.go measures the
// hub's configuration and the spawn hooks; targets.go holds the issue's
// targets, their bounds and why one is not met; report.go and report.tmpl
// write BENCHMARKS.md (the template holds its prose and tables).
package main
