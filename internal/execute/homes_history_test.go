package execute

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/claims"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/kubespawner"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/migration"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/safety"
)

// The history model's shared layout (safety.Config.Shared): one existing
// claim whose volume holds every user's home as a directory. Half the
// histories have it; their configurations switch to it and back (the
// per-user settings stay those of the history's layout), change its
// sub-path template and slug scheme, and say on_layout_change "fail" or
// "keep". The hub in the shared layout mounts the directory the template
// names under its current configuration (the last applied one), its init
// container making a missing directory; KubeSpawner creates and deletes
// no per-user claim there.
//
// The invariants added (besides the existing ones, which hold in every
// layout):
//   - the shared claim is never deleted (by UID), nor its volume, and no
//     directory made on it ever goes, by any apply, destroy or settle;
//   - a destroy whose configuration is the shared layout deletes no claim
//     at all, whatever deletion_policy and allow_data_loss say;
//   - the home-move invariant, checked at every apply that the hub follows
//     (one that returned a state): for every server the hub gave a home
//     before the apply, each content that home held when the apply began
//     (not rewritten, not dropped with allow_data_loss since) must be in
//     the home the hub gives that server after it, when the home moved
//     (another claim, or another directory). Otherwise:
//     – with on_layout_change = "keep" in the applied configuration, the
//     old home must still hold it, untouched, and for a listed user's
//     default server a warning of the plan must name the user; the
//     content is then "reported" and the end check accepts it anywhere
//     it still is;
//     – with no state (a new resource, state rm, -replace) while the hub
//     was in the shared layout, the plan cannot know the hub's template
//     and scheme (DESIGN.md: a new resource's plan warns so; a switch to
//     per-user claims after state rm is not seen): counted as the
//     documented limit, reported;
//     – for a listed user's default server: a violation (the plan passed
//     and the user starts in another, empty home);
//     – for an unlisted user or a named server: left to the end check
//     (the plan need not name them; its warnings must, or the settle
//     phase's last plan).
//   - at the end, a content on the shared claim is where the hub gives
//     its user's home, reported, or in a directory the last plan names.
//
// Not modelled: the directory-exposure checks (extra mounts, templates
// that give two users one directory: those are the provider's
// validation, not the planner's), what is in a directory before the
// first history action, a shared claim deleted or replaced by someone
// else, import, and the shared claim in another namespace than the hub's.

const sharedClaim = "home-nfs"

// sharedUsers are the shared histories' users: Bob's directory differs
// between the slug schemes ("bob---cd9fb1e1" and "-42ob").
var sharedUsers = []string{"alice", "Bob", "carol", "alice/gpu"}

var sharedTemplates = []string{"{username}", "home/{username}", "{escaped_username}"}

// genShared makes a generated configuration of a shared history use the
// shared layout a third of the time, the move out of it a third, and
// on_layout_change fail or keep; where mr is set (a history with merges),
// some are a merge into the shared layout instead (mergeDraws.gen, drawn
// from mr: the other draws stay the same).
func genShared(r *rand.Rand, c *safety.Config, mr *mergeDraws) {
	c.OnLayoutChange = []safety.OnLayoutChange{safety.OnLayoutChangeFail, safety.OnLayoutChangeKeep}[r.IntN(2)]
	for i, u := range c.Users {
		if u == "bob" {
			c.Users[i] = "Bob"
		}
	}
	perUserNS := c.UserNamespaceTemplate != ""
	switch r.IntN(3) {
	case 0:
	case 1:
		genSplit(r, c)
	default:
		c.Shared = &safety.SharedHome{Claim: sharedClaim, SubPathTemplate: sharedTemplates[r.IntN(len(sharedTemplates))]}
		c.Scheme = []kubespawner.Scheme{kubespawner.SchemeSafe, kubespawner.SchemeEscape}[r.IntN(2)]
		c.UserNamespaceTemplate = "" // the provider refuses user namespaces in the shared layout
		if r.IntN(4) > 0 {
			c.AccessMode = claims.RWX // the shared claim's; another mode fails the plan
		}
	}
	if mr != nil {
		mr.gen(c, perUserNS)
	}
}

