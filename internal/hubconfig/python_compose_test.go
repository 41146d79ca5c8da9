package hubconfig

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/claims"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/kubespawner"
)

// These tests load the hub configuration the way zero-to-jupyterhub's hub
// loads it: the chart's own files/hub/jupyterhub_config.py (which execs the
// jupyterhub_config.d files in sorted order, then hub.extraConfig sorted by
// key) with the values the chart renders, followed by real KubeSpawner
// rendering a user's claim and pod. The upstream files are read in place
// from ../shared/reference/ (upstream-sources.md); internal/hubtest holds
// the helpers, which the examples' tests share, and its testdata/hub.py is
// the driver.

// The data-science-pack's hub: its values on top of z2jh's, its
// jupyterhub_config.d files, then the provider's helm_values. Homes are
// ReadWriteMany, alice keeps a ReadWriteOnce claim (legacy_users).
func TestSpawnerCompose_nebariDataSciencePack(t *testing.T) {
	const label = "nebari.dev/colocate-user"
	const email = "T.Potts@OpenTeams.com"
	small := Profile{Slug: "small-instance", DisplayName: "Small (provider)"}.Dict()
	// The pack pins the escape scheme (claims named before KubeSpawner 7).
	home := homeSettings(claims.RWX)
	home["slug_scheme"] = string(kubespawner.SchemeEscape)
	r := mustBuild(t, Config{Home: home, ColocationLabel: label,
		Profiles: []map[string]any{small, gpuProfileDict()}})

	pack := yamlRef(t, "nebari-data-science-pack", "values.yaml")
	sub, _ := pack["jupyterhub"].(map[string]any)
	values := mergeValues(z2jhValues(t), sub)
	profiles, _ := dig(values, "custom.profiles").([]any)
	if len(profiles) == 0 || str(profiles[0].(map[string]any)["slug"]) != "small-instance" {
		t.Fatalf("the pack's first profile is no longer small-instance: %v", profiles)
	}
	gated := map[string]any{"slug": "gated-gpu", "display_name": "Gated GPU", "access": "yaml", "groups": []any{"gpu-team"}}
	values["custom"].(map[string]any)["profiles"] = append(profiles, gated)
	values = mergeValues(values, map[string]any{"hub": map[string]any{"extraConfig": map[string]any{"aa-earlier-colocation": earlierHook(label)}}})
	values = mergeValues(values, helmValuesOf(t, r))
	// The pack's own hub volumes survive helm_values (they merge, not replace).
	for _, v := range []string{"custom-config", "oauth-client", "org-ca", "ca-merged"} {
		if !slices.ContainsFunc(list(dig(values, "hub.extraVolumes")), func(m map[string]any) bool { return m["name"] == v }) {
			t.Errorf("hub.extraVolumes lost the pack's %s after merging helm_values", v)
		}
	}

	configD := t.TempDir()
	packConfigD(t, configD)
	emailClaim, err := kubespawner.Expand("claim-{username}", email, "", kubespawner.SchemeEscape)
	if err != nil {
		t.Fatal(err)
	}
	// alice and the email user keep a ReadWriteOnce claim; bob has none
	// yet, and his workspace claim (the pack's, which its hook creates when
	// missing) is ReadWriteMany already.
	api := seededHub(t, map[string]corev1.PersistentVolumeAccessMode{"claim-alice": corev1.ReadWriteOnce, emailClaim: corev1.ReadWriteOnce,
		"nebi-workspaces-bob": corev1.ReadWriteMany})
	got := runHub(t, api, values, configD, []hubUser{
		{Name: "alice", AuthState: map[string]any{"groups": []any{"/gpu-team"}}, Profile: "gpu"},
		{Name: "bob", AuthState: map[string]any{"groups": []any{}}, Profile: "small-instance"},
		{Name: email},
	})
	alice, bob := got["alice"], got["bob"]

	// An email user: the claim KubeSpawner names is the one this provider
	// computes, and label and affinity carry the pod's own label-safe name.
	if wantClaim := emailClaim; got[email].PVCName != wantClaim {
		t.Errorf("KubeSpawner names %s's claim %q, the provider %q", email, got[email].PVCName, wantClaim)
	}
	fe := factsOf(t, got[email].Pod)
	if v := fe.Labels["hub.jupyter.org/username"]; v == "" || fe.Labels[label] != v || JSON(fe.ColocationTerms(label)) != JSON([]string{JSON([]string{v})}) {
		t.Errorf("%s: username label %q, co-location label %q, terms %v", email, v, fe.Labels[label], fe.ColocationTerms(label))
	}

	// Profiles: the pack's per-user callable still gates its own; the
	// provider's are offered to everyone; small-instance is the provider's,
	// in the pack's place.
	if want := []string{"small-instance", "medium-instance"}; !slices.Equal(alice.Offered[:2], want) {
		t.Errorf("alice is offered %v, want %v first", alice.Offered, want)
	}
	if !slices.Contains(alice.Offered, "gated-gpu") || slices.Contains(bob.Offered, "gated-gpu") {
		t.Errorf("the pack's gating is lost: alice %v, bob %v", alice.Offered, bob.Offered)
	}
	for _, s := range []*hubSpawn{&alice, &bob} {
		if !slices.Contains(s.Offered, "gpu") || count(s.Offered, "small-instance") != 1 {
			t.Errorf("offered %v: want the provider's gpu and one small-instance", s.Offered)
		}
	}

	for name, s := range map[string]hubSpawn{"alice": alice, "bob": bob} { // escape leaves these names as they are
		if s.PVCName != "claim-"+name || dig(s.PVC, "metadata.name") != "claim-"+name {
			t.Errorf("%s: claim %q / %v, want claim-%s", name, s.PVCName, dig(s.PVC, "metadata.name"), name)
		}
		if modes := JSON(dig(s.PVC, "spec.accessModes")); modes != `["ReadWriteMany"]` {
			t.Errorf("%s: new claims are %s, want ReadWriteMany", name, modes)
		}
		f := factsOf(t, s.Pod)
		if f.Mounts["/home/jovyan"] != "home" || dig(f.Volumes["home"], "persistentVolumeClaim.claimName") != "claim-"+name {
			t.Errorf("%s: home mount %q volume %v", name, f.Mounts["/home/jovyan"], f.Volumes["home"])
		}
		for _, v := range []string{"shared", "nebi-bin", "nebi-config", "singleuser-config"} {
			if _, ok := f.Volumes[v]; !ok {
				t.Errorf("%s: the pack's volume %s was dropped; volumes %v", name, v, sortedKeys(f.Volumes))
			}
		}
		if f.Mounts["/usr/local/bin/nebi"] != "nebi-bin" || f.Mounts["/etc/nebi/config.yaml"] != "nebi-config" {
			t.Errorf("%s: the pack's mounts were dropped: %v", name, f.Mounts)
		}
		if !slices.Contains(f.Inits, "install-nebi") || !slices.Contains(f.Inits, "block-cloud-metadata") {
			t.Errorf("%s: init containers %v, want the pack's install-nebi and the chart's block-cloud-metadata", name, f.Inits)
		}
	}
	fa, fb := factsOf(t, alice.Pod), factsOf(t, bob.Pod)
	if _, ok := fa.Volumes["datasets"]; !ok || fa.Mounts["/datasets"] != "datasets" {
		t.Errorf("alice's gpu profile volume is missing: %v", fa.Mounts)
	}
	if fa.Mounts["/shared/gpu-team"] != "shared" || !slices.Contains(fa.Inits, "initialize-shared-mounts") {
		t.Errorf("the pack's group mount for alice was dropped by the gpu profile's volumes: %v %v", fa.Mounts, fa.Inits)
	}
	// Co-location: alice (a ReadWriteOnce claim kept) is pinned with one
	// term; bob (a new ReadWriteMany claim) is not, although the pack and an
	// earlier hook pin everyone.
	if fa.Labels[label] != "alice" || JSON(fa.ColocationTerms(label)) != `["[\"alice\"]"]` {
		t.Errorf("alice: label %q terms %v", fa.Labels[label], fa.ColocationTerms(label))
	}
	if _, ok := fb.Labels[label]; ok || len(fb.ColocationTerms(label)) > 0 {
		t.Errorf("bob is pinned: label %q terms %v", fb.Labels[label], fb.ColocationTerms(label))
	}
	// The API server accepts every claim and pod rendered.
	t.Run("dry_run", func(t *testing.T) { dryRunSpawns(t, testAPIServer(t), got) })
}

