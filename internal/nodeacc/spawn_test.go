package nodeacc

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/acctest"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/hubconfig"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/hubtest"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/kube"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/kubespawner"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/provider"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/testcluster"
)

// A server's own pod on the real node, before and after its home moves.
// The hub's configuration is rendered once through OpenTofu (the provider's
// jupyter_spawner_config and helm_values, on z2jh's values) and loaded once
// by one hub with real KubeSpawner, which keeps running as the chart's hub
// ServiceAccount while an apply copies alice's home (a volume of the
// host-path provisioner, which cannot be rebound) into a new claim and
// rebinds bob's (a volume of the node's CSI driver) as ReadWriteMany.
// Each spawn's pod is KubeSpawner's own manifest, after the
// pre_spawn_hook and the modify_pod_hook, created on the node with only
// what this node cannot run swapped (runSpawnedPod says what): it must
// mount the server's home and read back the file written there, for
// alice's default server, her named server gpu (its own claim, which
// keeps its file across the move of her default server's home) and bob,
// and be pinned to one node exactly while that home is ReadWriteOnce.
func TestAccHomeStorage_spawnedPodsFollowMigrations(t *testing.T) {
	c := acctest.Cluster(t)
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Minute)
	defer cancel()
	cs := c.Admin()
	ns := acctest.Namespace(t)
	const template = "claim-{user_server}"
	claimOf := func(user, server string) string {
		name, err := kubespawner.Expand(template, user, server, kubespawner.SchemeSafe)
		if err != nil {
			t.Fatal(err)
		}
		return name
	}
	alice, gpu, bob := claimOf("alice", ""), claimOf("alice", "gpu"), claimOf("bob", "")
	if gpu == alice {
		t.Fatalf("%s gives the named server the default server's claim %s", template, alice)
	}
	hostPath, csi := testcluster.HostPathClass, testcluster.CSIClass
	if err := testcluster.Seed(ctx, cs, ns, testcluster.SeedClaim{Name: alice, Username: "alice", StorageClass: &hostPath, Size: "1Gi"}); err != nil {
		t.Fatal(err)
	}
	if err := testcluster.WaitClaimPhase(ctx, cs, ns, alice, corev1.ClaimBound); err != nil {
		t.Fatal(err)
	}
	acctest.Seed(t, cs, ns,
		acctest.SeedClaim{Name: gpu, Username: "alice", Servername: "gpu", StorageClass: &csi, Size: "1Gi", Bound: true, Driver: testcluster.CSIDriverName},
		acctest.SeedClaim{Name: bob, Username: "bob", StorageClass: &csi, Size: "1Gi", Bound: true, Driver: testcluster.CSIDriverName})
	// The node's CSI driver provisions nothing: the copy's new claim gets a
	// volume made ahead for it, as a static provisioning does.
	target := testcluster.CSIVolume("pv-"+ns+"-home-alice", "pv-"+ns+"-home-alice", "1Gi", corev1.ReadWriteMany)
	target.Labels = map[string]string{testcluster.SeededVolumeLabel: ns}
	target.Spec.PersistentVolumeReclaimPolicy = corev1.PersistentVolumeReclaimRetain
	target.Spec.ClaimRef = &corev1.ObjectReference{Namespace: ns, Name: "home-alice"}
	if _, err := cs.CoreV1().PersistentVolumes().Create(ctx, target, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Each home holds a file that says whose it is, written as the server
	// would (jovyan, 1000:100).
	files := map[string]string{
		"alice":     "alice's default server, home " + alice + "\n",
		"alice/gpu": "alice's named server gpu, home " + gpu + "\n",
		"bob":       "bob's default server, home " + bob + "\n",
	}
	for id, claim := range map[string]string{"alice": alice, "alice/gpu": gpu, "bob": bob} {
		script := testcluster.WriteFilesScript("/home", map[string]string{"whose.txt": files[id]}) + "chown -R 1000:100 /home\n"
		if _, err := testcluster.RunPod(ctx, cs, testcluster.ClaimPod(ns, "write-"+strings.ReplaceAll(claim, "--", "-"), claim, script)); err != nil {
			t.Fatal(err)
		}
	}
	aliceUID, bobUID := claimUID(ctx, t, cs, ns, alice), claimUID(ctx, t, cs, ns, bob)
	api := hubtest.HubIdentity(t, ns)
	servers := []hubtest.HubUser{{Name: "alice"}, {Name: "alice", Server: "gpu", ID: "alice/gpu"}, {Name: "bob"}}

	kept := spawnHomesConfig(t, ns, template, `on_mode_change = "keep_existing"`)
	migrate := spawnHomesConfig(t, ns, template, fmt.Sprintf(`on_mode_change = "migrate"
  migration = {
    rebind_drivers       = [%q]
    copy_image           = %q
    target_name_template = "home-{username}"
  }`, testcluster.CSIDriverName, testcluster.ToolsImage))
	var hub *hubtest.Hub
	var checksum string
	// spawned spawns the servers in the running hub (each restoring the
	// claim its last spawn remembered, as JupyterHub restores KubeSpawner's
	// state) and runs their pods on the node.
	remembered := map[string]string{}
	spawned := func(homes map[string]string) error {
		users := make([]hubtest.HubUser, len(servers))
		for i, u := range servers {
			users[i] = u
			if claim := remembered[serverID(u)]; claim != "" {
				users[i].State = map[string]any{"pvc_name": claim, "kubespawner_version": "7.0.0"}
			}
		}
		got, err := hub.Spawn(users)
		if err != nil {
			return err
		}
		for _, u := range servers {
			id := serverID(u)
			if err := runSpawnedPod(ctx, t, cs, ns, id, got[id], homes[id], files[id]); err != nil {
				return err
			}
			remembered[id] = got[id].PVCName
		}
		return nil
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: factories(provider.Options{Kube: kube.Options{CopyTimeout: 2 * time.Minute}}),
		Steps: []resource.TestStep{
			{
				// The homes as they are; the hub's configuration, rendered
				// here once, is the one the hub runs from now on.
				Config: kept,
				Check: func(s *terraform.State) error {
					own, err := helmValues(s)
					if err != nil {
						return err
					}
					checksum = s.RootModule().Resources["jupyter_spawner_config.hub"].Primary.Attributes["hub_checksum"]
					values := hubtest.MergeValues(hubtest.Z2jhValues(t), own)
					hub = hubtest.StartHub(t, api, values, t.TempDir(), hubconfig.FilesDir)
					return spawned(map[string]string{"alice": alice, "alice/gpu": gpu, "bob": bob})
				},
			},
			{
				// alice's home is copied into home-alice and she is switched
				// to it; bob's claim is deleted and made again on the same
				// volume as ReadWriteMany. The hub is not told.
				Config: migrate,
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttrWith(homesAddr, "migration_status", func(v string) error {
						var st map[string]map[string]any
						if err := json.Unmarshal([]byte(v), &st); err != nil {
							return err
						}
						if st["alice"]["method"] != "copy" || st["alice"]["step"] != "switched" || st["alice"]["target"] != "home-alice" ||
							st["bob"]["method"] != "rebind" || st["bob"]["step"] != "done" {
							return fmt.Errorf("migration_status %s, want alice copied to home-alice and bob rebound", v)
						}
						return nil
					}),
					resource.TestCheckResourceAttrWith("jupyter_spawner_config.hub", "hub_checksum", func(v string) error {
						if v != checksum {
							return fmt.Errorf("hub_checksum %s after the migrations, %s before: the hub would have to restart", v, checksum)
						}
						return nil
					}),
					func(*terraform.State) error {
						if uid := claimUID(ctx, t, cs, ns, alice); uid != aliceUID {
							return fmt.Errorf("%s was replaced by the copy", alice)
						}
						if uid := claimUID(ctx, t, cs, ns, bob); uid == bobUID {
							return fmt.Errorf("%s was not rebound (its UID is the old one)", bob)
						}
						// The old home, kept, now says so: a pod that still
						// mounted it would read this.
						stale := testcluster.WriteFilesScript("/home", map[string]string{"whose.txt": "alice's old home, left after the copy\n"})
						if _, err := testcluster.RunPod(ctx, cs, testcluster.ClaimPod(ns, "old-home-alice", alice, stale)); err != nil {
							return err
						}
						return spawned(map[string]string{"alice": "home-alice", "alice/gpu": gpu, "bob": bob})
					},
				),
			},
			{Config: migrate, PlanOnly: true},
		},
	})
}

