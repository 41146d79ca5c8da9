package kube

import (
	"context"
	"os"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/acctest"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/safety"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/testcluster"
)

func TestMain(m *testing.M) { os.Exit(acctest.Run(m, testcluster.Options{ControllerManager: true})) }

// client is the provider's own client on the test cluster, as admin.
func client(t *testing.T) *Client {
	t.Helper()
	api, err := NewAPI(acctest.Cluster(t).RESTConfig(acctest.Cluster(t).AdminToken))
	if err != nil {
		t.Fatal(err)
	}
	return NewClient(api)
}

func seedClaim(t *testing.T, c *Client, ns, name string) *corev1.PersistentVolumeClaim {
	t.Helper()
	pvc, err := c.Kube.CoreV1().PersistentVolumeClaims(ns).Create(context.Background(),
		NewClaim(metav1.ObjectMeta{Name: name, Namespace: ns}, safety.RWO, "none", resource.MustParse("1Gi")), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return pvc
}
