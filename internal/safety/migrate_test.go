package safety

import (
	"slices"
	"strings"
	"testing"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/claims"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/migration"
)

// A home being expanded is not rebound now (its resize would be lost): it
// stays as it is, named in a warning, and the others move.
func TestPlanMigrateWaitsForAnExpansion(t *testing.T) {
	growing := longhornRWO(t, "alice")
	growing.Resizing = true
	runPlanCases(t, []planCase{{
		name:    "an expansion in progress waits; the other home is rebound",
		cfg:     cfg(nil, mode(claims.RWX), sclass("longhorn"), migrate(migration.MethodAuto, 0, true)),
		live:    Live{Claims: []claims.Claim{growing, longhornRWO(t, "bob")}, Volumes: volumes(t, "driver.longhorn.io", "alice", "bob")},
		class:   ClassSafe,
		actions: map[string]Action{"alice": ActionLegacy, "bob": ActionMigrate},
		legacy:  []string{"alice"}, colocation: true,
		warnings: []want{{attr: "migration", has: []string{"alice: claim-alice", "expanded", "later apply"}}},
	}})
}

// A switched copy whose new claim was deleted is named: the hub refuses the
// user's spawns, and the old claim, which still holds the home, is how to
// give it back.
func TestPlanSwitchedCopyWhoseTargetIsGone(t *testing.T) {
	c := cfg(nil, mode(claims.RWX), sclass("efs"), migrate(migration.MethodAuto, 0, true), copyTo("rsync:3", "home-{username}"))
	r := Plan(c, nil, Live{Claims: []claims.Claim{ebsRWO(t, "alice", withCopyRecord(migration.StepSwitched, "home-alice"))}})
	if got := actions(r); got["alice"] != ActionCopied || len(ChangesOf(r)) != 0 {
		t.Errorf("actions %v, changes %v", got, ChangesOf(r))
	}
	checkFindings(t, "warnings", r.Warnings, []want{{attr: "migration", has: []string{"alice: claim-alice was switched to home-alice", migration.CopyAnnotation}}})
}

// A rebind an earlier apply retained whose old claim is now being expanded
// waits, named, rather than failing every apply.
func TestPlanRetainedRebindWaitsForAnExpansion(t *testing.T) {
	a := longhornRWO(t, "alice")
	a.Resizing = true
	rec := migration.Record{Step: migration.StepRetained, User: "alice", Claim: a.Name, Namespace: ns, From: []string{claims.RWO}, To: claims.RWX}
	r := Plan(cfg(nil, mode(claims.RWX), sclass("longhorn"), migrate(migration.MethodAuto, 0, true)), nil,
		Live{Claims: []claims.Claim{a}, Volumes: volumes(t, "driver.longhorn.io", "alice"), InProgress: map[claims.Ref]InProgress{at(a.Name): {Volume: a.VolumeName, Record: rec}}})
	if got := actions(r); got["alice"] != ActionLegacy || len(ChangesOf(r)) != 0 {
		t.Errorf("actions %v, changes %v", got, ChangesOf(r))
	}
	checkFindings(t, "warnings", r.Warnings, []want{{attr: "migration", has: []string{"alice: claim-alice", "wait for their filesystem to be grown"}}})
}

// longhornRWO is a bound ReadWriteOnce Longhorn home of user on volume pv-<claim>.
func longhornRWO(t testing.TB, user string) claims.Claim {
	c := pvc(t, user, class("longhorn"))
	c.VolumeName = "pv-" + c.Name
	return c
}

