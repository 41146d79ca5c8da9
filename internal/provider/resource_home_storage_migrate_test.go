package provider

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/acctest"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/hubconfig"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/migration"
)

// migratingHomes seeds users' RWO Longhorn homes, each bound to its own CSI
// volume with reclaim policy Delete (so that a claim deleted before its
// volume is retained would take the data with it), and returns, by claim,
// the volume and its volumeHandle.
func migratingHomes(t *testing.T, cs kubernetes.Interface, ns, class string, users ...string) map[string][2]string {
	t.Helper()
	var seeds []acctest.SeedClaim
	for _, u := range users {
		seeds = append(seeds, acctest.SeedClaim{Name: "claim-" + u, Username: u, StorageClass: &class, Bound: true,
			ReclaimPolicy: corev1.PersistentVolumeReclaimDelete})
	}
	return seedMigrating(t, cs, ns, seeds...)
}

// seedMigrating seeds claims as migratingHomes does and returns, by claim,
// the volume and its volumeHandle.
func seedMigrating(t *testing.T, cs kubernetes.Interface, ns string, seeds ...acctest.SeedClaim) map[string][2]string {
	t.Helper()
	acctest.Seed(t, cs, ns, seeds...)
	out := map[string][2]string{}
	for _, s := range seeds {
		pvc, err := cs.CoreV1().PersistentVolumeClaims(ns).Get(context.Background(), s.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		pv, err := cs.CoreV1().PersistentVolumes().Get(context.Background(), pvc.Spec.VolumeName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		out[pvc.Name] = [2]string{pv.Name, pv.Spec.CSI.VolumeHandle}
	}
	return out
}

// runningServer creates a Pod object that mounts user's home, as a running server does.
func runningServer(t *testing.T, cs kubernetes.Interface, ns, user string) {
	t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "jupyter-" + user, Namespace: ns},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "notebook", Image: "quay.io/jupyter/base-notebook"}},
			Volumes: []corev1.Volume{{Name: "home", VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "claim-" + user}}}},
		},
	}
	if _, err := cs.CoreV1().Pods(ns).Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// rebound checks that each claim is ReadWriteMany, Bound to the volume it had
// (same volumeHandle), is a new object (other UID) with the labels and
// annotations KubeSpawner gave it, and that the volume is back to its
// reclaim policy with no migration record left.
func rebound(cs kubernetes.Interface, ns string, vols map[string][2]string, oldUIDs map[string]string, claimNames ...string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		ctx := context.Background()
		for _, name := range claimNames {
			pvc, err := cs.CoreV1().PersistentVolumeClaims(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			want := vols[name]
			switch {
			case !slices.Equal(pvc.Spec.AccessModes, []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany}):
				return fmt.Errorf("%s: modes %v", name, pvc.Spec.AccessModes)
			case pvc.Status.Phase != corev1.ClaimBound || pvc.Spec.VolumeName != want[0]:
				return fmt.Errorf("%s: %s on volume %q, want Bound on %s", name, pvc.Status.Phase, pvc.Spec.VolumeName, want[0])
			case string(pvc.UID) == oldUIDs[name]:
				return fmt.Errorf("%s: same UID: the claim was not recreated", name)
			case pvc.Labels["hub.jupyter.org/username"] == "" || pvc.Annotations["hub.jupyter.org/username"] == "" || pvc.Labels["component"] != "singleuser-storage":
				return fmt.Errorf("%s lost KubeSpawner's labels or annotations: %v %v", name, pvc.Labels, pvc.Annotations)
			case pvc.Annotations[migration.MigratedAnnotation] == "":
				return fmt.Errorf("%s: no %s annotation", name, migration.MigratedAnnotation)
			}
			pv, err := cs.CoreV1().PersistentVolumes().Get(ctx, want[0], metav1.GetOptions{})
			if err != nil {
				return err
			}
			switch {
			case pv.Spec.CSI.VolumeHandle != want[1]:
				return fmt.Errorf("volume %s: handle %s, want %s", pv.Name, pv.Spec.CSI.VolumeHandle, want[1])
			case pv.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimDelete:
				return fmt.Errorf("volume %s: reclaim policy %s, want Delete restored", pv.Name, pv.Spec.PersistentVolumeReclaimPolicy)
			case pv.Annotations[migration.RecordAnnotation] != "" || pv.Labels[migration.NamespaceLabel] != "":
				return fmt.Errorf("volume %s still carries the migration record", pv.Name)
			case pv.Spec.ClaimRef == nil || string(pv.Spec.ClaimRef.UID) != string(pvc.UID):
				return fmt.Errorf("volume %s: claimRef %+v, want the new claim", pv.Name, pv.Spec.ClaimRef)
			}
		}
		return nil
	}
}

