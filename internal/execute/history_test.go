package execute

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/claims"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/kubespawner"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/safety"
)

// The no-data-loss property over histories: random sequences of operator
// actions (plan; a saved plan applied later; an apply killed at any
// cluster call; a replacement; a change of configuration; destroy) and hub
// actions (a user spawns, and KubeSpawner creates the claim its template
// names when missing; a user writes; a user stops), interleaved at every
// call the executor makes. Each volume's content is the writes made to it.
//
// The invariant: every write stays readable on a volume that exists, unless
// an apply whose plan showed that claim's deletion (by UID, with
// allow_data_loss) removed it; and no apply deletes a claim its plan did
// not show, nor one a pod mounts.
//
// The planner (safety.Plan, safety.Destroy), the selection (Select), the
// gate (Delete, Home) are the provider's own; OpenTofu is modelled by
// what it does with the plan: it plans again at apply and stops when the
// known values (change_class, changes) differ.

var histories = flag.Int("execute.histories", 2000, "random histories TestHistories runs")

const hubNS = "hub"

type volume struct {
	id     int
	writes []string
}

type mclaim struct {
	c   claims.Claim
	vol *volume
}

// pod is a server: who is the user, or "user/server" for a named server.
type pod struct{ who, claim string }

// world is the cluster and the hub, as the test models them.
type world struct {
	t       *testing.T
	r       *rand.Rand
	claims  map[string]*mclaim // by name (one namespace)
	pods    map[string]pod     // by who
	nextUID int
	vols    []*volume // every volume ever made
	hubMode string    // the access mode KubeSpawner uses: the last applied configuration's
	// hubTemplate is the pvc_name_template KubeSpawner uses: the last
	// applied configuration's ("" for claim-{username}).
	hubTemplate string
	// During an apply: the UIDs its plan showed deleted, and whether hub
	// actions and a kill may interleave with its calls.
	shownDeletes map[string]bool
	interleave   bool
	killAt       int // kill the apply at this call (0: never)
	calls        int
	log          []string
	failed       bool
	// serverPlans counts plans that planned a named server's own claim.
	serverPlans int
}

var errKilled = errors.New("killed")

func (w *world) logf(format string, a ...any) { w.log = append(w.log, fmt.Sprintf(format, a...)) }

func (w *world) violation(format string, a ...any) {
	w.failed = true
	w.logf("VIOLATION: "+format, a...)
}

// between runs before each cluster call of an apply: maybe a hub action,
// maybe the kill. Before a delete (hub false) no hub action runs: the gate
// lists pods right before the delete, and a server that starts in the
// milliseconds between the two is a window the gate cannot close (DESIGN.md).
func (w *world) between(hub ...bool) error {
	if !w.interleave {
		return nil
	}
	w.calls++
	if w.killAt > 0 && w.calls >= w.killAt {
		return errKilled
	}
	if len(hub) == 0 && w.r.IntN(4) == 0 {
		w.hubAction()
	}
	return nil
}

func (w *world) uid() string { w.nextUID++; return fmt.Sprintf("u%d", w.nextUID) }

func (w *world) newClaim(user, mode string, size int64) *mclaim {
	return w.newServerClaim(user, "", "claim-"+user, mode, size)
}

// newServerClaim is the claim KubeSpawner makes for a server (a named
// server's when server is set).
func (w *world) newServerClaim(user, server, name, mode string, size int64) *mclaim {
	v := &volume{id: len(w.vols)}
	w.vols = append(w.vols, v)
	m := &mclaim{c: claims.Claim{Name: name, Namespace: hubNS, UID: w.uid(), Username: user, Servername: server, AccessModes: []string{mode},
		Requested: fmt.Sprintf("%dGi", size), RequestedBytes: size << 30, Phase: "Bound", VolumeName: fmt.Sprintf("pv-%d", v.id)}, vol: v}
	w.claims[name] = m
	return m
}

