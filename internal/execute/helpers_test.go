package execute

import (
	"cmp"
	"context"
	"errors"
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

// The history model's world (apply_history_test.go states the property
// it checks): a model cluster of claims, volumes with their files, pods and
// the hub's configuration, which implements the executor's interfaces
// (Cluster here; Migrations, Splits, DirectoryCopies and Merges in
// migrate_, split_, directory_copy_ and merge_history_test.go), and the
// helpers of the fixed histories.

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
		hub: hubConfig{mode: claims.RWO}, superseded: map[string]bool{}, excused: map[string]bool{}, owner: map[string]string{},
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

// migrateConfig is alice's (and the listed users') homes moved to
// ReadWriteMany by method, in the hub's namespace.
func migrateConfig(method migration.Method, users ...string) safety.Config {
	return safety.Config{Namespace: hubNS, NameTemplate: "claim-{username}", Scheme: kubespawner.SchemeSafe, AccessMode: claims.RWX,
		OnModeChange: safety.OnModeChangeMigrate, AllowDataLoss: true, Users: users, Capacity: "1Gi", CapacityBytes: 1 << 30,
		DeletionPolicy: safety.DeletionRetain,
		Migration:      safety.Migration{Method: method, SkipRunning: true, CopyImage: copyImage, TargetTemplate: "home-{username}"}}
}

// quietWorld is a world whose applies run without hub actions or kills;
// the binder acts at every call unless binderRate says otherwise.
func quietWorld(t *testing.T) *world {
	w := fixedWorld(t)
	w.calm, w.binderRate = true, 1
	return w
}

func (w *world) planApply(t *testing.T, cfg safety.Config, state *safety.Prior) (plan, *safety.Prior) {
	t.Helper()
	p, ok := w.plan(cfg, state)
	w.logf("operator: plan %s: %s %s", describe(cfg), p.res.Class, p.changes)
	if !ok {
		t.Fatalf("plan: %v\n%s", p.res.Errors, strings.Join(w.log, "\n"))
	}
	s := w.apply(p, false)
	if w.failed {
		t.Fatalf("apply:\n%s", strings.Join(w.log, "\n"))
	}
	return p, s
}

// session: the user's server starts, writes, and stops.
func (w *world) session(who string) {
	w.spawn(who)
	w.stop(who)
}

func (w *world) done(t *testing.T, cfg safety.Config, state *safety.Prior) {
	t.Helper()
	w.settle(cfg, state)
	if w.failed {
		t.Fatalf("the history loses data:\n  %s", strings.Join(w.log, "\n  "))
	}
}
