package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/kube"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/testcluster"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/tofurun"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/userset"
)

// startBed builds the provider into a mirror under work, starts the test
// cluster with opts and sets it up for the bench (setup); the workspace's
// environment connects the provider as its own identity, so an audit log
// counts its requests alone. The caller stops the cluster.
func startBed(ctx context.Context, work string, opts testcluster.Options) (*tofurun.Workspace, *testcluster.Cluster, error) {
	root, _ := os.Getwd()
	bin, err := testcluster.BinDir("")
	if err != nil {
		return nil, nil, err
	}
	ws, err := tofurun.New(ctx, root, work, bin, tofurun.OpenTofu)
	if err != nil {
		return nil, nil, err
	}
	ws.Stdout = nil
	cluster, err := testcluster.Start(ctx, opts)
	if err != nil {
		return nil, nil, err
	}
	if err := setup(ctx, cluster.Admin()); err != nil {
		cluster.Stop()
		return nil, nil, err
	}
	ws.Env = append(ws.Env, connection(cluster)...)
	return ws, cluster, nil
}

// connection is the provider's connection to cluster, as its own identity.
func connection(cluster *testcluster.Cluster) []string {
	return []string{"KUBE_HOST=" + cluster.Host, "KUBE_TOKEN=" + cluster.LimitedToken, "KUBE_CLUSTER_CA_CERT_DATA=" + string(cluster.CAPEM)}
}

func setup(ctx context.Context, cs kubernetes.Interface) error {
	crb := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "bench-provider"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects: []rbacv1.Subject{{Kind: "User", APIGroup: rbacv1.GroupName, Name: testcluster.LimitedUser}}}
	if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{}); err != nil {
		return err
	}
	expand := true
	sc := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: class}, Provisioner: "nfs.csi.k8s.io", AllowVolumeExpansion: &expand}
	_, err := cs.StorageV1().StorageClasses().Create(ctx, sc, metav1.CreateOptions{})
	return err
}

func namespace(ctx context.Context, cs kubernetes.Interface, name string) error {
	_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	return err
}

// seedClaims creates namespace ns with the claims KubeSpawner would have
// made for n users.
func seedClaims(ctx context.Context, cs kubernetes.Interface, ns string, n int) error {
	if err := namespace(ctx, cs, ns); err != nil {
		return err
	}
	cls := class
	seeds := make([]testcluster.SeedClaim, n)
	for i, u := range users("user", n) {
		seeds[i] = testcluster.SeedClaim{Name: "claim-" + u, Username: u, StorageClass: &cls}
	}
	if errs := kube.ForEach(ctx, seeds, func(ctx context.Context, s testcluster.SeedClaim) error {
		return testcluster.Seed(ctx, cs, ns, s)
	}); len(errs) > 0 {
		return fmt.Errorf("seeding: %d errors", len(errs))
	}
	// The controller-manager and the API server may go on working on the
	// new claims (the volume binder, the garbage collector's graph); a plan
	// or a List timed then would take longer by their work.
	settle(ctx)
	return nil
}

// settle waits, at most a minute, until the machine has been nearly idle
// (under a tenth of its CPU time busy) for two seconds in a row.
func settle(ctx context.Context) {
	start := time.Now()
	prev, err := cpuTimes()
	if err != nil {
		return
	}
	quiet := 0
	for quiet < 2 && time.Since(start) < time.Minute {
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Second):
		}
		cur, err := cpuTimes()
		if err != nil {
			return
		}
		if busyShare(prev, cur) < 0.1 {
			quiet++
		} else {
			quiet = 0
		}
		prev = cur
	}
	if quiet < 2 {
		fmt.Printf("did not settle within %s; measuring anyway\n", time.Since(start).Round(time.Second))
		return
	}
	fmt.Printf("settled after %s\n", time.Since(start).Round(time.Second))
}

// cpuTimes is the machine's CPU time (the "cpu" line of /proc/stat, in
// clock ticks): busy and total.
func cpuTimes() ([2]uint64, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return [2]uint64{}, err
	}
	return parseCPUTimes(string(b))
}

// parseCPUTimes reads the busy and total ticks of /proc/stat's first line
// (user nice system idle iowait irq softirq steal ...): idle and iowait
// are not busy.
func parseCPUTimes(stat string) ([2]uint64, error) {
	line, _, _ := strings.Cut(stat, "\n")
	f := strings.Fields(line)
	if len(f) < 5 || f[0] != "cpu" {
		return [2]uint64{}, fmt.Errorf("/proc/stat: unexpected first line %q", line)
	}
	var busy, total uint64
	for i, v := range f[1:] {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return [2]uint64{}, fmt.Errorf("/proc/stat: %w", err)
		}
		if i >= 8 { // guest and guest_nice are already counted in user and nice
			break
		}
		total += n
		if i != 3 && i != 4 {
			busy += n
		}
	}
	return [2]uint64{busy, total}, nil
}

