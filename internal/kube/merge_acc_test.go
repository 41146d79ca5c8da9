package kube

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/acctest"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/claims"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/execute"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/kubespawner"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/migration"
)

// mergeJobsRun stands in for the node in this package: the directory Jobs
// make nothing (no Job can run without a node), and WaitJob plays the Job
// controller for the copy Job (copyJobsRun). Every other call is the
// Client's, against the API server. The Jobs run for real in
// internal/nodeacc.
type mergeJobsRun struct {
	copyJobsRun
	directories []string
	// afterRecord, when set, runs once the record was written.
	afterRecord func()
}

func (c *mergeJobsRun) PrepareMergeDirectory(_ context.Context, job migration.Merge) error {
	c.directories = append(c.directories, "merge:"+job.Directory)
	return nil
}

func (c *mergeJobsRun) PrepareDirectory(_ context.Context, job migration.Split) error {
	c.directories = append(c.directories, "make:"+job.Directory)
	return nil
}

func (c *mergeJobsRun) RecordMerge(ctx context.Context, rec migration.MergeRecord) error {
	err := c.Client.RecordMerge(ctx, rec)
	if err == nil && c.afterRecord != nil {
		c.afterRecord()
		c.afterRecord = nil
	}
	return err
}

// userClaim is user's claim of the per-user layout, as KubeSpawner makes it.
func userClaim(t *testing.T, cs kubernetes.Interface, ns, user string) *corev1.PersistentVolumeClaim {
	t.Helper()
	pvc, err := HomeClaim(claims.Spec{Namespace: ns, Name: "claim-" + user, User: user, Mode: claims.RWO, Size: "1Gi", Class: "fast"})
	if err != nil {
		t.Fatal(err)
	}
	if pvc, err = cs.CoreV1().PersistentVolumeClaims(ns).Create(context.Background(), pvc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return pvc
}

func mergeOf(ns, user, uid string) migration.Merge {
	return migration.Merge{User: user, Namespace: ns, Claim: "claim-" + user, ClaimUID: uid, Shared: "home-shared", Directory: "home/" + user,
		Earlier: []string{"old/" + user}, UID: 1000, GID: 100, Mode: "0700", Image: "busybox", CopyImage: "registry.example.org/tools/rsync:3"}
}

// Merges against the API server, as the least-privilege identity with the
// documented RBAC (the migrator's): the pods that use a user's claim or
// directory; the record on the claim, the copy Job (the claim read-only,
// the directory by subPath, the copy image and script, the claim's UID),
// the merged mark, the Job deleted; nothing done twice; a claim made
// again since the plan, a record or mark over another claim or record, a
// Job of the merge's name that is not the provider's: refused.
func TestAccMerge(t *testing.T) {
	c, ns, ctx := acctest.Cluster(t), acctest.Namespace(t), context.Background()
	admin := c.Admin()
	acctest.GrantMigrator(t, ns)
	api, err := NewAPI(c.RESTConfig(c.LimitedToken))
	if err != nil {
		t.Fatal(err)
	}
	limited := NewClient(api)
	limited.StepTimeout, limited.CopyTimeout = 20*time.Second, 20*time.Second
	shared := sharedClaim(t, admin, ns, "home-shared", corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/srv/homes-" + ns}}, nil)
	alice := userClaim(t, admin, ns, "alice")

	// Who uses alice's home: her claim, her directory or an earlier place
	// of it; not the merge's own Jobs, nor another user's merge directory Job.
	bobJob := MergeDirectoryJob(mergeOf(ns, "bob", "x"), time.Minute)
	bobDirJob := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "bob-merge-dir", Namespace: ns}, Spec: bobJob.Spec.Template.Spec}
	own := sharedPod(ns, "own-merge", "claim-alice", "", "", nil)
	own.Labels = map[string]string{JobNameLabel: migration.MergeJobName("claim-alice"), kubespawner.LabelAppComponent: MergeJobComponent}
	forged := sharedPod(ns, "forged", "claim-alice", "", "", nil)
	forged.Labels = map[string]string{JobNameLabel: migration.MergeJobName("claim-alice")}
	pods := []*corev1.Pod{
		sharedPod(ns, "jupyter-alice", "claim-alice", "", "", nil), // yes: the claim
		sharedPod(ns, "in-dir", "home-shared", "home/alice", "", nil),
		sharedPod(ns, "earlier", "home-shared", "old/alice", "", nil),
		sharedPod(ns, "jupyter-bob", "home-shared", "home/bob", "", nil), // no
		bobDirJob, own, forged,
	}
	for _, p := range pods {
		if _, err := admin.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatalf("pod %s: %v", p.Name, err)
		}
	}
	wantBusy := []string{"earlier", "forged", "in-dir", "jupyter-alice"}
	got, err := limited.MergeUsers(ctx, ns, "home-shared", []string{"home/alice", "old/alice"}, "claim-alice")
	if err != nil || !slices.Equal(got, wantBusy) {
		t.Fatalf("users of alice's home: %v %v, want %v", got, err, wantBusy)
	}
	run := &mergeJobsRun{copyJobsRun: copyJobsRun{Client: limited, admin: admin}}
	runner := execute.SplitRunner{Cluster: run}
	if _, err := runner.Merge(ctx, mergeOf(ns, "alice", string(alice.UID))); err == nil || !strings.Contains(err.Error(), "jupyter-alice") || !strings.Contains(err.Error(), "nothing was written") {
		t.Fatalf("busy: %v", err)
	}
	if pvc, _ := admin.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "claim-alice", metav1.GetOptions{}); pvc.ResourceVersion != alice.ResourceVersion {
		t.Fatalf("the claim was written while in use: %v", pvc.Annotations)
	}
	for _, p := range pods {
		if slices.Contains(wantBusy, p.Name) || p == own {
			if err := admin.CoreV1().Pods(ns).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	waitFor(t, func() bool {
		got, err := limited.MergeUsers(ctx, ns, "home-shared", []string{"home/alice", "old/alice"}, "claim-alice")
		return err == nil && len(got) == 0
	})

	// The merge.
	var ops []migration.Op
	runner.AfterStep = func(_ string, op migration.Op) error { ops = append(ops, op); return nil }
	if step, err := runner.Merge(ctx, mergeOf(ns, "alice", string(alice.UID))); err != nil || step != migration.StepDone {
		t.Fatalf("the merge: %s %v", step, err)
	}
	wantOps := []migration.Op{migration.OpPrepareMergeDirectory, migration.OpRecordMerge, migration.OpStartMerge, migration.OpWaitMerge, migration.OpMarkMerged}
	if !slices.Equal(ops, wantOps) || !slices.Equal(run.directories, []string{"merge:home/alice"}) {
		t.Errorf("ops %v, directory Jobs %v", ops, run.directories)
	}
	pvc, err := admin.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "claim-alice", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := migration.MergeRecord{User: "alice", Namespace: ns, Claim: "claim-alice", ClaimUID: string(alice.UID), Shared: "home-shared", SharedUID: string(shared.UID), Directory: "home/alice"}
	rec, err := migration.DecodeMergeRecord(pvc.Annotations[migration.MergeAnnotation])
	switch {
	case err != nil || rec != want:
		t.Errorf("record %+v (%v), want %+v", rec, err, want)
	case !migration.Merged(pvc.Annotations, string(pvc.UID)):
		t.Errorf("not marked merged: %v", pvc.Annotations)
	case !slices.Equal(pvc.Spec.AccessModes, alice.Spec.AccessModes) || pvc.Spec.Resources.Requests.Storage().Cmp(*alice.Spec.Resources.Requests.Storage()) != 0 || pvc.DeletionTimestamp != nil:
		t.Errorf("the claim changed beyond its annotations: %+v", pvc.Spec)
	}
	if len(run.seen) != 1 {
		t.Fatalf("copy Jobs run: %d", len(run.seen))
	}
	checkMergeJob(t, run.seen[0], ns, "alice", string(alice.UID))
	if g, err := admin.BatchV1().Jobs(ns).Get(ctx, run.seen[0].Name, metav1.GetOptions{}); err == nil && g.DeletionTimestamp == nil {
		t.Errorf("the copy Job is left: %+v", g.ObjectMeta)
	}

	// Again: nothing to do, the claim as it is.
	ops = nil
	if step, err := runner.Merge(ctx, mergeOf(ns, "alice", string(alice.UID))); err != nil || step != migration.StepDone || len(ops) != 0 {
		t.Fatalf("again: %s %v, ops %v", step, err, ops)
	}
	if again, _ := admin.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "claim-alice", metav1.GetOptions{}); again.ResourceVersion != pvc.ResourceVersion {
		t.Errorf("the claim changed: %+v", again.ObjectMeta)
	}

	// The record and the mark only over the merge's claim, as read.
	other := want
	other.Directory = "home/bob"
	otherUID := want
	otherUID.ClaimUID = "not-its-uid"
	for name, c := range map[string]struct {
		rec  migration.MergeRecord
		call func(context.Context, migration.MergeRecord) error
	}{"mark, another record": {other, limited.MarkMerged}, "mark, another UID": {otherUID, limited.MarkMerged},
		"record over a record": {other, limited.RecordMerge}, "record, another UID": {otherUID, limited.RecordMerge}} {
		if err := c.call(ctx, c.rec); err == nil || !strings.Contains(err.Error(), "not ") {
			t.Errorf("%s: %v", name, err)
		}
	}

	// A claim made again since the plan read it: nothing written, also
	// when the record is written directly.
	gina := userClaim(t, admin, ns, "gina")
	ginaRec := want
	ginaRec.User, ginaRec.Claim, ginaRec.ClaimUID, ginaRec.Directory = "gina", "claim-gina", "uid-the-plan-read", "home/gina"
	if err := limited.RecordMerge(ctx, ginaRec); err == nil || !strings.Contains(err.Error(), "made again") {
		t.Errorf("a record over a claim made again: %v", err)
	}
	if got, _ := admin.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "claim-gina", metav1.GetOptions{}); got.ResourceVersion != gina.ResourceVersion {
		t.Errorf("gina's claim was written: %v", got.Annotations)
	}
	dave := userClaim(t, admin, ns, "dave")
	if _, err := runner.Merge(ctx, mergeOf(ns, "dave", "uid-the-plan-read")); err == nil || !strings.Contains(err.Error(), "made again") {
		t.Fatalf("a claim made again: %v", err)
	}
	if got, _ := admin.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "claim-dave", metav1.GetOptions{}); got.ResourceVersion != dave.ResourceVersion {
		t.Errorf("dave's claim was written: %v", got.Annotations)
	}

	// A server that starts between the check and the record: the record
	// stays (the hub refuses new spawns), no copy starts; the next apply,
	// once it stopped, finishes.
	run.afterRecord = func() {
		if _, err := admin.CoreV1().Pods(ns).Create(ctx, sharedPod(ns, "jupyter-dave", "claim-dave", "", "", nil), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if step, err := runner.Merge(ctx, mergeOf(ns, "dave", string(dave.UID))); err == nil || !strings.Contains(err.Error(), "jupyter-dave") || !strings.Contains(err.Error(), "record stays") || step != migration.StepRecorded {
		t.Fatalf("busy after the record: %s %v", step, err)
	}
	if j, _ := limited.MergeJob(ctx, ns, "claim-dave"); j != nil {
		t.Fatalf("a copy started while the claim is in use: %+v", j)
	}
	if err := admin.CoreV1().Pods(ns).Delete(ctx, "jupyter-dave", metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool {
		got, err := limited.MergeUsers(ctx, ns, "home-shared", []string{"home/dave"}, "claim-dave")
		return err == nil && len(got) == 0
	})
	run.directories = nil
	if step, err := runner.Merge(ctx, mergeOf(ns, "dave", string(dave.UID))); err != nil || step != migration.StepDone {
		t.Fatalf("dave once stopped: %s %v", step, err)
	}
	if !slices.Equal(run.directories, []string{"make:home/dave"}) {
		t.Errorf("after the record the directory is made, not checked empty (it holds the copy): %v", run.directories)
	}

	// A failed copy: stopped, the Job left for kubectl logs, no mark.
	erin := userClaim(t, admin, ns, "erin")
	run.fail = true
	if _, err := runner.Merge(ctx, mergeOf(ns, "erin", string(erin.UID))); err == nil || !strings.Contains(err.Error(), "kubectl logs -n "+ns+" job/"+migration.MergeJobName("claim-erin")) {
		t.Fatalf("a failed copy: %v", err)
	}
	if got, _ := limited.MergeClaim(ctx, ns, "claim-erin"); got == nil || got.Record == nil || got.Merged != "" {
		t.Fatalf("a failed copy's claim: %+v", got)
	}
	run.fail = false

	// A Job of the merge's name that is not the provider's: never deleted.
	frank := userClaim(t, admin, ns, "frank")
	foreign := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: migration.MergeJobName("claim-frank"), Namespace: ns},
		Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{Name: "x", Image: "busybox"}}}}}}
	if _, err := admin.BatchV1().Jobs(ns).Create(ctx, foreign, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := runner.Merge(ctx, mergeOf(ns, "frank", string(frank.UID))); err == nil || !strings.Contains(err.Error(), "not the provider's") {
		t.Errorf("a foreign Job: %v", err)
	}
	if j, err := admin.BatchV1().Jobs(ns).Get(ctx, foreign.Name, metav1.GetOptions{}); err != nil || j.DeletionTimestamp != nil {
		t.Errorf("the foreign Job was deleted: %v", err)
	}
}

