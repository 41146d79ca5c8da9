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

// The history model's merges (consolidation: safety.Config.MergeInto,
// layout = "shared" with on_layout_change = "migrate"): per-user claims
// copied into their users' directories of the shared claim. Half the
// shared histories (drawn apart, so that the others stay as they were)
// have them: two thirds of their shared layouts are a merge instead
// (copy_image set, batch_size 0 to 2), so that histories reach the merge
// from the per-user layout and from the move out of the shared layout,
// and leave it for the shared layout (fail, keep), the move out and the
// per-user layout.
//
// The world implements execute.Merges: the directory Job (made in the
// call, as PrepareDirectory) refuses a directory that holds anything, or
// an earlier place of the home that does, with the script's words; the
// record and the mark are written only over the claim of the record's
// UID, not being deleted, carrying no other record or mark; the copy Job
// is a pod mounting the claim (read-only) and directory dir of the shared
// claim, which the Job controller (at any call of an apply, between the
// operator's actions, at WaitJob, in the settle phase) ends by copying the
// claim's files as they are then into the directory (rsync -a --delete,
// verified: the Job succeeds), across kills and past WaitJob's timeout.
// MergeUsers lists the servers on the claim or a related directory and the
// running Jobs on either, but the merge's own. The plan reads the
// directories pods use (Live.DirectoriesInUse) as internal/kube's
// SharedDirectoryUse does: a merge's copy Job counts, the directory Jobs
// and the moves' copy Jobs do not.
//
// The hub (mergeHub; hub_config.py's rule): with the fallback (moving out
// of or into the shared layout: splitLoc), a claim that carries a merge's
// record or mark refuses the spawn until it carries MergedAnnotation
// equal to its own UID and its record names that UID (migration.Merged),
// and then the server mounts the user's directory, as for a missing
// claim; the per-user layout's hub (hubHome) refuses a claim that carries
// a mark and mounts one with a record only; the shared layout's reads no
// claim. The rule is read on the claim the template names (a copy's new
// claim, which the hub may mount instead, never carries a merge's record:
// the planner merges template claims only).
//
// The operator does what the errors say: moves a refusing directory's
// files away while the claim is still to be merged (to a directory of its
// own on the shared claim, which counts as named from then on), and undoes an unfinished merge by removing its
// record (a copy Job still running goes on).
//
// The checks (besides the others, which hold in every layout):
//   - at the mark, the directory holds every file the claim holds (the
//     merged user's home is the directory from then on), no server uses
//     the claim, and the copy Job whose success the mark follows was
//     started under this very record (not under one an operator removed
//     since: the user may have written to the claim meanwhile);
//   - a copy Job never writes into a directory a server uses, into one
//     that holds another user's files, into the home of a claim marked
//     merged, nor copies another user's files; what its --delete drops
//     from the directory must be held elsewhere;
//   - an apply that the hub follows carries each server's home into the
//     home the hub gives after it (checkMoves): a merged user's directory
//     must hold what the claim held; while a merge is under way (the spawn
//     refused) the claim is still the home;
//   - the operator never moves away, as an error says, the files of a
//     directory that is a server's home;
//   - the shared claim is never deleted (RemoveClaim, checkShared);
//   - a stopped apply converges: after the settle phase with a merge's
//     configuration whose last plan passed and last apply had no error,
//     every listed user's claim is merged, or is a volume on the user's
//     directory (checkMergesSettled).
//
// Known gap (counted, not a violation): a home copied to a claim of
// another name (a migration by copy) is never merged.
//
// Not modelled: a copy Job that fails (NextMerge's error), a restore that
// makes a merged claim again, earlier places of a home (the model records
// none: Merge.Earlier is always empty), symbolic links, the directory's
// owner and mode.

// mergeDraws are a merge history's own draws, and the last merge
// configuration it drew.
type mergeDraws struct {
	r    *rand.Rand
	last *safety.Config
}