// startShared makes the shared claim (an operator's, without KubeSpawner's
// labels) and, half the time, puts the hub in the shared layout.
func (w *world) startShared() {
	w.newSharedClaim()
	if w.r.IntN(2) == 0 {
		w.hub.shared = &safety.SharedHome{Claim: sharedClaim, SubPathTemplate: sharedTemplates[w.r.IntN(len(sharedTemplates))]}
		w.hub.scheme = []kubespawner.Scheme{kubespawner.SchemeSafe, kubespawner.SchemeEscape}[w.r.IntN(2)]
	}
	w.logf("cluster: shared claim %s (%s); hub %s", w.sharedRef, w.sharedUID, w.hubLayout())
}

// newSharedClaim makes the shared claim and its volume.
func (w *world) newSharedClaim() {
	w.users = sharedUsers
	ref := hubRef(sharedClaim)
	m := &mclaim{c: claims.Claim{Name: ref.Name, Namespace: ref.Namespace, UID: w.uid(), AccessModes: []string{claims.RWX},
		Requested: "100Gi", RequestedBytes: 100 << 30}}
	v := w.newVolume(&m.c)
	v.dirs = map[string]bool{}
	w.claims[ref] = m
	w.sharedRef, w.sharedUID = ref, m.c.UID
}

func (w *world) hubLayout() string {
	if w.hub.split != nil {
		return fmt.Sprintf("per-user %q moving out of shared %q scheme %s", w.hub.template, w.hub.split.SubPathTemplate, w.hub.scheme)
	}
	if w.hub.shared == nil {
		return fmt.Sprintf("per-user %q", w.hub.template)
	}
	return fmt.Sprintf("shared %q scheme %s", w.hub.shared.SubPathTemplate, w.hub.scheme)
}

// loc is a home: a claim, and the directory in it ("" for the whole claim).
type loc struct {
	ref claims.Ref
	dir string
}

func (l loc) String() string {
	if l.dir == "" {
		return "claim " + l.ref.String()
	}
	return fmt.Sprintf("directory %q of %s", l.dir, l.ref)
}

// hubLoc is the home the hub gives who under its configuration: create
// when KubeSpawner creates the claim, refused when the spawn is refused.
func (w *world) hubLoc(who string) (at loc, create bool, refused string) {
	if w.hub.split != nil {
		at, refused := w.splitLoc(who)
		return at, false, refused
	}
	if sh := w.hub.shared; sh != nil {
		user, server, _ := strings.Cut(who, "/")
		ref := hubRef(sh.Claim)
		switch m := w.claims[ref]; {
		case m == nil:
			return loc{ref: ref}, false, "the shared claim does not exist"
		case m.c.Deleting:
			return loc{ref: ref}, false, "the shared claim is being deleted"
		}
		dir, err := kubespawner.Expand(sh.SubPathTemplate, user, server, w.hub.scheme)
		if err != nil {
			return loc{ref: ref}, false, err.Error()
		}
		return loc{ref, dir}, false, ""
	}
	ref, create, refused := w.hubHome(who)
	return loc{ref: ref}, create, refused
}

// in reports whether the file at path on v is in home h.
func (w *world) in(h loc, v *volume, path string) bool {
	hv, dir := w.resolve(h)
	return hv == v && (dir == "" || strings.HasPrefix(path, dir+"/"))
}

// filesAt is what home at holds, by path; nil when its claim has no volume.
func (w *world) filesAt(at loc) map[string]file {
	v, dir := w.resolve(at)
	if v == nil {
		return nil
	}
	out := map[string]file{}
	for path, f := range v.files {
		if dir == "" || strings.HasPrefix(path, dir+"/") {
			out[path] = f
		}
	}
	return out
}

