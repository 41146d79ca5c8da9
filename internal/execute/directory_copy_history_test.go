package execute

import (
	"context"
	"fmt"
	"maps"
	pathpkg "path"
	"regexp"
	"slices"
	"strings"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/claims"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/kubespawner"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/migration"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/safety"
)

// The history model's move by copy out of the shared layout
// (migration.MethodDirectoryCopy): the configurations of the move
// (split_history_test.go) say migration.method "auto", "rebind" or "copy"
// (copy_image always set); a third of the shared histories have a shared
// volume that cannot be split (a Longhorn ReadWriteMany volume, which
// migration.SplitSource refuses), where "auto" moves by a copy too. The
// plan reads that source (Live.SharedSource) as the provider's readLive
// does: with on_layout_change = "migrate" only.
//
// The world implements execute.DirectoryCopies: the user's claim is made
// with the record and gets a new, empty volume of the configured class at
// once (the provisioner); the copy Job is a pod mounting the shared claim
// (subPath: the directory, read-only) and the claim, which the Job
// controller (at any call of an apply, between the operator's actions, at
// WaitJob, in the settle phase) ends by copying the files of the directory
// as they are then into the claim (rsync -a --delete, verified: the Job
// succeeds); it runs across a kill and past WaitJob's timeout, and may end
// between applies (the next apply runs it again).
// DirectoryUsers lists the servers that mount the claim or the shared
// claim at a related directory, and the running Jobs that mount either,
// but this move's own. MarkSplitCopied writes only over the claim of that
// UID, record, not being deleted. The operator undoes a move as the
// errors say (deletes the claim; pvc-protection keeps it while a pod,
// the copy Job's among them, mounts it).
//
// The hub (hub_config.py's check_split) in the move's layout: a claim
// whose record says "directory-copy" is mounted only once it carries
// migration.SplitCopiedAnnotation equal to its own UID, and refuses the
// spawn before (also when being deleted); a missing claim falls back to
// the user's directory (split_history_test.go). Outside the move's layout
// the model's hub reads no move's record and mounts any claim: harsher than
// hub_config.py, whose per-user hub refuses an unfinished move's claim too.
//
// The checks: a copied claim is the user's home, the directory it was
// copied from stale. Moving a server's home from the directory to the
// claim (checkMount, checkMoves) must carry everything the directory held,
// so content written in the directory after the copy by a pod that should
// not exist there is a violation (unless a plan named it); the end check
// (reachable) accepts a content in the stale directory when the user's
// home holds it too. Besides: no claim is marked copied while a server
// uses the directory; a copy Job never writes into a claim marked copied
// (a home), nor into one of another UID than it was started for (checked
// when it ends), and never into the directory (it only reads); what its
// --delete drops from the claim must be held elsewhere.
//
// Not modelled: a copy Job that fails (NextDirectoryCopy's error and the
// operator's retry), the directory Job's owner and mode, a storage class
// whose volumes bind on first use, several applies at once.

// longhornSource is the shared claim's volume when it cannot be split: a
// CSI driver migration.SplitSource does not know.
var longhornSource = migration.VolumeSource{CSI: &migration.CSISource{Driver: "driver.longhorn.io", Handle: "pvc-shared"}}

// sharedSource is the shared claim's volume source.
func (w *world) sharedSource() migration.VolumeSource {
	if w.sharedUnsplittable {
		return longhornSource
	}
	return migration.VolumeSource{HostPath: sharedHostPath}
}

// runDirectoryCopy is the provider's directoryCopyJob for one home.
func (w *world) runDirectoryCopy(ctx context.Context, cfg safety.Config, up safety.UserPlan) (migration.Step, error) {
	dir, _ := kubespawner.Expand(cfg.SplitFrom.SubPathTemplate, up.User, "", cfg.Scheme)
	spec := SpecFor(claims.Spec{Mode: cfg.AccessMode, Size: cfg.Capacity, Class: cfg.StorageClass}, up)
	job := migration.DirectoryCopy{User: up.User, Shared: cfg.SplitFrom.Claim, Directory: dir, Spec: spec, UID: 1000, GID: 100, Mode: "0700", Image: "busybox",
		CopyImage: cfg.Migration.CopyImage}
	return SplitRunner{Cluster: w, AfterStep: w.afterCopyStep}.DirectoryCopy(ctx, job)
}