// gen makes c a merge into the shared layout: two thirds of the shared
// layouts, a quarter of the others; half the time the last one again (an
// operator applies a merge until it is done: the first apply only gives
// the hub its settings, batch_size leaves users for later), under
// slug_scheme "safe" and mostly ReadWriteMany (the shared claim's).
func (d *mergeDraws) gen(c *safety.Config, perUserNS bool) {
	r := d.r
	if c.Shared != nil && r.IntN(3) == 0 || c.Shared == nil && r.IntN(4) > 0 {
		return
	}
	if d.last != nil && r.IntN(2) == 0 {
		*c = *d.last
		c.Users = slices.Clone(c.Users)
		return
	}
	if c.Shared == nil {
		c.Shared = &safety.SharedHome{Claim: sharedClaim, SubPathTemplate: sharedTemplates[r.IntN(len(sharedTemplates))]}
		c.SplitFrom, c.UserNamespaceTemplate, c.Scheme = nil, "", kubespawner.SchemeEscape
	}
	c.MergeInto, c.Shared = c.Shared, nil
	c.OnLayoutChange = safety.OnLayoutChangeMigrate
	c.Migration.BatchSize = r.IntN(3)
	// The per-user layout's claims: KubeSpawner named them under "safe"
	// (the model's hub does not remember a claim's name: a scheme that
	// named them otherwise would be a change the real hub does not make).
	c.Scheme = kubespawner.SchemeSafe
	if r.IntN(8) > 0 {
		c.AccessMode = claims.RWX
	}
	if perUserNS {
		// The history's per-user claims are in users' namespaces, which
		// shared_home refuses; a template without a user field would give
		// every user one claim in one namespace.
		c.NameTemplate = "claim-{username}"
	}
	if strings.Contains(c.NameTemplate, "{user_server}") {
		// Named servers have claims of their own: a directory of their own
		// too (checkMergeInto refuses the default server's).
		c.MergeInto.SubPathTemplate = []string{"{user_server}", "home/{user_server}"}[r.IntN(2)]
	}
	last := *c
	last.Users = slices.Clone(c.Users)
	d.last = &last
}

// carriesMerge reports whether claim m carries a merge's record or mark.
func carriesMerge(m *mclaim) bool {
	return m.c.Annotations[migration.MergeAnnotation] != "" || m.c.Annotations[migration.MergedAnnotation] != ""
}

// mergeRefused is the hub's rule with the fallback for a claim that
// carries a merge's record or mark: "" when merged (the directory is
// mounted), else why the spawn is refused.
func mergeRefused(m *mclaim) string {
	if migration.Merged(m.c.Annotations, m.c.UID) {
		return ""
	}
	return "claim " + m.c.Name + " is being merged into the shared claim"
}

// runMerge is the provider's mergeJob for one home.
func (w *world) runMerge(ctx context.Context, cfg safety.Config, up safety.UserPlan, uid string) (migration.Step, error) {
	dir, _ := kubespawner.Expand(cfg.MergeInto.SubPathTemplate, up.User, "", cfg.Scheme)
	job := migration.Merge{User: up.User, Namespace: up.Namespace, Claim: up.ClaimName, ClaimUID: uid, Shared: cfg.MergeInto.Claim, Directory: dir,
		Earlier: safety.MovedDirectories(w.fresh.MovedFrom, up.User), UID: 1000, GID: 100, Mode: "0700", Image: "busybox", CopyImage: cfg.Migration.CopyImage}
	return SplitRunner{Cluster: w, AfterStep: w.afterMergeStep}.Merge(ctx, job)
}

func (w *world) afterMergeStep(user string, op migration.Op) error {
	return w.afterMoveStep("merge: ", user, op)
}

// The Merges the executor works on (SharedClaimUID, PrepareDirectory,
// WaitJob and DeleteJob are the world's DirectoryCopies', Splits' and
// Migrations').

func (w *world) MergeClaim(_ context.Context, namespace, name string) (*migration.MergeClaim, error) {
	if err := w.between(); err != nil {
		return nil, err
	}
	m := w.claims[claims.Ref{Namespace: namespace, Name: name}]
	if m == nil {
		return nil, nil
	}
	out := &migration.MergeClaim{UID: m.c.UID, Merged: m.c.Annotations[migration.MergedAnnotation], Deleting: m.c.Deleting}
	if v := m.c.Annotations[migration.MergeAnnotation]; v != "" {
		if rec, err := migration.DecodeMergeRecord(v); err != nil {
			out.Unreadable = true
		} else {
			out.Record = &rec
		}
	}
	return out, nil
}