// spawnShared: the init container makes the directory when missing, the
// server mounts it and writes.
func (w *world) spawnShared(who string) {
	at, _, refused := w.hubLoc(who)
	if refused != "" {
		w.events["spawn refused"]++
		if strings.Contains(refused, "moved out of the shared layout") {
			w.events["split: spawn refused, the move under way"]++
		}
		if strings.Contains(refused, "being copied from its directory") {
			w.events["dcopy: spawn refused, being copied"]++
		}
		if strings.Contains(refused, "being merged") {
			w.events["merge: spawn refused, being merged"]++
		}
		w.logf("hub: %s's spawn refused: %s", who, refused)
		return
	}
	v := w.volOf(at.ref)
	if v != nil && v.base != nil {
		w.events["split: the hub mounts a moved home"]++
	}
	if m := w.claims[at.ref]; v != nil && w.hub.split != nil && m != nil && m.c.Annotations[migration.SplitCopiedAnnotation] != "" {
		w.events["dcopy: the hub mounts a copied home"]++
	}
	if v == nil {
		return // the pod waits for the claim
	}
	if user, server, _ := strings.Cut(who, "/"); w.hub.split != nil && at.dir != "" {
		if m := w.claims[w.templateRef(user, server)]; m != nil && carriesMerge(m) {
			w.events["merge: the hub mounts a merged home's directory"]++
		}
	}
	if at.dir != "" && !v.dirs[at.dir] {
		v.dirs[at.dir], w.sharedDirs[at.dir] = true, true
		w.events["shared: init container made a directory"]++
		w.logf("hub: %s spawns, the init container makes %s", who, at)
	}
	user := strings.Split(who, "/")[0]
	for _, f := range w.filesAt(at) {
		if o := w.owner[f.content]; o != "" && strings.Split(o, "/")[0] != user {
			w.violation("%s's server mounts %s, which holds %s's files", who, at, o)
			break
		}
	}
	w.checkMount(who, at)
	w.pods[who] = pod{who, at.ref, at.dir}
	w.write(who)
}

// homeSnap is a server's home and what it held when an apply began.
type homeSnap struct {
	at    loc
	v     *volume
	files map[string]file
	canon loc // at as the files it holds: a moved user's claim is their directory
}

// homesNow are the homes the hub gives now, with what they hold.
func (w *world) homesNow() map[string]homeSnap {
	out := map[string]homeSnap{}
	for _, who := range w.users {
		at, create, refused := w.hubLoc(who)
		if create || refused != "" || w.volOf(at.ref) == nil {
			continue
		}
		out[who] = homeSnap{at, w.volOf(at.ref), w.filesAt(at), w.canon(at)}
	}
	return out
}

