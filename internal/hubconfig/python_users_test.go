package hubconfig

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/acctest"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/claims"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/hubtest"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/kubespawner"
)

// userKind is one kind of user a jupyter_home_storage with ReadWriteMany
// homes leaves behind, and the home claim the user's server must mount.
type userKind struct {
	user, kind string
	claim      string                            // the home claim the pod mounts
	live       corev1.PersistentVolumeAccessMode // the claim as it lives in the cluster; "" for none yet
	pinned     bool                              // co-located (a ReadWriteOnce claim)
}

// everyKindOfUser: alice keeps her ReadWriteOnce claim (keep_existing);
// bob's claim was rebound to a ReadWriteMany volume under the same name;
// carol's home was copied to home-carol and switched, her old claim kept;
// dave is new. The hub finds each from the claims in the cluster
// (seedEveryKindOfUser), not from its configuration.
var everyKindOfUser = []userKind{
	{user: "alice", kind: "legacy", claim: "claim-alice", live: corev1.ReadWriteOnce, pinned: true},
	{user: "bob", kind: "migrated", claim: "claim-bob", live: corev1.ReadWriteMany},
	{user: "carol", kind: "copied", claim: "home-carol", live: corev1.ReadWriteMany},
	{user: "dave", kind: "new", claim: "claim-dave"},
}

// The claims a ReadWriteMany home storage leaves for everyKindOfUser.
var liveClaims = map[string]corev1.PersistentVolumeAccessMode{
	"claim-alice": corev1.ReadWriteOnce, "claim-bob": corev1.ReadWriteMany,
	"claim-carol": corev1.ReadWriteOnce, "home-carol": corev1.ReadWriteMany,
}

// claim is a claim as it lives in the cluster, for seeding.
func claim(name string, mode corev1.PersistentVolumeAccessMode) map[string]any {
	return map[string]any{
		"apiVersion": "v1", "kind": "PersistentVolumeClaim",
		"metadata": map[string]any{"name": name},
		"spec": map[string]any{
			"accessModes":      []any{string(mode)},
			"storageClassName": "longhorn",
			"resources":        map[string]any{"requests": map[string]any{"storage": "10Gi"}},
		},
	}
}

