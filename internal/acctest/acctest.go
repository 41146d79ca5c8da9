// Package acctest runs acceptance tests against the local test cluster with
// a real OpenTofu binary. A test package's TestMain calls Run; tests then
// call Cluster for the running control plane and Config for a configuration
// whose provider block points at it.
package acctest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/testcluster"
)

// ProviderSource is the provider's address as test configurations require it.
const ProviderSource = "jupyter-infra/jupyter"

var cluster *testcluster.Cluster

// Enabled reports whether acceptance tests run (TF_ACC is set).
func Enabled() bool { return os.Getenv("TF_ACC") != "" }

// Run is a TestMain body. With TF_ACC set it starts the test cluster, points
// terraform-plugin-testing at the test bed's OpenTofu, runs the tests and
// stops the cluster, also when a test fails. A missing test bed is a failure,
// never a silent skip.
func Run(m *testing.M, opts testcluster.Options) int {
	if !Enabled() {
		return m.Run()
	}
	bin, err := testcluster.BinDir(opts.BinDir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "acceptance tests need the test bed:", err)
		return 1
	}
	if _, err := os.Stat(filepath.Join(bin, "tofu")); err != nil {
		fmt.Fprintln(os.Stderr, "acceptance tests need OpenTofu from the test bed: run tools/testbed/build.sh:", err)
		return 1
	}
	if err := setTofuEnv(bin); err != nil {
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

// setTofuEnv sets the variables terraform-plugin-testing reads to drive
// OpenTofu instead of downloading Terraform.
func setTofuEnv(bin string) error {
	dir, err := os.MkdirTemp("", "jupyter-acctest-cli-")
	if err != nil {
		return err
	}
	// The machines this runs on may name a CLI config file that does not
	// exist; OpenTofu then warns before its version line and the harness
	// cannot parse it. Give it an empty one of ours.
	cliConfig := filepath.Join(dir, "tofu.rc")
	if err := os.WriteFile(cliConfig, []byte("# written by internal/acctest\n"), 0o600); err != nil {
		return err
	}
	env := map[string]string{
		"TF_ACC_TERRAFORM_PATH":     filepath.Join(bin, "tofu"),
		"TF_ACC_PROVIDER_HOST":      "registry.opentofu.org",
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
