package acctest

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/testcluster"
)

// RBACExample is the documented minimal RBAC, relative to the repository root.
const RBACExample = "examples/rbac/provider-rbac.yaml"

// Grant binds the documented minimal Role and read-only ClusterRole to the
// least-privilege identity, for namespace. drop removes one verb on one
// resource from the Role and the ClusterRoles, e.g.
// Grant(t, ns, "list", "persistentvolumeclaims"), to show what its absence
// does. Everything is removed when the test ends.
func Grant(t testing.TB, namespace string, drop ...string) {
	t.Helper()
	grant(t, namespace, grants{}, drop...)
}

// GrantWriter is Grant with the StorageClass writer ClusterRole bound too,
// e.g. GrantWriter(t, ns, "create", "storageclasses").
func GrantWriter(t testing.TB, namespace string, drop ...string) {
	t.Helper()
	grant(t, namespace, grants{writer: true}, drop...)
}

// migratorRole is the ClusterRole of the RBAC example that migrations need.
const migratorRole = "jupyter-provider-migrator"

// GrantMigrator is Grant with the migrator ClusterRole bound too.
func GrantMigrator(t testing.TB, namespace string, drop ...string) {
	t.Helper()
	grant(t, namespace, grants{migrator: true}, drop...)
}

// moverRole is the ClusterRole of the RBAC example that moves out of the
// shared layout need besides the migrator's: creating volumes.
const moverRole = "jupyter-provider-layout-mover"

// GrantLayoutMover is GrantMigrator with the layout mover ClusterRole
// bound too: what moving homes out of the shared layout needs.
func GrantLayoutMover(t testing.TB, namespace string, drop ...string) {
	t.Helper()
	grant(t, namespace, grants{migrator: true, mover: true}, drop...)
}

// grants are the optional roles of the RBAC example a test binds.
type grants struct{ writer, migrator, mover bool }

func grant(t testing.TB, namespace string, g grants, drop ...string) {
	t.Helper()
	c := Cluster(t)
	ctx := context.Background()
	cs := c.Admin()
	role, extraRoles, clusterRoles := documentedRBAC(t)
	role.Name, role.Namespace = "jupyter-provider", namespace
	if len(drop) == 2 {
		for _, cr := range clusterRoles {
			cr.Rules = dropVerb(cr.Rules, drop[0], drop[1])
		}
	}
	roles := []*rbacv1.Role{role}
	if g.migrator {
		roles = append(roles, extraRoles...) // the copier
	}
	subject := []rbacv1.Subject{{Kind: "User", APIGroup: rbacv1.GroupName, Name: testcluster.LimitedUser}}
	for _, r := range roles {
		r.Namespace = namespace
		if len(drop) == 2 {
			r.Rules = dropVerb(r.Rules, drop[0], drop[1])
		}
		if _, err := cs.RbacV1().Roles(namespace).Create(ctx, r, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create role: %v", err)
		}
		rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: r.Name, Namespace: namespace},
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: r.Name}, Subjects: subject}
		if _, err := cs.RbacV1().RoleBindings(namespace).Create(ctx, rb, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create rolebinding: %v", err)
		}
	}
	for _, cr := range clusterRoles {
		if cr.Name == "jupyter-provider-storageclass-writer" && !g.writer || cr.Name == migratorRole && !g.migrator || cr.Name == moverRole && !g.mover ||
			cr.Name == "jupyter-provider-user-namespaces" {
			continue
		}
		cr.Name = cr.Name + "-" + namespace
		if _, err := cs.RbacV1().ClusterRoles().Create(ctx, cr, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create clusterrole: %v", err)
		}
		crb := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: cr.Name},
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: cr.Name}, Subjects: subject}
		if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create clusterrolebinding: %v", err)
		}
		name := cr.Name
		t.Cleanup(func() {
			_ = cs.RbacV1().ClusterRoleBindings().Delete(context.Background(), name, metav1.DeleteOptions{})
			_ = cs.RbacV1().ClusterRoles().Delete(context.Background(), name, metav1.DeleteOptions{})
		})
	}
}

// dropVerb removes verb on resource from every rule that grants it, and a
// rule left with no verb (the API refuses it).
func dropVerb(rules []rbacv1.PolicyRule, verb, resource string) []rbacv1.PolicyRule {
	for i, r := range rules {
		if slices.Contains(r.Resources, resource) {
			rules[i].Verbs = slices.DeleteFunc(slices.Clone(r.Verbs), func(v string) bool { return v == verb })
		}
	}
	return slices.DeleteFunc(rules, func(r rbacv1.PolicyRule) bool { return len(r.Verbs) == 0 })
}

// documentedRBAC reads the Roles and ClusterRoles of the RBAC example: the
// provider's Role, the other Roles (the copier's), and the ClusterRoles.
func documentedRBAC(t testing.TB) (*rbacv1.Role, []*rbacv1.Role, []*rbacv1.ClusterRole) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(RepoRoot(t), RBACExample))
	if err != nil {
		t.Fatal(err)
	}
	var role *rbacv1.Role
	var extra []*rbacv1.Role
	var crs []*rbacv1.ClusterRole
	for _, doc := range bytes.Split(data, []byte("\n---\n")) {
		var meta metav1.TypeMeta
		if err := yaml.Unmarshal(doc, &meta); err != nil {
			t.Fatalf("%s: %v", RBACExample, err)
		}
		switch meta.Kind {
		case "Role":
			r := &rbacv1.Role{}
			if err := yaml.UnmarshalStrict(doc, r); err != nil {
				t.Fatal(err)
			}
			if r.Name == "jupyter-provider" {
				role = r
			} else {
				extra = append(extra, r)
			}
		case "ClusterRole":
			cr := &rbacv1.ClusterRole{}
			if err := yaml.UnmarshalStrict(doc, cr); err != nil {
				t.Fatal(err)
			}
			crs = append(crs, cr)
		}
	}
	if role == nil || len(crs) == 0 {
		t.Fatalf("%s has no Role or ClusterRole", RBACExample)
	}
	return role, extra, crs
}

// RepoRoot is the repository's top directory.
func RepoRoot(t testing.TB) string {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("cannot locate the repository")
	}
	return filepath.Join(filepath.Dir(file), "..", "..")
}
