package provider

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	corev1 "k8s.io/api/core/v1"
	kresource "k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/acctest"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/testcluster"
)

const hsAddr = "jupyter_home_storage.homes"

// homeStorageConfig renders a jupyter_home_storage with a Longhorn class
// it creates, plus extra arguments.
func homeStorageConfig(t *testing.T, ns, class, extra string) string {
	return acctest.AdminConfig(t, fmt.Sprintf(`
resource "jupyter_home_storage" "homes" {
  namespace = %q
  storage_class = {
    name        = %q
    provisioner = "driver.longhorn.io"
  }
%s
}
`, ns, class, extra))
}

func expectClass(class string) plancheck.PlanCheck {
	return plancheck.ExpectKnownValue(hsAddr, tfjsonpath.New("change_class"), knownvalue.StringExact(class))
}

// uids returns the UIDs of the named claims; a missing claim has "".
func uids(t *testing.T, cs kubernetes.Interface, ns string, names ...string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, n := range names {
		pvc, err := cs.CoreV1().PersistentVolumeClaims(ns).Get(context.Background(), n, metav1.GetOptions{})
		if err == nil {
			out[n] = string(pvc.UID)
		}
	}
	return out
}

func claimCheck(cs kubernetes.Interface, ns, name string, f func(*corev1.PersistentVolumeClaim) error) resource.TestCheckFunc {
	return func(*terraform.State) error {
		pvc, err := cs.CoreV1().PersistentVolumeClaims(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		return f(pvc)
	}
}

// bindVolume pre-creates a PersistentVolume reserved for a claim that the
// provider will create, so the PV binder binds it and it can be resized.
func bindVolume(t *testing.T, cs kubernetes.Interface, ns, claim, class string) {
	t.Helper()
	name := "pv-" + ns + "-" + claim
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: kresource.MustParse("1Gi")},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName:              class,
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			ClaimRef:                      &corev1.ObjectReference{Namespace: ns, Name: claim},
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{
				Driver: "driver.longhorn.io", VolumeHandle: name,
			}},
		},
	}
	if _, err := cs.CoreV1().PersistentVolumes().Create(context.Background(), pv, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.CoreV1().PersistentVolumes().Delete(context.Background(), name, metav1.DeleteOptions{}) })
}

// Create, then grow in place (same UIDs), then an empty plan, then destroy
// with the default retain policy: the claims stay.
func TestAccHomeStorage_createGrowRetain(t *testing.T) {
	c := acctest.Cluster(t)
	cs := c.Admin()
	ns := acctest.Namespace(t)
	class := "homes-" + ns
	bindVolume(t, cs, ns, "claim-alice", class)
	bindVolume(t, cs, ns, "claim-bob", class)
	var created map[string]string
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6ProviderFactories,
		CheckDestroy: func(*terraform.State) error {
			if got := uids(t, cs, ns, "claim-alice", "claim-bob"); len(got) != 2 {
				return fmt.Errorf("destroy with deletion_policy = retain removed claims: left %v", got)
			}
			return nil
		},
		Steps: []resource.TestStep{
			{
				Config: homeStorageConfig(t, ns, class, `
  capacity = "1Gi"
  users    = jsonencode({ alice = {}, bob = {} })`),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(hsAddr, plancheck.ResourceActionCreate),
					expectClass("safe"),
					expectPlannedClaim("alice", "name", "claim-alice"),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(hsAddr, tfjsonpath.New("colocation_required"), knownvalue.Bool(true)),
					statecheck.ExpectKnownValue(hsAddr, tfjsonpath.New("legacy_users"), legacyUsersExact(map[string]string{})),
				},
				Check: resource.ComposeAggregateTestCheckFunc(
					checkClaim("bob", "access_mode", "ReadWriteOnce"),
					checkClaim("bob", "phase", ""), // created by this apply: observed by the next refresh
					claimCheck(cs, ns, "claim-alice", func(p *corev1.PersistentVolumeClaim) error {
						if p.Labels["hub.jupyter.org/username"] != "alice" || p.Annotations["hub.jupyter.org/username"] != "alice" ||
							p.Labels["component"] != "singleuser-storage" || *p.Spec.StorageClassName != class {
							return fmt.Errorf("claim lacks KubeSpawner metadata or class: %v %v", p.Labels, p.Annotations)
						}
						return nil
					}),
					func(*terraform.State) error {
						for _, n := range []string{"claim-alice", "claim-bob"} {
							if err := waitBound(cs, ns, n); err != nil {
								return err
							}
						}
						created = uids(t, cs, ns, "claim-alice", "claim-bob")
						return nil
					},
				),
			},
			{
				Config: homeStorageConfig(t, ns, class, `
  capacity = "2Gi"
  users    = jsonencode({ alice = {}, bob = {} })`),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(hsAddr, plancheck.ResourceActionUpdate),
					expectClass("safe"),
				}},
				Check: resource.ComposeAggregateTestCheckFunc(
					checkClaim("alice", "capacity", "2Gi"),
					claimCheck(cs, ns, "claim-alice", func(p *corev1.PersistentVolumeClaim) error {
						if q := p.Spec.Resources.Requests[corev1.ResourceStorage]; q.String() != "2Gi" {
							return fmt.Errorf("claim-alice requests %s, want 2Gi", q.String())
						}
						if string(p.UID) != created["claim-alice"] {
							return fmt.Errorf("claim-alice was replaced, not resized")
						}
						return nil
					}),
				),
			},
			{
				Config: homeStorageConfig(t, ns, class, `
  capacity = "2Gi"
  users    = jsonencode({ alice = {}, bob = {} })`),
				PlanOnly: true,
			},
			{
				Config: homeStorageConfig(t, ns, class, `
  capacity = "1Gi"
  users    = jsonencode({ alice = {}, bob = {} })`),
				ExpectError: wrapRE(`(?s)Home claims cannot shrink.*claim-alice`),
			},
		},
	})
}