func unchanged(cs kubernetes.Interface, ns string, oldUIDs map[string]string, name string) resource.TestCheckFunc {
	return claimCheck(cs, ns, name, func(pvc *corev1.PersistentVolumeClaim) error {
		if string(pvc.UID) != oldUIDs[name] || pvc.Spec.AccessModes[0] != corev1.ReadWriteOnce {
			return fmt.Errorf("%s was touched: uid %s (was %s), modes %v", name, pvc.UID, oldUIDs[name], pvc.Spec.AccessModes)
		}
		return nil
	})
}

func migrateConfig(t *testing.T, ns, class, users string) string {
	return acctest.AdminConfig(t, fmt.Sprintf(`
resource "jupyter_home_storage" "homes" {
  namespace          = %q
  storage_class_name = %q
  capacity           = "1Gi"
  access_mode        = "ReadWriteMany"
  users              = %s
  on_mode_change     = "migrate"
}

resource "jupyter_spawner_config" "hub" {
  namespace             = %q
  home_storage_settings = jupyter_home_storage.homes.spawner_settings
}
`, ns, class, users, ns))
}

// legacyInConfigMap checks the hub's configuration: it names no user,
// legacy or not (the hub pins a user's pods at each spawn from the claim it
// mounts), however many users want lists.
func legacyInConfigMap(cs kubernetes.Interface, ns string, want ...string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		cm, err := cs.CoreV1().ConfigMaps(ns).Get(context.Background(), "jupyter-spawner", metav1.GetOptions{})
		if err != nil {
			return err
		}
		var doc map[string]any
		if err := hubconfig.DecodeDocumentFile(cm.BinaryData[hubconfig.DocumentFile], &doc); err != nil {
			return err
		}
		text := hubconfig.JSON(doc)
		for _, u := range want {
			if strings.Contains(text, `"`+u+`"`) {
				return fmt.Errorf("hub config names user %s: %s", u, text)
			}
		}
		if len(doc) != 2 {
			return fmt.Errorf("hub config holds %s, want the settings and the co-location label only", text)
		}
		return nil
	}
}

