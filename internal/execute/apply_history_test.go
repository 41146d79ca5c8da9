package execute

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"maps"
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
// (change_class, changes) differ.

var (
	histories = flag.Int("execute.histories", 1500, "random histories TestHistories runs")
	firstSeed = flag.Int("execute.first", 1, "the seed of TestHistories' first history (to run a range of a long run)")
)

const (
	hubNS      = "hub"
	userNSTmpl = "jupyter-{username}"
	csiDriver  = "driver.longhorn.io" // rebinds to ReadWriteMany (migration.Choose)
	copyImage  = "rsync"
)

type file struct {
	content string
	mtime   int
}

// volume is a PersistentVolume and the files on it.
type volume struct {
	name    string
	files   map[string]file
	policy  string // reclaim policy: Delete or Retain
	phase   string // Bound, Released
	ref     claims.Ref
	refUID  string // spec.claimRef
	modes   []string
	record  *migration.Record
	rv      int
	gone    bool
	excused bool // its claim was deleted by an apply whose plan showed that, with allow_data_loss
	// dirs are the directories made on the shared claim's volume (the
	// init container's); a file of a home there has the path dir/name.
	dirs map[string]bool
	// A split volume (split_history_test.go): its record, the UID of the
	// claim it was reserved for, and the directory of the shared claim's
	// volume it is made on, whose files are its files.
	split       *migration.SplitRecord
	reservedUID string
	base        *volume
	baseDir     string
	// dcopy: the directory a move by copy copies into this volume's claim
	// (directory_copy_history_test.go): once marked, that claim is a moved home.
	dcopy string
}

type mclaim struct{ c claims.Claim }

// pod is a server: who is the user, or "user/server" for a named server.
type pod struct {
	who string
	ref claims.Ref
	dir string // the home's directory on the shared claim; "" for a claim of its own
}

// hubConfig is what KubeSpawner and the hub's hooks use: the last applied
// configuration's.
type hubConfig struct {
	mode, template, nsTemplate string
	// shared: the shared layout's claim and sub-path template, expanded
	// under scheme (the per-user layout's claims are always "safe").
	shared *safety.SharedHome
	scheme kubespawner.Scheme
	// split: the per-user layout while homes move out of this shared one.
	split *safety.SharedHome
}

// shown is one claim deletion an apply's plan showed.
type shown struct {
	user    string
	excused bool // recreate or destroy with allow_data_loss: its data may go
}

// world is the cluster and the hub, as the test models them.
type world struct {
	t       *testing.T
	r       *rand.Rand
	claims  map[claims.Ref]*mclaim
	vols    map[string]*volume
	pods    map[string]pod // by who
	jobs    map[claims.Ref]*wjob
	nextUID int
	nextVol int
	clock   int
	hub     hubConfig
	// The binder acts at a call with probability 1/binderRate (0: only
	// when the history lets it).
	binderRate int
	// During an apply: the UIDs its plan showed deleted, its class, and
	// whether hub actions and a kill may interleave with its calls.
	shown      map[string]shown
	planClass  safety.Class
	interleave bool
	calm       bool // no hub actions, no kills (settling, fixed histories)
	killAt     int  // kill the apply at this call (0: never)
	calls      int
	killed     bool
	// The oracle: contents a user rewrote, contents whose loss an apply
	// was allowed, who wrote each content.
	superseded map[string]bool
	excused    map[string]bool
	owner      map[string]string
	// backup is what an operator saved, by user, to put back.
	backup map[string]map[string]file
	// saveFor names, by user, the volume saved files go back to.
	saveFor map[string]string
	// errs are the last apply's errors, and the plan errors seen since.
	errs []string
	log  []string
	// failed: an invariant broke.
	failed bool
	// serverPlans counts plans that planned a named server's own claim;
	// migrations the migrations an apply started.
	serverPlans, migrations int
	// afterRemove, when set, runs right after an apply deleted a claim
	// (fixed histories act in the rebind's window with it).
	afterRemove func()
	// afterOp, when set, runs after each op of a move out of the shared
	// layout (fixed histories act between the ops with it).
	afterOp func(user string, op migration.Op)
	// events counts what a history exercised (TestHistories requires each).
	events map[string]int
	// users are the hub's users and servers (hubUsers, or sharedUsers).
	users []string
	// The shared claim (zero Ref: none in this history), its UID, and every
	// directory ever made on it (none may go).
	sharedRef  claims.Ref
	sharedUID  string
	sharedDirs map[string]bool
	// sharedUnsplittable: the shared claim's volume is one no directory of
	// can be a volume of its own (directory_copy_history_test.go).
	sharedUnsplittable bool
	// reported are contents a layout change left in an old home that its
	// plan named (on_layout_change = "keep"), or that a plan could not see
	// (sharedLimit); they must stay on some volume.
	reported      map[string]bool
	reportedHomes []loc
	// lastHome is the home the hub last mounted for each server, as the
	// files it holds (canon): checkMount.
	lastHome map[string]seenHome
	// applying is the plan of the apply under way, or of the last one.
	applying *plan
	// fresh is the last apply's own classification (its warnings are not
	// shown: the provider's apply reports only its errors).
	fresh safety.Result
	// mergeGen counts, by claim UID, the merge records written on the
	// claim and removed from it (merge_history_test.go); nextAway numbers
	// the directories files are moved away to.
	mergeGen map[string]int
	nextAway int
}