// hubAction is one random thing the hub does.
func (w *world) hubAction() {
	user := []string{"alice", "bob", "carol", "alice/gpu"}[w.r.IntN(4)]
	switch w.r.IntN(4) {
	case 3: // a short session: spawn, write, stop
		if _, running := w.pods[user]; !running {
			w.spawn(user)
			w.stop(user)
		}
	case 0: // spawn: KubeSpawner makes the claim when missing, the server mounts it and writes
		w.spawn(user)
	case 1:
		w.write(user)
	case 2:
		w.stop(user)
	}
}

// spawn: KubeSpawner makes the claim when missing, the server mounts it
// and writes. who is a user, or "user/server" for a named server, whose
// claim is its own where the hub's template names the server.
func (w *world) spawn(who string) {
	if _, running := w.pods[who]; running {
		return
	}
	user, server, _ := strings.Cut(who, "/")
	template := cmp.Or(w.hubTemplate, "claim-{username}")
	name, err := kubespawner.Expand(template, user, server, kubespawner.SchemeSafe)
	if err != nil {
		w.t.Fatal(err)
	}
	m := w.claims[name]
	if m == nil {
		m = w.newServerClaim(user, server, name, w.hubMode, 1)
		w.logf("hub: %s spawns, KubeSpawner creates %s (%s, %s)", who, name, m.c.UID, w.hubMode)
	}
	if m.c.Deleting {
		return // the spawn fails on a terminating claim
	}
	w.pods[who] = pod{who, name}
	w.write(who)
}

// stop: a claim deleted while mounted goes now (pvc-protection).
func (w *world) stop(user string) {
	p, running := w.pods[user]
	if !running {
		return
	}
	delete(w.pods, user)
	if m := w.claims[p.claim]; m != nil && m.c.Deleting {
		w.remove(m, "after its server stopped")
	}
}

func (w *world) write(user string) {
	p, ok := w.pods[user]
	if !ok {
		return
	}
	m := w.claims[p.claim]
	if m == nil || m.c.Deleting {
		return
	}
	m.vol.writes = append(m.vol.writes, fmt.Sprintf("%s#%d", user, len(m.vol.writes)))
}

// remove deletes a claim and its volume (reclaim policy Delete).
func (w *world) remove(m *mclaim, why string) {
	delete(w.claims, m.c.Name)
	w.logf("cluster: %s (%s) deleted %s, %d write(s) on it", m.c.Name, m.c.UID, why, len(m.vol.writes))
	if len(m.vol.writes) > 0 && !w.shownDeletes[m.c.UID] {
		w.violation("%s (%s) was deleted with data, and no plan showed its deletion", m.c.Name, m.c.UID)
	}
	m.vol.writes = nil
	m.vol.id = -1
}

// live is what a plan reads.
func (w *world) live() safety.Live {
	var l safety.Live
	names := make([]string, 0, len(w.claims))
	for n := range w.claims {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		c := w.claims[n].c
		c.AccessModes = slices.Clone(c.AccessModes)
		l.Claims = append(l.Claims, c)
	}
	l.Mounted = map[claims.Ref]bool{}
	for _, p := range w.pods {
		l.Mounted[claims.Ref{Namespace: hubNS, Name: p.claim}] = true
	}
	return l
}

// The Cluster the executor works on.

func (w *world) Claim(_ context.Context, _, name string) (*claims.Claim, error) {
	if err := w.between(); err != nil {
		return nil, err
	}
	m := w.claims[name]
	if m == nil {
		return nil, nil
	}
	c := m.c
	return &c, nil
}

func (w *world) MountedBy(_ context.Context, _, claim, _ string) ([]string, error) {
	if err := w.between(); err != nil {
		return nil, err
	}
	var out []string
	for _, p := range w.pods {
		if p.claim == claim {
			out = append(out, "jupyter-"+strings.ReplaceAll(p.who, "/", "--"))
		}
	}
	return out, nil
}

