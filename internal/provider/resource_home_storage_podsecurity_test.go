package provider

import (
	"context"
	"fmt"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/acctest"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/migration"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/safety"
)

// labelNamespace sets a namespace's Pod Security labels (enforce, warn),
// replacing the ones it had; "" removes a label.
func labelNamespace(t *testing.T, cs kubernetes.Interface, ns, enforce, warn string) {
	t.Helper()
	n, err := cs.CoreV1().Namespaces().Get(context.Background(), ns, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{safety.PodSecurityEnforceLabel: enforce, safety.PodSecurityWarnLabel: warn} {
		delete(n.Labels, k)
		if v != "" {
			n.Labels[k] = v
		}
	}
	if _, err := cs.CoreV1().Namespaces().Update(context.Background(), n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// A copy migration in a namespace that enforces Pod Security's restricted
// level, planned through OpenTofu with exactly the documented RBAC (the
// Role, the read-only ClusterRole, the migrator and the copier) on a
// non-admin identity: the plan fails naming the namespace, the label, the
// users and the choices, and nothing is created (no new claim, no Job).
// Once the namespace enforces baseline (warning of restricted) or
// privileged, or has no label, the same configuration plans the copies.
func TestAccHomeStorage_copyUnderPodSecurity(t *testing.T) {
	cs := acctest.Cluster(t).Admin()
	ns := acctest.Namespace(t)
	from := "gp3-" + ns
	var seeds []acctest.SeedClaim
	for _, u := range []string{"alice", "bob"} {
		seeds = append(seeds, acctest.SeedClaim{Name: "claim-" + u, Username: u, StorageClass: &from, Bound: true, Driver: "ebs.csi.aws.com"})
	}
	acctest.Seed(t, cs, ns, seeds...)
	acctest.GrantMigrator(t, ns)
	c := acctest.Cluster(t)
	config := acctest.Config(acctest.ProviderBlock(c, c.LimitedToken), fmt.Sprintf(`
resource "jupyter_home_storage" "homes" {
  namespace          = %q
  storage_class_name = "efs-%s"
  capacity           = "1Gi"
  access_mode        = "ReadWriteMany"
  on_mode_change     = "migrate"
  migration = {
    copy_image           = "registry.example.org/tools/rsync:3"
    target_name_template = "home-{username}"
  }
}
`, ns, ns))
	relabel := func(enforce, warn string) func() {
		return func() { labelNamespace(t, cs, ns, enforce, warn) }
	}
	relabel("restricted", "")()
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6ProviderFactories,
		Steps: []resource.TestStep{
			{Config: config, PlanOnly: true, ExpectError: wrapRE(`(?s)Pod Security admission would refuse the copy Jobs' pods.*` +
				`namespace ` + ns + ` \(pod-security.kubernetes.io/enforce=restricted\): copy of alice, bob.*` +
				`kubectl label namespace ` + ns + ` pod-security.kubernetes.io/enforce=baseline --overwrite.*set it back to restricted.*` +
				`migration.method = "rebind".*on_mode_change = "keep_existing"`)},
			{PreConfig: relabel("baseline", "restricted"), Config: config, PlanOnly: true, ExpectNonEmptyPlan: true},
			{PreConfig: relabel("privileged", ""), Config: config, PlanOnly: true, ExpectNonEmptyPlan: true},
			{PreConfig: relabel("", ""), Config: config, PlanOnly: true, ExpectNonEmptyPlan: true},
		},
	})
	ctx := context.Background()
	for _, u := range []string{"alice", "bob"} {
		if _, err := cs.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "home-"+u, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("home-%s: %v; a plan created it", u, err)
		}
		pvc, err := cs.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "claim-"+u, metav1.GetOptions{})
		if err != nil || pvc.Spec.AccessModes[0] != corev1.ReadWriteOnce || pvc.Annotations[migration.CopyAnnotation] != "" {
			t.Errorf("claim-%s was touched: %v %v", u, err, pvc.Annotations)
		}
	}
	if jobs, err := cs.BatchV1().Jobs(ns).List(ctx, metav1.ListOptions{}); err != nil || len(jobs.Items) > 0 {
		t.Errorf("Jobs in %s after plans only: %v %v", ns, err, jobs)
	}
}
