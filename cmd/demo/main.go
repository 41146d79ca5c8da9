package main

import (
	"context"
	_ "embed"
	"fmt"
	"maps"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/testcluster"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/tofurun"
)

const namespace = "jhub"

// copyConfig is the configuration of the copy part.
//
//go:embed copy.tf
var copyConfig string

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

func step(format string, a ...any) { fmt.Printf("\n==> "+format+"\n", a...) }

// echoRun echoes a tofu command as the user would type it and runs it in dir.
func echoRun(ctx context.Context, ws *tofurun.Workspace, dir string, args ...string) error {
	ws.Echo(os.Stdout, args...)
	return ws.Run(ctx, dir, args...)
}

// run is the demo, step by step: the provider built, the test cluster
// started with KubeSpawner's claims, the quickstart applied, the flips to
// ReadWriteMany (refused, kept, migrated), then the copy of a home with files.
func run() error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	root, err := os.Getwd()
	if err != nil {
		return err
	}
	work, err := os.MkdirTemp("", "jupyter-demo-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(work) }()
	ws, err := buildProvider(ctx, root, work)
	if err != nil {
		return err
	}
	cluster, err := startCluster(ctx)
	if err != nil {
		return err
	}
	defer func() {
		step("stopping the local test cluster")
		cluster.Stop()
	}()
	cs := cluster.Admin()
	if err := seedHomes(ctx, cs); err != nil {
		return err
	}
	dir, err := applyQuickstart(ctx, ws, root, cluster)
	if err != nil {
		return err
	}
	if err := flipToRWX(ctx, ws, cs, dir); err != nil {
		return err
	}
	return copyDemo(ctx, cs, ws)
}

// buildProvider builds the provider into a local mirror under work, for
// the tofu CLI the test bed selects.
func buildProvider(ctx context.Context, root, work string) (*tofurun.Workspace, error) {
	bin, err := testcluster.BinDir("")
	if err != nil {
		return nil, err
	}
	step("building the provider into a local mirror")
	cli, err := tofurun.Selected()
	if err != nil {
		return nil, err
	}
	return tofurun.New(ctx, root, work, bin, cli)
}

// startCluster starts the local test cluster with a controller-manager
// and a node. The caller stops it.
func startCluster(ctx context.Context) (*testcluster.Cluster, error) {
	step("starting the local test cluster (etcd, kube-apiserver, kube-controller-manager, a node: containerd, kubelet, kube-scheduler)")
	start := time.Now()
	cluster, err := testcluster.Start(ctx, testcluster.Options{ControllerManager: true, Node: true})
	if err != nil {
		return nil, err
	}
	fmt.Printf("API server %s ready in %s\n", cluster.Host, time.Since(start).Round(100*time.Millisecond))
	return cluster, nil
}

// seedHomes creates the namespace with the home claims KubeSpawner made
// for alice, bob and carol, and a Longhorn volume waiting for dave's.
func seedHomes(ctx context.Context, cs kubernetes.Interface) error {
	step("seeding namespace %q with home claims as KubeSpawner creates them", namespace)
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}, metav1.CreateOptions{}); err != nil {
		return err
	}
	rwx := []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany}
	class := "jupyter-homes"
	seeds := []testcluster.SeedClaim{
		{Name: "claim-alice", Username: "alice", Size: "10Gi", StorageClass: &class, Bound: true},
		{Name: "claim-bob", Username: "bob", Size: "10Gi", StorageClass: &class, Bound: true},
		{Name: "claim-carol", Username: "carol", Size: "10Gi", Modes: rwx, StorageClass: &class},
	}
	if err := testcluster.Seed(ctx, cs, namespace, seeds...); err != nil {
		return err
	}
	// A Longhorn volume waiting for dave's home, which Terraform creates.
	if err := reserveVolume(ctx, cs, "claim-dave", class); err != nil {
		return err
	}
	for _, s := range seeds {
		fmt.Printf("  %-30s user %-18s %s\n", s.Name, s.Username, modes(s.Modes))
	}
	return nil
}

