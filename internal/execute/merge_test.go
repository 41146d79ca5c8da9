package execute

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"testing"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/migration"
)

// mergeFake is the cluster a merge sees, in memory: the user's claim
// (annotations, UID) and its files, the shared claim's directories, the
// copy Job (it copies when it runs: at WaitJob, or by finish, with
// --delete), and the pods that use the claim or the directory.
type mergeFake struct {
	sharedUID string
	claim     *migration.MergeClaim
	files     map[string]string            // the claim's
	dirs      map[string]map[string]string // the shared claim's, by directory
	job       *mergeJob
	users     []string
	calls     []string
	failJob   bool
	// afterRecord, when set, runs once the record is written.
	afterRecord func()
}

type mergeJob struct {
	claimUID, dir     string
	succeeded, failed bool
}

func newMergeFake() *mergeFake {
	return &mergeFake{sharedUID: "s1", claim: &migration.MergeClaim{UID: "c1"}, files: map[string]string{"notes.txt": "v1", "data/x.csv": "1,2"},
		dirs: map[string]map[string]string{}}
}

func (f *mergeFake) SharedClaimUID(context.Context, string, string) (string, error) {
	return f.sharedUID, nil
}

func (f *mergeFake) MergeClaim(context.Context, string, string) (*migration.MergeClaim, error) {
	if f.claim == nil {
		return nil, nil
	}
	c := *f.claim
	return &c, nil
}

func (f *mergeFake) MergeUsers(context.Context, string, string, []string, string) ([]string, error) {
	return f.users, nil
}

func (f *mergeFake) PrepareMergeDirectory(_ context.Context, job migration.Merge) error {
	f.calls = append(f.calls, "check "+job.Directory)
	if len(f.dirs[job.Directory]) > 0 {
		return fmt.Errorf("refusing to merge into %s: it holds files already", job.Directory)
	}
	if f.dirs[job.Directory] == nil {
		f.dirs[job.Directory] = map[string]string{}
	}
	return nil
}

func (f *mergeFake) PrepareDirectory(_ context.Context, job migration.Split) error {
	f.calls = append(f.calls, "make "+job.Directory)
	if f.dirs[job.Directory] == nil {
		f.dirs[job.Directory] = map[string]string{}
	}
	return nil
}

func (f *mergeFake) RecordMerge(_ context.Context, rec migration.MergeRecord) error {
	if f.claim == nil || f.claim.UID != rec.ClaimUID || f.claim.Record != nil {
		return errors.New("not recorded")
	}
	f.calls = append(f.calls, "record")
	r := rec
	f.claim.Record = &r
	if f.afterRecord != nil {
		f.afterRecord()
		f.afterRecord = nil
	}
	return nil
}

func (f *mergeFake) MergeJob(context.Context, string, string) (*migration.Job, error) {
	if f.job == nil {
		return nil, nil
	}
	return &migration.Job{ClaimUID: f.job.claimUID, Succeeded: f.job.succeeded, Failed: f.job.failed}, nil
}

func (f *mergeFake) StartMergeJob(_ context.Context, job migration.Merge, claimUID string) error {
	f.calls = append(f.calls, "start "+job.Directory)
	f.job = &mergeJob{claimUID: claimUID, dir: job.Directory}
	return nil
}

// finish ends the Job: the claim's files as they are now, copied with
// --delete into the directory.
func (f *mergeFake) finish() {
	if j := f.job; j != nil && !j.succeeded && !j.failed {
		if f.failJob {
			j.failed, f.failJob = true, false
			return
		}
		f.dirs[j.dir] = maps.Clone(f.files)
		j.succeeded = true
	}
}

func (f *mergeFake) WaitJob(context.Context, string, string) error { f.finish(); return nil }

func (f *mergeFake) DeleteJob(context.Context, string, string) error {
	f.calls = append(f.calls, "delete job")
	f.job = nil
	return nil
}

func (f *mergeFake) MarkMerged(_ context.Context, rec migration.MergeRecord) error {
	if f.claim == nil || f.claim.UID != rec.ClaimUID || f.claim.Record == nil || *f.claim.Record != rec {
		return errors.New("not marked merged")
	}
	f.calls = append(f.calls, "mark")
	f.claim.Merged = rec.ClaimUID
	return nil
}

var _ Merges = (*mergeFake)(nil)

// mergeCluster is a Splits that is also Merges (the SplitRunner's Cluster).
type mergeCluster struct {
	*splitFake
	*mergeFake
}

func (m mergeCluster) PrepareDirectory(ctx context.Context, job migration.Split) error {
	return m.mergeFake.PrepareDirectory(ctx, job)
}

func mergeRunner(f *mergeFake, after func(string, migration.Op) error) SplitRunner {
	return SplitRunner{Cluster: mergeCluster{newSplitFake(), f}, AfterStep: after}
}

func aliceMerge() migration.Merge {
	return migration.Merge{User: "alice", Namespace: "hub", Claim: "claim-alice", ClaimUID: "c1", Shared: "home-shared", Directory: "home/alice",
		UID: 1000, GID: 100, Mode: "0700", Image: "busybox", CopyImage: "rsync:3"}
}

// done: the claim carries the record and its own UID as the mark, the
// directory holds the claim's files, the claim its own, the Job is gone.
func (f *mergeFake) done(t *testing.T, what string, files map[string]string) {
	t.Helper()
	c := f.claim
	switch {
	case c == nil || c.Record == nil || c.Merged != c.UID || c.Record.ClaimUID != c.UID || c.Record.Directory != "home/alice":
		t.Fatalf("%s: claim %+v", what, c)
	case !maps.Equal(f.dirs["home/alice"], files) || !maps.Equal(f.files, files):
		t.Fatalf("%s: the directory holds %v, the claim %v, want %v", what, f.dirs["home/alice"], f.files, files)
	case f.job != nil:
		t.Fatalf("%s: the Job is left: %+v", what, f.job)
	}
}