func TestPlanMigrate(t *testing.T) {
	rwxLonghorn := []cfgOpt{mode(claims.RWX), sclass("longhorn")}
	with := func(extra ...cfgOpt) []cfgOpt { return append(slices.Clone(rwxLonghorn), extra...) }
	runPlanCases(t, []planCase{
		{
			name: "RWO Longhorn homes rebind to RWX, safe, unlisted users too",
			cfg:  cfg([]string{"alice"}, with(migrate(migration.MethodAuto, 0, true))...),
			live: Live{Claims: []claims.Claim{longhornRWO(t, "alice"), longhornRWO(t, "bob")},
				Volumes: volumes(t, "driver.longhorn.io", "alice", "bob"), Mounted: map[claims.Ref]bool{}},
			class:   ClassSafe,
			actions: map[string]Action{"alice": ActionMigrate, "bob": ActionMigrate},
			checkResult: func(t *testing.T, r Result) {
				for _, up := range r.Users {
					if up.Method != migration.MethodRebind || up.Volume != "pv-"+up.ClaimName || !strings.Contains(up.Reason, "zero copy") {
						t.Errorf("user %s: method %q volume %q reason %q", up.User, up.Method, up.Volume, up.Reason)
					}
				}
			},
		},
		{
			name:    "a driver the provider does not know is copied, or refused when rebind is asked",
			cfg:     cfg([]string{"alice"}, mode(claims.RWX), sclass("longhorn"), migrate(migration.MethodRebind, 0, true)),
			live:    Live{Claims: []claims.Claim{longhornRWO(t, "alice")}, Volumes: volumes(t, "file.csi.azure.com", "alice"), Mounted: map[claims.Ref]bool{}},
			class:   ClassNone,
			actions: map[string]Action{"alice": ActionLegacy},
			legacy:  []string{"alice"}, colocation: true,
			errors: []want{{attr: "migration", has: []string{"alice", "file.csi.azure.com is not known to serve", "migration.rebind_drivers"}}},
		},
		{
			name: "migration.rebind_drivers: homes on a listed driver rebind to RWX",
			cfg: cfg([]string{"alice"}, mode(claims.RWX), sclass("longhorn"), migrate(migration.MethodRebind, 0, true),
				func(c *Config) { c.Migration.RebindDrivers = []string{"file.csi.azure.com"} }),
			live:    Live{Claims: []claims.Claim{longhornRWO(t, "alice")}, Volumes: volumes(t, "file.csi.azure.com", "alice"), Mounted: map[claims.Ref]bool{}},
			class:   ClassSafe,
			actions: map[string]Action{"alice": ActionMigrate},
			checkResult: func(t *testing.T, r Result) {
				for _, up := range r.Users {
					if up.Method != migration.MethodRebind || up.Volume != "pv-"+up.ClaimName {
						t.Errorf("user %s: method %q volume %q reason %q", up.User, up.Method, up.Volume, up.Reason)
					}
				}
			},
		},
		{
			name: "a running server is skipped and reported; the user stays legacy and co-located",
			cfg:  cfg(nil, with(migrate(migration.MethodAuto, 0, true))...),
			live: Live{Claims: []claims.Claim{longhornRWO(t, "alice"), longhornRWO(t, "bob")},
				Volumes: volumes(t, "driver.longhorn.io", "alice", "bob"), Mounted: map[claims.Ref]bool{at(home(t, "bob")): true}},
			class:      ClassSafe,
			actions:    map[string]Action{"alice": ActionMigrate, "bob": ActionLegacy},
			legacy:     []string{"bob"},
			colocation: true,
			warnings:   []want{{attr: "migration", has: []string{"bob", home(t, "bob"), "later apply"}, hasNot: []string{"alice"}}},
		},
		{
			name: "skip_running = false fails naming the running user",
			cfg:  cfg(nil, with(migrate(migration.MethodAuto, 0, false))...),
			live: Live{Claims: []claims.Claim{longhornRWO(t, "alice"), longhornRWO(t, "bob")},
				Volumes: volumes(t, "driver.longhorn.io", "alice", "bob"), Mounted: map[claims.Ref]bool{at(home(t, "bob")): true}},
			class:   ClassNone,
			actions: map[string]Action{"alice": ActionMigrate, "bob": ActionLegacy},
			legacy:  []string{"bob"}, colocation: true,
			errors: []want{{attr: "migration", has: []string{"bob", "skip_running", "Stop these servers"}}},
		},
		{
			name: "batch_size leaves the rest legacy",
			cfg:  cfg(nil, with(migrate(migration.MethodAuto, 2, true))...),
			live: Live{Claims: []claims.Claim{longhornRWO(t, "a"), longhornRWO(t, "b"), longhornRWO(t, "c")},
				Volumes: volumes(t, "driver.longhorn.io", "a", "b", "c")},
			class:   ClassSafe,
			actions: map[string]Action{"a": ActionMigrate, "b": ActionMigrate, "c": ActionLegacy},
			legacy:  []string{"c"}, colocation: true,
			checkResult: func(t *testing.T, r Result) {
				if up := r.Users[2]; !strings.Contains(up.Reason, "batch_size") {
					t.Errorf("reason %q does not say why c waits", up.Reason)
				}
			},
		},
		{
			name: "EBS homes cannot be rebound to RWX: the plan fails naming them",
			cfg:  cfg(nil, mode(claims.RWX), sclass("gp3"), migrate(migration.MethodAuto, 0, true)),
			live: Live{Claims: []claims.Claim{func() claims.Claim { c := pvc(t, "alice"); c.VolumeName = "pv-" + c.Name; return c }()},
				Volumes: volumes(t, "ebs.csi.aws.com", "alice")},
			class:   ClassNone,
			actions: map[string]Action{"alice": ActionLegacy},
			legacy:  []string{"alice"}, colocation: true,
			errors: []want{{attr: "migration", has: []string{"alice", home(t, "alice"), "ebs.csi.aws.com", "keep_existing"}}},
		},
		{
			name:    "rebind asked across classes fails",
			cfg:     cfg(nil, mode(claims.RWX), sclass("nfs"), migrate(migration.MethodRebind, 0, true)),
			live:    Live{Claims: []claims.Claim{longhornRWO(t, "alice")}, Volumes: volumes(t, "driver.longhorn.io", "alice")},
			class:   ClassNone,
			actions: map[string]Action{"alice": ActionLegacy},
			legacy:  []string{"alice"}, colocation: true,
			errors: []want{{attr: "migration", has: []string{"alice", "class changes"}}},
		},
		{
			// A ReadWriteOnce claim is less restrictive than ReadWriteOncePod:
			// it does not differ in a way that matters, so nothing moves.
			name: "RWO homes under RWOP are kept, not migrated",
			cfg:  cfg([]string{"alice"}, mode(claims.RWOP), migrate(migration.MethodAuto, 0, true)),
			live: Live{Claims: []claims.Claim{func() claims.Claim { c := pvc(t, "alice"); c.VolumeName = "pv-" + c.Name; return c }()},
				Volumes: volumes(t, "ebs.csi.aws.com", "alice")},
			class:      ClassSafe, // alice is adopted into management
			actions:    map[string]Action{"alice": ActionKeep},
			colocation: true,
			warnings:   []want{{attr: "access_mode", has: []string{"one pod"}}},
		},
		{
			name: "a migration an earlier apply started resumes, even with the claim gone",
			cfg:  cfg([]string{"alice"}, with(migrate(migration.MethodAuto, 0, true))...),
			live: Live{InProgress: map[claims.Ref]InProgress{at(home(t, "alice")): {Volume: "pv-x", Record: migration.Record{
				Step: migration.StepRetained, User: "alice", Claim: home(t, "alice"), Namespace: ns, To: claims.RWX}}}},
			class:   ClassSafe,
			actions: map[string]Action{"alice": ActionMigrate},
			checkResult: func(t *testing.T, r Result) {
				if up := r.Users[0]; up.Resume == nil || up.Volume != "pv-x" || !strings.Contains(up.Reason, "resume") {
					t.Errorf("resume not planned: %+v", up)
				}
			},
		},
		{
			name:    "nothing differs: nothing to migrate",
			cfg:     cfg(nil, with(migrate(migration.MethodAuto, 0, true))...),
			live:    Live{Claims: []claims.Claim{pvc(t, "alice", class("longhorn"), modes(claims.RWX))}},
			class:   ClassNone,
			actions: map[string]Action{"alice": ActionObserve},
		},
	})
}

