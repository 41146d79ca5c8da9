package migration

import (
	"strings"
	"testing"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/claims"
)

// TestNextCopy_walk follows a copy as the cluster changes under it: at every
// point the decision is the next step, so an apply stopped anywhere resumes.
func TestNextCopy_walk(t *testing.T) {
	rec := func(s Step) *CopyRecord {
		return &CopyRecord{Step: s, Target: "home-a", To: claims.RWX, ID: "c0ffee", TargetUID: "t1"}
	}
	const src = "claim-a"
	ours := Target{Exists: true, CopyOf: src, CopyID: "c0ffee", UID: "t1"}
	switched := ours
	switched.Switched = true
	steps := []struct {
		name   string
		rec    *CopyRecord
		target Target
		job    *Job
		want   Op
		before bool // the check was made before this apply
	}{
		{"not started", nil, Target{}, nil, OpCreateTarget, false},
		{"ID recorded, target not yet", &CopyRecord{Step: StepPending, Target: "home-a", ID: "c0ffee"}, Target{}, nil, OpCreateTarget, false},
		{"target made, record not yet", &CopyRecord{Step: StepPending, Target: "home-a", ID: "c0ffee"}, ours, nil, OpCreateTarget, false},
		{"target created", rec(StepTargetCreated), ours, nil, OpStartCopy, false},
		{"job not made yet", rec(StepCopying), ours, nil, OpStartCopy, false},
		{"copying", rec(StepCopying), ours, &Job{}, OpWaitCopy, false},
		{"copied before this apply", rec(StepCopying), ours, &Job{Succeeded: true}, OpRestartCopy, true},
		{"copied", rec(StepCopying), ours, &Job{Succeeded: true}, OpVerify, false},
		{"verified by an earlier apply", rec(StepVerified), ours, nil, OpRestartCopy, true},
		{"verified", rec(StepVerified), ours, nil, OpSwitch, false},
		{"switched, the target not yet annotated", rec(StepSwitched), ours, nil, OpSwitch, true},
		{"switched", rec(StepSwitched), switched, nil, OpDone, true},
	}
	seen := map[Step]bool{}
	for _, s := range steps {
		got, err := NextCopy(src, CopyState{Record: s.rec, Target: s.target, Job: s.job, Watched: !s.before})
		if err != nil || got != s.want {
			t.Errorf("%s: NextCopy = %s, %v; want %s", s.name, got, err, s.want)
		}
		seen[CopyStepOf(got)] = true
	}
	for _, st := range []Step{StepPending, StepTargetCreated, StepCopying, StepVerified, StepSwitched} {
		if !seen[st] {
			t.Errorf("the walk never reached %s", st)
		}
	}
}

func TestNextCopy_refuses(t *testing.T) {
	const src = "claim-a"
	rec := &CopyRecord{Step: StepCopying, Target: "home-a", To: claims.RWX, ID: "c0ffee", TargetUID: "t1"}
	ours := Target{Exists: true, CopyOf: src, CopyID: "c0ffee", UID: "t1"}
	cases := []struct {
		name   string
		rec    *CopyRecord
		target Target
		job    *Job
		want   string
	}{
		{"target name taken by another claim", nil, Target{Exists: true, UID: "x"}, nil, "is not a copy of claim-a"},
		// The source was created again (or its record removed) after a
		// finished copy: the target is the user's home, never copied over.
		{"a copy without this record: the user's home", nil, Target{Exists: true, CopyOf: src, CopyID: "old", UID: "t0"}, nil, "may hold the user's home"},
		{"another copy's target", &CopyRecord{Step: StepPending, Target: "home-a", ID: "new"}, Target{Exists: true, CopyOf: src, CopyID: "old", UID: "t0"}, nil, "may hold the user's home"},
		{"target replaced since created", rec, Target{Exists: true, CopyOf: src, CopyID: "c0ffee", UID: "t2"}, nil, "created again"},
		{"target deleted mid-copy", rec, Target{}, nil, "deleted outside Terraform"},
		{"job failed", rec, ours, &Job{Failed: true, Reason: "BackoffLimitExceeded"}, "BackoffLimitExceeded"},
		// The record is written switched before the annotation: an
		// annotation without it was not made by a copy; the hub never
		// switched the user.
		{"annotated, record not switched", &CopyRecord{Step: StepVerified, Target: "home-a", ID: "c0ffee", TargetUID: "t1"},
			Target{Exists: true, CopyOf: src, CopyID: "c0ffee", UID: "t1", Switched: true}, nil, "never switched"},
		{"unknown step", &CopyRecord{Step: "sideways", Target: "home-a", ID: "c0ffee"}, ours, nil, "unknown copy step"},
	}
	for _, tc := range cases {
		op, err := NextCopy(src, CopyState{Record: tc.rec, Target: tc.target, Job: tc.job, Watched: true})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: NextCopy = %s, %v; want an error mentioning %q", tc.name, op, err, tc.want)
		}
	}
}

func TestCopyRecordsAndNames(t *testing.T) {
	r := CopyRecord{Step: StepVerified, User: "a@b", Target: "home-a", To: claims.RWX, Job: "j", Files: 12, Bytes: 3456}
	got, err := DecodeCopyRecord(r.Encode())
	if err != nil || *got != r {
		t.Fatalf("round trip: %+v, %v", got, err)
	}
	for _, bad := range []string{"", "[]", `{"step":"copying"}`, `{"target":"x"}`} {
		if _, err := DecodeCopyRecord(bad); err == nil {
			t.Errorf("DecodeCopyRecord(%q) accepted", bad)
		}
	}
	long := strings.Repeat("claim-", 20) + "-"
	for _, src := range []string{"claim-a", "claim-b", long} {
		n := JobName(src)
		if len(n) > 63 || strings.Contains(n, "--") || JobName(src) != n {
			t.Errorf("JobName(%q) = %q", src, n)
		}
	}
	if JobName("claim-a") == JobName("claim-b") {
		t.Errorf("two sources share a Job")
	}
	v, err := ParseVerification(`{"files":12,"bytes":3456}`)
	if err != nil || v.Files != 12 || v.Bytes != 3456 {
		t.Fatalf("ParseVerification: %+v, %v", v, err)
	}
	for _, bad := range []string{"", "done", `{"files":0,"bytes":0}`} {
		if _, err := ParseVerification(bad); err == nil {
			t.Errorf("ParseVerification(%q) accepted", bad)
		}
	}
}
