package execute

import (
	"context"
	"errors"
	"fmt"
	"maps"
	pathpkg "path"
	"slices"
	"strconv"
	"strings"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/claims"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/kubespawner"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/migration"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/safety"
)

// The history model's migrations: the world as execute.Migrations (the
// calls internal/kube makes, each preceded by between), the controllers
// the steps wait for, the hub's spawn-time decisions during a migration
// (internal/hubconfig/hub_config.py's pre_spawn_hook), the operator doing
// what an error says, and the settle phase that ends every history.

// runMigration is the provider's runMigrations for one home: a Rebind or
// a Copy built from the plan as internal/provider builds it.
func (w *world) runMigration(ctx context.Context, cfg safety.Config, up safety.UserPlan, uid string) (migration.Step, error) {
	run := Runner{Cluster: w}
	if up.Method == migration.MethodSplit {
		return w.runSplit(ctx, cfg, up)
	}
	if up.Method == migration.MethodDirectoryCopy {
		return w.runDirectoryCopy(ctx, cfg, up)
	}
	if up.Method == migration.MethodMerge {
		return w.runMerge(ctx, cfg, up, uid)
	}
	if up.Method == migration.MethodCopy {
		to := cfg.AccessMode
		if up.CopyResume != nil {
			to = up.CopyResume.To
		}
		return run.Copy(ctx, migration.Copy{User: up.User, Namespace: up.Namespace, Source: up.ClaimName, Target: up.Target, To: to,
			StorageClass: cfg.StorageClass, Capacity: cfg.Capacity, Image: cfg.Migration.CopyImage})
	}
	job := Rebind{User: up.User, Namespace: up.Namespace, Claim: up.ClaimName, Volume: up.Volume, To: cfg.AccessMode, UID: uid}
	if up.Resume != nil {
		job.To = up.Resume.To
	}
	if up.Resize {
		job.Resize = cfg.Capacity
	}
	return run.Rebind(ctx, job)
}

// wjob is a copy Job: its pod mounts both claims until it ends. A move
// by copy's (directory_copy_history_test.go) mounts directory dir of src, and
// was started for the claim dst of UID claimUID. A merge's
// (merge_history_test.go, merge set) mounts the claim src of user, and
// directory dir of the shared claim dst.
type wjob struct {
	src, dst      claims.Ref
	done          bool
	counts        migration.Verification
	dir, claimUID string
	merge         bool
	user          string
	gen           int // the claim's mergeGen when it started (-1: no record)
}

func (j *wjob) running() bool { return !j.done }

// controllers are the binder and the Job controller, at random.
func (w *world) controllers() {
	if w.binderRate > 0 && w.r.IntN(w.binderRate) == 0 {
		w.binder()
	}
	for _, ref := range slices.SortedFunc(maps.Keys(w.jobs), cmpRef) {
		if w.r.IntN(3) == 0 {
			w.finishJob(ref)
		}
	}
}

// binder is the PV binder (and the volume deleter): a volume whose claim
// is gone is released, or deleted with its files under reclaim policy
// Delete; a volume given to a claim that names it is bound to it.
func (w *world) binder() {
	for _, name := range slices.Sorted(maps.Keys(w.vols)) {
		v := w.vols[name]
		m := w.claims[v.ref]
		switch {
		case v.gone || v.refUID == "":
		case (m == nil || m.c.UID != v.refUID) && v.phase == "Bound" || v.phase == "Released" && v.policy == "Delete":
			if v.policy == "Delete" {
				if v.split != nil || v.dirs != nil {
					w.violation("the binder deletes volume %s, the shared claim's or a move's", v.name)
				}
				w.logf("binder: deletes volume %s of %s, %d file(s)", v.name, v.ref, len(v.files))
				v.gone = true
				delete(w.vols, v.name)
				w.dropped(contentsOf(v.files), v.excused, "volume "+v.name+" of "+v.ref.String()+" deleted")
				continue
			}
			v.phase = "Released"
			v.rv++
		case m != nil && m.c.UID == v.refUID && m.c.Phase == "Pending" && m.c.VolumeName == v.name:
			m.c.Phase, v.phase = "Bound", "Bound"
			v.rv++
			w.logf("binder: binds %s to volume %s", v.ref, v.name)
		}
	}
}

