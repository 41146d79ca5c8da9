package hubconfig

import (
	"testing"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/claims"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/kubespawner"
)

// splitHome is the per-user layout (ReadWriteOnce claims) while homes move
// out of the shared layout's ReadWriteMany claim home-nfs.
func splitHome() kubespawner.HomeStorage {
	return kubespawner.HomeStorage{AccessMode: claims.RWO, StorageClass: "longhorn", Capacity: "10Gi", NameTemplate: "claim-{username}", Scheme: kubespawner.SchemeSafe,
		SplitFrom: &kubespawner.SharedHome{Claim: "home-nfs", SubPathTemplate: "home/{username}", UID: 1000, GID: 100, Mode: "0700", Image: "busybox:1.36"}}
}

// While homes move out of the shared layout, the settings are the
// per-user layout's without claims made or deleted by KubeSpawner, and
// where the homes not moved yet are goes into the document, not into the
// settings the hub applies.
func TestBuild_splitFromShared(t *testing.T) {
	r := mustBuild(t, Config{Home: settingsOf(t, splitHome())})
	s := r.Settings
	if _, ok := s[kubespawner.SplitFromKey]; ok {
		t.Errorf("%s left in the KubeSpawner settings", kubespawner.SplitFromKey)
	}
	if s["storage_pvc_ensure"] != false || s["delete_pvc"] != false || s["enable_user_namespaces"] != false {
		t.Errorf("storage_pvc_ensure %v, delete_pvc %v, enable_user_namespaces %v", s["storage_pvc_ensure"], s["delete_pvc"], s["enable_user_namespaces"])
	}
	if _, ok := s["init_containers"]; ok {
		t.Errorf("init_containers %v: the init container is the fallback's only", s["init_containers"])
	}
	if r.SharedClaim != "" || r.FallbackClaim != "home-nfs" || r.FallbackSubPath != "home/{username}" || nameOf(r.FallbackInit) != kubespawner.SharedInitContainer {
		t.Errorf("shared %q, fallback %q %q %v", r.SharedClaim, r.FallbackClaim, r.FallbackSubPath, r.FallbackInit)
	}
	home, _ := r.Document()["home"].(map[string]any)
	if len(home) != 3 || home["fallback_claim"] != "home-nfs" || home["fallback_sub_path"] != "home/{username}" || home["fallback_init_container"] == nil {
		t.Errorf("document's home %v", home)
	}
	if r.Colocation.Mode != ColocateAll {
		t.Errorf("co-location %s", r.Colocation.Mode)
	}
}

// The shared layout's plan-time checks hold while homes move out of it:
// no profile changes the home's settings or drops the fallback's init
// container, no extra setting or profile mounts the shared claim or the
// home volume again, and a hand-made settings object with a bad sub-path
// template, a shared home volume or claims made by KubeSpawner is refused.
func TestBuild_splitFromSharedRefuses(t *testing.T) {
	home := settingsOf(t, splitHome())
	for _, k := range []string{"volumes", "volume_mounts", "init_containers", "pvc_name_template", "storage_pvc_ensure", "delete_pvc", "slug_scheme"} {
		var v any = true
		switch k {
		case "volumes":
			v = []any{map[string]any{"name": "all", "persistentVolumeClaim": map[string]any{"claimName": "home-nfs"}}}
		case "volume_mounts":
			v = []any{map[string]any{"name": "home", "mountPath": "/mnt/all"}}
		case "init_containers":
			v = []any{map[string]any{"name": "x", "image": "x"}}
		case "pvc_name_template", "slug_scheme":
			v = "escape-{username}"
		}
		p := map[string]any{"display_name": "p", "kubespawner_override": map[string]any{k: v}}
		if _, errs := Build(Config{Home: home, Profiles: []map[string]any{p}}); len(errs) != 1 {
			t.Errorf("a profile's %s: %v", k, errs)
		}
	}
	for name, extra := range map[string]map[string]any{
		"the shared claim":      {"volumes": []any{map[string]any{"name": "all", "persistentVolumeClaim": map[string]any{"claimName": "home-nfs"}}}},
		"home volume elsewhere": {"volume_mounts": []any{map[string]any{"name": "home", "mountPath": "/mnt/all"}}},
		"delete_pvc":            {"delete_pvc": true},
		"storage_pvc_ensure":    {"storage_pvc_ensure": true},
	} {
		if _, errs := Build(Config{Home: home, Extra: extra}); len(errs) != 1 {
			t.Errorf("extra settings with %s: %v", name, errs)
		}
	}
	for name, edit := range map[string]func(m map[string]any){
		"a sub-path template shared by users": func(m map[string]any) { m["sub_path"] = "home" },
		"a sub-path template with a spec":     func(m map[string]any) { m["sub_path"] = "{username:.3}" },
		"no claim":                            func(m map[string]any) { delete(m, "claim") },
		"another init container":              func(m map[string]any) { m["init_container"] = map[string]any{"name": "x"} },
	} {
		h := settingsOf(t, splitHome())
		edit(h[kubespawner.SplitFromKey].(map[string]any))
		if _, errs := Build(Config{Home: h}); len(errs) != 1 {
			t.Errorf("%s: %v", name, errs)
		}
	}
	ensure := settingsOf(t, splitHome())
	ensure["storage_pvc_ensure"] = true
	if _, errs := Build(Config{Home: ensure}); len(errs) != 1 {
		t.Errorf("KubeSpawner making claims: %v", errs)
	}
	both := settingsOf(t, sharedHome(claims.RWX))
	both[kubespawner.SplitFromKey] = settingsOf(t, splitHome())[kubespawner.SplitFromKey]
	if _, errs := Build(Config{Home: both}); len(errs) != 1 {
		t.Errorf("the shared layout and the move out of it at once: %v", errs)
	}
}