// checkMoves checks the home-move invariant after the hub switched to the
// configuration of plan p (see the file's comment); before is homesNow at
// the apply's start and was the hub's configuration then.
func (w *world) checkMoves(p plan, before map[string]homeSnap, old hubConfig) {
	unseen := p.prior == nil && safety.DirectoryOf(p.cfg) != nil && old.shared == nil && old.nsTemplate != ""
	if unseen {
		// Known gap: a new resource (no state) in the shared layout reads
		// claims in its namespace only; the hub's per-user homes in users'
		// own namespaces are neither moves nor named. Counted, and their
		// claims reported, so that the rest of the model runs on.
		w.events["GAP: shared layout adopted without a state over per-user namespaces"]++
		w.logf("check: GAP: the plan (no state) cannot see the per-user homes in users' namespaces")
		for ref := range w.claims {
			if ref.Namespace != p.cfg.Namespace {
				w.reportedHomes = append(w.reportedHomes, loc{ref: ref})
			}
		}
		for _, v := range w.sortedVols() {
			if v.record != nil && v.record.Namespace != p.cfg.Namespace { // a rebind's, retained without its claim
				for _, f := range v.files {
					w.reported[f.content] = true
				}
			}
		}
	}
	if safety.DirectoryOf(p.cfg) != nil && old.shared == nil {
		// The per-user claims the plan's warnings name ("not mounted in the
		// shared layout ... stay as they are", or homes left where the
		// configuration no longer looks, with keep_existing) are reported
		// homes: a later plan, whose prior has no user namespaces, no
		// longer lists them.
		for _, ref := range slices.SortedFunc(maps.Keys(w.claims), cmpRef) {
			for _, f := range p.res.Warnings {
				if ref != w.sharedRef && strings.Contains(f.Detail, ref.String()+" (") {
					w.reportedHomes = append(w.reportedHomes, loc{ref: ref})
					break
				}
			}
		}
	}
	for _, who := range slices.Sorted(maps.Keys(before)) {
		s := before[who]
		user, server, _ := strings.Cut(who, "/")
		now, create, refused := w.hubLoc(who)
		if refused == "" && !create && (now == s.at || w.canon(now) == s.canon) {
			switch was, is := old.directoryOf(), w.hub.directoryOf(); {
			case s.at.dir == "":
			case (old.split == nil) != (w.hub.split == nil):
				w.events["split: layout switched with the homes in place"]++
			case was == nil || is == nil || *was != *is || old.scheme != w.hub.scheme:
				w.events["shared: layout switched with the homes in place"]++
			}
			continue
		}
		if s.canon.dir == "" && w.canon(now).dir == "" && s.v.dcopy == "" {
			if old.split != nil && namesClaim(p.res.Warnings, s.at.ref) {
				// A claim of the move's layout (a recreated moved home) left
				// where the configuration no longer looks, and named.
				w.events["split: a home left behind, named by a warning"]++
				w.report(s, slices.Collect(maps.Keys(s.files)))
			}
			if now.ref != s.at.ref && now.ref.Namespace != s.at.ref.Namespace && w.madeAfter(p, s.at.ref) {
				// A claim KubeSpawner made in the apply's window, in a
				// namespace the configuration leaves (DESIGN.md's limits).
				w.events["LIMIT: a home KubeSpawner created between the plan and the apply left without being named"]++
				w.report(s, slices.Collect(maps.Keys(s.files)))
			}
			continue // between per-user claims (migrations): the other invariants
		}
		if src := w.copySource(now.ref); w.claims[src] != nil && w.canon(loc{ref: src}) == s.canon {
			// The copy of a moved home (its claim is that directory): the
			// copy's invariants; a pod left on the old home writes there.
			w.events["split: a moved home copied"]++
			continue
		}
		have := map[string]bool{} // the new home's; none while the spawn is refused (a rebind waits: it will be that claim)
		if !create && refused == "" {
			for _, f := range w.filesAt(now) {
				have[f.content] = true
			}
		}
		if at, ok := w.splitTo(now.ref); ok && refused != "" {
			// A move under way: once bound, the claim is its directory.
			for _, f := range w.filesAt(at) {
				have[f.content] = true
			}
		}
		if m := w.claims[now.ref]; m != nil && refused != "" && carriesMerge(m) && now.dir == "" {
			// A merge under way: the claim is the home until it is marked
			// (the mark checks that the directory holds it all).
			for _, f := range w.filesAt(now) {
				have[f.content] = true
			}
		}
		var missing []string
		for _, path := range slices.Sorted(maps.Keys(s.files)) {
			c := s.files[path].content
			if !have[c] && !w.superseded[c] && !w.excused[c] && !s.v.excused && !w.reported[c] {
				missing = append(missing, path)
			}
		}
		if len(missing) == 0 {
			continue
		}
		listed := server == "" && slices.Contains(p.cfg.Users, user)
		old := w.filesAt(s.at)
		switch {
		case p.prior == nil && s.at.dir == "" && (s.canon.dir != "" || s.v.dcopy != ""):
			// No state, the hub mounting a claim a move out of the shared
			// layout made: that claim is the user's directory, and a switch
			// from the shared layout after state rm is not seen (DESIGN.md).
			w.events["LIMIT: split: a moved home left after state rm (a switch from the shared layout after state rm is not seen)"]++
			w.logf("check: %s's home moved from %s (%s) to %s under a plan without a state (documented limit)", who, s.at, s.canon, now)
			w.report(s, missing)
		case p.prior == nil && s.at.dir != "":
			// No state, the hub in the shared layout: the plan cannot see
			// the hub's template and scheme (DESIGN.md's limits), and its
			// warning says so.
			if safety.DirectoryOf(p.cfg) != nil && !warnsAdoption(p.res) {
				w.violation("a plan without a state moved %s's home from %s to %s and no warning says it cannot see the hub's directories", who, s.at, now)
			}
			w.events["shared: adopted without a state, the plan cannot see the hub's settings"]++
			w.logf("check: %s's home moved from %s to %s under a plan without a state (documented limit)", who, s.at, now)
			w.report(s, missing)
		case unseen && s.at.ref.Namespace != p.cfg.Namespace:
			w.report(s, missing)
		case safety.Fallback(p.cfg) != nil && server != "" && s.at.dir == "" && s.at.ref.Namespace != p.cfg.Namespace:
			// Known gap: a named server's claim left in a user's namespace
			// when the layout leaves user namespaces; leftBehind names
			// default servers' homes only. Counted and reported.
			w.events["GAP: a named server's claim left in a user namespace, not named"]++
			w.logf("check: GAP: %s's claim %s is left in a user namespace and no plan names it", who, s.at.ref)
			w.report(s, missing)
		case s.at.dir == "" && (namesClaim(p.res.Warnings, s.at.ref) || namesClaim(p.res.Warnings, w.copySource(s.at.ref))) || w.namesMoveOf(p.res.Warnings, s.canon):
			// A warning of the plan names the old claim (left where the
			// configuration no longer looks, with keep_existing).
			w.events["split: a home left behind, named by a warning"]++
			w.report(s, missing)
		case s.at.dir == "" && (namesStray(p.res.Warnings, user, s.at.ref) || namesStray(p.res.Warnings, user, w.copySource(s.at.ref))):
			// A claim the template no longer names (another slug_scheme), or
			// the copy of one, left as it is with on_mode_change =
			// "keep_existing", which the plan's warning names: the hub with
			// the shared claim as fallback (a merge) mounts the user's
			// directory instead.
			w.events["a stray claim left for a directory, named by a warning"]++
			w.report(s, missing)
		case s.at.dir == "" && (namesClaim(w.fresh.Warnings, s.at.ref) || w.madeAfter(p, s.at.ref)):
			// The old claim appeared after the plan (KubeSpawner created it
			// in the window before the apply): only the apply's own
			// classification names it, and the apply shows no warnings
			// (DESIGN.md's limits: with keep, a claim created between the
			// plan and the apply moves without being named).
			w.events["LIMIT: a home KubeSpawner created between the plan and the apply left without being named"]++
			w.report(s, missing)
		case p.cfg.OnLayoutChange == safety.OnLayoutChangeKeep:
			for _, path := range missing {
				if f := s.files[path]; old[path] != f && !w.superseded[f.content] {
					w.violation("on_layout_change = keep: %s's old home %s no longer holds %s", who, s.at, f.content)
				}
			}
			switch {
			case !listed || warnsOf(p.res, user):
			case warnsOf(w.fresh, user):
				// The old home appeared after the plan (KubeSpawner created
				// it in the window before the apply): only the apply's own
				// classification names the user, and the apply does not
				// show its warnings. The old home stays, untouched.
				w.events["shared: keep moved a home the plan did not name (made after the plan)"]++
			default:
				w.violation("the plan moved listed user %s's home from %s to %s with on_layout_change = keep, and no warning names the user", user, s.at, now)
			}
			w.events["shared: keep left an old home, reported"]++
			w.report(s, missing)
		case listed:
			w.violation("a plan that passed (class %s, on_layout_change %q) moved listed user %s's home from %s to %s: %d file(s) written before the apply are not in it (%s)",
				p.res.Class, p.cfg.OnLayoutChange, user, s.at, now, len(missing), s.files[missing[0]].content)
		default:
			w.logf("check: %s's home moved from %s to %s (unlisted or a named server: the end check decides)", who, s.at, now)
		}
	}
}

