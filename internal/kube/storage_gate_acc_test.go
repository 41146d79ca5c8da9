package kube

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/acctest"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/execute"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/safety"
)

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
