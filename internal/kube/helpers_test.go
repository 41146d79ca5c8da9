package kube

import (
	"context"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/acctest"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/claims"
)

// collected is a list of strings a client's callbacks add to while a test
// takes what came since it last looked.
type collected struct {
	mu   sync.Mutex
	list []string
}

func (c *collected) add(s string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.list = append(c.list, s)
}

// take returns what was added since the last take.
func (c *collected) take() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.list
	c.list = nil
	return out
}

// client is the provider's own client on the test cluster, as admin.
func client(t *testing.T) *Client {
	t.Helper()
	api, err := NewAPI(acctest.Cluster(t).RESTConfig(acctest.Cluster(t).AdminToken))
	if err != nil {
		t.Fatal(err)
	}
	return NewClient(api)
}

// seedClaim creates a claim of 1Gi, ReadWriteOnce, of class "none" (none
// exists: it stays pending).
func seedClaim(t *testing.T, c *Client, ns, name string) *corev1.PersistentVolumeClaim {
	t.Helper()
	pvc, err := c.Kube.CoreV1().PersistentVolumeClaims(ns).Create(context.Background(),
		NewClaim(metav1.ObjectMeta{Name: name, Namespace: ns}, claims.RWO, "none", resource.MustParse("1Gi")), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return pvc
}