func (w *world) RemoveClaim(_ context.Context, _, name, uid string) error {
	if err := w.between(false); err != nil {
		return err
	}
	m := w.claims[name]
	if m == nil {
		return nil
	}
	if m.c.UID != uid {
		return fmt.Errorf("precondition failed: uid %s, now %s", uid, m.c.UID)
	}
	if !w.shownDeletes[uid] {
		w.violation("the apply deleted %s (%s), which its plan did not show deleted", name, uid)
	}
	for _, p := range w.pods {
		if p.claim == name {
			w.violation("the apply deleted %s while a server mounts it", name)
			m.c.Deleting = true // pvc-protection: it goes when the server stops
			return nil
		}
	}
	w.remove(m, "by the apply")
	return nil
}

func (w *world) VerifyCopy(context.Context, string, string, string, string) (bool, string, error) {
	return false, "not modelled", nil
}

// cfg is one generated configuration.
func genConfig(r *rand.Rand) safety.Config {
	c := safety.Config{Namespace: hubNS, NameTemplate: []string{"claim-{username}", "claim-{user_server}"}[r.IntN(2)], Scheme: kubespawner.SchemeSafe,
		AccessMode:    []string{safety.RWO, safety.RWX}[r.IntN(2)],
		OnModeChange:  []safety.OnModeChange{safety.OnModeChangeFail, safety.OnModeChangeKeepExisting, safety.OnModeChangeRecreate}[r.IntN(3)],
		AllowDataLoss: r.IntN(2) == 0, DeletionPolicy: []string{safety.DeletionRetain, safety.DeletionDelete}[r.IntN(2)]}
	c.CapacityBytes = int64(1+r.IntN(2)) << 30
	c.Capacity = fmt.Sprintf("%dGi", c.CapacityBytes>>30)
	for _, u := range []string{"alice", "bob", "carol"} {
		if r.IntN(3) > 0 {
			c.Users = append(c.Users, u)
		}
	}
	return c
}

// plan is what an operator's plan shows, as OpenTofu keeps it.
type plan struct {
	cfg     safety.Config
	prior   *safety.Prior
	res     safety.Result
	changes string
}

func (w *world) plan(cfg safety.Config, prior *safety.Prior) (plan, bool) {
	res := safety.Plan(cfg, prior, w.live())
	if len(res.Servers) > 0 {
		w.serverPlans++
	}
	return plan{cfg: cfg, prior: prior, res: res, changes: safety.ChangesOf(res).Encode()}, len(res.Errors) == 0
}

// apply applies a (possibly saved) plan: OpenTofu plans again and stops if
// the known values differ; then the provider's apply reads the cluster,
// selects what the plan showed, and runs each user's change.
func (w *world) apply(p plan, kill bool) bool {
	again, ok := w.plan(p.cfg, p.prior)
	if !ok || again.changes != p.changes || again.res.Class != p.res.Class {
		w.logf("apply: OpenTofu stops (the plan made again differs)")
		return false
	}
	planned, _ := safety.DecodeChanges(p.changes)
	w.shownDeletes = map[string]bool{}
	if p.res.Class == safety.ClassDestructive && p.cfg.AllowDataLoss {
		for _, c := range planned {
			if c.Action == safety.ActionRecreate || c.Action == safety.ActionDeleteSource {
				w.shownDeletes[c.UID] = true
			}
		}
	}
	w.interleave, w.calls, w.killAt = true, 0, 0
	if kill {
		w.killAt = 1 + w.r.IntN(8)
	}
	defer func() { w.interleave = false }()
	for range w.r.IntN(4) {
		// Between OpenTofu's plan and the provider's read: often a whole
		// short session (KubeSpawner creates a missing claim, the user
		// writes and stops), which leaves no pod for the gate to see.
		if w.r.IntN(2) == 0 {
			u := []string{"alice", "bob", "carol"}[w.r.IntN(3)]
			if _, running := w.pods[u]; !running {
				w.spawn(u)
				w.stop(u)
			}
		} else {
			w.hubAction()
		}
	}
	res := safety.Plan(p.cfg, p.prior, w.live())
	if len(res.Errors) > 0 {
		w.logf("apply: stops on the fresh classification")
		return false
	}
	sel := Select(res, planned, true)
	for _, m := range sel.Refused {
		w.logf("apply: refused %s", m)
	}
	ctx := context.Background()
	for _, up := range sel.Homes {
		_, err := Home(ctx, writes{w, func(context.Context) error {
			if err := w.between(); err != nil {
				return err
			}
			if w.claims[up.ClaimName] == nil {
				w.newClaim(up.User, p.cfg.AccessMode, p.cfg.CapacityBytes>>30)
			}
			return nil
		}, func(context.Context) error {
			if err := w.between(); err != nil {
				return err
			}
			if m := w.claims[up.ClaimName]; m != nil && m.c.UID == planned[up.User].UID {
				m.c.Requested, m.c.RequestedBytes = p.cfg.Capacity, p.cfg.CapacityBytes
			}
			return nil
		}}, up, planned[up.User].UID, "", ClaimSpec{})
		w.logf("apply: %s %s: %v", up.Action, up.User, err)
		if errors.Is(err, errKilled) {
			return false
		}
	}
	w.hubMode, w.hubTemplate = p.cfg.AccessMode, p.cfg.NameTemplate
	return len(sel.Refused) == 0
}