func TestPlanMigrateCopy(t *testing.T) {
	toEFS := []cfgOpt{mode(claims.RWX), sclass("efs")}
	with := func(extra ...cfgOpt) []cfgOpt { return append(slices.Clone(toEFS), extra...) }
	runPlanCases(t, []planCase{
		{
			name:    "EBS homes are copied to new EFS claims; the sources are kept",
			cfg:     cfg([]string{"alice"}, with(migrate(migration.MethodAuto, 0, true), copyTo("rsync:3", "home-{username}"))...),
			live:    Live{Claims: []claims.Claim{ebsRWO(t, "alice"), ebsRWO(t, "bob")}, Volumes: volumes(t, "ebs.csi.aws.com", "alice", "bob")},
			class:   ClassSafe,
			actions: map[string]Action{"alice": ActionMigrate, "bob": ActionMigrate},
			checkResult: func(t *testing.T, r Result) {
				for _, up := range r.Users {
					if up.Method != migration.MethodCopy || up.Target != "home-"+up.User || !strings.Contains(up.Reason, "is kept") || !strings.Contains(up.Reason, "class changes") {
						t.Errorf("user %s: %+v", up.User, up)
					}
				}
			},
		},
		{
			name:    "a copy without an image or a target name fails naming both settings",
			cfg:     cfg(nil, with(migrate(migration.MethodAuto, 0, true))...),
			live:    Live{Claims: []claims.Claim{ebsRWO(t, "alice")}, Volumes: volumes(t, "ebs.csi.aws.com", "alice")},
			class:   ClassNone,
			actions: map[string]Action{"alice": ActionLegacy},
			legacy:  []string{"alice"}, colocation: true,
			errors: []want{{attr: "migration", has: []string{"alice", "migration.copy_image", "migration.target_name_template"}}},
		},
		{
			name:    "a target template that names the source is refused",
			cfg:     cfg(nil, with(migrate(migration.MethodCopy, 0, true), copyTo("rsync:3", tmpl))...),
			live:    Live{Claims: []claims.Claim{ebsRWO(t, "alice")}, Volumes: volumes(t, "ebs.csi.aws.com", "alice")},
			class:   ClassNone,
			actions: map[string]Action{"alice": ActionLegacy},
			legacy:  []string{"alice"}, colocation: true,
			errors: []want{{attr: "migration", has: []string{"alice", "cannot be the new claim"}}},
		},
		{
			name:    "a finished copy: the user's home is the target, which is no stray; nothing to do",
			cfg:     cfg(nil, with(migrate(migration.MethodAuto, 0, true), copyTo("rsync:3", "home-{username}"))...),
			live:    Live{Claims: []claims.Claim{ebsRWO(t, "alice", withCopyRecord(migration.StepSwitched, "home-alice")), copyTarget(t, "alice", "home-alice")}},
			class:   ClassNone,
			actions: map[string]Action{"alice": ActionCopied},
			checkResult: func(t *testing.T, r Result) {
				if copiedTo(r, "alice") != "home-alice" || !strings.Contains(r.Users[0].Reason, "3 files, 42 bytes") {
					t.Errorf("home claim %q, reason %q", copiedTo(r, "alice"), r.Users[0].Reason)
				}
			},
		},
		{
			name:    "an unfinished copy resumes whatever on_mode_change says now",
			cfg:     cfg(nil, with(onChange(OnModeChangeKeepExisting))...),
			live:    Live{Claims: []claims.Claim{ebsRWO(t, "alice", withCopyRecord(migration.StepCopying, "home-alice")), copyTarget(t, "alice", "home-alice")}},
			class:   ClassSafe,
			actions: map[string]Action{"alice": ActionMigrate},
			checkResult: func(t *testing.T, r Result) {
				if up := r.Users[0]; up.Method != migration.MethodCopy || up.CopyResume == nil || up.Target != "home-alice" {
					t.Errorf("resume not planned: %+v", up)
				}
			},
		},
		{
			// Resuming would start a copy Job on a home in use: on another
			// node it cannot mount it, and the user could not be switched.
			name:    "an unfinished copy waits while a server runs on the old home",
			cfg:     cfg(nil, with(migrate(migration.MethodAuto, 0, true), copyTo("rsync:3", "home-{username}"))...),
			live:    Live{Claims: []claims.Claim{ebsRWO(t, "alice", withCopyRecord(migration.StepVerified, "home-alice")), copyTarget(t, "alice", "home-alice")}, Mounted: map[claims.Ref]bool{at("claim-alice"): true}},
			class:   ClassNone,
			actions: map[string]Action{"alice": ActionLegacy},
			legacy:  []string{"alice"}, colocation: true,
			warnings: []want{{attr: "migration", has: []string{"alice", "running"}}},
		},
		{
			name: "an unreadable copy record is an error naming the claim",
			cfg:  cfg(nil, with(migrate(migration.MethodAuto, 0, true))...),
			live: Live{Claims: []claims.Claim{func() claims.Claim {
				c := ebsRWO(t, "alice")
				c.Annotations = map[string]string{migration.CopyAnnotation: "{"}
				return c
			}()}},
			class:   ClassNone,
			actions: map[string]Action{"alice": ActionKeep},
			errors:  []want{{attr: "migration", has: []string{"claim-alice", "alice", "copy record"}}},
		},
	})
}