func (w *world) afterCopyStep(user string, op migration.Op) error {
	return w.afterMoveStep("dcopy: ", user, op)
}

// The DirectoryCopies the executor works on (SplitClaim, PrepareDirectory,
// WaitJob and DeleteJob are the world's Splits' and Migrations').

func (w *world) SharedClaimUID(_ context.Context, namespace, claim string) (string, error) {
	if err := w.between(); err != nil {
		return "", err
	}
	ref := claims.Ref{Namespace: namespace, Name: claim}
	m := w.claims[ref]
	if m == nil || w.volOf(ref) == nil || w.volOf(ref).dirs == nil {
		return "", fmt.Errorf("the shared claim %s is not bound", ref)
	}
	return m.c.UID, nil
}

// relatedDir is internal/kube's related: a mount of subPath sub shows
// directory dir, or is in it.
func relatedDir(sub, dir string) bool {
	s := pathpkg.Clean(sub)
	return sub == "" || s == "." || s == dir || strings.HasPrefix(dir, s+"/") || strings.HasPrefix(s, dir+"/")
}

func (w *world) DirectoryUsers(_ context.Context, namespace, shared string, dirs []string, claim string) ([]string, error) {
	if err := w.between(); err != nil {
		return nil, err
	}
	return w.directoryUsers(namespace, shared, dirs, claim, migration.DirectoryCopyJobName(claim)), nil
}

// directoryUsers lists the servers that mount claim, or claim shared at a
// directory related to one of dirs, and the running Jobs (but own) whose
// pods mount either: internal/kube's directoryUsers.
func (w *world) directoryUsers(namespace, shared string, dirs []string, claim, own string) []string {
	sref, cref := claims.Ref{Namespace: namespace, Name: shared}, claims.Ref{Namespace: namespace, Name: claim}
	related := func(d string) bool {
		return slices.ContainsFunc(dirs, func(dir string) bool { return relatedDir(d, dir) })
	}
	var out []string
	for _, p := range w.pods {
		if p.ref == cref || p.ref == sref && related(p.dir) {
			out = append(out, "jupyter-"+strings.ReplaceAll(p.who, "/", "--"))
		}
	}
	for jref, j := range w.jobs {
		if !j.running() || jref.Namespace != namespace || jref.Name == own {
			continue
		}
		if j.src == cref || j.dst == cref || (j.src == sref || j.dst == sref) && (j.dir == "" || related(j.dir)) {
			out = append(out, jref.Name+"-pod")
		}
	}
	slices.Sort(out)
	return out
}

// CreateDirectoryCopyClaim makes the claim with the record; the
// provisioner gives it a new, empty volume.
func (w *world) CreateDirectoryCopyClaim(_ context.Context, rec migration.SplitRecord, spec claims.Spec) error {
	if err := w.between(); err != nil {
		return err
	}
	ref := claims.Ref{Namespace: spec.Namespace, Name: spec.Name}
	if w.claims[ref] != nil {
		return claims.ErrExists
	}
	if rec.Method != migration.MethodDirectoryCopy || rec.Volume != "" || rec.Claim != spec.Name || rec.Namespace != spec.Namespace {
		w.violation("a move by copy made claim %s with the record %+v", ref, rec)
	}
	m := &mclaim{c: claims.Claim{Name: spec.Name, Namespace: spec.Namespace, UID: w.uid(), Username: spec.User, AccessModes: []string{spec.Mode},
		Requested: spec.Size, RequestedBytes: gi(spec.Size),
		Annotations: map[string]string{kubespawner.AnnotationUsername: spec.User, migration.SplitAnnotation: rec.Encode()},
		Labels:      map[string]string{kubespawner.LabelUsername: spec.User}}}
	w.newVolume(&m.c).dcopy = rec.Directory
	w.claims[ref] = m
	w.logf("apply: created %s (%s) for the copy of directory %q, on volume %s", ref, m.c.UID, rec.Directory, m.c.VolumeName)
	return nil
}

