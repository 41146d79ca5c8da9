package execute

import (
	"strings"
	"testing"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/claims"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/kubespawner"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/migration"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/safety"
)

// The move by copy out of the shared layout's sequences, as fixed
// histories of the model (directory_copy_history_test.go), each failing
// without its fix.

// copyCfg is the layout of moving homes out of the shared one (template
// tmpl) by a copy, for the listed users.
func copyCfg(tmpl string, users ...string) safety.Config {
	c := splitCfg(tmpl, users...)
	c.Migration = safety.Migration{Method: migration.MethodCopy, CopyImage: copyImage}
	return c
}

// A move by copy relies on the hub refusing the user's spawns while the
// copy runs, and the hub runs the configuration of the last apply until
// this one is done: in the apply that switches to the move's layout a
// hub of the shared layout mounts the directory (what the user writes
// there after the copy Job is not in the copy the hub mounts next), and
// one of the per-user layout mounts the claim being copied (the copy's
// rsync --delete drops what the user wrote there). So the plan moves a
// directory by a copy only once the hub runs the move's layout with the
// claim's name (the prior state's configuration), and leaves it for a
// later apply otherwise. Fails when safety.Plan plans the copy from any
// prior (TestHistories, seeds 1324 and 378 with the model of moves by
// copy).
func TestHistory_copyWaitsForTheHubOfTheMove(t *testing.T) {
	for _, tc := range []struct {
		name string
		hub  func(w *world) *safety.Prior // the hub and the state before the move
		at   migration.Op                 // Bob's session after this op of the first apply
	}{
		{"from the shared layout", func(w *world) *safety.Prior {
			shared := sharedCfg("{username}", kubespawner.SchemeSafe, "Bob")
			w.hub.shared, w.hub.scheme = shared.Shared, kubespawner.SchemeSafe
			return priorOf(shared)
		}, migration.OpWaitDirectoryCopy},
		{"from the per-user layout", func(w *world) *safety.Prior {
			per := sharedCfg("", kubespawner.SchemeSafe, "Bob")
			per.Shared, per.AccessMode, per.OnLayoutChange = nil, claims.RWO, safety.OnLayoutChangeKeep
			return priorOf(per)
		}, migration.OpCreateDirectoryCopyClaim},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := sharedWorld(t)
			w.hub.shared, w.hub.scheme = &safety.SharedHome{Claim: sharedClaim, SubPathTemplate: "{username}"}, kubespawner.SchemeSafe
			w.session("Bob") // his directory "bob---cd9fb1e1"
			w.hub.shared = nil
			state := tc.hub(w)
			cfg := copyCfg("{username}", "Bob")
			cfg.AccessMode = claims.RWO
			w.afterOp = func(user string, op migration.Op) {
				if op == tc.at {
					w.afterOp = nil
					w.session("Bob") // the hub as the last apply left it
				}
			}
			p, state := w.planApply(t, cfg, state)
			w.afterOp = nil
			if strings.Contains(p.changes, string(migration.MethodDirectoryCopy)) {
				t.Fatalf("the plan copies while the hub runs another layout (%s)", p.changes)
			}
			w.session("Bob")
			p, state = w.planApply(t, cfg, state) // the hub runs the move's layout: the copy
			if !strings.Contains(p.changes, string(migration.MethodDirectoryCopy)) || w.claims[hubRef("claim-bob---cd9fb1e1")] == nil {
				t.Fatalf("the second apply does not copy (%s):\n  %s", p.changes, strings.Join(w.log, "\n  "))
			}
			w.session("Bob")
			w.done(t, cfg, state)
		})
	}
}