// A plain zero-to-jupyterhub hub: the chart's own home volume (dict form)
// gives way to the provider's, the deployer's singleuser.storage.extraVolumes
// and static profileList stay, the home is mounted at home_mount_path, and
// under ReadWriteOnce every user's pods are pinned.
func TestSpawnerCompose_z2jh(t *testing.T) {
	r := mustBuild(t, Config{Home: homeSettings(claims.RWO), HomeMountPath: "/home/{username}", Profiles: []map[string]any{gpuProfileDict()}})
	values := mergeValues(z2jhValues(t), map[string]any{"singleuser": map[string]any{
		"storage": map[string]any{
			"extraVolumes":      map[string]any{"scratch": map[string]any{"name": "scratch", "emptyDir": map[string]any{}}},
			"extraVolumeMounts": map[string]any{"scratch": map[string]any{"name": "scratch", "mountPath": "/scratch"}},
		},
		"profileList": []any{map[string]any{"slug": "default", "display_name": "Default", "default": true}},
	}})
	values = mergeValues(values, helmValuesOf(t, r))
	if got := dig(values, "singleuser.storage.homeMountPath"); got != "/home/{username}" {
		t.Errorf("singleuser.storage.homeMountPath = %v, want the home_mount_path", got)
	}
	got := runHub(t, seededHub(t, nil), values, t.TempDir(), []hubUser{{Name: "bob"}, {Name: "carol", Profile: "gpu"}})
	// The gpu profile serves its own volumes as a plain list.
	if v := JSON(dig(got["bob"].Served[1].(map[string]any), "kubespawner_override.volume_mounts")); !strings.Contains(v, `"mountPath":"/datasets"`) {
		t.Errorf("the gpu profile serves volume_mounts %s", v)
	}
	for _, name := range []string{"bob", "carol"} {
		s := got[name]
		if want := []string{"default", "gpu"}; !slices.Equal(s.Offered, want) {
			t.Errorf("%s is offered %v, want %v", name, s.Offered, want)
		}
		if modes := JSON(dig(s.PVC, "spec.accessModes")); modes != `["ReadWriteOnce"]` || s.PVCName != "claim-"+name {
			t.Errorf("%s: claim %s %s", name, s.PVCName, modes)
		}
		f := factsOf(t, s.Pod)
		if f.Mounts["/home/"+name] != "home" || f.Mounts["/scratch"] != "scratch" || len(f.Mounts) != 2+boolInt(name == "carol") {
			t.Errorf("%s: mounts %v", name, f.Mounts)
		}
		var homeVolumes []string
		for n, v := range f.Volumes {
			if dig(v, "persistentVolumeClaim.claimName") == "claim-"+name {
				homeVolumes = append(homeVolumes, n)
			}
		}
		if !slices.Equal(homeVolumes, []string{"home"}) {
			t.Errorf("%s: volumes on the home claim %v, want only the provider's", name, homeVolumes)
		}
		if f.Labels[DefaultColocationLabel] != name || len(f.ColocationTerms(DefaultColocationLabel)) != 1 {
			t.Errorf("%s: not pinned under ReadWriteOnce: %v %v", name, f.Labels, f.Affinity)
		}
	}
	t.Run("dry_run", func(t *testing.T) { dryRunSpawns(t, testAPIServer(t), got) })
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func count(xs []string, x string) int {
	n := 0
	for _, y := range xs {
		if y == x {
			n++
		}
	}
	return n
}
