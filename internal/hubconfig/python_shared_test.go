package hubconfig

import (
	"encoding/json"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/acctest"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/kubespawner"
)

func sharedHome(mode string) kubespawner.HomeStorage {
	return kubespawner.HomeStorage{AccessMode: mode, Capacity: "10Gi", NameTemplate: "claim-{username}", Scheme: kubespawner.SchemeSafe,
		Shared: &kubespawner.SharedHome{Claim: "home-nfs", SubPathTemplate: "home/{username}", UID: 1000, GID: 100, Mode: "0700", Image: "busybox:1.36"}}
}

func settingsOf(t testing.TB, h kubespawner.HomeStorage) map[string]any {
	t.Helper()
	var settings map[string]any
	if err := json.Unmarshal([]byte(JSON(h.Settings())), &settings); err != nil {
		t.Fatal(err)
	}
	return settings
}

// The shared layout's settings: no per-user claim is made or ever deleted
// by KubeSpawner, the hook is told the shared claim, and init containers
// from extra settings are added beside the one that makes the directory.
func TestBuild_sharedLayout(t *testing.T) {
	extra := map[string]any{"init_containers": []any{map[string]any{"name": "other", "image": "x"}}}
	r := mustBuild(t, Config{Home: settingsOf(t, sharedHome(RWX)), Extra: extra})
	s := r.Settings
	if s["storage_pvc_ensure"] != false || s["delete_pvc"] != false {
		t.Errorf("storage_pvc_ensure %v, delete_pvc %v", s["storage_pvc_ensure"], s["delete_pvc"])
	}
	if r.SharedClaim != "home-nfs" || r.Document()["home"].(map[string]any)["shared_claim"] != "home-nfs" {
		t.Errorf("shared claim %q, document %v", r.SharedClaim, r.Document()["home"])
	}
	inits, _ := s["init_containers"].([]any)
	if len(inits) != 2 || nameOf(inits[0]) != kubespawner.SharedInitContainer || nameOf(inits[1]) != "other" {
		t.Errorf("init_containers %v", inits)
	}
	if _, errs := Build(Config{Home: settingsOf(t, sharedHome(RWX)), Extra: map[string]any{"init_containers": []any{map[string]any{"name": kubespawner.SharedInitContainer}}}}); len(errs) != 1 {
		t.Errorf("an extra init container of the same name: %v", errs)
	}
	if _, errs := Build(Config{Home: settingsOf(t, sharedHome(RWX)), Extra: map[string]any{"delete_pvc": true}}); len(errs) != 1 {
		t.Errorf("delete_pvc in extra settings: %v", errs)
	}
	if r := mustBuild(t, Config{Home: homeSettings(RWX)}); r.SharedClaim != "" || r.Document()["home"] != nil {
		t.Errorf("per-user layout: shared claim %q", r.SharedClaim)
	}
}

// Real KubeSpawner, under the chart's storage type "static" as earlier
// configuration, renders each user's server on the user's directory of
// the shared claim, with the init container that makes the directory
// told the same directory; no claim is made for a user, the servers are
// not pinned to a node, and the hooks ask nothing about per-user claims.
func TestSpawnerSpawn_sharedLayout(t *testing.T) {
	r := mustBuild(t, Config{Home: settingsOf(t, sharedHome(RWX))})
	// Earlier configuration also mounts the whole shared claim, and the
	// home volume a second time: neither may reach a server.
	static := map[string]any{"singleuser": map[string]any{"storage": map[string]any{"type": "static",
		"static":            map[string]any{"pvcName": "chart-static", "subPath": "{username}"},
		"extraVolumes":      map[string]any{"all": map[string]any{"name": "all", "persistentVolumeClaim": map[string]any{"claimName": "home-nfs"}}},
		"extraVolumeMounts": map[string]any{"all": map[string]any{"name": "all", "mountPath": "/mnt/all"}, "again": map[string]any{"name": "home", "mountPath": "/mnt/again"}},
	}}}
	values := mergeValues(mergeValues(z2jhValues(t), static), helmValuesOf(t, r))
	api := seededHub(t, nil)
	seedClaim(t, acctest.Cluster(t).Admin(), api.Namespace, "home-nfs", corev1.ReadWriteMany, nil, nil)
	users := []hubUser{{Name: "alice"}, {Name: "Ada.Lovelace@Example.org"}, {Name: "alice", Server: "gpu", ID: "alice/gpu"}}
	got := runHub(t, api, values, t.TempDir(), users)
	for _, u := range users {
		id := u.Name
		if u.ID != "" {
			id = u.ID
		}
		s := got[id]
		if s.Refused != "" {
			t.Fatalf("%s: refused %s (%s)", id, s.Refused, s.RefusedLog)
		}
		want, err := kubespawner.Expand("home/{username}", u.Name, "", kubespawner.SchemeSafe)
		if err != nil {
			t.Fatal(err)
		}
		pod, err := s.PodObject()
		if err != nil {
			t.Fatal(err)
		}
		var home *corev1.Volume
		for i := range pod.Spec.Volumes {
			if pod.Spec.Volumes[i].Name == kubespawner.HomeVolumeName {
				home = &pod.Spec.Volumes[i]
			}
		}
		if home == nil || home.PersistentVolumeClaim == nil || home.PersistentVolumeClaim.ClaimName != "home-nfs" {
			t.Errorf("%s: home volume %+v", id, home)
		}
		for _, v := range pod.Spec.Volumes {
			if v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == "home-nfs" && v.Name != kubespawner.HomeVolumeName {
				t.Errorf("%s: volume %s mounts the shared claim whole", id, v.Name)
			}
		}
		var sub string
		for _, m := range pod.Spec.Containers[0].VolumeMounts {
			switch {
			case m.Name == kubespawner.HomeVolumeName && m.MountPath == DefaultHomeMountPath:
				sub = m.SubPath
			case m.Name == kubespawner.HomeVolumeName || m.Name == "all":
				t.Errorf("%s: %s mounted at %s", id, m.Name, m.MountPath)
			}
		}
		if sub != want {
			t.Errorf("%s: home mounted at subPath %q, want %q", id, sub, want)
		}
		var dir string
		for _, c := range pod.Spec.InitContainers {
			if c.Name != kubespawner.SharedInitContainer {
				continue
			}
			for _, e := range c.Env {
				if e.Name == "HOME_DIRECTORY" {
					dir = e.Value
				}
			}
		}
		if dir != want {
			t.Errorf("%s: the init container makes %q, want %q (init containers %+v)", id, dir, want, pod.Spec.InitContainers)
		}
		if s.PVC != nil {
			t.Errorf("%s: KubeSpawner rendered a claim: %v", id, s.PVC)
		}
		if _, pinned := pod.Labels[DefaultColocationLabel]; pinned {
			t.Errorf("%s: pinned to a node on a ReadWriteMany shared claim", id)
		}
		if s.HookRequests != 0 {
			t.Errorf("%s: the hooks made %d API requests, want none", id, s.HookRequests)
		}
	}
}