// busyShare is the share of CPU time busy between two readings.
func busyShare(prev, cur [2]uint64) float64 {
	if cur[1] <= prev[1] {
		return 0
	}
	return float64(cur[0]-prev[0]) / float64(cur[1]-prev[1])
}

// holdCluster is -hold: a cluster with n claims and the plans'
// configuration applied with the n users listed, kept until interrupted,
// for profiling one plan at a time.
func holdCluster(n int) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	work, err := os.MkdirTemp("", "jupyter-hold-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(work) }()
	ws, cluster, err := startBed(ctx, work, testcluster.Options{})
	if err != nil {
		return err
	}
	defer cluster.Stop()
	b := &bench{ws: ws, cluster: cluster, cs: cluster.Admin(), work: work}
	ns := fmt.Sprintf("bench-plan-%d", n)
	if err := seedClaims(ctx, b.cs, ns, n); err != nil {
		return err
	}
	dir, err := b.planConfig(ctx, ns)
	if err != nil {
		return err
	}
	listed, _ := json.Marshal(map[string][]string{"users": users("user", n)})
	if err := os.WriteFile(filepath.Join(dir, "listed.tfvars.json"), listed, 0o644); err != nil {
		return err
	}
	if err := ws.Run(ctx, dir, "apply", "-auto-approve", "-no-color", "-var-file=listed.tfvars.json"); err != nil {
		return err
	}
	var sh strings.Builder
	for _, e := range append(connection(cluster), "TF_CLI_CONFIG_FILE="+ws.CLIConfig, "CHECKPOINT_DISABLE=1", "TF_IN_AUTOMATION=1", "TF_INPUT=0") {
		k, v, _ := strings.Cut(e, "=")
		fmt.Fprintf(&sh, "export %s='%s'\n", k, v) // a PEM's newlines kept; no value holds a quote
	}
	envFile := filepath.Join(work, "env.sh")
	if err := os.WriteFile(envFile, []byte(sh.String()), 0o600); err != nil {
		return err
	}
	fmt.Printf("holding %d claims; the provider is %s (rebuild it there to try a change)\n", n, ws.ProviderBin)
	fmt.Printf("  . %s; cd %s; %s plan -lock=false -var-file=listed.tfvars.json\n", envFile, dir, ws.Bin)
	<-ctx.Done()
	return nil
}

// applyConfig creates namespace ns and a configuration that creates n new
// users' claims in it, and runs tofu init.
func (b *bench) applyConfig(ctx context.Context, ns string, n int) (string, error) {
	if err := namespace(ctx, b.cs, ns); err != nil {
		return "", err
	}
	dir, err := writeConfig(b.work, ns, fmt.Sprintf(`
resource "jupyter_home_storage" "homes" {
  namespace          = %q
  capacity           = "1Gi"
  storage_class_name = %q
  users              = file("${path.module}/users.json")
}
`, ns, class))
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, "users.json"), []byte(userset.Encode(users("new", n))), 0o644); err != nil {
		return "", err
	}
	return dir, b.ws.Run(ctx, dir, "init", "-no-color")
}

// planConfig writes and applies the configuration the plans are timed with:
// one jupyter_home_storage over namespace ns.
func (b *bench) planConfig(ctx context.Context, ns string) (string, error) {
	dir, err := writeConfig(b.work, ns, fmt.Sprintf(`
variable "access_mode" {
  type    = string
  default = "ReadWriteOnce"
}
variable "on_mode_change" {
  type    = string
  default = "fail"
}
# set(string), not list(string): OpenTofu converts a list variable's value
# (a tuple from a .tfvars file) in time that grows with the square of its
# length (go-cty's type unification), a set's in linear time.
variable "users" {
  type    = set(string)
  default = []
}
resource "jupyter_home_storage" "homes" {
  namespace          = %q
  capacity           = "1Gi"
  storage_class_name = %q
  access_mode        = var.access_mode
  on_mode_change     = var.on_mode_change
  users              = jsonencode({ for u in var.users : u => {} })
}
`, ns, class))
	if err != nil {
		return "", err
	}
	if err := b.ws.Run(ctx, dir, "init", "-no-color"); err != nil {
		return "", err
	}
	return dir, b.ws.Run(ctx, dir, "apply", "-auto-approve", "-no-color")
}

func writeConfig(work, name, body string) (string, error) {
	dir := filepath.Join(work, "cfg-"+name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	return dir, os.WriteFile(filepath.Join(dir, "main.tf"), []byte(`terraform {
  required_providers {
    jupyter = { source = "jupyter-infra/jupyter" }
  }
}
provider "jupyter" {}
`+body), 0o644)
}

// loadAverage is the machine's one-minute load average (other work on it
// slows every measurement).
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(b)); err == nil && len(f) > 0 {
		return f[0]
	}
	return "unknown"
}
