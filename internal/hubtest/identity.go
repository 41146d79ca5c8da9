package hubtest

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/acctest"
)

// HubAPI is how the hub's KubeSpawner reaches the test bed's API server:
// as the chart's hub ServiceAccount, with the Role the chart renders for
// it, in Namespace.
type HubAPI struct {
	Host      string `json:"host"`
	Token     string `json:"token"`
	CAFile    string `json:"ca_file"`
	Namespace string `json:"namespace"`
}

// HubIdentity creates, in ns on the test bed, the hub's ServiceAccount and
// the Role and RoleBinding zero-to-jupyterhub renders for it (read from the
// chart with `helm template`), and returns a token of that account: the
// hub's requests get exactly the chart's default hub permissions.
func HubIdentity(t testing.TB, ns string) HubAPI {
	t.Helper()
	c := acctest.Cluster(t)
	cs := c.Admin()
	ctx := context.Background()
	objs := HelmTemplate(t, Z2jhChart(t))
	var role rbacv1.Role
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(objs["Role/hub"], &role); err != nil || len(role.Rules) == 0 {
		t.Fatalf("the chart renders no hub Role (%v): %v", err, objs["Role/hub"])
	}
	role.ObjectMeta = metav1.ObjectMeta{Name: "hub", Namespace: ns}
	if _, err := cs.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "hub"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.RbacV1().Roles(ns).Create(ctx, &role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "hub"},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "hub", Namespace: ns}},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "hub"}}
	if _, err := cs.RbacV1().RoleBindings(ns).Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return AccountAPI(t, ns, "hub")
}

// AccountAPI is the test bed's API server as the ServiceAccount account in
// ns, which exists already (with the roles bound to it, such as those a
// chart installed for its hub), in ns.
func AccountAPI(t testing.TB, ns, account string) HubAPI {
	t.Helper()
	c := acctest.Cluster(t)
	tok, err := c.Admin().CoreV1().ServiceAccounts(ns).CreateToken(context.Background(), account, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("a token of the ServiceAccount %s/%s: %v", ns, account, err)
	}
	ca := filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(ca, c.CAPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	return HubAPI{Host: c.Host, Token: tok.Status.Token, CAFile: ca, Namespace: ns}
}
