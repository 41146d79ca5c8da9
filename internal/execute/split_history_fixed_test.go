package execute

import (
	"strings"
	"testing"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/claims"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/kubespawner"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/migration"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/safety"
)

// The move out of the shared layout's sequences, as fixed histories of the
// model (split_history_test.go), each failing without its fix.

// splitCfg is the layout of moving homes out of the shared one (template
// tmpl, slug_scheme safe) for the listed users, on_layout_change migrate.
func splitCfg(tmpl string, users ...string) safety.Config {
	c := sharedCfg(tmpl, kubespawner.SchemeSafe, users...)
	c.SplitFrom, c.Shared, c.OnLayoutChange = c.Shared, nil, safety.OnLayoutChangeMigrate
	return c
}

// A new resource (no state, here after state rm) moving homes out of the
// shared layout takes the directories its sub_path_template names: like a
// new resource in the shared layout, its plan must warn that it cannot see
// which directories the hub mounts now (the hub here mounts
// "home/{username}", the configuration says "{username}": alice's files
// stay in "home/alice" and her claim becomes the empty "alice"). Fails
// when safety.Plan gives that warning in the shared layout only
// (TestHistories, seed 28).
func TestHistory_splitNewResourceWarnsItCannotSeeTheDirectories(t *testing.T) {
	w := sharedWorld(t)
	w.hub.shared, w.hub.scheme = &safety.SharedHome{Claim: sharedClaim, SubPathTemplate: "home/{username}"}, kubespawner.SchemeSafe
	w.session("alice")
	cfg := splitCfg("{username}", "alice")
	p, state := w.planApply(t, cfg, nil)
	if !warnsAdoption(p.res) {
		t.Fatalf("the plan gives no warning that it cannot see the hub's directories:\n  %s", strings.Join(w.log, "\n  "))
	}
	w.session("alice")
	w.done(t, cfg, state)
}

// Leaving the move for the per-user layout with another namespace or
// template: a listed user whose home was still a directory (no claim where
// the move's settings look) finds another claim under the new settings
// (here one of an earlier per-user layout in their own namespace) instead
// of their directory; the plan must name them, as it names those who get
// a new, empty claim. Fails when unsplitMoves asks whether the user has a
// claim under the new settings rather than the move's (TestHistories,
// seed 570).
func TestHistory_leavingTheMoveNamesUsersStillInDirectories(t *testing.T) {
	w := sharedWorld(t)
	w.hub.template, w.hub.nsTemplate = "home", userNSTmpl
	w.session("alice") // KubeSpawner makes jupyter-alice/home
	w.hub.template, w.hub.nsTemplate = "claim-{username}", ""
	w.hub.split, w.hub.scheme = &safety.SharedHome{Claim: sharedClaim, SubPathTemplate: "{username}"}, kubespawner.SchemeSafe
	moving := splitCfg("{username}", "alice")
	moving.OnLayoutChange = safety.OnLayoutChangeFail
	state := priorOf(moving)
	w.session("alice") // the hub mounts her directory "alice"
	per := sharedCfg("", kubespawner.SchemeSafe, "alice")
	per.Shared, per.NameTemplate, per.UserNamespaceTemplate, per.AccessMode = nil, "home", userNSTmpl, claims.RWO
	w.mustRefuse(t, per, state, `alice: directory "alice" of claim hub/home-nfs → claim jupyter-alice/home`)
}

// A destroy of the move's layout with deletion_policy "delete" and
// allow_data_loss keeps the claim of an unfinished move: deleted, it
// left the move's volume reserved for a claim that is gone, and the next
// plan (no state) planned a create of that claim over it, where the
// unfinished move must fail the plan saying how to finish or undo it.
// Fails when safety.Destroy deletes such a claim (TestHistories, seed 774).
func TestHistory_destroyKeepsAnUnfinishedMove(t *testing.T) {
	w := sharedWorld(t)
	w.hub.shared, w.hub.scheme = &safety.SharedHome{Claim: sharedClaim, SubPathTemplate: "{username}"}, kubespawner.SchemeSafe
	w.session("alice")
	cfg := splitCfg("{username}", "alice")
	cfg.DeletionPolicy, cfg.AllowDataLoss = safety.DeletionDelete, true
	w.binderRate = 0 // the binder is down: the move stops before its claim is bound
	p, ok := w.plan(cfg, nil)
	if !ok {
		t.Fatalf("plan: %s", errorsText(p.res))
	}
	state := w.apply(p, false)
	if state == nil || w.failed {
		t.Fatalf("apply:\n  %s", strings.Join(w.log, "\n  "))
	}
	w.destroy(cfg, *state, false)
	per := cfg
	per.SplitFrom, per.AccessMode = nil, claims.RWO
	w.mustRefuse(t, per, nil, "A move out of the shared layout has not finished")
	w.binderRate = 1
	w.done(t, cfg, nil)
}