// finishJob is the Job controller ending a copy Job: rsync -a --delete
// from source to target (migration.CopyScript), its counts reported.
func (w *world) finishJob(ref claims.Ref) {
	j := w.jobs[ref]
	if j == nil || j.done {
		return
	}
	if j.merge {
		w.finishMerge(ref, j)
		return
	}
	if j.dir != "" {
		w.finishDirectoryCopy(ref, j)
		return
	}
	j.done = true
	src, dst := w.volOf(j.src), w.volOf(j.dst)
	if src == nil || dst == nil {
		return
	}
	if t := w.claims[j.dst]; t != nil && t.c.Annotations[migration.CopySwitchedAnnotation] != "" {
		w.violation("a copy Job wrote into %s, a user's home", j.dst)
	}
	if dst.base != nil || dst.dirs != nil {
		w.violation("a copy Job wrote into %s, a directory of the shared claim", j.dst)
		return
	}
	before := dst.files
	dst.files = maps.Clone(w.view(src))
	var gone []string
	for p, f := range before {
		if dst.files[p] != f {
			gone = append(gone, f.content)
		}
	}
	w.dropped(gone, false, "written over by the copy into "+j.dst.String())
	j.counts = migration.Verification{Files: int64(len(dst.files)) + 1}
}

func (w *world) Volume(_ context.Context, name string) (*migration.Volume, error) {
	if err := w.between(); err != nil {
		return nil, err
	}
	v := w.vols[name]
	if v == nil || v.gone {
		return nil, fmt.Errorf("volume %s not found", name)
	}
	out := &migration.Volume{Name: v.name, Phase: v.phase, ReclaimPolicy: v.policy, ClaimRefName: v.ref.Name, ClaimRefNS: v.ref.Namespace,
		ClaimRefUID: v.refUID, Modes: slices.Clone(v.modes), Capacity: "1Gi", ResourceVersion: strconv.Itoa(v.rv)}
	if v.record != nil {
		rec := *v.record
		out.Record = &rec
	}
	return out, nil
}

// changeVolume is a change made only over the volume as seen.
func (w *world) changeVolume(seen migration.Volume) (*volume, error) {
	if err := w.between(); err != nil {
		return nil, err
	}
	v := w.vols[seen.Name]
	if v == nil || v.gone {
		return nil, fmt.Errorf("volume %s not found", seen.Name)
	}
	if seen.ResourceVersion != strconv.Itoa(v.rv) {
		return nil, claims.ErrChanged
	}
	v.rv++
	return v, nil
}

func (w *world) RetainVolume(_ context.Context, seen migration.Volume, rec migration.Record) error {
	v, err := w.changeVolume(seen)
	if err == nil {
		v.policy, v.record = "Retain", &rec
	}
	return err
}

// ReserveVolume gives the volume to the claim of UID uid; the binder binds
// them when it acts.
func (w *world) ReserveVolume(_ context.Context, seen migration.Volume, rec migration.Record, uid string) error {
	v, err := w.changeVolume(seen)
	if err == nil {
		v.record, v.ref, v.refUID, v.modes = &rec, claims.Ref{Namespace: rec.Namespace, Name: rec.Claim}, uid, []string{rec.To}
	}
	return err
}

// CreateReboundClaim creates the claim, Pending, as internal/kube does:
// one of that name is this create's only when it names the volume and
// carries the same migration note.
func (w *world) CreateReboundClaim(_ context.Context, rec migration.Record, v migration.Volume) error {
	if err := w.between(); err != nil {
		return err
	}
	ref := claims.Ref{Namespace: rec.Namespace, Name: rec.Claim}
	note := fmt.Sprintf("rebind from %s, volume %s", strings.Join(rec.From, ","), v.Name)
	if m := w.claims[ref]; m != nil {
		if m.c.VolumeName == v.Name && m.c.Annotations[migration.MigratedAnnotation] == note {
			return nil
		}
		return fmt.Errorf("claim %s: %w", ref, claims.ErrExists)
	}
	ann := maps.Clone(rec.Annotations)
	if ann == nil {
		ann = map[string]string{}
	}
	ann[migration.MigratedAnnotation] = note
	c := claims.Claim{Name: rec.Claim, Namespace: rec.Namespace, UID: w.uid(), Username: rec.User, Servername: rec.Annotations[kubespawner.AnnotationServername],
		AccessModes: []string{rec.To}, Requested: rec.Requested, RequestedBytes: gi(rec.Requested), VolumeName: v.Name, Phase: "Pending",
		Labels: maps.Clone(rec.Labels), Annotations: ann}
	w.claims[ref] = &mclaim{c: c}
	w.logf("apply: created %s (%s) on volume %s, Pending", ref, c.UID, v.Name)
	return nil
}

