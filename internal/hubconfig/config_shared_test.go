package hubconfig

import (
	"encoding/json"
	"testing"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/claims"
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
	r := mustBuild(t, Config{Home: settingsOf(t, sharedHome(claims.RWX)), Extra: extra})
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
	if _, errs := Build(Config{Home: settingsOf(t, sharedHome(claims.RWX)), Extra: map[string]any{"init_containers": []any{map[string]any{"name": kubespawner.SharedInitContainer}}}}); len(errs) != 1 {
		t.Errorf("an extra init container of the same name: %v", errs)
	}
	if _, errs := Build(Config{Home: settingsOf(t, sharedHome(claims.RWX)), Extra: map[string]any{"delete_pvc": true}}); len(errs) != 1 {
		t.Errorf("delete_pvc in extra settings: %v", errs)
	}
	if r := mustBuild(t, Config{Home: homeSettings(claims.RWX)}); r.SharedClaim != "" || r.Document()["home"] != nil {
		t.Errorf("per-user layout: shared claim %q", r.SharedClaim)
	}
}

// In the shared layout no other mount of the home volume, mount over the
// home's path or volume of the shared claim gets through (every server
// would get every home); delete_pvc stays a per-user layout's setting.
func TestBuild_sharedLayoutRefusesWholeClaimMounts(t *testing.T) {
	home := settingsOf(t, sharedHome(claims.RWX))
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
	if _, errs := Build(Config{Home: homeSettings(claims.RWX), Extra: map[string]any{"delete_pvc": false}}); len(errs) != 0 {
		t.Errorf("delete_pvc in the per-user layout: %v", errs)
	}
}
