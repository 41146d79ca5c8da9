package execute

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/claims"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/kubespawner"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/migration"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/safety"
)

// The history model's move out of the shared layout (safety.Config.SplitFrom:
// layout = "per_user" with shared_home), zero copy (the move by copy:
// directory_copy_history_test.go). In the shared histories
// a third of the configurations are that layout, with on_layout_change
// "fail", "keep" or "migrate" and batch_size 0 to 2, so that histories go
// from the shared layout to the move and on to the per-user layout, and
// back (the move to the shared layout, the per-user layout to the move).
//
// The world implements execute.Splits: the shared claim's volume is a host
// path; PrepareDirectory is the Job making the directory; a split volume
// is an alias of the directory it is made on (writes through its claim
// land in the directory and the other way round: volume.base, baseDir);
// the PV binder binds a Pending claim to the volume reserved for it by
// namespace, name and UID, and to no other. Each split op is followed by
// AfterStep, where the moved user may spawn, write or stop, and where the
// apply may be killed.
//
// The hub in this layout (hubLoc), for each server: the claim
// pvc_name_template names exists and is usable (no split record, or Bound
// to the record's volume, and not being deleted) → it is mounted, as the
// per-user hub decides (copies followed); it carries a split record and is
// not Bound to its volume, or is being deleted → the spawn is refused; it
// is missing and has a copy → as the per-user hub decides (the switched
// copy, else refused); it is missing and has none → the server's directory
// of the shared claim (SplitFrom.SubPathTemplate under slug_scheme), made
// by the init container when missing. KubeSpawner creates and deletes no
// claim there.
//
// The invariants added (besides the shared layout's and the general ones):
//   - a split volume is never deleted, its reclaim policy stays Retain, it
//     aliases the very directory its record names (on the shared claim's
//     volume), and it is never bound to a claim other than the one it was
//     reserved for (checkSplits, after every apply and binder act);
//   - the directory exists before the volume on it is made;
//   - the hub never mounts a claim that is not an alias of a server's
//     directory where that server's home was a directory, unless every
//     content of the directory is in it or was named (reported) by the
//     plan that moved it, excused by a plan that showed its deletion with
//     allow_data_loss, or rewritten (checkMount, at every spawn, also in
//     the windows of an apply);
//   - no plan that passes plans a create (or recreate) of a claim that an
//     unfinished move has reserved a volume for (checkPlanOverSplit).
//
// Not modelled: volume sources other than a host path (SplitSource's
// NFS and CSI cases have unit tests), symbolic links in the shared claim
// (the Job and the init container refuse them), a directory's owner and
// mode, the shared claim in another namespace, several applies at once.

const sharedHostPath = "/srv/homes"

// genSplit makes c the layout of moving homes out of the shared one.
func genSplit(r *rand.Rand, c *safety.Config) {
	c.Shared = nil
	c.SplitFrom = &safety.SharedHome{Claim: sharedClaim, SubPathTemplate: sharedTemplates[r.IntN(len(sharedTemplates))]}
	c.OnLayoutChange = []safety.OnLayoutChange{safety.OnLayoutChangeFail, safety.OnLayoutChangeKeep, safety.OnLayoutChangeMigrate, safety.OnLayoutChangeMigrate}[r.IntN(4)]
	c.Migration.BatchSize = r.IntN(3)
	if c.UserNamespaceTemplate != "" {
		// shared_home is refused with user namespaces; a template without a
		// user field would give every user one claim in one namespace.
		c.UserNamespaceTemplate, c.NameTemplate = "", "claim-{username}"
	}
	if r.IntN(3) > 0 {
		c.AccessMode = claims.RWX
	}
}

// directoryOf is the shared claim of the hub's directories, nil when none.
func (h hubConfig) directoryOf() *safety.SharedHome {
	if h.shared != nil {
		return h.shared
	}
	return h.split
}