func extras(c *Config) { c.ExtraVolumes = []string{"nebi-workspaces-{username}"} }

func TestPlanExtraUserVolumes(t *testing.T) {
	rwxHome := func(u string) claims.Claim { return pvc(t, u, class("longhorn"), modes(claims.RWX)) }
	ws := map[string]Volume{"pv-" + workspace(t, "alice").Name: {CSIDriver: "driver.longhorn.io"}}
	runPlanCases(t, []planCase{
		{
			name:    "an RWO workspace beside an RWX home keeps its user co-located",
			cfg:     cfg(nil, mode(claims.RWX), sclass("longhorn"), extras, onChange(OnModeChangeKeepExisting)),
			live:    Live{Claims: []claims.Claim{rwxHome("alice"), workspace(t, "alice"), rwxHome("bob")}},
			class:   ClassNone,
			actions: map[string]Action{"alice": ActionObserve, "bob": ActionObserve},
			legacy:  []string{"alice"}, colocation: true,
		},
		{
			name:    "without on_mode_change the plan fails naming the workspace",
			cfg:     cfg(nil, mode(claims.RWX), sclass("longhorn"), extras),
			live:    Live{Claims: []claims.Claim{rwxHome("alice"), workspace(t, "alice")}},
			class:   ClassNone,
			actions: map[string]Action{"alice": ActionObserve},
			legacy:  []string{"alice"}, colocation: true,
			errors: []want{{attr: "extra_user_volumes", has: []string{"nebi-workspaces-alice", "alice", "keep_existing", "migrate", "Multi-Attach"}}},
		},
		{
			name:    "migrate rebinds the workspace; it is no stray of the home template",
			cfg:     cfg(nil, mode(claims.RWX), sclass("longhorn"), extras, migrate(migration.MethodAuto, 0, true)),
			live:    Live{Claims: []claims.Claim{rwxHome("alice"), workspace(t, "alice")}, Volumes: ws},
			class:   ClassSafe,
			actions: map[string]Action{"alice": ActionObserve},
			checkResult: func(t *testing.T, r Result) {
				if len(r.Extra) != 1 || r.Extra[0].Action != ActionMigrate || r.Extra[0].ClaimName != "nebi-workspaces-alice" || r.Extra[0].Volume != "pv-nebi-workspaces-alice" {
					t.Errorf("extra %+v", r.Extra)
				}
			},
		},
		{
			name:    "a workspace in another class is rebound all the same (it keeps its class)",
			cfg:     cfg(nil, mode(claims.RWX), sclass("efs"), extras, migrate(migration.MethodAuto, 0, true)),
			live:    Live{Claims: []claims.Claim{pvc(t, "alice", class("efs"), modes(claims.RWX)), workspace(t, "alice")}, Volumes: ws},
			class:   ClassSafe,
			actions: map[string]Action{"alice": ActionObserve},
		},
		{
			name:    "a workspace on a driver that cannot share it is refused, never copied",
			cfg:     cfg(nil, mode(claims.RWX), sclass("longhorn"), extras, migrate(migration.MethodAuto, 0, true), copyTo("rsync:3", "home-{username}")),
			live:    Live{Claims: []claims.Claim{rwxHome("alice"), workspace(t, "alice")}, Volumes: map[string]Volume{"pv-nebi-workspaces-alice": {CSIDriver: "ebs.csi.aws.com"}}},
			class:   ClassNone,
			actions: map[string]Action{"alice": ActionObserve},
			legacy:  []string{"alice"}, colocation: true,
			errors: []want{{attr: "migration", has: []string{"nebi-workspaces-alice", "only rebound, never copied"}}},
		},
	})
}