// spawnHomesConfig is alice's and bob's homes as ReadWriteMany claims of
// the node's CSI driver, with onModeChange's settings, and the hub's
// configuration from them, its Helm values an output.
func spawnHomesConfig(t *testing.T, ns, template, onModeChange string) string {
	return acctest.AdminConfig(t, fmt.Sprintf(`
resource "jupyter_home_storage" "homes" {
  namespace          = %q
  storage_class_name = %q
  capacity           = "1Gi"
  access_mode        = "ReadWriteMany"
  pvc_name_template  = %q
  users              = jsonencode({ alice = {}, bob = {} })
  %s
}

resource "jupyter_spawner_config" "hub" {
  namespace             = %q
  home_storage_settings = jupyter_home_storage.homes.spawner_settings
}

output "helm_values" {
  value = provider::jupyter::helm_values(jupyter_spawner_config.hub)
}
`, ns, testcluster.CSIClass, template, onModeChange, ns))
}

func serverID(u hubtest.HubUser) string {
	if u.ID != "" {
		return u.ID
	}
	return u.Name
}

func claimUID(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns, name string) string {
	t.Helper()
	pvc, err := cs.CoreV1().PersistentVolumeClaims(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return string(pvc.UID)
}

// standInNotebook swaps what the node cannot run in KubeSpawner's pod:
// every container's image for the test bed's, and the notebook
// container's command for what stand sets, told where that container
// mounts volume. It returns that mount's path and subPath ("" when it
// mounts none).
func standInNotebook(pod *corev1.Pod, volume string, stand func(ct *corev1.Container, mount string)) (mount, subPath string) {
	for i := range pod.Spec.Containers {
		ct := &pod.Spec.Containers[i]
		ct.Image = testcluster.ToolsImage
		if ct.Name != "notebook" {
			continue
		}
		for _, m := range ct.VolumeMounts {
			if m.Name == volume {
				mount, subPath = m.MountPath, m.SubPath
			}
		}
		ct.Args = nil
		stand(ct, mount)
	}
	return mount, subPath
}

// runSpawnedPod creates the pod of KubeSpawner's manifest on the node and
// checks that it mounts home as KubeSpawner mounts the home volume and
// reads want there, and that it is pinned to one node exactly when home
// is not ReadWriteMany (read now). What the node cannot run is swapped:
// every container's image is the test bed's (its pull policy kept), the
// notebook container runs a shell that writes the file to its termination
// log instead of jupyterhub-singleuser, the init containers go (z2jh's
// iptables block of the cloud metadata server, privileged, which the test
// bed's API server does not admit), and the pod goes to the test bed's
// scheduler instead of z2jh's user scheduler. Volumes,
// mounts, environment, labels, affinity, tolerations, resources and
// security contexts stay as KubeSpawner and the hooks made them.
func runSpawnedPod(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns, id string, s hubtest.HubSpawn, home, want string) error {
	if s.Refused != "" {
		return fmt.Errorf("%s: the hub refused the spawn: %s (%s)", id, s.Refused, s.RefusedLog)
	}
	pod, err := s.PodObject()
	if err != nil {
		return fmt.Errorf("%s: %w", id, err)
	}
	if s.PVCName != home {
		return fmt.Errorf("%s: KubeSpawner's pvc_name is %s, want %s", id, s.PVCName, home)
	}
	var claims []string
	volume := ""
	for _, v := range pod.Spec.Volumes {
		if v.PersistentVolumeClaim != nil {
			claims = append(claims, v.PersistentVolumeClaim.ClaimName)
			if v.PersistentVolumeClaim.ClaimName == home {
				volume = v.Name
			}
		}
	}
	if volume == "" || len(claims) != 1 {
		return fmt.Errorf("%s: the pod mounts claims %v, want only %s", id, claims, home)
	}
	if pod.Namespace != "" && pod.Namespace != ns {
		return fmt.Errorf("%s: the pod is for namespace %s, the hub's is %s", id, pod.Namespace, ns)
	}
	pod.Namespace = ns
	pod.Spec.SchedulerName = ""
	pod.Spec.InitContainers = nil
	mount, sub := standInNotebook(pod, volume, func(ct *corev1.Container, mount string) {
		ct.Command = []string{"sh", "-c", fmt.Sprintf(`f='%s/whose.txt'
if [ -r "$f" ]; then cat "$f"; else echo "cannot read $f as $(id)"; ls -la '%[1]s'; fi > /dev/termination-log 2>&1`, mount)}
	})
	if mount == "" || sub != "" {
		return fmt.Errorf("%s: the notebook container does not mount volume %s whole: %+v", id, volume, pod.Spec.Containers)
	}
	pvc, err := cs.CoreV1().PersistentVolumeClaims(ns).Get(ctx, home, metav1.GetOptions{})
	if err != nil {
		return err
	}
	shared := len(pvc.Spec.AccessModes) > 0
	for _, m := range pvc.Spec.AccessModes {
		shared = shared && m == corev1.ReadWriteMany
	}
	pinned := pod.Labels[hubconfig.DefaultColocationLabel] != "" && pod.Spec.Affinity != nil && pod.Spec.Affinity.PodAffinity != nil &&
		len(pod.Spec.Affinity.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution) > 0
	if pinned == shared {
		return fmt.Errorf("%s: pinned to one node = %v on %s (modes %v)", id, pinned, home, pvc.Spec.AccessModes)
	}
	got, err := testcluster.RunPod(ctx, cs, pod)
	if err != nil {
		return fmt.Errorf("%s: %w", id, err)
	}
	if got != want {
		return fmt.Errorf("%s: KubeSpawner's pod read %q from %s at %s, want %q", id, got, home, mount, want)
	}
	t.Logf("%s: pod %s mounted %s (%v, pinned %v) at %s and read %q", id, pod.Name, home, pvc.Spec.AccessModes, pinned, mount, got)
	return nil
}
