package kube

import (
	"context"
	"fmt"
	"maps"
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

// copyJobsRun stands in for the node in this package: PrepareDirectory
// makes nothing (no Job can run without a node), and WaitJob plays the Job
// controller for the copy Job (its status set Complete, or Failed, by the
// administrator), then waits as the provider does. Every other call is
// the Client's, against the API server. The Jobs run for real in
// internal/nodeacc.
type copyJobsRun struct {
	*Client
	admin   kubernetes.Interface
	fail    bool
	seen    []*batchv1.Job // each copy Job as it was created
	prepare []string
	// afterClaim, when set, runs once the claim was created.
	afterClaim func()
}

func (c *copyJobsRun) PrepareDirectory(_ context.Context, job migration.Split) error {
	c.prepare = append(c.prepare, job.Directory)
	return nil
}

func (c *copyJobsRun) CreateDirectoryCopyClaim(ctx context.Context, rec migration.SplitRecord, spec claims.Spec) error {
	err := c.Client.CreateDirectoryCopyClaim(ctx, rec, spec)
	if err == nil && c.afterClaim != nil {
		c.afterClaim()
		c.afterClaim = nil
	}
	return err
}

func (c *copyJobsRun) WaitJob(ctx context.Context, namespace, name string) error {
	j, err := c.admin.BatchV1().Jobs(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	c.seen = append(c.seen, j.DeepCopy())
	now := metav1.Now()
	j.Status.StartTime = &now
	if c.fail {
		j.Status.Failed = 1
		j.Status.Conditions = []batchv1.JobCondition{
			{Type: batchv1.JobFailureTarget, Status: corev1.ConditionTrue, Reason: "BackoffLimitExceeded", LastTransitionTime: now},
			{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: "BackoffLimitExceeded", LastTransitionTime: now}}
	} else {
		j.Status.Succeeded, j.Status.CompletionTime = 1, &now
		j.Status.Conditions = []batchv1.JobCondition{
			{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionTrue, LastTransitionTime: now},
			{Type: batchv1.JobComplete, Status: corev1.ConditionTrue, LastTransitionTime: now}}
	}
	if _, err := c.admin.BatchV1().Jobs(namespace).UpdateStatus(ctx, j, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("the test's Job controller: %w", err)
	}
	return c.Client.WaitJob(ctx, namespace, name)
}

// sharedPod is a pod that mounts claim (with subPath sub, or the
// expression expr) in a container, or runs the shared layout's directory
// script for dir in an init container when init.
func sharedPod(ns, name, claim, sub, expr string, initDir *string) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: corev1.PodSpec{
		Containers: []corev1.Container{{Name: "notebook", Image: "busybox",
			VolumeMounts: []corev1.VolumeMount{{Name: "home", MountPath: "/home/jovyan", SubPath: sub, SubPathExpr: expr}}}},
		Volumes: []corev1.Volume{{Name: "home", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}}},
	}}
	if expr != "" {
		p.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "DIR", Value: "home/alice"}}
	}
	if initDir != nil {
		cmd, vars := kubespawner.SharedDirectoryCommand(kubespawner.Directory{Path: *initDir, UID: 1000, GID: 100, Mode: "0700"})
		ct := corev1.Container{Name: kubespawner.SharedInitContainer, Image: "busybox", Command: cmd,
			VolumeMounts: []corev1.VolumeMount{{Name: "home", MountPath: kubespawner.SharedRoot}}}
		for _, v := range vars {
			ct.Env = append(ct.Env, corev1.EnvVar{Name: v.Name, Value: v.Value})
		}
		p.Spec.InitContainers = []corev1.Container{ct}
	}
	return p
}

func dcopyOf(ns, user string) migration.DirectoryCopy {
	return migration.DirectoryCopy{User: user, Shared: "home-shared", Directory: "home/" + user, UID: 1000, GID: 100, Mode: "0700", Image: "busybox",
		CopyImage: "registry.example.org/tools/rsync:3",
		Spec: claims.Spec{Namespace: ns, Name: "claim-" + user, User: user, Mode: claims.RWO, Size: "1Gi", Class: "fast",
			Labels: map[string]string{"team": "data"}, Annotations: map[string]string{"example.org/owner": user}}}
}

