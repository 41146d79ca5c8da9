package provider

import (
	"context"
	"fmt"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/acctest"
)

// Changing an immutable StorageClass field replaces the class in place of
// the resource; claims made from it are untouched.
func TestAccHomeStorage_storageClassReplaced(t *testing.T) {
	cs := acctest.Cluster(t).Admin()
	ns := acctest.Namespace(t)
	class := "homes-" + ns
	cfg := func(replicas string) string {
		return acctest.AdminConfig(t, fmt.Sprintf(`
resource "jupyter_home_storage" "homes" {
  namespace = %q
  capacity  = "1Gi"
  users     = jsonencode({ hana = {} })
  storage_class = {
    name        = %q
    provisioner = "driver.longhorn.io"
    parameters  = { numberOfReplicas = %q }
  }
}`, ns, class, replicas))
	}
	var classUID, claimUID string
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: cfg("2"),
				Check: func(*terraform.State) error {
					sc, err := cs.StorageV1().StorageClasses().Get(context.Background(), class, metav1.GetOptions{})
					if err != nil {
						return err
					}
					if sc.Parameters["numberOfReplicas"] != "2" || *sc.ReclaimPolicy != corev1.PersistentVolumeReclaimRetain || !*sc.AllowVolumeExpansion {
						return fmt.Errorf("class not as configured: %+v", sc)
					}
					classUID, claimUID = string(sc.UID), uids(t, cs, ns, "claim-hana")["claim-hana"]
					return nil
				},
			},
			{
				Config: cfg("3"),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(hsAddr, plancheck.ResourceActionUpdate),
					expectClass("safe"),
				}},
				Check: func(*terraform.State) error {
					sc, err := cs.StorageV1().StorageClasses().Get(context.Background(), class, metav1.GetOptions{})
					if err != nil {
						return err
					}
					if string(sc.UID) == classUID || sc.Parameters["numberOfReplicas"] != "3" {
						return fmt.Errorf("class was not replaced with the new parameters: %v", sc.Parameters)
					}
					if got := uids(t, cs, ns, "claim-hana")["claim-hana"]; got != claimUID {
						return fmt.Errorf("claim-hana was touched by the class replacement")
					}
					return nil
				},
			},
		},
	})
}

// recreate is refused while a running server mounts the claim: the delete
// would hang on kubernetes.io/pvc-protection.
func TestAccHomeStorage_recreateRefusedWhileMounted(t *testing.T) {
	cs := acctest.Cluster(t).Admin()
	ns := acctest.Namespace(t)
	class := "homes-" + ns
	acctest.Seed(t, cs, ns, acctest.SeedClaim{Name: "claim-ivan", Username: "ivan", StorageClass: &class})
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "jupyter-ivan", Namespace: ns},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "notebook", Image: "quay.io/jupyter/base-notebook"}},
			Volumes: []corev1.Volume{{Name: "home", VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "claim-ivan"}}}},
		},
	}
	if _, err := cs.CoreV1().Pods(ns).Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	before := uids(t, cs, ns, "claim-ivan")
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6ProviderFactories,
		Steps: []resource.TestStep{{
			Config: homeStorageConfig(t, ns, class, `
  capacity        = "1Gi"
  access_mode     = "ReadWriteMany"
  users           = jsonencode({ ivan = {} })
  on_mode_change  = "recreate"
  allow_data_loss = true`),
			ExpectError: wrapRE(`(?s)A running server uses a claim that would be recreated.*ivan: claim-ivan.*Stop these users' servers`),
		}},
	})
	if after := uids(t, cs, ns, "claim-ivan"); after["claim-ivan"] != before["claim-ivan"] {
		t.Errorf("claim-ivan was deleted or replaced while mounted")
	}
}