func (w *world) MergeUsers(_ context.Context, namespace, shared string, dirs []string, claim string) ([]string, error) {
	if err := w.between(); err != nil {
		return nil, err
	}
	return w.directoryUsers(namespace, shared, dirs, claim, migration.MergeJobName(claim)), nil
}

// holds reports whether directory dir of the shared claim's volume v holds
// anything (a file, or a directory made in it).
func holds(v *volume, dir string) bool {
	for path := range v.files {
		if strings.HasPrefix(path, dir+"/") {
			return true
		}
	}
	for d := range v.dirs {
		if strings.HasPrefix(d, dir+"/") {
			return true
		}
	}
	return false
}

// PrepareMergeDirectory is the merge's directory Job
// (kubespawner.MergeDirectoryCommand), run to its end: a directory or an
// earlier place that holds anything is refused with the script's words,
// a missing directory made.
func (w *world) PrepareMergeDirectory(_ context.Context, job migration.Merge) error {
	if err := w.between(); err != nil {
		return err
	}
	v := w.volOf(claims.Ref{Namespace: job.Namespace, Name: job.Shared})
	if v == nil || v.dirs == nil {
		return fmt.Errorf("the shared claim %s is not bound", job.Shared)
	}
	refuse := func(why string) error {
		w.events["merge: the directory Job refused a directory that holds files"]++
		return fmt.Errorf("the Job %s/home-directory-%s that makes directory %q of %s failed (BackoffLimitExceeded): %s; nothing was recorded on claim %s/%s. Fix the cause and apply again",
			job.Namespace, job.Claim, job.Directory, job.Shared, why, job.Namespace, job.Claim)
	}
	d := kubespawner.SharedRoot + "/" + job.Directory
	if holds(v, job.Directory) {
		return refuse(fmt.Sprintf("refusing to merge into %s: it holds files already; a merge copies into an empty directory only. Move them away (or remove them if they are not needed) and apply again", d))
	}
	for _, e := range job.Earlier {
		if e != job.Directory && holds(v, e) {
			return refuse(fmt.Sprintf("refusing to merge into %s: an earlier place of the home, %s/%s, holds files (the hub would find the home at two places). Move what is needed and remove it, then apply again",
				d, kubespawner.SharedRoot, e))
		}
	}
	if !v.dirs[job.Directory] {
		v.dirs[job.Directory], w.sharedDirs[job.Directory] = true, true
		w.events["merge: the Job made a directory"]++
		w.logf("apply: a Job makes directory %q of %s for the merge of %s", job.Directory, job.Shared, job.Claim)
	}
	return nil
}

// mergeClaimOf is the claim a merge's record or mark is written on, as
// internal/kube's patch finds it: an error when it is gone, made again
// (another UID) or being deleted.
func (w *world) mergeClaimOf(rec migration.MergeRecord, what string) (*mclaim, error) {
	ref := claims.Ref{Namespace: rec.Namespace, Name: rec.Claim}
	m := w.claims[ref]
	switch {
	case m == nil:
		return nil, fmt.Errorf("claim %s is gone; not %s", ref, what)
	case rec.ClaimUID == "" || m.c.UID != rec.ClaimUID:
		return nil, fmt.Errorf("claim %s was made again (UID %s, the merge is of %s); not %s", ref, m.c.UID, rec.ClaimUID, what)
	case m.c.Deleting:
		return nil, fmt.Errorf("claim %s is being deleted; not %s", ref, what)
	}
	if m.c.Annotations == nil {
		m.c.Annotations = map[string]string{}
	}
	return m, nil
}

func (w *world) RecordMerge(_ context.Context, rec migration.MergeRecord) error {
	if err := w.between(); err != nil {
		return err
	}
	m, err := w.mergeClaimOf(rec, "recorded")
	if err != nil {
		return err
	}
	ann := m.c.Annotations
	switch {
	case ann[migration.MergeAnnotation] == rec.Encode() && ann[migration.MergedAnnotation] == "":
		return nil
	case ann[migration.MergeAnnotation] != "" || ann[migration.MergedAnnotation] != "":
		return fmt.Errorf("claim %s carries another merge's record or mark; nothing recorded", m.c.Ref())
	}
	if m.c.Username != rec.User {
		w.violation("the merge of %s's home was recorded on %s, %q's claim", rec.User, m.c.Ref(), m.c.Username)
	}
	ann[migration.MergeAnnotation] = rec.Encode()
	w.mergeGen[m.c.UID]++
	w.logf("apply: records the merge of %s (%s) into directory %q of %s", m.c.Ref(), m.c.UID, rec.Directory, rec.Shared)
	return nil
}

