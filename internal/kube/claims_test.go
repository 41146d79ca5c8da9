package kube_test

import (
	"context"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/kube/clientset"
)

// ListClaims answers from the snapshot the last List left (one List per
// plan), converted; what it hands out is the caller's own slice: a caller
// that reorders or changes its elements does not change what the next
// caller, or the snapshot, sees.
func TestListClaimsSnapshotIsNotShared(t *testing.T) {
	pvc := func(name, user string) *corev1.PersistentVolumeClaim {
		return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "hub",
			Labels: map[string]string{"component": "singleuser-storage", "hub.jupyter.org/username": user}}}
	}
	cs := fake.NewClientset(pvc("claim-a", "a"), pvc("claim-b", "b"))
	var lists atomic.Int32
	cs.PrependReactor("list", "persistentvolumeclaims", func(k8stesting.Action) (bool, runtime.Object, error) {
		lists.Add(1)
		return false, nil, nil
	})
	c := clientset.NewClient(cs)
	ctx := context.Background()
	first, err := c.ListClaims(ctx, "hub", "component=singleuser-storage")
	if err != nil || len(first) != 2 {
		t.Fatalf("list: %v %v", first, err)
	}
	first[0], first[1] = first[1], first[0]
	first[0].Name, first[0].UID = "changed", "changed"
	second, err := c.ListClaims(ctx, "hub", "component=singleuser-storage")
	if err != nil {
		t.Fatal(err)
	}
	if n := lists.Load(); n != 1 {
		t.Errorf("two reads within the snapshot's time cost %d Lists, want 1", n)
	}
	if len(second) != 2 || second[0].Name != "claim-a" || second[0].Username != "a" || second[1].Name != "claim-b" {
		t.Errorf("the second read saw the first caller's changes: %+v", second)
	}
	second[1].Name = "changed"
	if again, err := c.ListClaims(ctx, "hub", "component=singleuser-storage"); err != nil || again[1].Name != "claim-b" {
		t.Errorf("a read of the snapshot saw an earlier reader's change: %+v %v", again, err)
	}
	// A fresh List replaces the snapshot; its answer is not shared either.
	fresh, err := c.ListClaimsFresh(ctx, "hub", "component=singleuser-storage")
	if err != nil || len(fresh) != 2 || lists.Load() != 2 {
		t.Fatalf("fresh: %v %v after %d Lists", fresh, err, lists.Load())
	}
	fresh[1].Name = "changed"
	third, err := c.ListClaims(ctx, "hub", "component=singleuser-storage")
	if err != nil || lists.Load() != 2 || third[1].Name != "claim-b" {
		t.Errorf("after a fresh List: %+v %v (%d Lists)", third, err, lists.Load())
	}
}
