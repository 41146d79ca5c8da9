package safety

import (
	"strings"
	"testing"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/claims"
)

func phase(s string) claimOpt { return func(c *claims.Claim) { c.Phase = s } }

func sc(provisioner string) *StorageClass {
	return &StorageClass{Name: "shared", Provisioner: provisioner, Exists: true}
}

func TestPlanModeChange(t *testing.T) {
	ab := []string{"alice", "bob"}
	rwo := Live{Claims: pvcs(t, ab), Class: sc("efs.csi.aws.com")}
	efs := func(opts ...cfgOpt) Config {
		return cfg(ab, append([]cfgOpt{mode(claims.RWX), sclass("efs")}, opts...)...)
	}
	failErr := want{attr: "access_mode", has: []string{
		"2 existing home claim(s)", "namespace jhub", `access_mode = "ReadWriteMany"`, `storage class "efs"`,
		"alice: claim-alice (ReadWriteOnce, class \"gp3\", Bound)", "bob: claim-bob (ReadWriteOnce, class \"gp3\", Bound)",
		`"keep_existing"`, `"recreate" with allow_data_loss = true`, "on_mode_change",
	}}
	runPlanCases(t, []planCase{
		{
			name:       "fail is the default",
			cfg:        efs(),
			prior:      prior(t, cfg(ab)),
			live:       rwo,
			class:      ClassNone,
			actions:    map[string]Action{"alice": ActionLegacy, "bob": ActionLegacy},
			legacy:     ab,
			colocation: true,
			errors:     []want{failErr},
		},
		{
			name:       "fail explicitly",
			cfg:        efs(onChange(OnModeChangeFail)),
			prior:      prior(t, cfg(ab)),
			live:       rwo,
			class:      ClassNone,
			actions:    map[string]Action{"alice": ActionLegacy, "bob": ActionLegacy},
			legacy:     ab,
			colocation: true,
			errors:     []want{failErr},
		},
		{
			name:    "fail on a storage class change alone",
			cfg:     cfg(ab, sclass("gp3-encrypted")),
			live:    Live{Claims: pvcs(t, ab)},
			class:   ClassNone,
			actions: map[string]Action{"alice": ActionLegacy, "bob": ActionLegacy},
			legacy:  ab, colocation: true,
			errors: []want{{attr: "access_mode", has: []string{`storage class "gp3-encrypted"`, "alice: claim-alice", "bob: claim-bob", `class "gp3"`}}},
		},
		{
			name:    "fail also covers KubeSpawner claims of unlisted users",
			cfg:     cfg([]string{"alice"}, mode(claims.RWX), sclass("efs")),
			live:    rwo,
			class:   ClassNone,
			actions: map[string]Action{"alice": ActionLegacy, "bob": ActionLegacy},
			legacy:  ab, colocation: true,
			errors: []want{{attr: "access_mode", has: []string{"alice: claim-alice", "bob: claim-bob"}}},
		},
		{
			name:       "storage_class_name unset compares the mode only",
			cfg:        cfg(ab, sclass("")),
			prior:      prior(t, cfg(ab, sclass(""))),
			live:       Live{Claims: pvcs(t, ab, class("whatever"))},
			class:      ClassNone,
			actions:    map[string]Action{"alice": ActionKeep, "bob": ActionKeep},
			colocation: true,
		},
		{
			name:       "keep_existing: legacy users stay co-located, new users get the new mode",
			cfg:        cfg([]string{"alice", "bob", "carol"}, mode(claims.RWX), sclass("efs"), onChange(OnModeChangeKeepExisting)),
			prior:      prior(t, cfg(ab)),
			live:       rwo,
			class:      ClassSafe,
			actions:    map[string]Action{"alice": ActionLegacy, "bob": ActionLegacy, "carol": ActionCreate},
			legacy:     ab,
			colocation: true,
		},
		{
			name:       "keep_existing with nothing to create is still safe",
			cfg:        efs(onChange(OnModeChangeKeepExisting)),
			prior:      prior(t, cfg(ab)),
			live:       rwo,
			class:      ClassSafe,
			actions:    map[string]Action{"alice": ActionLegacy, "bob": ActionLegacy},
			legacy:     ab,
			colocation: true,
		},
		{
			name:       "keep_existing: ReadWriteMany legacy claims need no co-location",
			cfg:        efs(onChange(OnModeChangeKeepExisting)),
			prior:      prior(t, cfg(ab, mode(claims.RWX), sclass("nfs"))),
			live:       Live{Claims: pvcs(t, ab, modes(claims.RWX), class("nfs")), Class: sc("efs.csi.aws.com")},
			class:      ClassSafe,
			actions:    map[string]Action{"alice": ActionLegacy, "bob": ActionLegacy},
			legacy:     ab,
			colocation: false,
		},
		{
			name:       "keep_existing: one ReadWriteOnce legacy claim is enough for co-location",
			cfg:        efs(onChange(OnModeChangeKeepExisting)),
			live:       Live{Claims: []claims.Claim{pvc(t, "alice", modes(claims.RWX), class("nfs")), pvc(t, "bob")}},
			class:      ClassSafe,
			actions:    map[string]Action{"alice": ActionLegacy, "bob": ActionLegacy},
			legacy:     ab,
			colocation: true,
		},
		{
			name:       "keep_existing: ReadWriteOnce config needs co-location without legacy claims",
			cfg:        cfg(ab, onChange(OnModeChangeKeepExisting)),
			live:       Live{Claims: pvcs(t, ab)},
			class:      ClassSafe,
			actions:    map[string]Action{"alice": ActionKeep, "bob": ActionKeep},
			colocation: true,
		},
		{
			name:    "recreate without allow_data_loss is refused",
			cfg:     efs(onChange(OnModeChangeRecreate)),
			prior:   prior(t, cfg(ab)),
			live:    rwo,
			class:   ClassNone,
			actions: map[string]Action{"alice": ActionLegacy, "bob": ActionLegacy},
			legacy:  ab, colocation: true,
			errors: []want{{attr: "allow_data_loss", has: []string{
				"recreate 2 home claim(s)", "alice: claim-alice (ReadWriteOnce", "bob: claim-bob (ReadWriteOnce",
				"allow_data_loss = true", `"keep_existing"`,
			}}},
		},
		{
			name:    "recreate with allow_data_loss is destructive",
			cfg:     efs(onChange(OnModeChangeRecreate), dataLoss()),
			prior:   prior(t, cfg(ab)),
			live:    rwo,
			class:   ClassDestructive,
			actions: map[string]Action{"alice": ActionRecreate, "bob": ActionRecreate},
			// Named in a warning, also when the plan's values read as the last apply's.
			warnings: []want{{attr: "allow_data_loss", has: []string{"deletes and recreates 2 home claim(s)", "alice: claim-alice", "bob: claim-bob"}}},
		},
		{
			name:     "recreate touches only mismatched claims",
			cfg:      cfg([]string{"alice", "bob", "carol"}, mode(claims.RWX), sclass("efs"), onChange(OnModeChangeRecreate), dataLoss()),
			live:     Live{Claims: []claims.Claim{pvc(t, "alice"), pvc(t, "bob", modes(claims.RWX), class("efs"))}, Class: sc("efs.csi.aws.com")},
			class:    ClassDestructive,
			actions:  map[string]Action{"alice": ActionRecreate, "bob": ActionKeep, "carol": ActionCreate},
			warnings: []want{{attr: "allow_data_loss", has: []string{"alice: claim-alice"}, hasNot: []string{"bob", "carol"}}},
		},
		{
			name:    "recreate under a running server is refused",
			cfg:     efs(onChange(OnModeChangeRecreate), dataLoss()),
			live:    Live{Claims: rwo.Claims, Mounted: map[claims.Ref]bool{at("claim-bob"): true}},
			class:   ClassNone,
			actions: map[string]Action{"alice": ActionRecreate, "bob": ActionRecreate},
			errors:  []want{{attr: "on_mode_change", has: []string{"bob: claim-bob", "Stop these users' servers"}, hasNot: []string{"alice"}}},
		},
		{
			name:    "recreate without allow_data_loss under a running server reports both",
			cfg:     efs(onChange(OnModeChangeRecreate)),
			live:    Live{Claims: rwo.Claims, Mounted: map[claims.Ref]bool{at("claim-alice"): true}},
			class:   ClassNone,
			actions: map[string]Action{"alice": ActionLegacy, "bob": ActionLegacy},
			legacy:  ab, colocation: true,
			errors: []want{
				{attr: "allow_data_loss", has: []string{"alice: claim-alice", "bob: claim-bob"}},
				{attr: "on_mode_change", has: []string{"alice: claim-alice"}, hasNot: []string{"bob"}},
			},
		},
		{
			name:    "recreate may not touch unlisted users",
			cfg:     cfg([]string{"alice"}, mode(claims.RWX), sclass("efs"), onChange(OnModeChangeRecreate), dataLoss()),
			live:    rwo,
			class:   ClassNone,
			actions: map[string]Action{"alice": ActionRecreate, "bob": ActionLegacy},
			legacy:  []string{"bob"}, colocation: true,
			errors: []want{{attr: "on_mode_change", has: []string{"1 claim(s)", "bob: claim-bob", "not in users"}, hasNot: []string{"alice"}}},
		},
		{
			name:    "recreate may not touch users removed from users",
			cfg:     cfg([]string{"alice"}, mode(claims.RWX), sclass("efs"), onChange(OnModeChangeRecreate), dataLoss()),
			prior:   prior(t, cfg(ab)),
			live:    rwo,
			class:   ClassNone,
			actions: map[string]Action{"alice": ActionRecreate, "bob": ActionLegacy},
			legacy:  []string{"bob"}, colocation: true,
			errors: []want{{attr: "on_mode_change", has: []string{"bob: claim-bob"}}},
		},
		{
			name:       "a claim being deleted by someone else is left alone",
			cfg:        cfg(ab),
			prior:      prior(t, cfg(ab)),
			live:       Live{Claims: []claims.Claim{pvc(t, "alice", deleting(), modes(claims.RWX)), pvc(t, "bob")}},
			class:      ClassNone,
			actions:    map[string]Action{"alice": ActionKeep, "bob": ActionKeep},
			colocation: true,
			warnings:   []want{{attr: "users", has: []string{"claim-alice", `"alice"`, "deletion timestamp"}}},
		},
	})
}