var errKilled = errors.New("killed")

func newWorld(t *testing.T, r *rand.Rand) *world {
	return &world{t: t, r: r, claims: map[claims.Ref]*mclaim{}, vols: map[string]*volume{}, pods: map[string]pod{}, jobs: map[claims.Ref]*wjob{},
		hub: hubConfig{mode: safety.RWO}, superseded: map[string]bool{}, excused: map[string]bool{}, owner: map[string]string{},
		backup: map[string]map[string]file{}, saveFor: map[string]string{}, binderRate: 2, events: map[string]int{}, users: hubUsers,
		sharedDirs: map[string]bool{}, reported: map[string]bool{}, lastHome: map[string]seenHome{}, mergeGen: map[string]int{}}
}

func (w *world) logf(format string, a ...any) { w.log = append(w.log, fmt.Sprintf(format, a...)) }

func (w *world) violation(format string, a ...any) {
	w.failed = true
	w.logf("VIOLATION: "+format, a...)
}

// between runs before each cluster call of an apply: maybe the binder and
// the Job controller, maybe a hub action, maybe the kill. Before a delete
// (hub false) no hub action runs: the gate lists pods right before the
// delete, and a server that starts in the milliseconds between the two is
// a window the gate cannot close (DESIGN.md).
func (w *world) between(hub ...bool) error {
	if w.killed {
		return errKilled
	}
	if w.calm {
		if w.binderRate > 0 && w.r.IntN(w.binderRate) == 0 {
			w.binder()
		}
		return nil
	}
	if !w.interleave {
		return nil
	}
	w.calls++
	if w.killAt > 0 && w.calls >= w.killAt {
		w.killed = true
		w.logf("apply: killed at call %d", w.calls)
		return errKilled
	}
	w.controllers()
	if len(hub) == 0 && w.r.IntN(4) == 0 {
		w.hubAction()
	}
	return nil
}

func (w *world) uid() string { w.nextUID++; return fmt.Sprintf("u%d", w.nextUID) }

// newVolume is a provisioner's new, empty volume, bound to claim c.
func (w *world) newVolume(c *claims.Claim) *volume {
	w.nextVol++
	v := &volume{name: fmt.Sprintf("pv-%d", w.nextVol), files: map[string]file{}, policy: "Delete", phase: "Bound",
		ref: c.Ref(), refUID: c.UID, modes: slices.Clone(c.AccessModes)}
	w.vols[v.name] = v
	c.VolumeName, c.Phase = v.name, "Bound"
	return v
}