// The move by copy out of the shared layout against the API server, as
// the least-privilege identity with the documented RBAC (the migrator's):
// the pods that use a user's directory, found from real pod objects; the
// claim (of the configured class, KubeSpawner's labels, the record), the
// copy Job (the directory read-only by subPath, the claim, the copy image
// and script, the claim's UID), the copied mark, the Job deleted; nothing
// done twice; a claim made by someone else, a Job of the copy's name that
// is not the provider's, a mark over another claim or record: refused.
func TestAccDirectoryCopy(t *testing.T) {
	c, ns, ctx := acctest.Cluster(t), acctest.Namespace(t), context.Background()
	admin := c.Admin()
	acctest.GrantMigrator(t, ns)
	api, err := NewAPI(c.RESTConfig(c.LimitedToken))
	if err != nil {
		t.Fatal(err)
	}
	limited := NewClient(api)
	limited.StepTimeout, limited.CopyTimeout = 20*time.Second, 20*time.Second
	// A Longhorn volume: its directories cannot be volumes (SplitSource refuses it).
	shared := sharedClaim(t, admin, ns, "home-shared", corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: "driver.longhorn.io", VolumeHandle: "homes-" + ns}}, nil)
	if _, err := migration.SplitSource(migration.VolumeSource{CSI: &migration.CSISource{Driver: "driver.longhorn.io", Handle: "h"}}, "home/alice"); err == nil {
		t.Fatal("the test's shared volume could be split")
	}

	// Who uses alice's directory: real pods, none of which runs.
	bobDir, aliceDir := "home/bob", "home/alice"
	pods := []*corev1.Pod{
		sharedPod(ns, "jupyter-bob", "home-shared", "home/bob", "", &bobDir),       // no: another directory, the init container's too
		sharedPod(ns, "jupyter-alicia", "home-shared", "home/alicia", "", nil),     // no: a name that begins alike
		sharedPod(ns, "other-claim", "data", "home/alice", "", nil),                // no: another claim
		sharedPod(ns, "jupyter-alice", "home-shared", "home/alice", "", &aliceDir), // yes
		sharedPod(ns, "init-only", "home-shared", "home/bob", "", &aliceDir),       // yes: its init container makes alice's directory
		sharedPod(ns, "parent", "home-shared", "home", "", nil),                    // yes
		sharedPod(ns, "below", "home-shared", "home/alice/project", "", nil),       // yes
		sharedPod(ns, "root", "home-shared", "", "", nil),                          // yes
		sharedPod(ns, "expr", "home-shared", "", "$(DIR)", nil),                    // yes
		sharedPod(ns, "new-claim", "claim-alice", "", "", nil),                     // yes: the new claim
		sharedPod(ns, "finished", "home-shared", "", "", nil),                      // no: Succeeded
	}
	own := sharedPod(ns, "own-copy", "home-shared", "", "", nil) // no: this move's copy Job's pod
	own.Labels = map[string]string{JobNameLabel: migration.DirectoryCopyJobName("claim-alice"), kubespawner.LabelAppComponent: DirectoryCopyJobComponent}
	forged := sharedPod(ns, "forged", "home-shared", "", "", nil) // yes: the Job's name, not its component
	forged.Labels = map[string]string{JobNameLabel: migration.DirectoryCopyJobName("claim-alice")}
	pods = append(pods, own, forged)
	for _, p := range pods {
		created, err := admin.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("pod %s: %v", p.Name, err)
		}
		if p.Name == "finished" {
			created.Status.Phase = corev1.PodSucceeded
			if _, err := admin.CoreV1().Pods(ns).UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	wantBusy := []string{"below", "expr", "forged", "init-only", "jupyter-alice", "new-claim", "parent", "root"}
	got, err := limited.DirectoryUsers(ctx, ns, "home-shared", []string{"home/alice"}, "claim-alice")
	if err != nil || !slices.Equal(got, wantBusy) {
		t.Fatalf("users of alice's directory: %v %v, want %v", got, err, wantBusy)
	}

	// Busy: the move waits, and makes nothing.
	run := &copyJobsRun{Client: limited, admin: admin}
	runner := execute.SplitRunner{Cluster: run}
	if _, err := runner.DirectoryCopy(ctx, dcopyOf(ns, "alice")); err == nil || !strings.Contains(err.Error(), "jupyter-alice") || !strings.Contains(err.Error(), "Stop the server and apply again") {
		t.Fatalf("busy: %v", err)
	}
	if pvc, _ := limited.GetClaim(ctx, ns, "claim-alice"); pvc != nil {
		t.Fatalf("a claim was made while the directory is in use: %+v", pvc)
	}
	for _, p := range pods {
		if slices.Contains(wantBusy, p.Name) || p == own { // the copy waits until an earlier copy's pods are gone
			if err := admin.CoreV1().Pods(ns).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	waitNoUsers(t, limited, ns, "alice")

	// The move.
	var ops []migration.Op
	runner.AfterStep = func(_ string, op migration.Op) error { ops = append(ops, op); return nil }
	if step, err := runner.DirectoryCopy(ctx, dcopyOf(ns, "alice")); err != nil || step != migration.StepDone {
		t.Fatalf("the move: %s %v", step, err)
	}
	t.Logf("ops: %v", ops)
	pvc, err := admin.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "claim-alice", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := migration.SplitRecord{User: "alice", Namespace: ns, Claim: "claim-alice", Shared: "home-shared", SharedUID: string(shared.UID), Directory: "home/alice", Method: migration.MethodDirectoryCopy}
	home, err := HomeClaim(dcopyOf(ns, "alice").Spec)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := migration.DecodeSplitRecord(pvc.Annotations[migration.SplitAnnotation])
	switch {
	case err != nil || rec != want:
		t.Errorf("record %+v (%v), want %+v", rec, err, want)
	case pvc.Annotations[migration.SplitCopiedAnnotation] != string(pvc.UID):
		t.Errorf("copied mark %q, UID %s", pvc.Annotations[migration.SplitCopiedAnnotation], pvc.UID)
	case !maps.Equal(pvc.Labels, home.Labels) || pvc.Annotations[kubespawner.AnnotationUsername] != "alice" || pvc.Annotations["example.org/owner"] != "alice":
		t.Errorf("labels %v, annotations %v, want KubeSpawner's as HomeClaim's %v", pvc.Labels, pvc.Annotations, home.Labels)
	case pvc.Spec.StorageClassName == nil || *pvc.Spec.StorageClassName != "fast" || pvc.Spec.VolumeName != "":
		t.Errorf("class %v volume %q, want the configured class and no volume named", pvc.Spec.StorageClassName, pvc.Spec.VolumeName)
	case len(pvc.Spec.AccessModes) != 1 || pvc.Spec.AccessModes[0] != corev1.ReadWriteOnce || pvc.Spec.Resources.Requests.Storage().String() != "1Gi":
		t.Errorf("modes %v, request %v", pvc.Spec.AccessModes, pvc.Spec.Resources.Requests)
	}
	if len(run.seen) != 1 {
		t.Fatalf("copy Jobs run: %d", len(run.seen))
	}
	j := run.seen[0]
	checkDirectoryCopyJob(t, j, ns, "alice", string(pvc.UID))
	if g, err := admin.BatchV1().Jobs(ns).Get(ctx, j.Name, metav1.GetOptions{}); err == nil && g.DeletionTimestamp == nil {
		t.Errorf("the copy Job is left: %+v", g.ObjectMeta)
	}
	if !slices.Equal(run.prepare, []string{"home/alice"}) {
		t.Errorf("directory Jobs %v", run.prepare)
	}

	// Again: nothing to do, the claim as it is.
	ops = nil
	if step, err := runner.DirectoryCopy(ctx, dcopyOf(ns, "alice")); err != nil || step != migration.StepDone || len(ops) != 0 {
		t.Fatalf("again: %s %v, ops %v", step, err, ops)
	}
	if again, _ := admin.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "claim-alice", metav1.GetOptions{}); again.ResourceVersion != pvc.ResourceVersion {
		t.Errorf("the claim changed: %+v", again.ObjectMeta)
	}

	// The mark only over this move's claim, as read.
	other := want
	other.Directory = "home/bob"
	for name, c := range map[string]struct {
		rec migration.SplitRecord
		uid string
	}{"another UID": {want, "not-its-uid"}, "another record": {other, string(pvc.UID)}} {
		if err := limited.MarkSplitCopied(ctx, c.rec, c.uid); err == nil || !strings.Contains(err.Error(), "not marked") {
			t.Errorf("%s: %v", name, err)
		}
	}

	// A server that starts between the check and the claim: the claim
	// stays, no copy starts; the next apply, once it stopped, finishes.
	run.afterClaim = func() {
		if _, err := admin.CoreV1().Pods(ns).Create(ctx, sharedPod(ns, "jupyter-dave", "home-shared", "home/dave", "", nil), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if step, err := runner.DirectoryCopy(ctx, dcopyOf(ns, "dave")); err == nil || !strings.Contains(err.Error(), "jupyter-dave") || !strings.Contains(err.Error(), "stays") || step != migration.StepClaimCreated {
		t.Fatalf("busy after the claim: %s %v", step, err)
	}
	if j, _ := limited.DirectoryCopyJob(ctx, ns, "claim-dave"); j != nil {
		t.Fatalf("a copy started while the directory is in use: %+v", j)
	}
	if err := admin.CoreV1().Pods(ns).Delete(ctx, "jupyter-dave", metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
		t.Fatal(err)
	}
	waitNoUsers(t, limited, ns, "dave")
	if step, err := runner.DirectoryCopy(ctx, dcopyOf(ns, "dave")); err != nil || step != migration.StepDone {
		t.Fatalf("dave once stopped: %s %v", step, err)
	}

	// A failed copy: stopped, the Job left for kubectl logs.
	run.fail = true
	if _, err := runner.DirectoryCopy(ctx, dcopyOf(ns, "erin")); err == nil || !strings.Contains(err.Error(), "kubectl logs -n "+ns+" job/"+migration.DirectoryCopyJobName("claim-erin")) {
		t.Fatalf("a failed copy: %v", err)
	}
	if j, err := limited.DirectoryCopyJob(ctx, ns, "claim-erin"); err != nil || j == nil || !j.Failed {
		t.Fatalf("the failed Job: %+v %v", j, err)
	}
	if pvc, _ := limited.SplitClaim(ctx, ns, "claim-erin"); pvc == nil || pvc.Copied != "" {
		t.Fatalf("a failed copy's claim: %+v", pvc)
	}
	run.fail = false

	// A claim of the user's name made by someone else: never taken over.
	carol := dcopyOf(ns, "carol")
	kubespawners, err := HomeClaim(carol.Spec)
	if err != nil {
		t.Fatal(err)
	}
	before, err := admin.CoreV1().PersistentVolumeClaims(ns).Create(ctx, kubespawners, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := runner.DirectoryCopy(ctx, carol); err == nil || !strings.Contains(err.Error(), "never taken over") {
		t.Errorf("carol's claim made by someone else: %v", err)
	}
	if after, _ := admin.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "claim-carol", metav1.GetOptions{}); after.ResourceVersion != before.ResourceVersion {
		t.Errorf("carol's claim changed: %+v", after.ObjectMeta)
	}
	if j, _ := admin.BatchV1().Jobs(ns).Get(ctx, migration.DirectoryCopyJobName("claim-carol"), metav1.GetOptions{}); j != nil && j.Name != "" {
		t.Errorf("a copy Job into carol's claim: %s", j.Name)
	}

	// A Job of the copy's name that is not the provider's: never deleted.
	foreign := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: migration.DirectoryCopyJobName("claim-frank"), Namespace: ns},
		Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{Name: "x", Image: "busybox"}}}}}}
	if _, err := admin.BatchV1().Jobs(ns).Create(ctx, foreign, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := runner.DirectoryCopy(ctx, dcopyOf(ns, "frank")); err == nil || !strings.Contains(err.Error(), "not the provider's") {
		t.Errorf("a foreign Job: %v", err)
	}
	if j, err := admin.BatchV1().Jobs(ns).Get(ctx, foreign.Name, metav1.GetOptions{}); err != nil || j.DeletionTimestamp != nil {
		t.Errorf("the foreign Job was deleted: %v", err)
	}
}

