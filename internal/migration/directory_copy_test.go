package migration

import (
	"strings"
	"testing"
)

func dcopyRecord() SplitRecord {
	return SplitRecord{User: "alice", Namespace: "hub", Claim: "claim-alice", Shared: "home-shared", SharedUID: "s1",
		Directory: "home/alice", Method: MethodDirectoryCopy}
}

// Every branch of NextDirectoryCopy: the operations in the order a move
// takes them, and each refusal.
func TestNextDirectoryCopy(t *testing.T) {
	rec := dcopyRecord()
	mine := func(mod func(*SplitClaim)) *SplitClaim {
		r := rec
		c := &SplitClaim{UID: "c1", Record: &r, Phase: "Bound", VolumeName: "pvc-1"}
		if mod != nil {
			mod(c)
		}
		return c
	}
	job := func(uid string, succeeded, failed bool) *Job {
		return &Job{ClaimUID: uid, Succeeded: succeeded, Failed: failed, Reason: map[bool]string{true: "BackoffLimitExceeded"}[failed]}
	}
	for name, c := range map[string]struct {
		s    DirectoryCopyState
		want Op
	}{
		"nothing yet: the directory first":          {DirectoryCopyState{}, OpPrepareDirectory},
		"the directory ready: the claim":            {DirectoryCopyState{Prepared: true}, OpCreateDirectoryCopyClaim},
		"a Job of an earlier claim, no claim":       {DirectoryCopyState{Job: job("c0", true, false)}, OpPrepareDirectory},
		"the claim made by an earlier run: recheck": {DirectoryCopyState{Claim: mine(nil)}, OpRecheckDirectory},
		"the claim, checked: copy":                  {DirectoryCopyState{Claim: mine(nil), Prepared: true}, OpStartDirectoryCopy},
		"the Job runs":                              {DirectoryCopyState{Claim: mine(nil), Job: job("c1", false, false), Watched: true}, OpWaitDirectoryCopy},
		"the Job runs, seen by this run only now":   {DirectoryCopyState{Claim: mine(nil), Job: job("c1", false, false)}, OpWaitDirectoryCopy},
		"the Job succeeded under this run's eyes":   {DirectoryCopyState{Claim: mine(nil), Job: job("c1", true, false), Watched: true}, OpMarkSplitCopied},
		"the Job succeeded before this run":         {DirectoryCopyState{Claim: mine(nil), Job: job("c1", true, false), Prepared: true}, OpRestartDirectoryCopy},
		"a Job of an earlier claim of that name":    {DirectoryCopyState{Claim: mine(nil), Job: job("c0", true, false), Watched: true}, OpRestartDirectoryCopy},
		"a failed Job of an earlier claim":          {DirectoryCopyState{Claim: mine(nil), Job: job("c0", false, true)}, OpRestartDirectoryCopy},
		"marked, the Job left":                      {DirectoryCopyState{Claim: mine(func(c *SplitClaim) { c.Copied = "c1" }), Job: job("c1", true, false)}, OpDeleteDirectoryCopyJob},
		"marked: done":                              {DirectoryCopyState{Claim: mine(func(c *SplitClaim) { c.Copied = "c1" })}, OpDone},
		"marked: done, whatever pods use it":        {DirectoryCopyState{Claim: mine(func(c *SplitClaim) { c.Copied = "c1" }), Busy: []string{"jupyter-alice"}}, OpDone},
	} {
		got, err := NextDirectoryCopy(rec, c.s)
		if err != nil || got != c.want {
			t.Errorf("%s: %s %v, want %s", name, got, err, c.want)
		}
	}

	split := rec
	split.Method, split.Volume = "", SplitVolumeName("hub", "claim-alice")
	otherShared := rec
	otherShared.SharedUID = "s0"
	for name, c := range map[string]struct {
		rec  SplitRecord
		s    DirectoryCopyState
		want []string
	}{
		"a split's record":               {split, DirectoryCopyState{}, []string{"not a move by copy"}},
		"a directory that is not plain":  {func() SplitRecord { r := rec; r.Directory = "home/../bob"; return r }(), DirectoryCopyState{}, []string{"not a plain relative path"}},
		"an absolute directory":          {func() SplitRecord { r := rec; r.Directory = "/etc"; return r }(), DirectoryCopyState{}, []string{"not a plain relative path"}},
		"a claim without a record":       {rec, DirectoryCopyState{Claim: &SplitClaim{UID: "k1", Phase: "Bound"}, Prepared: true}, []string{"never taken over", "claim-alice"}},
		"a claim of a zero-copy split":   {rec, DirectoryCopyState{Claim: mine(func(c *SplitClaim) { c.Record = &split })}, []string{"never taken over"}},
		"a claim of another shared UID":  {rec, DirectoryCopyState{Claim: mine(func(c *SplitClaim) { c.Record = &otherShared })}, []string{"never taken over"}},
		"a foreign claim marked copied":  {rec, DirectoryCopyState{Claim: &SplitClaim{UID: "k1", Copied: "k1"}}, []string{"never taken over"}},
		"being deleted":                  {rec, DirectoryCopyState{Claim: mine(func(c *SplitClaim) { c.Deleting = true }), Prepared: true}, []string{"being deleted", "directory still holds"}},
		"marked and being deleted":       {rec, DirectoryCopyState{Claim: mine(func(c *SplitClaim) { c.Deleting, c.Copied = true, "c1" })}, []string{"being deleted"}},
		"marked under another UID":       {rec, DirectoryCopyState{Claim: mine(func(c *SplitClaim) { c.Copied = "c0" }), Prepared: true}, []string{"made again", "nothing is copied over it"}},
		"busy before the claim":          {rec, DirectoryCopyState{Busy: []string{"jupyter-alice"}, Prepared: true}, []string{"jupyter-alice", "waits", "stop the server and apply again; the user keeps the directory meanwhile", "no claim was made"}},
		"busy after the claim":           {rec, DirectoryCopyState{Claim: mine(nil), Busy: []string{"jupyter-alice", "debug"}, Prepared: true}, []string{"jupyter-alice, debug", "claim hub/claim-alice stays", "refuses"}},
		"busy while the Job ran":         {rec, DirectoryCopyState{Claim: mine(nil), Job: job("c1", true, false), Busy: []string{"x"}, Watched: true}, []string{"waits"}},
		"the Job failed":                 {rec, DirectoryCopyState{Claim: mine(nil), Job: job("c1", false, true), Watched: true}, []string{"kubectl logs -n hub job/" + DirectoryCopyJobName("claim-alice"), "BackoffLimitExceeded", "unchanged", "delete the Job", "delete claim hub/claim-alice", "still holds everything"}},
		"the Job failed before this run": {rec, DirectoryCopyState{Claim: mine(nil), Job: job("c1", false, true), Prepared: true}, []string{"failed"}},
	} {
		got, err := NextDirectoryCopy(c.rec, c.s)
		if err == nil {
			t.Errorf("%s: %s, want an error", name, got)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(strings.ToLower(err.Error()), strings.ToLower(w)) {
				t.Errorf("%s: %v\nwant it to say %q", name, err, w)
			}
		}
	}
}

