package testcluster

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The node: Debian's containerd and runc run the pods, kubelet (built by
// tools/testbed) registers one node named NodeName at 127.0.0.1, and
// kube-scheduler places pods on it; a CSI node plugin of the test process
// serves volumes of driver CSIDriverName from directories of the scratch
// directory (csi.go). Everything the node writes lives under
// the cluster's scratch directory (containerd's root, state and socket,
// kubelet's root, the CNI network's address leases), except what the
// components place at fixed paths: the pods' network namespaces
// (/run/netns), containerd's shim sockets (/run/containerd/s), the CNI
// result cache (/var/lib/cni), kubelet's log links (/var/log/containers)
// and the host-path provisioner's directories (/tmp/hostpath_pv). Stop ends
// the pods through the API first so that those are removed by their owners,
// then removes what is left of them.

// NodeName is the name the test node registers with.
const NodeName = "testbed-node"

// Images imported into the node's containerd from tools/testbed/images.sh;
// pods use them with imagePullPolicy Never (nothing can be pulled).
const (
	// ToolsImage has busybox (sh and the usual commands) and rsync.
	ToolsImage = "testbed.invalid/tools:1"
	// PauseImage is the pod sandbox.
	PauseImage = "testbed.invalid/pause:1"
)

// HostPathClass is the StorageClass Start creates on a cluster with a node:
// kube-controller-manager's host-path provisioner makes each claim's volume
// a directory /tmp/hostpath_pv/UUID of this machine.
const HostPathClass = "testbed-hostpath"

// HostPathProvisioner is the provisioner name of HostPathClass.
const HostPathProvisioner = "kubernetes.io/host-path"

// hostPathBase is where the host-path provisioner creates volumes (fixed in
// kube-controller-manager).
const hostPathBase = "/tmp/hostpath_pv/"

// Controllers a node needs besides the volume binder: Jobs, the node
// lifecycle controller (it lifts the not-ready taint kubelet registers
// with), and the garbage collector (a deleted Job's pods go with it).
var nodeControllers = []string{"job-controller", "node-lifecycle-controller", "garbage-collector-controller", "ttl-after-finished-controller"}

var nodeControllerArgs = []string{"--enable-hostpath-provisioner"}

type node struct {
	dir        string // scratch subdirectory
	socket     string // containerd's
	network    string // CNI network name, also the bridge's name
	containerd *process
	scheduler  *process
	kubelet    *process
	csi        *csiPlugin
}

// startNode starts containerd (importing the images), kube-scheduler and
// kubelet, and waits until the node is Ready without taints and the
// host-path StorageClass exists.
func (c *Cluster) startNode(ctx context.Context) error {
	if err := c.checkNodeDeps(); err != nil {
		return err
	}
	reapDeadNodes()
	n := &node{dir: c.path("node"), network: "jtb" + randomToken()[:10]}
	n.socket = filepath.Join(n.dir, "containerd.sock")
	c.node = n
	for _, d := range []string{"cni", "kubelet", "pod-logs", "runc"} {
		if err := os.MkdirAll(filepath.Join(n.dir, d), 0o700); err != nil {
			return err
		}
	}
	if err := c.startContainerd(ctx, n); err != nil {
		return err
	}
	if err := c.startScheduler(n); err != nil {
		return err
	}
	if err := c.startCSI(n); err != nil {
		return err
	}
	if err := c.startKubelet(n); err != nil {
		return err
	}
	if err := c.waitNodeReady(ctx, n); err != nil {
		return err
	}
	if err := c.createHostPathClass(ctx); err != nil {
		return err
	}
	return c.waitCSI(ctx, n)
}