// destroy plans and applies a destroy (or, when replacing, a destroy the
// plan never classified: it deletes nothing).
func (w *world) destroy(cfg safety.Config, prior safety.Prior, replacing bool) {
	d := safety.Destroy(cfg, prior, w.live())
	if len(d.Errors) > 0 || replacing {
		return
	}
	w.shownDeletes = map[string]bool{}
	var del []safety.UserPlan
	for _, up := range d.Users {
		if up.Action == safety.ActionRecreate {
			w.shownDeletes[up.Live.UID] = true
			del = append(del, up)
		}
	}
	if w.r.IntN(2) == 0 {
		w.hubAction() // between the destroy plan and its apply
	}
	w.interleave, w.calls, w.killAt = true, 0, 0
	defer func() { w.interleave = false }()
	for _, up := range del {
		err := Delete(context.Background(), w, safety.Step{Why: "destroy", User: up.User, Namespace: up.Namespace, Claim: up.ClaimName, UID: up.Live.UID})
		w.logf("destroy: %s: %v", up.User, err)
	}
}

func priorOf(cfg safety.Config) *safety.Prior {
	p := &safety.Prior{Config: cfg, Managed: map[string]string{}}
	for _, u := range cfg.Users {
		p.Managed[u] = "claim-" + u
	}
	return p
}

func runHistory(t *testing.T, seed uint64) *world {
	r := rand.New(rand.NewPCG(seed, 7))
	w := &world{t: t, r: r, claims: map[string]*mclaim{}, pods: map[string]pod{}, hubMode: safety.RWO}
	for range r.IntN(3) {
		w.hubAction()
	}
	var state *safety.Prior // nil: no resource
	var saved *plan
	for range 12 {
		switch op := r.IntN(10); {
		case op < 3: // plan and apply
			cfg := genConfig(r)
			p, ok := w.plan(cfg, state)
			w.logf("operator: plan %s %s allow_data_loss=%v users=%v: %s %s", cfg.AccessMode, cfg.OnModeChange, cfg.AllowDataLoss, cfg.Users, p.res.Class, p.changes)
			if ok && w.apply(p, false) {
				state = priorOf(cfg)
			}
		case op < 5: // plan -out, to be applied later
			cfg := genConfig(r)
			if p, ok := w.plan(cfg, state); ok {
				saved = &p
				w.logf("operator: plan -out %s %s allow_data_loss=%v users=%v: %s %s", cfg.AccessMode, cfg.OnModeChange, cfg.AllowDataLoss, cfg.Users, p.res.Class, p.changes)
			}
		case op < 6 && saved != nil: // apply the saved plan
			w.logf("operator: apply the saved plan")
			if w.apply(*saved, false) {
				state = priorOf(saved.cfg)
			}
			saved = nil
		case op < 7 && state != nil: // an apply killed part-way
			cfg := genConfig(r)
			if p, ok := w.plan(cfg, state); ok {
				w.logf("operator: apply (killed) %s %s: %s %s", cfg.AccessMode, cfg.OnModeChange, p.res.Class, p.changes)
				w.apply(p, true)
			}
		case op < 8 && state != nil: // -replace: destroy (never classified) then create
			w.logf("operator: apply -replace")
			w.destroy(state.Config, *state, true)
			cfg := genConfig(r)
			if p, ok := w.plan(cfg, nil); ok && w.apply(p, false) {
				state = priorOf(cfg)
			} else {
				state = nil
			}
		case op < 9 && state != nil: // destroy
			w.logf("operator: destroy (deletion_policy %s, allow_data_loss %v)", state.Config.DeletionPolicy, state.Config.AllowDataLoss)
			w.destroy(state.Config, *state, false)
			state = nil
		default:
			for range 1 + r.IntN(3) {
				w.hubAction()
			}
		}
		if w.failed {
			break
		}
	}
	return w
}