// applyQuickstart copies examples/quickstart under the workspace, connects
// the workspace to cluster, and runs init and apply there; it returns the
// copy's directory.
func applyQuickstart(ctx context.Context, ws *tofurun.Workspace, root string, cluster *testcluster.Cluster) (string, error) {
	step(ws.CLI.Name + " init && " + ws.CLI.Name + " apply in examples/quickstart (provider from a local mirror)")
	dir := filepath.Join(ws.Dir, "quickstart")
	if err := os.CopyFS(dir, os.DirFS(filepath.Join(root, "examples", "quickstart"))); err != nil {
		return "", err
	}
	ws.Env = append(ws.Env, "KUBE_CONFIG_PATH="+cluster.KubeconfigPath)
	if err := echoRun(ctx, ws, dir, "init", "-no-color"); err != nil {
		return "", fmt.Errorf("%s init: %w", ws.CLI.Name, err)
	}
	if err := echoRun(ctx, ws, dir, "apply", "-auto-approve", "-no-color", "-compact-warnings"); err != nil {
		return "", fmt.Errorf("%s apply: %w", ws.CLI.Name, err)
	}
	return dir, nil
}

// flipToRWX flips the quickstart's homes (in dir) to ReadWriteMany three
// ways: refused by default, kept under keep_existing, migrated in place
// under migrate; then plans again to show nothing is left to do.
func flipToRWX(ctx context.Context, ws *tofurun.Workspace, cs kubernetes.Interface, dir string) error {
	step("flip the homes to ReadWriteMany: the plan must refuse and name the users whose claims stay ReadWriteOnce")
	if err := echoRun(ctx, ws, dir, "plan", "-no-color", "-var", "access_mode=ReadWriteMany"); err == nil {
		return fmt.Errorf("the plan accepted an unsafe ReadWriteOnce -> ReadWriteMany flip")
	}
	fmt.Println("(the plan failed, as it must: nothing was changed)")

	step("the same flip with on_mode_change = keep_existing: safe, existing claims stay and are reported as legacy users")
	if err := echoRun(ctx, ws, dir, "apply", "-auto-approve", "-no-color", "-compact-warnings",
		"-var", "access_mode=ReadWriteMany", "-var", "on_mode_change=keep_existing"); err != nil {
		return fmt.Errorf("%s apply: %w", ws.CLI.Name, err)
	}
	if err := migrateInPlace(ctx, ws, cs, dir); err != nil {
		return err
	}
	step("plan again: nothing left to do (after the outputs read by the data source are refreshed)")
	vars := []string{"-var", "access_mode=ReadWriteMany", "-var", "on_mode_change=migrate"}
	if err := ws.Run(ctx, dir, append([]string{"apply", "-refresh-only", "-auto-approve", "-no-color"}, vars...)...); err != nil {
		return err
	}
	return echoRun(ctx, ws, dir, append([]string{"plan", "-no-color", "-detailed-exitcode"}, vars...)...)
}

// migrateInPlace applies the flip under on_mode_change = migrate and
// checks that every home is ReadWriteMany on the volume it had.
func migrateInPlace(ctx context.Context, ws *tofurun.Workspace, cs kubernetes.Interface, dir string) error {
	before, err := homes(ctx, cs)
	if err != nil {
		return err
	}
	step("on_mode_change = migrate: every ReadWriteOnce home is rebound to ReadWriteMany on its own Longhorn volume (zero bytes copied); the hub drops co-location at each user's next spawn, with no change of its configuration")
	if err := echoRun(ctx, ws, dir, "apply", "-auto-approve", "-no-color", "-compact-warnings",
		"-var", "access_mode=ReadWriteMany", "-var", "on_mode_change=migrate"); err != nil {
		return fmt.Errorf("%s apply: %w", ws.CLI.Name, err)
	}
	after, err := homes(ctx, cs)
	if err != nil {
		return err
	}
	fmt.Println("\nhome claims before -> after the migration:")
	for _, name := range slices.Sorted(maps.Keys(after)) {
		fmt.Printf("  %-12s %-32s -> %s\n", name, before[name], after[name])
		if b, a := before[name], after[name]; b.volume != a.volume {
			return fmt.Errorf("%s moved from volume %s to %s", name, b.volume, a.volume)
		}
		if after[name].mode != "ReadWriteMany" {
			return fmt.Errorf("%s is still %s", name, after[name].mode)
		}
	}
	return nil
}

// erinFiles is what erin's server left in her home.
var erinFiles = map[string]string{
	"analysis.ipynb":         "{\"cells\": [], \"nbformat\": 4}\n",
	"data/measurements.csv":  "t,value\n0,1.5\n1,2.25\n",
	".jupyter/settings.json": "{\"theme\": \"dark\"}\n",
}