// checkNodeDeps says what the test node lacks: root, the test bed's files
// (tools/testbed/build.sh), Debian's containerd, runc and CNI plugins.
func (c *Cluster) checkNodeDeps() error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("the test node needs root: containerd, runc and kubelet mount volumes and create network namespaces")
	}
	for _, b := range []string{"kubelet", "kube-scheduler", "images.tar"} {
		if _, err := os.Stat(filepath.Join(c.bin, b)); err != nil {
			return fmt.Errorf("test bed file %s missing in %s: run tools/testbed/build.sh", b, c.bin)
		}
	}
	for _, b := range []string{"containerd", "containerd-shim-runc-v2", "runc", "ctr"} {
		if _, err := exec.LookPath(b); err != nil {
			return fmt.Errorf("%s not found: the test node needs Debian's containerd and runc (make nodedeps)", b)
		}
	}
	if _, err := os.Stat(filepath.Join(cniBinDir, "bridge")); err != nil {
		return fmt.Errorf("CNI plugins missing in %s: the test node needs Debian's containernetworking-plugins (make nodedeps)", cniBinDir)
	}
	return nil
}

// waitNodeReady waits until the node is Ready without taints.
func (c *Cluster) waitNodeReady(ctx context.Context, n *node) error {
	admin := c.Admin()
	return waitFor(ctx, 120*time.Second, n.kubelet, filepath.Join(n.dir, "kubelet.log"), func() bool {
		nd, err := admin.CoreV1().Nodes().Get(ctx, NodeName, metav1.GetOptions{})
		if err != nil || len(nd.Spec.Taints) > 0 {
			return false
		}
		for _, cond := range nd.Status.Conditions {
			if cond.Type == corev1.NodeReady {
				return cond.Status == corev1.ConditionTrue
			}
		}
		return false
	})
}