// report: what the old home holds, now and later (a server started
// before the switch keeps writing there until it stops), was named.
func (w *world) report(s homeSnap, paths []string) {
	for _, p := range paths {
		w.reported[s.files[p].content] = true
	}
	w.reportedHomes = append(w.reportedHomes, s.at)
}

// warnsOf: a warning about a layout change names user.
func warnsOf(res safety.Result, user string) bool {
	for _, f := range res.Warnings {
		if f.Attribute == "on_layout_change" && strings.Contains(f.Detail, user+": ") {
			return true
		}
	}
	return false
}

// checkShared: the shared claim, its volume and every directory made on
// it are still there.
func (w *world) checkShared(when string) {
	if w.sharedRef == (claims.Ref{}) {
		return
	}
	m := w.claims[w.sharedRef]
	if m == nil || m.c.UID != w.sharedUID || m.c.Deleting {
		w.violation("after %s the shared claim %s (%s) is gone or being deleted", when, w.sharedRef, w.sharedUID)
		return
	}
	v := w.volOf(w.sharedRef)
	if v == nil {
		w.violation("after %s the shared claim %s has no volume", when, w.sharedRef)
		return
	}
	for _, d := range slices.Sorted(maps.Keys(w.sharedDirs)) {
		if !v.dirs[d] {
			w.violation("after %s directory %q of the shared claim is gone", when, d)
		}
	}
}

