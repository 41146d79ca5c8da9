package execute

import (
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
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/migration"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/safety"
)

// The no-data-loss property over histories: random sequences of operator
// actions (plan; a saved plan applied later; an apply killed at any
// cluster call; a replacement; a change of configuration, on_mode_change
// "migrate" by rebind or copy among them, and its revert; state rm;
// destroy; doing what an error says) and hub actions (a user spawns, and
// the hub decides the claim as its pre_spawn_hook does, KubeSpawner
// creating the claim its template names when missing; a user writes; a
// user stops; a pod left on an old home writes there), interleaved at
// every call the executor makes, with the controllers the migrations wait
// for (a PV binder that may be slow or down, the Job controller). The
// cluster may put every user in their own namespace, and the claim
// template may have no user field ("home").
//
// Each volume holds files (path: content and mtime). A user's write adds
// a file or rewrites one (sometimes with an older mtime, as tar x or cp -p
// do); what it rewrote is the user's to lose.
//
// The invariants:
//   - no apply deletes a claim its plan did not show (by UID: recreate,
//     delete-source, destroy, or a rebind's own), nor one a pod mounts,
//     nor a claim of another user than the one the plan showed it for;
//   - no apply of a plan that was not destructive deletes a volume that
//     holds data;
//   - a file's content is never dropped (a volume deleted, a copy written
//     over it) while no other volume holds it, unless an apply whose plan
//     showed that claim's deletion for its user with allow_data_loss
//     (recreate, destroy) removed it; deleting a copied home's old claim
//     (delete-source) excuses nothing: the plan said the copy holds it;
//   - no server mounts a volume that holds another user's files;
//   - at the end, after a settle phase (servers stopped, the binder and
//     the Job controller let act, plan and apply with the last
//     configuration until nothing changes, what an error says done), every
//     content a user wrote and did not rewrite is on the volume the hub
//     gives that user as home, or on a volume or claim the last plan (or
//     the last apply's errors) names. A retained volume with a rebind's
//     record counts only so: a later plan must report or resume it.
//
// Half the histories also have a shared claim, and their configurations
// switch to and from the shared layout (homes_history_test.go, which
// states the invariants added for it: the shared claim and its
// directories never go, a destroy in that layout deletes no claim, and no
// apply moves a listed user's home without on_layout_change = "keep").
// A saved plan is refused once the state changed since it was made, as
// OpenTofu refuses a stale plan; a killed apply that got past its last
// call records its state.
//
// The planner (safety.Plan, safety.Destroy), the selection (Select), the
// gate (Delete, Home) and the migrations (Runner.Rebind, Runner.Copy) are
// the provider's own, called as internal/provider's apply calls them
// (runHome, runMigration); OpenTofu is modelled by what it does with the
// plan: it plans again at apply and stops when the known values
// (change_class, changes) differ. The model cluster (world) is in
// helpers_test.go.

var (
	histories = flag.Int("execute.histories", 1500, "random histories TestHistories runs")
	firstSeed = flag.Int("execute.first", 1, "the seed of TestHistories' first history (to run a range of a long run)")
)

// genConfig is one generated configuration, in the history's layout (the
// namespaces and the template it mostly keeps).
func genConfig(r *rand.Rand, l layout) safety.Config {
	c := safety.Config{Namespace: hubNS, NameTemplate: l.template, UserNamespaceTemplate: l.nsTemplate, Scheme: kubespawner.SchemeSafe,
		AccessMode:    []string{claims.RWO, claims.RWX}[r.IntN(2)],
		OnModeChange:  []safety.OnModeChange{safety.OnModeChangeFail, safety.OnModeChangeKeepExisting, safety.OnModeChangeRecreate, safety.OnModeChangeMigrate, safety.OnModeChangeMigrate}[r.IntN(5)],
		AllowDataLoss: r.IntN(2) == 0, DeletionPolicy: []string{safety.DeletionRetain, safety.DeletionDelete}[r.IntN(2)]}
	c.CapacityBytes = int64(1+r.IntN(2)) << 30
	c.Capacity = fmt.Sprintf("%dGi", c.CapacityBytes>>30)
	for _, u := range []string{"alice", "bob", "carol"} {
		if r.IntN(3) > 0 {
			c.Users = append(c.Users, u)
		}
	}
	c.Migration = safety.Migration{Method: []migration.Method{migration.MethodAuto, migration.MethodRebind, migration.MethodCopy, migration.MethodCopy}[r.IntN(4)],
		SkipRunning: true, CopyImage: copyImage, TargetTemplate: l.target, DeleteSources: r.IntN(2) == 0}
	if r.IntN(6) == 0 {
		// A target template that gives a named server's copy its user's home.
		c.Migration.TargetTemplate = "claim-{username}"
	}
	if l.shared {
		genShared(r, &c, l.merge)
	}
	return c
}