func TestDirectoryCopyStepOf(t *testing.T) {
	for op, want := range map[Op]Step{
		OpPrepareDirectory:         StepPending,
		OpCreateDirectoryCopyClaim: StepDirectoryReady,
		OpRecheckDirectory:         StepClaimCreated,
		OpStartDirectoryCopy:       StepClaimCreated,
		OpWaitDirectoryCopy:        StepCopying,
		OpRestartDirectoryCopy:     StepCopying,
		OpMarkSplitCopied:          StepCopying,
		OpDeleteDirectoryCopyJob:   StepDone,
		OpDone:                     StepDone,
	} {
		if got := DirectoryCopyStepOf(op); got != want {
			t.Errorf("%s: %s, want %s", op, got, want)
		}
	}
}

// The copy Job's name: stable, a valid name, never a per-user copy's or
// verification's Job name, and known as the provider's own Job.
func TestDirectoryCopyJobName(t *testing.T) {
	long := strings.Repeat("c", 60) + "-"
	for _, claim := range []string{"claim-alice", "dir-claim-alice", long, "claim-a.b-"} {
		n := DirectoryCopyJobName(claim)
		if n != DirectoryCopyJobName(claim) || len(n) > 63 || strings.HasSuffix(n, "-") || !IsMigrationJob(n) {
			t.Errorf("%s: %q", claim, n)
		}
		for _, other := range []string{claim, "dcopy-" + claim, n} {
			if JobName(other) == n || VerifyJobName(other) == n {
				t.Errorf("%s: %q is also the copy Job of %s", claim, n, other)
			}
		}
	}
	if DirectoryCopyJobName("claim-alice") == DirectoryCopyJobName("claim-bob") {
		t.Error("two claims, one Job")
	}
}