// splitLoc is the home the hub gives who while homes move out of the
// shared layout (see the file's comment).
func (w *world) splitLoc(who string) (at loc, refused string) {
	sh := w.hub.split
	user, server, _ := strings.Cut(who, "/")
	ref := w.templateRef(user, server)
	directory := func() (loc, string) {
		sref := hubRef(sh.Claim)
		switch s := w.claims[sref]; {
		case s == nil:
			return loc{ref: sref}, "the shared claim does not exist"
		case s.c.Deleting:
			return loc{ref: sref}, "the shared claim is being deleted"
		}
		dir, err := kubespawner.Expand(sh.SubPathTemplate, user, server, w.hub.scheme)
		if err != nil {
			return loc{ref: sref}, err.Error()
		}
		return loc{sref, dir}, ""
	}
	switch m := w.claims[ref]; {
	case m != nil && carriesMerge(m):
		// A merge's record or mark, read before any other record: merged
		// (its own UID), the directory; else refused (mergeHub).
		if why := mergeRefused(m); why != "" {
			return loc{ref: ref}, why
		}
		return directory()
	case m == nil && w.rebinding(ref):
		// Finding for the hub file: in a rebind's window (the old claim
		// deleted, the new one not yet made) the rule as stated mounts the
		// user's directory, and what the user writes there is not in the
		// rebound home (TestHistories, seed 20392 with the rule as stated).
		// Modelled as the hub should decide it: refused.
		w.events["HUB FINDING: a spawn in a rebind's window (the rule as stated mounts the directory)"]++
		return loc{ref: ref}, "claim " + ref.Name + " is being rebound"
	case m == nil && w.hasCopy(ref):
		// Its copy decides, as in the per-user layout: the switched copy
		// (the source deleted after the switch), else refused; never the
		// directory, stale since the copy.
		r, _, why := w.hubHome(who)
		return loc{ref: r}, why
	case m == nil:
		return directory()
	case m.c.Deleting:
		return loc{ref: ref}, "claim " + m.c.Name + " is being deleted"
	case m.c.Annotations[migration.SplitAnnotation] != "":
		rec, err := migration.DecodeSplitRecord(m.c.Annotations[migration.SplitAnnotation])
		switch {
		case err == nil && rec.Method == migration.MethodDirectoryCopy:
			// Mounted once marked copied with its own UID (check_split).
			if why := copyRefused(m); why != "" {
				return loc{ref: ref}, why
			}
		case err != nil || m.c.Phase != "Bound" || m.c.VolumeName != rec.Volume:
			return loc{ref: ref}, "claim " + m.c.Name + " is being moved out of the shared layout"
		}
	}
	r, _, why := w.hubHome(who) // the claim exists: the per-user hub's decisions
	return loc{ref: r}, why
}

// hasCopy reports whether a claim is a copy of ref (the copy-of annotation
// the hub's label lookup finds).
func (w *world) hasCopy(ref claims.Ref) bool {
	for k, c := range w.claims {
		if k.Namespace == ref.Namespace && c.c.Annotations[migration.CopyOfAnnotation] == ref.Name {
			return true
		}
	}
	return false
}

// resolve is where home at's files are: a split volume's are its base's,
// in its directory.
func (w *world) resolve(at loc) (*volume, string) {
	v := w.volOf(at.ref)
	if v == nil || v.base == nil {
		return v, at.dir
	}
	if at.dir == "" {
		return v.base, v.baseDir
	}
	return v.base, v.baseDir + "/" + at.dir
}

// canon is home at as the files it holds: a split claim is its directory
// of the shared claim.
func (w *world) canon(at loc) loc {
	if v := w.volOf(at.ref); v == nil && at.dir == "" {
		if d, ok := w.splitTo(at.ref); ok {
			return d // a move not yet bound: the binder binds it to that directory only
		}
		return at
	} else if v == nil || v.base == nil {
		return at
	}
	bv, dir := w.resolve(at)
	return loc{bv.ref, dir}
}

// view is what volume v holds as its own mount shows it: a split volume's
// files are those of its directory.
func (w *world) view(v *volume) map[string]file {
	if v.base == nil {
		return v.files
	}
	out := map[string]file{}
	for p, f := range v.base.files {
		if rest, ok := strings.CutPrefix(p, v.baseDir+"/"); ok {
			out[rest] = f
		}
	}
	return out
}