// layout is where a history's homes live: the namespaces, the claim
// template, the copies' target template.
type layout struct {
	nsTemplate, template, target string
	shared                       bool // configurations switch to and from the shared layout
	// merge, when set, draws which shared layouts are merges into it
	// (merge_history_test.go), apart from the other draws.
	merge *mergeDraws
}

func genLayout(r *rand.Rand) layout {
	if r.IntN(2) == 0 {
		// Per-user namespaces; a template without a user field names every
		// user's home alike.
		return []layout{{userNSTmpl, "home", "home-new", false, nil}, {userNSTmpl, "home", "home-{username}", false, nil}, {userNSTmpl, "claim-{user_server}", "new-{user_server}", false, nil}}[r.IntN(3)]
	}
	return []layout{{"", "claim-{username}", "home-{username}", false, nil}, {"", "claim-{user_server}", "home-{user_server}", false, nil}}[r.IntN(2)]
}

// plan is what an operator's plan shows, as OpenTofu keeps it.
type plan struct {
	cfg     safety.Config
	prior   *safety.Prior
	res     safety.Result
	changes string
	seen    map[string]claims.Ref // the claims (by UID) when it was made
}

func (w *world) plan(cfg safety.Config, prior *safety.Prior) (plan, bool) {
	res := safety.Plan(cfg, prior, w.live(cfg, prior))
	if len(res.Servers) > 0 {
		w.serverPlans++
	}
	for _, f := range res.Errors {
		w.errs = append(w.errs, f.Summary+": "+f.Detail)
	}
	w.countPlan(res)
	p := plan{cfg: cfg, prior: prior, res: res, changes: safety.ChangesOf(res).Encode(), seen: w.claimUIDs()}
	if len(res.Errors) == 0 {
		w.checkPlanOverSplit(p)
	}
	return p, len(res.Errors) == 0
}

