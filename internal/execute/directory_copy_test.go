package execute

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"testing"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/claims"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/migration"
)

// dcopyFake is the cluster a move by copy sees, in memory: the shared
// claim's directories and their files, the user's claim and its files,
// the copy Job (it copies when it runs: at WaitJob, or by finish), and the
// pods that use the directory.
type dcopyFake struct {
	sharedUID string
	dirs      map[string]map[string]string // directory -> path -> content
	claims    map[string]*migration.SplitClaim
	files     map[string]map[string]string // claim -> its files
	job       *dcopyJob
	users     []string // the pods DirectoryUsers reports
	// busyDirs are pods on directories of the shared claim, reported when
	// DirectoryUsers asks for their directory.
	busyDirs map[string][]string
	uid      int
	calls    []string
	// failJob makes the next Job that runs fail.
	failJob bool
	// afterClaim, when set, runs once the claim is created (a server that
	// started between the first check and the claim).
	afterClaim func()
	// beforeMark, when set, runs before MarkSplitCopied reads the claim.
	beforeMark func()
}

type dcopyJob struct {
	name, claimUID, claim, dir string
	succeeded, failed          bool
}

func newDcopyFake() *dcopyFake {
	return &dcopyFake{sharedUID: "s1", dirs: map[string]map[string]string{"home/alice": {"notes.txt": "v1", "data/x.csv": "1,2"}},
		claims: map[string]*migration.SplitClaim{}, files: map[string]map[string]string{}}
}

func (f *dcopyFake) SharedClaimUID(context.Context, string, string) (string, error) {
	return f.sharedUID, nil
}

func (f *dcopyFake) SplitClaim(_ context.Context, _, name string) (*migration.SplitClaim, error) {
	if c := f.claims[name]; c != nil {
		cc := *c
		return &cc, nil
	}
	return nil, nil
}

func (f *dcopyFake) PrepareDirectory(_ context.Context, job migration.Split) error {
	f.calls = append(f.calls, "prepare "+job.Directory)
	if f.dirs[job.Directory] == nil {
		f.dirs[job.Directory] = map[string]string{}
	}
	return nil
}

func (f *dcopyFake) DirectoryUsers(_ context.Context, _, _ string, dirs []string, _ string) ([]string, error) {
	out := append([]string(nil), f.users...)
	for _, d := range dirs {
		out = append(out, f.busyDirs[d]...)
	}
	return out, nil
}

func (f *dcopyFake) CreateDirectoryCopyClaim(_ context.Context, rec migration.SplitRecord, spec claims.Spec) error {
	f.calls = append(f.calls, "claim "+spec.Name+" class "+spec.Class)
	if f.claims[spec.Name] != nil {
		return claims.ErrExists
	}
	if rec.Method != migration.MethodDirectoryCopy || rec.Volume != "" {
		return fmt.Errorf("bad record %+v", rec)
	}
	f.uid++
	r := rec
	f.claims[spec.Name] = &migration.SplitClaim{UID: fmt.Sprintf("c%d", f.uid), Record: &r, Phase: "Bound", VolumeName: "pvc-x"}
	f.files[spec.Name] = map[string]string{}
	if f.afterClaim != nil {
		f.afterClaim()
		f.afterClaim = nil
	}
	return nil
}

func (f *dcopyFake) DirectoryCopyJob(_ context.Context, _, claim string) (*migration.Job, error) {
	if j := f.job; j != nil && j.name == migration.DirectoryCopyJobName(claim) {
		return &migration.Job{ClaimUID: j.claimUID, Succeeded: j.succeeded, Failed: j.failed, Reason: map[bool]string{true: "BackoffLimitExceeded"}[j.failed]}, nil
	}
	return nil, nil
}