func waitBound(cs kubernetes.Interface, ns, name string) error {
	return testclusterWait(cs, ns, name)
}

// A namespace with KubeSpawner-made ReadWriteOnce claims: flipping to
// ReadWriteMany fails at plan time naming them; keep_existing is safe and
// touches nothing; recreate needs allow_data_loss and then replaces them.
func TestAccHomeStorage_modeFlip(t *testing.T) {
	c := acctest.Cluster(t)
	cs := c.Admin()
	ns := acctest.Namespace(t)
	class := "homes-" + ns
	acctest.Seed(t, cs, ns,
		acctest.SeedClaim{Name: "claim-carol", Username: "carol", StorageClass: &class},
		acctest.SeedClaim{Name: "claim-dave", Username: "dave", StorageClass: &class},
	)
	before := uids(t, cs, ns, "claim-carol", "claim-dave")
	unchanged := func(*terraform.State) error {
		if after := uids(t, cs, ns, "claim-carol", "claim-dave"); fmt.Sprint(after) != fmt.Sprint(before) {
			return fmt.Errorf("claims were touched: before %v, after %v", before, after)
		}
		return nil
	}
	rwo := `
  capacity = "1Gi"`
	rwx := `
  capacity    = "1Gi"
  access_mode = "ReadWriteMany"`
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config:           homeStorageConfig(t, ns, class, rwo),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{expectClass("safe")}}, // it creates the StorageClass; no claim is touched
				Check: resource.ComposeAggregateTestCheckFunc(unchanged,
					checkClaim("carol", "managed", "false"),
					checkClaim("dave", "name", "claim-dave")),
			},
			{
				Config:      homeStorageConfig(t, ns, class, rwx),
				ExpectError: wrapRE(`(?s)Live home claims differ from the configuration.*2 existing home claim.*carol: claim-carol \(ReadWriteOnce.*dave: claim-dave.*keep_existing`),
			},
			{
				Config: homeStorageConfig(t, ns, class, rwx+`
  on_mode_change = "keep_existing"`),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					expectClass("safe"),
					plancheck.ExpectKnownValue(hsAddr, tfjsonpath.New("legacy_users"),
						legacyUsersExact(map[string]string{"carol": "claim-carol", "dave": "claim-dave"})),
					plancheck.ExpectKnownValue(hsAddr, tfjsonpath.New("colocation_required"), knownvalue.Bool(true)),
				}},
				Check: unchanged,
			},
			{
				Config: homeStorageConfig(t, ns, class, rwx+`
  on_mode_change = "recreate"
  users          = jsonencode({ carol = {}, dave = {} })`),
				ExpectError: wrapRE(`(?s)Recreating home claims deletes their data.*carol: claim-carol.*allow_data_loss = true`),
			},
			{
				Config: homeStorageConfig(t, ns, class, rwx+`
  on_mode_change  = "recreate"
  users           = jsonencode({ carol = {}, dave = {} })
  allow_data_loss = true`),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{expectClass("destructive")}},
				Check: resource.ComposeAggregateTestCheckFunc(
					checkClaim("carol", "access_mode", "ReadWriteMany"),
					checkLegacyUsers(hsAddr, map[string]string{}),
					resource.TestCheckResourceAttr(hsAddr, "colocation_required", "false"),
					func(*terraform.State) error {
						after := uids(t, cs, ns, "claim-carol", "claim-dave")
						for n, uid := range before {
							if after[n] == "" || after[n] == uid {
								return fmt.Errorf("%s was not replaced (before %s, after %s)", n, uid, after[n])
							}
						}
						return nil
					},
					expectModes(cs, ns, "claim-carol", corev1.ReadWriteMany),
				),
			},
		},
	})
}

func testclusterWait(cs kubernetes.Interface, ns, name string) error {
	return testcluster.WaitClaimPhase(context.Background(), cs, ns, name, corev1.ClaimBound)
}

// unknownConnection is a provider block whose host is known only at apply,
// as when the cluster is created in the same apply.
func unknownConnection(t *testing.T) string {
	c := acctest.Cluster(t)
	return fmt.Sprintf(`
resource "terraform_data" "cluster" {
  input = %q
}

provider "jupyter" {
  host                   = terraform_data.cluster.output
  token                  = %q
  cluster_ca_certificate = %q
}
`, c.Host, c.AdminToken, c.CAPEM)
}

