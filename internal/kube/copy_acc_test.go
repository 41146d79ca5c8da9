package kube

import (
	"context"
	"strings"
	"testing"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/acctest"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/claims"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/migration"
)

// A copy record is written only over the record its step decided from: one
// that changed meanwhile (another apply moved the copy on) is not rolled
// back, while other changes to the claim do not stop the step.
func TestAccCopyRecordNotRolledBack(t *testing.T) {
	c, ns, ctx := client(t), acctest.Namespace(t), context.Background()
	src := seedClaim(t, c, ns, "claim-alice")
	rec := migration.CopyRecord{Step: migration.StepTargetCreated, User: "alice", Target: "home-alice", To: claims.RWX, ID: "a1"}
	written, err := c.WriteCopyRecord(ctx, ns, "claim-alice", src.Annotations[migration.CopyAnnotation], rec)
	if err != nil {
		t.Fatal(err)
	}
	// A controller updates the claim meanwhile: that is no reason to stop.
	if err := c.AnnotateClaim(ctx, ns, "claim-alice", "example.org/unrelated", "x"); err != nil {
		t.Fatal(err)
	}
	// Another apply moves the copy on; this one still holds what it wrote.
	switched := rec
	switched.Step = migration.StepSwitched
	if _, err := c.WriteCopyRecord(ctx, ns, "claim-alice", written, switched); err != nil {
		t.Fatal(err)
	}
	stale := rec
	stale.Step = migration.StepCopying
	if _, err := c.WriteCopyRecord(ctx, ns, "claim-alice", written, stale); err == nil || !strings.Contains(err.Error(), "changed since this step read it") {
		t.Fatalf("a stale record write: %v", err)
	}
	got, _ := c.GetClaim(ctx, ns, "claim-alice")
	if r, err := migration.DecodeCopyRecord(got.Annotations[migration.CopyAnnotation]); err != nil || r.Step != migration.StepSwitched {
		t.Fatalf("the record was rolled back: %v %v", r, err)
	}
}

// A Job left from before is replaced, never taken for the new one.
func TestAccReplaceJob(t *testing.T) {
	c, ns, ctx := client(t), acctest.Namespace(t), context.Background()
	job := CopyJob(Copy{Namespace: ns, Source: "claim-alice", Target: "home-alice", Image: "rsync"})
	if err := c.createJob(ctx, job); err != nil {
		t.Fatal(err)
	}
	before, err := c.getJob(ctx, ns, job.Name)
	if err != nil || before == nil {
		t.Fatal(before, err)
	}
	if err := c.replaceJob(ctx, CopyJob(Copy{Namespace: ns, Source: "claim-alice", Target: "home-alice", Image: "rsync"})); err != nil {
		t.Fatal(err)
	}
	after, err := c.getJob(ctx, ns, job.Name)
	if err != nil || after == nil || after.UID == before.UID {
		t.Fatalf("the old Job was kept (uid %s): %v", before.UID, err)
	}
}