func (w *world) DirectoryCopyJob(_ context.Context, namespace, claim string) (*migration.Job, error) {
	return w.copyJob(namespace, migration.DirectoryCopyJobName(claim))
}

// copyJob is the Job of that name as a move or a merge sees it; nil when
// none.
func (w *world) copyJob(namespace, name string) (*migration.Job, error) {
	if err := w.between(); err != nil {
		return nil, err
	}
	j := w.jobs[claims.Ref{Namespace: namespace, Name: name}]
	if j == nil {
		return nil, nil
	}
	return &migration.Job{Succeeded: j.done, ClaimUID: j.claimUID}, nil
}

// StartDirectoryCopyJob deletes any Job of its name (its pod gone first)
// and starts the copy Job; its pod mounts the claim of that name now.
func (w *world) StartDirectoryCopyJob(_ context.Context, job migration.DirectoryCopy, claimUID string) error {
	if err := w.between(); err != nil {
		return err
	}
	ns := job.Spec.Namespace
	dst := claims.Ref{Namespace: ns, Name: job.Spec.Name}
	if m := w.claims[dst]; m == nil || m.c.UID != claimUID {
		return fmt.Errorf("claim %s is not the one of UID %s", dst, claimUID) // the pod would mount another claim
	}
	ref := claims.Ref{Namespace: ns, Name: migration.DirectoryCopyJobName(job.Spec.Name)}
	w.jobs[ref] = &wjob{src: claims.Ref{Namespace: ns, Name: job.Shared}, dir: job.Directory, dst: dst, claimUID: claimUID}
	w.events["dcopy: a copy Job started"]++
	w.logf("apply: copy Job %s starts: directory %q of %s into %s (%s)", ref.Name, job.Directory, job.Shared, dst, claimUID)
	return nil
}

func (w *world) MarkSplitCopied(_ context.Context, rec migration.SplitRecord, uid string) error {
	if err := w.between(); err != nil {
		return err
	}
	ref := claims.Ref{Namespace: rec.Namespace, Name: rec.Claim}
	m := w.claims[ref]
	switch {
	case m == nil:
		return fmt.Errorf("claim %s is gone; not marked copied", ref)
	case m.c.UID != uid:
		return fmt.Errorf("claim %s was made again; not marked copied", ref)
	case m.c.Annotations[migration.SplitAnnotation] != rec.Encode():
		return fmt.Errorf("the record on claim %s changed; not marked copied", ref)
	case m.c.Deleting:
		return fmt.Errorf("claim %s is being deleted; not marked copied", ref)
	}
	// The copy is the home from now on: no server may still use the
	// directory (what it writes there would be missing from the home).
	for _, who := range slices.Sorted(maps.Keys(w.pods)) {
		if p := w.pods[who]; p.ref == hubRef(rec.Shared) && p.ref.Namespace == rec.Namespace && relatedDir(p.dir, rec.Directory) {
			w.violation("claim %s was marked copied while %s's server uses directory %q", ref, who, rec.Directory)
		}
	}
	m.c.Annotations[migration.SplitCopiedAnnotation] = uid
	w.logf("apply: marks %s (%s) copied", ref, uid)
	return nil
}

var _ DirectoryCopies = (*world)(nil)