func (w *world) nsOf(user string) string {
	cfg := safety.Config{Namespace: hubNS, UserNamespaceTemplate: w.hub.nsTemplate, Scheme: kubespawner.SchemeSafe}
	ns, err := cfg.NamespaceOf(user)
	if err != nil {
		w.t.Fatal(err)
	}
	return ns
}

// newClaim is the claim KubeSpawner makes (or the provider, alike) for a
// server (a named server's when server is set), bound to a new volume.
func (w *world) newClaim(user, server string, ref claims.Ref, mode string, size int64) *mclaim {
	ann := map[string]string{kubespawner.AnnotationUsername: user}
	if server != "" {
		ann[kubespawner.AnnotationServername] = server
	}
	m := &mclaim{c: claims.Claim{Name: ref.Name, Namespace: ref.Namespace, UID: w.uid(), Username: user, Servername: server, AccessModes: []string{mode},
		Requested: fmt.Sprintf("%dGi", size), RequestedBytes: size << 30, Annotations: ann,
		Labels: map[string]string{kubespawner.LabelUsername: user}}}
	w.newVolume(&m.c)
	w.claims[ref] = m
	return m
}

// homeClaim is a user's default server's home as KubeSpawner makes it
// under the hub's settings.
func (w *world) homeClaim(user string, mode string) *mclaim {
	return w.newClaim(user, "", w.templateRef(user, ""), mode, 1)
}

func (w *world) templateRef(user, server string) claims.Ref {
	name, err := kubespawner.Expand(cmp.Or(w.hub.template, "claim-{username}"), user, server, cmp.Or(w.hub.scheme, kubespawner.SchemeSafe))
	if err != nil {
		w.t.Fatal(err)
	}
	return claims.Ref{Namespace: w.nsOf(user), Name: name}
}

func (w *world) volOf(ref claims.Ref) *volume {
	m := w.claims[ref]
	if m == nil || m.c.Phase != "Bound" {
		return nil
	}
	if v := w.vols[m.c.VolumeName]; v != nil && !v.gone && v.refUID == m.c.UID {
		return v
	}
	return nil
}

var hubUsers = []string{"alice", "bob", "carol", "alice/gpu"}

// hubAction is one random thing the hub (or a user) does.
func (w *world) hubAction() {
	who := w.users[w.r.IntN(len(w.users))]
	switch w.r.IntN(9) {
	case 0, 1: // spawn: the server mounts its home and writes
		w.spawn(who)
	case 2, 3:
		w.write(who)
	case 4, 5:
		w.stop(who)
	case 6: // a short session: spawn, write, stop
		if _, running := w.pods[who]; !running {
			w.spawn(who)
			w.stop(who)
		}
	case 7: // a pod left on the old home of a copied user writes there
		w.strayWrite(strings.Split(who, "/")[0])
	case 8:
		w.binder()
	}
}

// spawn: the hub decides the claim (hubHome), KubeSpawner creates it when
// missing, the server mounts it and writes.
func (w *world) spawn(who string) {
	if _, running := w.pods[who]; running {
		return
	}
	if w.hub.shared != nil || w.hub.split != nil {
		w.spawnShared(who)
		return
	}
	ref, create, refused := w.hubHome(who)
	if refused != "" {
		w.events["spawn refused"]++
		if strings.Contains(refused, "was merged") {
			w.events["merge: spawn refused, merged (per-user layout)"]++
		}
		w.logf("hub: %s's spawn refused: %s", who, refused)
		return
	}
	user, server, _ := strings.Cut(who, "/")
	if create {
		m := w.newClaim(user, server, ref, w.hub.mode, 1)
		w.logf("hub: %s spawns, KubeSpawner creates %s (%s, %s)", who, ref, m.c.UID, w.hub.mode)
	}
	m := w.claims[ref]
	if m.c.Deleting || w.volOf(ref) == nil {
		return // the pod waits, or fails on a terminating claim
	}
	for _, f := range w.view(w.volOf(ref)) {
		if o := w.owner[f.content]; o != "" && strings.Split(o, "/")[0] != user {
			w.violation("%s's server mounts %s, which holds %s's files", who, ref, o)
			break
		}
	}
	w.checkMount(who, loc{ref: ref})
	w.pods[who] = pod{who, ref, ""}
	w.write(who)
}