// checkDirectoryCopyJob: the copy Job of user's move as created.
func checkDirectoryCopyJob(t *testing.T, j *batchv1.Job, ns, user, claimUID string) {
	t.Helper()
	pod := j.Spec.Template.Spec
	ct := pod.Containers[0]
	sec := ct.SecurityContext
	vols := map[string]corev1.Volume{}
	for _, v := range pod.Volumes {
		vols[v.Name] = v
	}
	switch {
	case j.Name != migration.DirectoryCopyJobName("claim-"+user) || j.Namespace != ns:
		t.Errorf("Job %s/%s", j.Namespace, j.Name)
	case j.Labels[kubespawner.LabelAppManagedBy] != claims.ManagedBy || j.Labels[kubespawner.LabelAppComponent] != DirectoryCopyJobComponent ||
		j.Spec.Template.Labels[kubespawner.LabelAppComponent] != DirectoryCopyJobComponent:
		t.Errorf("labels %v, pod's %v", j.Labels, j.Spec.Template.Labels)
	case j.Annotations[DirectoryCopyClaimUIDAnnotation] != claimUID:
		t.Errorf("annotations %v, want the claim's UID %s", j.Annotations, claimUID)
	case len(pod.Containers) != 1 || ct.Image != "registry.example.org/tools/rsync:3" || len(ct.Command) != 3 || ct.Command[2] != migration.CopyScript:
		t.Errorf("container %+v", ct)
	case len(ct.VolumeMounts) != 2 || ct.VolumeMounts[0].MountPath != "/src" || ct.VolumeMounts[0].SubPath != "home/"+user || !ct.VolumeMounts[0].ReadOnly ||
		ct.VolumeMounts[1].MountPath != "/dst" || ct.VolumeMounts[1].ReadOnly || ct.VolumeMounts[1].SubPath != "":
		t.Errorf("mounts %+v", ct.VolumeMounts)
	case vols[ct.VolumeMounts[0].Name].PersistentVolumeClaim == nil || vols[ct.VolumeMounts[0].Name].PersistentVolumeClaim.ClaimName != "home-shared" ||
		!vols[ct.VolumeMounts[0].Name].PersistentVolumeClaim.ReadOnly:
		t.Errorf("the source volume %+v", vols[ct.VolumeMounts[0].Name])
	case vols[ct.VolumeMounts[1].Name].PersistentVolumeClaim == nil || vols[ct.VolumeMounts[1].Name].PersistentVolumeClaim.ClaimName != "claim-"+user:
		t.Errorf("the target volume %+v", vols[ct.VolumeMounts[1].Name])
	case sec == nil || *sec.RunAsUser != 0 || *sec.AllowPrivilegeEscalation || !*sec.ReadOnlyRootFilesystem ||
		!slices.Equal(sec.Capabilities.Drop, []corev1.Capability{"ALL"}) || !slices.Equal(sec.Capabilities.Add, JobCapabilities):
		t.Errorf("security %+v", sec)
	case pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken || pod.RestartPolicy != corev1.RestartPolicyNever:
		t.Errorf("pod %+v", pod)
	}
}

// waitNoUsers waits until the pods deleted are gone from the API server.
func waitNoUsers(t *testing.T, c *Client, ns, user string) {
	t.Helper()
	for range 100 {
		got, err := c.DirectoryUsers(context.Background(), ns, "home-shared", []string{"home/" + user}, "claim-"+user)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) == 0 {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("pods still use %s's directory", user)
}