func (f *dcopyFake) StartDirectoryCopyJob(_ context.Context, job migration.DirectoryCopy, claimUID string) error {
	f.calls = append(f.calls, "start "+job.Spec.Name)
	if !strings.Contains(job.CopyImage, "rsync") {
		return fmt.Errorf("copy image %q", job.CopyImage)
	}
	f.job = &dcopyJob{name: migration.DirectoryCopyJobName(job.Spec.Name), claimUID: claimUID, claim: job.Spec.Name, dir: job.Directory}
	return nil
}

// finish runs the Job to its end: rsync --delete from the directory into
// the claim (of the Job's name, whatever its UID), then the check.
func (f *dcopyFake) finish() {
	j := f.job
	if j == nil || j.succeeded || j.failed {
		return
	}
	if f.failJob {
		f.failJob, j.failed = false, true
		return
	}
	if f.files[j.claim] != nil {
		f.files[j.claim] = maps.Clone(f.dirs[j.dir])
	}
	j.succeeded = true
}

func (f *dcopyFake) WaitJob(_ context.Context, _, name string) error {
	f.calls = append(f.calls, "wait")
	if f.job == nil || f.job.name != name {
		return fmt.Errorf("Job %s disappeared", name)
	}
	f.finish()
	return nil
}

func (f *dcopyFake) DeleteJob(_ context.Context, _, name string) error {
	f.calls = append(f.calls, "delete job")
	if f.job != nil && f.job.name == name {
		f.job = nil
	}
	return nil
}

func (f *dcopyFake) MarkSplitCopied(_ context.Context, rec migration.SplitRecord, uid string) error {
	if f.beforeMark != nil {
		f.beforeMark()
	}
	f.calls = append(f.calls, "mark "+rec.Claim)
	c := f.claims[rec.Claim]
	switch {
	case c == nil || c.UID != uid:
		return fmt.Errorf("claim %s is not the one the copy went into", rec.Claim)
	case c.Record == nil || *c.Record != rec || c.Deleting:
		return fmt.Errorf("claim %s's record changed", rec.Claim)
	}
	c.Copied = uid
	return nil
}

var _ DirectoryCopies = (*dcopyFake)(nil)

// dcopySplits is a Splits that is also DirectoryCopies (the SplitRunner's
// Cluster).
type dcopySplits struct {
	*splitFake
	*dcopyFake
}

func (d dcopySplits) SplitClaim(ctx context.Context, ns, name string) (*migration.SplitClaim, error) {
	return d.dcopyFake.SplitClaim(ctx, ns, name)
}

func (d dcopySplits) PrepareDirectory(ctx context.Context, job migration.Split) error {
	return d.dcopyFake.PrepareDirectory(ctx, job)
}

func dcopyRunner(f *dcopyFake, after func(string, migration.Op) error) SplitRunner {
	return SplitRunner{Cluster: dcopySplits{newSplitFake(), f}, AfterStep: after}
}

func aliceDirectoryCopy() migration.DirectoryCopy {
	return migration.DirectoryCopy{User: "alice", Shared: "home-shared", Directory: "home/alice", UID: 1000, GID: 100, Mode: "0700", Image: "busybox",
		CopyImage: "instrumentisto/rsync-ssh", Spec: claims.Spec{Namespace: "hub", Name: "claim-alice", User: "alice", Mode: "ReadWriteOnce", Size: "10Gi", Class: "fast"}}
}

// done checks a finished move: the claim carries the record and its own
// UID as the copied mark, holds the directory's files, the Job is gone,
// and the directory holds what it held.
func (f *dcopyFake) done(t *testing.T, what string, dir map[string]string) {
	t.Helper()
	c := f.claims["claim-alice"]
	switch {
	case c == nil || c.Copied != c.UID || c.Record == nil || c.Record.Method != migration.MethodDirectoryCopy:
		t.Fatalf("%s: claim %+v", what, c)
	case !maps.Equal(f.files["claim-alice"], f.dirs["home/alice"]):
		t.Fatalf("%s: the claim holds %v, the directory %v", what, f.files["claim-alice"], f.dirs["home/alice"])
	case !maps.Equal(f.dirs["home/alice"], dir):
		t.Fatalf("%s: the directory changed: %v", what, f.dirs["home/alice"])
	case f.job != nil:
		t.Fatalf("%s: the Job is left: %+v", what, f.job)
	}
}