func (w *world) MergeJob(_ context.Context, namespace, claim string) (*migration.Job, error) {
	return w.copyJob(namespace, migration.MergeJobName(claim))
}

// StartMergeJob replaces any Job of its name (its pod gone first) by the
// copy Job: its pod mounts the claim of that name and the directory.
func (w *world) StartMergeJob(_ context.Context, job migration.Merge, claimUID string) error {
	if err := w.between(); err != nil {
		return err
	}
	ref := claims.Ref{Namespace: job.Namespace, Name: migration.MergeJobName(job.Claim)}
	src := claims.Ref{Namespace: job.Namespace, Name: job.Claim}
	j := &wjob{merge: true, src: src, dst: claims.Ref{Namespace: job.Namespace, Name: job.Shared}, dir: job.Directory, claimUID: claimUID, user: job.User, gen: -1}
	if m := w.claims[src]; m != nil && m.c.UID == claimUID && m.c.Annotations[migration.MergeAnnotation] != "" {
		j.gen = w.mergeGen[claimUID]
	}
	w.jobs[ref] = j
	w.events["merge: a copy Job started"]++
	w.logf("apply: merge Job %s starts: %s (%s) into directory %q of %s", ref.Name, src, claimUID, job.Directory, job.Shared)
	return nil
}

func (w *world) MarkMerged(_ context.Context, rec migration.MergeRecord) error {
	if err := w.between(); err != nil {
		return err
	}
	m, err := w.mergeClaimOf(rec, "marked merged")
	if err != nil {
		return err
	}
	ann := m.c.Annotations
	switch {
	case ann[migration.MergeAnnotation] != rec.Encode():
		return fmt.Errorf("the record on claim %s changed since the merge began; not marked merged", m.c.Ref())
	case ann[migration.MergedAnnotation] == rec.ClaimUID:
		return nil
	case ann[migration.MergedAnnotation] != "":
		return fmt.Errorf("claim %s carries another merged mark; not marked merged", m.c.Ref())
	}
	w.checkMark(m, rec)
	ann[migration.MergedAnnotation] = rec.ClaimUID
	w.logf("apply: marks %s (%s) merged into directory %q", m.c.Ref(), m.c.UID, rec.Directory)
	return nil
}

var _ Merges = (*world)(nil)

// checkMark: the directory claim m is marked merged into holds every file
// the claim holds, no server uses the claim, and the copy Job was started
// under this record.
func (w *world) checkMark(m *mclaim, rec migration.MergeRecord) {
	ref := m.c.Ref()
	for _, who := range slices.Sorted(maps.Keys(w.pods)) {
		if w.pods[who].ref == ref {
			w.violation("claim %s was marked merged while %s's server uses it (what it writes there is in no home)", ref, who)
		}
	}
	if j := w.jobs[claims.Ref{Namespace: rec.Namespace, Name: migration.MergeJobName(rec.Claim)}]; j == nil || j.gen != w.mergeGen[m.c.UID] {
		w.violation("claim %s was marked merged after a copy Job started under another record than this merge's (or none): what was written to the claim since that Job began may be missing from the directory", ref)
	}
	v, sv := w.volOf(ref), w.volOf(claims.Ref{Namespace: rec.Namespace, Name: rec.Shared})
	if v == nil || sv == nil {
		w.violation("claim %s was marked merged, and it or the shared claim has no volume", ref)
		return
	}
	files := w.view(v)
	for _, path := range slices.Sorted(maps.Keys(files)) {
		f := files[path]
		if sv.files[rec.Directory+"/"+path] != f && !w.superseded[f.content] {
			w.violation("claim %s was marked merged, and directory %q lacks its file %s (%s)", ref, rec.Directory, path, f.content)
			return
		}
	}
	w.events["merge: marked, the directory holds the claim"]++
}