// The Splits the executor works on.

func (w *world) SharedSource(_ context.Context, namespace, claim string) (migration.VolumeSource, string, error) {
	if err := w.between(); err != nil {
		return migration.VolumeSource{}, "", err
	}
	ref := claims.Ref{Namespace: namespace, Name: claim}
	m := w.claims[ref]
	if m == nil || w.volOf(ref) == nil || w.volOf(ref).dirs == nil {
		return migration.VolumeSource{}, "", fmt.Errorf("claim %s is not bound", ref)
	}
	return w.sharedSource(), m.c.UID, nil
}

// PrepareDirectory is the Job that makes the directory as the init
// container does; it runs to its end before this returns.
func (w *world) PrepareDirectory(_ context.Context, job migration.Split) error {
	if err := w.between(); err != nil {
		return err
	}
	v := w.volOf(hubRef(job.Shared))
	if v == nil || v.dirs == nil {
		return fmt.Errorf("the shared claim %s is not bound", job.Shared)
	}
	if !v.dirs[job.Directory] {
		v.dirs[job.Directory], w.sharedDirs[job.Directory] = true, true
		w.events["split: the Job made a directory"]++
		w.logf("apply: a Job makes directory %q of %s", job.Directory, job.Shared)
	}
	return nil
}

func (w *world) SplitVolume(_ context.Context, name string) (*migration.SplitVolume, error) {
	if err := w.between(); err != nil {
		return nil, err
	}
	v := w.vols[name]
	if v == nil || v.gone {
		return nil, nil
	}
	out := &migration.SplitVolume{ClaimRefName: v.ref.Name, ClaimRefUID: v.refUID, Phase: v.phase}
	if v.split != nil {
		rec := *v.split
		out.Record = &rec
	}
	return out, nil
}

// CreateSplitVolume makes the volume on the directory src names, an alias
// of that directory of the shared claim's volume.
func (w *world) CreateSplitVolume(_ context.Context, rec migration.SplitRecord, src migration.VolumeSource, spec claims.Spec, claimUID string) error {
	if err := w.between(); err != nil {
		return err
	}
	if v := w.vols[rec.Volume]; v != nil && !v.gone {
		return claims.ErrExists
	}
	dir, ok := strings.CutPrefix(src.HostPath, sharedHostPath+"/")
	base := w.volOf(hubRef(rec.Shared))
	switch {
	case !ok || base == nil || base.dirs == nil:
		w.violation("the move of %s made volume %s on %+v, not a directory of the shared claim", rec.User, rec.Volume, src)
		return fmt.Errorf("bad source")
	case dir != rec.Directory:
		w.violation("the move of %s made volume %s on directory %q, its record says %q", rec.User, rec.Volume, dir, rec.Directory)
	case !base.dirs[dir]:
		w.violation("the move of %s made volume %s on directory %q, which does not exist (it would not mount)", rec.User, rec.Volume, dir)
	}
	r := rec
	v := &volume{name: rec.Volume, files: map[string]file{}, policy: "Retain", phase: "Available", ref: claims.Ref{Namespace: rec.Namespace, Name: rec.Claim},
		refUID: claimUID, modes: []string{spec.Mode}, split: &r, base: base, baseDir: dir, reservedUID: claimUID}
	w.vols[v.name] = v
	w.logf("apply: created volume %s on directory %q, reserved for %s (%s)", v.name, dir, v.ref, claimUID)
	return nil
}

func (w *world) SplitClaim(_ context.Context, namespace, name string) (*migration.SplitClaim, error) {
	if err := w.between(); err != nil {
		return nil, err
	}
	m := w.claims[claims.Ref{Namespace: namespace, Name: name}]
	if m == nil {
		return nil, nil
	}
	out := &migration.SplitClaim{UID: m.c.UID, Phase: m.c.Phase, VolumeName: m.c.VolumeName,
		Copied: m.c.Annotations[migration.SplitCopiedAnnotation], Deleting: m.c.Deleting}
	if a := m.c.Annotations[migration.SplitAnnotation]; a != "" {
		if rec, err := migration.DecodeSplitRecord(a); err == nil {
			out.Record = &rec
		}
	}
	return out, nil
}