func (w *world) claimUIDs() map[string]claims.Ref {
	out := map[string]claims.Ref{}
	for ref, m := range w.claims {
		out[m.c.UID] = ref
	}
	return out
}

// checkSharedDestroy: a destroy in the shared layout deleted no claim.
func (w *world) checkSharedDestroy(before map[string]claims.Ref) {
	w.events["shared: destroy"]++
	now := w.claimUIDs()
	for _, uid := range slices.Sorted(maps.Keys(before)) {
		if _, ok := now[uid]; !ok {
			w.violation("a destroy in the shared layout deleted claim %s (%s)", before[uid], uid)
		}
	}
	w.checkShared("the destroy")
}

// countPlan counts the shared layout's refusals.
func (w *world) countPlan(res safety.Result) {
	for _, f := range res.Errors {
		switch {
		case f.Attribute == "on_layout_change":
			w.events["shared: plan refused a layout move"]++
		case f.Attribute == "shared_home" && strings.Contains(f.Summary, "migration"):
			w.events["shared: plan refused, a migration in flight"]++
		}
	}
}

// namesClaim: a finding names claim ref as a home ("ns/name (").
func namesClaim(fs []claims.Finding, ref claims.Ref) bool {
	for _, f := range fs {
		if strings.Contains(f.Detail, ref.String()+" (") {
			return true
		}
	}
	return false
}

// namesStray: a warning names claim ref as user's home that the template
// no longer names (checkStrays, acknowledged by keep_existing).
func namesStray(fs []claims.Finding, user string, ref claims.Ref) bool {
	for _, f := range fs {
		if f.Attribute == "pvc_name_template" && strings.Contains(f.Detail, "in namespace "+ref.Namespace+" ") && strings.Contains(f.Detail, user+": has "+ref.Name+",") {
			return true
		}
	}
	return false
}

// warnsAdoption: the plan warns that, without a state, it cannot see which
// directories the hub mounts now.
func warnsAdoption(res safety.Result) bool {
	for _, f := range res.Warnings {
		if f.Attribute == "shared_home.sub_path_template" && strings.Contains(f.Summary, "cannot see which directories") {
			return true
		}
	}
	return false
}

// copySource is the source claim of the copy whose new claim is ref (its
// record leads there); the zero Ref when ref is no copy's.
func (w *world) copySource(ref claims.Ref) claims.Ref {
	if m := w.claims[ref]; m != nil && m.c.Annotations[migration.CopyOfAnnotation] != "" {
		return claims.Ref{Namespace: ref.Namespace, Name: m.c.Annotations[migration.CopyOfAnnotation]}
	}
	return claims.Ref{Namespace: "-", Name: "-"}
}

// madeAfter: the claim at ref was made after plan p (KubeSpawner, at a
// spawn in the apply's window, under the hub's configuration then).
func (w *world) madeAfter(p plan, ref claims.Ref) bool {
	m := w.claims[ref]
	if m == nil || p.seen == nil {
		return false
	}
	_, seen := p.seen[m.c.UID]
	return !seen
}

// namesMoveOf: a finding names, as a home left behind, the claim of a move
// of directory at (its record leads there).
func (w *world) namesMoveOf(fs []claims.Finding, at loc) bool {
	for ref := range w.claims {
		if d, ok := w.splitTo(ref); ok && d == at && namesClaim(fs, ref) {
			return true
		}
	}
	return false
}
