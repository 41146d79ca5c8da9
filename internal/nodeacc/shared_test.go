package nodeacc

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	corev1 "k8s.io/api/core/v1"
	kresource "k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/acctest"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/hubconfig"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/hubtest"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/kubespawner"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/provider"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/testcluster"
)

// The shared layout on the real node: every home a directory of one
// ReadWriteMany claim (a volume of the node's CSI driver), in a namespace
// where Pod Security enforces baseline. The hub's configuration is
// rendered through OpenTofu and loaded by one hub with real KubeSpawner;
// each spawn's pod (KubeSpawner's manifest, with the provider's init
// container kept and run as rendered, its image the test bed's) runs on
// the node: the init container creates Ada's missing directory (her safe
// slug, not her raw name) with the configured owner and mode, and leaves
// alice's, made beforehand by someone else with another owner and mode
// and holding a file, as it was; each server writes a file into its home
// and reports the home's owner and mode. A pod mounting the claim's root
// then finds each server's file in exactly its user's directory and
// nothing anywhere else. Then slug_scheme and sub_path_template change
// with on_layout_change = "move": at the next spawns each init container
// renames the user's directory to its new name, each server reads what it
// wrote before, and nothing is left at the old places.
func TestAccHomeStorage_sharedLayout(t *testing.T) {
	c := acctest.Cluster(t)
	t.Parallel()
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	cs := c.Admin()
	ns := acctest.Namespace(t)
	baselineNamespace(ctx, t, cs, ns)

	const claim, template = "homes", "home/{username}"
	const uid, gid, mode = 1000, 100, "0700"
	dirOf := func(user string) string {
		d, err := kubespawner.Expand(template, user, "", kubespawner.SchemeSafe)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	const ada = "Ada.Lovelace@Example.org"
	aliceDir, adaDir := dirOf("alice"), dirOf(ada)
	if adaDir == "home/"+ada {
		t.Fatalf("%s's safe directory %q is her raw name: the test would not tell the two apart", ada, adaDir)
	}

	// The shared claim: a ReadWriteMany volume of the node's CSI driver
	// (the host-path provisioner makes ReadWriteOnce volumes only).
	pv := testcluster.CSIVolume("pv-"+ns+"-homes", "pv-"+ns+"-homes", "1Gi", corev1.ReadWriteMany)
	pv.Labels = map[string]string{testcluster.SeededVolumeLabel: ns}
	pv.Spec.PersistentVolumeReclaimPolicy = corev1.PersistentVolumeReclaimRetain
	pv.Spec.ClaimRef = &corev1.ObjectReference{Namespace: ns, Name: claim}
	if _, err := cs.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { testcluster.DeleteSeededVolumes(context.Background(), cs, ns) })
	class := testcluster.CSIClass
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: claim, Namespace: ns},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany},
			StorageClassName: &class, VolumeName: pv.Name,
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: kresource.MustParse("1Gi")}}}}
	if _, err := cs.CoreV1().PersistentVolumeClaims(ns).Create(ctx, pvc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := testcluster.WaitClaimPhase(ctx, cs, ns, claim, corev1.ClaimBound); err != nil {
		t.Fatal(err)
	}
	// alice's directory exists already, another owner's and group-shared
	// (setgid), with a file only the owner and the group may read.
	const notes = "alice's notes, from before the hub\n"
	precreate := testcluster.WriteFilesScript("/home/"+aliceDir, map[string]string{"notes.txt": notes}) + fmt.Sprintf(`chown 1001:100 '/home/%[1]s' '/home/%[1]s/notes.txt'
chmod 2770 '/home/%[1]s'
chmod 0640 '/home/%[1]s/notes.txt'
`, aliceDir)
	if _, err := testcluster.RunPod(ctx, cs, testcluster.ClaimPod(ns, "precreate", claim, precreate)); err != nil {
		t.Fatal(err)
	}

	api := hubtest.HubIdentity(t, ns)
	users := []hubtest.HubUser{{Name: "alice"}, {Name: ada}}
	cfg := acctest.AdminConfig(t, fmt.Sprintf(`
resource "jupyter_home_storage" "homes" {
  namespace   = %q
  access_mode = "ReadWriteMany"
  capacity    = "1Gi"
  users       = jsonencode({ alice = {}, %q = {} })
  shared_home = {
    claim_name        = %q
    sub_path_template = %q
    directory_uid     = %d
    directory_gid     = %d
    directory_mode    = %q
    init_image        = %q
  }
}

resource "jupyter_spawner_config" "hub" {
  namespace             = %q
  home_storage_settings = jupyter_home_storage.homes.spawner_settings
}

output "helm_values" {
  value = provider::jupyter::helm_values(jupyter_spawner_config.hub)
}
`, ns, ada, claim, template, uid, gid, mode, testcluster.ToolsImage, ns))
	wantMode, err := strconv.ParseUint(mode, 8, 32)
	if err != nil {
		t.Fatal(err)
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: factories(provider.Options{}),
		Steps: []resource.TestStep{
			{
				Config: cfg,
				Check: func(s *terraform.State) error {
					own, err := helmValues(s)
					if err != nil {
						return err
					}
					hub := hubtest.StartHub(t, api, hubtest.MergeValues(hubtest.Z2jhValues(t), own), t.TempDir(), hubconfig.FilesDir)
					got, err := hub.Spawn(users)
					if err != nil {
						return err
					}
					want := map[string]sharedHomeWant{
						// Left as it was.
						"alice": {dir: aliceDir, owner: "1001:100", mode: 0o2770, files: map[string]string{"notes.txt": notes}},
						// Created by the init container.
						ada: {dir: adaDir, owner: fmt.Sprintf("%d:%d", uid, gid), mode: wantMode, files: map[string]string{}},
					}
					for _, u := range users {
						w := want[u.Name]
						w.files["whose.txt"] = "written by the server of " + u.Name + "\n"
						if err := runSharedHomePod(ctx, t, cs, ns, claim, u.Name, got[u.Name], w); err != nil {
							return err
						}
					}
					return sharedClaimHolds(ctx, cs, ns, claim, want)
				},
			},
			{Config: cfg, PlanOnly: true},
			{
				// The escape scheme under another directory, moving: the hub
				// (restarted with the new settings) spawns both again; each
				// init container, told the user's safe directory as the
				// earlier place (KubeSpawner expanded the scheme-free
				// template), renames it to the new name: each server reads
				// what it wrote before there, owner and mode kept, and
				// nothing is left at the old places. (The same template
				// under the other scheme is refused by the plan: the schemes
				// can give one user's old name to another.)
				Config: strings.Replace(strings.Replace(cfg, "  shared_home = {", "  slug_scheme = \"escape\"\n  on_layout_change = \"move\"\n  shared_home = {", 1),
					`sub_path_template = "home/{username}"`, `sub_path_template = "homes_v2/{username}"`, 1),
				Check: func(s *terraform.State) error {
					own, err := helmValues(s)
					if err != nil {
						return err
					}
					hub := hubtest.StartHub(t, api, hubtest.MergeValues(hubtest.Z2jhValues(t), own), t.TempDir(), hubconfig.FilesDir)
					got, err := hub.Spawn(users)
					if err != nil {
						return err
					}
					adaEscaped, err := kubespawner.Expand("homes_v2/{username}", ada, "", kubespawner.SchemeEscape)
					if err != nil || adaEscaped == "homes_v2/"+strings.TrimPrefix(adaDir, "home/") {
						return fmt.Errorf("Ada's escaped directory %q (%v) is her safe one", adaEscaped, err)
					}
					written := func(u string) string { return "written by the server of " + u + "\n" }
					want := map[string]sharedHomeWant{
						"alice": {dir: "homes_v2/alice", owner: "1001:100", mode: 0o2770, files: map[string]string{"notes.txt": notes, "whose.txt": written("alice")},
							movedFrom: []string{aliceDir}},
						ada: {dir: adaEscaped, owner: fmt.Sprintf("%d:%d", uid, gid), mode: wantMode, files: map[string]string{"whose.txt": written(ada)},
							movedFrom: []string{adaDir}},
					}
					for _, u := range users {
						if err := runSharedHomePod(ctx, t, cs, ns, claim, u.Name, got[u.Name], want[u.Name]); err != nil {
							return err
						}
					}
					return sharedClaimHolds(ctx, cs, ns, claim, want, "home")
				},
			},
		},
	})
	t.Logf("took %s", time.Since(start).Round(time.Second))
}