// finishMerge ends a merge's copy Job: the claim's files, as they are
// now, copied into the directory (rsync -a --delete).
func (w *world) finishMerge(ref claims.Ref, j *wjob) {
	j.done = true
	defer w.releaseDeleting(j.src)
	m := w.claims[j.src]
	if m == nil || m.c.UID != j.claimUID {
		w.violation("merge Job %s ran with no claim %s of UID %s", ref.Name, j.src, j.claimUID)
		return
	}
	src, dst := w.volOf(j.src), w.volOf(j.dst)
	if src == nil || dst == nil {
		return
	}
	if dst.dirs == nil || j.dst != w.sharedRef {
		w.violation("merge Job %s wrote into %s, not the shared claim", ref.Name, j.dst)
		return
	}
	if migration.Merged(m.c.Annotations, m.c.UID) {
		w.violation("merge Job %s wrote into directory %q, the home of %s since %s was marked merged", ref.Name, j.dir, j.user, j.src)
	}
	for _, who := range slices.Sorted(maps.Keys(w.pods)) {
		p := w.pods[who]
		if bv, d := w.resolve(loc{p.ref, p.dir}); bv == dst && relatedDir(d, j.dir) {
			w.violation("merge Job %s wrote into directory %q while %s's server uses %s", ref.Name, j.dir, who, loc{p.ref, p.dir})
		}
	}
	prefix := j.dir + "/"
	files := map[string]file{}
	for path, f := range w.view(src) {
		files[prefix+path] = f
		if o := w.owner[f.content]; o != "" && strings.Split(o, "/")[0] != j.user {
			w.violation("merge Job %s copied %s's file %s from %s into %s's directory %q", ref.Name, o, f.content, j.src, j.user, j.dir)
		}
	}
	var gone []string
	for _, path := range slices.Sorted(maps.Keys(dst.files)) {
		f := dst.files[path]
		if !strings.HasPrefix(path, prefix) {
			continue
		}
		if o := w.owner[f.content]; o != "" && strings.Split(o, "/")[0] != j.user {
			w.violation("merge Job %s wrote into directory %q, which holds %s's file %s", ref.Name, j.dir, o, f.content)
		}
		if files[path] != f {
			gone = append(gone, f.content)
		}
		delete(dst.files, path)
	}
	maps.Copy(dst.files, files)
	if !dst.dirs[j.dir] { // kubelet makes a missing subPath
		dst.dirs[j.dir], w.sharedDirs[j.dir] = true, true
	}
	w.dropped(gone, false, "written over by merge Job "+ref.Name+" into directory "+j.dir)
	w.events["merge: a copy Job ended"]++
	if !w.interleave {
		w.events["merge: a copy Job ended between applies"]++
	}
	w.logf("controller: merge Job %s copied %d file(s) of %s into directory %q", ref.Name, len(files), j.src, j.dir)
}

// sharedDirectoryUse is internal/kube's SharedDirectoryUse: the sub-paths
// of the shared claim that unfinished pods mount, but the directory Jobs'
// and the moves' copy Jobs' (a merge's copy Job counts).
func (w *world) sharedDirectoryUse(shared claims.Ref) migration.DirectoryUse {
	var subs []string
	for _, p := range w.pods {
		if p.ref == shared {
			subs = append(subs, p.dir)
		}
	}
	for _, j := range w.jobs {
		if j.running() && j.merge && j.dst == shared {
			subs = append(subs, j.dir)
		}
	}
	return migration.NewDirectoryUse(subs)
}

var (
	moveAwayAdvice  = regexp.MustCompile(`refusing to merge into ` + regexp.QuoteMeta(kubespawner.SharedRoot) + `/([^ :]+): it holds files already.*?nothing was recorded on claim ([^/ ]+)/([^ .]+)`)
	undoMergeAdvice = regexp.MustCompile(`remove annotation ` + regexp.QuoteMeta(migration.MergeAnnotation) + ` from claim ([^/ ]+)/([^ :(]+)`)
)