// A rebind an earlier apply started is read whatever on_mode_change says
// now: once its claim was deleted it is finished (the only way to give the
// user the home back); while the old claim is still there it waits, and the
// plan says how to finish or undo it.
func TestPlanRebindInProgressUnderAnotherSetting(t *testing.T) {
	rec := func(step migration.Step) map[claims.Ref]InProgress {
		return map[claims.Ref]InProgress{at(home(t, "alice")): {Volume: "pv-claim-alice", Record: migration.Record{Step: step, User: "alice",
			Claim: home(t, "alice"), Namespace: ns, From: []string{claims.RWO}, To: claims.RWX, ReclaimPolicy: "Delete"}}}
	}
	for _, o := range []OnModeChange{OnModeChangeFail, OnModeChangeKeepExisting, OnModeChangeRecreate} {
		c := cfg([]string{"alice"}, mode(claims.RWX), onChange(o), dataLoss())
		for _, pr := range []*Prior{nil, prior(t, c)} {
			r := Plan(c, pr, Live{InProgress: rec(migration.StepReleased)})
			if got := actions(r); got["alice"] != ActionMigrate || r.Users[0].Resume == nil || r.Users[0].Volume != "pv-claim-alice" || r.Class != ClassSafe {
				t.Errorf("%s, prior %v: claim gone: %v (class %s), want the rebind finished", o, pr != nil, got, r.Class)
			}
			r = Plan(c, pr, Live{Claims: []claims.Claim{longhornRWO(t, "alice")}, InProgress: rec(migration.StepRetained)})
			if r.Users[0].Resume != nil || r.Users[0].Action == ActionMigrate {
				t.Errorf("%s: the old claim is there, yet the rebind resumes: %+v", o, r.Users[0])
			}
			found := false
			for _, w := range r.Warnings {
				found = found || strings.Contains(w.Detail, "pv-claim-alice") && strings.Contains(w.Detail, "To finish") && strings.Contains(w.Detail, "To undo")
			}
			if !found {
				t.Errorf("%s: no warning names the paused rebind: %s", o, dump(r.Warnings))
			}
		}
	}
}