// stop: a claim deleted while mounted goes now (pvc-protection).
func (w *world) stop(who string) {
	p, running := w.pods[who]
	if !running {
		return
	}
	delete(w.pods, who)
	if m := w.claims[p.ref]; m != nil && m.c.Deleting && len(w.mounts(p.ref, "")) == 0 {
		w.deleteClaim(m, "after its server stopped")
	}
}

// write adds a file to the server's home, or rewrites one (sometimes with
// an older mtime).
func (w *world) write(who string) {
	p, ok := w.pods[who]
	if !ok {
		return
	}
	if m := w.claims[p.ref]; m == nil || m.c.Deleting {
		return
	}
	if v := w.volOf(p.ref); v != nil {
		w.writeTo(v, p.dir, who)
	}
}

// writeTo writes into volume v, in directory dir of it when set.
func (w *world) writeTo(v *volume, dir, who string) {
	w.clock++
	content := fmt.Sprintf("%s@%d", who, w.clock)
	w.owner[content] = who
	user := strings.Split(who, "/")[0]
	if v.base != nil { // a split volume: its directory of the shared claim's
		dir = strings.TrimSuffix(v.baseDir+"/"+dir, "/")
		v = v.base
	}
	prefix := ""
	if dir != "" {
		prefix = dir + "/"
	}
	var mine []string
	for path := range v.files {
		if strings.HasPrefix(path, prefix+user+"-") {
			mine = append(mine, path)
		}
	}
	slices.Sort(mine)
	if len(mine) == 0 || w.r.IntN(2) == 0 {
		v.files[fmt.Sprintf("%s%s-f%d", prefix, user, w.clock)] = file{content, w.clock}
		return
	}
	path := mine[w.r.IntN(len(mine))]
	old := v.files[path]
	w.superseded[old.content] = true
	mtime := w.clock
	if w.r.IntN(3) == 0 {
		mtime = w.r.IntN(old.mtime + 1) // tar x, cp -p: an older time than the file had
		w.events["rewrite with an older mtime"]++
	}
	v.files[path] = file{content, mtime}
}

// deleteClaim removes a claim; the binder releases its volume later (or
// deletes it with its files under reclaim policy Delete).
func (w *world) deleteClaim(m *mclaim, why string) {
	delete(w.claims, m.c.Ref())
	v := w.vols[m.c.VolumeName]
	n := 0
	if v != nil && v.refUID == m.c.UID {
		n = len(v.files)
	}
	w.logf("cluster: %s (%s) deleted %s, %d file(s) on its volume", m.c.Ref(), m.c.UID, why, n)
}

// dropped checks contents a volume no longer holds (deleted, or written
// over by a copy): each must be held elsewhere, rewritten by its user, or
// allowed to go.
func (w *world) dropped(contents []string, excused bool, why string) {
	held := w.held()
	for _, c := range contents {
		switch {
		case held[c] || w.superseded[c] || w.excused[c]:
		case excused:
			w.excused[c] = true
		default:
			w.violation("%s's file content %s is lost: %s", w.owner[c], c, why)
		}
	}
}

// held is every content an existing volume or an operator's backup holds.
func (w *world) held() map[string]bool {
	out := map[string]bool{}
	for _, v := range w.vols {
		for _, f := range v.files {
			if !v.gone {
				out[f.content] = true
			}
		}
	}
	for _, b := range w.backup {
		for _, f := range b {
			out[f.content] = true
		}
	}
	return out
}

func contentsOf(files map[string]file) []string {
	var out []string
	for _, f := range files {
		out = append(out, f.content)
	}
	slices.Sort(out)
	return out
}

