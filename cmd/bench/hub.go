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
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/tofurun"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/userset"
)

// hubSizes are the bytes of the two Secrets Helm makes of a hub release.
type hubSizes struct {
	Secret, Record int // the hub Secret's data; Helm's release record's
}

// measureHub applies a jupyter_home_storage listing the n users whose
// claims namespace ns holds and a jupyter_spawner_config over its
// settings, installs the zero-to-jupyterhub chart (../shared/reference)
// with provider::jupyter::helm_values of it on the test bed (real Helm,
// without the chart's hooks), and returns the size of the hub Secret and
// of Helm's release record.
func measureHub(ctx context.Context, ws *tofurun.Workspace, cluster *testcluster.Cluster, work, ns string, n int) (hubSizes, error) {
	var s hubSizes
	dir, err := writeConfig(work, "hub-"+ns, fmt.Sprintf(`
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
		return s, err
	}
	if err := os.WriteFile(filepath.Join(dir, "users.json"), []byte(userset.Encode(users("user", n))), 0o644); err != nil {
		return s, err
	}
	for _, args := range [][]string{{"init", "-no-color"}, {"apply", "-auto-approve", "-no-color"}} {
		if err := ws.Run(ctx, dir, args...); err != nil {
			return s, err
		}
	}
	values, err := ws.Command(ctx, dir, "output", "-raw", "values").Output()
	if err != nil {
		return s, fmt.Errorf("output values: %w", err)
	}
	if !strings.Contains(string(values), "extraFiles") {
		return s, fmt.Errorf("the rendered values hold no hub.extraFiles:\n%s", values)
	}
	valuesFile := filepath.Join(dir, "values.yaml")
	if err := os.WriteFile(valuesFile, values, 0o600); err != nil {
		return s, err
	}
	chart := filepath.Join(dir, "jupyterhub")
	if err := hubtest.PrepareZ2jhChart(filepath.Join("..", "shared", "reference", "z2jh", "chart"), chart); err != nil {
		return s, fmt.Errorf("the chart (../shared/reference/z2jh/chart): %w", err)
	}
	helm, err := hubtest.HelmPath()
	if err != nil {
		return s, err
	}
	// The chart names its cluster-wide objects after the release: one
	// release name per N.
	release := fmt.Sprintf("hub-%d", n)
	cmd := exec.CommandContext(ctx, helm, "install", release, chart, "--namespace", ns, "--kubeconfig", cluster.KubeconfigPath, "--no-hooks", "-f", valuesFile)
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+dir, "HELM_CONFIG_HOME="+dir, "HELM_DATA_HOME="+dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		return s, fmt.Errorf("helm install: %w\n%s", err, out)
	}
	cs := cluster.Admin()
	if s.Secret, err = secretBytes(ctx, cs, ns, "hub"); err != nil {
		return s, err
	}
	s.Record, err = secretBytes(ctx, cs, ns, "sh.helm.release.v1."+release+".v1")
	return s, err
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

// hubSection reports the hub Secret at each N: the hub's configuration
// names no user, so it does not grow with them.
func hubSection(rows []row) string {
	var b strings.Builder
	b.WriteString("\n## The hub's configuration at N users\n\n" +
		"`jupyter_home_storage` listing the N users and a `jupyter_spawner_config` over its settings, applied; the zero-to-jupyterhub chart " +
		"(`../shared/reference/z2jh`) installed on the test bed with `provider::jupyter::helm_values` of it by the test bed's Helm (`helm install --no-hooks`). " +
		"z2jh keeps all values in the hub Secret and each `hub.extraFiles` entry again; Helm's release record is a second Secret. " +
		"The API server refuses an object over 1 MiB; the target is a hub Secret under 64 KiB at 20,000 users. " +
		"The configuration names no user (the hub decides each spawn from the cluster), so neither grows with N.\n\n")
	b.WriteString("| users (N) | hub Secret | under 64 KiB | Helm release record |\n|---:|---:|:---:|---:|\n")
	for _, r := range rows {
		met := "✓"
		if r.Hub.Secret >= 64<<10 {
			met = "✗"
		}
		fmt.Fprintf(&b, "| %d | %.1f KiB | %s | %.1f KiB |\n", r.N, float64(r.Hub.Secret)/1024, met, float64(r.Hub.Record)/1024)
	}
	return b.String()
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

// spawnSection reports what the hooks add to a spawn.
func spawnSection(costs []spawnCost, spawns int) string {
	var b strings.Builder
	b.WriteString("\n## What the hub's spawn-time decisions add to a spawn\n\n" +
		"`BenchmarkSpawnHooks` (`internal/hubconfig`): JupyterHub 3 and KubeSpawner (`../shared/reference/kubespawner`) load the provider's hub file as z2jh's hub does " +
		"and spawn one user at a time; the `pre_spawn_hook` (which claim this server mounts) and the `modify_pod_hook` (co-location from that claim's access mode) ask the " +
		"test bed's API server as the chart's hub ServiceAccount. Their time as the hub measures it (median of " + fmt.Sprint(spawns) + " spawns each) and their API requests. " +
		"kubernetes_asyncio is not packaged here: its stand-in runs python3-kubernetes' generated calls in a thread per request, as coroutines; " +
		"the real client's aiohttp requests may take a little less. Each other claim a pod mounts (a workspace) adds one request.\n\n")
	b.WriteString("| spawn | hooks' time | API requests |\n|---|---:|---:|\n")
	what := map[string]string{
		"kept":           "a home claim as it is",
		"copied":         "a home copied to a new claim and switched (the record followed to the copy)",
		"source_deleted": "the copy of a claim since deleted (found by its label)",
		"new_user":       "a new user (no claim yet: KubeSpawner creates it)",
	}
	for _, c := range costs {
		fmt.Fprintf(&b, "| %s | %.1f ms | %.0f |\n", cmp.Or(what[c.Kind], c.Kind), c.Ms, c.Requests)
	}
	return b.String()
}