// baselineNamespace labels ns so that Pod Security enforces its baseline
// level there, and checks that the API server does: a pod adding
// SYS_ADMIN, which baseline forbids (and nothing else here does), is
// refused.
func baselineNamespace(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns string) {
	t.Helper()
	patch := `{"metadata":{"labels":{"pod-security.kubernetes.io/enforce":"baseline","pod-security.kubernetes.io/enforce-version":"latest"}}}`
	if _, err := cs.CoreV1().Namespaces().Patch(ctx, ns, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	probe := testcluster.ClaimPod(ns, "baseline-probe", "none", "true")
	probe.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{
		Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"SYS_ADMIN"}}}
	_, err := cs.CoreV1().Pods(ns).Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	if err == nil || !strings.Contains(err.Error(), "violates PodSecurity") {
		t.Fatalf("a pod adding SYS_ADMIN in namespace %s (enforce baseline): %v; want a Pod Security refusal", ns, err)
	}
}

// sharedHomeWant is a user's home in the shared claim after the user's
// server ran: its directory, owner (uid:gid), mode and files.
type sharedHomeWant struct {
	dir   string
	owner string
	mode  uint64
	files map[string]string
	// movedFrom are the earlier places the init container is told, as
	// KubeSpawner expanded them.
	movedFrom []string
}