// apply applies a (possibly saved) plan: OpenTofu plans again and stops if
// the known values differ; then the provider's apply reads the cluster,
// selects what the plan showed, runs each home's change and the planned
// migrations. It returns the state the apply records (nil: none; the
// apply stopped before changing anything, or was killed).
func (w *world) apply(p plan, kill bool) *safety.Prior {
	again, ok := w.plan(p.cfg, p.prior)
	if !ok || again.changes != p.changes || again.res.Class != p.res.Class {
		w.logf("apply: OpenTofu stops (the plan made again differs)")
		return nil
	}
	planned, _ := safety.DecodeChanges(p.changes)
	w.shown, w.planClass = map[string]shown{}, p.res.Class
	for _, c := range planned {
		switch {
		case c.Action == safety.ActionRecreate && p.res.Class == safety.ClassDestructive && p.cfg.AllowDataLoss:
			w.shown[c.UID] = shown{user: ownerOfChange(p.res, c), excused: true}
		case c.Action == safety.ActionDeleteSource && p.res.Class == safety.ClassDestructive && p.cfg.AllowDataLoss,
			c.Action == safety.ActionMigrate && c.Method == string(migration.MethodRebind):
			w.shown[c.UID] = shown{user: ownerOfChange(p.res, c)}
		}
	}
	w.interleave, w.calls, w.killAt, w.killed = true, 0, 0, false
	if kill {
		w.killAt = 1 + w.r.IntN(30)
	}
	defer func() { w.interleave, w.killed = false, false }()
	if !w.calm {
		for range w.r.IntN(4) {
			// Between OpenTofu's plan and the provider's read: often a whole
			// short session (KubeSpawner creates a missing claim, the user
			// writes and stops), which leaves no pod for the gate to see.
			if w.r.IntN(2) == 0 {
				u := w.users[w.r.IntN(3)]
				if _, running := w.pods[u]; !running {
					w.spawn(u)
					w.stop(u)
				}
			} else {
				w.hubAction()
			}
		}
	}
	// The homes the hub gives as the apply begins, with what they hold:
	// after it, each must be where the hub gives that server's home
	// (checkMoves); a create while homes move out of the shared layout
	// moves a home with no switch of the hub.
	before, old, was := w.homesNow(), w.hub, w.hubLayout()
	w.applying = &p
	res := safety.Plan(p.cfg, p.prior, w.live(p.cfg, p.prior))
	if len(res.Errors) > 0 {
		w.logf("apply: stops on the fresh classification")
		return nil
	}
	w.fresh = res
	w.errs = nil
	sel := Select(res, planned)
	failed := map[string]bool{}
	for _, m := range sel.Refused {
		w.logf("apply: refused %s", m)
		failed[m.Key] = true
	}
	ctx := context.Background()
	for _, up := range sel.Homes {
		err := w.runHome(ctx, p.cfg, up, sel.Planned[up.Who()].UID)
		w.logf("apply: %s %s: %v", up.Action, up.Who(), err)
		w.count(string(up.Action), err)
		if err != nil {
			w.errs = append(w.errs, err.Error())
			failed[up.Who()] = true
		}
		if w.killed {
			w.killedMoves(p, before)
			return nil
		}
	}
	for k, up := range res.Keyed() {
		if up.Action != safety.ActionMigrate || !sel.Migrate[k] {
			continue
		}
		w.migrations++
		step, err := w.runMigration(ctx, p.cfg, *up, sel.Planned[k].UID)
		w.logf("apply: migrate %s by %s: step %s, %v", k, up.Method, step, err)
		w.count(fmt.Sprintf("%s to %s", up.Method, step), err)
		if p.cfg.OnModeChange != safety.OnModeChangeMigrate && up.Method != migration.MethodSplit && up.Method != migration.MethodMerge {
			w.events["migration resumed under another on_mode_change"]++
		}
		if err != nil {
			w.errs = append(w.errs, err.Error())
		}
		if w.killed {
			w.killedMoves(p, before)
			return nil
		}
	}
	// The hub switches to the applied configuration: what each home held
	// as the apply began, and holds now, must be in the home the hub gives
	// after (checkMoves).
	end, last := w.homesNow(), w.lastHomes()
	w.hub = hubConfig{mode: p.cfg.AccessMode, template: p.cfg.NameTemplate, nsTemplate: p.cfg.UserNamespaceTemplate, scheme: p.cfg.Scheme}
	if p.cfg.Shared != nil {
		sh := *p.cfg.Shared
		w.hub.shared = &sh
	}
	if fb := safety.Fallback(p.cfg); fb != nil {
		// Moving out of the shared layout or into it: the same hub.
		sh := *fb
		w.hub.split = &sh
	}
	if now := w.hubLayout(); now != was {
		w.logf("hub: %s → %s", was, now)
	}
	w.checkMoves(p, before, old)
	w.checkMoves(p, end, old)
	w.checkMoves(p, last, old)
	w.probeMounts()
	w.checkShared("the apply")
	w.checkSplits("the apply")
	cfg := p.cfg
	cfg.Users = slices.DeleteFunc(slices.Clone(cfg.Users), func(u string) bool { return failed[u] })
	return priorOf(cfg)
}

// count counts an apply's outcome.
func (w *world) count(what string, err error) {
	switch {
	case err == nil:
		w.events[what]++
	case errors.Is(err, errKilled):
		w.events["killed"]++
	case strings.Contains(err.Error(), "created by someone else"):
		w.events["claim created in the rebind's window"]++
	case strings.Contains(err.Error(), "timed out"):
		w.events["binder too slow"]++
	case strings.Contains(err.Error(), "verifying it again"):
		w.events["verification refused a delete"]++
	default:
		w.events[what+" failed"]++
	}
}