// finishDirectoryCopy ends a move's copy Job: the files of the directory,
// as they are now, copied into the claim its pod mounts.
func (w *world) finishDirectoryCopy(ref claims.Ref, j *wjob) {
	j.done = true
	defer w.releaseDeleting(j.dst)
	m := w.claims[j.dst]
	if m == nil || m.c.UID != j.claimUID {
		w.violation("copy Job %s ran with no claim %s of UID %s", ref.Name, j.dst, j.claimUID)
		return
	}
	dst := w.volOf(j.dst)
	if dst == nil {
		return
	}
	if m.c.Annotations[migration.SplitCopiedAnnotation] != "" {
		w.violation("copy Job %s wrote into %s, which is marked copied (a home)", ref.Name, j.dst)
	}
	if dst.base != nil || dst.dirs != nil {
		w.violation("copy Job %s wrote into %s, a directory of the shared claim", ref.Name, j.dst)
		return
	}
	files := map[string]file{}
	for path, f := range w.filesAt(loc{j.src, j.dir}) {
		files[strings.TrimPrefix(path, j.dir+"/")] = f
	}
	before := dst.files
	dst.files = files
	var gone []string
	for p, f := range before {
		if files[p] != f {
			gone = append(gone, f.content)
		}
	}
	w.dropped(gone, false, "written over by copy Job "+ref.Name+" into "+j.dst.String())
	w.events["dcopy: a copy Job ended"]++
	if !w.interleave {
		w.events["dcopy: a copy Job ended between applies"]++
	}
	w.logf("controller: copy Job %s copied %d file(s) of directory %q into %s", ref.Name, len(files), j.dir, j.dst)
}

// releaseDeleting: a claim being deleted goes once no pod mounts it.
func (w *world) releaseDeleting(ref claims.Ref) {
	if m := w.claims[ref]; m != nil && m.c.Deleting && len(w.mounts(ref, "")) == 0 {
		w.deleteClaim(m, "once no pod mounted it")
	}
}

// jobsBetweenApplies: the Job controller between applies (a copy Job an
// apply left running ends).
func (w *world) jobsBetweenApplies() {
	for _, ref := range slices.SortedFunc(func(yield func(claims.Ref) bool) {
		for k := range w.jobs {
			if !yield(k) {
				return
			}
		}
	}, cmpRef) {
		if j := w.jobs[ref]; j.dir != "" && j.running() && w.r.IntN(2) == 0 {
			w.finishJob(ref)
		}
	}
}

// copyRefused: the hub's check_split for a claim whose record says
// directory-copy: refused until marked copied with its own UID.
func copyRefused(m *mclaim) string {
	if m.c.UID == "" || m.c.Annotations[migration.SplitCopiedAnnotation] != m.c.UID {
		return "claim " + m.c.Name + " is being copied from its directory of the shared claim"
	}
	return ""
}

// copyUndoAdvice: an error's advice to undo a move (the planner's "Or
// undo it: delete claim NS/NAME ...", the executor's "to undo the move
// instead, delete claim NS/NAME: ...").
var copyUndoAdvice = regexp.MustCompile(`undo (?:it|the move instead): delete claim ([^/ ]+)/([^ :]+)`)

// undoCopy is the operator undoing an unfinished move by copy as an
// error says: the servers on the claim stop and the claim is deleted (it
// goes once the copy Job's pod no longer mounts it); the directory holds
// everything.
func (w *world) undoCopy(ref claims.Ref) {
	mc := w.claims[ref]
	if mc == nil {
		return
	}
	rec, err := migration.DecodeSplitRecord(mc.c.Annotations[migration.SplitAnnotation])
	if err != nil || rec.Method != migration.MethodDirectoryCopy || copyRefused(mc) == "" {
		return
	}
	w.logf("operator: undoes the move by copy of %s as the error says: deletes %s", rec.User, ref)
	w.events["operator undid a move by copy as an error says"]++
	for who, p := range w.pods {
		if p.ref == ref {
			w.stop(who)
		}
	}
	if mc = w.claims[ref]; mc == nil {
		return
	}
	if len(w.mounts(ref, "")) > 0 {
		mc.c.Deleting = true
		w.logf("cluster: %s is being deleted (a pod mounts it)", ref)
		return
	}
	w.deleteClaim(mc, "by the operator, as the error says")
}