func TestHistories(t *testing.T) {
	n := *histories
	if testing.Short() {
		n = 200
	}
	withServers := 0
	for i := range n {
		seed := uint64(i) + 1
		w := runHistory(t, seed)
		if w.failed {
			t.Fatalf("history %d loses data:\n  %s\nrerun: go test ./internal/execute -run TestHistories -execute.histories=%d", seed, strings.Join(w.log, "\n  "), seed)
		}
		if w.serverPlans > 0 {
			withServers++
		}
	}
	if withServers < n/10 {
		t.Errorf("only %d of %d histories planned a named server's own claim", withServers, n)
	}
}

// The six sequences of issue-style reports that motivated the executor's
// checks, as fixed histories at the core.
func TestHistory_savedPlanThenSpawn(t *testing.T) {
	w := &world{t: t, r: rand.New(rand.NewPCG(1, 1)), claims: map[string]*mclaim{}, pods: map[string]pod{}, hubMode: safety.RWO}
	cfg := safety.Config{Namespace: hubNS, NameTemplate: "claim-{username}", Scheme: kubespawner.SchemeSafe, AccessMode: safety.RWX,
		OnModeChange: safety.OnModeChangeRecreate, AllowDataLoss: true, Users: []string{"alice", "bob"}, Capacity: "1Gi", CapacityBytes: 1 << 30}
	w.newClaim("alice", safety.RWO, 1) // alice: recreated, as the plan shows
	p, ok := w.plan(cfg, nil)
	if !ok || !strings.Contains(p.changes, `"bob":{"action":"create"`) {
		t.Fatalf("plan: %v %s", ok, p.changes)
	}
	// bob spawns before the saved plan is applied: KubeSpawner makes his
	// claim in the old mode and he writes to it.
	w.pods["bob"] = pod{"bob", "claim-bob"}
	w.newClaim("bob", safety.RWO, 1)
	w.write("bob")
	bob := w.claims["claim-bob"].c.UID
	// OpenTofu's plan at apply differs: it stops.
	if w.apply(p, false) {
		t.Fatalf("the saved plan was applied although bob's claim appeared:\n%s", strings.Join(w.log, "\n"))
	}
	// And had it not stopped (the claim appeared after OpenTofu's check),
	// the executor does only what the plan showed.
	planned, _ := safety.DecodeChanges(p.changes)
	delete(w.pods, "bob") // even with his server stopped
	res := safety.Plan(cfg, nil, w.live())
	sel := Select(res, planned, true)
	for _, up := range sel.Homes {
		if up.User == "bob" {
			t.Fatalf("bob's new claim is changed: %s", up.Action)
		}
	}
	if len(sel.Refused) != 1 || sel.Refused[0].Key != "bob" {
		t.Fatalf("refused %v", sel.Refused)
	}
	if m := w.claims["claim-bob"]; m == nil || m.c.UID != bob || len(m.vol.writes) != 1 {
		t.Fatalf("bob's home changed")
	}
}

