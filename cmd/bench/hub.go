package main

// The hub's configuration at N users: what Helm stores of it on the API
// server, with the values the provider renders for the N users' homes.

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/hubtest"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/testcluster"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/userset"
)

// hubSizes are the bytes of the two Secrets Helm makes of a hub release.
type hubSizes struct {
	Secret, Record int // the hub Secret's data; Helm's release record's
}

// hubSecretBound is the target for the hub Secret at 20,000 users.
const hubSecretBound = 64 << 10

// Met is ✓ when the hub Secret is under its target, else ✗.
func (s hubSizes) Met() string {
	if s.Secret >= hubSecretBound {
		return "✗"
	}
	return "✓"
}

// measureHub applies a jupyter_home_storage listing the n users whose
// claims namespace ns holds and a jupyter_spawner_config over its
// settings, installs the zero-to-jupyterhub chart (../shared/reference)
// with provider::jupyter::helm_values of it on the test bed (real Helm,
// without the chart's hooks), and returns the size of the hub Secret and
// of Helm's release record.
func (b *bench) measureHub(ctx context.Context, ns string, n int) (hubSizes, error) {
	var s hubSizes
	dir, valuesFile, err := b.hubValues(ctx, ns, n)
	if err != nil {
		return s, err
	}
	// The chart names its cluster-wide objects after the release: one
	// release name per N.
	release := fmt.Sprintf("hub-%d", n)
	if err := helmInstall(ctx, b.cluster, dir, ns, release, valuesFile); err != nil {
		return s, err
	}
	if s.Secret, err = secretBytes(ctx, b.cs, ns, "hub"); err != nil {
		return s, err
	}
	s.Record, err = secretBytes(ctx, b.cs, ns, "sh.helm.release.v1."+release+".v1")
	return s, err
}

// hubValues applies the hub's configuration for the n users of ns in a
// directory of its own and writes the Helm values it renders there; it
// returns the directory and the values file.
func (b *bench) hubValues(ctx context.Context, ns string, n int) (dir, valuesFile string, err error) {
	dir, err = writeConfig(b.work, "hub-"+ns, fmt.Sprintf(`
resource "jupyter_home_storage" "homes" {
  namespace          = %q
  capacity           = "1Gi"
  storage_class_name = %q
  users              = file("${path.module}/users.json")
}
resource "jupyter_spawner_config" "hub" {
  namespace             = %q
  home_storage_settings = jupyter_home_storage.homes.spawner_settings
}
output "values" {
  value = provider::jupyter::helm_values(jupyter_spawner_config.hub)
}
`, ns, class, ns))
	if err != nil {
		return "", "", err
	}
	if err := os.WriteFile(filepath.Join(dir, "users.json"), []byte(userset.Encode(users("user", n))), 0o644); err != nil {
		return "", "", err
	}
	for _, args := range [][]string{{"init", "-no-color"}, {"apply", "-auto-approve", "-no-color"}} {
		if err := b.ws.Run(ctx, dir, args...); err != nil {
			return "", "", err
		}
	}
	values, err := b.ws.Command(ctx, dir, "output", "-raw", "values").Output()
	if err != nil {
		return "", "", fmt.Errorf("output values: %w", err)
	}
	if !strings.Contains(string(values), "extraFiles") {
		return "", "", fmt.Errorf("the rendered values hold no hub.extraFiles:\n%s", values)
	}
	valuesFile = filepath.Join(dir, "values.yaml")
	return dir, valuesFile, os.WriteFile(valuesFile, values, 0o600)
}

// helmInstall installs the zero-to-jupyterhub chart, copied into dir, as
// release in namespace ns with valuesFile, without the chart's hooks.
func helmInstall(ctx context.Context, cluster *testcluster.Cluster, dir, ns, release, valuesFile string) error {
	chart := filepath.Join(dir, "jupyterhub")
	if err := hubtest.PrepareZ2jhChart(filepath.Join("..", "shared", "reference", "z2jh", "chart"), chart); err != nil {
		return fmt.Errorf("the chart (../shared/reference/z2jh/chart): %w", err)
	}
	helm, err := hubtest.HelmPath()
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, helm, "install", release, chart, "--namespace", ns, "--kubeconfig", cluster.KubeconfigPath, "--no-hooks", "-f", valuesFile)
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+dir, "HELM_CONFIG_HOME="+dir, "HELM_DATA_HOME="+dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("helm install: %w\n%s", err, out)
	}
	return nil
}

// secretBytes is the size of a Secret's data, as the API server limits it.
func secretBytes(ctx context.Context, cs kubernetes.Interface, ns, name string) (int, error) {
	sec, err := cs.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return 0, err
	}
	n := 0
	for _, v := range sec.Data {
		n += len(v)
	}
	return n, nil
}

// spawnCost is what the hub's hooks add to one kind of spawn.
type spawnCost struct {
	Kind     string
	Ms       float64 // median time of the pre_spawn_hook and modify_pod_hook
	Requests float64 // API requests they made
}

// measureSpawnHooks runs BenchmarkSpawnHooks (internal/hubconfig): real
// KubeSpawner with the provider's hub file, its hooks asking the test
// bed's API server as the chart's hub ServiceAccount.
func measureSpawnHooks(ctx context.Context, spawns int) ([]spawnCost, error) {
	cmd := exec.CommandContext(ctx, "go", "test", "./internal/hubconfig", "-run", "^$", "-bench", "^BenchmarkSpawnHooks$",
		"-benchtime", fmt.Sprintf("%dx", spawns), "-count", "1")
	cmd.Env = append(os.Environ(), "TF_ACC=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("BenchmarkSpawnHooks: %w\n%s", err, out)
	}
	costs := parseSpawnHooks(string(out))
	if len(costs) == 0 {
		return nil, fmt.Errorf("BenchmarkSpawnHooks reported nothing:\n%s", out)
	}
	return costs, nil
}

// parseSpawnHooks reads the benchmark's lines, such as
// "BenchmarkSpawnHooks/kept-2  10  151423018 ns/op  10.66 ms/hooks  2.000 requests/spawn".
func parseSpawnHooks(out string) []spawnCost {
	var costs []spawnCost
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) < 2 || !strings.HasPrefix(f[0], "BenchmarkSpawnHooks/") {
			continue
		}
		c := spawnCost{Kind: strings.TrimPrefix(f[0], "BenchmarkSpawnHooks/")}
		if i := strings.LastIndex(c.Kind, "-"); i > 0 {
			c.Kind = c.Kind[:i] // GOMAXPROCS
		}
		for i := 1; i+1 < len(f); i++ {
			var v float64
			if _, err := fmt.Sscan(f[i], &v); err != nil {
				continue
			}
			switch f[i+1] {
			case "ms/hooks":
				c.Ms = v
			case "requests/spawn":
				c.Requests = v
			}
		}
		costs = append(costs, c)
	}
	return costs
}

// spawnKinds are the benchmark's kinds of spawn, as the report names them.
var spawnKinds = map[string]string{
	"kept":           "a home claim as it is",
	"copied":         "a home copied to a new claim and switched (the record followed to the copy)",
	"source_deleted": "the copy of a claim since deleted (found by its label)",
	"new_user":       "a new user (no claim yet: KubeSpawner creates it)",
}

// Label is the kind of spawn as the report names it.
func (c spawnCost) Label() string { return cmp.Or(spawnKinds[c.Kind], c.Kind) }
