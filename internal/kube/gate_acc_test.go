package kube

import (
	"context"
	"os"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/acctest"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/execute"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/migration"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/safety"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/testcluster"
)

func TestMain(m *testing.M) { os.Exit(acctest.Run(m, testcluster.Options{ControllerManager: true})) }

// client is the provider's own client on the test cluster, as admin.
func client(t *testing.T) *Client {
	t.Helper()
	api, err := NewAPI(acctest.Cluster(t).RESTConfig(acctest.Cluster(t).AdminToken))
	if err != nil {
		t.Fatal(err)
	}
	return NewClient(api)
}

func seedClaim(t *testing.T, c *Client, ns, name string) *corev1.PersistentVolumeClaim {
	t.Helper()
	pvc, err := c.Kube.CoreV1().PersistentVolumeClaims(ns).Create(context.Background(),
		NewClaim(metav1.ObjectMeta{Name: name, Namespace: ns}, safety.RWO, "none", resource.MustParse("1Gi")), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return pvc
}

// The gate against the API server: a claim is deleted only while it is
// the object the plan showed and no unfinished pod mounts it.
func TestAccGatedDelete(t *testing.T) {
	c, ns, ctx := client(t), acctest.Namespace(t), context.Background()
	old := seedClaim(t, c, ns, "claim-alice")
	step := safety.Step{Why: "recreate", User: "alice", Namespace: ns, Claim: "claim-alice", UID: string(old.UID)}

	// KubeSpawner created it again since the plan: another object.
	if err := c.RemoveClaim(ctx, ns, "claim-alice", string(old.UID)); err != nil {
		t.Fatal(err)
	}
	again := seedClaim(t, c, ns, "claim-alice")
	if err := execute.Delete(ctx, c, step); err == nil || !strings.Contains(err.Error(), "not the claim the plan showed") {
		t.Fatalf("delete of a claim created again since the plan: %v", err)
	}
	// Planned as this object, but a server started on it.
	step.UID = string(again.UID)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "jupyter-alice", Namespace: ns}, Spec: corev1.PodSpec{
		Containers: []corev1.Container{{Name: "notebook", Image: "notebook"}},
		Volumes: []corev1.Volume{{Name: "home", VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "claim-alice"}}}}}}
	if _, err := acctest.Cluster(t).Admin().CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := execute.Delete(ctx, c, step); err == nil || !strings.Contains(err.Error(), "jupyter-alice") {
		t.Fatalf("delete under a running server: %v", err)
	}
	if got, _ := c.Claim(ctx, ns, "claim-alice"); got == nil || got.UID != string(again.UID) || got.Deleting {
		t.Fatalf("the claim was touched: %+v", got)
	}
	// The server stopped: now it goes.
	if err := acctest.Cluster(t).Admin().CoreV1().Pods(ns).Delete(ctx, "jupyter-alice", metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
		t.Fatal(err)
	}
	if err := execute.Delete(ctx, c, step); err != nil {
		t.Fatal(err)
	}
	if got, _ := c.Claim(ctx, ns, "claim-alice"); got != nil {
		t.Fatalf("still there: %+v", got)
	}
}

// A copy record is written only over the record its step decided from: one
// that changed meanwhile (another apply moved the copy on) is not rolled
// back, while other changes to the claim do not stop the step.
func TestAccCopyRecordNotRolledBack(t *testing.T) {
	c, ns, ctx := client(t), acctest.Namespace(t), context.Background()
	src := seedClaim(t, c, ns, "claim-alice")
	rec := migration.CopyRecord{Step: migration.StepTargetCreated, User: "alice", Target: "home-alice", To: safety.RWX, ID: "a1"}
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
