package safety

import (
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
		cfg:     cfg(nil, mode(RWX), sclass("longhorn"), migrate(migration.MethodAuto, 0, true)),
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
	c := cfg(nil, mode(RWX), sclass("efs"), migrate(migration.MethodAuto, 0, true), copyTo("rsync:3", "home-{username}"))
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
	rec := migration.Record{Step: migration.StepRetained, User: "alice", Claim: a.Name, Namespace: ns, From: []string{RWO}, To: RWX}
	r := Plan(cfg(nil, mode(RWX), sclass("longhorn"), migrate(migration.MethodAuto, 0, true)), nil,
		Live{Claims: []claims.Claim{a}, Volumes: volumes(t, "driver.longhorn.io", "alice"), InProgress: map[claims.Ref]InProgress{at(a.Name): {Volume: a.VolumeName, Record: rec}}})
	if got := actions(r); got["alice"] != ActionLegacy || len(ChangesOf(r)) != 0 {
		t.Errorf("actions %v, changes %v", got, ChangesOf(r))
	}
	checkFindings(t, "warnings", r.Warnings, []want{{attr: "migration", has: []string{"alice: claim-alice", "wait for their filesystem to be grown"}}})
}
