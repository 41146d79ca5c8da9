package hubconfig

import (
	"os"
	"testing"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/acctest"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/hubtest"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/testcluster"
)

// With TF_ACC set (make test), the test bed's API server runs for the
// whole package: what the chart and KubeSpawner render is submitted to it
// with a server-side dry run. Without TF_ACC the dry runs skip, as every
// acceptance test here does, and the rest of each test still runs.
//
// The API server allows privileged containers, as clusters that run
// zero-to-jupyterhub do (kubeadm's and the managed ones set
// --allow-privileged): the chart's block-cloud-metadata init container is
// privileged.
func TestMain(m *testing.M) {
	os.Exit(acctest.Run(m, testcluster.Options{APIServerArgs: []string{"--allow-privileged=true"}}))
}

type apiServer = hubtest.APIServer

// errNotServed is returned for an object of a kind the API server does not serve.
var errNotServed = hubtest.ErrNotServed

// testAPIServer is the test bed's API server; it skips the test without
// TF_ACC (acctest.Cluster).
func testAPIServer(t *testing.T) *apiServer { t.Helper(); return hubtest.TestAPIServer(t) }

func dryRunSpawns(t *testing.T, s *apiServer, got map[string]hubSpawn) {
	t.Helper()
	hubtest.DryRunSpawns(t, s, got)
}

func withKind(m map[string]any, kind string) map[string]any { return hubtest.WithKind(m, kind) }
