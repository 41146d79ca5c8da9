package execute

import (
	"fmt"
	"strings"
	"testing"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/claims"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/kubespawner"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/migration"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/safety"
)

// The defects of the migrations' data safety, each as a fixed history of
// the model (helpers_test.go, migrate_history_test.go) that fails without
// its fix.

// A copied home's old claim is deleted (delete_copied_sources) only when a
// verification made right before finds everything it holds in the new
// home, compared by content whatever the times say: a file of the old
// home rewritten with an older mtime (tar x, cp -p), or edited in both
// homes, is never passed over. Fails with the verification's rsync
// --update (files newer in the target skipped).
func TestHistory_verificationBeforeDeletingTheOldHome(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(w *world, old, home *volume)
	}{
		{"rewritten with an older mtime", func(w *world, old, _ *volume) {
			// A pod left on the old home extracts an archive: the file's
			// content changes, its mtime goes back.
			w.rewrite(old, "alice-notes", 1)
		}},
		{"edited in both homes", func(w *world, old, home *volume) {
			w.rewrite(old, "alice-notes", w.clock+1) // on the old home, by a pod left there
			w.rewrite(home, "alice-notes", w.clock+1)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := quietWorld(t)
			alice := w.homeClaim("alice", claims.RWO)
			v := w.vols[alice.c.VolumeName]
			w.clock = 10
			v.files["alice-notes"] = file{"alice@10", 10}
			w.owner["alice@10"] = "alice"
			cfg := migrateConfig(migration.MethodCopy, "alice")
			_, state := w.planApply(t, cfg, nil)
			ref, _, refused := w.hubHome("alice")
			if refused != "" || ref != hubRef("home-alice") {
				t.Fatalf("alice's home after the copy: %s %s\n%s", ref, refused, strings.Join(w.log, "\n"))
			}
			tc.change(w, v, w.volOf(ref))
			cfg.Migration.DeleteSources = true
			p, state := w.planApply(t, cfg, state)
			if p.res.Class != safety.ClassDestructive || !strings.Contains(p.changes, `"action":"delete-source"`) {
				t.Fatalf("plan: %s %s", p.res.Class, p.changes)
			}
			w.binder()
			if w.claims[hubRef("claim-alice")] == nil || !strings.Contains(strings.Join(w.errs, "\n"), "verifying it again") {
				t.Errorf("the old home was deleted, or not refused by the verification: %v", w.errs)
			}
			w.done(t, cfg, state)
		})
	}
}

// rewrite is the user's rewrite of a file on v with the given mtime.
func (w *world) rewrite(v *volume, path string, mtime int) {
	w.clock++
	content := fmt.Sprintf("alice@%d", w.clock)
	w.superseded[v.files[path].content] = true
	w.owner[content] = "alice"
	v.files[path] = file{content, mtime}
}

// Under per-user namespaces with a claim template without a user field,
// every home is named "home": destroy with deletion_policy = "delete"
// deletes the listed users' homes, each in its own namespace, and never an
// unlisted user's. Fails when destroy finds a user's claim by its name alone.
func TestHistory_destroyUnderPerUserNamespaces(t *testing.T) {
	w := quietWorld(t)
	w.hub.template, w.hub.nsTemplate = "home", userNSTmpl
	w.session("alice")
	w.session("carol") // not listed
	cfg := safety.Config{Namespace: hubNS, NameTemplate: "home", UserNamespaceTemplate: userNSTmpl, Scheme: kubespawner.SchemeSafe, AccessMode: claims.RWO,
		OnModeChange: safety.OnModeChangeFail, AllowDataLoss: true, DeletionPolicy: safety.DeletionDelete, Users: []string{"alice"},
		Capacity: "1Gi", CapacityBytes: 1 << 30}
	_, state := w.planApply(t, cfg, nil)
	w.destroy(cfg, *state, false)
	w.binder()
	carol := claims.Ref{Namespace: "jupyter-carol", Name: "home"}
	if w.failed || w.claims[claims.Ref{Namespace: "jupyter-alice", Name: "home"}] != nil || w.volOf(carol) == nil {
		t.Fatalf("destroy:\n  %s", strings.Join(w.log, "\n  "))
	}
	w.done(t, cfg, nil)
}