// RWO Longhorn homes move to RWX in one apply with zero bytes copied: every
// claim is rebound to its own volume, the reclaim policies are restored, a
// user with a running server is skipped and stays co-located in the hub
// config, and is migrated by the apply after the server stops.
func TestAccHomeStorage_migrateRebind(t *testing.T) {
	cs := acctest.Cluster(t).Admin()
	ns := acctest.Namespace(t)
	class := "longhorn-" + ns
	vols := migratingHomes(t, cs, ns, class, "alice", "bob", "carol")
	old := uids(t, cs, ns, "claim-alice", "claim-bob", "claim-carol")
	runningServer(t, cs, ns, "carol")
	cfg := migrateConfig(t, ns, class, `jsonencode({ alice = {} })`) // bob's and carol's homes were made by KubeSpawner
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: cfg,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					expectClass("safe"),
					plancheck.ExpectUnknownValue(hsAddr, tfjsonpath.New("legacy_users")),
					plancheck.ExpectKnownValue(hsAddr, tfjsonpath.New("migration_plan"), knownvalue.StringExact(fmt.Sprintf(
						`{"alice":{"method":"rebind","claim":"claim-alice","volume":%q,"from":"ReadWriteOnce","to":"ReadWriteMany"},`+
							`"bob":{"method":"rebind","claim":"claim-bob","volume":%q,"from":"ReadWriteOnce","to":"ReadWriteMany"},`+
							`"carol":{"method":"none","claim":"claim-carol","reason":"access mode ReadWriteOnce, config ReadWriteMany; a server is running: migrated by a later apply"}}`,
						vols["claim-alice"][0], vols["claim-bob"][0]))),
				}},
				Check: resource.ComposeAggregateTestCheckFunc(
					rebound(cs, ns, vols, old, "claim-alice", "claim-bob"),
					unchanged(cs, ns, old, "claim-carol"),
					checkLegacyUsers(hsAddr, map[string]string{"carol": "claim-carol"}),
					resource.TestCheckResourceAttr(hsAddr, "colocation_required", "true"),
					checkClaim("alice", "access_mode", "ReadWriteMany"),
					checkClaim("bob", "access_mode", "ReadWriteMany"),
					checkClaim("carol", "access_mode", "ReadWriteOnce"),
					resource.TestCheckResourceAttr(hsAddr, "migration_status", fmt.Sprintf(
						`{"alice":{"method":"rebind","volume":%q,"step":"done"},"bob":{"method":"rebind","volume":%q,"step":"done"}}`,
						vols["claim-alice"][0], vols["claim-bob"][0])),
					legacyInConfigMap(cs, ns, "carol"),
				),
			},
			{Config: cfg, PlanOnly: true}, // carol still runs: nothing to do
			{
				PreConfig: func() {
					if err := cs.CoreV1().Pods(ns).Delete(context.Background(), "jupyter-carol", metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
						t.Fatal(err)
					}
				},
				Config: cfg,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					expectClass("safe"),
					plancheck.ExpectKnownValue(hsAddr, tfjsonpath.New("migration_plan"), knownvalue.StringExact(fmt.Sprintf(
						`{"carol":{"method":"rebind","claim":"claim-carol","volume":%q,"from":"ReadWriteOnce","to":"ReadWriteMany"}}`, vols["claim-carol"][0]))),
				}},
				Check: resource.ComposeAggregateTestCheckFunc(
					rebound(cs, ns, vols, old, "claim-alice", "claim-bob", "claim-carol"),
					checkLegacyUsers(hsAddr, map[string]string{}),
					resource.TestCheckResourceAttr(hsAddr, "colocation_required", "false"),
					legacyInConfigMap(cs, ns),
				),
			},
			{Config: cfg, PlanOnly: true},
		},
	})
}

// An apply stopped after any step of a rebind leaves the home safe (the
// volume retained), and the next apply resumes from what the cluster shows
// and converges: the same volume, in the new mode, its policy restored.
func TestAccHomeStorage_migrateResumesAfterEveryStep(t *testing.T) {
	cs := acctest.Cluster(t).Admin()
	// Every operation that changes the cluster, in their order.
	for _, stop := range []migration.Op{migration.OpRetain, migration.OpDeleteClaim,
		migration.OpCreateClaim, migration.OpReserve, migration.OpWaitBound, migration.OpRestore} {
		t.Run(string(stop), func(t *testing.T) {
			ns := acctest.Namespace(t)
			class := "longhorn-" + ns
			vols := migratingHomes(t, cs, ns, class, "dana")
			old := uids(t, cs, ns, "claim-dana")
			stopped := false
			hook := func(user string, op migration.Op) error {
				if op == stop && !stopped {
					stopped = true
					return fmt.Errorf("apply stopped after step %s", op)
				}
				return nil
			}
			stopping := afterStep(hook)
			cfg := migrateConfig(t, ns, class, `jsonencode({ dana = {} })`)
			resource.Test(t, resource.TestCase{
				Steps: []resource.TestStep{
					{
						ProtoV6ProviderFactories: stopping,
						Config:                   cfg,
						ExpectError:              wrapRE(fmt.Sprintf(`(?s)1 of 1 home migrations did not finish.*dana \(claim-dana, volume %s, stopped at.*apply stopped after step %s.*No data was lost`, vols["claim-dana"][0], stop)),
					},
					{
						PreConfig: func() {
							if !stopped {
								t.Fatalf("the apply never reached step %s", stop)
							}
							// Whatever the step, the volume is retained and not deleted.
							pv, err := cs.CoreV1().PersistentVolumes().Get(context.Background(), vols["claim-dana"][0], metav1.GetOptions{})
							if err != nil {
								t.Fatalf("volume gone after stopping at %s: %v", stop, err)
							}
							if stop != migration.OpRestore && pv.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimRetain {
								t.Fatalf("stopped at %s with reclaim policy %s", stop, pv.Spec.PersistentVolumeReclaimPolicy)
							}
						},
						ProtoV6ProviderFactories: protoV6ProviderFactories,
						Config:                   cfg,
						Check: resource.ComposeAggregateTestCheckFunc(
							rebound(cs, ns, vols, old, "claim-dana"),
							checkLegacyUsers(hsAddr, map[string]string{}),
							legacyInConfigMap(cs, ns),
						),
					},
					{ProtoV6ProviderFactories: protoV6ProviderFactories, Config: cfg, PlanOnly: true},
				},
			})
		})
	}
}

