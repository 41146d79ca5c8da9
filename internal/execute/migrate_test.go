package execute

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/claims"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/migration"
)

// The executor's migrations over a cluster modelled in memory, with the
// controllers they wait for (the PV binder: a deleted claim's volume is
// Released, or deleted with its data under reclaim policy Delete; a
// reserved volume binds its claim; a provisioner; the Job controller,
// whose copy Job copies the source volume's files into the target's). The
// users' servers start, write and stop between any two steps, and an apply
// stops after any step. The invariants: no file a user wrote is lost, no
// claim is deleted while a pod mounts it, nothing is copied into a claim a
// pod mounts, and a user switched to a copy finds every file they wrote in
// the old home.

const ns = "jhub"

type fvol struct {
	v     migration.Volume
	files map[string]string
	gone  bool // deleted, its files with it
	rv    int  // bumped at every change, by a step or by the binder
}

// change is a step's write to the volume read as seen: refused when the
// volume changed since.
func (v *fvol) change(seen migration.Volume) error {
	if seen.ResourceVersion != fmt.Sprint(v.rv) {
		return claims.ErrChanged
	}
	v.rv++
	return nil
}

type fjob struct {
	view     migration.Job
	src, dst string // claims
	counts   migration.Verification
	started  int // the clock when it started
}

type fake struct {
	claims  map[string]*claims.Claim
	vols    map[string]*fvol
	pods    map[string][]string // pod -> claims it mounts
	jobPods map[string]string   // pod -> its Job
	jobs    map[string]*fjob
	uid     int
	clock   int // counts the users' writes
	// lastEnd is the clock when the last copy Job ended; applyStart when
	// the apply now running began.
	lastEnd, applyStart int
	excused             int      // the clock after which writes may miss from the copy switched to
	broken              []string // invariants the steps broke
	// fail, when set, makes a record write or an annotation fail at
	// random, before it is made or after (the answer lost).
	fail *rand.Rand
	// meanwhile, when set, runs before every change a step makes: another
	// apply then works between the step's read and its write.
	meanwhile func()
	// beforeWrite, when set, runs at a copy record write before its check.
	beforeWrite func(migration.CopyRecord)
	// hubMade is the UID of the last claim KubeSpawner created at a spawn
	// because the home's claim did not exist.
	hubMade string
}

func newFake() *fake {
	return &fake{claims: map[string]*claims.Claim{}, vols: map[string]*fvol{}, pods: map[string][]string{},
		jobPods: map[string]string{}, jobs: map[string]*fjob{}}
}

func (f *fake) newUID() string { f.uid++; return fmt.Sprintf("uid-%d", f.uid) }

// before runs meanwhile, once at a time.
func (f *fake) before() {
	if m := f.meanwhile; m != nil {
		f.meanwhile = nil
		m()
		f.meanwhile = m
	}
}

// flaky fails a write at random: before it is made (true, nil), or after
// (false, an error for the caller to return once the write is made).
func (f *fake) flaky(what string) (before bool, after error) {
	if f.fail == nil {
		return false, nil
	}
	switch f.fail.IntN(10) {
	case 0:
		return true, nil
	case 1:
		return false, fmt.Errorf("%s: the connection broke after the write", what)
	}
	return false, nil
}

// home adds a user's bound RWO claim on a volume reclaimed by Delete, with files.
func (f *fake) home(user, claim string, files map[string]string) {
	vol := "pv-" + claim
	uid := f.newUID()
	f.claims[claim] = &claims.Claim{Name: claim, Namespace: ns, UID: uid, Username: user, AccessModes: []string{claims.RWO},
		StorageClass: "longhorn", ClassNamed: true, Requested: "10Gi", Phase: "Bound", VolumeName: vol,
		Labels:      map[string]string{"hub.jupyter.org/username": user},
		Annotations: map[string]string{"hub.jupyter.org/username": user, "pv.kubernetes.io/bind-completed": "yes"}}
	f.vols[vol] = &fvol{v: migration.Volume{Name: vol, Phase: "Bound", ReclaimPolicy: "Delete", ClaimRefName: claim, ClaimRefNS: ns,
		ClaimRefUID: uid, Modes: []string{claims.RWO}, Capacity: "10Gi", StorageClass: "longhorn"}, files: maps.Clone(files)}
}

