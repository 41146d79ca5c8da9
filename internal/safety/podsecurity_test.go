package safety

import (
	"slices"
	"testing"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/claims"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/migration"
)

// What a plan says of Pod Security admission in the namespaces where its
// copies would run Jobs: nothing where privileged or baseline is enforced or
// nothing is labelled; an error naming the namespace, the label, the users
// and the choices where restricted (or a value that is no level) is
// enforced; a warning where restricted is only warned of or audited. Plans
// that run no Job (a rebind, a finished copy) never look.
func TestCheckPodSecurity(t *testing.T) {
	toEFS := []cfgOpt{mode(claims.RWX), sclass("efs"), migrate(migration.MethodAuto, 0, true), copyTo("rsync:3", "home-{username}")}
	copies := func() Result {
		return Plan(cfg([]string{"alice", "bob"}, toEFS...), nil,
			Live{Claims: []claims.Claim{ebsRWO(t, "alice"), ebsRWO(t, "bob")}, Volumes: volumes(t, "ebs.csi.aws.com", "alice", "bob")})
	}
	deletes := func() Result {
		return Plan(cfg([]string{"alice"}, append(slices.Clone(toEFS), deleteSources, dataLoss())...), nil,
			Live{Claims: []claims.Claim{ebsRWO(t, "alice", withCopyRecord(migration.StepSwitched, "home-alice")), copyTarget(t, "alice", "home-alice")}})
	}
	resumes := func() Result {
		return Plan(cfg(nil, mode(claims.RWX), sclass("efs"), onChange(OnModeChangeKeepExisting)), nil,
			Live{Claims: []claims.Claim{ebsRWO(t, "alice", withCopyRecord(migration.StepCopying, "home-alice")), copyTarget(t, "alice", "home-alice")}})
	}
	rebinds := func() Result {
		return Plan(cfg([]string{"alice"}, mode(claims.RWX), sclass("gp3"), migrate(migration.MethodAuto, 0, true)), nil,
			Live{Claims: []claims.Claim{ebsRWO(t, "alice")}, Volumes: volumes(t, "driver.longhorn.io", "alice")})
	}
	labels := func(kv ...string) map[string]PodSecurity {
		l := map[string]string{}
		for i := 0; i < len(kv); i += 2 {
			l[kv[i]] = kv[i+1]
		}
		return map[string]PodSecurity{ns: PodSecurityOf(l)}
	}
	choices := []string{ns, PodSecurityEnforceLabel, "kubectl label namespace " + ns + " " + PodSecurityEnforceLabel + "=baseline --overwrite",
		`migration.method = "rebind"`, "keep_existing", "runs as root", "Nothing was changed"}
	for _, tc := range []struct {
		name     string
		res      func() Result
		levels   map[string]PodSecurity
		jobs     []string // JobNamespaces
		errors   []want
		warnings []want
	}{
		{name: "copies where nothing is labelled", res: copies, levels: labels(), jobs: []string{ns}},
		{name: "copies under privileged", res: copies, levels: labels(PodSecurityEnforceLabel, "privileged"), jobs: []string{ns}},
		{name: "copies under baseline, warned of baseline", res: copies, jobs: []string{ns},
			levels: labels(PodSecurityEnforceLabel, "baseline", PodSecurityWarnLabel, "baseline", PodSecurityAuditLabel, "baseline")},
		{name: "copies under restricted fail the plan", res: copies, jobs: []string{ns}, levels: labels(PodSecurityEnforceLabel, "restricted"),
			errors: []want{{attr: "migration", has: append([]string{"copy of alice, bob", PodSecurityEnforceLabel + "=restricted", "set it back to restricted"}, choices...)}}},
		{name: "a value that is no level counts as restricted, as the admission plugin reads it", res: copies, jobs: []string{ns},
			levels: labels(PodSecurityEnforceLabel, "Baseline"),
			errors: []want{{attr: "migration", has: append([]string{"copy of alice, bob", PodSecurityEnforceLabel + "=Baseline"}, choices...)}}},
		{name: "a resumed copy under restricted fails the plan", res: resumes, jobs: []string{ns}, levels: labels(PodSecurityEnforceLabel, "restricted"),
			errors: []want{{attr: "migration", has: append([]string{"copy of alice"}, choices...)}}},
		{name: "the verification before an old home's delete under restricted fails the plan", res: deletes, jobs: []string{ns},
			levels: labels(PodSecurityEnforceLabel, "restricted"),
			errors: []want{{attr: "migration", has: append([]string{"verification before deleting the old home of alice", "delete_copied_sources = false"}, choices...),
				hasNot: []string{"copy of alice"}}}},
		{name: "baseline enforced, restricted warned of and audited: a warning", res: copies, jobs: []string{ns},
			levels:   labels(PodSecurityEnforceLabel, "baseline", PodSecurityWarnLabel, "restricted", PodSecurityAuditLabel, "restricted"),
			warnings: []want{{attr: "migration", has: []string{ns, PodSecurityWarnLabel + "=restricted", PodSecurityAuditLabel + "=restricted", "copy of alice, bob", "The copies run"}}}},
		{name: "only audited at restricted: a warning naming that label", res: copies, jobs: []string{ns},
			levels:   labels(PodSecurityAuditLabel, "restricted"),
			warnings: []want{{attr: "migration", has: []string{PodSecurityAuditLabel + "=restricted"}, hasNot: []string{PodSecurityWarnLabel}}}},
		{name: "a rebind runs no pod", res: rebinds, levels: labels(PodSecurityEnforceLabel, "restricted")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := tc.res()
			if len(res.Errors) > 0 {
				t.Fatalf("the plan failed before the check:\n%s", dump(res.Errors))
			}
			if got := JobNamespaces(&res); !slices.Equal(got, tc.jobs) {
				t.Errorf("job namespaces %v, want %v", got, tc.jobs)
			}
			warnings := len(res.Warnings)
			CheckPodSecurity(&res, tc.levels)
			checkFindings(t, "errors", res.Errors, tc.errors)
			checkFindings(t, "warnings", res.Warnings[warnings:], tc.warnings)
			if len(tc.errors) > 0 && res.Class != ClassNone {
				t.Errorf("class %s after an error", res.Class)
			}
		})
	}
}

