package kube_test

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/execute"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/kube"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/kube/clientset"
)

// Review of consolidation: the plan reads which directories of the shared
// claim running pods use (SharedDirectoryUse) and leaves out the pods of
// the provider's own directory Jobs and move-out copy Jobs, but not those
// of a merge's copy Job. A merge resumed while the copy Job an earlier
// (stopped) apply started still runs is then "in use" by its own Job: the
// plan fails ("Homes in use cannot be merged", skip_running off) or leaves
// it for later, until the Job ends, and the next apply runs the copy
// again (a Job it did not watch). The apply's own check (MergeUsers)
// leaves these pods out; the plan should agree with it.
func TestSharedDirectoryUse_leavesOutTheMergesOwnCopyJob(t *testing.T) {
	job := kube.MergeJobObject(execute.Merge{User: "alice", Namespace: "hub", Claim: "claim-alice", Shared: "home-nfs", Directory: "alice", CopyImage: "rsync:3"}, "u-alice")
	labels := map[string]string{kube.JobNameLabel: job.Name}
	for k, v := range job.Spec.Template.Labels {
		labels[k] = v
	}
	pod := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: job.Name + "-x1", Namespace: "hub", Labels: labels},
		Spec: job.Spec.Template.Spec, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	c := clientset.NewClient(fake.NewClientset(&pod))
	ctx := context.Background()
	users, err := c.MergeUsers(ctx, "hub", "home-nfs", []string{"alice"}, "claim-alice")
	if err != nil || len(users) != 0 {
		t.Fatalf("MergeUsers: %v %v; the apply leaves out the merge's own Job", users, err)
	}
	use, err := c.SharedDirectoryUse(ctx, "hub", "home-nfs")
	if err != nil {
		t.Fatal(err)
	}
	if use.Uses("alice") {
		t.Errorf("the plan counts the merge's own copy Job (%s) as a pod using directory %q; the apply does not", job.Name, "alice")
	}
}