// A move by copy makes sure of the directory, makes the claim, copies and
// marks the claim; stopped after any step (the Job goes on meanwhile, or
// not), the next run goes on from there, never makes the claim twice, and
// never marks a copy it did not see verified.
func TestDirectoryCopy_runsAndResumes(t *testing.T) {
	f := newDcopyFake()
	var ops []migration.Op
	step, err := dcopyRunner(f, func(_ string, op migration.Op) error { ops = append(ops, op); return nil }).DirectoryCopy(context.Background(), aliceDirectoryCopy())
	if err != nil || step != migration.StepDone {
		t.Fatalf("%s %v", step, err)
	}
	want := []migration.Op{migration.OpPrepareDirectory, migration.OpCreateDirectoryCopyClaim, migration.OpStartDirectoryCopy, migration.OpWaitDirectoryCopy, migration.OpMarkSplitCopied}
	if fmt.Sprint(ops) != fmt.Sprint(want) {
		t.Fatalf("ops %v, want %v", ops, want)
	}
	if !strings.Contains(strings.Join(f.calls, ";"), "claim claim-alice class fast") {
		t.Fatalf("the claim is not of the configured class: %v", f.calls)
	}
	orig := maps.Clone(f.dirs["home/alice"])
	f.done(t, "one run", orig)

	for stop := 1; stop <= len(want); stop++ {
		for _, jobEnds := range []bool{false, true} {
			what := fmt.Sprintf("stopped after op %d (%s), the Job ending meanwhile %v", stop, want[stop-1], jobEnds)
			f := newDcopyFake()
			n := 0
			var stoppedAt migration.Step
			stoppedAt, err := dcopyRunner(f, func(string, migration.Op) error {
				if n++; n == stop {
					return errors.New("killed")
				}
				return nil
			}).DirectoryCopy(context.Background(), aliceDirectoryCopy())
			if err == nil || stoppedAt != migration.DirectoryCopyStepOf(want[stop-1]) {
				t.Fatalf("%s: %s %v", what, stoppedAt, err)
			}
			if jobEnds {
				f.finish()
			}
			starts := strings.Count(strings.Join(f.calls, ";"), "start ")
			f.calls = nil
			step, err := dcopyRunner(f, nil).DirectoryCopy(context.Background(), aliceDirectoryCopy())
			if err != nil || step != migration.StepDone {
				t.Fatalf("%s: resumed: %s %v", what, step, err)
			}
			f.done(t, what, orig)
			calls := strings.Join(f.calls, ";")
			if strings.Contains(calls, "claim claim-alice") && stop >= 2 {
				t.Errorf("%s: the claim made again: %v", what, f.calls)
			}
			// A Job that ended before this run looked is run again.
			if jobEnds && (stop == 3 || stop == 4) && starts+strings.Count(calls, "start ") != 2 {
				t.Errorf("%s: a copy an earlier run saw end was trusted: %v", what, f.calls)
			}
		}
	}
}

// While a pod uses the directory the move waits, making nothing: the
// claim is not created (the hub would refuse the user's spawns).
func TestDirectoryCopy_busyFirst(t *testing.T) {
	f := newDcopyFake()
	f.users = []string{"jupyter-alice"}
	step, err := dcopyRunner(f, nil).DirectoryCopy(context.Background(), aliceDirectoryCopy())
	if err == nil || !strings.Contains(err.Error(), "jupyter-alice") || !strings.Contains(err.Error(), "Stop the server and apply again; the user keeps the directory meanwhile") {
		t.Fatalf("%s %v", step, err)
	}
	if len(f.claims) != 0 || f.job != nil || len(f.calls) != 0 || step != migration.StepPending {
		t.Fatalf("made while busy: claims %v, job %+v, calls %v, step %s", f.claims, f.job, f.calls, step)
	}
	f.users = nil
	if step, err := dcopyRunner(f, nil).DirectoryCopy(context.Background(), aliceDirectoryCopy()); err != nil || step != migration.StepDone {
		t.Fatalf("once stopped: %s %v", step, err)
	}
}