// copyDemo moves a home that holds files, on the node's disk, by copying:
// a pod writes erin's files into her ReadWriteOnce home, the apply copies it
// into a new ReadWriteMany claim with the provider's Job and switches her
// to it, and a pod mounting the new home reads every file back.
func copyDemo(ctx context.Context, cs kubernetes.Interface, ws *tofurun.Workspace) error {
	const ns, source, target = "jhub-node", "claim-erin", "home-erin"
	step("a home with files in it: namespace %q, erin's ReadWriteOnce claim on the node's disk (class %s, no driver can serve it in another mode)", ns, testcluster.HostPathClass)
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		return err
	}
	class := testcluster.HostPathClass
	if err := testcluster.Seed(ctx, cs, ns, testcluster.SeedClaim{Name: source, Username: "erin", Size: "1Gi", StorageClass: &class}); err != nil {
		return err
	}
	if err := testcluster.WaitClaimPhase(ctx, cs, ns, source, corev1.ClaimBound); err != nil {
		return err
	}
	if _, err := testcluster.RunPod(ctx, cs, testcluster.ClaimPod(ns, "jupyter-erin", source,
		testcluster.WriteFilesScript("/home", erinFiles)+"chown -R 1000:100 /home\n")); err != nil {
		return err
	}
	fmt.Printf("a pod wrote into %s:\n", source)
	printFiles(erinFiles)

	cfgDir := filepath.Join(ws.Dir, "copy")
	if err := os.MkdirAll(cfgDir, 0o700); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(cfgDir, "main.tf"), []byte(copyConfig), 0o600); err != nil {
		return err
	}
	run := func(args ...string) error { return echoRun(ctx, ws, cfgDir, args...) }
	step("on_mode_change = migrate: erin's home is copied into %s (ReadWriteMany) by a Job with rsync, checked, and the hub switched to it", target)
	if err := run("init", "-no-color"); err != nil {
		return fmt.Errorf("%s init: %w", ws.CLI.Name, err)
	}
	vars := []string{"-var", "access_mode=ReadWriteMany", "-var", "on_mode_change=migrate"}
	if err := run(append([]string{"apply", "-auto-approve", "-no-color", "-compact-warnings"}, vars...)...); err != nil {
		return fmt.Errorf("%s apply: %w", ws.CLI.Name, err)
	}

	msg, err := testcluster.RunPod(ctx, cs, testcluster.ClaimPod(ns, "jupyter-erin", target, testcluster.ReadFilesScript("/home")))
	if err != nil {
		return err
	}
	got, err := testcluster.ParseFiles(msg)
	if err != nil {
		return err
	}
	fmt.Printf("\na pod mounting %s, erin's home now, read back:\n", target)
	printFiles(got)
	if !maps.Equal(got, erinFiles) {
		return fmt.Errorf("%s holds %q, want %q", target, got, erinFiles)
	}
	fmt.Println("(every file, byte for byte)")

	step("plan again: nothing left to do")
	return run(append([]string{"plan", "-no-color", "-detailed-exitcode"}, vars...)...)
}

func printFiles(files map[string]string) {
	for _, name := range slices.Sorted(maps.Keys(files)) {
		fmt.Printf("  %-24s %q\n", name, files[name])
	}
}

type home struct{ mode, volume, phase string }

func (h home) String() string { return fmt.Sprintf("%s %s on %s", h.mode, h.phase, h.volume) }

// homes reads the home claims: mode, phase and volume.
func homes(ctx context.Context, cs kubernetes.Interface) (map[string]home, error) {
	l, err := cs.CoreV1().PersistentVolumeClaims(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	out := map[string]home{}
	for _, p := range l.Items {
		out[p.Name] = home{modes(p.Spec.AccessModes), orDash(p.Spec.VolumeName), string(p.Status.Phase)}
	}
	return out, nil
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// reserveVolume creates a Longhorn volume reserved for a claim not made yet.
func reserveVolume(ctx context.Context, cs kubernetes.Interface, claim, class string) error {
	name := "pv-" + namespace + "-" + claim
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("10Gi")},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName:              class,
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimDelete,
			ClaimRef:                      &corev1.ObjectReference{Namespace: namespace, Name: claim},
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{
				Driver: "driver.longhorn.io", VolumeHandle: name,
			}},
		},
	}
	_, err := cs.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{})
	return err
}

func modes(m []corev1.PersistentVolumeAccessMode) string {
	if len(m) == 0 {
		return "ReadWriteOnce"
	}
	return string(m[0])
}