func limitedMigrateConfig(t *testing.T, ns, class string) string {
	c := acctest.Cluster(t)
	return acctest.Config(acctest.ProviderBlock(c, c.LimitedToken), fmt.Sprintf(`
resource "jupyter_home_storage" "homes" {
  namespace          = %q
  storage_class_name = %q
  capacity           = "1Gi"
  access_mode        = "ReadWriteMany"
  on_mode_change     = "migrate"
}
`, ns, class))
}

// A migration runs with exactly the documented Role, read-only ClusterRole
// and migrator ClusterRole bound to a non-admin identity.
func TestAccHomeStorage_migrateLeastPrivilege(t *testing.T) {
	cs := acctest.Cluster(t).Admin()
	ns := acctest.Namespace(t)
	class := "longhorn-" + ns
	vols := migratingHomes(t, cs, ns, class, "erin")
	old := uids(t, cs, ns, "claim-erin")
	acctest.GrantMigrator(t, ns)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6ProviderFactories,
		Steps: []resource.TestStep{
			{Config: limitedMigrateConfig(t, ns, class), Check: rebound(cs, ns, vols, old, "claim-erin")},
			{Config: limitedMigrateConfig(t, ns, class), PlanOnly: true},
		},
	})
}

// Without the migrator role, or without one of its verbs, the plan or the
// apply fails naming the verb and the resource, and the home is intact
// (its claim unchanged, or its volume retained for the next apply).
func TestAccHomeStorage_migrateMissingPermission(t *testing.T) {
	cs := acctest.Cluster(t).Admin()
	for _, tc := range []struct {
		name  string
		grant func(t *testing.T, ns string)
		want  string
	}{
		// The read-only role lists volumes (every plan reads the rebinds in
		// progress); the first step's get is refused.
		{"no migrator role", func(t *testing.T, ns string) { acctest.Grant(t, ns) },
			`(?s)home migrations did not finish.*erin.*get persistentvolumes`},
		{"no patch on volumes", func(t *testing.T, ns string) { acctest.GrantMigrator(t, ns, "patch", "persistentvolumes") },
			`(?s)home migrations did not finish.*erin.*patch persistentvolumes`},
		{"no get on volumes", func(t *testing.T, ns string) { acctest.GrantMigrator(t, ns, "get", "persistentvolumes") },
			`(?s)home migrations did not finish.*erin.*get persistentvolumes`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns := acctest.Namespace(t)
			class := "longhorn-" + ns
			vols := migratingHomes(t, cs, ns, class, "erin")
			old := uids(t, cs, ns, "claim-erin")
			tc.grant(t, ns)
			resource.Test(t, resource.TestCase{
				ProtoV6ProviderFactories: protoV6ProviderFactories,
				Steps:                    []resource.TestStep{{Config: limitedMigrateConfig(t, ns, class), ExpectError: wrapRE(tc.want)}},
			})
			if now := uids(t, cs, ns, "claim-erin"); now["claim-erin"] != old["claim-erin"] {
				t.Errorf("claim-erin changed although the migration could not start")
			}
			pv, err := cs.CoreV1().PersistentVolumes().Get(context.Background(), vols["claim-erin"][0], metav1.GetOptions{})
			if err != nil || pv.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimDelete || pv.Annotations[migration.RecordAnnotation] != "" {
				t.Errorf("the volume was changed: %v", err)
			}
		})
	}
}