// While homes move out of the shared layout the hub mounts a user's
// directory when their claim is missing, so delete_copied_sources deletes
// no copied home's old claim there: deleted, the user's next spawn mounted
// their directory of the shared claim instead of the copy. Fails when the
// planner plans delete-source with shared_home set (TestHistories, seed
// 1424).
func TestHistory_noDeleteSourceWhileMoving(t *testing.T) {
	w := sharedWorld(t)
	w.hub.template = "claim-{user_server}"
	w.session("alice") // KubeSpawner makes hub/claim-alice
	w.hub.split, w.hub.scheme = &safety.SharedHome{Claim: sharedClaim, SubPathTemplate: "{username}"}, kubespawner.SchemeSafe
	cfg := splitCfg("{username}", "alice")
	cfg.NameTemplate, cfg.OnLayoutChange, cfg.OnModeChange, cfg.AllowDataLoss = "claim-{user_server}", safety.OnLayoutChangeKeep, safety.OnModeChangeMigrate, true
	cfg.Migration = safety.Migration{Method: migration.MethodCopy, CopyImage: copyImage, TargetTemplate: "home-{user_server}", DeleteSources: true, SkipRunning: true}
	state := priorOf(cfg)
	_, state = w.planApply(t, cfg, state) // the copy, switched
	w.session("alice")
	p, ok := w.plan(cfg, state)
	if !ok {
		t.Fatalf("plan: %s", errorsText(p.res))
	}
	if strings.Contains(p.changes, "delete-source") {
		w.apply(p, false)
		t.Fatalf("the plan deletes the copied home's old claim while homes move out of the shared layout:\n  %s", strings.Join(w.log, "\n  "))
	}
	w.done(t, cfg, state)
}

// From the shared layout, a claim of the per-user layout that the
// template names for a user's default server is a move (the hub starts
// mounting it instead of the user's directory), also when KubeSpawner
// made it for a named server of the user: under claim-{username} both
// servers have one claim. Fails when splitMoves leaves out claims
// labelled with a server (TestHistories, seed 4662).
func TestHistory_movingNamesANamedServersClaimOfTheHomesName(t *testing.T) {
	w := sharedWorld(t)
	w.session("alice/gpu") // KubeSpawner makes hub/claim-alice, labelled with server gpu
	shared := sharedCfg("{username}", kubespawner.SchemeSafe, "alice")
	shared.AccessMode = claims.RWO
	w.hub.shared, w.hub.scheme = shared.Shared, kubespawner.SchemeSafe
	w.session("alice") // her directory "alice"
	cfg := splitCfg("{username}", "alice")
	cfg.AccessMode, cfg.OnLayoutChange = claims.RWO, safety.OnLayoutChangeFail
	w.mustRefuse(t, cfg, priorOf(shared), `alice: directory "alice" of claim hub/home-nfs → claim hub/claim-alice`)
}

// From the shared layout, a claim an earlier move made is the directory
// its record names; when the shared layout mounted another directory (here
// slug_scheme changed in between: Bob's "home/-42ob" under "escape", his
// moved claim "home/bob---cd9fb1e1" under "safe"), the hub starts mounting
// that claim instead of the directory he used: a move the plan names.
// Fails when splitMoves leaves out every claim carrying a move's record
// (TestHistories, seed 5100); with keep the warning names him and his
// directory stays as it is.
func TestHistory_movingNamesAMovedClaimOfAnotherDirectory(t *testing.T) {
	w := sharedWorld(t)
	shared := sharedCfg("home/{username}", kubespawner.SchemeSafe, "Bob")
	w.hub.shared, w.hub.scheme = shared.Shared, kubespawner.SchemeSafe
	w.session("Bob")
	cfg := splitCfg("home/{username}", "Bob")
	_, state := w.planApply(t, cfg, priorOf(shared)) // Bob's claim is his directory "home/bob---cd9fb1e1"
	escape := sharedCfg("home/{username}", kubespawner.SchemeEscape, "Bob")
	escape.OnLayoutChange = safety.OnLayoutChangeKeep
	_, state = w.planApply(t, escape, state)
	w.session("Bob") // his directory "home/-42ob"
	cfg.OnLayoutChange = safety.OnLayoutChangeKeep
	p, state := w.planApply(t, cfg, state)
	if want := `Bob: directory "home/-42ob" of claim hub/home-nfs → claim hub/claim-bob---cd9fb1e1`; !strings.Contains(p.res.Warnings[0].Detail, want) {
		t.Fatalf("the plan's warning does not name %q: %v", want, p.res.Warnings)
	}
	w.session("Bob")
	w.done(t, cfg, state)
}

// Leaving user namespaces for the move (shared_home allows none): a home
// left in the user's namespace is named (homes left where the
// configuration no longer looks), also when KubeSpawner made it for a
// named server under the name the template gives the default server
// ("home": one claim for both). Fails when leftBehind leaves out claims
// labelled with a server (TestHistories, seed 6288).
func TestHistory_leavingUserNamespacesNamesANamedServersClaimOfTheHomesName(t *testing.T) {
	w := sharedWorld(t)
	w.hub.template, w.hub.nsTemplate = "home", userNSTmpl
	w.session("alice/gpu") // KubeSpawner makes jupyter-alice/home, labelled with server gpu
	per := sharedCfg("", kubespawner.SchemeSafe, "alice")
	per.Shared, per.NameTemplate, per.UserNamespaceTemplate, per.AccessMode = nil, "home", userNSTmpl, claims.RWO
	_, state := w.planApply(t, per, nil)
	w.session("alice")
	cfg := splitCfg("home/{username}", "alice")
	cfg.AccessMode = claims.RWO
	w.mustRefuse(t, cfg, state, "alice: jupyter-alice/home (the configuration looks in namespace hub)")
}

// From the shared layout, a user whose per-user claim is being rebound
// (the old claim deleted, the volume carrying the rebind's record) gets
// that claim again when the rebind finishes, and the hub then mounts it
// instead of the user's directory: a move the plan names. Fails when
// splitMoves looks at live claims only. Kept as the history that found it
// (a rebind killed between its delete and its create, then the move's
// layout with on_layout_change = "keep").
func TestHistory_movingNamesARebindInProgress(t *testing.T) {
	if w := runHistory(t, 4510); w.failed {
		t.Fatalf("history 4510 loses data:\n  %s", strings.Join(w.log, "\n  "))
	}
}
