package nodeacc

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/acctest"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/claims"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/execute"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/kube"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/migration"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/testcluster"
)

// The zero-copy move on a real node: the shared claim is a host path of
// this machine holding alice's and bob's directories (owners, modes, a
// setgid directory, a symlink, a hard link, a file with an old time).
// The provider's split, with its real directory Job (the layout's init
// container's script, run by the Job controller, kubelet and containerd),
// moves alice (her directory exists) and carol (no directory yet: the Job
// makes it, with her owner and mode). A pod mounting claim-alice then
// lists exactly what a pod mounting her directory of the shared claim
// listed before (bytes, owners, modes, links, inodes, times), and writes
// as alice into it, which the shared claim shows in her directory (it is
// the same directory); a pod mounting claim-carol finds her empty
// directory and writes as carol. eve's directory is a symbolic link to
// bob's: the Job refuses it, and nothing is made for her. Nothing else on
// the shared claim changed.
// Nothing stands in for the Job controller, the PV binder, kubelet or the
// container runtime.
func TestAccSplitOnNode(t *testing.T) {
	c := acctest.Cluster(t)
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	cs := c.Admin()
	ns := acctest.Namespace(t)
	api, err := kube.NewAPI(c.RESTConfig(c.AdminToken))
	if err != nil {
		t.Fatal(err)
	}
	client := kube.NewClient(api, kube.Options{StepTimeout: 2 * time.Minute})

	root := t.TempDir()
	if err := os.Chmod(root, 0o755); err != nil {
		t.Fatal(err)
	}
	homesTree(t, root)
	shared := sharedHostPathClaim(t, ctx, cs, ns, "home-shared", root)
	for _, u := range []string{"alice", "carol", "eve"} {
		t.Cleanup(func() {
			_ = cs.CoreV1().PersistentVolumes().Delete(context.Background(), migration.SplitVolumeName(ns, "claim-"+u), metav1.DeleteOptions{})
		})
	}

	// alice's home as the shared layout's server mounts it: her directory of
	// the shared claim (subPath).
	before, err := testcluster.RunPod(ctx, cs, subPathPod(ns, "list-before", "home-shared", "home/alice", listScript))
	if err != nil {
		t.Fatal(err)
	}
	diskBefore := diskSnapshot(t, root)

	start := time.Now()
	runner := execute.SplitRunner{Cluster: client}
	for _, job := range []migration.Split{splitJob(ns, "alice", 1000, "0700"), splitJob(ns, "carol", 1001, "0750")} {
		t0 := time.Now()
		if step, err := runner.Split(ctx, job); err != nil || step != migration.StepDone {
			t.Fatalf("%s: %s %v", job.User, step, err)
		}
		t.Logf("%s's split took %s", job.User, time.Since(t0).Round(time.Millisecond))
		if _, err := cs.BatchV1().Jobs(ns).Get(ctx, kube.DirectoryJobName(job.Spec.Name), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("%s's directory Job is left: %v", job.User, err)
		}
	}
	t.Logf("both splits took %s", time.Since(start).Round(time.Millisecond))
	// eve's directory is a symbolic link to bob's home: the directory Job
	// refuses it (its pod's message is the error), and no volume on it, which
	// would serve bob's files as eve's home, or claim is made.
	if _, err := runner.Split(ctx, splitJob(ns, "eve", 1003, "0700")); err == nil || !strings.Contains(err.Error(), "home/eve is a symbolic link") {
		t.Errorf("eve's directory through a symbolic link: %v", err)
	} else {
		t.Logf("eve: %v", err)
	}
	if pv, err := client.SplitVolume(ctx, migration.SplitVolumeName(ns, "claim-eve")); pv != nil || err != nil {
		t.Errorf("a volume was made on eve's symbolic link: %+v %v", pv, err)
	}
	if pvc, err := client.SplitClaim(ctx, ns, "claim-eve"); pvc != nil || err != nil {
		t.Errorf("a claim was made for eve: %+v %v", pvc, err)
	}
	if _, err := cs.BatchV1().Jobs(ns).Get(ctx, kube.DirectoryJobName("claim-eve"), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("eve's failed directory Job is left: %v", err)
	}

	// On the shared claim: carol's new directory, with her owner and mode
	// and nothing in it, made in place (no temporary name left); nothing
	// else changed but home/'s link count and time (a new subdirectory).
	diskAfter := diskSnapshot(t, root)
	carol, ok := diskAfter["home/carol"]
	if !ok {
		t.Fatalf("carol's directory was not made: %v", keys(diskAfter))
	}
	if want := fmt.Sprintf("dir %o 1001:100", 0o750|syscall.S_IFDIR); !strings.HasPrefix(carol, want) {
		t.Errorf("carol's directory %s, want %s", carol, want)
	}
	for p, v := range diskAfter {
		switch {
		case p == "home/carol" || p == "home":
		case strings.HasPrefix(p, "home/carol/"):
			t.Errorf("carol's new directory holds %s", p)
		case diskBefore[p] != v:
			t.Errorf("%s changed on the shared claim:\n before %s\n after  %s", p, diskBefore[p], v)
		}
	}
	for p := range diskBefore {
		if _, ok := diskAfter[p]; !ok {
			t.Errorf("%s is gone from the shared claim", p)
		}
	}
	if h, hb := diskAfter["home"], diskBefore["home"]; strings.Fields(h)[1] != strings.Fields(hb)[1] || strings.Fields(h)[2] != strings.Fields(hb)[2] {
		t.Errorf("home/ changed owner or mode: %s, was %s", h, hb)
	}

	// alice's claim: every file as it was, the same inodes.
	after, err := testcluster.RunPod(ctx, cs, testcluster.ClaimPod(ns, "list-alice", "claim-alice", listScript))
	if err != nil {
		t.Fatal(err)
	}
	if after != before {
		t.Errorf("claim-alice lists\n%s\nher directory of the shared claim listed\n%s", after, before)
	}
	for _, want := range []string{
		"./work/latest.csv a1ff 1000:100 1 ",       // the symlink
		"./work/data/results.csv 81a4 1000:100 2 ", // hard-linked
		"./work/raw.bin 8180 1000:100 1 ",          // private
		"./shared 45f8 1000:2000 ",                 // setgid, group-shared
		"./old.txt 81a4 1000:100 1 4 ",             // an old time
		". 41c0 1000:100 ",                         // the home itself, 0700
		"-> data/results.csv",                      // where the symlink points
		fmt.Sprintf(" %d ", time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC).Unix()), // the old time
	} {
		if !strings.Contains(after, want) {
			t.Errorf("claim-alice's listing has no %q:\n%s", want, after)
		}
	}
	// alice writes through her claim; the shared claim shows it in her
	// directory.
	write := testcluster.ClaimPod(ns, "write-alice", "claim-alice", "echo 'written through claim-alice' > /home/new.txt")
	asUser(write, 1000, 100)
	if _, err := testcluster.RunPod(ctx, cs, write); err != nil {
		t.Fatal(err)
	}
	read := testcluster.ClaimPod(ns, "read-shared", "home-shared", "stat -c '%u:%g' /home/home/alice/new.txt > /dev/termination-log; cat /home/home/alice/new.txt >> /dev/termination-log")
	if got, err := testcluster.RunPod(ctx, cs, read); err != nil || got != "1000:100\nwritten through claim-alice\n" {
		t.Errorf("the shared claim's alice/new.txt: %q %v", got, err)
	}

	// carol's claim: her new, empty directory, which she can write into.
	carolPod := testcluster.ClaimPod(ns, "carol", "claim-carol", "touch /home/first && "+listScript)
	asUser(carolPod, 1001, 100)
	podCtx, podCancel := context.WithTimeout(ctx, 2*time.Minute)
	defer podCancel()
	list, err := testcluster.RunPod(podCtx, cs, carolPod)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(list, ". 41e8 1001:100 ") || !strings.Contains(list, "./first 81a4 1001:100 ") || strings.Count(list, "\n") != 2 {
		t.Errorf("claim-carol lists\n%s\nwant her empty 0750 directory and the file she wrote", list)
	}

	// The shared claim is as it was.
	now, err := cs.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "home-shared", metav1.GetOptions{})
	if err != nil || now.UID != shared.UID || now.Status.Phase != corev1.ClaimBound || now.Spec.VolumeName != shared.Spec.VolumeName {
		t.Errorf("the shared claim: %+v %v", now, err)
	}
}