// A server that started between the first check and the claim: the move
// waits with the claim made (the server keeps working in the directory),
// starts no copy, and finishes at the next apply once the server stopped,
// with what the server wrote.
func TestDirectoryCopy_busyAfterTheClaim(t *testing.T) {
	f := newDcopyFake()
	f.afterClaim = func() { f.users = []string{"jupyter-alice"} }
	step, err := dcopyRunner(f, nil).DirectoryCopy(context.Background(), aliceDirectoryCopy())
	if err == nil || !strings.Contains(err.Error(), "jupyter-alice") || !strings.Contains(err.Error(), "stays") {
		t.Fatalf("%s %v", step, err)
	}
	if f.claims["claim-alice"] == nil || f.job != nil || step != migration.StepClaimCreated {
		t.Fatalf("claim %+v, job %+v, step %s", f.claims["claim-alice"], f.job, step)
	}
	f.dirs["home/alice"]["late.txt"] = "written by the server" // then it stops
	f.users = nil
	if step, err := dcopyRunner(f, nil).DirectoryCopy(context.Background(), aliceDirectoryCopy()); err != nil || step != migration.StepDone {
		t.Fatalf("once stopped: %s %v", step, err)
	}
	if f.files["claim-alice"]["late.txt"] != "written by the server" {
		t.Fatalf("the server's write is missing: %v", f.files["claim-alice"])
	}
}

// A copy Job that succeeded before this run looked (an earlier apply's)
// is deleted and run again: the directory may have changed since, and the
// copy brings what changed.
func TestDirectoryCopy_earlierSuccessCopiedAgain(t *testing.T) {
	f := newDcopyFake()
	_, err := dcopyRunner(f, func(_ string, op migration.Op) error {
		if op == migration.OpStartDirectoryCopy {
			return errors.New("killed")
		}
		return nil
	}).DirectoryCopy(context.Background(), aliceDirectoryCopy())
	if err == nil {
		t.Fatal("not stopped")
	}
	f.finish()
	f.dirs["home/alice"]["notes.txt"] = "v2" // an operator's fix in the directory, after the copy
	f.calls = nil
	if step, err := dcopyRunner(f, nil).DirectoryCopy(context.Background(), aliceDirectoryCopy()); err != nil || step != migration.StepDone {
		t.Fatalf("%s %v", step, err)
	}
	if got := strings.Join(f.calls, ";"); !strings.HasPrefix(got, "delete job;prepare home/alice;start claim-alice;wait;mark") {
		t.Fatalf("calls %s", got)
	}
	if f.files["claim-alice"]["notes.txt"] != "v2" {
		t.Fatalf("the earlier copy was marked: %v", f.files["claim-alice"])
	}
}

// A claim of the user's name that is not this move's is never taken over:
// nothing is copied into it, nothing marked.
func TestDirectoryCopy_foreignClaim(t *testing.T) {
	for name, c := range map[string]*migration.SplitClaim{
		"KubeSpawner's":  {UID: "k1", Phase: "Bound", VolumeName: "pvc-k"},
		"a split's":      {UID: "k1", Phase: "Pending", Record: &migration.SplitRecord{User: "alice", Namespace: "hub", Claim: "claim-alice", Shared: "home-shared", SharedUID: "s1", Directory: "home/alice", Volume: "jupyter-home-x"}},
		"another shared": {UID: "k1", Phase: "Bound", Record: &migration.SplitRecord{User: "alice", Namespace: "hub", Claim: "claim-alice", Shared: "home-shared", SharedUID: "s0", Directory: "home/alice", Method: migration.MethodDirectoryCopy}},
	} {
		f := newDcopyFake()
		f.claims["claim-alice"] = c
		f.files["claim-alice"] = map[string]string{"mine.txt": "the user's"}
		_, err := dcopyRunner(f, nil).DirectoryCopy(context.Background(), aliceDirectoryCopy())
		if err == nil || !strings.Contains(err.Error(), "never taken over") {
			t.Errorf("%s: %v", name, err)
		}
		if f.job != nil || f.claims["claim-alice"].Copied != "" || f.files["claim-alice"]["mine.txt"] != "the user's" || len(f.files["claim-alice"]) != 1 {
			t.Errorf("%s: taken over: job %+v, claim %+v, files %v", name, f.job, f.claims["claim-alice"], f.files["claim-alice"])
		}
	}
}