// Under per-user namespaces each copy runs in its user's namespace: only
// those that enforce restricted are named, each with its users.
func TestCheckPodSecurityUserNamespaces(t *testing.T) {
	c := cfg([]string{"alice", "bob"}, mode(claims.RWX), sclass("efs"), migrate(migration.MethodAuto, 0, true), copyTo("rsync:3", "home-{username}"))
	c.UserNamespaceTemplate = "{hubnamespace}-{username}"
	var live []claims.Claim
	for _, u := range []string{"alice", "bob"} {
		cl := ebsRWO(t, u)
		cl.Namespace = ns + "-" + u
		live = append(live, cl)
	}
	res := Plan(c, nil, Live{Claims: live, Volumes: volumes(t, "ebs.csi.aws.com", "alice", "bob")})
	if len(res.Errors) > 0 {
		t.Fatalf("plan: %s", dump(res.Errors))
	}
	if got := JobNamespaces(&res); !slices.Equal(got, []string{ns + "-alice", ns + "-bob"}) {
		t.Fatalf("job namespaces %v", got)
	}
	CheckPodSecurity(&res, map[string]PodSecurity{ns + "-alice": {Enforce: "baseline"}, ns + "-bob": {Enforce: "restricted"}})
	checkFindings(t, "errors", res.Errors, []want{{attr: "migration",
		has:    []string{"namespace " + ns + "-bob (" + PodSecurityEnforceLabel + "=restricted): copy of bob", "kubectl label namespace " + ns + "-bob "},
		hasNot: []string{ns + "-alice"}}})
}