func (w *world) CreateSplitClaim(_ context.Context, rec migration.SplitRecord, spec claims.Spec) error {
	if err := w.between(); err != nil {
		return err
	}
	ref := claims.Ref{Namespace: spec.Namespace, Name: spec.Name}
	if w.claims[ref] != nil {
		return claims.ErrExists
	}
	m := &mclaim{c: claims.Claim{Name: spec.Name, Namespace: spec.Namespace, UID: w.uid(), Username: spec.User, AccessModes: []string{spec.Mode},
		Requested: spec.Size, RequestedBytes: gi(spec.Size), VolumeName: rec.Volume, Phase: "Pending",
		Annotations: map[string]string{kubespawner.AnnotationUsername: spec.User, migration.SplitAnnotation: rec.Encode()},
		Labels:      map[string]string{kubespawner.LabelUsername: spec.User}}}
	w.claims[ref] = m
	w.logf("apply: created %s (%s), Pending, for volume %s", ref, m.c.UID, rec.Volume)
	return nil
}

var _ Splits = (*world)(nil)

// runSplit is the provider's split for one home (splitJob).
func (w *world) runSplit(ctx context.Context, cfg safety.Config, up safety.UserPlan) (migration.Step, error) {
	dir, _ := kubespawner.Expand(cfg.SplitFrom.SubPathTemplate, up.User, "", cfg.Scheme)
	spec := SpecFor(claims.Spec{Mode: cfg.AccessMode, Size: cfg.Capacity}, up)
	job := migration.Split{User: up.User, Shared: cfg.SplitFrom.Claim, Directory: dir, Spec: spec, UID: 1000, GID: 100, Mode: "0700", Image: "busybox"}
	return SplitRunner{Cluster: w, AfterStep: w.afterSplitStep}.Split(ctx, job)
}

// afterSplitStep: after each op of a move the moved user's server may
// start (the hub decides as the cluster is now), write or stop, and the
// apply may be killed.
func (w *world) afterSplitStep(user string, op migration.Op) error {
	return w.afterMoveStep("split: ", user, op)
}

// afterMoveStep is afterSplitStep of a move, its events prefixed.
func (w *world) afterMoveStep(prefix, user string, op migration.Op) error {
	w.events[prefix+string(op)]++
	if w.afterOp != nil {
		w.afterOp(user, op)
	}
	if w.calm || !w.interleave {
		return nil
	}
	switch w.r.IntN(4) {
	case 0, 1:
		w.spawn(user)
	case 2:
		w.write(user)
	default:
		w.stop(user)
	}
	if w.killAt > 0 && w.r.IntN(3) == 0 {
		w.killed = true
		w.events[prefix+"killed after "+string(op)]++
		w.logf("apply: killed after the move's %s", op)
		return errKilled
	}
	return nil
}

// checkSplits: every split volume is there, Retain, on the directory its
// record names, and bound to no claim but the one it was reserved for.
func (w *world) checkSplits(when string) {
	for _, v := range w.sortedVols() {
		if v.split == nil {
			continue
		}
		switch {
		case v.gone:
			w.violation("after %s split volume %s is gone", when, v.name)
		case v.policy != "Retain":
			w.violation("after %s split volume %s has reclaim policy %s", when, v.name, v.policy)
		case v.baseDir != v.split.Directory || v.base != w.volOf(w.sharedRef):
			w.violation("after %s split volume %s is on %q, its record names %q", when, v.name, v.baseDir, v.split.Directory)
		}
		for _, ref := range slices.SortedFunc(maps.Keys(w.claims), cmpRef) {
			m := w.claims[ref]
			if m.c.VolumeName == v.name && m.c.Phase == "Bound" && m.c.UID != v.reservedUID {
				w.violation("after %s claim %s (%s) is bound to split volume %s, which was reserved for UID %s", when, ref, m.c.UID, v.name, v.reservedUID)
			}
		}
	}
}

