package safety

import (
	"errors"
	"strings"
	"testing"
)

func TestGate(t *testing.T) {
	del := Step{Kind: StepDeleteClaim, Why: "recreate", User: "alice", Namespace: "hub", Claim: "claim-alice", UID: "u1"}
	into := Step{Kind: StepCopyInto, Why: "copy", User: "alice", Namespace: "hub", Claim: "home-alice", UID: "t1", CreatedUID: "t1"}
	src := del
	src.Why, src.Verify, src.Target = "delete-source", true, "home-alice"
	here := Facts{Exists: true, UID: "u1"}
	cases := []struct {
		name string
		step Step
		f    Facts
		want string // "" proceeds; "gone" is ErrGone
	}{
		{"the planned claim, unused", del, here, ""},
		{"already gone", del, Facts{}, "gone"},
		{"created again since the plan", del, Facts{Exists: true, UID: "u2"}, "not the claim the plan showed"},
		{"the plan showed no claim", Step{Kind: StepDeleteClaim, Why: "destroy", Claim: "claim-bob"}, Facts{Exists: true, UID: "u9"}, "plan showed no such claim"},
		{"a server started", del, Facts{Exists: true, UID: "u1", MountedBy: []string{"jupyter-alice"}}, "jupyter-alice"},
		{"being deleted already", del, Facts{Exists: true, UID: "u1", Deleting: true}, ""},
		{"source verified now", src, Facts{Exists: true, UID: "u1", Verified: true}, ""},
		{"source not verified", src, Facts{Exists: true, UID: "u1", Unverified: "notes.md differs"}, "notes.md differs"},
		{"source verified, but mounted", src, Facts{Exists: true, UID: "u1", Verified: true, MountedBy: []string{"p"}}, "mount it now"},
		{"copy into the target it created", into, Facts{Exists: true, UID: "t1"}, ""},
		{"copy into a target it did not create", Step{Kind: StepCopyInto, Why: "copy", Claim: "home-alice", UID: "t1"}, Facts{Exists: true, UID: "t1"}, "created empty"},
		{"copy into a replaced target", into, Facts{Exists: true, UID: "t2"}, "not the claim the plan showed"},
		{"copy into a target in use", into, Facts{Exists: true, UID: "t1", MountedBy: []string{"jupyter-alice"}}, "mount it now"},
		{"copy into a missing target", into, Facts{}, "does not exist"},
		{"copy into a target another apply switched to", into, Facts{Exists: true, UID: "t1", Switched: true}, "their home now"},
	}
	for _, tc := range cases {
		err := Gate(tc.step, tc.f)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: refused: %v", tc.name, err)
		case tc.want == "gone" && !errors.Is(err, ErrGone):
			t.Errorf("%s: %v, want ErrGone", tc.name, err)
		case tc.want != "" && tc.want != "gone" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: %v, want an error mentioning %q", tc.name, err, tc.want)
		}
	}
}

func TestReconcile(t *testing.T) {
	planned := Changes{
		"alice": {Action: ActionRecreate, Claim: "claim-alice", UID: "a1"},
		"bob":   {Action: ActionCreate, Claim: "claim-bob"},
		"carol": {Action: ActionResize, Claim: "claim-carol", UID: "c1"},
		"dave":  {Action: ActionCreate, Claim: "claim-dave"},
	}
	now := Changes{
		"alice": {Action: ActionRecreate, Claim: "claim-alice", UID: "a1"},
		// bob spawned since the plan: KubeSpawner made his claim in the old mode.
		"bob":   {Action: ActionRecreate, Claim: "claim-bob", UID: "b1"},
		"carol": {Action: ActionResize, Claim: "claim-carol", UID: "c1"},
		// erin's claim was deleted since the plan.
		"erin": {Action: ActionCreate, Claim: "claim-erin"},
		// dave spawned with a matching claim: nothing left to do.
		// frank's claim of that name is now looked for in another namespace.
		"frank": {Action: ActionCreate, Namespace: "jupyter-frank", Claim: "home"},
	}
	planned["frank"] = Change{Action: ActionCreate, Namespace: "jhub", Claim: "home"}
	for _, cs := range []Changes{planned, now} {
		for k, c := range cs {
			if c.Namespace == "" {
				c.Namespace = "jhub"
				cs[k] = c
			}
		}
	}
	run, refused, moot := Reconcile(planned, now)
	if strings.Join(run, ",") != "alice,carol" {
		t.Errorf("run %v", run)
	}
	var keys []string
	for _, m := range refused {
		keys = append(keys, m.String())
	}
	if got := strings.Join(keys, "; "); got != "bob: planned create jhub/claim-bob, now recreate jhub/claim-bob (uid b1); erin: planned nothing, now create jhub/claim-erin; frank: planned create jhub/home, now create jupyter-frank/home" {
		t.Errorf("refused: %s", got)
	}
	if len(moot) != 1 || moot[0].Key != "dave" {
		t.Errorf("moot %v", moot)
	}
	if c, err := DecodeChanges(planned.Encode()); err != nil || len(c) != 5 || c["alice"] != planned["alice"] {
		t.Errorf("round trip: %v %v", c, err)
	}
}