func gi(q string) int64 {
	n, _ := strconv.ParseInt(strings.TrimSuffix(q, "Gi"), 10, 64)
	return n << 30
}

// WaitBound waits for the binder: when it is slow or down, the wait times out.
func (w *world) WaitBound(_ context.Context, namespace, claim string) error {
	if err := w.between(); err != nil {
		return err
	}
	ref := claims.Ref{Namespace: namespace, Name: claim}
	if m := w.claims[ref]; m != nil && m.c.Phase != "Bound" && w.binderRate > 0 && w.r.IntN(w.binderRate) == 0 {
		w.binder()
	}
	if m := w.claims[ref]; m == nil || m.c.Phase != "Bound" {
		return fmt.Errorf("claim %s is not bound: timed out", ref)
	}
	return nil
}

func (w *world) ResizeClaim(_ context.Context, namespace, name, size string) error {
	if err := w.between(); err != nil {
		return err
	}
	m := w.claims[claims.Ref{Namespace: namespace, Name: name}]
	if m == nil {
		return errors.New("not found")
	}
	m.c.Requested, m.c.RequestedBytes = size, gi(size)
	return nil
}

func (w *world) RestoreVolume(_ context.Context, seen migration.Volume, policy string) error {
	v, err := w.changeVolume(seen)
	if err == nil {
		v.policy, v.record = policy, nil
	}
	return err
}

func (w *world) Job(_ context.Context, namespace, name string) (*migration.Job, error) {
	if err := w.between(); err != nil {
		return nil, err
	}
	j := w.jobs[claims.Ref{Namespace: namespace, Name: name}]
	if j == nil {
		return nil, nil
	}
	return &migration.Job{Succeeded: j.done}, nil
}

func (w *world) WriteCopyRecord(_ context.Context, namespace, source, expected string, r migration.CopyRecord) (string, error) {
	if err := w.between(); err != nil {
		return "", err
	}
	m := w.claims[claims.Ref{Namespace: namespace, Name: source}]
	if m == nil {
		return "", errors.New("source gone")
	}
	if m.c.Annotations[migration.CopyAnnotation] != expected {
		return "", errors.New("the copy record changed since this step read it")
	}
	if m.c.Annotations == nil {
		m.c.Annotations = map[string]string{}
	}
	m.c.Annotations[migration.CopyAnnotation] = r.Encode()
	return r.Encode(), nil
}

// CreateCopyTarget creates the target as internal/kube does (a claim of
// that name is this copy's only when it carries its ID); the provisioner
// gives it an empty volume.
func (w *world) CreateCopyTarget(_ context.Context, job migration.Copy, src claims.Claim, id string) (string, error) {
	if err := w.between(); err != nil {
		return "", err
	}
	ref := claims.Ref{Namespace: job.Namespace, Name: job.Target}
	if m := w.claims[ref]; m != nil {
		if m.c.Annotations[migration.CopyIDAnnotation] != id {
			return "", fmt.Errorf("claim %s exists already and was not created by this copy; nothing is copied into it", ref)
		}
		return m.c.UID, nil
	}
	ann := map[string]string{migration.CopyOfAnnotation: job.Source, migration.CopyIDAnnotation: id, migration.CopyOfUIDAnnotation: src.UID}
	for _, k := range []string{kubespawner.AnnotationUsername, kubespawner.AnnotationServername} {
		if v, ok := src.Annotations[k]; ok {
			ann[k] = v
		}
	}
	m := &mclaim{c: claims.Claim{Name: job.Target, Namespace: job.Namespace, UID: w.uid(), Username: src.Username, Servername: src.Servername,
		AccessModes: []string{job.To}, Requested: job.Capacity, RequestedBytes: gi(job.Capacity), Annotations: ann,
		Labels: map[string]string{kubespawner.LabelUsername: src.Username, migration.CopyOfLabel: migration.CopyOfLabelValue(job.Source)}}}
	w.newVolume(&m.c)
	w.claims[ref] = m
	w.logf("apply: created copy target %s (%s)", ref, m.c.UID)
	return m.c.UID, nil
}