func (f *fake) mounted(claim, exceptJob string) []string {
	var out []string
	for p, cs := range f.pods {
		if slices.Contains(cs, claim) && (exceptJob == "" || f.jobPods[p] != exceptJob) {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}

func (f *fake) volOf(claim string) *fvol {
	c := f.claims[claim]
	if c == nil || c.Phase != "Bound" {
		return nil
	}
	return f.vols[c.VolumeName]
}

func (f *fake) Claim(_ context.Context, _, name string) (*claims.Claim, error) {
	c := f.claims[name]
	if c == nil {
		return nil, nil
	}
	cp := *c
	cp.Annotations = maps.Clone(c.Annotations)
	return &cp, nil
}

func (f *fake) MountedBy(_ context.Context, _, claim, exceptJob string) ([]string, error) {
	return f.mounted(claim, exceptJob), nil
}

// RemoveClaim deletes the claim; the binder releases its volume, or deletes
// it with its files under reclaim policy Delete.
func (f *fake) RemoveClaim(_ context.Context, _, name, uid string) error {
	f.before()
	c := f.claims[name]
	if c == nil {
		return nil
	}
	if uid != "" && c.UID != uid {
		return fmt.Errorf("precondition: %s has UID %s, not %s", name, c.UID, uid)
	}
	if pods := f.mounted(name, ""); len(pods) > 0 {
		f.broken = append(f.broken, fmt.Sprintf("claim %s deleted while %v mount it", name, pods))
	}
	delete(f.claims, name)
	if v := f.vols[c.VolumeName]; v != nil && v.v.ClaimRefUID == c.UID {
		if v.v.ReclaimPolicy == "Delete" {
			v.gone = true
			delete(f.vols, c.VolumeName)
		} else {
			v.v.Phase = "Released"
			v.rv++
		}
	}
	return nil
}

func (f *fake) VerifyCopy(_ context.Context, _, source, target, _ string) (bool, string, error) {
	s, t := f.volOf(source), f.volOf(target)
	if s == nil || t == nil {
		return false, "missing", nil
	}
	return maps.Equal(s.files, t.files), "differs", nil
}

func (f *fake) Volume(_ context.Context, name string) (*migration.Volume, error) {
	v := f.vols[name]
	if v == nil {
		return nil, fmt.Errorf("volume %s not found", name)
	}
	cp := v.v
	cp.ResourceVersion = fmt.Sprint(v.rv)
	if v.v.Record != nil {
		rec := *v.v.Record
		cp.Record = &rec
	}
	return &cp, nil
}

func (f *fake) RetainVolume(_ context.Context, seen migration.Volume, rec migration.Record) error {
	f.before()
	v := f.vols[seen.Name]
	if err := v.change(seen); err != nil {
		return err
	}
	v.v.ReclaimPolicy, v.v.Record = "Retain", &rec
	return nil
}

// ReserveVolume gives the volume to the claim of UID uid; the binder binds
// them when that claim names the volume.
func (f *fake) ReserveVolume(_ context.Context, seen migration.Volume, rec migration.Record, uid string) error {
	f.before()
	v := f.vols[seen.Name]
	if err := v.change(seen); err != nil {
		return err
	}
	v.v.Record, v.v.ClaimRefName, v.v.ClaimRefNS, v.v.ClaimRefUID = &rec, rec.Claim, rec.Namespace, uid
	v.v.Modes = []string{rec.To}
	if c := f.claims[rec.Claim]; c != nil && c.UID == uid && c.VolumeName == seen.Name {
		v.v.Phase, c.Phase = "Bound", "Bound"
	}
	return nil
}

// CreateReboundClaim creates the claim, Pending: the volume names the old
// claim until it is given to this one.
func (f *fake) CreateReboundClaim(_ context.Context, rec migration.Record, v migration.Volume) error {
	f.before()
	if f.claims[rec.Claim] != nil {
		return fmt.Errorf("claim %s: %w", rec.Claim, claims.ErrExists)
	}
	c := &claims.Claim{Name: rec.Claim, Namespace: rec.Namespace, UID: f.newUID(), AccessModes: []string{rec.To}, Requested: rec.Requested,
		VolumeName: v.Name, Phase: "Pending", Labels: rec.Labels, Annotations: maps.Clone(rec.Annotations)}
	f.claims[rec.Claim] = c
	return nil
}

func (f *fake) WaitBound(_ context.Context, _, claim string) error {
	if c := f.claims[claim]; c == nil || c.Phase != "Bound" {
		return errors.New("not bound")
	}
	return nil
}

func (f *fake) ResizeClaim(_ context.Context, _, name, size string) error {
	f.claims[name].Requested = size
	return nil
}

func (f *fake) RestoreVolume(_ context.Context, seen migration.Volume, policy string) error {
	f.before()
	v := f.vols[seen.Name]
	if err := v.change(seen); err != nil {
		return err
	}
	v.v.ReclaimPolicy, v.v.Record = policy, nil
	return nil
}

func (f *fake) Job(_ context.Context, _, name string) (*migration.Job, error) {
	j := f.jobs[name]
	if j == nil {
		return nil, nil
	}
	view := j.view
	return &view, nil
}

func (f *fake) WriteCopyRecord(_ context.Context, _, source, expected string, r migration.CopyRecord) (string, error) {
	f.before()
	if f.beforeWrite != nil {
		f.beforeWrite(r)
	}
	c := f.claims[source]
	if c == nil {
		return "", errors.New("source gone")
	}
	if c.Annotations[migration.CopyAnnotation] != expected {
		return "", errors.New("the copy record changed since this step read it")
	}
	before, after := f.flaky("record")
	if before {
		return "", errors.New("record: the connection broke")
	}
	if r.Step == migration.StepSwitched && expected != r.Encode() {
		// The copy holds what was written until its Job ended (the model's
		// Job copies at its end). Excused: what a server wrote after that
		// and stopped before this switch, within this apply (seconds: its
		// last steps record the check and delete the Job).
		f.excused = max(f.lastEnd, f.applyStart)
		if pods := f.mounted(source, ""); len(pods) > 0 {
			f.broken = append(f.broken, fmt.Sprintf("switched to %s while %v mount the old home", r.Target, pods))
		}
		if j := f.jobs[migration.JobName(source)]; j != nil {
			f.broken = append(f.broken, "switched with the copy Job still there")
		}
	}
	c.Annotations[migration.CopyAnnotation] = r.Encode()
	return r.Encode(), after
}

// CreateCopyTarget creates the target; the provisioner gives it an empty volume.
func (f *fake) CreateCopyTarget(_ context.Context, job migration.Copy, src claims.Claim, id string) (string, error) {
	f.before()
	if c := f.claims[job.Target]; c != nil {
		if c.Annotations[migration.CopyIDAnnotation] != id {
			return "", fmt.Errorf("claim %s exists already and was not created by this copy", job.Target)
		}
		return c.UID, nil
	}
	uid, vol := f.newUID(), "pv-"+job.Target
	f.claims[job.Target] = &claims.Claim{Name: job.Target, Namespace: ns, UID: uid, Username: src.Username, AccessModes: []string{job.To},
		Phase: "Bound", VolumeName: vol, Annotations: map[string]string{migration.CopyOfAnnotation: job.Source,
			migration.CopyIDAnnotation: id, migration.CopyOfUIDAnnotation: src.UID}}
	f.vols[vol] = &fvol{v: migration.Volume{Name: vol, Phase: "Bound", ReclaimPolicy: "Delete", ClaimRefName: job.Target, ClaimRefNS: ns,
		ClaimRefUID: uid, Modes: []string{job.To}}, files: map[string]string{}}
	return uid, nil
}

// StartCopyJob replaces the Job; its pod mounts source and target.
func (f *fake) StartCopyJob(ctx context.Context, job migration.Copy) error {
	f.before()
	name := migration.JobName(job.Source)
	_ = f.DeleteJob(ctx, ns, name)
	f.jobs[name] = &fjob{src: job.Source, dst: job.Target, started: f.clock}
	f.pods[name+"-pod"], f.jobPods[name+"-pod"] = []string{job.Source, job.Target}, name
	return nil
}

func (f *fake) DeleteJob(_ context.Context, _, name string) error {
	delete(f.jobs, name)
	delete(f.pods, name+"-pod")
	delete(f.jobPods, name+"-pod")
	return nil
}

// WaitJob waits for the Job to end.
func (f *fake) WaitJob(_ context.Context, _, name string) error {
	j := f.jobs[name]
	if j == nil {
		return errors.New("job disappeared")
	}
	f.finish(name)
	return nil
}

// finish is the Job controller ending a Job: rsync --delete from source
// to target, its counts in the termination message.
func (f *fake) finish(name string) {
	j := f.jobs[name]
	if j == nil || j.view.Succeeded || j.view.Failed {
		return
	}
	if pods := f.mounted(j.dst, name); len(pods) > 0 {
		f.broken = append(f.broken, fmt.Sprintf("a copy ran into %s while %v mount it", j.dst, pods))
	}
	if t := f.claims[j.dst]; t != nil && t.Annotations[migration.CopySwitchedAnnotation] != "" {
		f.broken = append(f.broken, fmt.Sprintf("a copy ran into %s, the user's home", j.dst))
	}
	if rec, err := migration.DecodeCopyRecord(f.claims[j.src].Annotations[migration.CopyAnnotation]); err == nil && rec.Step == migration.StepSwitched {
		f.broken = append(f.broken, fmt.Sprintf("a copy ran into %s after the user was switched to it", j.dst))
	}
	src, dst := f.volOf(j.src), f.volOf(j.dst)
	dst.files = maps.Clone(src.files)
	j.view.Succeeded, j.counts = true, migration.Verification{Files: int64(len(src.files))}
	delete(f.pods, name+"-pod")
	f.lastEnd = f.clock
}

func (f *fake) CopyVerification(_ context.Context, _, name string) (migration.Verification, error) {
	j := f.jobs[name]
	if j == nil || !j.view.Succeeded {
		return migration.Verification{}, errors.New("no succeeded Job")
	}
	return j.counts, nil
}

func (f *fake) AnnotateClaim(_ context.Context, _, name, key, value string) error {
	f.before()
	before, after := f.flaky("annotation")
	if before {
		return errors.New("annotation: the connection broke")
	}
	defer func() { f.claims[name].Annotations[key] = value }()
	if after != nil {
		return after
	}
	return nil
}

var _ Migrations = (*fake)(nil)

// user is one user's server, as the model drives it.
type user struct {
	name, home string         // home: the claim the hub mounts
	written    map[string]int // file -> the clock when it was written
	n          int
	// excused: writes after this clock may be missing from the copy the
	// user was switched to (DESIGN.md, honest limits).
	excused int
}

// act lets the Job controller finish a Job at random, then starts, writes
// through or stops the user's server, at random. The hub serves the user
// from the copy once the source's record says switched.
func (u *user) act(r *rand.Rand, f *fake) {
	u.follow(f)
	for name := range f.jobs {
		if r.IntN(4) == 0 {
			f.finish(name)
		}
	}
	pod := "jupyter-" + u.name
	switch running := f.pods[pod] != nil; {
	case !running && r.IntN(3) == 0:
		if f.claims[u.home] == nil {
			// KubeSpawner creates a missing claim at a spawn: a new, empty
			// volume from the provisioner.
			f.hubMade = f.newUID()
			vol := "pv-" + f.hubMade
			f.claims[u.home] = &claims.Claim{Name: u.home, Namespace: ns, UID: f.hubMade, Username: u.name, AccessModes: []string{claims.RWO},
				Requested: "10Gi", Phase: "Bound", VolumeName: vol}
			f.vols[vol] = &fvol{v: migration.Volume{Name: vol, Phase: "Bound", ReclaimPolicy: "Delete", ClaimRefName: u.home, ClaimRefNS: ns,
				ClaimRefUID: f.hubMade, Modes: []string{claims.RWO}}, files: map[string]string{}}
		}
		if f.volOf(u.home) != nil { // a Pending claim: the pod waits
			f.pods[pod] = []string{u.home}
		}
	case running && r.IntN(2) == 0:
		v := f.volOf(f.pods[pod][0])
		if v == nil {
			f.broken = append(f.broken, fmt.Sprintf("%s's server runs on claim %s, which is gone", u.name, f.pods[pod][0]))
			return
		}
		u.n++
		f.clock++
		k := fmt.Sprintf("file-%d", u.n)
		v.files[k], u.written[k] = k, f.clock
	case running && r.IntN(2) == 0:
		delete(f.pods, pod)
	}
}

// follow moves the user to the copy once the source's record says switched.
func (u *user) follow(f *fake) {
	c := f.claims[u.home]
	if c == nil {
		return
	}
	if rec, err := migration.DecodeCopyRecord(c.Annotations[migration.CopyAnnotation]); err == nil && rec.Step == migration.StepSwitched {
		u.excused, u.home = f.excused, rec.Target
	}
}

// stopAfter stops an apply after its k-th operation, and lets the user act
// after every operation.
func stopAfter(k int, r *rand.Rand, f *fake, u *user) func(string, migration.Op) error {
	n := 0
	return func(string, migration.Op) error {
		n++
		u.act(r, f)
		if n == k {
			return errors.New("apply stopped")
		}
		return nil
	}
}

// lost names the files the user wrote before clock `before` that their
// home lacks, and those no volume holds any more.
func (u *user) lost(f *fake, before int) []string {
	v := f.volOf(u.home)
	if v == nil {
		return []string{"the whole home"}
	}
	var out []string
	for k, when := range u.written {
		if _, ok := v.files[k]; !ok && when <= before {
			out = append(out, k+" (not in the home)")
		}
		held := false
		for _, v := range f.vols {
			_, ok := v.files[k]
			held = held || ok
		}
		if !held {
			out = append(out, k+" (on no volume)")
		}
	}
	slices.Sort(out)
	return out
}

func TestRebind_keepsTheVolumeAndTheClaim(t *testing.T) {
	f := newFake()
	f.home("alice", "claim-alice", map[string]string{"notebook.ipynb": "cells"})
	uid := f.claims["claim-alice"].UID
	step, err := Runner{Cluster: f}.Rebind(context.Background(), Rebind{User: "alice", Namespace: ns, Claim: "claim-alice",
		Volume: "pv-claim-alice", To: claims.RWX, UID: uid, Resize: "20Gi"})
	if err != nil || step != migration.StepDone {
		t.Fatalf("Rebind = %s, %v", step, err)
	}
	c, v := f.claims["claim-alice"], f.vols["pv-claim-alice"]
	switch {
	case c == nil || c.UID == uid || !slices.Equal(c.AccessModes, []string{claims.RWX}) || c.VolumeName != "pv-claim-alice" || c.Phase != "Bound":
		t.Fatalf("claim after the rebind: %+v", c)
	case v == nil || v.files["notebook.ipynb"] != "cells":
		t.Fatalf("the volume lost its files: %+v", v)
	case v.v.ReclaimPolicy != "Delete" || v.v.Record != nil:
		t.Fatalf("volume not restored: policy %s, record %+v", v.v.ReclaimPolicy, v.v.Record)
	case c.Requested != "20Gi":
		t.Fatalf("claim not grown: %s", c.Requested)
	case c.Labels["hub.jupyter.org/username"] != "alice" || c.Annotations["hub.jupyter.org/username"] != "alice":
		t.Fatalf("the claim's labels and annotations are not kept: %v %v", c.Labels, c.Annotations)
	case c.Annotations["pv.kubernetes.io/bind-completed"] != "":
		t.Fatalf("the binder's annotations were carried over: %v", c.Annotations)
	}
}

func TestRebind_refusesTheDeleteWhileAServerRuns(t *testing.T) {
	f := newFake()
	f.home("alice", "claim-alice", map[string]string{"a": "a"})
	uid := f.claims["claim-alice"].UID
	f.pods["jupyter-alice"] = []string{"claim-alice"}
	job := Rebind{User: "alice", Namespace: ns, Claim: "claim-alice", Volume: "pv-claim-alice", To: claims.RWX, UID: uid}
	step, err := Runner{Cluster: f}.Rebind(context.Background(), job)
	if err == nil || !strings.Contains(err.Error(), "jupyter-alice") || step != migration.StepRetained {
		t.Fatalf("Rebind with a running server = %s, %v; want a refusal at step retained naming the pod", step, err)
	}
	if f.claims["claim-alice"] == nil || f.vols["pv-claim-alice"].v.ReclaimPolicy != "Retain" {
		t.Fatal("the claim must stay, the volume retained")
	}
	delete(f.pods, "jupyter-alice")
	if step, err := (Runner{Cluster: f}).Rebind(context.Background(), job); err != nil || step != migration.StepDone {
		t.Fatalf("Rebind once the server stopped = %s, %v", step, err)
	}
}

func TestCopy_copiesVerifiesAndSwitches(t *testing.T) {
	f := newFake()
	f.home("alice", "claim-alice", map[string]string{"a": "1", "b": "2"})
	srcUID := f.claims["claim-alice"].UID
	step, err := Runner{Cluster: f}.Copy(context.Background(), migration.Copy{User: "alice", Namespace: ns, Source: "claim-alice", Target: "home-alice",
		To: claims.RWX, Capacity: "10Gi", Image: "rsync"})
	if err != nil || step != migration.StepSwitched {
		t.Fatalf("Copy = %s, %v", step, err)
	}
	src, tgt := f.claims["claim-alice"], f.claims["home-alice"]
	rec, err := migration.DecodeCopyRecord(src.Annotations[migration.CopyAnnotation])
	switch {
	case err != nil || rec.Step != migration.StepSwitched || rec.Files != 2 || rec.TargetUID != tgt.UID:
		t.Fatalf("record %+v, %v", rec, err)
	case src.UID != srcUID || !maps.Equal(f.volOf("claim-alice").files, map[string]string{"a": "1", "b": "2"}):
		t.Fatal("the source changed")
	case !maps.Equal(f.volOf("home-alice").files, f.volOf("claim-alice").files):
		t.Fatal("the copy differs from the source")
	case tgt.Annotations[migration.CopySwitchedAnnotation] != "true" || len(f.jobs) != 0:
		t.Fatalf("target %v, jobs left %v", tgt.Annotations, f.jobs)
	}
}

// No copy Job starts while a server uses the old home: the copy could not
// be switched to, and on another node its pod could not mount the home.
func TestCopy_waitsWhileAServerUsesTheOldHome(t *testing.T) {
	f := newFake()
	f.home("alice", "claim-alice", map[string]string{"a": "1"})
	job := migration.Copy{User: "alice", Namespace: ns, Source: "claim-alice", Target: "home-alice", To: claims.RWX, Capacity: "10Gi", Image: "rsync"}
	f.pods["jupyter-alice"] = []string{"claim-alice"}
	step, err := Runner{Cluster: f}.Copy(context.Background(), job)
	if err == nil || !strings.Contains(err.Error(), "the copy waits: pod(s) jupyter-alice use the old home claim-alice") || step != migration.StepTargetCreated {
		t.Fatalf("Copy with a server on the old home = %s, %v; want a refusal before the Job", step, err)
	}
	if len(f.jobs) != 0 {
		t.Fatalf("a copy Job started: %v", f.jobs)
	}
	delete(f.pods, "jupyter-alice")
	if step, err := (Runner{Cluster: f}).Copy(context.Background(), job); err != nil || step != migration.StepSwitched {
		t.Fatalf("Copy once the server stopped = %s, %v", step, err)
	}
}

// A copy record another apply moved on since this step read it is never
// written over.
func TestCopy_recordMovedOnByAnotherApply(t *testing.T) {
	f := newFake()
	f.home("alice", "claim-alice", map[string]string{"a": "1"})
	job := migration.Copy{User: "alice", Namespace: ns, Source: "claim-alice", Target: "home-alice", To: claims.RWX, Capacity: "10Gi", Image: "rsync"}
	f.beforeWrite = func(r migration.CopyRecord) {
		if r.Step == migration.StepVerified {
			f.beforeWrite = nil
			// Another apply runs the whole copy between this step's read and its write.
			if step, err := (Runner{Cluster: f}).Copy(context.Background(), job); err != nil || step != migration.StepSwitched {
				t.Fatalf("the other apply: %s, %v", step, err)
			}
		}
	}
	_, err := Runner{Cluster: f}.Copy(context.Background(), job)
	if err == nil || !strings.Contains(err.Error(), "changed since this step read it") {
		t.Fatalf("Copy over a record another apply moved on = %v", err)
	}
	rec, _ := migration.DecodeCopyRecord(f.claims["claim-alice"].Annotations[migration.CopyAnnotation])
	if rec.Step != migration.StepSwitched {
		t.Fatalf("the other apply's record was rolled back to %s", rec.Step)
	}
}

// migrationHistory runs one migration to its end through applies stopped
// at random steps, with the user's server starting, writing and stopping
// between any two steps, and reports what broke.
func migrationHistory(seed uint64, copyHome bool) []string {
	r := rand.New(rand.NewPCG(seed, 7))
	f := newFake()
	f.fail = rand.New(rand.NewPCG(seed, 11))
	f.home("alice", "claim-alice", map[string]string{"file-0": "file-0"})
	u := &user{name: "alice", home: "claim-alice", written: map[string]int{"file-0": 0}, excused: -1}
	uid := f.claims["claim-alice"].UID
	var trace []string
	done, lastErr := false, ""
	for apply := 0; apply < 60 && !done; apply++ {
		if apply == 40 {
			// The operator asks the user to stay off; the migration must
			// then finish.
			delete(f.pods, "jupyter-alice")
			f.fail = nil
		}
		f.applyStart = f.clock
		hook := stopAfter(1+r.IntN(8), r, f, u)
		if apply >= 40 {
			hook = nil
		}
		migrate := func(run Runner) (migration.Step, error) {
			if copyHome {
				return run.Copy(context.Background(), migration.Copy{User: "alice", Namespace: ns, Source: "claim-alice", Target: "home-alice",
					To: claims.RWX, Capacity: "10Gi", Image: "rsync"})
			}
			return run.Rebind(context.Background(), Rebind{User: "alice", Namespace: ns, Claim: "claim-alice",
				Volume: "pv-claim-alice", To: claims.RWX, UID: uid})
		}
		f.meanwhile = nil
		if apply < 40 && r.IntN(3) == 0 {
			// Another apply of the same plan (another state, or -lock=false)
			// runs, or part of it, between one of this apply's reads and its write.
			f.meanwhile = func() {
				if r.IntN(6) == 0 {
					step, err := migrate(Runner{Cluster: f, AfterStep: stopAfter(1+r.IntN(10), r, f, u)})
					trace = append(trace, fmt.Sprintf("  meanwhile: %s %v", step, err))
				}
			}
		}
		step, err := migrate(Runner{Cluster: f, AfterStep: hook})
		f.meanwhile = nil
		trace = append(trace, fmt.Sprintf("apply %d: %s %v", apply, step, err))
		done = err == nil
		if err != nil {
			lastErr = err.Error()
		}
		for range r.IntN(4) {
			if apply < 40 {
				u.act(r, f)
			}
		}
		if r.IntN(3) == 0 {
			delete(f.pods, "jupyter-alice") // the operator asks the user to stop
		}
	}
	u.follow(f)
	broken := slices.Clone(f.broken)
	if c := f.claims["claim-alice"]; !copyHome && c != nil && c.UID == f.hubMade {
		// A stop between the old claim's delete and the new claim's create,
		// and a spawn then: KubeSpawner made a new claim, which may hold new
		// files. The rebind must stop, naming it, with the home retained on
		// its volume and no file on no volume; the operator finishes it.
		if done || !strings.Contains(lastErr, "created by someone else") || strings.Contains(lastErr, "holds no data") {
			broken = append(broken, "after KubeSpawner made a claim in the rebind's window the migration ended with: "+lastErr)
		}
		if v := f.vols["pv-claim-alice"]; v == nil || v.v.ReclaimPolicy != "Retain" || v.v.Record == nil {
			broken = append(broken, "the home's volume is not retained with its record")
		}
		for _, l := range u.lost(f, f.clock) {
			if strings.HasSuffix(l, "(on no volume)") || l == "the whole home" && len(f.vols) == 0 {
				broken = append(broken, "lost "+l)
			}
		}
		if len(broken) > 0 {
			broken = append(broken, trace...)
		}
		return broken
	}
	if !done {
		broken = append(broken, "the migration did not finish once the user stayed off")
	}
	if t := f.claims["home-alice"]; copyHome && (u.home != "home-alice" || t == nil || t.Annotations[migration.CopySwitchedAnnotation] == "") {
		broken = append(broken, "the user is not on an annotated copy")
	}
	if c, v := f.claims["claim-alice"], f.vols["pv-claim-alice"]; !copyHome && (c == nil || !slices.Equal(c.AccessModes, []string{claims.RWX}) ||
		c.VolumeName != "pv-claim-alice" || c.Phase != "Bound" || v == nil || v.v.ReclaimPolicy != "Delete" || v.v.Record != nil) {
		broken = append(broken, fmt.Sprintf("the rebind did not end where it should: claim %+v, volume %+v", c, v))
	}
	before := f.clock
	if u.excused >= 0 {
		before = u.excused
	}
	if lost := u.lost(f, before); len(lost) > 0 {
		broken = append(broken, fmt.Sprintf("the home %s lacks %v", u.home, lost))
	}
	if len(broken) > 0 {
		broken = append(broken, trace...)
	}
	return broken
}

func TestMigrationHistories(t *testing.T) {
	for _, copyHome := range []bool{false, true} {
		for seed := range uint64(1000) {
			if broken := migrationHistory(seed, copyHome); len(broken) > 0 {
				t.Fatalf("copy %v, seed %d:\n%s", copyHome, seed, strings.Join(broken, "\n"))
			}
		}
	}
}