// A failed copy Job stops the move, saying how to retry and undo it; the
// operator deletes the Job as it says, and the next apply finishes.
func TestDirectoryCopy_failedJob(t *testing.T) {
	f := newDcopyFake()
	f.failJob = true
	step, err := dcopyRunner(f, nil).DirectoryCopy(context.Background(), aliceDirectoryCopy())
	name := migration.DirectoryCopyJobName("claim-alice")
	if err == nil || !strings.Contains(err.Error(), "kubectl logs -n hub job/"+name) || !strings.Contains(err.Error(), "delete claim hub/claim-alice") || step != migration.StepCopying {
		t.Fatalf("%s %v", step, err)
	}
	if _, err := dcopyRunner(f, nil).DirectoryCopy(context.Background(), aliceDirectoryCopy()); err == nil {
		t.Fatal("a failed Job was retried without the operator")
	}
	_ = f.DeleteJob(context.Background(), "hub", name)
	if step, err := dcopyRunner(f, nil).DirectoryCopy(context.Background(), aliceDirectoryCopy()); err != nil || step != migration.StepDone {
		t.Fatalf("after deleting the Job: %s %v", step, err)
	}
}

// The claim deleted and made again by someone else while the copy ran
// (the copy went into the earlier claim): the new claim is not marked.
func TestDirectoryCopy_claimReplacedBeforeTheMark(t *testing.T) {
	f := newDcopyFake()
	f.beforeMark = func() {
		f.beforeMark = nil
		f.claims["claim-alice"] = &migration.SplitClaim{UID: "k9", Phase: "Bound"}
		f.files["claim-alice"] = map[string]string{}
	}
	if _, err := dcopyRunner(f, nil).DirectoryCopy(context.Background(), aliceDirectoryCopy()); err == nil {
		t.Fatal("marked")
	}
	if f.claims["claim-alice"].Copied != "" {
		t.Fatalf("a claim the copy did not go into was marked: %+v", f.claims["claim-alice"])
	}
}

// A runner whose cluster makes no moves by copy says so.
func TestDirectoryCopy_needsTheInterface(t *testing.T) {
	if _, err := (SplitRunner{Cluster: newSplitFake()}).DirectoryCopy(context.Background(), aliceDirectoryCopy()); err == nil || !strings.Contains(err.Error(), "cannot move by copy") {
		t.Fatal(err)
	}
}

// A pod on the place the home had before a move by rename uses the home
// (the directory Job renames it from there): the copy waits for it.
func TestDirectoryCopy_podOnAnEarlierPlace(t *testing.T) {
	f := newDcopyFake()
	f.busyDirs = map[string][]string{"old_/alice": {"jupyter-alice-before-the-rename"}}
	job := aliceDirectoryCopy()
	job.MovedFrom = []string{"old_/alice"}
	step, err := dcopyRunner(f, nil).DirectoryCopy(context.Background(), job)
	if err == nil || !strings.Contains(err.Error(), "jupyter-alice-before-the-rename") || len(f.claims) != 0 || step != migration.StepPending {
		t.Fatalf("%s %v, claims %v", step, err, f.claims)
	}
}