// checkMount is the invariant that the hub never mounts for who a claim
// in place of who's directory without what the directory held: at is the
// home the hub mounts now.
func (w *world) checkMount(who string, at loc) {
	now := w.canon(at)
	seen, ok := w.lastHome[who]
	prev := seen.canon
	w.lastHome[who] = seenHome{at, now}
	if p := w.applying; ok && prev != now && prev.dir != "" && now.dir != "" && at.dir == "" && p != nil && p.prior == nil && w.interleave {
		// A move's claim (another directory's) mounted in the window of an
		// apply whose plan had no state: the documented limit below.
		w.events["LIMIT: split: a home left after state rm (a switch from the shared layout after state rm is not seen)"]++
		w.logf("check: the hub mounts %s for %s, whose home was %s, during an apply whose plan had no state (documented limit)", at, who, prev)
		w.reportedHomes = append(w.reportedHomes, prev)
		return
	}
	if !ok || prev == now || prev.dir == "" || now.dir != "" {
		return
	}
	if m := w.claims[at.ref]; m != nil && m.c.Annotations[migration.CopyOfAnnotation] != "" {
		return // a copy's new claim: the copy's verification and the end check
	}
	have := map[string]bool{}
	for _, f := range w.filesAt(now) {
		have[f.content] = true
	}
	bv, _ := w.resolve(prev)
	var missing []string
	for path, f := range w.filesAt(prev) {
		c := f.content
		if have[c] || w.superseded[c] || w.excused[c] || w.reported[c] {
			continue
		}
		named := false
		for _, h := range w.reportedHomes {
			named = named || w.in(h, bv, path)
		}
		if !named {
			missing = append(missing, c)
		}
	}
	if len(missing) == 0 {
		return
	}
	slices.Sort(missing)
	if p := w.applying; p != nil && p.prior == nil {
		// The apply's plan had no state: a switch from the shared layout
		// (or the move out of it) after state rm is not seen (DESIGN.md's
		// limits).
		w.events["LIMIT: split: a home left after state rm (a switch from the shared layout after state rm is not seen)"]++
		w.logf("check: the hub mounts %s for %s, whose home was %s, under a plan without a state (documented limit)", at, who, prev)
		for _, c := range missing {
			w.reported[c] = true
		}
		w.reportedHomes = append(w.reportedHomes, prev)
		return
	}
	if p := w.applying; p != nil && w.interleave && p.cfg.OnLayoutChange == safety.OnLayoutChangeKeep && warnsOf(p.res, strings.Split(who, "/")[0]) {
		// The apply under way made the claim its plan named as the user's
		// new home (on_layout_change = "keep": the old one stays, not
		// mounted), and the hub of the last apply mounts it at once.
		w.events["shared: keep: a home the plan named mounted during its apply"]++
		for _, c := range missing {
			w.reported[c] = true
		}
		w.reportedHomes = append(w.reportedHomes, prev)
		return
	}
	if strings.Contains(who, "/") {
		// A named server: the hub's rule in this layout is stated for
		// default servers; the planner names claims of default servers
		// only. Counted (see the report), left to the end check.
		w.events["NAMED SERVER: a claim mounted in place of its directory, not named"]++
		w.logf("check: the hub mounts %s for named server %s, whose home was %s (left to the end check)", at, who, prev)
		return
	}
	w.violation("the hub mounts %s for %s, whose home was %s: %d content(s) of it are not there (%s), and no plan named them",
		at, who, prev, len(missing), missing[0])
}

// checkPlanOverSplit: a plan that passed never creates a claim that an
// unfinished move reserved a volume for.
func (w *world) checkPlanOverSplit(p plan) {
	for up := range p.res.All() {
		if up.Action != safety.ActionCreate && up.Action != safety.ActionRecreate {
			continue
		}
		for _, v := range w.sortedVols() {
			if v.split != nil && !v.gone && v.phase != "Bound" && v.phase != "Released" && v.ref == up.Ref() {
				w.violation("a plan that passed %ss %s, for which the unfinished move's volume %s is reserved (UID %s)", up.Action, up.Ref(), v.name, v.reservedUID)
			}
		}
	}
}