// claimModes reads a claim's access modes from the API server.
func claimModes(s *apiServer, ns, name string) (string, error) {
	u, err := s.Dyn.Resource(corev1.SchemeGroupVersion.WithResource("persistentvolumeclaims")).Namespace(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	return JSON(dig(u.Object, "spec.accessModes")), nil
}

// The provider's profiles in these tests: a CPU one and a GPU one that
// sets each GPU setting (limit, toleration, node selector) and a volume.
func providerCPUProfile() map[string]any {
	half, two := 0.5, 2.0
	return Profile{Slug: "cpu", DisplayName: "CPU (provider)", CPUGuarantee: &half, CPULimit: &two, MemGuarantee: "1G", MemLimit: "2G"}.Dict()
}

func providerGPUProfile() map[string]any {
	one, four := 1.0, 4.0
	return Profile{Slug: "gpu", DisplayName: "GPU (provider)", CPUGuarantee: &one, CPULimit: &four, MemGuarantee: "8G", GPU: &GPU{Count: 1},
		NodeSelector: map[string]string{"nvidia.com/gpu.present": "true"},
		Tolerations:  []Toleration{{Key: "nvidia.com/gpu", Operator: "Exists", Effect: "NoSchedule"}},
		Volumes:      []Volume{{Name: "datasets", MountPath: "/datasets", ReadOnly: true, ClaimName: "datasets"}}}.Dict()
}

// profileCase is a profile a user spawns on, and what its pod shows.
type profileCase struct {
	slug     string
	cpuLimit string // the pod's CPU limit, which tells the profile applied
	gpu      bool   // the provider's GPU profile
}

// spawnsOf is one hubUser per user kind and profile, keyed user/profile.
func spawnsOf(profiles []profileCase, authState map[string]any) []hubUser {
	var out []hubUser
	for _, u := range everyKindOfUser {
		for _, p := range profiles {
			out = append(out, hubUser{Name: u.user, ID: u.user + "/" + p.slug, Profile: p.slug, AuthState: authState})
		}
	}
	return out
}

// checkEveryKindOfUser asserts, for each user kind on each profile, the
// claim KubeSpawner renders and the pod it mounts it in: the claim's name
// and access mode, the home mount, co-location for the legacy user only,
// the profile's GPU settings, and the volumes the hub's own configuration
// adds (ownVolumes, ownMounts: mountPath -> volume). Then the API server
// accepts every claim and pod (server-side dry run), and with the claims
// the home storage left in the cluster each user's server gets a home of
// the access mode its kind needs.
func checkEveryKindOfUser(t *testing.T, got map[string]hubSpawn, profiles []profileCase, label string,
	mountPath func(user string) string, ownVolumes []string, ownMounts map[string]string) {
	t.Helper()
	gpuToleration := `{"effect":"NoSchedule","key":"nvidia.com/gpu","operator":"Exists"}`
	for _, u := range everyKindOfUser {
		for _, p := range profiles {
			id := u.user + "/" + p.slug
			s, ok := got[id]
			if !ok {
				t.Fatalf("no spawn of %s", id)
			}
			where := id + " (" + u.kind + ")"
			if !slices.Contains(s.Offered, p.slug) {
				t.Errorf("%s: %s is not offered: %v", where, p.slug, s.Offered)
			}
			// The claim.
			if s.PVCName != u.claim || dig(s.PVC, "metadata.name") != u.claim {
				t.Errorf("%s: KubeSpawner ensures claim %q (%v), want %s", where, s.PVCName, dig(s.PVC, "metadata.name"), u.claim)
			}
			if modes := JSON(dig(s.PVC, "spec.accessModes")); modes != `["ReadWriteMany"]` {
				t.Errorf("%s: KubeSpawner would create %s claims, want ReadWriteMany", where, modes)
			}
			// The pod.
			f := factsOf(t, s.Pod)
			if f.Mounts[mountPath(u.user)] != "home" || dig(f.Volumes["home"], "persistentVolumeClaim.claimName") != u.claim {
				t.Errorf("%s: home mount at %s is %q, home volume %v; want claim %s", where, mountPath(u.user), f.Mounts[mountPath(u.user)], f.Volumes["home"], u.claim)
			}
			for name, v := range f.Volumes {
				if c := str(dig(v, "persistentVolumeClaim.claimName")); strings.HasPrefix(c, "claim-") || strings.HasPrefix(c, "home-") {
					if name != "home" || c != u.claim {
						t.Errorf("%s: volume %s mounts home claim %s; only home may, on %s", where, name, c, u.claim)
					}
				}
			}
			terms := f.ColocationTerms(label)
			if u.pinned {
				if f.Labels[label] != u.user || JSON(terms) != JSON([]string{JSON([]string{u.user})}) {
					t.Errorf("%s: not pinned: label %q, terms %v", where, f.Labels[label], terms)
				}
			} else if _, ok := f.Labels[label]; ok || len(terms) > 0 {
				t.Errorf("%s: pinned although its home is ReadWriteMany: label %q, terms %v", where, f.Labels[label], terms)
			}
			// The profile's resources and GPU settings.
			spec, _ := s.Pod["spec"].(map[string]any)
			main := list(spec["containers"])[0]
			// (KubeSpawner writes the CPU as a number, the API server reads it as a quantity.)
			if got, err := resource.ParseQuantity(fmt.Sprint(dig(main, "resources.limits.cpu"))); err != nil || got.Cmp(resource.MustParse(p.cpuLimit)) != 0 {
				t.Errorf("%s: CPU limit %v, want %s (the profile's)", where, dig(main, "resources.limits.cpu"), p.cpuLimit)
			}
			limits, _ := dig(main, "resources.limits").(map[string]any)
			requests, _ := dig(main, "resources.requests").(map[string]any)
			gpuLimit, gpuRequest := limits["nvidia.com/gpu"], requests["nvidia.com/gpu"]
			var tolerations []string
			for _, tol := range list(spec["tolerations"]) {
				tolerations = append(tolerations, JSON(tol))
			}
			selector, _ := spec["nodeSelector"].(map[string]any)
			_, datasets := f.Volumes["datasets"]
			if p.gpu {
				if gpuLimit != "1" || gpuRequest != "1" {
					t.Errorf("%s: nvidia.com/gpu limit %v request %v, want 1", where, gpuLimit, gpuRequest)
				}
				if !slices.Contains(tolerations, gpuToleration) {
					t.Errorf("%s: tolerations %v lack the profile's %s", where, tolerations, gpuToleration)
				}
				if selector["nvidia.com/gpu.present"] != "true" {
					t.Errorf("%s: node selector %v lacks the profile's", where, selector)
				}
				if !datasets || f.Mounts["/datasets"] != "datasets" {
					t.Errorf("%s: the profile's datasets volume is missing: %v", where, f.Mounts)
				}
			} else if gpuLimit != nil || gpuRequest != nil || slices.Contains(tolerations, gpuToleration) || selector["nvidia.com/gpu.present"] != nil || datasets {
				t.Errorf("%s: the GPU profile's settings leaked: limits %v, tolerations %v, node selector %v, datasets %v", where, limits, tolerations, selector, datasets)
			}
			// The hub's own volumes.
			for _, v := range ownVolumes {
				if _, ok := f.Volumes[v]; !ok {
					t.Errorf("%s: the hub's volume %s was dropped; volumes %v", where, v, sortedKeys(f.Volumes))
				}
			}
			for path, v := range ownMounts {
				if f.Mounts[path] != v {
					t.Errorf("%s: the hub's mount of %s at %s was dropped: %v", where, v, path, f.Mounts)
				}
			}
		}
	}

	t.Run("dry_run", func(t *testing.T) {
		s := testAPIServer(t)
		dryRunSpawns(t, s, got)
		// With the claims the home storage left: KubeSpawner creates the
		// claim it renders and, when that name exists (409), keeps the
		// claim that is there. Each user's home then has the access mode
		// its kind needs: ReadWriteOnce only for the pinned legacy user.
		live := s.Namespace()
		for _, name := range sortedKeys(liveClaims) {
			if err := s.Create(live, claim(name, liveClaims[name])); err != nil {
				t.Fatal(err)
			}
		}
		for _, u := range everyKindOfUser {
			for _, p := range profiles {
				sp := got[u.user+"/"+p.slug]
				where := fmt.Sprintf("%s/%s (%s)", u.user, p.slug, u.kind)
				// The home the user's server gets: the claim KubeSpawner
				// creates, or the one that is there under its name.
				home := JSON(dig(sp.PVC, "spec.accessModes"))
				err := s.DryRun(live, withKind(sp.PVC, "PersistentVolumeClaim"))
				switch {
				case u.live == "" && err == nil:
				case u.live != "" && apierrors.IsAlreadyExists(err):
					var gerr error
					if home, gerr = claimModes(s, live, str(dig(sp.PVC, "metadata.name"))); gerr != nil {
						t.Fatal(gerr)
					}
				default:
					t.Errorf("%s: creating the claim %s: %v", where, u.claim, err)
				}
				if want := JSON([]any{cmp.Or(string(u.live), claims.RWX)}); home != want {
					t.Errorf("%s: the home claim %v is %s, want %s", where, dig(sp.PVC, "metadata.name"), home, want)
				}
				if (home == JSON([]any{claims.RWO})) != u.pinned {
					t.Errorf("%s: the home claim %v is %s, but pinned = %v", where, dig(sp.PVC, "metadata.name"), home, u.pinned)
				}
				if err := s.DryRun(live, withKind(sp.Pod, "Pod")); err != nil {
					t.Errorf("%s: the API server rejects the pod beside the live claims: %v", where, err)
				}
			}
		}
	})
}

// Every kind of user on every profile of the data-science-pack's hub: the
// pack's own profiles (a per-user callable) and the provider's.
func TestSpawnerCompose_everyKindOfUserWithThePack(t *testing.T) {
	const label = "nebari.dev/colocate-user"
	home := homeSettings(claims.RWX)
	home["slug_scheme"] = string(kubespawner.SchemeEscape)
	r := mustBuild(t, Config{Home: home, ColocationLabel: label,
		Profiles: []map[string]any{providerCPUProfile(), providerGPUProfile()}})

	pack := yamlRef(t, "nebari-data-science-pack", "values.yaml")
	sub, _ := pack["jupyterhub"].(map[string]any)
	values := mergeValues(z2jhValues(t), sub)
	values = mergeValues(values, map[string]any{"hub": map[string]any{"extraConfig": map[string]any{"aa-earlier-colocation": earlierHook(label)}}})
	values = mergeValues(values, helmValuesOf(t, r))
	configD := t.TempDir()
	packConfigD(t, configD)

	profiles := []profileCase{
		{slug: "small-instance", cpuLimit: "1"}, {slug: "medium-instance", cpuLimit: "4"}, // the pack's
		{slug: "cpu", cpuLimit: "2"}, {slug: "gpu", cpuLimit: "4", gpu: true}, // the provider's
	}
	// The pack's workspace claims (its hook creates one when missing, as
	// ReadWriteOnce, which would pin the user): ReadWriteMany here, so that
	// only the home decides.
	api := seedEveryKindOfUser(t)
	for _, u := range everyKindOfUser {
		seedClaim(t, acctest.Cluster(t).Admin(), api.Namespace, "nebi-workspaces-"+u.user, corev1.ReadWriteMany, nil, nil)
	}
	got := runHub(t, api, values, configD, spawnsOf(profiles, map[string]any{"groups": []any{"/data-team"}}))
	checkEveryKindOfUser(t, got, profiles, label, func(string) string { return "/home/jovyan" },
		[]string{"shared", "nebi-bin", "nebi-config", "singleuser-config"},
		map[string]string{"/usr/local/bin/nebi": "nebi-bin", "/etc/nebi/config.yaml": "nebi-config", "/shared/data-team": "shared"})
}

// Every kind of user on every profile of a plain zero-to-jupyterhub hub:
// the deployer's static profileList and the provider's profiles, the home
// at home_mount_path.
func TestSpawnerCompose_everyKindOfUserWithZ2jh(t *testing.T) {
	home := homeSettings(claims.RWX)
	r := mustBuild(t, Config{Home: home, HomeMountPath: "/home/{username}",
		Profiles: []map[string]any{providerCPUProfile(), providerGPUProfile()}})
	values := mergeValues(z2jhValues(t), map[string]any{"singleuser": map[string]any{
		"cpu": map[string]any{"limit": 1},
		"storage": map[string]any{
			"extraVolumes":      map[string]any{"scratch": map[string]any{"name": "scratch", "emptyDir": map[string]any{}}},
			"extraVolumeMounts": map[string]any{"scratch": map[string]any{"name": "scratch", "mountPath": "/scratch"}},
		},
		"profileList": []any{map[string]any{"slug": "default", "display_name": "Default", "default": true}},
	}})
	values = mergeValues(values, helmValuesOf(t, r))
	profiles := []profileCase{
		{slug: "default", cpuLimit: "1"},                                      // the deployer's
		{slug: "cpu", cpuLimit: "2"}, {slug: "gpu", cpuLimit: "4", gpu: true}, // the provider's
	}
	got := runHub(t, seedEveryKindOfUser(t), values, t.TempDir(), spawnsOf(profiles, nil))
	checkEveryKindOfUser(t, got, profiles, DefaultColocationLabel, func(u string) string { return "/home/" + u },
		[]string{"scratch"}, map[string]string{"/scratch": "scratch"})
}

// Every kind of user on a z2jh hub that mounts the ConfigMap's files into
// jupyterhub_config.d instead of taking helm_values' hub.extraFiles (what
// the plan advises when helm_values is too large): the hub loads the
// compressed document from there, and each kind of user mounts the same
// claim as with hub.extraFiles.
func TestSpawnerCompose_everyKindOfUserFromTheConfigMap(t *testing.T) {
	home := homeSettings(claims.RWX)
	r := mustBuild(t, Config{Home: home,
		Profiles: []map[string]any{providerCPUProfile(), providerGPUProfile()}})
	own := helmValuesOf(t, r)
	delete(own["hub"].(map[string]any), "extraFiles")
	values := mergeValues(z2jhValues(t), map[string]any{"singleuser": map[string]any{"cpu": map[string]any{"limit": 1}}})
	values = mergeValues(values, own)
	// The ConfigMap's two files, as a subPath mount of each puts them in
	// jupyterhub_config.d (here configD, which the file names as its
	// fallback directory).
	configD := t.TempDir()
	f := Render(r)
	for name, data := range map[string][]byte{
		PythonFile:   []byte(strings.ReplaceAll(f.Python, JSON(ConfigDir), JSON(configD))),
		DocumentFile: f.Document,
	} {
		if err := os.WriteFile(filepath.Join(configD, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	profiles := []profileCase{{slug: "cpu", cpuLimit: "2"}, {slug: "gpu", cpuLimit: "4", gpu: true}}
	got := hubtest.RunHub(t, seedEveryKindOfUser(t), values, configD, "", spawnsOf(profiles, nil))
	checkEveryKindOfUser(t, got, profiles, DefaultColocationLabel, func(string) string { return "/home/jovyan" }, nil, nil)
}