// live is what a plan reads, as the provider's readLive reads it: the
// claims (cluster-wide under per-user namespaces, now or in the state),
// the rebinds in progress (always), the volumes' drivers when migrating,
// the mounted claims.
func (w *world) live(cfg safety.Config, prior *safety.Prior) safety.Live {
	var l safety.Live
	all := cfg.UserNamespaceTemplate != "" || prior != nil && prior.Config.UserNamespaceTemplate != ""
	for _, ref := range slices.SortedFunc(maps.Keys(w.claims), cmpRef) {
		if !all && ref.Namespace != cfg.Namespace || ref == w.sharedRef {
			continue // the shared claim carries no home's labels: the provider's list does not see it
		}
		c := w.claims[ref].c
		c.AccessModes, c.Annotations, c.Labels = slices.Clone(c.AccessModes), maps.Clone(c.Annotations), maps.Clone(c.Labels)
		l.Claims = append(l.Claims, c)
	}
	l.InProgress = map[claims.Ref]safety.InProgress{}
	for _, v := range w.vols {
		if v.gone || v.record == nil {
			continue
		}
		rec := *v.record
		if ns, err := cfg.NamespaceOf(rec.User); err != nil || ns != rec.Namespace {
			continue // another deployment's migration
		}
		l.InProgress[claims.Ref{Namespace: rec.Namespace, Name: rec.Claim}] = safety.InProgress{Volume: v.name, Record: rec}
	}
	if cfg.OnModeChange == safety.OnModeChangeMigrate || prior != nil && prior.Config.OnModeChange == safety.OnModeChangeMigrate {
		l.Volumes = map[string]safety.Volume{}
		for _, v := range w.vols {
			l.Volumes[v.name] = safety.Volume{CSIDriver: csiDriver}
			if v.dirs != nil || v.base != nil {
				l.Volumes[v.name] = safety.Volume{} // host paths
			}
		}
	}
	l.Mounted = map[claims.Ref]bool{}
	for _, p := range w.pods {
		l.Mounted[p.ref] = true
	}
	if sh := safety.DirectoryOf(cfg); sh != nil {
		if m := w.claims[claims.Ref{Namespace: cfg.Namespace, Name: sh.Claim}]; m != nil {
			c := m.c
			c.AccessModes = slices.Clone(c.AccessModes)
			l.Shared = &c
			if cfg.SplitFrom != nil && cfg.OnLayoutChange == safety.OnLayoutChangeMigrate && w.volOf(c.Ref()) != nil {
				// readLive: whether directories move zero copy or by a copy.
				src := w.sharedSource()
				l.SharedSource = &src
			}
			if cfg.MergeInto != nil {
				// readLive: merges wait while a pod uses the directory.
				use := w.sharedDirectoryUse(c.Ref())
				l.DirectoriesInUse = &use
			}
		}
	}
	return l
}

func cmpRef(a, b claims.Ref) int {
	return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
}

// The Cluster the executor works on.

func (w *world) Claim(_ context.Context, namespace, name string) (*claims.Claim, error) {
	if err := w.between(); err != nil {
		return nil, err
	}
	m := w.claims[claims.Ref{Namespace: namespace, Name: name}]
	if m == nil {
		return nil, nil
	}
	c := m.c
	c.AccessModes, c.Annotations, c.Labels = slices.Clone(c.AccessModes), maps.Clone(c.Annotations), maps.Clone(c.Labels)
	return &c, nil
}

// mounts lists the pods that mount ref: servers, and the copy Jobs' pods
// while they run (but exceptJob's).
func (w *world) mounts(ref claims.Ref, exceptJob string) []string {
	var out []string
	for _, p := range w.pods {
		if p.ref == ref {
			out = append(out, "jupyter-"+strings.ReplaceAll(p.who, "/", "--"))
		}
	}
	for jref, j := range w.jobs {
		if j.running() && (j.src == ref || j.dst == ref) && jref.Name != exceptJob {
			out = append(out, jref.Name+"-pod")
		}
	}
	slices.Sort(out)
	return out
}

func (w *world) MountedBy(_ context.Context, namespace, claim, exceptJob string) ([]string, error) {
	if err := w.between(); err != nil {
		return nil, err
	}
	return w.mounts(claims.Ref{Namespace: namespace, Name: claim}, exceptJob), nil
}

