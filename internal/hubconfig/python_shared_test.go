package hubconfig

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/acctest"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/claims"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/kubespawner"
)

// Real KubeSpawner, under the chart's storage type "static" as earlier
// configuration, renders each user's server on the user's directory of
// the shared claim, with the init container that makes the directory
// told the same directory; no claim is made for a user, the servers are
// not pinned to a node, and the hooks ask nothing about per-user claims.
func TestSpawnerSpawn_sharedLayout(t *testing.T) {
	r := mustBuild(t, Config{Home: settingsOf(t, sharedHome(claims.RWX))})
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

// Whatever configuration adds a container that mounts the shared claim
// (here the chart's singleuser.extraContainers), the hub refuses the spawn
// unless the mount is the user's own directory: one whole mount would give
// every server every home.
func TestSpawnerSpawn_sharedLayoutRefusesWholeClaimInAnyContainer(t *testing.T) {
	r := mustBuild(t, Config{Home: settingsOf(t, sharedHome(claims.RWX))})
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