// A claim KubeSpawner created while a rebind had deleted the old one holds
// the user's new files, not the home: the plan stops, naming it and the
// volume, and never advises deleting it unsaved.
func TestPlanClaimCreatedDuringRebind(t *testing.T) {
	c := cfg([]string{"alice"}, mode(claims.RWX), migrate(migration.MethodRebind, 0, true))
	made := pvc(t, "alice", uid("uid-new"))
	made.VolumeName = "pv-new"
	r := Plan(c, prior(t, c), Live{Claims: []claims.Claim{made}, InProgress: map[claims.Ref]InProgress{at(home(t, "alice")): {Volume: "pv-a",
		Record: migration.Record{Step: migration.StepRetained, User: "alice", Claim: home(t, "alice"), Namespace: ns, From: []string{claims.RWO}, To: claims.RWX}}}})
	checkFindings(t, "errors", r.Errors, []want{{attr: "users", has: []string{"uid-new", "pv-a", "save what"}}})
	if strings.Contains(dump(r.Errors), "holds no data") || actions(r)["alice"] == ActionMigrate {
		t.Errorf("plan %v: %s", actions(r), dump(r.Errors))
	}
}

// A copy's new claim is never another user's home, nor a claim that exists
// already: KubeSpawner would mount it as that user's home, or it may hold
// someone's data.
func TestPlanCopyTargetIsNoOnesHome(t *testing.T) {
	toEFS := []cfgOpt{mode(claims.RWX), sclass("efs"), onChange(OnModeChangeMigrate), migrate(migration.MethodCopy, 0, true), copyTo("rsync:3", "claim-{username}-rwx")}
	runPlanCases(t, []planCase{
		{
			name:       "the target is a listed user's home",
			cfg:        cfg([]string{"alice", "alice-rwx"}, toEFS...),
			live:       Live{Claims: []claims.Claim{ebsRWO(t, "alice")}},
			class:      ClassNone,
			actions:    map[string]Action{"alice": ActionLegacy, "alice-rwx": ActionCreate},
			legacy:     []string{"alice"},
			colocation: true,
			errors:     []want{{attr: "migration", has: []string{"claim-alice-rwx", `home claim of user "alice-rwx"`}}},
		},
		{
			name: "the target exists and is no copy",
			cfg:  cfg([]string{"alice"}, toEFS...),
			live: Live{Claims: []claims.Claim{ebsRWO(t, "alice"),
				{Name: "claim-alice-rwx", AccessModes: []string{claims.RWX}, StorageClass: "efs", Phase: "Bound"}}},
			class:      ClassNone,
			actions:    map[string]Action{"alice": ActionLegacy},
			legacy:     []string{"alice"},
			colocation: true,
			errors:     []want{{attr: "migration", has: []string{"claim-alice-rwx", "exists already", "did not create"}}},
		},
	})
}