// A merge checks the directory empty, records, copies and marks; stopped
// after any step (the Job ending meanwhile, or not), the next run goes on
// from there: it never checks a directory it filled as if it were
// another's, never records twice, and never marks a copy it did not see
// verified.
func TestMerge_runsAndResumes(t *testing.T) {
	f := newMergeFake()
	var ops []migration.Op
	step, err := mergeRunner(f, func(_ string, op migration.Op) error { ops = append(ops, op); return nil }).Merge(context.Background(), aliceMerge())
	want := []migration.Op{migration.OpPrepareMergeDirectory, migration.OpRecordMerge, migration.OpStartMerge, migration.OpWaitMerge, migration.OpMarkMerged}
	if err != nil || step != migration.StepDone || fmt.Sprint(ops) != fmt.Sprint(want) {
		t.Fatalf("%s %v, ops %v, want %v", step, err, ops, want)
	}
	orig := maps.Clone(f.files)
	f.done(t, "one run", orig)

	for stop := 1; stop <= len(want); stop++ {
		for _, jobEnds := range []bool{false, true} {
			what := fmt.Sprintf("stopped after op %d (%s), the Job ending meanwhile %v", stop, want[stop-1], jobEnds)
			f := newMergeFake()
			n := 0
			stoppedAt, err := mergeRunner(f, func(string, migration.Op) error {
				if n++; n == stop {
					return errors.New("killed")
				}
				return nil
			}).Merge(context.Background(), aliceMerge())
			if err == nil || stoppedAt != migration.MergeStepOf(want[stop-1]) {
				t.Fatalf("%s: %s %v", what, stoppedAt, err)
			}
			if jobEnds {
				f.finish()
			}
			starts := strings.Count(strings.Join(f.calls, ";"), "start ")
			f.calls = nil
			step, err := mergeRunner(f, nil).Merge(context.Background(), aliceMerge())
			if err != nil || step != migration.StepDone {
				t.Fatalf("%s: resumed: %s %v (%v)", what, step, err, f.calls)
			}
			f.done(t, what, orig)
			calls := strings.Join(f.calls, ";")
			if stop >= 2 && (strings.Contains(calls, "check ") || strings.Contains(calls, "record")) {
				t.Errorf("%s: after the record the directory is checked empty again, or recorded twice: %v", what, f.calls)
			}
			if jobEnds && (stop == 3 || stop == 4) && starts+strings.Count(calls, "start ") != 2 {
				t.Errorf("%s: a copy an earlier run saw end was trusted: %v", what, f.calls)
			}
		}
	}
}

// Pods on the claim or the directory: the merge waits, writing nothing
// before the record, and nothing but the record after it (a server that
// started in between); once they are gone it finishes with what the
// claim holds then.
func TestMerge_waitsForPods(t *testing.T) {
	f := newMergeFake()
	f.users = []string{"jupyter-alice"}
	if _, err := mergeRunner(f, nil).Merge(context.Background(), aliceMerge()); err == nil || !strings.Contains(err.Error(), "nothing was written") || f.claim.Record != nil || len(f.calls) != 0 {
		t.Fatalf("busy first: %v, calls %v", err, f.calls)
	}
	f.users = nil
	f.afterRecord = func() { f.users = []string{"jupyter-alice"}; f.files["late.txt"] = "written before the hub refused" }
	step, err := mergeRunner(f, nil).Merge(context.Background(), aliceMerge())
	if err == nil || !strings.Contains(err.Error(), "record stays") || step != migration.StepRecorded || f.job != nil {
		t.Fatalf("busy after the record: %s %v, job %+v", step, err, f.job)
	}
	f.users = nil
	if step, err := mergeRunner(f, nil).Merge(context.Background(), aliceMerge()); err != nil || step != migration.StepDone {
		t.Fatalf("once stopped: %s %v", step, err)
	}
	f.done(t, "after the pods", f.files)
	if f.dirs["home/alice"]["late.txt"] == "" {
		t.Error("what the server wrote before the record is missing from the directory")
	}
}

// A directory that holds files is refused before anything is written; a
// failed copy stops the merge with the record on and no mark; a claim made
// again since the plan is never recorded.
func TestMerge_refusals(t *testing.T) {
	f := newMergeFake()
	f.dirs["home/alice"] = map[string]string{".bashrc": "someone's"}
	if _, err := mergeRunner(f, nil).Merge(context.Background(), aliceMerge()); err == nil || !strings.Contains(err.Error(), "holds files") || f.claim.Record != nil {
		t.Fatalf("a directory with files: %v, claim %+v", err, f.claim)
	}
	if f.dirs["home/alice"][".bashrc"] != "someone's" || len(f.dirs["home/alice"]) != 1 {
		t.Fatalf("the directory changed: %v", f.dirs["home/alice"])
	}
	f = newMergeFake()
	f.failJob = true
	if _, err := mergeRunner(f, nil).Merge(context.Background(), aliceMerge()); err == nil || !strings.Contains(err.Error(), "failed") || f.claim.Merged != "" {
		t.Fatalf("a failed copy: %v, claim %+v", err, f.claim)
	}
	f = newMergeFake()
	f.claim.UID = "c2"
	if _, err := mergeRunner(f, nil).Merge(context.Background(), aliceMerge()); err == nil || !strings.Contains(err.Error(), "made again") || f.claim.Record != nil {
		t.Fatalf("a claim made again: %v, claim %+v", err, f.claim)
	}
}