// runSharedHomePod runs KubeSpawner's pod of user's server on the node:
// the pod must mount only the shared claim, the notebook container its
// user's directory (w.dir) at the home, and the provider's init container
// must be told the same directory. What the node cannot run is swapped as
// runSpawnedPod does (and the pod is not restarted: the stand-in server
// ends), except that the provider's init container stays as
// rendered (image, command, security context); the notebook container
// writes whose.txt into the home and reports the home's owner and mode
// and the files it reads there.
func runSharedHomePod(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns, claim, user string, s hubtest.HubSpawn, w sharedHomeWant) error {
	if s.Refused != "" {
		return fmt.Errorf("%s: the hub refused the spawn: %s (%s)", user, s.Refused, s.RefusedLog)
	}
	if s.PVC != nil {
		return fmt.Errorf("%s: KubeSpawner rendered a claim of its own in the shared layout: %v", user, s.PVC)
	}
	pod, err := s.PodObject()
	if err != nil {
		return fmt.Errorf("%s: %w", user, err)
	}
	var claims []string
	for _, v := range pod.Spec.Volumes {
		if v.PersistentVolumeClaim != nil {
			claims = append(claims, v.PersistentVolumeClaim.ClaimName)
			if v.PersistentVolumeClaim.ClaimName == claim && v.Name != kubespawner.HomeVolumeName {
				return fmt.Errorf("%s: the shared claim is volume %s, want %s", user, v.Name, kubespawner.HomeVolumeName)
			}
		}
	}
	if len(claims) != 1 || claims[0] != claim {
		return fmt.Errorf("%s: the pod mounts claims %v, want only %s", user, claims, claim)
	}
	if _, pinned := pod.Labels[hubconfig.DefaultColocationLabel]; pinned {
		return fmt.Errorf("%s: pinned to a node on the ReadWriteMany shared claim", user)
	}
	if pod.Namespace != "" && pod.Namespace != ns {
		return fmt.Errorf("%s: the pod is for namespace %s, the hub's is %s", user, pod.Namespace, ns)
	}
	pod.Namespace = ns
	pod.Spec.SchedulerName = ""
	// The stand-in server ends; a failure is reported, not restarted.
	pod.Spec.RestartPolicy = corev1.RestartPolicyNever
	var inits, dropped []string
	for _, ic := range pod.Spec.InitContainers {
		if ic.Name != kubespawner.SharedInitContainer {
			dropped = append(dropped, ic.Name) // z2jh's metadata block: privileged
			continue
		}
		var dir string
		var moved []string
		for _, e := range ic.Env {
			if e.Name == "HOME_DIRECTORY" {
				dir = e.Value
			}
			if strings.HasPrefix(e.Name, "HOME_MOVED_FROM_") && !strings.HasSuffix(e.Name, "_USER") {
				moved = append(moved, e.Value)
			}
		}
		if dir != w.dir {
			return fmt.Errorf("%s: the init container is told directory %q, want %q", user, dir, w.dir)
		}
		if !slices.Equal(moved, w.movedFrom) {
			return fmt.Errorf("%s: the init container is told earlier places %q, want %q", user, moved, w.movedFrom)
		}
		if ic.Image != testcluster.ToolsImage {
			return fmt.Errorf("%s: the init container's image is %s, the configured init_image %s", user, ic.Image, testcluster.ToolsImage)
		}
		inits = append(inits, ic.Name)
	}
	if len(inits) != 1 {
		return fmt.Errorf("%s: init containers %v, want one %s", user, inits, kubespawner.SharedInitContainer)
	}
	pod.Spec.InitContainers = slices.DeleteFunc(pod.Spec.InitContainers, func(ic corev1.Container) bool { return ic.Name != kubespawner.SharedInitContainer })
	mount, sub := standInNotebook(pod, kubespawner.HomeVolumeName, func(ct *corev1.Container, mount string) {
		// Written as the server writes (its user, not root); then the home's
		// owner and mode, and every file with its content, one line each.
		ct.Command = []string{"sh", "-c", fmt.Sprintf(`exec > /dev/termination-log 2>&1
h='%s'
if ! printf '%%s' '%s' > "$h/whose.txt"; then echo "cannot write into $h as $(id)"; ls -lan "$h"; exit 1; fi
stat -c 'home %%u:%%g %%a' "$h"
for f in "$h"/*; do
  if ! c="$(od -An -v -tx1 "$f" | tr -d ' \n')"; then echo "cannot read $f as $(id)"; ls -lan "$h"; exit 1; fi
  echo "file ${f##*/} $c"
done`, mount, w.files["whose.txt"])}
	})
	if mount == "" {
		return fmt.Errorf("%s: the notebook container does not mount the home volume: %+v", user, pod.Spec.Containers)
	}
	if sub != w.dir {
		return fmt.Errorf("%s: the home is mounted at %s from subPath %q, want %q", user, mount, sub, w.dir)
	}
	podCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	got, err := testcluster.RunPod(podCtx, cs, pod)
	if err != nil {
		return fmt.Errorf("%s: %w", user, err)
	}
	home, files, err := parseHomeReport(got)
	if err != nil {
		return fmt.Errorf("%s: %w", user, err)
	}
	if want := fmt.Sprintf("%s %o", w.owner, w.mode); home != want {
		return fmt.Errorf("%s: the server's home %s (directory %s) is %s, want %s", user, mount, w.dir, home, want)
	}
	if !maps.Equal(files, w.files) {
		return fmt.Errorf("%s: the server reads %q in its home, want %q", user, files, w.files)
	}
	t.Logf("%s: pod %s (init containers %v, dropped %v) has home %s = %s of %s, %s", user, pod.Name, inits, dropped, mount, w.dir, claim, home)
	return nil
}