// Deleting the old homes of finished copies is destructive and needs both
// delete_copied_sources and allow_data_loss; once a source is gone, the copy
// stays the user's home (never a new, empty claim under the old name).
func TestPlanDeleteCopiedSources(t *testing.T) {
	toEFS := []cfgOpt{mode(claims.RWX), sclass("efs"), migrate(migration.MethodAuto, 0, true), copyTo("rsync:3", "home-{username}")}
	with := func(extra ...cfgOpt) []cfgOpt { return append(slices.Clone(toEFS), extra...) }
	switched := func() []claims.Claim {
		return []claims.Claim{ebsRWO(t, "alice", withCopyRecord(migration.StepSwitched, "home-alice")), copyTarget(t, "alice", "home-alice")}
	}
	runPlanCases(t, []planCase{
		{
			name:    "without allow_data_loss the source is kept",
			cfg:     cfg([]string{"alice"}, with(deleteSources)...),
			live:    Live{Claims: switched()},
			class:   ClassNone,
			actions: map[string]Action{"alice": ActionCopied},
		},
		{
			name:     "with both, the source is deleted: destructive, and said so",
			cfg:      cfg([]string{"alice"}, with(deleteSources, dataLoss())...),
			live:     Live{Claims: switched()},
			class:    ClassDestructive,
			actions:  map[string]Action{"alice": ActionDeleteSource},
			warnings: []want{{attr: "migration", has: []string{"claim-alice", "home-alice", "3 files, 42 bytes", "old data"}}},
		},
		{
			name:    "not while a pod mounts the old home",
			cfg:     cfg([]string{"alice"}, with(deleteSources, dataLoss())...),
			live:    Live{Claims: switched(), Mounted: map[claims.Ref]bool{at("claim-alice"): true}},
			class:   ClassNone,
			actions: map[string]Action{"alice": ActionDeleteSource},
			errors:  []want{{attr: "migration", has: []string{"claim-alice", "Stop these servers"}}},
		},
		{
			name:    "the source gone, a listed user keeps the copy as home: nothing is created",
			cfg:     cfg([]string{"alice"}, with()...),
			live:    Live{Claims: []claims.Claim{copyTarget(t, "alice", "home-alice")}},
			class:   ClassNone, // nothing changes in the cluster
			actions: map[string]Action{"alice": ActionCopied},
			checkResult: func(t *testing.T, r Result) {
				if copiedTo(r, "alice") != "home-alice" {
					t.Errorf("home claim %q", copiedTo(r, "alice"))
				}
			},
		},
	})
}