func fixedWorld(t *testing.T) *world {
	return &world{t: t, r: rand.New(rand.NewPCG(1, 1)), claims: map[string]*mclaim{}, pods: map[string]pod{}, hubMode: safety.RWO}
}

// A replacement with deletion_policy = "delete": its destroy was never
// planned as one, so it deletes nothing; a destroy deletes what its plan
// listed, and not a claim created again since.
func TestHistory_replaceThenDestroy(t *testing.T) {
	w := fixedWorld(t)
	cfg := safety.Config{Namespace: hubNS, NameTemplate: "claim-{username}", Scheme: kubespawner.SchemeSafe, AccessMode: safety.RWO,
		OnModeChange: safety.OnModeChangeFail, AllowDataLoss: true, DeletionPolicy: safety.DeletionDelete, Users: []string{"alice", "bob"}, Capacity: "1Gi", CapacityBytes: 1 << 30}
	p, _ := w.plan(cfg, nil)
	if !w.apply(p, false) {
		t.Fatalf("apply: %s", strings.Join(w.log, "\n"))
	}
	w.spawn("alice")
	w.stop("alice")
	w.destroy(cfg, *priorOf(cfg), true) // -replace
	if m := w.claims["claim-alice"]; m == nil || len(m.vol.writes) != 1 {
		t.Fatalf("the replacement deleted alice's home:\n%s", strings.Join(w.log, "\n"))
	}
	// The destroy plan lists alice's and bob's claims; before it is applied,
	// bob's claim is deleted and KubeSpawner creates it again, and bob writes.
	d := safety.Destroy(cfg, *priorOf(cfg), w.live())
	w.remove(w.claims["claim-bob"], "by someone else")
	w.spawn("bob")
	w.stop("bob")
	w.shownDeletes = map[string]bool{}
	for _, up := range d.Users {
		w.shownDeletes[up.Live.UID] = true
		err := Delete(context.Background(), w, safety.Step{Why: "destroy", User: up.User, Namespace: hubNS, Claim: up.ClaimName, UID: up.Live.UID})
		if up.User == "bob" && (err == nil || !strings.Contains(err.Error(), "not the claim the plan showed")) {
			t.Errorf("bob's new claim: %v", err)
		}
	}
	if w.claims["claim-alice"] != nil || w.claims["claim-bob"] == nil || len(w.claims["claim-bob"].vol.writes) != 1 || w.failed {
		t.Fatalf("destroy:\n%s", strings.Join(w.log, "\n"))
	}
}

// A server that starts after the plan and runs across the apply keeps its
// home: the gate lists the pods right before the delete.
func TestHistory_serverStartsAfterThePlan(t *testing.T) {
	w := fixedWorld(t)
	w.newClaim("alice", safety.RWO, 1)
	cfg := safety.Config{Namespace: hubNS, NameTemplate: "claim-{username}", Scheme: kubespawner.SchemeSafe, AccessMode: safety.RWX,
		OnModeChange: safety.OnModeChangeRecreate, AllowDataLoss: true, Users: []string{"alice"}, Capacity: "1Gi", CapacityBytes: 1 << 30}
	p, ok := w.plan(cfg, nil)
	if !ok || p.res.Class != safety.ClassDestructive {
		t.Fatalf("plan: %v %s", ok, p.changes)
	}
	planned, _ := safety.DecodeChanges(p.changes)
	w.spawn("alice") // after OpenTofu's checks, before the delete
	up := p.res.Users[0]
	_, err := Home(context.Background(), writes{w, func(context.Context) error { return nil }, nil}, up, planned["alice"].UID, "", ClaimSpec{})
	if err == nil || !strings.Contains(err.Error(), "jupyter-alice") {
		t.Fatalf("recreate under a running server: %v", err)
	}
	if m := w.claims["claim-alice"]; m == nil || len(m.vol.writes) != 1 {
		t.Fatalf("alice's home changed")
	}
}