func splitJob(ns, user string, uid int64, mode string) migration.Split {
	return migration.Split{User: user, Shared: "home-shared", Directory: "home/" + user, UID: uid, GID: 100, Mode: mode, Image: testcluster.ToolsImage,
		Spec: claims.Spec{Namespace: ns, Name: "claim-" + user, User: user, Mode: claims.RWX, Size: "1Gi"}}
}

// homesTree writes alice's and bob's homes under root/home, as their
// servers left them.
func homesTree(t *testing.T, root string) {
	t.Helper()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	dir := func(rel string, mode os.FileMode, uid, gid int) {
		p := filepath.Join(root, rel)
		must(os.MkdirAll(p, 0o755))
		must(os.Chown(p, uid, gid))
		must(os.Chmod(p, mode))
	}
	file := func(rel, content string, mode os.FileMode, uid, gid int) {
		p := filepath.Join(root, rel)
		must(os.WriteFile(p, []byte(content), mode))
		must(os.Chown(p, uid, gid))
		must(os.Chmod(p, mode))
	}
	dir("home", 0o755, 0, 0)
	dir("home/alice", 0o700, 1000, 100)
	dir("home/alice/work", 0o755, 1000, 100)
	dir("home/alice/work/data", 0o755, 1000, 100)
	dir("home/alice/shared", 0o770|os.ModeSetgid, 1000, 2000)
	file("home/alice/notebook.ipynb", aliceFiles["notebook.ipynb"], 0o644, 1000, 100)
	file("home/alice/work/data/results.csv", aliceFiles["work/data/results.csv"], 0o644, 1000, 100)
	file("home/alice/work/raw.bin", aliceFiles["work/raw.bin"], 0o600, 1000, 100)
	file("home/alice/shared/plan.md", "# plan\n", 0o660, 1000, 2000)
	file("home/alice/old.txt", "old\n", 0o644, 1000, 100)
	old := time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC)
	must(os.Chtimes(filepath.Join(root, "home/alice/old.txt"), old, old))
	must(os.Link(filepath.Join(root, "home/alice/work/data/results.csv"), filepath.Join(root, "home/alice/work/results-link.csv")))
	must(os.Symlink("data/results.csv", filepath.Join(root, "home/alice/work/latest.csv")))
	must(os.Lchown(filepath.Join(root, "home/alice/work/latest.csv"), 1000, 100))
	dir("home/bob", 0o700, 1002, 100)
	file("home/bob/notes.txt", "bob's\n", 0o600, 1002, 100)
	must(os.Symlink("bob", filepath.Join(root, "home/eve")))
	// Times last: writing into a directory changes its time.
	for _, d := range []string{"home/alice/work/data", "home/alice/work", "home/alice/shared", "home/alice", "home/bob"} {
		must(os.Chtimes(filepath.Join(root, d), old, old))
	}
}