// A workspace claim beside an RWX home (Nebari's nebi-workspaces-{username})
// keeps its user co-located while it is ReadWriteOnce, and is rebound to
// ReadWriteMany by on_mode_change = "migrate"; the hub config follows.
func TestAccHomeStorage_extraUserVolumes(t *testing.T) {
	cs := acctest.Cluster(t).Admin()
	ns := acctest.Namespace(t)
	class := "longhorn-" + ns
	rwx := []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany}
	acctest.Seed(t, cs, ns,
		acctest.SeedClaim{Name: "claim-alice", Username: "alice", Modes: rwx, StorageClass: &class, Bound: true},
		acctest.SeedClaim{Name: "claim-bob", Username: "bob", Modes: rwx, StorageClass: &class, Bound: true},
		acctest.SeedClaim{Name: "nebi-workspaces-alice", Username: "alice", StorageClass: &class, Bound: true, ReclaimPolicy: corev1.PersistentVolumeReclaimDelete},
	)
	ws, err := cs.CoreV1().PersistentVolumeClaims(ns).Get(context.Background(), "nebi-workspaces-alice", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pv, err := cs.CoreV1().PersistentVolumes().Get(context.Background(), ws.Spec.VolumeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	vols := map[string][2]string{"nebi-workspaces-alice": {pv.Name, pv.Spec.CSI.VolumeHandle}}
	old := uids(t, cs, ns, "nebi-workspaces-alice")
	config := func(onModeChange string) string {
		return acctest.AdminConfig(t, fmt.Sprintf(`
resource "jupyter_home_storage" "homes" {
  namespace          = %q
  storage_class_name = %q
  capacity           = "1Gi"
  access_mode        = "ReadWriteMany"
  extra_user_volumes = ["nebi-workspaces-{username}"]
  on_mode_change     = %q
}

resource "jupyter_spawner_config" "hub" {
  namespace             = %q
  home_storage_settings = jupyter_home_storage.homes.spawner_settings
}
`, ns, class, onModeChange, ns))
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config:      config("fail"),
				ExpectError: wrapRE(`(?s)Other per-user claims are more restrictive than the homes.*alice: nebi-workspaces-alice`),
			},
			{
				Config: config("keep_existing"),
				Check: resource.ComposeAggregateTestCheckFunc(
					checkLegacyUsers(hsAddr, map[string]string{"alice": "nebi-workspaces-alice"}),
					resource.TestCheckResourceAttr(hsAddr, "colocation_required", "true"),
					unchanged(cs, ns, old, "nebi-workspaces-alice"),
					legacyInConfigMap(cs, ns, "alice"),
				),
			},
			{
				Config: config("migrate"),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					expectClass("safe"),
					plancheck.ExpectKnownValue(hsAddr, tfjsonpath.New("migration_plan"), knownvalue.StringExact(fmt.Sprintf(
						`{"alice (nebi-workspaces-alice)":{"method":"rebind","claim":"nebi-workspaces-alice","volume":%q,"from":"ReadWriteOnce","to":"ReadWriteMany"}}`, pv.Name))),
				}},
				Check: resource.ComposeAggregateTestCheckFunc(
					rebound(cs, ns, vols, old, "nebi-workspaces-alice"),
					checkLegacyUsers(hsAddr, map[string]string{}),
					resource.TestCheckResourceAttr(hsAddr, "colocation_required", "false"),
					legacyInConfigMap(cs, ns),
				),
			},
			{Config: config("migrate"), PlanOnly: true},
		},
	})
}