// ownerOfChange is the user a plan shows a change of a claim for.
func ownerOfChange(res safety.Result, c safety.Change) string {
	for up := range res.All() {
		if up.Namespace == c.Namespace && up.ClaimName == c.Claim && up.Live != nil && up.Live.UID == c.UID {
			return up.User
		}
	}
	return ""
}

// runHome is the provider's runHomes for one home: execute.Home with the
// provider's create (which adopts a claim of that name unless another
// user's or server's) and resize.
func (w *world) runHome(ctx context.Context, cfg safety.Config, up safety.UserPlan, uid string) error {
	create := func(context.Context) error {
		if err := w.between(); err != nil {
			return err
		}
		ref := up.Ref()
		if m := w.claims[ref]; m != nil {
			if m.c.Username != up.User || m.c.Servername != up.Server {
				return fmt.Errorf("claim %s exists already and is not this home", ref)
			}
			return nil
		}
		m := w.newClaim(up.User, up.Server, ref, cfg.AccessMode, cfg.CapacityBytes>>30)
		w.logf("apply: created %s (%s)", ref, m.c.UID)
		return nil
	}
	resize := func(context.Context) error {
		if err := w.between(); err != nil {
			return err
		}
		if m := w.claims[up.Ref()]; m != nil && m.c.UID == uid {
			m.c.Requested, m.c.RequestedBytes = cfg.Capacity, cfg.CapacityBytes
		}
		return nil
	}
	_, err := Home(ctx, writes{w, create, resize}, up, uid, cfg.Migration.CopyImage, claims.Spec{})
	return err
}

