package migration

import (
	"strings"
	"testing"
)

func mergeRec() MergeRecord {
	return MergeRecord{User: "alice", Namespace: "hub", Claim: "claim-alice", ClaimUID: "c1", Shared: "home-shared", SharedUID: "s1", Directory: "home/alice"}
}

// Every branch of NextMerge: the operations in the order a merge takes
// them, and each refusal.
func TestNextMerge(t *testing.T) {
	rec := mergeRec()
	bare := func() *MergeClaim { return &MergeClaim{UID: "c1"} }
	recorded := func(mod func(*MergeClaim)) *MergeClaim {
		r := rec
		c := &MergeClaim{UID: "c1", Record: &r}
		if mod != nil {
			mod(c)
		}
		return c
	}
	job := func(uid string, succeeded, failed bool) *Job {
		return &Job{ClaimUID: uid, Succeeded: succeeded, Failed: failed, Reason: map[bool]string{true: "BackoffLimitExceeded"}[failed]}
	}
	st := func(c *MergeClaim, j *Job, prepared, watched bool) MergeState {
		return MergeState{Claim: c, Job: j, SharedUID: "s1", Prepared: prepared, Watched: watched}
	}
	for name, c := range map[string]struct {
		s    MergeState
		want Op
	}{
		"nothing yet: the directory first":              {st(bare(), nil, false, false), OpPrepareMergeDirectory},
		"the directory found empty: the record":         {st(bare(), nil, true, false), OpRecordMerge},
		"a Job of an earlier claim, no record":          {st(bare(), job("c0", true, false), false, false), OpPrepareMergeDirectory},
		"recorded by an earlier run: directory again":   {st(recorded(nil), nil, false, false), OpRecheckMergeDirectory},
		"recorded, directory made: copy":                {st(recorded(nil), nil, true, false), OpStartMerge},
		"the Job runs":                                  {st(recorded(nil), job("c1", false, false), true, true), OpWaitMerge},
		"the Job runs, seen only now":                   {st(recorded(nil), job("c1", false, false), false, false), OpWaitMerge},
		"the Job succeeded under this run's eyes":       {st(recorded(nil), job("c1", true, false), true, true), OpMarkMerged},
		"the Job succeeded before this run: run again":  {st(recorded(nil), job("c1", true, false), true, false), OpRestartMerge},
		"a Job of an earlier claim of that name":        {st(recorded(nil), job("c0", true, false), true, true), OpRestartMerge},
		"a failed Job of an earlier claim":              {st(recorded(nil), job("c0", false, true), true, false), OpRestartMerge},
		"marked, the Job left":                          {st(recorded(func(c *MergeClaim) { c.Merged = "c1" }), job("c1", true, false), false, false), OpDeleteMergeJob},
		"marked: done":                                  {st(recorded(func(c *MergeClaim) { c.Merged = "c1" }), nil, false, false), OpDone},
		"marked: done, whatever pods use the directory": {MergeState{Claim: recorded(func(c *MergeClaim) { c.Merged = "c1" }), SharedUID: "s1", Busy: []string{"jupyter-alice"}}, OpDone},
		"marked and being deleted: done":                {st(recorded(func(c *MergeClaim) { c.Merged = "c1"; c.Deleting = true }), nil, false, false), OpDone},
	} {
		got, err := NextMerge(rec, c.s)
		if err != nil || got != c.want {
			t.Errorf("%s: %s %v, want %s", name, got, err, c.want)
		}
	}

	other := rec
	other.Directory = "home/bob"
	for name, c := range map[string]struct {
		rec  MergeRecord
		s    MergeState
		want []string
	}{
		"not a plain directory":           {MergeRecord{User: "alice", Namespace: "hub", Claim: "claim-alice", ClaimUID: "c1", Shared: "s", SharedUID: "s1", Directory: "../x"}, st(bare(), nil, false, false), []string{"not a plain relative path"}},
		"no claim UID":                    {MergeRecord{User: "alice", Namespace: "hub", Claim: "claim-alice", Shared: "s", SharedUID: "s1", Directory: "home/alice"}, st(bare(), nil, false, false), []string{"no UID"}},
		"the claim is gone":               {rec, st(nil, nil, false, false), []string{"is gone"}},
		"the claim was made again":        {rec, st(&MergeClaim{UID: "c2"}, nil, true, false), []string{"made again", "c2"}},
		"another merge's record":          {rec, st(&MergeClaim{UID: "c1", Record: &other}, nil, true, false), []string{"another merge record"}},
		"an unreadable record":            {rec, st(&MergeClaim{UID: "c1", Unreadable: true}, nil, true, false), []string{"another merge record"}},
		"a mark of another UID":           {rec, st(recorded(func(c *MergeClaim) { c.Merged = "c0" }), nil, true, false), []string{"not its own UID"}},
		"a mark without this record":      {rec, st(&MergeClaim{UID: "c1", Merged: "c1"}, nil, true, false), []string{"not its own UID"}},
		"being deleted before the mark":   {rec, st(recorded(func(c *MergeClaim) { c.Deleting = true }), nil, true, false), []string{"being deleted"}},
		"the shared claim made again":     {rec, MergeState{Claim: recorded(nil), SharedUID: "s2"}, []string{"made again", "s2"}},
		"pods use it before the record":   {rec, MergeState{Claim: bare(), SharedUID: "s1", Busy: []string{"jupyter-alice"}}, []string{"waits", "jupyter-alice", "nothing was written"}},
		"pods use it after the record":    {rec, MergeState{Claim: recorded(nil), SharedUID: "s1", Busy: []string{"backup"}, Prepared: true}, []string{"waits", "backup", "refuses the user's new spawns"}},
		"the copy failed":                 {rec, st(recorded(nil), job("c1", false, true), true, true), []string{"failed", "BackoffLimitExceeded", MergeJobName("claim-alice"), MergeAnnotation}},
		"the copy failed before this run": {rec, st(recorded(nil), job("c1", false, true), false, false), []string{"failed"}},
	} {
		got, err := NextMerge(c.rec, c.s)
		if err == nil {
			t.Errorf("%s: %s, want an error", name, got)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %v, want it to say %q", name, err, w)
			}
		}
	}
}