// parseHomeReport reads the notebook container's report: "home OWNER MODE"
// and "file NAME HEX" lines.
func parseHomeReport(msg string) (string, map[string]string, error) {
	var home string
	files := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(msg), "\n") {
		kind, rest, _ := strings.Cut(line, " ")
		switch kind {
		case "home":
			home = rest
		case "file":
			name, hexed, _ := strings.Cut(rest, " ")
			f, err := testcluster.ParseFiles(name + " " + hexed)
			if err != nil {
				return "", nil, err
			}
			files[name] = f[name]
		default:
			return "", nil, fmt.Errorf("the server reported %q", msg)
		}
	}
	return home, files, nil
}

// sharedClaimHolds reads the whole shared claim in a pod mounting its
// root: every user's directory with its owner and mode as want says, its
// files and nothing else, and no other file or directory anywhere except
// the directories above the users' and the empty ones of emptyDirs (left
// where homes were renamed from).
func sharedClaimHolds(ctx context.Context, cs kubernetes.Interface, ns, claim string, want map[string]sharedHomeWant, emptyDirs ...string) error {
	got, err := testcluster.RunPod(ctx, cs, testcluster.ClaimPod(ns, "shared-root", claim, `set -eu
cd /home
find . -mindepth 1 | sort | while read -r f; do
  if [ -d "$f" ]; then echo "dir ${f#./} $(stat -c '%u:%g %a' "$f")"; else echo "file ${f#./} $(od -An -v -tx1 "$f" | tr -d ' \n')"; fi
done > /dev/termination-log
`))
	if err != nil {
		return err
	}
	dirs, files := map[string]string{}, map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(got), "\n") {
		kind, rest, _ := strings.Cut(line, " ")
		switch kind {
		case "dir":
			name, attrs, _ := strings.Cut(rest, " ")
			dirs[name] = attrs
		case "file":
			f, err := testcluster.ParseFiles(rest)
			if err != nil {
				return err
			}
			for k, v := range f {
				files[k] = v
			}
		default:
			return fmt.Errorf("the shared claim's listing: %q", got)
		}
	}
	wantFiles, wantDirs := map[string]string{}, map[string]bool{}
	for _, d := range emptyDirs {
		wantDirs[d] = true
	}
	for user, w := range want {
		if attrs, want := dirs[w.dir], fmt.Sprintf("%s %o", w.owner, w.mode); attrs != want {
			return fmt.Errorf("%s's directory %s on the shared claim is %q, want %q (listing:\n%s)", user, w.dir, attrs, want, got)
		}
		for name, content := range w.files {
			wantFiles[w.dir+"/"+name] = content
		}
		for d := w.dir; d != "."; d = parentDir(d) {
			wantDirs[d] = true
		}
	}
	for d := range dirs {
		if !wantDirs[d] {
			return fmt.Errorf("directory %s on the shared claim is no user's (listing:\n%s)", d, got)
		}
	}
	if !maps.Equal(files, wantFiles) {
		return fmt.Errorf("the shared claim holds %q, want %q", files, wantFiles)
	}
	return nil
}

func parentDir(d string) string {
	i := strings.LastIndex(d, "/")
	if i < 0 {
		return "."
	}
	return d[:i]
}