func (w *world) RemoveClaim(_ context.Context, namespace, name, uid string) error {
	if err := w.between(false); err != nil {
		return err
	}
	ref := claims.Ref{Namespace: namespace, Name: name}
	m := w.claims[ref]
	if m == nil {
		return nil
	}
	if m.c.UID != uid {
		return fmt.Errorf("precondition failed: uid %s, now %s", uid, m.c.UID)
	}
	if ref == w.sharedRef {
		w.violation("the apply deleted the shared claim %s, which holds every home", ref)
	}
	s, ok := w.shown[uid]
	switch {
	case !ok:
		w.violation("the apply deleted %s (%s), which its plan did not show deleted", ref, uid)
	case s.user != m.c.Username:
		w.violation("the apply deleted %s (%s), %q's claim, which its plan showed as %q's", ref, uid, m.c.Username, s.user)
	}
	if v := w.vols[m.c.VolumeName]; v != nil && v.refUID == m.c.UID && !v.gone {
		v.excused = ok && s.excused && s.user == m.c.Username
		if v.base != nil && v.excused {
			// A split claim whose data the plan let go: the files stay in
			// the directory, no longer the user's home.
			for _, f := range w.view(v) {
				w.excused[f.content] = true
			}
		}
		if v.policy == "Delete" && len(v.files) > 0 && w.planClass != safety.ClassDestructive {
			w.violation("the apply of a %s plan deleted %s, whose volume %s (reclaim policy Delete) holds %d file(s)", w.planClass, ref, v.name, len(v.files))
		}
	}
	if pods := w.mounts(ref, ""); len(pods) > 0 {
		w.violation("the apply deleted %s while %v mount it", ref, pods)
		m.c.Deleting = true // pvc-protection: it goes when the pods stop
		return nil
	}
	w.deleteClaim(m, "by the apply")
	if w.afterRemove != nil {
		w.afterRemove()
	}
	return nil
}

// genConfig is one generated configuration, in the history's layout (the
// namespaces and the template it mostly keeps).
func genConfig(r *rand.Rand, l layout) safety.Config {
	c := safety.Config{Namespace: hubNS, NameTemplate: l.template, UserNamespaceTemplate: l.nsTemplate, Scheme: kubespawner.SchemeSafe,
		AccessMode:    []string{safety.RWO, safety.RWX}[r.IntN(2)],
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
				cfg.AccessMode = safety.RWO
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

func fixedWorld(t *testing.T) *world {
	w := newWorld(t, rand.New(rand.NewPCG(1, 1)))
	w.hub.template = "claim-{username}"
	return w
}

func mustApply(t *testing.T, w *world, p plan) *safety.Prior {
	t.Helper()
	s := w.apply(p, false)
	if s == nil || w.failed {
		t.Fatalf("apply:\n%s", strings.Join(w.log, "\n"))
	}
	return s
}

func hubRef(name string) claims.Ref { return claims.Ref{Namespace: hubNS, Name: name} }

// The six sequences of issue-style reports that motivated the executor's
// checks, as fixed histories at the core.
func TestHistory_savedPlanThenSpawn(t *testing.T) {
	w := fixedWorld(t)
	cfg := safety.Config{Namespace: hubNS, NameTemplate: "claim-{username}", Scheme: kubespawner.SchemeSafe, AccessMode: safety.RWX,
		OnModeChange: safety.OnModeChangeRecreate, AllowDataLoss: true, Users: []string{"alice", "bob"}, Capacity: "1Gi", CapacityBytes: 1 << 30}
	w.homeClaim("alice", safety.RWO) // alice: recreated, as the plan shows
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
	cfg := safety.Config{Namespace: hubNS, NameTemplate: "claim-{username}", Scheme: kubespawner.SchemeSafe, AccessMode: safety.RWO,
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
	w.homeClaim("alice", safety.RWO)
	cfg := safety.Config{Namespace: hubNS, NameTemplate: "claim-{username}", Scheme: kubespawner.SchemeSafe, AccessMode: safety.RWX,
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
