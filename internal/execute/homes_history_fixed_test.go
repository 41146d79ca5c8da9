package execute

import (
	"strings"
	"testing"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/claims"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/kubespawner"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/safety"
)

// The shared layout's sequences, as fixed histories of the model
// (homes_history_test.go), each failing without its fix.

// sharedWorld is a quiet world with the shared claim, the hub on per-user
// claims "claim-{username}".
func sharedWorld(t *testing.T) *world {
	w := quietWorld(t)
	w.newSharedClaim()
	return w
}

// sharedCfg is the shared layout for the listed users, on_layout_change fail.
func sharedCfg(tmpl string, scheme kubespawner.Scheme, users ...string) safety.Config {
	return safety.Config{Namespace: hubNS, NameTemplate: "claim-{username}", Scheme: scheme, AccessMode: claims.RWX, OnModeChange: safety.OnModeChangeFail,
		Users: users, Capacity: "1Gi", CapacityBytes: 1 << 30, DeletionPolicy: safety.DeletionRetain, OnLayoutChange: safety.OnLayoutChangeFail,
		Shared: &safety.SharedHome{Claim: sharedClaim, SubPathTemplate: tmpl}}
}

func errorsText(res safety.Result) string {
	var b strings.Builder
	for _, f := range res.Errors {
		b.WriteString(f.Summary + ": " + f.Detail + "\n")
	}
	return b.String()
}

// mustRefuse: the plan of cfg fails naming want; had it passed, its apply
// (the hub switching to cfg) shows what the model finds.
func (w *world) mustRefuse(t *testing.T, cfg safety.Config, state *safety.Prior, want string) {
	t.Helper()
	p, ok := w.plan(cfg, state)
	if ok {
		w.apply(p, false)
		t.Fatalf("the plan passed (%s %s):\n  %s", p.res.Class, p.changes, strings.Join(w.log, "\n  "))
	}
	if !strings.Contains(errorsText(p.res), want) {
		t.Fatalf("the plan's errors do not name %q:\n%s", want, errorsText(p.res))
	}
}

// (a) A new resource (no state) in the shared layout over a listed user's
// claim of the per-user layout: the user would start in a new, empty
// directory, so the plan fails unless on_layout_change = "keep", which
// names the user and leaves the claim as it is. Fails when layoutMoves
// returns no moves without a prior.
func TestHistory_sharedNewResourceOverPerUserClaim(t *testing.T) {
	w := sharedWorld(t)
	w.session("alice")
	cfg := sharedCfg("{username}", kubespawner.SchemeSafe, "alice")
	w.mustRefuse(t, cfg, nil, `alice: claim hub/claim-alice → directory "alice"`)
	cfg.OnLayoutChange = safety.OnLayoutChangeKeep
	_, state := w.planApply(t, cfg, nil)
	if v := w.volOf(hubRef("claim-alice")); v == nil || len(v.files) != 1 {
		t.Fatalf("alice's old home changed:\n%s", strings.Join(w.log, "\n"))
	}
	w.session("alice")
	w.done(t, cfg, state)
}

// (b) Destroy in the shared layout with deletion_policy = "delete" and
// allow_data_loss deletes no claim: the per-user claims kept by an earlier
// switch are homes too, and the shared claim holds every home. Fails when
// safety.Destroy plans the shared layout as the per-user one and the
// state's prior lists the users' claims.
func TestHistory_sharedDestroyDeletesNoClaim(t *testing.T) {
	w := sharedWorld(t)
	w.session("alice")
	w.session("Bob")
	per := sharedCfg("", kubespawner.SchemeSafe, "alice", "Bob")
	per.Shared, per.AccessMode, per.DeletionPolicy, per.AllowDataLoss = nil, claims.RWO, safety.DeletionDelete, true
	_, state := w.planApply(t, per, nil)
	shared := sharedCfg("home/{username}", kubespawner.SchemeSafe, "alice", "Bob")
	shared.DeletionPolicy, shared.AllowDataLoss, shared.OnLayoutChange = safety.DeletionDelete, true, safety.OnLayoutChangeKeep
	_, state = w.planApply(t, shared, state)
	w.session("alice")
	w.destroy(shared, *state, false)
	for _, ref := range []claims.Ref{hubRef("claim-alice"), hubRef("claim-bob---cd9fb1e1")} {
		if v := w.volOf(ref); v == nil || len(v.files) != 1 || w.failed {
			t.Fatalf("destroy in the shared layout: %s\n  %s", ref, strings.Join(w.log, "\n  "))
		}
	}
	w.done(t, shared, nil)
}

// (c) A change of sub_path_template that moves a listed user ({username}
// to e_/{escaped_username}: Bob's directory "bob---cd9fb1e1" becomes
// "e_/-42ob") fails unless on_layout_change = "keep"; with keep the plan
// names Bob and his old directory stays as it is. Fails when the plan
// compares only the claims of the homes, not their directories. (Onto
// {escaped_username} itself a keep is refused: the escaped names of some
// users are the safe names of others, whose old homes stay there.)
func TestHistory_sharedTemplateChange(t *testing.T) {
	w := sharedWorld(t)
	w.hub.shared, w.hub.scheme = &safety.SharedHome{Claim: sharedClaim, SubPathTemplate: "{username}"}, kubespawner.SchemeSafe
	cfg := sharedCfg("{username}", kubespawner.SchemeSafe, "alice", "Bob")
	_, state := w.planApply(t, cfg, nil)
	w.session("alice")
	w.session("Bob")
	now := cfg
	now.Shared = &safety.SharedHome{Claim: sharedClaim, SubPathTemplate: "e_/{escaped_username}"}
	w.mustRefuse(t, now, state, `Bob: directory "bob---cd9fb1e1" of claim hub/home-nfs → directory "e_/-42ob"`)
	now.OnLayoutChange = safety.OnLayoutChangeKeep
	_, state = w.planApply(t, now, state)
	old := w.filesAt(loc{hubRef(sharedClaim), "bob---cd9fb1e1"})
	if len(old) != 1 || !w.reported[contentsOf(old)[0]] {
		t.Fatalf("Bob's old directory: %v\n%s", old, strings.Join(w.log, "\n"))
	}
	w.session("Bob")
	w.done(t, now, state)
}

// A new resource (no state, here after -replace) in the shared layout
// under slug_scheme "escape" over Bob's claim, which KubeSpawner named
// under "safe" (claim-bob---cd9fb1e1; "escape" would name it
// claim--42ob): the claim is Bob's home all the same, found by his label,
// and the plan fails unless keep. Fails when only the claim the template
// names under the configured scheme counts (TestHistories, seed 34).
func TestHistory_sharedNewResourceOverClaimOfTheOtherScheme(t *testing.T) {
	w := sharedWorld(t)
	w.session("Bob")
	per := sharedCfg("", kubespawner.SchemeSafe, "Bob")
	per.Shared, per.AccessMode = nil, claims.RWO
	_, state := w.planApply(t, per, nil)
	w.destroy(per, *state, true) // -replace
	cfg := sharedCfg("{username}", kubespawner.SchemeEscape, "Bob")
	w.mustRefuse(t, cfg, nil, `Bob: claim hub/claim-bob---cd9fb1e1 → directory "-42ob"`)
	cfg.OnLayoutChange = safety.OnLayoutChangeKeep
	_, state = w.planApply(t, cfg, nil)
	w.session("Bob")
	w.done(t, cfg, state)
}
