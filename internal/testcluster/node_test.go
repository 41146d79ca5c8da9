package testcluster

import (
	"context"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The files the first pod writes into the claim: nested directories, an empty
// file, bytes that are not text.
var homeTree = map[string]string{
	"notebook.ipynb":        "{\"cells\": [], \"nbformat\": 4}\n",
	"work/data/results.csv": "a,b\n1,2\n3,4\n",
	"work/data/empty":       "",
	"work/raw.bin":          "\x00\x01\x02\xff\xfe\r\n\t end",
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
	nd, err := admin.CoreV1().Nodes().Get(ctx, NodeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range nd.Status.Addresses {
		if ip := net.ParseIP(a.Address); ip != nil && !ip.IsLoopback() {
			t.Errorf("the node has the address %s (%s): traffic to it would leave loopback", a.Address, a.Type)
		}
	}

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
	if _, err := RunPod(ctx, admin, ClaimPod(ns, "writer", claim.Name, WriteFilesScript("/home", homeTree))); err != nil {
		t.Fatal(err)
	}
	t.Logf("writer pod ran in %s", time.Since(step).Round(time.Millisecond))

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

	// A different pod reads them back through the same claim.
	step = time.Now()
	msg, err := RunPod(ctx, admin, ClaimPod(ns, "reader", claim.Name, ReadFilesScript("/home")))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("reader pod ran in %s", time.Since(step).Round(time.Millisecond))
	readBack, err := ParseFiles(msg)
	if err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(readBack, homeTree) {
		t.Errorf("read back %q, want %q", readBack, homeTree)
	}

	// A Job runs to completion (scheduler, job controller, kubelet).
	step = time.Now()
	backoff := int32(0)
	_, err = admin.BatchV1().Jobs(ns).Create(ctx, &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "job"},
		Spec: batchv1.JobSpec{
			BackoffLimit: &backoff,
			Template:     corev1.PodTemplateSpec{Spec: ClaimPod(ns, "", claim.Name, "test -s /home/notebook.ipynb && rsync --version >/dev/null").Spec},
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

	// The node's CSI driver serves a volume the test creates: kubelet
	// publishes it (a bind mount of its directory) for a pod, which writes
	// into the directory, and unpublishes it when the pod ends.
	step = time.Now()
	if _, err := admin.CoreV1().PersistentVolumes().Create(ctx, CSIVolume("pv-csi", "vol-csi", "10Mi", corev1.ReadWriteOnce), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	csiClass := CSIClass
	if _, err := admin.CoreV1().PersistentVolumeClaims(ns).Create(ctx, &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "claim-csi"},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName: &csiClass,
			VolumeName:       "pv-csi",
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("10Mi")}},
		},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := WaitClaimPhase(ctx, admin, ns, "claim-csi", corev1.ClaimBound); err != nil {
		t.Fatal(err)
	}
	if _, err := RunPod(ctx, admin, ClaimPod(ns, "csi-writer", "claim-csi", WriteFilesScript("/home", homeTree))); err != nil {
		t.Fatal(err)
	}
	csiDir := c.CSIVolumeDir("vol-csi")
	for name, want := range homeTree {
		got, err := os.ReadFile(filepath.Join(csiDir, name))
		if err != nil || string(got) != want {
			t.Errorf("%s in the CSI volume's directory: %q (%v), want %q", name, got, err, want)
		}
	}
	msg, err = RunPod(ctx, admin, ClaimPod(ns, "csi-reader", "claim-csi", ReadFilesScript("/home")))
	if err != nil {
		t.Fatal(err)
	}
	if readBack, err := ParseFiles(msg); err != nil || !maps.Equal(readBack, homeTree) {
		t.Errorf("read back from the CSI volume %q (%v), want %q", readBack, err, homeTree)
	}
	// kubelet unpublishes a volume after its pod ended, asynchronously.
	for deadline := time.Now().Add(time.Minute); mountsOf(t, "kubernetes.io~csi/pv-csi/mount") != 0; sleep(ctx, t) {
		if time.Now().After(deadline) {
			t.Errorf("%d mounts of pv-csi left a minute after its pods ended", mountsOf(t, "kubernetes.io~csi/pv-csi/mount"))
			break
		}
	}
	t.Logf("CSI volume written and read back in %s", time.Since(step).Round(time.Millisecond))

	// Pods still running at Stop end with the rest.
	for _, p := range []*corev1.Pod{ClaimPod(ns, "sleeper", claim.Name, "exec sleep 3600"), ClaimPod(ns, "csi-sleeper", "claim-csi", "exec sleep 3600")} {
		sleeper, err := admin.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for sleeper.Status.Phase != corev1.PodRunning {
			sleep(ctx, t)
			if sleeper, err = admin.CoreV1().Pods(ns).Get(ctx, p.Name, metav1.GetOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if n := mountsOf(t, "kubernetes.io~csi/pv-csi/mount"); n != 1 {
		t.Fatalf("%d mounts of pv-csi while a pod uses it, want 1", n)
	}
	csiSockets := []string{c.node.csi.endpoint, c.node.csi.registry}

	// Stop ends containerd, its shims and every container, and leaves no
	// mount, directory, network link or volume directory behind.
	containerdPid := c.node.containerd.cmd.Process.Pid
	dir, network, socket := c.Dir, c.node.network, c.node.socket
	if len(shimsOf(socket)) == 0 {
		t.Fatal("no containerd shim found for the running pod: the check after Stop would prove nothing")
	}
	step = time.Now()
	c.Stop()
	stopped = true
	t.Logf("stopped in %s", time.Since(step).Round(time.Millisecond))
	if _, err := os.Stat(filepath.Join("/proc", strconv.Itoa(containerdPid))); err == nil {
		t.Errorf("containerd (pid %d) still runs", containerdPid)
	}
	if shims := shimsOf(socket); len(shims) > 0 {
		t.Errorf("containerd shims still run: %+v", shims)
	}
	if mounts, err := os.ReadFile("/proc/self/mountinfo"); err != nil || strings.Contains(string(mounts), dir) {
		t.Errorf("mounts under %s left behind (%v)", dir, err)
	}
	for _, p := range append([]string{dir, volumeDir, "/sys/class/net/" + network}, csiSockets...) {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("%s left behind", p)
		}
	}
}

// mountsOf counts this machine's mounts whose mount point ends in suffix.
func mountsOf(t *testing.T, suffix string) int {
	t.Helper()
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) > 4 && strings.HasSuffix(unescapeMount(f[4]), suffix) {
			n++
		}
	}
	return n
}

func sleep(ctx context.Context, t *testing.T) {
	t.Helper()
	if err := pause(ctx); err != nil {
		t.Fatal(err)
	}
}

// A test killed with its node up leaves containerd's shims, the pods'
// containers and network namespaces, kubelet's mounts and the bridge behind
// (kubelet and containerd die with the test); the next start removes them.
func TestNodeKilledTestCleanedUp(t *testing.T) {
	if os.Getenv("TF_ACC") == "" {
		t.Skip("needs the test bed binaries: set TF_ACC=1 (make test does)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	start := time.Now()
	c, err := Start(ctx, Options{Node: true})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		step := time.Now()
		c.Stop()
		t.Logf("stopped in %s", time.Since(step).Round(time.Millisecond))
	}()
	t.Logf("control plane and node ready in %s", time.Since(start).Round(time.Millisecond))
	admin := c.Admin()
	pod := ClaimPod("default", "server", "", "exec sleep 3600")
	pod.Spec.Volumes, pod.Spec.Containers[0].VolumeMounts = nil, nil
	if _, err := admin.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for {
		p, err := admin.CoreV1().Pods("default").Get(ctx, "server", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if p.Status.Phase == corev1.PodRunning {
			break
		}
		sleep(ctx, t)
	}
	n := c.node
	shims := shimsOf(n.socket)
	if len(shims) == 0 {
		t.Fatal("no shim runs the pod")
	}
	var netns []uint64
	for _, sh := range shims {
		for _, child := range childrenOf(sh.pid) {
			var st syscall.Stat_t
			if syscall.Stat(filepath.Join("/proc", strconv.Itoa(child), "ns", "net"), &st) == nil {
				netns = append(netns, st.Ino)
			}
		}
	}

	// What the death of the test process does: kubelet and containerd get
	// SIGKILL (Pdeathsig); the shims, started by containerd, live on.
	for _, p := range []*process{n.kubelet, n.containerd} {
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
	if len(shimsOf(n.socket)) == 0 {
		t.Fatal("the shims died with containerd: nothing to clean up")
	}
	step := time.Now()
	reapDeadNodes()
	t.Logf("cleaned up in %s", time.Since(step).Round(time.Millisecond))

	if left := shimsOf(n.socket); len(left) > 0 {
		t.Errorf("shims left: %+v", left)
	}
	if mounts, err := os.ReadFile("/proc/self/mountinfo"); err != nil || strings.Contains(string(mounts), n.dir+"/") {
		t.Errorf("mounts under %s left (%v)", n.dir, err)
	}
	if _, err := os.Stat("/sys/class/net/" + n.network); err == nil {
		t.Errorf("bridge %s left", n.network)
	}
	entries, _ := filepath.Glob("/run/netns/cni-*")
	for _, e := range entries {
		var st syscall.Stat_t
		if syscall.Stat(e, &st) == nil && slices.Contains(netns, st.Ino) {
			t.Errorf("the pod's network namespace %s left", e)
		}
	}
}