// In the shared layout no other mount of the home volume, mount over the
// home's path or volume of the shared claim gets through (every server
// would get every home); delete_pvc stays a per-user layout's setting.
func TestBuild_sharedLayoutRefusesWholeClaimMounts(t *testing.T) {
	home := settingsOf(t, sharedHome(RWX))
	for name, extra := range map[string]map[string]any{
		"home volume elsewhere":    {"volume_mounts": []any{map[string]any{"name": "home", "mountPath": "/mnt/all"}}},
		"over the home's path":     {"volume_mounts": []any{map[string]any{"name": "data", "mountPath": DefaultHomeMountPath}}},
		"the shared claim again":   {"volumes": []any{map[string]any{"name": "all", "persistentVolumeClaim": map[string]any{"claimName": "home-nfs"}}}},
		"delete_pvc in the layout": {"delete_pvc": true},
	} {
		if _, errs := Build(Config{Home: home, Extra: extra}); len(errs) != 1 {
			t.Errorf("%s: %v", name, errs)
		}
	}
	profile := map[string]any{"display_name": "p", "kubespawner_override": map[string]any{"volume_mounts": []any{map[string]any{"name": "home", "mountPath": "/all"}}}}
	if _, errs := Build(Config{Home: home, Profiles: []map[string]any{profile}}); len(errs) != 1 {
		t.Errorf("a profile's mount of the home volume: %v", errs)
	}
	scheme := map[string]any{"display_name": "q", "kubespawner_override": map[string]any{"slug_scheme": "escape"}}
	if _, errs := Build(Config{Home: home, Profiles: []map[string]any{scheme}}); len(errs) != 1 {
		t.Errorf("a profile's slug_scheme: %v", errs)
	}
	if _, errs := Build(Config{Home: homeSettings(RWX), Extra: map[string]any{"delete_pvc": false}}); len(errs) != 0 {
		t.Errorf("delete_pvc in the per-user layout: %v", errs)
	}
}

// Whatever configuration adds a container that mounts the shared claim
// (here the chart's singleuser.extraContainers), the hub refuses the spawn
// unless the mount is the user's own directory: one whole mount would give
// every server every home.
func TestSpawnerSpawn_sharedLayoutRefusesWholeClaimInAnyContainer(t *testing.T) {
	r := mustBuild(t, Config{Home: settingsOf(t, sharedHome(RWX))})
	api := seededHub(t, nil)
	seedClaim(t, acctest.Cluster(t).Admin(), api.Namespace, "home-nfs", corev1.ReadWriteMany, nil, nil)
	sidecar := func(sub string) map[string]any {
		mount := map[string]any{"name": "home", "mountPath": "/srv/files"}
		if sub != "" {
			mount["subPath"] = sub
		}
		return map[string]any{"singleuser": map[string]any{"extraContainers": []any{
			map[string]any{"name": "files", "image": "files:1", "volumeMounts": []any{mount}}}}}
	}
	whole := runHub(t, api, mergeValues(mergeValues(z2jhValues(t), sidecar("")), helmValuesOf(t, r)), t.TempDir(), []hubUser{{Name: "alice"}})["alice"]
	if whole.Pod != nil || !strings.Contains(whole.RefusedLog, "only the user's directory") || !strings.Contains(whole.Refused, "every user's home") {
		t.Errorf("a sidecar mounting the whole claim: refused %q (%s), pod %v", whole.Refused, whole.RefusedLog, whole.Pod != nil)
	}
	other := runHub(t, api, mergeValues(mergeValues(z2jhValues(t), sidecar("home/bob")), helmValuesOf(t, r)), t.TempDir(), []hubUser{{Name: "alice"}})["alice"]
	if other.Pod != nil || other.Refused == "" {
		t.Errorf("a sidecar mounting another user's directory was not refused")
	}
	own := runHub(t, api, mergeValues(mergeValues(z2jhValues(t), sidecar("home/{username}/notebooks")), helmValuesOf(t, r)), t.TempDir(), []hubUser{{Name: "alice"}})["alice"]
	if own.Refused != "" || own.Pod == nil {
		t.Errorf("a sidecar mounting a directory of the user's own home was refused: %s (%s)", own.Refused, own.RefusedLog)
	}
}
