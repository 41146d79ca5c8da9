package execute

import (
	"context"
	"strings"
	"testing"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/claims"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/kubespawner"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/safety"
)

// The six sequences of issue-style reports that motivated the executor's
// checks, as fixed histories at the core.
func TestHistory_savedPlanThenSpawn(t *testing.T) {
	w := fixedWorld(t)
	cfg := safety.Config{Namespace: hubNS, NameTemplate: "claim-{username}", Scheme: kubespawner.SchemeSafe, AccessMode: claims.RWX,
		OnModeChange: safety.OnModeChangeRecreate, AllowDataLoss: true, Users: []string{"alice", "bob"}, Capacity: "1Gi", CapacityBytes: 1 << 30}
	w.homeClaim("alice", claims.RWO) // alice: recreated, as the plan shows
	p, ok := w.plan(cfg, nil)
	if !ok || !strings.Contains(p.changes, `"bob":{"action":"create"`) {
		t.Fatalf("plan: %v %s", ok, p.changes)
	}
	// bob spawns before the saved plan is applied: KubeSpawner makes his
	// claim in the old mode and he writes to it.
	w.spawn("bob")
	bob := w.claims[hubRef("claim-bob")].c.UID
	// OpenTofu's plan at apply differs: it stops.
	if w.apply(p, false) != nil {
		t.Fatalf("the saved plan was applied although bob's claim appeared:\n%s", strings.Join(w.log, "\n"))
	}
	// And had it not stopped (the claim appeared after OpenTofu's check),
	// the executor does only what the plan showed.
	planned, _ := safety.DecodeChanges(p.changes)
	w.stop("bob") // even with his server stopped
	res := safety.Plan(cfg, nil, w.live(cfg, nil))
	sel := Select(res, planned)
	for _, up := range sel.Homes {
		if up.User == "bob" {
			t.Fatalf("bob's new claim is changed: %s", up.Action)
		}
	}
	if len(sel.Refused) != 1 || sel.Refused[0].Key != "bob" {
		t.Fatalf("refused %v", sel.Refused)
	}
	if m := w.claims[hubRef("claim-bob")]; m == nil || m.c.UID != bob || len(w.volOf(m.c.Ref()).files) != 1 {
		t.Fatalf("bob's home changed")
	}
}

// A replacement with deletion_policy = "delete": its destroy was never
// planned as one, so it deletes nothing; a destroy deletes what its plan
// listed, and not a claim created again since.
func TestHistory_replaceThenDestroy(t *testing.T) {
	w := fixedWorld(t)
	cfg := safety.Config{Namespace: hubNS, NameTemplate: "claim-{username}", Scheme: kubespawner.SchemeSafe, AccessMode: claims.RWO,
		OnModeChange: safety.OnModeChangeFail, AllowDataLoss: true, DeletionPolicy: safety.DeletionDelete, Users: []string{"alice", "bob"}, Capacity: "1Gi", CapacityBytes: 1 << 30}
	p, _ := w.plan(cfg, nil)
	mustApply(t, w, p)
	w.spawn("alice")
	w.stop("alice")
	w.destroy(cfg, *priorOf(cfg), true) // -replace
	if v := w.volOf(hubRef("claim-alice")); v == nil || len(v.files) != 1 {
		t.Fatalf("the replacement deleted alice's home:\n%s", strings.Join(w.log, "\n"))
	}
	// The destroy plan lists alice's and bob's claims; before it is applied,
	// bob's claim is deleted and KubeSpawner creates it again, and bob writes.
	d := safety.Destroy(cfg, *priorOf(cfg), w.live(cfg, priorOf(cfg)))
	w.deleteClaim(w.claims[hubRef("claim-bob")], "by someone else")
	w.spawn("bob")
	w.stop("bob")
	w.shown, w.planClass = map[string]shown{}, d.Class
	for _, up := range d.Users {
		w.shown[up.Live.UID] = shown{user: up.User, excused: true}
		err := Delete(context.Background(), w, safety.Step{Why: "destroy", User: up.User, Namespace: hubNS, Claim: up.ClaimName, UID: up.Live.UID})
		if up.User == "bob" && (err == nil || !strings.Contains(err.Error(), "not the claim the plan showed")) {
			t.Errorf("bob's new claim: %v", err)
		}
	}
	if w.claims[hubRef("claim-alice")] != nil || w.volOf(hubRef("claim-bob")) == nil || len(w.volOf(hubRef("claim-bob")).files) != 1 || w.failed {
		t.Fatalf("destroy:\n%s", strings.Join(w.log, "\n"))
	}
}

// A server that starts after the plan and runs across the apply keeps its
// home: the gate lists the pods right before the delete.
func TestHistory_serverStartsAfterThePlan(t *testing.T) {
	w := fixedWorld(t)
	w.homeClaim("alice", claims.RWO)
	cfg := safety.Config{Namespace: hubNS, NameTemplate: "claim-{username}", Scheme: kubespawner.SchemeSafe, AccessMode: claims.RWX,
		OnModeChange: safety.OnModeChangeRecreate, AllowDataLoss: true, Users: []string{"alice"}, Capacity: "1Gi", CapacityBytes: 1 << 30}
	p, ok := w.plan(cfg, nil)
	if !ok || p.res.Class != safety.ClassDestructive {
		t.Fatalf("plan: %v %s", ok, p.changes)
	}
	planned, _ := safety.DecodeChanges(p.changes)
	w.spawn("alice") // after OpenTofu's checks, before the delete
	up := p.res.Users[0]
	_, err := Home(context.Background(), writes{w, func(context.Context) error { return nil }, nil}, up, planned["alice"].UID, "", claims.Spec{})
	if err == nil || !strings.Contains(err.Error(), "jupyter-alice") {
		t.Fatalf("recreate under a running server: %v", err)
	}
	if v := w.volOf(hubRef("claim-alice")); v == nil || len(v.files) != 1 {
		t.Fatalf("alice's home changed")
	}
}
