package acctest

import (
	"context"
	"testing"

	"k8s.io/client-go/kubernetes"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/testcluster"
)

// SeedClaim describes a home claim as KubeSpawner would have created it.
type SeedClaim = testcluster.SeedClaim

// Seed creates claims through client-go (not through the provider) and
// waits for Bound ones to bind; PersistentVolumes it made are deleted when
// the test ends.
func Seed(t testing.TB, cs kubernetes.Interface, namespace string, seeds ...SeedClaim) {
	t.Helper()
	if err := testcluster.Seed(context.Background(), cs, namespace, seeds...); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { testcluster.DeleteSeededVolumes(context.Background(), cs, namespace) })
}