func TestPlanCapacity(t *testing.T) {
	a := []string{"alice"}
	runPlanCases(t, []planCase{
		{
			name:       "growth of a bound claim in an expandable class resizes in place",
			cfg:        cfg(a, capacity(20)),
			prior:      prior(t, cfg(a)),
			live:       Live{Claims: pvcs(t, a), Class: gp3(true)},
			class:      ClassSafe,
			actions:    map[string]Action{"alice": ActionResize},
			colocation: true,
			checkResult: func(t *testing.T, r Result) {
				if got := r.Users[0].Reason; !strings.Contains(got, "10Gi") || !strings.Contains(got, "20Gi") {
					t.Errorf("reason %q does not say from and to", got)
				}
			},
		},
		{
			name:       "growth when the class is not read resizes",
			cfg:        cfg(a, capacity(20)),
			prior:      prior(t, cfg(a)),
			live:       Live{Claims: pvcs(t, a)},
			class:      ClassSafe,
			actions:    map[string]Action{"alice": ActionResize},
			colocation: true,
		},
		{
			name:       "growth when the class does not allow expansion",
			cfg:        cfg(a, capacity(20)),
			prior:      prior(t, cfg(a)),
			live:       Live{Claims: pvcs(t, a), Class: gp3(false)},
			class:      ClassNone,
			actions:    map[string]Action{"alice": ActionKeep},
			colocation: true,
			errors: []want{{attr: "capacity", has: []string{
				"claim-alice", `"alice"`, "from 10Gi to 20Gi", "refused by the API", `StorageClass "gp3"`, "allow_volume_expansion",
			}}},
		},
		{
			name:       "growth of a pending claim",
			cfg:        cfg(a, capacity(20)),
			prior:      prior(t, cfg(a)),
			live:       Live{Claims: pvcs(t, a, phase("Pending")), Class: gp3(true)},
			class:      ClassNone,
			actions:    map[string]Action{"alice": ActionKeep},
			colocation: true,
			errors:     []want{{attr: "capacity", has: []string{"claim-alice", `"alice"`, "Pending", "API refuses", "not bound"}}},
		},
		{
			name:       "growth of a claim without a phase",
			cfg:        cfg(a, capacity(20)),
			live:       Live{Claims: pvcs(t, a, phase(""))},
			class:      ClassNone,
			actions:    map[string]Action{"alice": ActionKeep},
			colocation: true,
			errors:     []want{{attr: "capacity", has: []string{`"alice" is -;`}}},
		},
		{
			name:       "shrinking is an error",
			cfg:        cfg(a, capacity(5)),
			prior:      prior(t, cfg(a)),
			live:       Live{Claims: pvcs(t, a), Class: gp3(true)},
			class:      ClassNone,
			actions:    map[string]Action{"alice": ActionKeep},
			colocation: true,
			errors:     []want{{attr: "capacity", has: []string{"claim-alice", `"alice"`, "requests 10Gi", `capacity = "5Gi"`, "shrink"}}},
		},
		{
			name:       "unlisted users are never resized",
			cfg:        cfg(nil, capacity(20)),
			live:       Live{Claims: pvcs(t, a), Class: gp3(false)},
			class:      ClassNone,
			actions:    map[string]Action{"alice": ActionObserve},
			colocation: true,
		},
		{
			name:       "legacy claims are never resized",
			cfg:        cfg(a, capacity(20), mode(claims.RWX), sclass("efs"), onChange(OnModeChangeKeepExisting)),
			prior:      prior(t, cfg(a)),
			live:       Live{Claims: pvcs(t, a, phase("Pending")), Class: sc("efs.csi.aws.com")},
			class:      ClassSafe,
			actions:    map[string]Action{"alice": ActionLegacy},
			legacy:     a,
			colocation: true,
		},
	})
}