// A rebound managed home grows to the configured capacity in the same
// apply; it never shrinks, and a KubeSpawner-made home is never resized.
func TestPlanMigrateCapacity(t *testing.T) {
	base := []cfgOpt{mode(claims.RWX), sclass("longhorn"), migrate(migration.MethodAuto, 0, true)}
	with := func(extra ...cfgOpt) []cfgOpt { return append(slices.Clone(base), extra...) }
	live := func() Live {
		return Live{Claims: []claims.Claim{longhornRWO(t, "alice"), longhornRWO(t, "bob")},
			Volumes: volumes(t, "driver.longhorn.io", "alice", "bob"), Class: &StorageClass{Name: "longhorn", Provisioner: "driver.longhorn.io", AllowExpansion: true, Exists: true}}
	}
	runPlanCases(t, []planCase{
		{
			name:    "grow after the rebind, managed users only",
			cfg:     cfg([]string{"alice"}, with(capacity(20))...),
			live:    live(),
			class:   ClassSafe,
			actions: map[string]Action{"alice": ActionMigrate, "bob": ActionMigrate},
			checkResult: func(t *testing.T, r Result) {
				if !r.Users[0].Resize || r.Users[1].Resize || !strings.Contains(r.Users[0].Reason, "then grow 10Gi to 20Gi") {
					t.Errorf("resize: alice %v (%s), bob %v", r.Users[0].Resize, r.Users[0].Reason, r.Users[1].Resize)
				}
			},
		},
		{
			name:    "a smaller capacity fails as it does without a migration",
			cfg:     cfg([]string{"alice"}, with(capacity(5))...),
			live:    live(),
			class:   ClassNone,
			actions: map[string]Action{"alice": ActionMigrate, "bob": ActionMigrate},
			errors:  []want{{attr: "capacity", has: []string{"claim-alice", "shrink"}}},
		},
	})
}

// A rebind an earlier apply started waits while a server mounts the claim.
func TestPlanResumeWaitsForRunningServer(t *testing.T) {
	c := cfg([]string{"alice"}, mode(claims.RWX), migrate(migration.MethodAuto, 0, true))
	rec := migration.Record{Step: migration.StepRetained, User: "alice", Claim: home(t, "alice"), Namespace: ns, From: []string{claims.RWO}, To: claims.RWX}
	live := Live{Claims: []claims.Claim{longhornRWO(t, "alice")}, InProgress: map[claims.Ref]InProgress{at(home(t, "alice")): {Volume: "pv-" + home(t, "alice"), Record: rec}},
		Mounted: map[claims.Ref]bool{at(home(t, "alice")): true}}
	r := Plan(c, nil, live)
	if a := actions(r)["alice"]; a != ActionLegacy {
		t.Fatalf("alice: %s, want legacy while her server runs", a)
	}
	if len(r.Warnings) == 0 || !strings.Contains(dump(r.Warnings), "running server") {
		t.Errorf("warnings: %s", dump(r.Warnings))
	}
	delete(live.Mounted, at(home(t, "alice")))
	if a := actions(Plan(c, nil, live))["alice"]; a != ActionMigrate {
		t.Errorf("alice after the server stopped: %s", a)
	}
}