func (w *world) StartCopyJob(_ context.Context, job migration.Copy) error {
	if err := w.between(); err != nil {
		return err
	}
	w.jobs[claims.Ref{Namespace: job.Namespace, Name: migration.JobName(job.Source)}] = &wjob{
		src: claims.Ref{Namespace: job.Namespace, Name: job.Source}, dst: claims.Ref{Namespace: job.Namespace, Name: job.Target}}
	return nil
}

func (w *world) DeleteJob(_ context.Context, namespace, name string) error {
	if err := w.between(); err != nil {
		return err
	}
	delete(w.jobs, claims.Ref{Namespace: namespace, Name: name})
	return nil
}

func (w *world) WaitJob(_ context.Context, namespace, name string) error {
	if err := w.between(); err != nil {
		return err
	}
	ref := claims.Ref{Namespace: namespace, Name: name}
	if w.jobs[ref] == nil {
		return errors.New("job disappeared")
	}
	if j := w.jobs[ref]; j.dir != "" && j.running() && !w.calm && w.r.IntN(3) == 0 {
		// A move's copy Job still running after the provider's timeout: it
		// goes on; the next apply waits for it (it may end before).
		w.events["dcopy: wait timed out"]++
		return fmt.Errorf("copy Job %s is still running: timed out", ref)
	}
	w.finishJob(ref)
	return nil
}

func (w *world) CopyVerification(_ context.Context, namespace, name string) (migration.Verification, error) {
	if err := w.between(); err != nil {
		return migration.Verification{}, err
	}
	j := w.jobs[claims.Ref{Namespace: namespace, Name: name}]
	if j == nil || !j.done {
		return migration.Verification{}, errors.New("no succeeded Job")
	}
	return j.counts, nil
}

func (w *world) AnnotateClaim(_ context.Context, namespace, name, key, value string) error {
	if err := w.between(); err != nil {
		return err
	}
	m := w.claims[claims.Ref{Namespace: namespace, Name: name}]
	if m == nil {
		return errors.New("not found")
	}
	if m.c.Annotations == nil {
		m.c.Annotations = map[string]string{}
	}
	m.c.Annotations[key] = value
	return nil
}

var _ Migrations = (*world)(nil)

// verifyRsync reads the rsync options of migration.VerifyScript's check:
// whether it skips files newer in the target (--update, -u) and whether it
// compares content (--checksum, -c; else size and time).
func verifyRsync() (update, checksum bool) {
	for _, line := range strings.Split(migration.VerifyScript, "\n") {
		if !strings.Contains(line, "rsync ") || !strings.Contains(line, "--dry-run") {
			continue
		}
		for _, f := range strings.Fields(line) {
			short := strings.HasPrefix(f, "-") && !strings.HasPrefix(f, "--")
			update = update || f == "--update" || short && strings.Contains(f, "u")
			checksum = checksum || f == "--checksum" || short && strings.Contains(f, "c")
		}
	}
	return update, checksum
}

// VerifyCopy is the verification Job: migration.VerifyScript's rsync dry
// run from source to target, as its options make it compare.
func (w *world) VerifyCopy(_ context.Context, namespace, source, target, _ string) (bool, string, error) {
	if err := w.between(); err != nil {
		return false, "", err
	}
	s, t := w.volOf(claims.Ref{Namespace: namespace, Name: source}), w.volOf(claims.Ref{Namespace: namespace, Name: target})
	if s == nil || t == nil {
		return false, "the new home " + target + " does not exist", nil
	}
	update, checksum := verifyRsync()
	sfiles, tfiles := w.view(s), w.view(t)
	var diff []string
	for _, p := range slices.Sorted(maps.Keys(sfiles)) {
		sf := sfiles[p]
		tf, ok := tfiles[p]
		switch {
		case !ok:
			diff = append(diff, p)
		case update && tf.mtime > sf.mtime:
			// rsync --update skips a file newer in the target
		case checksum && tf.content != sf.content:
			diff = append(diff, p)
		case !checksum && (len(tf.content) != len(sf.content) || tf.mtime != sf.mtime):
			diff = append(diff, p)
		}
	}
	if len(diff) > 0 {
		return false, "these files of the old home differ in the new home: " + strings.Join(diff, ", "), nil
	}
	return true, "", nil
}