func TestMergeStepOf(t *testing.T) {
	for op, want := range map[Op]Step{OpPrepareMergeDirectory: StepPending, OpRecordMerge: StepDirectoryReady, OpRecheckMergeDirectory: StepRecorded,
		OpStartMerge: StepRecorded, OpWaitMerge: StepCopying, OpRestartMerge: StepCopying, OpMarkMerged: StepCopying, OpDeleteMergeJob: StepDone, OpDone: StepDone} {
		if got := MergeStepOf(op); got != want {
			t.Errorf("%s: %s, want %s", op, got, want)
		}
	}
}

// The merge Job's name is the same every time, a Kubernetes name, one of
// the provider's Jobs, and never another kind's.
func TestMergeJobName(t *testing.T) {
	long := strings.Repeat("a", 80)
	for _, c := range []string{"claim-alice", long, "claim-x-"} {
		n := MergeJobName(c)
		if n != MergeJobName(c) || len(n) > 63 || !IsMigrationJob(n) || n == DirectoryCopyJobName(c) || n == JobName(c) || strings.Contains(n, "--") {
			t.Errorf("%q: %q", c, n)
		}
	}
}

// Merged: only a readable record of the claim's own UID and the mark of
// that UID.
func TestMerged(t *testing.T) {
	rec := mergeRec().Encode()
	for name, c := range map[string]struct {
		ann  map[string]string
		uid  string
		want bool
	}{
		"record and mark":         {map[string]string{MergeAnnotation: rec, MergedAnnotation: "c1"}, "c1", true},
		"record only":             {map[string]string{MergeAnnotation: rec}, "c1", false},
		"mark of another UID":     {map[string]string{MergeAnnotation: rec, MergedAnnotation: "c0"}, "c1", false},
		"made again, both copied": {map[string]string{MergeAnnotation: rec, MergedAnnotation: "c1"}, "c2", false},
		"mark only":               {map[string]string{MergedAnnotation: "c1"}, "c1", false},
		"unreadable record":       {map[string]string{MergeAnnotation: "{", MergedAnnotation: "c1"}, "c1", false},
		"no UID":                  {map[string]string{MergeAnnotation: rec, MergedAnnotation: ""}, "", false},
	} {
		if got := Merged(c.ann, c.uid); got != c.want {
			t.Errorf("%s: %v", name, got)
		}
	}
}
