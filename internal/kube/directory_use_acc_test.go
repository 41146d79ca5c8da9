package kube

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/acctest"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/kubespawner"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/migration"
)

// What a plan reads of the directories of the shared claim that pods use,
// from real pod objects: a server's directory is in use; the pods of the
// provider's own directory, copy and merge Jobs are not (a move or a merge
// under way is resumed, not waited for: a merge Job still running when
// the next plan reads left that merge waiting for itself); a pod that
// carries a Job's name but not its component is.
func TestAccSharedDirectoryUse(t *testing.T) {
	ns, ctx := acctest.Namespace(t), context.Background()
	admin, client := acctest.Cluster(t).Admin(), client(t)
	job := func(name, sub, job, component string) {
		p := sharedPod(ns, name, "home-shared", sub, "", nil)
		p.Labels = map[string]string{JobNameLabel: job}
		if component != "" {
			p.Labels[kubespawner.LabelAppComponent] = component
		}
		if _, err := admin.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := admin.CoreV1().Pods(ns).Create(ctx, sharedPod(ns, "jupyter-alice", "home-shared", "home/alice", "", nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	job("merge", "home/bob", migration.MergeJobName("claim-bob"), MergeJobComponent)
	job("copy", "home/carol", migration.DirectoryCopyJobName("claim-carol"), DirectoryCopyJobComponent)
	job("dir", "home/dave", DirectoryJobName("claim-dave"), DirectoryJobComponent)
	job("forged", "home/erin", migration.MergeJobName("claim-erin"), "")
	use, err := client.SharedDirectoryUse(ctx, ns, "home-shared")
	if err != nil {
		t.Fatal(err)
	}
	for dir, want := range map[string]bool{"home/alice": true, "home/bob": false, "home/carol": false, "home/dave": false, "home/erin": true} {
		if got := use.Uses(dir); got != want {
			t.Errorf("%s in use: %v, want %v", dir, got, want)
		}
	}
}
