package provider

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	corev1 "k8s.io/api/core/v1"
	kresource "k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/acctest"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/kubespawner"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/migration"
)

// movedFromSetting is the first earlier place of the layout's init container in
// spawner_settings.
func movedFromSetting(s *terraform.State) string {
	var settings struct {
		Inits []struct {
			Env []struct{ Name, Value string } `json:"env"`
		} `json:"init_containers"`
	}
	_ = json.Unmarshal([]byte(s.RootModule().Resources[hsAddr].Primary.Attributes["spawner_settings"]), &settings)
	for _, c := range settings.Inits {
		for _, e := range c.Env {
			if e.Name == "HOME_MOVED_FROM_1" {
				return e.Value
			}
		}
	}
	return "(none)"
}

func sharedHomeConfig(t *testing.T, ns, extra string) string {
	return sharedHomeConfigOf(t, "homes", ns, "", extra)
}

// sharedHomeConfigOf is the shared layout's resource name in ns, with
// shared (attributes of shared_home) and extra (of the resource).
func sharedHomeConfigOf(t *testing.T, name, ns, shared, extra string) string {
	return acctest.AdminConfig(t, fmt.Sprintf(`
resource "jupyter_home_storage" %q {
  namespace   = %q
  access_mode = "ReadWriteMany"
  capacity    = "1Gi"
  users       = jsonencode({ alice = {}, "Bob" = {} })
  shared_home = {
    claim_name = "home-nfs"
    init_image = "busybox:1.36"
%s
  }
  deletion_policy = "delete"
  allow_data_loss = true
%s
}
`, name, ns, shared, extra))
}