// checkMergeJob: the copy Job of user's merge as created: the claim
// read-only at /src, the shared claim at /dst with the user's directory as
// subPath, the copy script and image, the claim's UID, no token.
func checkMergeJob(t *testing.T, j *batchv1.Job, ns, user, claimUID string) {
	t.Helper()
	pod := j.Spec.Template.Spec
	ct := pod.Containers[0]
	vols := map[string]corev1.PersistentVolumeClaimVolumeSource{}
	for _, v := range pod.Volumes {
		if v.PersistentVolumeClaim != nil {
			vols[v.Name] = *v.PersistentVolumeClaim
		}
	}
	mounts := map[string]corev1.VolumeMount{}
	for _, m := range ct.VolumeMounts {
		mounts[m.MountPath] = m
	}
	src, dst := mounts["/src"], mounts["/dst"]
	switch {
	case j.Name != migration.MergeJobName("claim-"+user) || j.Namespace != ns || j.Annotations[MergeClaimUIDAnnotation] != claimUID:
		t.Errorf("Job %s/%s, annotations %v", j.Namespace, j.Name, j.Annotations)
	case vols[src.Name].ClaimName != "claim-"+user || !vols[src.Name].ReadOnly || !src.ReadOnly || src.SubPath != "":
		t.Errorf("source %+v %+v", src, vols[src.Name])
	case vols[dst.Name].ClaimName != "home-shared" || vols[dst.Name].ReadOnly || dst.ReadOnly || dst.SubPath != "home/"+user:
		t.Errorf("target %+v %+v", dst, vols[dst.Name])
	case ct.Image != "registry.example.org/tools/rsync:3" || !strings.Contains(strings.Join(ct.Command, " "), "rsync") || !strings.Contains(strings.Join(ct.Command, " "), "--checksum"):
		t.Errorf("container %s %v", ct.Image, ct.Command)
	case pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken || j.Labels[kubespawner.LabelAppComponent] != MergeJobComponent:
		t.Errorf("token %v, labels %v", pod.AutomountServiceAccountToken, j.Labels)
	}
}

func waitFor(t *testing.T, ok func() bool) {
	t.Helper()
	for range 100 {
		if ok() {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("timed out at %s", time.Now())
}