// destroy plans and applies a destroy (or, when replacing, a destroy the
// plan never classified: it deletes nothing).
func (w *world) destroy(cfg safety.Config, prior safety.Prior, replacing bool) {
	if cfg.Shared != nil {
		defer w.checkSharedDestroy(w.claimUIDs())
	}
	if safety.Fallback(cfg) != nil {
		defer w.checkSplits("the destroy")
		defer w.checkShared("the destroy")
	}
	d := safety.Destroy(cfg, prior, w.live(cfg, &prior))
	if len(d.Errors) > 0 || replacing {
		return
	}
	w.shown, w.planClass = map[string]shown{}, d.Class
	var del []safety.UserPlan
	for _, up := range d.Users {
		if up.Action == safety.ActionRecreate {
			w.shown[up.Live.UID] = shown{user: up.User, excused: true}
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

// priorOf is the state an apply of cfg records, as the provider's prior()
// reads it: the shared layout manages no per-user claim.
func priorOf(cfg safety.Config) *safety.Prior {
	// The model's hub takes the settings of every apply that returns a
	// state (Prior.HubSwitched).
	p := &safety.Prior{Config: cfg, Managed: map[string]string{}, HubSwitched: safety.Fallback(cfg) != nil}
	if cfg.Shared != nil {
		return p
	}
	for _, u := range cfg.Users {
		if name, err := kubespawner.Expand(cfg.NameTemplate, u, "", cfg.Scheme); err == nil {
			p.Managed[u] = name
		}
	}
	return p
}

func describe(cfg safety.Config) string {
	s := fmt.Sprintf("%s %s allow_data_loss=%v users=%v ns=%q template=%q", cfg.AccessMode, cfg.OnModeChange, cfg.AllowDataLoss, cfg.Users, cfg.UserNamespaceTemplate, cfg.NameTemplate)
	if cfg.OnModeChange == safety.OnModeChangeMigrate {
		s += fmt.Sprintf(" method=%s target=%q delete_sources=%v", cfg.Migration.Method, cfg.Migration.TargetTemplate, cfg.Migration.DeleteSources)
	}
	if cfg.Shared != nil {
		s += fmt.Sprintf(" shared=%s:%q scheme=%s", cfg.Shared.Claim, cfg.Shared.SubPathTemplate, cfg.Scheme)
	}
	if cfg.SplitFrom != nil {
		s += fmt.Sprintf(" split_from=%s:%q scheme=%s batch_size=%d", cfg.SplitFrom.Claim, cfg.SplitFrom.SubPathTemplate, cfg.Scheme, cfg.Migration.BatchSize)
	}
	if cfg.MergeInto != nil {
		s += fmt.Sprintf(" merge_into=%s:%q scheme=%s batch_size=%d", cfg.MergeInto.Claim, cfg.MergeInto.SubPathTemplate, cfg.Scheme, cfg.Migration.BatchSize)
	}
	if cfg.OnLayoutChange != "" {
		s += " on_layout_change=" + string(cfg.OnLayoutChange)
	}
	return s
}

func runHistory(t *testing.T, seed uint64) *world {
	r := rand.New(rand.NewPCG(seed, 7))
	w := newWorld(t, r)
	w.binderRate = []int{0, 1, 3, 8}[r.IntN(4)]
	l := genLayout(r)
	w.hub.template, w.hub.nsTemplate = l.template, l.nsTemplate
	if seed%2 == 0 {
		// Half the histories have a shared claim, and configurations switch
		// to and from the shared layout; the hub may start in it.
		l.shared = true
		w.startShared()
		// A third of them on a volume that cannot be split, where homes
		// move by a copy (drawn apart: the other draws stay the same).
		w.sharedUnsplittable = rand.New(rand.NewPCG(seed, 13)).IntN(3) == 0
		// Half of them move homes into the shared layout too (merges).
		if rand.New(rand.NewPCG(seed, 29)).IntN(2) == 0 {
			l.merge = &mergeDraws{r: rand.New(rand.NewPCG(seed, 31))}
		}
	}
	for range r.IntN(4) {
		w.hubAction()
	}
	var state *safety.Prior // nil: no resource
	// serial counts the state's changes: OpenTofu refuses a saved plan
	// made before the last one ("saved plan is stale").
	serial, savedAt := 0, 0
	setState := func(s *safety.Prior) { state = s; serial++ }
	var saved *plan
	last := genConfig(r, l)
	for range 14 {
		w.putBack()
		w.jobsBetweenApplies()
		switch op := r.IntN(16); {
		case op < 4: // plan and apply
			cfg := genConfig(r, l)
			last = cfg
			p, ok := w.plan(cfg, state)
			w.logf("operator: plan %s: %s %s", describe(cfg), p.res.Class, p.changes)
			if ok {
				if s := w.apply(p, false); s != nil {
					setState(s)
				}
			}
		case op < 6: // plan -out, to be applied later
			cfg := genConfig(r, l)
			if p, ok := w.plan(cfg, state); ok {
				saved, savedAt = &p, serial
				w.logf("operator: plan -out %s: %s %s", describe(cfg), p.res.Class, p.changes)
			}
		case op < 7 && saved != nil && savedAt != serial:
			w.logf("operator: apply the saved plan; OpenTofu refuses it, the state changed since")
			saved = nil
		case op < 7 && saved != nil: // apply the saved plan
			w.logf("operator: apply the saved plan")
			if s := w.apply(*saved, false); s != nil {
				setState(s)
				last = saved.cfg
			}
			saved = nil
		case op < 9: // an apply killed part-way
			cfg := genConfig(r, l)
			if p, ok := w.plan(cfg, state); ok {
				w.logf("operator: apply (killed) %s: %s %s", describe(cfg), p.res.Class, p.changes)
				last = cfg
				if s := w.apply(p, true); s != nil {
					setState(s) // the kill came after the apply's last call
				}
			}
		case op < 10 && state != nil: // revert on_mode_change (and perhaps the mode)
			cfg := state.Config
			cfg.OnModeChange = []safety.OnModeChange{safety.OnModeChangeFail, safety.OnModeChangeKeepExisting}[r.IntN(2)]
			if r.IntN(2) == 0 {
				cfg.AccessMode = claims.RWO
			}
			last = cfg
			p, ok := w.plan(cfg, state)
			w.logf("operator: revert, plan %s: %s %s", describe(cfg), p.res.Class, p.changes)
			if ok {
				if s := w.apply(p, r.IntN(3) == 0); s != nil {
					setState(s)
				}
			}
		case op < 11 && state != nil: // state rm
			w.logf("operator: state rm")
			setState(nil)
		case op < 12 && state != nil: // -replace: destroy (never classified) then create
			w.logf("operator: apply -replace")
			w.destroy(state.Config, *state, true)
			cfg := genConfig(r, l)
			last = cfg
			setState(nil)
			if p, ok := w.plan(cfg, nil); ok {
				w.logf("operator: plan %s: %s %s", describe(cfg), p.res.Class, p.changes)
				setState(w.apply(p, r.IntN(3) == 0))
			}
		case op < 13 && state != nil: // destroy
			w.logf("operator: destroy (deletion_policy %s, allow_data_loss %v)", state.Config.DeletionPolicy, state.Config.AllowDataLoss)
			w.destroy(state.Config, *state, false)
			setState(nil)
		case op < 14: // the operator does what the last error says
			w.followAdvice()
		default:
			for range 1 + r.IntN(3) {
				w.hubAction()
			}
		}
		if m := l.merge; m != nil && m.last != nil && !w.failed && m.r.IntN(3) == 0 {
			// An operator applies a merge until it is done (drawn apart).
			cfg := *m.last
			cfg.Users = slices.Clone(cfg.Users)
			last = cfg
			kill := m.r.IntN(3) == 0
			if p, ok := w.plan(cfg, state); ok {
				w.logf("operator: apply the merge again (killed: %v) %s: %s %s", kill, describe(cfg), p.res.Class, p.changes)
				if s := w.apply(p, kill); s != nil {
					setState(s)
				}
			}
		}
		if w.failed {
			return w
		}
	}
	w.settle(last, state)
	w.checkShared("the settle phase")
	w.checkSplits("the settle phase")
	return w
}

func TestHistories(t *testing.T) {
	n := *histories
	if testing.Short() {
		n = 200
	}
	withServers, withMigrations := 0, 0
	events := map[string]int{}
	for i := range n {
		seed := uint64(i + *firstSeed)
		w := runHistory(t, seed)
		for k, v := range w.events {
			events[k] += v
		}
		if w.failed {
			t.Fatalf("history %d loses data:\n  %s\nrerun: go test ./internal/execute -run TestHistories -execute.first=%d -execute.histories=1", seed, strings.Join(w.log, "\n  "), seed)
		}
		if w.serverPlans > 0 {
			withServers++
		}
		if w.migrations > 0 {
			withMigrations++
		}
	}
	if withServers < n/10 {
		t.Errorf("only %d of %d histories planned a named server's own claim", withServers, n)
	}
	if withMigrations < n/3 {
		t.Errorf("only %d of %d histories ran a migration", withMigrations, n)
	}
	t.Logf("%d histories: %v", n, events)
	if n < 1000 {
		return
	}
	for _, e := range []string{"rebind to done", "copy to switched", "delete-source", "verification refused a delete", "claim created in the rebind's window",
		"binder too slow", "rewrite with an older mtime", "stray write on an old home", "migration resumed under another on_mode_change", "spawn refused",
		"killed", "recreate", "operator did what an error says",
		"shared: plan refused a layout move", "shared: keep left an old home, reported", "shared: plan refused, a migration in flight",
		"shared: init container made a directory", "shared: destroy", "shared: layout switched with the homes in place",
		"split to done", "split: the Job made a directory", "split: killed after prepare-directory", "split: killed after create-split-claim",
		"split: killed after create-volume", "split: wait-split-bound", "split: layout switched with the homes in place", "split: spawn refused, the move under way",
		"split: the hub mounts a moved home", "operator undid a move as an error says",
		"directory-copy to done", "dcopy: spawn refused, being copied", "dcopy: the hub mounts a copied home",
		"merge to done", "merge: spawn refused, being merged", "merge: the hub mounts a merged home's directory", "merge: settled",
		"merge: the directory Job refused a directory that holds files", "merge: operator moved a directory's files away as an error says",
		"merge: killed after record-merge", "merge: killed after start-merge", "merge: a copy Job ended between applies", "merge: restart-merge",
		"operator undid a merge as an error says"} {
		if events[e] == 0 {
			t.Errorf("no history exercised %q", e)
		}
	}
}