// The shared layout through OpenTofu: the plan fails while the shared
// claim is missing, and over alice's claim of the per-user layout unless
// on_layout_change = "keep"; then the servers' settings mount each user's
// directory; a change of slug_scheme fails naming, old and new, the user
// whose directory moves (Bob; not alice), and with on_layout_change =
// "keep" too (the other scheme's names can be other users' old homes);
// under a directory of its own it applies, recording the place homes were
// left at; with on_layout_change = "move" the old place is recorded on the
// shared claim and given to the servers; a switch back to per-user claims
// names every listed user; and destroy, even with deletion_policy =
// "delete", deletes neither the shared claim nor a per-user claim found
// there.
func TestAccHomeStorage_sharedLayout(t *testing.T) {
	cs := acctest.Cluster(t).Admin()
	ns := acctest.Namespace(t)
	acctest.Seed(t, cs, ns, acctest.SeedClaim{Name: "claim-alice", Username: "alice", Modes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, Size: "1Gi"})
	createShared := func() {
		pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "home-nfs", Namespace: ns},
			Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany},
				Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: kresource.MustParse("10Gi")}}}}
		if _, err := cs.CoreV1().PersistentVolumeClaims(ns).Create(context.Background(), pvc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	bobSafe, _ := kubespawner.Expand("{username}", "Bob", "", kubespawner.SchemeSafe)
	under := func(dir, cfg string) string {
		return strings.Replace(cfg, `init_image = "busybox:1.36"`, `init_image = "busybox:1.36"
    sub_path_template = "`+dir+`/{username}"`, 1)
	}
	v2 := func(cfg string) string { return under("v2_", cfg) }
	bobEscaped, _ := kubespawner.Expand("{username}", "Bob", "", kubespawner.SchemeEscape)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6ProviderFactories,
		CheckDestroy: func(*terraform.State) error {
			if got := uids(t, cs, ns, "home-nfs", "claim-alice"); len(got) != 2 {
				return fmt.Errorf("destroy deleted claims in the shared layout: left %v", got)
			}
			return nil
		},
		Steps: []resource.TestStep{
			{
				Config:      sharedHomeConfig(t, ns, ""),
				ExpectError: regexp.MustCompile(`The shared home claim does not exist`),
			},
			{
				// alice's claim of the per-user layout is her home now: the
				// new resource would move her to a directory.
				PreConfig:   createShared,
				Config:      sharedHomeConfig(t, ns, ""),
				ExpectError: wrapRE(fmt.Sprintf(`(?s)The layout of the homes changed.*alice: claim %s/claim-alice → directory "alice" of claim %s/home-nfs`, ns, ns)),
			},
			{
				Config: sharedHomeConfig(t, ns, `  on_layout_change = "keep"`),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(hsAddr, plancheck.ResourceActionCreate), expectClass("none"),
				}},
				Check: func(s *terraform.State) error {
					var settings map[string]any
					if err := json.Unmarshal([]byte(s.RootModule().Resources[hsAddr].Primary.Attributes["spawner_settings"]), &settings); err != nil {
						return err
					}
					mounts, _ := settings["volume_mounts"].([]any)
					if len(mounts) != 1 || mounts[0].(map[string]any)["subPath"] != "{username}" || settings["delete_pvc"] != false || settings["storage_pvc_ensure"] != false {
						return fmt.Errorf("spawner_settings: %v", settings)
					}
					return nil
				},
			},
			{
				Config:      sharedHomeConfig(t, ns, `  slug_scheme = "escape"`),
				ExpectError: wrapRE(fmt.Sprintf(`(?s)Users' home directories change.*Bob: directory %q of claim %s/home-nfs → directory %q`, bobSafe, ns, bobEscaped)),
			},
			{
				// Kept under the other scheme, the old homes stay where the
				// new names can be other users' ("bob-" escaped is user
				// "bob-2d"'s safe name): refused.
				Config: sharedHomeConfig(t, ns, `  slug_scheme = "escape"
  on_layout_change = "keep"`),
				ExpectError: regexp.MustCompile(`Homes renamed at spawn could be taken by another home`),
			},
			{
				// Under a directory no old name can be, kept: the old place
				// is recorded on the shared claim as one homes were left at.
				Config: under("v1_", sharedHomeConfig(t, ns, `  slug_scheme = "escape"
  on_layout_change = "keep"`)),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{expectClass("safe")}},
				Check: func(*terraform.State) error {
					shared, err := cs.CoreV1().PersistentVolumeClaims(ns).Get(context.Background(), "home-nfs", metav1.GetOptions{})
					if err != nil {
						return err
					}
					if got := shared.Annotations[migration.LeftAtAnnotation]; got != `["{safe_username}"]` {
						return fmt.Errorf("the shared claim's list of places homes were left at: %q", got)
					}
					return nil
				},
			},
			{
				// Back to the safe scheme, under another directory, renaming:
				// the old place is recorded on the shared claim (scheme-free)
				// and given to the layout's init container; the plan after
				// the apply, which reads it back, is empty. (The same
				// template under the other scheme is refused: the schemes
				// can give one user's old name to another user.)
				Config:           v2(sharedHomeConfig(t, ns, `  on_layout_change = "move"`)),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{expectClass("safe")}},
				Check: func(s *terraform.State) error {
					shared, err := cs.CoreV1().PersistentVolumeClaims(ns).Get(context.Background(), "home-nfs", metav1.GetOptions{})
					if err != nil {
						return err
					}
					if got := shared.Annotations[migration.MovedFromAnnotation]; got != `["v1_/{escaped_username}"]` {
						return fmt.Errorf("the shared claim's list of earlier places: %q", got)
					}
					if got := movedFromSetting(s); got != "v1_/{escaped_username}" {
						return fmt.Errorf("the init container's earlier places: %q", got)
					}
					return nil
				},
			},
			{
				// The list stays when on_layout_change no longer says move.
				Config: v2(sharedHomeConfig(t, ns, "")),
				Check: func(s *terraform.State) error {
					if got := movedFromSetting(s); got != "v1_/{escaped_username}" {
						return fmt.Errorf("the init container's earlier places: %q", got)
					}
					return nil
				},
			},
			{
				Config: acctest.AdminConfig(t, fmt.Sprintf(`
resource "jupyter_home_storage" "homes" {
  namespace       = %q
  access_mode     = "ReadWriteMany"
  storage_class_name = "nfs"
  capacity        = "1Gi"
  users           = jsonencode({ alice = {}, "Bob" = {} })
  deletion_policy = "delete"
  allow_data_loss = true
}
`, ns)),
				ExpectError: wrapRE(fmt.Sprintf(`(?s)The layout of the homes changed.*Bob: directory "v2_/%s" of claim %s/home-nfs → claim %s/claim-`, bobSafe, ns, ns)),
			},
		},
	})
}

func sharedCreateConfig(t *testing.T, ns, name string) string {
	return sharedHomeConfigOf(t, name, ns, `    create_claim = true
    capacity     = "2Gi"`, `  storage_class_name = "nfs"
  labels             = { team = "data" }
  annotations        = { "example.org/owner" = "platform" }`)
}

