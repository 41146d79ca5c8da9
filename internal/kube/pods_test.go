package kube_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/claims"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/kube/clientset"
)

// The gate asks which pods mount a claim right before each destructive
// step, and steps run in parallel. Every answer comes from a List that
// began after the question (a pod that started just before is seen), and
// parallel questions share Lists instead of costing one each.
func TestMountedByIsFreshAndShared(t *testing.T) {
	cs := fake.NewClientset()
	var lists atomic.Int32
	var mu sync.Mutex
	var pods []corev1.Pod
	release := make(chan struct{})
	first := true
	cs.PrependReactor("list", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		lists.Add(1)
		mu.Lock()
		snapshot := append([]corev1.Pod(nil), pods...)
		wait := first
		first = false
		mu.Unlock()
		if wait {
			<-release // the first List is slow
		}
		return true, &corev1.PodList{Items: snapshot}, nil
	})
	c := clientset.NewClient(cs)
	ctx := context.Background()

	// A List begins and stalls; then alice's server starts, then 16 steps ask.
	firstDone := make(chan []string)
	go func() {
		got, err := c.MountedBy(ctx, "hub", "claim-alice", "")
		if err != nil {
			t.Error(err)
		}
		firstDone <- got
	}()
	for lists.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	mu.Lock()
	pods = append(pods, corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "jupyter-alice", Namespace: "hub"},
		Spec: corev1.PodSpec{Volumes: []corev1.Volume{{Name: "home", VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "claim-alice"}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning}})
	mu.Unlock()
	var wg sync.WaitGroup
	answers := make([][]string, 16)
	for i := range answers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got, err := c.MountedBy(ctx, "hub", "claim-alice", "")
			if err != nil {
				t.Error(err)
			}
			answers[i] = got
		}()
	}
	time.Sleep(50 * time.Millisecond) // they all wait behind the stalled List
	close(release)
	wg.Wait()
	if got := <-firstDone; len(got) != 0 {
		t.Errorf("the List that began before the server started saw it: %v", got)
	}
	for i, got := range answers {
		if len(got) != 1 || got[0] != "jupyter-alice" {
			t.Errorf("question %d, asked after the server started, got %v", i, got)
		}
	}
	if n := lists.Load(); n != 2 {
		t.Errorf("17 questions cost %d Lists, want 2 (the stalled one and one they share)", n)
	}
}

// The plan's view of running servers leaves out the provider's own copy
// and verification Jobs (a copy an apply left running is resumed, not
// taken for a server); the gate counts every pod.
func TestMountedClaimsLeavesOutMigrationJobs(t *testing.T) {
	pod := func(name, job, claim string) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "hub", Labels: map[string]string{}},
			Spec: corev1.PodSpec{Volumes: []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}}}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning}}
		if job != "" {
			p.Labels["batch.kubernetes.io/job-name"] = job
		}
		return p
	}
	cs := fake.NewClientset(
		pod("copy-1", "home-copy-claim-alice-0123abcd", "claim-alice"),
		pod("verify-1", "home-verify-claim-carol-0123abcd", "claim-carol"),
		pod("jupyter-bob", "", "claim-bob"),
		pod("backup-1", "nightly-backup", "claim-dave"),
	)
	c := clientset.NewClient(cs)
	got, err := c.MountedClaims(context.Background(), "hub")
	if err != nil {
		t.Fatal(err)
	}
	at := func(name string) claims.Ref { return claims.Ref{Namespace: "hub", Name: name} }
	if got[at("claim-alice")] || got[at("claim-carol")] || !got[at("claim-bob")] || !got[at("claim-dave")] {
		t.Errorf("MountedClaims = %v; want claim-bob and claim-dave (another Job's pod uses it), not the copy's or the verification's", got)
	}
	if pods, err := c.MountedBy(context.Background(), "hub", "claim-alice", ""); err != nil || len(pods) != 1 {
		t.Errorf("MountedBy(claim-alice) = %v, %v; the gate counts the copy's pod", pods, err)
	}
}