// hubHome is the claim the hub gives who's server (pre_spawn_hook's
// home_of): create when KubeSpawner creates it, refused when the spawn
// is refused and why.
func (w *world) hubHome(who string) (ref claims.Ref, create bool, refused string) {
	user, server, _ := strings.Cut(who, "/")
	ref = w.templateRef(user, server)
	mountable := func(m *mclaim) string {
		switch {
		case m.c.Deleting:
			return "claim " + m.c.Name + " is being deleted"
		case m.c.Annotations[migration.MigratedAnnotation] != "" && m.c.Phase != "Bound":
			return "claim " + m.c.Name + " is being rebound"
		}
		return ""
	}
	follow := func(m *mclaim) (claims.Ref, string) {
		rec, err := migration.DecodeCopyRecord(m.c.Annotations[migration.CopyAnnotation])
		switch {
		case err != nil:
			return ref, "unreadable copy record"
		case rec.Step == migration.StepPending || rec.Step == migration.StepTargetCreated:
			return m.c.Ref(), mountable(m)
		case rec.Step != migration.StepSwitched:
			return ref, "being copied"
		}
		tref := claims.Ref{Namespace: m.c.Namespace, Name: rec.Target}
		t := w.claims[tref]
		switch {
		case t == nil:
			return ref, "switched to " + rec.Target + ", which does not exist"
		case t.c.Annotations[migration.CopyOfAnnotation] != m.c.Name || t.c.Annotations[migration.CopyOfUIDAnnotation] != m.c.UID ||
			rec.TargetUID != "" && t.c.UID != rec.TargetUID:
			return ref, "names a copy that is not its"
		}
		return tref, mountable(t)
	}
	m := w.claims[ref]
	if m != nil && m.c.Annotations[migration.MergedAnnotation] != "" {
		// The per-user layout's hub refuses a merged claim (the home is the
		// directory now) and a mark of another claim (mergeHub).
		return ref, false, "claim " + m.c.Name + " was merged into the shared claim"
	}
	if m != nil && m.c.Annotations[migration.CopyAnnotation] != "" {
		r, why := follow(m)
		return r, false, why
	}
	if m != nil && m.c.Annotations[migration.CopyOfAnnotation] != "" {
		if why := mountable(m); why != "" {
			return ref, false, why
		}
		if m.c.Annotations[migration.CopySwitchedAnnotation] != "" {
			return ref, false, ""
		}
		src := w.claims[claims.Ref{Namespace: ref.Namespace, Name: m.c.Annotations[migration.CopyOfAnnotation]}]
		if src != nil {
			if r, why := follow(src); why == "" && r == ref {
				return ref, false, ""
			}
		}
		return ref, false, "a copy not yet switched to"
	}
	var copies, switched []*mclaim
	for _, k := range slices.SortedFunc(maps.Keys(w.claims), cmpRef) {
		if c := w.claims[k]; k.Namespace == ref.Namespace && c.c.Annotations[migration.CopyOfAnnotation] == ref.Name {
			copies = append(copies, c)
			if c.c.Annotations[migration.CopySwitchedAnnotation] != "" {
				switched = append(switched, c)
			}
		}
	}
	switch {
	case len(switched) > 1:
		return ref, false, "several switched copies"
	case len(switched) == 1:
		return switched[0].c.Ref(), false, mountable(switched[0])
	case m == nil && len(copies) > 0:
		return ref, false, "gone, and its copy was not switched to"
	case m == nil:
		return ref, true, ""
	}
	return ref, false, mountable(m)
}

// strayWrite: a pod left on a copied user's old home (started before the
// switch, or by an older hub configuration) writes there and ends.
func (w *world) strayWrite(user string) {
	for _, ref := range slices.SortedFunc(maps.Keys(w.claims), cmpRef) {
		m := w.claims[ref]
		rec, err := migration.DecodeCopyRecord(m.c.Annotations[migration.CopyAnnotation])
		if err != nil || rec.Step != migration.StepSwitched || m.c.Username != user || m.c.Deleting {
			continue
		}
		if v := w.volOf(ref); v != nil {
			w.writeTo(v, "", user)
			w.events["stray write on an old home"]++
			w.logf("hub: a pod left on %s's old home %s writes there", user, ref)
		}
		return
	}
}

