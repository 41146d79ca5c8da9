package safety

import (
	"strings"
	"testing"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/claims"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/migration"
)

// Settings that move where homes are looked for leave the old homes behind:
// the plan fails naming them, as a changed pvc_name_template does, unless
// keep_existing acknowledges them.
func TestPlanHomesLeftBehind(t *testing.T) {
	userNS := userNamespaces("{hubnamespace}-{username}")
	inHub := func(u string) claims.Claim { return pvc(t, u, inNS(ns)) }
	before := cfg([]string{"alice"})
	runPlanCases(t, []planCase{
		{
			name:       "user namespaces turned on while homes are in the hub namespace",
			cfg:        cfg([]string{"alice"}, userNS),
			prior:      prior(t, before),
			live:       Live{Claims: []claims.Claim{inHub("alice"), inHub("bob")}},
			class:      ClassNone,
			actions:    map[string]Action{"alice": ActionCreate},
			colocation: true,
			errors:     []want{{attr: "user_namespace_template", has: []string{"Homes left where the configuration no longer looks", "alice: " + ns + "/" + home(t, "alice"), "bob: " + ns + "/" + home(t, "bob"), "keep_existing"}}},
		},
		{
			name:       "acknowledged with keep_existing",
			cfg:        cfg([]string{"alice"}, userNS, onChange(OnModeChangeKeepExisting)),
			prior:      prior(t, before),
			live:       Live{Claims: []claims.Claim{inHub("alice")}},
			class:      ClassSafe,
			actions:    map[string]Action{"alice": ActionCreate},
			colocation: true,
			warnings:   []want{{attr: "user_namespace_template", has: []string{"alice: " + ns + "/"}}},
		},
		{
			name:       "a new namespace: the homes in the old one are left behind",
			cfg:        func() Config { c := cfg([]string{"alice"}); c.Namespace = "jhub2"; return c }(),
			prior:      prior(t, before),
			live:       Live{Claims: []claims.Claim{inHub("alice")}},
			class:      ClassNone,
			actions:    map[string]Action{"alice": ActionCreate},
			colocation: true,
			errors:     []want{{attr: "namespace", has: []string{"alice: " + ns + "/" + home(t, "alice"), "namespace jhub2"}}},
		},
		{
			name:       "user namespaces turned off: homes in the users' namespaces are left behind",
			cfg:        cfg([]string{"alice"}),
			prior:      prior(t, cfg([]string{"alice"}, userNS)),
			live:       Live{Claims: []claims.Claim{pvc(t, "alice", inNS(ns+"-alice"))}},
			class:      ClassNone,
			actions:    map[string]Action{"alice": ActionCreate},
			colocation: true,
			errors:     []want{{attr: "user_namespace_template", has: []string{"alice: " + ns + "-alice/"}}},
		},
		{
			name:       "another deployment's claims elsewhere are not this one's",
			cfg:        cfg([]string{"alice"}),
			prior:      prior(t, before),
			live:       Live{Claims: []claims.Claim{inHub("alice"), pvc(t, "bob", inNS("other-hub"))}},
			class:      ClassNone,
			actions:    map[string]Action{"alice": ActionKeep},
			colocation: true,
		},
	})
}

// A claim without a copy record whose copy exists (KubeSpawner created the
// old name again after the copy, or the record was removed) is never copied
// over: a finished copy stays the home; an unfinished one fails the plan.
func TestPlanCopyWithoutRecord(t *testing.T) {
	toEFS := []cfgOpt{mode(RWX), sclass("efs"), migrate(migration.MethodAuto, 0, true), copyTo("rsync:3", "home-{username}"), dataLoss(), deleteSources}
	switched := copyTarget(t, "alice", "home-alice")
	switched.Annotations[migration.CopySwitchedAnnotation] = "true"
	runPlanCases(t, []planCase{
		{
			name:     "the old name created again after a finished copy",
			cfg:      cfg([]string{"alice"}, toEFS...),
			live:     Live{Claims: []claims.Claim{ebsRWO(t, "alice"), switched}, Volumes: volumes(t, "ebs.csi.aws.com", "alice")},
			class:    ClassNone, // nothing copied, nothing deleted
			actions:  map[string]Action{"alice": ActionCopied},
			warnings: []want{{attr: "migration", has: []string{"has no copy record", "home-alice stays the user's home"}}},
			checkResult: func(t *testing.T, r Result) {
				if copiedTo(r, "alice") != "home-alice" {
					t.Errorf("home claim %q", copiedTo(r, "alice"))
				}
				if c := ChangesOf(r); len(c) != 0 {
					t.Errorf("changes %v", c)
				}
			},
		},
		{
			// The source was created again after a copy that was verified but
			// never switched (its source deleted, the copy the home since).
			name:     "the old name created again after a copy the user was not switched to",
			cfg:      cfg([]string{"alice"}, toEFS...),
			live:     Live{Claims: []claims.Claim{withUID(ebsRWO(t, "alice"), "s2"), fromUID(copyTarget(t, "alice", "home-alice"), "s1")}, Volumes: volumes(t, "ebs.csi.aws.com", "alice")},
			class:    ClassNone,
			actions:  map[string]Action{"alice": ActionCopied},
			warnings: []want{{attr: "migration", has: []string{"home-alice stays the user's home", "Check what claim-alice holds"}}},
		},
		{
			name:    "an unfinished copy of the same claim whose record is gone",
			cfg:     cfg([]string{"alice"}, toEFS...),
			live:    Live{Claims: []claims.Claim{withUID(ebsRWO(t, "alice"), "s1"), fromUID(copyTarget(t, "alice", "home-alice"), "s1")}, Volumes: volumes(t, "ebs.csi.aws.com", "alice")},
			class:   ClassNone,
			actions: map[string]Action{"alice": ActionKeep},
			errors:  []want{{attr: "migration", has: []string{"unfinished copy of that same claim", "keeps claim-alice, which holds the data"}}},
		},
	})
}

// A rebind an earlier apply started waits while a server mounts the claim.
func TestPlanResumeWaitsForRunningServer(t *testing.T) {
	c := cfg([]string{"alice"}, mode(RWX), migrate(migration.MethodAuto, 0, true))
	rec := migration.Record{Step: migration.StepRetained, User: "alice", Claim: home(t, "alice"), Namespace: ns, From: []string{RWO}, To: RWX}
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

// The flip error names every choice, migrate among them.
func TestPlanFlipErrorListsMigrate(t *testing.T) {
	r := Plan(cfg([]string{"alice"}, mode(RWX)), nil, Live{Claims: []claims.Claim{pvc(t, "alice")}})
	if len(r.Errors) != 1 || !strings.Contains(r.Errors[0].Detail, `"migrate": move them to the new mode keeping every byte`) {
		t.Errorf("errors: %s", dump(r.Errors))
	}
}

func withUID(c claims.Claim, uid string) claims.Claim { c.UID = uid; return c }

func fromUID(c claims.Claim, uid string) claims.Claim {
	c.Annotations[migration.CopyOfUIDAnnotation] = uid
	return c
}
