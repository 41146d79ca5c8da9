package safety

import (
	"errors"
	"fmt"
	"strings"
)

// The gate: every step that deletes a claim or writes into one that may
// hold data passes Gate, with facts read right before the step
// (internal/execute reads them and runs the step). Gate is the one place
// that says when such a step may run; a plan only proposes the step.

// StepKind is a step that can lose a home's data.
type StepKind string

const (
	// StepDeleteClaim deletes a claim object (recreate, delete-source,
	// destroy, and a rebind once the volume is retained).
	StepDeleteClaim StepKind = "delete-claim"
	// StepCopyInto starts a copy Job that writes into a target claim with
	// rsync --delete.
	StepCopyInto StepKind = "copy-into"
)

// Step is one destructive step as the plan showed it.
type Step struct {
	Kind      StepKind
	Why       string // recreate, delete-source, destroy, rebind, copy: for messages
	User      string
	Namespace string
	Claim     string
	// UID is the claim the plan showed. A step whose plan showed no claim
	// never runs: nothing the plan did not show is deleted or overwritten.
	UID string
	// CreatedUID (StepCopyInto) is the target this migration created
	// empty, as its record says. A copy writes only into that claim.
	CreatedUID string
	// Verify (delete-source) asks for a verification made right before the
	// delete that Target, the user's home now, holds everything the claim
	// holds.
	Verify bool
	Target string
	Image  string // of the verification Job
}

// Facts are what the cluster shows right before the step.
type Facts struct {
	Exists   bool
	UID      string
	Deleting bool
	// MountedBy names the pods that have not finished and mount the claim
	// (a copy's own Job excluded), listed for this step.
	MountedBy []string
	// Switched: the claim is a copy the user was switched to (their home).
	Switched bool
	// Verified (with Step.Verify): the verification just made passed;
	// Unverified says why not.
	Verified   bool
	Unverified string
}

// ErrGone is Gate's answer for a delete whose claim no longer exists:
// nothing to do.
var ErrGone = errors.New("the claim no longer exists")

// Gate decides whether a destructive step may run now. It returns nil to
// proceed, ErrGone when a delete has nothing left to delete, or an error
// that says what changed since the plan and how to proceed.
func Gate(s Step, f Facts) error {
	what := fmt.Sprintf("%s of claim %s/%s (user %q)", s.Why, s.Namespace, s.Claim, s.User)
	switch {
	case s.Kind == StepDeleteClaim && !f.Exists:
		return ErrGone
	case !f.Exists:
		return fmt.Errorf("%s: the claim does not exist; nothing was done", what)
	case s.UID == "":
		return fmt.Errorf("%s refused: the plan showed no such claim, and nothing the plan did not show is deleted or overwritten. Plan again", what)
	case f.UID != s.UID:
		return fmt.Errorf("%s refused: it is not the claim the plan showed (uid %s, now %s): it was deleted and created again since the plan, by KubeSpawner at a spawn or by someone else, and may hold new data. Nothing was done; plan again", what, s.UID, f.UID)
	case s.Kind == StepCopyInto && f.Switched:
		return fmt.Errorf("%s refused: %s is a finished copy the user was switched to, their home now; nothing is copied over it (another apply may have finished this copy meanwhile)", what, s.Claim)
	case s.Kind == StepCopyInto && (s.CreatedUID == "" || s.CreatedUID != f.UID):
		return fmt.Errorf("%s refused: the copy writes only into a claim this migration created empty, and %s was not (recorded uid %q, now %s). It may be the user's home; nothing was done", what, s.Claim, s.CreatedUID, f.UID)
	case len(f.MountedBy) > 0:
		return fmt.Errorf("%s refused: pod(s) %s mount it now (a server started since the plan?). Nothing was done; stop the server and apply again", what, strings.Join(f.MountedBy, ", "))
	case s.Kind == StepDeleteClaim && f.Deleting:
		return nil // already being deleted: deleting again waits for it
	case s.Verify && !f.Verified:
		return fmt.Errorf("%s refused: verifying it again right before the delete found that the user's home does not hold everything it holds (%s). It is kept", what, orDefault(f.Unverified, "no verification"))
	}
	return nil
}