func TestPlanStorageClass(t *testing.T) {
	a := []string{"alice"}
	rwx := func(p string) planCase {
		return planCase{
			name:       p,
			cfg:        cfg(a, mode(claims.RWX), sclass("shared")),
			live:       Live{Class: sc(p)},
			class:      ClassSafe,
			actions:    map[string]Action{"alice": ActionCreate},
			colocation: false,
		}
	}
	var cases []planCase
	for _, p := range []string{"ebs.csi.aws.com", "pd.csi.storage.gke.io", "rancher.io/local-path", "disk.csi.azure.com", "rook-ceph.rbd.csi.ceph.com"} {
		c := rwx(p)
		c.name = "ReadWriteMany on block provisioner " + p
		c.class = ClassNone
		c.errors = []want{{attr: "access_mode", has: []string{p, `StorageClass "shared"`, "never bind", "ReadWriteOnce"}}}
		cases = append(cases, c)
	}
	for _, p := range []string{"efs.csi.aws.com", "driver.longhorn.io", "rook-ceph.cephfs.csi.ceph.com", "nfs.csi.k8s.io"} {
		c := rwx(p)
		c.name = "ReadWriteMany on shared provisioner " + p
		cases = append(cases, c)
	}
	unknown := rwx("example.com/fancy")
	unknown.name = "ReadWriteMany on an unknown provisioner"
	unknown.warnings = []want{{attr: "access_mode", has: []string{"example.com/fancy", `StorageClass "shared"`, "does not know"}}}
	cases = append(cases, unknown)
	cases = append(cases,
		planCase{
			name:       "ReadWriteOnce on a block provisioner is fine",
			cfg:        cfg(a),
			live:       Live{Class: gp3(true)},
			class:      ClassSafe,
			actions:    map[string]Action{"alice": ActionCreate},
			colocation: true,
		},
		planCase{
			name:    "ReadWriteMany with an unnamed provisioner",
			cfg:     cfg(a, mode(claims.RWX), sclass("shared")),
			live:    Live{Class: sc("")},
			class:   ClassSafe,
			actions: map[string]Action{"alice": ActionCreate},
		},
		planCase{
			name:       "ReadWriteOncePod allows one server per user",
			cfg:        cfg(a, mode(claims.RWOP)),
			live:       Live{Class: gp3(true)},
			class:      ClassSafe,
			actions:    map[string]Action{"alice": ActionCreate},
			colocation: true,
			warnings:   []want{{attr: "access_mode", has: []string{"ReadWriteOncePod", "one server per user", "only one pod"}}},
		},
		planCase{
			name:     "missing class",
			cfg:      cfg(a, mode(claims.RWX), sclass("shared")),
			live:     Live{Class: &StorageClass{Name: "shared", Provisioner: "ebs.csi.aws.com"}},
			class:    ClassSafe,
			actions:  map[string]Action{"alice": ActionCreate},
			warnings: []want{{attr: "storage_class_name", has: []string{`StorageClass "shared"`, "Pending"}}},
		},
		planCase{
			name:    "class created by this resource is checked",
			cfg:     cfg(a, mode(claims.RWX), sclass("shared")),
			live:    Live{Class: &StorageClass{Name: "shared", Provisioner: "ebs.csi.aws.com", Created: true}},
			class:   ClassNone,
			actions: map[string]Action{"alice": ActionCreate},
			errors:  []want{{attr: "access_mode", has: []string{"ebs.csi.aws.com"}}},
		},
	)
	runPlanCases(t, cases)
}