// followAdvice is the operator doing what the last error says, where it
// says what to do with a claim someone created while a home was being
// rebound: stop the server, save what that claim holds when the error says
// so, delete it; the saved files go back once the home is rebound.
func (w *world) followAdvice() {
	w.undoSplits()
	w.mergeAdvice()
	for _, e := range w.errs {
		for _, m := range copyUndoAdvice.FindAllStringSubmatch(e, -1) {
			w.undoCopy(claims.Ref{Namespace: m[1], Name: m[2]})
		}
	}
	var advice string
	for _, e := range w.errs {
		if strings.Contains(e, "was created by someone else") {
			advice = e
		}
	}
	if advice == "" {
		return
	}
	for _, v := range w.sortedVols() {
		if v.record == nil {
			continue
		}
		ref := claims.Ref{Namespace: v.record.Namespace, Name: v.record.Claim}
		m := w.claims[ref]
		if m == nil || m.c.VolumeName == v.name || !strings.Contains(advice, ref.String()) {
			continue
		}
		w.logf("operator: does what the error says with %s", ref)
		w.events["operator did what an error says"]++
		for who, p := range w.pods {
			if p.ref == ref {
				w.stop(who)
			}
		}
		if mv := w.volOf(ref); mv != nil && strings.Contains(advice, "save what") {
			if w.backup[v.record.User] == nil {
				w.backup[v.record.User] = map[string]file{}
			}
			maps.Copy(w.backup[v.record.User], mv.files)
			w.saveFor[v.record.User] = v.name
		}
		if m = w.claims[ref]; m != nil {
			w.deleteClaim(m, "by the operator, as the error says")
		}
		w.binder()
	}
	w.errs = nil
}

func (w *world) sortedVols() []*volume {
	var out []*volume
	for _, name := range slices.Sorted(maps.Keys(w.vols)) {
		out = append(out, w.vols[name])
	}
	return out
}

// putBack puts saved files back into the home once it is rebound.
func (w *world) putBack() {
	for _, user := range slices.Sorted(maps.Keys(w.backup)) {
		v := w.vols[w.saveFor[user]]
		if v == nil || v.gone || v.record != nil || v.phase != "Bound" {
			continue
		}
		if m := w.claims[v.ref]; m == nil || m.c.UID != v.refUID || m.c.Phase != "Bound" {
			continue
		}
		maps.Copy(v.files, w.backup[user])
		delete(w.backup, user)
		w.logf("operator: puts %s's saved files back into %s", user, v.ref)
	}
}

// settle ends a history: the servers stop, the binder and the Job
// controller act, and the operator plans and applies the last
// configuration until nothing changes, doing what errors say. Then every
// content a user wrote and did not rewrite must be reachable.
func (w *world) settle(cfg safety.Config, state *safety.Prior) {
	if cfg.OnModeChange == safety.OnModeChangeFail {
		// What the plan's error about claims that differ says to choose.
		cfg.OnModeChange = safety.OnModeChangeKeepExisting
	}
	if cfg.Shared != nil || cfg.MergeInto != nil {
		// What the plan's error about the shared claim's mode says.
		cfg.AccessMode = claims.RWX
	}
	if cfg.SplitFrom != nil && cfg.OnLayoutChange == safety.OnLayoutChangeFail {
		// What the plan's error about users still in directories says.
		cfg.OnLayoutChange = safety.OnLayoutChangeMigrate
	}
	w.logf("settle: %s", describe(cfg))
	w.calm, w.binderRate, w.afterRemove = true, 1, nil
	defer func() { w.calm = false }()
	var last plan
	for i := range 8 {
		for _, who := range slices.Sorted(maps.Keys(w.pods)) {
			w.stop(who)
		}
		for _, ref := range slices.SortedFunc(maps.Keys(w.jobs), cmpRef) {
			w.finishJob(ref)
		}
		w.binder()
		w.putBack()
		p, ok := w.plan(cfg, state)
		last = p
		w.logf("settle %d: plan %s %s", i, p.res.Class, p.changes)
		for _, f := range p.res.Errors {
			w.logf("settle %d: plan error: %s: %s", i, f.Summary, f.Detail)
		}
		if !ok {
			if strings.Contains(errorsText(p.res), "cannot shrink") {
				cfg.Capacity, cfg.CapacityBytes = "2Gi", 2<<30 // what the error says (the largest the histories ask)
			}
			w.followAdvice()
			continue
		}
		if p.changes == "{}" && len(w.backup) == 0 && state != nil {
			break // (with no state OpenTofu creates the resource: an apply)
		}
		if s := w.apply(p, false); s != nil {
			state = s
		}
		if w.failed {
			return
		}
		w.followAdvice()
	}
	w.binder()
	w.putBack()
	w.reachable(last)
	w.checkMergesSettled(cfg, last)
}