// When the connection is not known until apply (the cluster is created in
// the same apply), the resource still plans, with the live verdict unknown,
// and apply classifies against the live claims.
func TestAccHomeStorage_unknownConnection(t *testing.T) {
	ns := acctest.Namespace(t)
	cfg := acctest.Config(unknownConnection(t), fmt.Sprintf(`
resource "jupyter_home_storage" "homes" {
  namespace = %q
  capacity  = "1Gi"
  users     = jsonencode({ erin = {} })
}`, ns))
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6ProviderFactories,
		Steps: []resource.TestStep{{
			Config: cfg,
			ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
				plancheck.ExpectUnknownValue(hsAddr, tfjsonpath.New("change_class")),
				plancheck.ExpectUnknownValue(hsAddr, tfjsonpath.New("claims")),
				plancheck.ExpectKnownValue(hsAddr, tfjsonpath.New("spawner_settings"), knownvalue.NotNull()),
			}},
			Check: resource.ComposeAggregateTestCheckFunc(
				resource.TestCheckResourceAttr(hsAddr, "change_class", "safe"),
				checkClaim("erin", "name", "claim-erin"),
			),
		}},
	})
}

// A plan that cannot read the cluster cannot show deletions: with
// allow_data_loss and on_mode_change = "recreate" it fails, so that no
// deletion is ever decided at apply.
func TestAccHomeStorage_unknownConnectionRefusesDataLoss(t *testing.T) {
	ns := acctest.Namespace(t)
	provider := unknownConnection(t)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6ProviderFactories,
		Steps: []resource.TestStep{{
			Config: acctest.Config(provider, fmt.Sprintf(`
resource "jupyter_home_storage" "homes" {
  namespace       = %q
  capacity        = "1Gi"
  users           = jsonencode({ erin = {} })
  on_mode_change  = "recreate"
  allow_data_loss = true
}`, ns)),
			ExpectError: wrapRE(`(?s)Deleting homes needs a plan that reads the cluster.*cannot show which`),
		}, {
			Config: acctest.Config(provider, fmt.Sprintf(`
resource "jupyter_home_storage" "homes" {
  namespace = %q
  capacity  = "1Gi"
  users     = jsonencode({ erin = {} })
}`, ns)),
			ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
				plancheck.ExpectUnknownValue(hsAddr, tfjsonpath.New("changes")),
			}},
			Check: resource.TestCheckResourceAttr(hsAddr, "changes", `{"erin":{"action":"create","namespace":"`+ns+`","claim":"claim-erin"}}`),
		}},
	})
}

// A managed claim deleted outside Terraform is planned for re-creation.
func TestAccHomeStorage_deletedOutOfBand(t *testing.T) {
	cs := acctest.Cluster(t).Admin()
	ns := acctest.Namespace(t)
	class := "homes-" + ns
	cfg := homeStorageConfig(t, ns, class, `
  capacity = "1Gi"
  users    = jsonencode({ frank = {} })`)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6ProviderFactories,
		Steps: []resource.TestStep{
			{Config: cfg},
			{
				PreConfig: func() {
					if err := cs.CoreV1().PersistentVolumeClaims(ns).Delete(context.Background(), "claim-frank", metav1.DeleteOptions{}); err != nil {
						t.Fatal(err)
					}
				},
				Config: cfg,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(hsAddr, plancheck.ResourceActionUpdate),
					expectClass("safe"),
				}},
				Check: claimCheck(cs, ns, "claim-frank", func(*corev1.PersistentVolumeClaim) error { return nil }),
			},
		},
	})
}

// Import by namespace adopts an existing deployment.
func TestAccHomeStorage_import(t *testing.T) {
	cs := acctest.Cluster(t).Admin()
	ns := acctest.Namespace(t)
	acctest.Seed(t, cs, ns, acctest.SeedClaim{Name: "claim-gina", Username: "gina", Size: "3Gi"})
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6ProviderFactories,
		Steps: []resource.TestStep{{
			Config: acctest.AdminConfig(t, fmt.Sprintf(`
import {
  to = jupyter_home_storage.homes
  id = %q
}
resource "jupyter_home_storage" "homes" {
  namespace = %q
  capacity  = "3Gi"
}`, ns, ns)),
			ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
				expectPlannedClaim("gina", "name", "claim-gina"),
			}},
			Check: checkClaim("gina", "managed", "false"),
		}},
	})
}

// expectModes checks a live claim's access modes.
func expectModes(cs kubernetes.Interface, ns, name string, want ...corev1.PersistentVolumeAccessMode) resource.TestCheckFunc {
	return claimCheck(cs, ns, name, func(p *corev1.PersistentVolumeClaim) error {
		if !slices.Equal(p.Spec.AccessModes, want) {
			return fmt.Errorf("%s modes %v, want %v", name, p.Spec.AccessModes, want)
		}
		return nil
	})
}