// Under KubeSpawner's per-user namespaces, the claims in the users' own
// namespaces are read (one cluster-wide List), migrated there, and new ones
// created there; a same-named claim of another hub is left alone.
func TestAccHomeStorage_userNamespaces(t *testing.T) {
	cs := acctest.Cluster(t).Admin()
	hub := acctest.Namespace(t)
	prefix := fmt.Sprintf("u%x", time.Now().UnixNano()&0xffffff)
	// Another JupyterHub, also with a claim-alice, in a namespace a
	// cluster-wide List returns after the users' ones.
	other := "zz-" + prefix
	class := "longhorn-" + hub
	for _, ns := range []string{prefix + "-alice", prefix + "-bob", prefix + "-carol", other} {
		if _, err := cs.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cs.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}) })
	}
	alice := migratingHomes(t, cs, prefix+"-alice", class, "alice")
	bob := migratingHomes(t, cs, prefix+"-bob", class, "bob")
	migratingHomes(t, cs, other, class, "alice")
	oldAlice, oldBob := uids(t, cs, prefix+"-alice", "claim-alice"), uids(t, cs, prefix+"-bob", "claim-bob")
	oldOther := uids(t, cs, other, "claim-alice")
	cfg := acctest.AdminConfig(t, fmt.Sprintf(`
resource "jupyter_home_storage" "homes" {
  namespace               = %q
  user_namespace_template = "%s-{username}"
  storage_class_name      = %q
  capacity                = "1Gi"
  access_mode             = "ReadWriteMany"
  users                   = jsonencode({ carol = {} })
  on_mode_change          = "migrate"
}
`, hub, prefix, class))
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: cfg,
				Check: resource.ComposeAggregateTestCheckFunc(
					rebound(cs, prefix+"-alice", alice, oldAlice, "claim-alice"),
					rebound(cs, prefix+"-bob", bob, oldBob, "claim-bob"),
					unchanged(cs, other, oldOther, "claim-alice"),
					claimCheck(cs, prefix+"-carol", "claim-carol", func(pvc *corev1.PersistentVolumeClaim) error {
						if pvc.Spec.AccessModes[0] != corev1.ReadWriteMany {
							return fmt.Errorf("claim-carol: %v", pvc.Spec.AccessModes)
						}
						return nil
					}),
					checkLegacyUsers(hsAddr, map[string]string{}),
					func(s *terraform.State) error {
						var settings map[string]any
						if err := json.Unmarshal([]byte(s.RootModule().Resources[hsAddr].Primary.Attributes["spawner_settings"]), &settings); err != nil {
							return err
						}
						if settings["enable_user_namespaces"] != true || settings["user_namespace_template"] != prefix+"-{username}" {
							return fmt.Errorf("spawner_settings do not turn on user namespaces: %v", settings)
						}
						return nil
					},
				),
			},
			{Config: cfg, PlanOnly: true},
		},
	})
}

// A rebind stopped after its claim was deleted is finished by the next
// apply whatever the configuration says then: here the state no longer
// knows the migration (the resource was renamed, as after `state rm`) and
// on_mode_change is back to its default. The plan must never read the
// missing claim as a new, empty home (it did when migration records were
// read only under on_mode_change = "migrate").
func TestAccHomeStorage_migrationInFlightIsNeverForgotten(t *testing.T) {
	cs := acctest.Cluster(t).Admin()
	ns := acctest.Namespace(t)
	class := "longhorn-" + ns
	vols := migratingHomes(t, cs, ns, class, "dana")
	old := uids(t, cs, ns, "claim-dana")
	forgotten := acctest.AdminConfig(t, fmt.Sprintf(`
resource "jupyter_home_storage" "forgotten" {
  namespace          = %q
  storage_class_name = %q
  capacity           = "1Gi"
  access_mode        = "ReadWriteMany"
  users              = jsonencode({ dana = {} })
}
`, ns, class))
	resource.Test(t, resource.TestCase{Steps: forgottenRebind(t, cs, ns, migrateConfig(t, ns, class, `jsonencode({ dana = {} })`),
		forgotten, "jupyter_home_storage.forgotten", "claim-dana", "dana", rebound(cs, ns, vols, old, "claim-dana"))})
}

// namedServerHomes seeds alice's default server's home (claim-alice) and
// her named server gpu's own claim (claim-alice--gpu, as KubeSpawner names
// it under pvc_name_template = "claim-{user_server}"), both ReadWriteOnce
// on CSI volumes with reclaim policy Delete.
func namedServerHomes(t *testing.T, cs kubernetes.Interface, ns, class string) map[string][2]string {
	t.Helper()
	return seedMigrating(t, cs, ns,
		acctest.SeedClaim{Name: "claim-alice", Username: "alice", StorageClass: &class, Bound: true, ReclaimPolicy: corev1.PersistentVolumeReclaimDelete},
		acctest.SeedClaim{Name: "claim-alice--gpu", Username: "alice", Servername: "gpu", StorageClass: &class, Bound: true, ReclaimPolicy: corev1.PersistentVolumeReclaimDelete})
}

func namedServersConfig(t *testing.T, ns, class, onModeChange string) string {
	return acctest.AdminConfig(t, fmt.Sprintf(`
resource "jupyter_home_storage" "homes" {
  namespace          = %q
  storage_class_name = %q
  capacity           = "1Gi"
  access_mode        = "ReadWriteMany"
  pvc_name_template  = "claim-{user_server}"
  users              = jsonencode({ alice = {} })
  on_mode_change     = %q
}
`, ns, class, onModeChange))
}