// mergeAdvice is the operator doing what the errors say of merges: the
// files of a directory a merge refuses are moved away (to a directory of
// their own, named from then on), an unfinished merge is undone (its
// record removed; a copy Job still running goes on).
func (w *world) mergeAdvice() {
	done := map[string]bool{}
	for _, e := range w.errs {
		for _, m := range moveAwayAdvice.FindAllStringSubmatch(e, -1) {
			// Only while the claim is still to be merged: an operator reads
			// the error before acting on it.
			c := w.claims[claims.Ref{Namespace: m[2], Name: m[3]}]
			if !done[m[1]] && c != nil && !carriesMerge(c) {
				done[m[1]] = true
				w.moveAway(m[1])
			}
		}
		for _, m := range undoMergeAdvice.FindAllStringSubmatch(e, -1) {
			w.undoMerge(claims.Ref{Namespace: m[1], Name: m[2]})
		}
	}
}

// moveAway moves the files of directory dir of the shared claim to a
// directory of their own.
func (w *world) moveAway(dir string) {
	v := w.volOf(w.sharedRef)
	if v == nil || v.dirs == nil || !holds(v, dir) {
		return
	}
	for _, who := range w.users {
		if at, create, refused := w.hubLoc(who); !create && refused == "" {
			if bv, d := w.resolve(at); bv == v && relatedDir(d, dir) {
				w.violation("an error tells the operator to move away the files of directory %q, which is %s's home (the hub mounts %s)", dir, who, at)
			}
		}
	}
	w.nextAway++
	away := fmt.Sprintf("moved-away-%d", w.nextAway)
	for _, path := range slices.Sorted(maps.Keys(v.files)) {
		if strings.HasPrefix(path, dir+"/") {
			v.files[away+"/"+path] = v.files[path]
			delete(v.files, path)
		}
	}
	for _, d := range slices.Sorted(maps.Keys(v.dirs)) {
		if strings.HasPrefix(d, dir+"/") {
			w.sharedDirs[away+"/"+d], v.dirs[away+"/"+d] = true, true
			delete(v.dirs, d)
			delete(w.sharedDirs, d)
		}
	}
	w.sharedDirs[away], v.dirs[away] = true, true
	w.reportedHomes = append(w.reportedHomes, loc{w.sharedRef, away})
	w.events["merge: operator moved a directory's files away as an error says"]++
	w.logf("operator: moves the files of directory %q away to %q, as the error says", dir, away)
}

// undoMerge removes an unfinished merge's record from claim ref, as an
// error says: the claim is the home again.
func (w *world) undoMerge(ref claims.Ref) {
	m := w.claims[ref]
	if m == nil || m.c.Annotations[migration.MergeAnnotation] == "" || migration.Merged(m.c.Annotations, m.c.UID) {
		return
	}
	delete(m.c.Annotations, migration.MergeAnnotation)
	w.mergeGen[m.c.UID]++
	w.events["operator undid a merge as an error says"]++
	w.logf("operator: removes the merge's record from %s, as the error says", ref)
}

// checkMergesSettled: after the settle phase with a merge's configuration
// whose last plan passed and whose last apply had no error, every listed
// user's claim is merged.
func (w *world) checkMergesSettled(cfg safety.Config, last plan) {
	if cfg.MergeInto == nil || w.failed || len(last.res.Errors) > 0 || len(w.errs) > 0 {
		return
	}
	w.events["merge: settled"]++
	for _, u := range cfg.Users {
		name, err := kubespawner.Expand(cfg.NameTemplate, u, "", cfg.Scheme)
		if err != nil {
			continue
		}
		ref := hubRef(name)
		m := w.claims[ref]
		if m == nil || m.c.Username != u || migration.Merged(m.c.Annotations, m.c.UID) || safety.InMergeDirectory(cfg, u, &m.c, w.sharedUID) {
			continue // merged, or a volume on the directory already
		}
		if m.c.Annotations[migration.CopyAnnotation] != "" {
			// Known gap: a home copied to a claim of another name (on_mode_change
			// "migrate" by copy) is planned as copied, never merged, and no
			// finding says so; leaving the merge for the shared layout names
			// it (TestHistory_mergeLeavesACopiedHome). Counted.
			w.events["GAP: merge: a copied home is never merged"]++
			continue
		}
		why := ""
		for up := range last.res.All() {
			if up.User == u && up.Server == "" {
				why = fmt.Sprintf("%s: %s", up.Action, up.Reason)
			}
		}
		w.violation("the merge did not converge: after settling, listed user %s's claim %s is not merged (%s)", u, ref, why)
	}
}