// Only a live claim more restrictive than the configured mode matters: a
// ReadWriteMany home under ReadWriteOnce still serves co-located pods, a
// ReadWriteOncePod home under ReadWriteOnce does not.
func TestPlanModeDirection(t *testing.T) {
	ab := []string{"alice", "bob"}
	runPlanCases(t, []planCase{
		{
			name:       "rwx claims under an rwo config are fine",
			cfg:        cfg(nil, sclass("gp3")),
			live:       Live{Claims: pvcs(t, ab, modes(claims.RWX))},
			class:      ClassNone,
			actions:    map[string]Action{"alice": ActionObserve, "bob": ActionObserve},
			colocation: true,
		},
		{
			name:       "rwx claims under an rwop config are fine",
			cfg:        cfg(nil, sclass("gp3"), mode(claims.RWOP)),
			live:       Live{Claims: pvcs(t, ab, modes(claims.RWX))},
			class:      ClassNone,
			actions:    map[string]Action{"alice": ActionObserve, "bob": ActionObserve},
			colocation: true,
			warnings:   []want{{attr: "access_mode", has: []string{"one server per user"}}},
		},
		{
			name:       "rwop claims under an rwo config differ",
			cfg:        cfg(nil, sclass("gp3")),
			live:       Live{Claims: pvcs(t, ab, modes(claims.RWOP))},
			class:      ClassNone,
			actions:    map[string]Action{"alice": ActionLegacy, "bob": ActionLegacy},
			legacy:     ab,
			colocation: true,
			errors:     []want{{attr: "access_mode", has: []string{"alice: claim-alice (ReadWriteOncePod"}}},
		},
	})
}

// The flip error names every choice, migrate among them.
func TestPlanFlipErrorListsMigrate(t *testing.T) {
	r := Plan(cfg([]string{"alice"}, mode(claims.RWX)), nil, Live{Claims: []claims.Claim{pvc(t, "alice")}})
	if len(r.Errors) != 1 || !strings.Contains(r.Errors[0].Detail, `"migrate": move them to the new mode keeping every byte`) {
		t.Errorf("errors: %s", dump(r.Errors))
	}
}