// A rebind stopped right after the old claim's deletion (the apply killed),
// then forgotten by the configuration and the state (on_mode_change back
// to keep_existing, and state rm or -replace): the next plan reads the
// record on the volume and finishes the rebind, on the same volume, with a
// PV binder too slow for the apply's wait; the hub refuses spawns until
// the claim is bound. Fails when the plan reads records only while the
// configuration or the state says "migrate": it plans a new, empty home.
func TestHistory_forgottenRebind(t *testing.T) {
	for _, forget := range []string{"state rm", "-replace"} {
		t.Run(forget, func(t *testing.T) {
			w := quietWorld(t)
			w.session("alice")
			cfg := migrateConfig(migration.MethodRebind, "alice")
			state := priorOf(safety.Config{Namespace: hubNS, NameTemplate: "claim-{username}", Scheme: kubespawner.SchemeSafe, AccessMode: claims.RWO,
				OnModeChange: safety.OnModeChangeKeepExisting, Users: []string{"alice"}, Capacity: "1Gi", CapacityBytes: 1 << 30})
			w.afterRemove = func() { w.killed = true }
			p, _ := w.plan(cfg, state)
			if w.apply(p, false) != nil || w.claims[hubRef("claim-alice")] != nil {
				t.Fatalf("the apply was not stopped after the claim's deletion:\n%s", strings.Join(w.log, "\n"))
			}
			w.afterRemove = nil
			if forget == "-replace" {
				w.destroy(cfg, *priorOf(cfg), true)
			}
			w.binderRate = 0 // the binder is down
			revert := cfg
			revert.OnModeChange, revert.AccessMode = safety.OnModeChangeKeepExisting, claims.RWO
			p, state = w.planApply(t, revert, nil)
			if !strings.Contains(p.changes, `"action":"migrate"`) {
				t.Errorf("the forgotten rebind is planned as %s", p.changes)
			}
			if _, _, refused := w.hubHome("alice"); refused == "" {
				t.Errorf("the hub gives alice a home while the rebind waits for the binder")
			}
			w.binderRate = 1
			w.binder()
			w.done(t, revert, state)
			if v := w.volOf(hubRef("claim-alice")); v == nil || v.name != "pv-1" {
				t.Errorf("alice's home is not on her volume:\n%s", strings.Join(w.log, "\n"))
			}
		})
	}
}

// A spawn in the rebind's window (the old claim deleted, the new one not
// yet created): KubeSpawner creates an empty claim and the user writes
// there. The rebind stops naming it, and what the error says keeps those
// files: saved, the claim deleted, the rebind finished, the files put
// back. Fails with the earlier advice (delete the new claim, "it holds no
// data of the old home").
func TestHistory_spawnInTheRebindsWindow(t *testing.T) {
	w := quietWorld(t)
	w.session("alice")
	cfg := migrateConfig(migration.MethodRebind, "alice")
	w.afterRemove = func() {
		w.afterRemove = nil
		w.session("alice")
	}
	_, state := w.planApply(t, cfg, nil)
	if !strings.Contains(strings.Join(w.errs, "\n"), "was created by someone else") {
		t.Fatalf("the rebind did not stop at the claim KubeSpawner created:\n%s", strings.Join(w.log, "\n"))
	}
	w.followAdvice()
	w.done(t, cfg, state)
	if v := w.volOf(hubRef("claim-alice")); v == nil || v.name != "pv-1" || len(v.files) != 2 {
		t.Errorf("alice's home after the rebind: %+v\n%s", v, strings.Join(w.log, "\n"))
	}
}
