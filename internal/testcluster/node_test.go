package testcluster

import (
	"context"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// The files the first pod writes into the claim: nested directories, an empty
// file, bytes that are not text.
var homeTree = map[string]string{
	"notebook.ipynb":        "{\"cells\": [], \"nbformat\": 4}\n",
	"work/data/results.csv": "a,b\n1,2\n3,4\n",
	"work/data/empty":       "",
	"work/raw.bin":          "\x00\x01\x02\xff\xfe\r\n\t end",
}

// writeScript writes homeTree under /home with printf (octal escapes, so the
// script itself is plain text).
func writeScript() string {
	var b strings.Builder
	b.WriteString("set -eu\n")
	for name, content := range homeTree {
		b.WriteString("mkdir -p /home/" + filepath.Dir(name) + "\n")
		b.WriteString("printf '")
		for _, c := range []byte(content) {
			fmt.Fprintf(&b, "\\%03o", c)
		}
		b.WriteString("' > /home/" + name + "\n")
	}
	return b.String()
}

// A node runs pods: one pod writes a file tree into a dynamically provisioned
// claim, a second pod (after the first is gone) reads it back byte for byte,
// and a Job runs to completion. Stop leaves no process, mount or directory.
func TestNode(t *testing.T) {
	if os.Getenv("TF_ACC") == "" {
		t.Skip("needs the test bed binaries: set TF_ACC=1 (make test does)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	start := time.Now()
	c, err := Start(ctx, Options{Node: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("control plane and node ready in %s", time.Since(start).Round(time.Millisecond))
	stopped := false
	defer func() {
		if !stopped {
			c.Stop()
		}
	}()
	admin := c.Admin()
	const ns = "default"

	class := HostPathClass
	claim, err := admin.CoreV1().PersistentVolumeClaims(ns).Create(ctx, &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "claim-alice"},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName: &class,
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("10Mi")}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}

	step := time.Now()
	if p := runPod(ctx, t, admin, ns, "writer", claim.Name, writeScript()); p.Status.Phase != corev1.PodSucceeded {
		t.Fatalf("writer pod ended %s: %s", p.Status.Phase, terminationMessage(p))
	}
	t.Logf("writer pod ran in %s", time.Since(step).Round(time.Millisecond))
	deletePod(ctx, t, admin, ns, "writer")

	claim, err = admin.CoreV1().PersistentVolumeClaims(ns).Get(ctx, claim.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pv, err := admin.CoreV1().PersistentVolumes().Get(ctx, claim.Spec.VolumeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if pv.Spec.HostPath == nil || !strings.HasPrefix(pv.Spec.HostPath.Path, hostPathBase) {
		t.Fatalf("volume %s is not a host-path volume of the provisioner: %+v", pv.Name, pv.Spec.PersistentVolumeSource)
	}
	volumeDir := pv.Spec.HostPath.Path

	// The volume holds the files on the node's disk.
	for name, want := range homeTree {
		got, err := os.ReadFile(filepath.Join(volumeDir, name))
		if err != nil || string(got) != want {
			t.Errorf("%s on the node: %q (%v), want %q", name, got, err, want)
		}
	}

	// A different pod reads them back through the same claim, in hex (the
	// API keeps only valid UTF-8 of a termination message): a line "NAME HEX"
	// a file.
	step = time.Now()
	var read strings.Builder
	read.WriteString("set -eu\nexec > /dev/termination-log\n")
	for name := range homeTree {
		read.WriteString("printf '%s ' " + name + "; od -An -v -tx1 /home/" + name + " | tr -d ' \\n'; echo\n")
	}
	p := runPod(ctx, t, admin, ns, "reader", claim.Name, read.String())
	if p.Status.Phase != corev1.PodSucceeded {
		t.Fatalf("reader pod ended %s: %s", p.Status.Phase, terminationMessage(p))
	}
	t.Logf("reader pod ran in %s", time.Since(step).Round(time.Millisecond))
	readBack := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(terminationMessage(p)), "\n") {
		name, hexed, _ := strings.Cut(line, " ")
		b, err := hex.DecodeString(hexed)
		if err != nil {
			t.Fatalf("reader line %q: %v", line, err)
		}
		readBack[name] = string(b)
	}
	for name, want := range homeTree {
		if got, ok := readBack[name]; !ok || got != want {
			t.Errorf("%s read back as %q (read: %t), want %q", name, got, ok, want)
		}
	}
	if len(readBack) != len(homeTree) {
		t.Errorf("read back %d files, want %d: %q", len(readBack), len(homeTree), terminationMessage(p))
	}

	// A Job runs to completion (scheduler, job controller, kubelet).
	step = time.Now()
	backoff := int32(0)
	_, err = admin.BatchV1().Jobs(ns).Create(ctx, &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "job"},
		Spec: batchv1.JobSpec{
			BackoffLimit: &backoff,
			Template:     corev1.PodTemplateSpec{Spec: podSpec(claim.Name, "test -s /home/notebook.ipynb && rsync --version >/dev/null")},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for done := false; !done; {
		j, err := admin.BatchV1().Jobs(ns).Get(ctx, "job", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, cond := range j.Status.Conditions {
			if cond.Status == corev1.ConditionTrue && (cond.Type == batchv1.JobComplete || cond.Type == batchv1.JobFailed) {
				if cond.Type == batchv1.JobFailed {
					t.Fatalf("job failed: %s %s", cond.Reason, cond.Message)
				}
				done = true
			}
		}
		sleep(ctx, t)
	}
	t.Logf("job completed in %s", time.Since(step).Round(time.Millisecond))

	// A pod still running at Stop ends with the rest.
	sleeper, err := admin.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "sleeper"},
		Spec: podSpec(claim.Name, "exec sleep 3600")}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for sleeper.Status.Phase != corev1.PodRunning {
		sleep(ctx, t)
		if sleeper, err = admin.CoreV1().Pods(ns).Get(ctx, "sleeper", metav1.GetOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	// Stop ends containerd, its shims and every container, and leaves no
	// mount, directory, network link or volume directory behind.
	containerdPid := c.node.containerd.cmd.Process.Pid
	dir, network, socket := c.Dir, c.node.network, c.node.socket
	step = time.Now()
	c.Stop()
	stopped = true
	t.Logf("stopped in %s", time.Since(step).Round(time.Millisecond))
	if _, err := os.Stat(filepath.Join("/proc", strconv.Itoa(containerdPid))); err == nil {
		t.Errorf("containerd (pid %d) still runs", containerdPid)
	}
	if out, err := exec.Command("pgrep", "-f", "containerd-shim.* -address "+socket).Output(); err == nil {
		t.Errorf("containerd shims still run: %s", out)
	}
	if mounts, err := os.ReadFile("/proc/self/mountinfo"); err != nil || strings.Contains(string(mounts), dir) {
		t.Errorf("mounts under %s left behind (%v)", dir, err)
	}
	for _, p := range []string{dir, volumeDir, "/sys/class/net/" + network} {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("%s left behind", p)
		}
	}
}

func podSpec(claim, script string) corev1.PodSpec {
	no := false
	return corev1.PodSpec{
		RestartPolicy:                 corev1.RestartPolicyNever,
		AutomountServiceAccountToken:  &no,
		TerminationGracePeriodSeconds: func() *int64 { g := int64(1); return &g }(),
		Containers: []corev1.Container{{
			Name: "main", Image: ToolsImage, ImagePullPolicy: corev1.PullNever,
			Command:                  []string{"sh", "-c", script},
			VolumeMounts:             []corev1.VolumeMount{{Name: "home", MountPath: "/home"}},
			TerminationMessagePolicy: corev1.TerminationMessageReadFile,
		}},
		Volumes: []corev1.Volume{{Name: "home", VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}}},
	}
}

// runPod runs one pod with the claim mounted at /home until it ends.
func runPod(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns, name, claim, script string) *corev1.Pod {
	t.Helper()
	_, err := cs.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: podSpec(claim, script)}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for {
		p, err := cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			return p
		}
		sleep(ctx, t)
	}
}

func deletePod(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns, name string) {
	t.Helper()
	if err := cs.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	for {
		_, err := cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		sleep(ctx, t)
	}
}

func terminationMessage(p *corev1.Pod) string {
	for _, s := range p.Status.ContainerStatuses {
		if s.State.Terminated != nil {
			return s.State.Terminated.Message
		}
	}
	return ""
}

func sleep(ctx context.Context, t *testing.T) {
	t.Helper()
	select {
	case <-ctx.Done():
		t.Fatal(ctx.Err())
	case <-time.After(200 * time.Millisecond):
	}
}