// A named server's own claim is a home like the default server's: kept and
// reported under "alice/gpu" (legacy_users, claims), then rebound in the
// same apply as the default server's home, each on its own volume.
func TestAccHomeStorage_namedServers(t *testing.T) {
	cs := acctest.Cluster(t).Admin()
	ns := acctest.Namespace(t)
	class := "longhorn-" + ns
	vols := namedServerHomes(t, cs, ns, class)
	old := uids(t, cs, ns, "claim-alice", "claim-alice--gpu")
	keep, move := namedServersConfig(t, ns, class, "keep_existing"), namedServersConfig(t, ns, class, "migrate")
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: keep,
				Check: resource.ComposeAggregateTestCheckFunc(
					checkLegacyUsers(hsAddr, map[string]string{"alice": "claim-alice,claim-alice--gpu"}),
					checkClaim("alice/gpu", "name", "claim-alice--gpu"),
					checkClaim("alice/gpu", "access_mode", "ReadWriteOnce"),
					unchanged(cs, ns, old, "claim-alice--gpu"),
				),
			},
			{
				Config: move,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					expectClass("safe"),
					plancheck.ExpectKnownValue(hsAddr, tfjsonpath.New("migration_plan"), knownvalue.StringExact(fmt.Sprintf(
						`{"alice":{"method":"rebind","claim":"claim-alice","volume":%q,"from":"ReadWriteOnce","to":"ReadWriteMany"},`+
							`"alice/gpu":{"method":"rebind","claim":"claim-alice--gpu","volume":%q,"from":"ReadWriteOnce","to":"ReadWriteMany"}}`,
						vols["claim-alice"][0], vols["claim-alice--gpu"][0]))),
					plancheck.ExpectKnownValue(hsAddr, tfjsonpath.New("changes"), knownvalue.StringRegexp(regexp.MustCompile(
						`"alice/gpu":\{"action":"migrate","namespace":"`+ns+`","claim":"claim-alice--gpu","uid":"`+old["claim-alice--gpu"]+`"`))),
				}},
				Check: resource.ComposeAggregateTestCheckFunc(
					rebound(cs, ns, vols, old, "claim-alice", "claim-alice--gpu"),
					checkLegacyUsers(hsAddr, map[string]string{}),
					checkClaim("alice/gpu", "access_mode", "ReadWriteMany"),
				),
			},
			{Config: move, PlanOnly: true},
		},
	})
}

// A rebind of a named server's claim stopped after the claim's deletion is
// finished by the next apply, under a configuration that no longer says
// "migrate" and a state that does not know it: the record on the volume
// names the server, and the plan never reads the server's home as gone.
func TestAccHomeStorage_namedServerRebindIsNeverForgotten(t *testing.T) {
	cs := acctest.Cluster(t).Admin()
	ns := acctest.Namespace(t)
	class := "longhorn-" + ns
	vols := seedMigrating(t, cs, ns, acctest.SeedClaim{Name: "claim-alice--gpu", Username: "alice", Servername: "gpu", StorageClass: &class, Bound: true,
		ReclaimPolicy: corev1.PersistentVolumeReclaimDelete})
	old := uids(t, cs, ns, "claim-alice--gpu")
	forgotten := strings.Replace(strings.Replace(namedServersConfig(t, ns, class, "fail"), `"homes"`, `"forgotten"`, 1), `jsonencode({ alice = {} })`, `jsonencode({})`, 1)
	resource.Test(t, resource.TestCase{Steps: forgottenRebind(t, cs, ns, namedServersConfig(t, ns, class, "migrate"),
		forgotten, "jupyter_home_storage.forgotten", "claim-alice--gpu", "alice/gpu", rebound(cs, ns, vols, old, "claim-alice--gpu"))})
}