// createHostPathClass creates the host-path StorageClass (one that exists
// already is kept).
func (c *Cluster) createHostPathClass(ctx context.Context) error {
	bind := storagev1.VolumeBindingImmediate
	_, err := c.Admin().StorageV1().StorageClasses().Create(ctx, &storagev1.StorageClass{
		ObjectMeta:        metav1.ObjectMeta{Name: HostPathClass},
		Provisioner:       HostPathProvisioner,
		VolumeBindingMode: &bind,
	}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	return nil
}

const cniBinDir = "/usr/lib/cni"

// startContainerd writes containerd's and the CNI network's configuration,
// starts containerd and imports the node's images.
func (c *Cluster) startContainerd(ctx context.Context, n *node) error {
	if err := writeFiles(n.dir, map[string][]byte{"containerd.toml": []byte(containerdConfig(n))}); err != nil {
		return err
	}
	if err := writeFiles(filepath.Join(n.dir, "cni"), map[string][]byte{"10-testbed.conflist": []byte(cniConfig(n))}); err != nil {
		return err
	}
	var err error
	logPath := filepath.Join(n.dir, "containerd.log")
	n.containerd, err = c.launcher.run("containerd", "containerd", []string{"--config", filepath.Join(n.dir, "containerd.toml")}, logPath)
	if err != nil {
		return err
	}
	if err := waitFor(ctx, 30*time.Second, n.containerd, logPath, func() bool {
		return exec.CommandContext(ctx, "ctr", "--address", n.socket, "version").Run() == nil
	}); err != nil {
		return err
	}
	out, err := exec.CommandContext(ctx, "ctr", "--address", n.socket, "-n", "k8s.io", "images", "import", filepath.Join(c.bin, "images.tar")).CombinedOutput()
	if err != nil {
		return fmt.Errorf("import the node images: %v: %s", err, out)
	}
	return nil
}

// containerdConfig is containerd's configuration for node n: its state
// under n's directory, the CRI plugin with runc and n's CNI network.
func containerdConfig(n *node) string {
	q := strconv.Quote
	return `version = 2
root = ` + q(filepath.Join(n.dir, "containerd", "root")) + `
state = ` + q(filepath.Join(n.dir, "containerd", "state")) + `
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing"]
[grpc]
  address = ` + q(n.socket) + `
[ttrpc]
  address = ` + q(n.socket+".ttrpc") + `
[debug]
  address = ""
[metrics]
  address = ""
[plugins."io.containerd.internal.v1.opt"]
  path = ` + q(filepath.Join(n.dir, "containerd", "opt")) + `
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = ` + q(PauseImage) + `
  # The capability bounding set here lacks CAP_SYS_RESOURCE.
  restrict_oom_score_adj = true
  disable_apparmor = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = ` + q(cniBinDir) + `
    conf_dir = ` + q(filepath.Join(n.dir, "cni")) + `
    max_conf_num = 1
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        BinaryName = "runc"
        Root = ` + q(filepath.Join(n.dir, "runc")) + `
        SystemdCgroup = false
`
}

// cniConfig is the CNI network list of node n: a bridge without an address
// on the host side and without routes: pods reach each other, nothing
// leaves the node (isGateway and ipMasq off).
func cniConfig(n *node) string {
	q := strconv.Quote
	return `{
  "cniVersion": "0.4.0",
  "name": ` + q(n.network) + `,
  "plugins": [{
    "type": "bridge",
    "bridge": ` + q(n.network) + `,
    "isGateway": false,
    "ipMasq": false,
    "hairpinMode": false,
    "ipam": {
      "type": "host-local",
      "ranges": [[{"subnet": "10.244.0.0/24"}]],
      "dataDir": ` + q(filepath.Join(n.dir, "cni-ipam")) + `
    }
  }]
}
`
}

func (c *Cluster) startScheduler(n *node) error {
	port, err := freePort()
	if err != nil {
		return err
	}
	kc := c.path("scheduler.kubeconfig")
	n.scheduler, err = c.launcher.run("kube-scheduler", filepath.Join(c.bin, "kube-scheduler"), []string{
		"--kubeconfig=" + kc, "--authentication-kubeconfig=" + kc, "--authorization-kubeconfig=" + kc,
		"--bind-address=127.0.0.1", "--secure-port=" + strconv.Itoa(port),
		"--leader-elect=false",
	}, filepath.Join(n.dir, "kube-scheduler.log"))
	return err
}

func (c *Cluster) startKubelet(n *node) error {
	port, err := freePort()
	if err != nil {
		return err
	}
	root := filepath.Join(n.dir, "kubelet")
	q := strconv.Quote
	// The machines are cgroup v1 with cgroup2 mounted beside it; kubelet runs
	// without QoS cgroups and node allocatable enforcement there, and evicts
	// nothing (the disk is shared).
	cfg := `apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: 127.0.0.1
port: ` + strconv.Itoa(port) + `
readOnlyPort: 0
healthzPort: 0
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: false}
  x509: {clientCAFile: ` + q(c.path("ca.crt")) + `}
authorization: {mode: AlwaysAllow}
containerRuntimeEndpoint: ` + q("unix://"+n.socket) + `
cgroupDriver: cgroupfs
cgroupsPerQOS: false
enforceNodeAllocatable: []
failSwapOn: false
failCgroupV1: false
podLogsDir: ` + q(filepath.Join(n.dir, "pod-logs")) + `
volumePluginDir: ` + q(filepath.Join(root, "volume-plugins")) + `
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {"memory.available": "0%", "nodefs.available": "0%", "imagefs.available": "0%"}
serializeImagePulls: false
registerNode: true
nodeStatusUpdateFrequency: 2s
syncFrequency: 5s
fileCheckFrequency: 5s
localStorageCapacityIsolation: false
`
	if err := writeFiles(n.dir, map[string][]byte{"kubelet.yaml": []byte(cfg)}); err != nil {
		return err
	}
	n.kubelet, err = c.launcher.run("kubelet", filepath.Join(c.bin, "kubelet"), []string{
		"--config=" + filepath.Join(n.dir, "kubelet.yaml"),
		"--kubeconfig=" + c.path("kubelet.kubeconfig"),
		"--root-dir=" + root,
		"--cert-dir=" + filepath.Join(root, "pki"),
		"--hostname-override=" + NodeName,
		// Kubelet keeps a loopback address out of the node's status (it
		// logs so at each update): the node has no address, so nothing
		// connects to it from the API server (no logs or exec; tests read
		// termination messages) and nothing leaves 127.0.0.0/8.
		"--node-ip=127.0.0.1",
	}, filepath.Join(n.dir, "kubelet.log"))
	return err
}

// stopNode ends the pods through the API (so kubelet and containerd remove
// their sandboxes, network namespaces and mounts), stops kubelet, the
// scheduler and containerd, and removes what they leave outside the scratch
// directory. The controller manager stops first so that no Job starts a pod
// again meanwhile.
func (c *Cluster) stopNode() {
	n := c.node
	if n == nil {
		return
	}
	c.node = nil
	c.kcm.stop(10 * time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var hostPaths []string
	if c.api != nil && c.api.running() {
		hostPaths = c.hostPathDirs(ctx)
		if n.kubelet != nil && n.kubelet.running() { // else nothing would end the pods
			c.drainPods(ctx)
		}
	}
	n.kubelet.stop(15 * time.Second)
	if n.csi != nil {
		n.csi.stop()
	}
	n.scheduler.stop(5 * time.Second)
	if n.containerd != nil && n.containerd.running() {
		// Any task left (the drain ran out of time) ends here, so its shim exits.
		if out, err := exec.CommandContext(ctx, "ctr", "--address", n.socket, "-n", "k8s.io", "tasks", "ls", "-q").Output(); err == nil {
			for _, id := range strings.Fields(string(out)) {
				_ = exec.CommandContext(ctx, "ctr", "--address", n.socket, "-n", "k8s.io", "tasks", "rm", "-f", id).Run()
			}
		}
	}
	n.containerd.stop(10 * time.Second)
	n.clean()
	for _, p := range hostPaths {
		_ = os.RemoveAll(p)
	}
}

// clean removes what a stopped node leaves: shims and their containers
// (with their network namespaces), mounts under its directory, its bridge,
// its CNI results and kubelet's log links into it.
func (n *node) clean() {
	killShims(n.socket)
	unmountUnder(n.dir + "/")
	_ = exec.Command("ip", "link", "delete", n.network).Run()
	if results, err := filepath.Glob("/var/lib/cni/results/" + n.network + "-*"); err == nil {
		for _, r := range results {
			_ = os.Remove(r)
		}
	}
	if links, err := filepath.Glob("/var/log/containers/*.log"); err == nil {
		for _, l := range links {
			if t, err := os.Readlink(l); err == nil && strings.HasPrefix(t, n.dir+"/") {
				_ = os.Remove(l)
			}
		}
	}
}

// reapDeadNodes cleans up after test nodes whose test process was killed
// (Stop never ran): kubelet and containerd died with it, but containerd's
// shims, their containers and kubelet's mounts outlive them. A node counts
// as dead when its containerd socket accepts no connection; its scratch
// directory stays (TESTCLUSTER_KEEP keeps them for a look).
func reapDeadNodes() {
	dirs, err := filepath.Glob(filepath.Join(os.TempDir(), "jupyter-testcluster-*", "node"))
	if err != nil {
		return
	}
	for _, dir := range dirs {
		socket := filepath.Join(dir, "containerd.sock")
		if _, err := os.Stat(socket); err != nil {
			continue
		}
		if conn, err := net.DialTimeout("unix", socket, time.Second); err == nil {
			_ = conn.Close()
			continue // a running node
		}
		n := &node{dir: dir, socket: socket}
		if cfg, err := os.ReadFile(filepath.Join(dir, "cni", "10-testbed.conflist")); err == nil {
			var conf struct {
				Name string `json:"name"`
			}
			if json.Unmarshal(cfg, &conf) == nil && strings.HasPrefix(conf.Name, "jtb") {
				n.network = conf.Name
			}
		}
		n.clean()
		_ = os.Remove(socket)
	}
}

// hostPathDirs are the directories of the volumes the host-path
// provisioner made.
func (c *Cluster) hostPathDirs(ctx context.Context) []string {
	var dirs []string
	if pvs, err := c.Admin().CoreV1().PersistentVolumes().List(ctx, metav1.ListOptions{}); err == nil {
		for _, pv := range pvs.Items {
			if hp := pv.Spec.HostPath; hp != nil && strings.HasPrefix(hp.Path, hostPathBase) && !strings.Contains(hp.Path, "..") {
				dirs = append(dirs, hp.Path)
			}
		}
	}
	return dirs
}

// drainPods deletes every pod and waits until kubelet has ended them.
func (c *Cluster) drainPods(ctx context.Context) {
	admin := c.Admin()
	grace := int64(1)
	if nss, err := admin.CoreV1().Namespaces().List(ctx, metav1.ListOptions{}); err == nil {
		for _, ns := range nss.Items {
			_ = admin.CoreV1().Pods(ns.Name).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: &grace}, metav1.ListOptions{})
		}
	}
	for ctx.Err() == nil {
		pods, err := admin.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
		if err != nil || len(pods.Items) == 0 {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// killShims ends containerd shims started for socket that outlived
// containerd (a task that could not be deleted), and their containers.
func killShims(socket string) {
	for _, sh := range shimsOf(socket) {
		for _, child := range childrenOf(sh.pid) {
			removeNetnsOf(child)
			_ = syscall.Kill(child, syscall.SIGKILL)
		}
		_ = syscall.Kill(sh.pid, syscall.SIGKILL)
		// The shim's own socket, named as containerd 1.6 names it.
		sum := sha256.Sum256([]byte(filepath.Join(socket, sh.namespace, sh.id)))
		_ = os.Remove(filepath.Join("/run/containerd/s", hex.EncodeToString(sum[:])))
	}
}

type shim struct {
	pid           int
	namespace, id string
}

// shimsOf lists the running containerd shims of the containerd at socket.
func shimsOf(socket string) []shim {
	var out []shim
	procs, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", p.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00")
		if len(args) == 0 || !strings.Contains(filepath.Base(args[0]), "containerd-shim") {
			continue
		}
		flags := map[string]string{}
		for i := range args[:len(args)-1] {
			if strings.HasPrefix(args[i], "-") {
				flags[strings.TrimLeft(args[i], "-")] = args[i+1]
			}
		}
		if flags["address"] == socket {
			out = append(out, shim{pid: pid, namespace: flags["namespace"], id: flags["id"]})
		}
	}
	return out
}

// removeNetnsOf unmounts and removes the /run/netns entry containerd made
// for the network namespace of pid, if any.
func removeNetnsOf(pid int) {
	var ns syscall.Stat_t
	if syscall.Stat(filepath.Join("/proc", strconv.Itoa(pid), "ns", "net"), &ns) != nil {
		return
	}
	entries, err := filepath.Glob("/run/netns/cni-*")
	if err != nil {
		return
	}
	for _, e := range entries {
		var st syscall.Stat_t
		if syscall.Stat(e, &st) == nil && st.Ino == ns.Ino && st.Dev == ns.Dev {
			_ = syscall.Unmount(e, syscall.MNT_DETACH)
			_ = os.Remove(e)
		}
	}
}

func childrenOf(pid int) []int {
	var out []int
	procs, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	for _, p := range procs {
		if _, err := strconv.Atoi(p.Name()); err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", p.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...
		s := string(stat)
		fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(fields) > 1 && fields[1] == strconv.Itoa(pid) {
			child, _ := strconv.Atoi(p.Name())
			out = append(out, child)
		}
	}
	return out
}

// unmountUnder detaches every mount whose mount point starts with prefix,
// deepest first.
func unmountUnder(prefix string) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return
	}
	var points []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) > 4 && strings.HasPrefix(unescapeMount(fields[4]), prefix) {
			points = append(points, unescapeMount(fields[4]))
		}
	}
	_ = f.Close()
	sort.Sort(sort.Reverse(sort.StringSlice(points)))
	for _, p := range points {
		_ = syscall.Unmount(p, syscall.MNT_DETACH)
	}
}

// unescapeMount decodes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
