package kube

import (
	"context"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/acctest"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/claims"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/kubespawner"
)

// CreateClaim against the API server: a claim of that name that exists
// already is this home only when it is the same user's and server's (as
// KubeSpawner made it at a spawn since the plan); another user's or a named
// server's is an error, never taken for it.
func TestAccCreateClaimNeverTakesAnotherHome(t *testing.T) {
	c, ns, ctx := client(t), acctest.Namespace(t), context.Background()
	home := func(name, user, server string) *metav1.ObjectMeta {
		ann := map[string]string{kubespawner.AnnotationUsername: user}
		if server != "" {
			ann[kubespawner.AnnotationServername] = server
		}
		return &metav1.ObjectMeta{Name: name, Namespace: ns, Annotations: ann}
	}
	mk := func(m *metav1.ObjectMeta) error {
		_, err := c.CreateClaim(ctx, NewClaim(*m, claims.RWO, "none", resource.MustParse("1Gi")))
		return err
	}
	// alice's server gpu's claim, as KubeSpawner made it under
	// claim-{username}{servername}; then user alicegpu's home of that name.
	if err := mk(home("claim-alicegpu", "alice", "gpu")); err != nil {
		t.Fatal(err)
	}
	if err := mk(home("claim-alicegpu", "alicegpu", "")); err == nil || !strings.Contains(err.Error(), "is not this home") {
		t.Errorf("another user's claim taken for alicegpu's home: %v", err)
	}
	// bob's home made by KubeSpawner since the plan: it is bob's.
	if err := mk(home("claim-bob", "bob", "")); err != nil {
		t.Fatal(err)
	}
	if err := mk(home("claim-bob", "bob", "")); err != nil {
		t.Errorf("bob's own claim: %v", err)
	}
}