// A home whose expansion has not finished is not rebound: the new claim
// would ask for more than the volume holds and never bind, or be bound with
// the filesystem never grown. It waits, named, and is rebound by the apply
// after the expansion finished (here the resizer's and the node's work is
// done by hand: the volume grown, then the claim's capacity).
func TestAccHomeStorage_migrateWaitsForAnExpansion(t *testing.T) {
	cs := acctest.Cluster(t).Admin()
	ns := acctest.Namespace(t)
	ctx := context.Background()
	class := "longhorn-" + ns
	yes := true
	if _, err := cs.StorageV1().StorageClasses().Create(ctx, &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: class},
		Provisioner: "driver.longhorn.io", AllowVolumeExpansion: &yes}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cs.StorageV1().StorageClasses().Delete(context.Background(), class, metav1.DeleteOptions{})
	})
	vols := migratingHomes(t, cs, ns, class, "alice", "bob")
	old := uids(t, cs, ns, "claim-alice", "claim-bob")
	// alice's home is grown to 2Gi; no resizer runs here: it stays at 1Gi.
	if _, err := cs.CoreV1().PersistentVolumeClaims(ns).Patch(ctx, "claim-alice", types.MergePatchType,
		[]byte(`{"spec":{"resources":{"requests":{"storage":"2Gi"}}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	cfg := migrateConfig(t, ns, class, `jsonencode({})`)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: cfg,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectKnownValue(hsAddr, tfjsonpath.New("migration_plan"), knownvalue.StringRegexp(regexp.MustCompile(
						`^\{"alice":\{"method":"none","claim":"claim-alice","reason":"[^"]*an expansion has not finished[^"]*"\},"bob":\{"method":"rebind"`))),
				}},
				Check: resource.ComposeAggregateTestCheckFunc(
					unchanged(cs, ns, old, "claim-alice"),
					rebound(cs, ns, vols, old, "claim-bob"),
					checkLegacyUsers(hsAddr, map[string]string{"alice": "claim-alice"}),
				),
			},
			{
				// The expansion finishes: the volume grows, then the claim's capacity.
				PreConfig: func() {
					pv := vols["claim-alice"][0]
					if _, err := cs.CoreV1().PersistentVolumes().Patch(ctx, pv, types.MergePatchType,
						[]byte(`{"spec":{"capacity":{"storage":"2Gi"}}}`), metav1.PatchOptions{}); err != nil {
						t.Fatal(err)
					}
					if _, err := cs.CoreV1().PersistentVolumeClaims(ns).Patch(ctx, "claim-alice", types.MergePatchType,
						[]byte(`{"status":{"capacity":{"storage":"2Gi"}}}`), metav1.PatchOptions{}, "status"); err != nil {
						t.Fatal(err)
					}
				},
				Config: cfg,
				Check: resource.ComposeAggregateTestCheckFunc(
					rebound(cs, ns, vols, old, "claim-alice", "claim-bob"),
					claimCheck(cs, ns, "claim-alice", func(pvc *corev1.PersistentVolumeClaim) error {
						if q := pvc.Spec.Resources.Requests[corev1.ResourceStorage]; q.String() != "2Gi" {
							return fmt.Errorf("the rebound claim requests %s, want the 2Gi it was grown to", q.String())
						}
						return nil
					}),
					checkLegacyUsers(hsAddr, map[string]string{}),
				),
			},
			{Config: cfg, PlanOnly: true},
		},
	})
}

// forgottenRebind are the steps of a rebind stopped right after the claim's
// deletion under migrating, then applied under forgotten (at addr: another
// resource, a configuration that no longer says "migrate"): the plan must
// show key's migration and the apply finish it (check), then nothing more.
func forgottenRebind(t *testing.T, cs kubernetes.Interface, ns, migrating, forgotten, addr, claim, key string, check resource.TestCheckFunc) []resource.TestStep {
	stopped := false
	hook := func(user string, op migration.Op) error {
		if op == migration.OpDeleteClaim && !stopped {
			stopped = true
			return fmt.Errorf("apply stopped after step %s", op)
		}
		return nil
	}
	return []resource.TestStep{
		{
			ProtoV6ProviderFactories: afterStep(hook),
			Config:                   migrating,
			ExpectError:              wrapRE(`apply stopped after step delete-claim`),
		},
		{
			PreConfig: func() {
				if _, err := cs.CoreV1().PersistentVolumeClaims(ns).Get(context.Background(), claim, metav1.GetOptions{}); err == nil {
					t.Fatal("the claim still exists after the stop: the test does not reach the window it is about")
				}
			},
			ProtoV6ProviderFactories: protoV6ProviderFactories,
			Config:                   forgotten,
			ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
				plancheck.ExpectKnownValue(addr, tfjsonpath.New("changes"),
					knownvalue.StringRegexp(regexp.MustCompile(regexp.QuoteMeta(`"`+key+`":{"action":"migrate"`)))),
			}},
			Check: check,
		},
		{ProtoV6ProviderFactories: protoV6ProviderFactories, Config: forgotten, PlanOnly: true},
	}
}