// reachable checks that every content a user wrote and did not rewrite is
// on the volume the hub gives that user's server as home, or on a volume
// or claim the last plan or the last errors name.
func (w *world) reachable(last plan) {
	var texts []string
	named := map[string]bool{}
	for up := range last.res.All() {
		named[up.Namespace+"/"+up.ClaimName], named[up.Namespace+"/"+up.Target], named[up.Volume] = true, true, true
	}
	for _, f := range append(slices.Clone(last.res.Errors), last.res.Warnings...) {
		texts = append(texts, f.Detail)
	}
	texts = append(texts, w.errs...)
	mentioned := func(v *volume) bool {
		ref := v.ref.String()
		if named[v.name] || named[ref] && w.claims[v.ref] != nil && w.claims[v.ref].c.VolumeName == v.name {
			return true
		}
		// A copy's new claim is named through its old claim, whose record
		// leads to it (homes left behind name the old claim).
		if m := w.claims[v.ref]; m != nil && m.c.VolumeName == v.name {
			fs := append(slices.Clone(last.res.Errors), last.res.Warnings...)
			if namesStray(fs, m.c.Username, v.ref) || namesStray(fs, m.c.Username, w.copySource(v.ref)) {
				return true // a claim the template no longer names, or its copy
			}
		}
		src := w.copySource(v.ref).String()
		for _, t := range texts {
			if strings.Contains(t, v.name) || strings.Contains(t, ref) || w.claims[v.ref] != nil && strings.Contains(t, src+" (") {
				return true
			}
		}
		return false
	}
	homes := map[string]loc{} // by server
	for _, who := range w.users {
		if at, create, refused := w.hubLoc(who); !create && refused == "" && w.volOf(at.ref) != nil {
			homes[who] = at
		}
	}
	type place struct {
		v    *volume
		path string
	}
	where := map[string][]place{}
	for _, v := range w.sortedVols() {
		if v.gone {
			continue
		}
		for path, f := range v.files {
			where[f.content] = append(where[f.content], place{v, path})
		}
	}
	// A directory of the shared claim is named by a plan as such.
	mentionedDir := func(path string) bool {
		dir := pathpkg.Dir(path)
		for _, t := range texts {
			if strings.Contains(t, fmt.Sprintf("directory %q", dir)) || strings.Contains(t, fmt.Sprintf("directory is %q", dir)) {
				return true
			}
		}
		return false
	}
	for _, b := range w.backup {
		for _, f := range b {
			w.excused[f.content] = true // the operator holds it, to put back
		}
	}
	for _, c := range slices.Sorted(maps.Keys(w.owner)) {
		ps := where[c]
		if w.superseded[c] || w.excused[c] {
			continue
		}
		if len(ps) == 0 {
			w.violation("%s's content %s is on no volume", w.owner[c], c)
			continue
		}
		ok := w.reported[c]
		user := strings.Split(w.owner[c], "/")[0]
		for _, p := range ps {
			for _, h := range w.reportedHomes {
				ok = ok || w.in(h, p.v, p.path)
			}
			for who, h := range homes {
				ok = ok || w.in(h, p.v, p.path) && strings.Split(who, "/")[0] == user
			}
			if p.v.dirs != nil {
				ok = ok || mentionedDir(p.path)     // the shared claim: every home is on it
				for _, sv := range w.sortedVols() { // a moved home's claim is its directory
					ok = ok || sv.base == p.v && strings.HasPrefix(p.path, sv.baseDir+"/") && mentioned(sv)
				}
			} else {
				ok = ok || mentioned(p.v)
			}
		}
		if !ok {
			w.violation("%s's content %s is on %s (%s), which is neither the user's home nor named by the last plan", w.owner[c], c, ps[0].v.name, ps[0].path)
		}
	}
}
