package acctest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/testcluster"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/tofurun"
)

// ProviderSource is the provider's address as test configurations require it.
const ProviderSource = "jupyter-infra/jupyter"

// HelmProviderVersion is the hashicorp/helm provider the test bed builds
// (tools/testbed/build.sh) and the tests' CLI installs from a mirror.
const HelmProviderVersion = "3.1.2"

var (
	cluster *testcluster.Cluster
	cli     tofurun.CLI
	binDir  string
)

// Enabled reports whether acceptance tests run (TF_ACC is set).
func Enabled() bool { return os.Getenv("TF_ACC") != "" }

// Run is a TestMain body. With TF_ACC set it starts the test cluster, points
// terraform-plugin-testing at the test bed's OpenTofu or Terraform (the one
// TESTBED_CLI names), runs the tests and stops the cluster, also when a test
// fails. A missing test bed is a failure, never a silent skip.
func Run(m *testing.M, opts testcluster.Options) int {
	if !Enabled() {
		return m.Run()
	}
	var err error
	if cli, err = tofurun.Selected(); err != nil {
		fmt.Fprintln(os.Stderr, "acctest:", err)
		return 1
	}
	bin, err := testcluster.BinDir(opts.BinDir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "acceptance tests need the test bed:", err)
		return 1
	}
	binDir = bin
	for _, name := range []string{cli.Name, helmProvider} {
		if _, err := os.Stat(filepath.Join(bin, name)); err != nil {
			fmt.Fprintf(os.Stderr, "acceptance tests need %s from the test bed: run tools/testbed/build.sh: %v\n", name, err)
			return 1
		}
	}
	if err := setCLIEnv(bin); err != nil {
		fmt.Fprintln(os.Stderr, "acctest:", err)
		return 1
	}
	if err := checkVersion(bin); err != nil {
		fmt.Fprintln(os.Stderr, "acctest:", err)
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	cluster, err = testcluster.Start(ctx, opts)
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, "cannot start the test cluster:", err)
		return 1
	}
	defer cluster.Stop()
	return m.Run()
}

// helmProvider is the hashicorp/helm provider's binary in the test bed.
const helmProvider = "terraform-provider-helm"

// checkVersion fails unless the test bed's binary of the CLI says it is
// that CLI (a run meant for Terraform never runs OpenTofu unnoticed), and
// prints its version line for the test log. It runs with the CLI
// configuration setCLIEnv wrote.
func checkVersion(bin string) error {
	out, err := exec.Command(cli.Path(bin), "version").Output()
	if err != nil {
		return fmt.Errorf("%s version: %w", cli.Path(bin), err)
	}
	line, _, _ := strings.Cut(string(out), "\n")
	if !strings.HasPrefix(line, cli.Product+" v") {
		return fmt.Errorf("%s version says %q, not %s", cli.Path(bin), line, cli.Product)
	}
	fmt.Fprintln(os.Stderr, "acceptance tests run", line)
	return nil
}

// CLI is the CLI the acceptance tests run: OpenTofu or Terraform.
func CLI() tofurun.CLI { return cli }

// CLIPath is the CLI's binary in the test bed.
func CLIPath() string { return cli.Path(binDir) }

// setCLIEnv sets the variables terraform-plugin-testing reads to drive the
// test bed's CLI instead of downloading Terraform, with a CLI configuration
// that installs hashicorp/helm from a filesystem mirror of the test bed's
// build (the provider under test is served in process).
func setCLIEnv(bin string) error {
	dir, err := os.MkdirTemp("", "jupyter-acctest-cli-")
	if err != nil {
		return err
	}
	mirror := filepath.Join(dir, "mirror")
	pkg := cli.MirrorDir(mirror, "hashicorp", "helm", HelmProviderVersion)
	if err := os.MkdirAll(pkg, 0o755); err != nil {
		return err
	}
	if err := os.Symlink(filepath.Join(bin, helmProvider), filepath.Join(pkg, helmProvider+"_v"+HelmProviderVersion)); err != nil {
		return err
	}
	// The machines this runs on may name a CLI config file that does not
	// exist; the CLI then warns before its version line and the harness
	// cannot parse it. Give it one of ours.
	cliConfig := filepath.Join(dir, cli.Name+".rc")
	if err := os.WriteFile(cliConfig, []byte(tofurun.MirrorConfig(mirror, "hashicorp/helm")), 0o600); err != nil {
		return err
	}
	env := map[string]string{
		"TF_ACC_TERRAFORM_PATH":     cli.Path(bin),
		"TF_ACC_PROVIDER_HOST":      cli.Host,
		"TF_ACC_PROVIDER_NAMESPACE": strings.Split(ProviderSource, "/")[0],
		"TF_CLI_CONFIG_FILE":        cliConfig,
		"CHECKPOINT_DISABLE":        "1",
	}
	for k, v := range env {
		if err := os.Setenv(k, v); err != nil {
			return err
		}
	}
	return nil
}

// Cluster returns the running test cluster. Without TF_ACC the test is
// skipped, as terraform-plugin-testing skips acceptance tests.
func Cluster(t testing.TB) *testcluster.Cluster {
	t.Helper()
	if !Enabled() {
		t.Skip("acceptance test: set TF_ACC=1 (make test does)")
	}
	if cluster == nil {
		t.Fatal("TF_ACC is set but no test cluster runs: call acctest.Run from TestMain")
	}
	return cluster
}

// Namespace creates a fresh namespace for one test and deletes it afterwards.
func Namespace(t testing.TB) string {
	t.Helper()
	c := Cluster(t)
	name := strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(t.Name()))
	if len(name) > 50 {
		name = name[:50]
	}
	name = strings.Trim(name, "-") + "-" + fmt.Sprintf("%x", time.Now().UnixNano()&0xfffff)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if _, err := c.Admin().CoreV1().Namespaces().Create(context.Background(), ns, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create namespace %s: %v", name, err)
	}
	t.Cleanup(func() {
		_ = c.Admin().CoreV1().Namespaces().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	return name
}

// ProviderBlock is a provider block that connects with token and CA.
func ProviderBlock(c *testcluster.Cluster, token string) string {
	return fmt.Sprintf(`
provider "jupyter" {
  host                   = %q
  token                  = %q
  cluster_ca_certificate = %q
}
`, c.Host, token, string(c.CAPEM))
}

// Config joins the required_providers block, a provider block and body.
func Config(provider, body string) string {
	return fmt.Sprintf(`
terraform {
  required_providers {
    jupyter = { source = %q }
  }
}
%s
%s
`, ProviderSource, provider, body)
}

// AdminConfig is Config with the admin identity.
func AdminConfig(t testing.TB, body string) string {
	c := Cluster(t)
	return Config(ProviderBlock(c, c.AdminToken), body)
}

// Workspace builds the provider from the repository into a mirror under dir
// and returns the tests' CLI set up to install it from there, as a user's is.
func Workspace(ctx context.Context, t testing.TB, dir string) *tofurun.Workspace {
	t.Helper()
	Cluster(t)
	ws, err := tofurun.New(ctx, RepoRoot(t), dir, binDir, cli)
	if err != nil {
		t.Fatal(err)
	}
	return ws
}