// splitTo is the directory a claim carrying a move's record will be once
// bound to its volume (the binder binds it to no other).
func (w *world) splitTo(ref claims.Ref) (loc, bool) {
	m := w.claims[ref]
	if m == nil || m.c.Annotations[migration.SplitAnnotation] == "" {
		return loc{}, false
	}
	rec, err := migration.DecodeSplitRecord(m.c.Annotations[migration.SplitAnnotation])
	if err != nil {
		return loc{}, false
	}
	return loc{claims.Ref{Namespace: rec.Namespace, Name: rec.Shared}, rec.Directory}, true
}

// probeMounts: after an apply, each server's home as the hub would mount
// it at a spawn now (checkMount).
func (w *world) probeMounts() {
	for _, who := range w.users {
		if at, create, refused := w.hubLoc(who); !create && refused == "" && w.volOf(at.ref) != nil {
			w.checkMount(who, at)
		}
	}
}

// lastHomes are the homes each server last mounted (lastHome), with what
// they hold now: a home written during an apply by a server that its
// end refuses is checked too (checkMoves).
func (w *world) lastHomes() map[string]homeSnap {
	out := map[string]homeSnap{}
	for _, who := range slices.Sorted(maps.Keys(w.lastHome)) {
		at := w.lastHome[who].at
		v := w.volOf(at.ref)
		if v == nil {
			continue
		}
		bv, _ := w.resolve(at)
		files := w.filesAt(at)
		for path, f := range files {
			named := w.reported[f.content]
			for _, h := range w.reportedHomes {
				named = named || w.in(h, bv, path)
			}
			if named { // a plan named it where it is: not a home's any more
				delete(files, path)
			}
		}
		out[who] = homeSnap{at, v, files, w.canon(at)}
	}
	return out
}

// seenHome is a home the hub mounted: as it named it, and as the files it
// held then (canon).
type seenHome struct{ at, canon loc }

var undoAdvice = regexp.MustCompile(`undo it: delete claim ([^/ ]+)/([^ ]+) and volume ([^ ]+) `)

// undoSplits is the operator undoing an unfinished move as a plan's error
// says: the servers on the claim stop, the claim and the volume are
// deleted (Retain: the directory stays); the user's next spawn mounts the
// directory again.
func (w *world) undoSplits() {
	for _, e := range w.errs {
		for _, m := range undoAdvice.FindAllStringSubmatch(e, -1) {
			ref := claims.Ref{Namespace: m[1], Name: m[2]}
			mc, v := w.claims[ref], w.vols[m[3]]
			if mc == nil || mc.c.Annotations[migration.SplitAnnotation] == "" || v == nil || v.split == nil {
				continue
			}
			w.logf("operator: undoes the move of %s as the error says: deletes %s and volume %s", v.split.User, ref, v.name)
			w.events["operator undid a move as an error says"]++
			for who, p := range w.pods {
				if p.ref == ref {
					w.stop(who)
				}
			}
			if mc = w.claims[ref]; mc != nil {
				w.deleteClaim(mc, "by the operator, as the error says")
			}
			delete(w.vols, v.name)
		}
	}
}

// rebinding: a rebind in progress has deleted claim ref and not yet made
// it again (a volume carries its record).
func (w *world) rebinding(ref claims.Ref) bool {
	for _, v := range w.vols {
		if !v.gone && v.record != nil && v.record.Namespace == ref.Namespace && v.record.Claim == ref.Name {
			return true
		}
	}
	return false
}

// killedMoves: an apply killed part-way switched no hub configuration, but
// while homes move out of the shared layout what it made (a move's claim,
// a created claim) changes what the hub mounts at once: the homes as the
// apply began, and as last mounted, are checked as after an apply.
func (w *world) killedMoves(p plan, before map[string]homeSnap) {
	if w.hub.split == nil {
		return
	}
	w.killed = false // the checks read the cluster, no apply call
	defer func() { w.killed = true }()
	w.checkMoves(p, before, w.hub)
	w.checkMoves(p, w.lastHomes(), w.hub)
	w.probeMounts()
}
