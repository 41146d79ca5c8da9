package execute

import (
	"context"
	"errors"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/claims"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/migration"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/safety"
)

// Cluster is what the gate reads and what a gated step changes.
type Cluster interface {
	// Claim returns a claim as it is now; nil when it does not exist.
	Claim(ctx context.Context, namespace, name string) (*claims.Claim, error)
	// MountedBy lists, now, the pods in namespace that have not finished
	// and mount claim, except the pods of the Job named exceptJob.
	MountedBy(ctx context.Context, namespace, claim, exceptJob string) ([]string, error)
	// RemoveClaim deletes a claim if it still has uid and waits until it
	// is gone. Only Delete calls it: every delete passes the gate.
	RemoveClaim(ctx context.Context, namespace, name, uid string) error
	// VerifyCopy checks, now, that target holds everything source holds
	// (both mounted read-only). ok false says why in detail.
	// image is the copy image (with sh and rsync).
	VerifyCopy(ctx context.Context, namespace, source, target, image string) (ok bool, detail string, err error)
}

// Facts reads what the gate needs to decide step s, right now.
// exceptJob names a Job whose pods do not count as users of the claim (a
// copy's own Job). A verification (s.Verify), which takes a while, runs
// only when the other facts let the step through, and they are read again
// after it, so that they are fresh when the step runs.
func Facts(ctx context.Context, cl Cluster, s safety.Step, exceptJob string) (safety.Facts, error) {
	f, err := claimFacts(ctx, cl, s, exceptJob)
	if err != nil || !s.Verify {
		return f, err
	}
	pre := s
	pre.Verify = false
	if !passes(pre, f) {
		return f, nil // refused (or gone) without verifying
	}
	ok, detail, err := cl.VerifyCopy(ctx, s.Namespace, s.Claim, s.Target, s.Image)
	if err != nil {
		return f, err
	}
	if f, err = claimFacts(ctx, cl, s, exceptJob); err != nil {
		return f, err
	}
	f.Verified, f.Unverified = ok, detail
	return f, nil
}

// passes reports whether the gate lets step s through on facts f.
func passes(s safety.Step, f safety.Facts) bool { return safety.Gate(s, f) == nil }

func claimFacts(ctx context.Context, cl Cluster, s safety.Step, exceptJob string) (safety.Facts, error) {
	var f safety.Facts
	c, err := cl.Claim(ctx, s.Namespace, s.Claim)
	if err != nil || c == nil {
		return f, err
	}
	f.Exists, f.UID, f.Deleting = true, c.UID, c.Deleting
	f.Switched = c.Annotations[migration.CopySwitchedAnnotation] != ""
	f.MountedBy, err = cl.MountedBy(ctx, s.Namespace, s.Claim, exceptJob)
	return f, err
}

// Guard reads the facts and passes the gate: nil when step s may run now.
func Guard(ctx context.Context, cl Cluster, s safety.Step, exceptJob string) error {
	f, err := Facts(ctx, cl, s, exceptJob)
	if err != nil {
		return err
	}
	return safety.Gate(s, f)
}

// Delete deletes the claim of step s through the gate; a claim that is
// already gone is not an error.
func Delete(ctx context.Context, cl Cluster, s safety.Step) error {
	s.Kind = safety.StepDeleteClaim
	err := Guard(ctx, cl, s, "")
	switch {
	case errors.Is(err, safety.ErrGone):
		return nil
	case err != nil:
		return err
	}
	return cl.RemoveClaim(ctx, s.Namespace, s.Claim, s.UID)
}