// diskSnapshot is every entry under root on this machine's disk: its kind,
// mode, owner, links, size, inode, time, and its content's hash or link's
// target.
func diskSnapshot(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.Walk(root, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		st := info.Sys().(*syscall.Stat_t)
		kind := "file"
		switch {
		case info.IsDir():
			kind = "dir"
		case info.Mode()&os.ModeSymlink != 0:
			kind = "link"
		}
		s := fmt.Sprintf("%s %o %d:%d n%d s%d i%d m%d", kind, st.Mode, st.Uid, st.Gid, st.Nlink, st.Size, st.Ino, st.Mtim.Nano())
		switch kind {
		case "link":
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			s += " -> " + target
		case "file":
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			sum := sha256.Sum256(b)
			s += " " + hex.EncodeToString(sum[:8])
		}
		out[rel] = s
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func keys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// sharedHostPathClaim is a claim bound to a host-path volume on root,
// reserved for it, as a shared home claim of the shared layout is
// (zero-to-jupyterhub's "static" storage on a node's disk).
func sharedHostPathClaim(t *testing.T, ctx context.Context, cs kubernetes.Interface, ns, name, root string) *corev1.PersistentVolumeClaim {
	t.Helper()
	pvName := "shared-" + ns
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: pvName},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("10Gi")},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			ClaimRef:                      &corev1.ObjectReference{Namespace: ns, Name: name},
			PersistentVolumeSource:        corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: root}},
		},
	}
	if _, err := cs.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cs.CoreV1().PersistentVolumes().Delete(context.Background(), pvName, metav1.DeleteOptions{})
	})
	none := ""
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany}, StorageClassName: &none, VolumeName: pvName,
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("10Gi")}},
		},
	}
	if _, err := cs.CoreV1().PersistentVolumeClaims(ns).Create(ctx, pvc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := testcluster.WaitClaimPhase(ctx, cs, ns, name, corev1.ClaimBound); err != nil {
		t.Fatal(err)
	}
	got, err := cs.CoreV1().PersistentVolumeClaims(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// subPathPod is ClaimPod with only directory dir of claim at /home, as
// the shared layout mounts a user's home.
func subPathPod(ns, name, claim, dir, script string) *corev1.Pod {
	p := testcluster.ClaimPod(ns, name, claim, script)
	p.Spec.Containers[0].VolumeMounts[0].SubPath = dir
	return p
}

// asUser runs the pod's container as uid:gid, as a user's server does.
func asUser(p *corev1.Pod, uid, gid int64) {
	p.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsUser: &uid, RunAsGroup: &gid}
}