// shared_home.create_claim through OpenTofu: the plan is safe and apply
// creates the missing shared claim with the resource's mode, class, the
// shared capacity, its labels and annotations and the provider's
// annotation, outside changes; a volume reserved for that claim (a
// claimRef without a UID) is no sign that it existed. Destroy with
// deletion_policy = "delete" and allow_data_loss leaves it, and a new
// resource uses it as it is. Once it is deleted, the plan refuses to create
// it again, from the state; and, for a resource without a state, from the
// volume that was bound to it.
func TestAccHomeStorage_sharedCreateClaim(t *testing.T) {
	cs := acctest.Cluster(t).Admin()
	ns := acctest.Namespace(t)
	ctx := context.Background()
	pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-" + ns + "-home-nfs"},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: kresource.MustParse("2Gi")},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany},
			StorageClassName:              "nfs",
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			ClaimRef:                      &corev1.ObjectReference{Namespace: ns, Name: "home-nfs"},
			PersistentVolumeSource:        corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/tmp/" + ns}},
		}}
	if _, err := cs.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cs.CoreV1().PersistentVolumes().Delete(context.Background(), pv.Name, metav1.DeleteOptions{})
	})
	var uid string
	claimLeft := func() {
		if got := uids(t, cs, ns, "home-nfs")["home-nfs"]; got == "" || got != uid {
			t.Fatalf("the shared claim is %q, was %q: destroy or a new resource touched it", got, uid)
		}
	}
	deleteShared := func() {
		if err := cs.CoreV1().PersistentVolumeClaims(ns).Delete(ctx, "home-nfs", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		for i := 0; uids(t, cs, ns, "home-nfs")["home-nfs"] != ""; i++ {
			if i == 300 {
				t.Fatal("the shared claim is not gone")
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: sharedCreateConfig(t, ns, "homes"),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(hsAddr, plancheck.ResourceActionCreate), expectClass("safe"),
				}},
				Check: resource.ComposeTestCheckFunc(
					resource.TestCheckResourceAttr(hsAddr, "changes", "{}"),
					claimCheck(cs, ns, "home-nfs", func(pvc *corev1.PersistentVolumeClaim) error {
						uid = string(pvc.UID)
						size := pvc.Spec.Resources.Requests[corev1.ResourceStorage]
						if len(pvc.Spec.AccessModes) != 1 || pvc.Spec.AccessModes[0] != corev1.ReadWriteMany || pvc.Spec.StorageClassName == nil ||
							*pvc.Spec.StorageClassName != "nfs" || size.String() != "2Gi" {
							return fmt.Errorf("spec %+v", pvc.Spec)
						}
						if pvc.Annotations["jupyter-infra.github.io/created-by"] != "jupyter_home_storage.shared_home.create_claim" ||
							pvc.Annotations["example.org/owner"] != "platform" || pvc.Labels["team"] != "data" ||
							pvc.Labels["app.kubernetes.io/managed-by"] != "terraform-provider-jupyter" || pvc.Labels["hub.jupyter.org/username"] != "" {
							return fmt.Errorf("labels %v, annotations %v", pvc.Labels, pvc.Annotations)
						}
						return nil
					}),
				),
			},
			{
				Config:  sharedCreateConfig(t, ns, "homes"),
				Destroy: true,
			},
			{
				// A new resource over the claim: used as it is.
				PreConfig: claimLeft,
				Config:    sharedCreateConfig(t, ns, "homes"),
				Check:     func(*terraform.State) error { claimLeft(); return nil },
			},
			{
				PreConfig:   deleteShared,
				Config:      sharedCreateConfig(t, ns, "homes"),
				ExpectError: wrapRE(fmt.Sprintf(`(?s)The shared home claim existed and is gone.*Claim %s/home-nfs held every user's home.*the last apply of this resource used it`, ns)),
			},
			{
				// Another resource, without a state: the volume shows it.
				Config:      sharedCreateConfig(t, ns, "other"),
				ExpectError: wrapRE(fmt.Sprintf(`(?s)The shared home claim existed and is gone.*volume %s \([A-Za-z]+, claim UID [-0-9a-f]+\) was bound to a claim of this name`, pv.Name)),
			},
		},
	})
}
