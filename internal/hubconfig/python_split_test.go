package hubconfig

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/acctest"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/claims"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/hubtest"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/kubespawner"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/migration"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/safety"
)

// seedSplitClaim creates user's claim of a split from home-nfs whose
// record names volume, naming volume volumeName (the split names the
// volume to come when it makes the claim); bound: Bound, else Pending, as
// before the binder bound it. No binder runs here: the status is written
// as the binder would.
func seedSplitClaim(t testing.TB, cs kubernetes.Interface, ns, user, volume, volumeName string, bound bool) *corev1.PersistentVolumeClaim {
	t.Helper()
	name := "claim-" + user
	rec := migration.SplitRecord{User: user, Namespace: ns, Claim: name, Shared: "home-nfs", SharedUID: "s1", Directory: "home/" + user, Volume: volume}
	return seedBoundClaim(t, cs, ns, name, map[string]string{migration.SplitAnnotation: rec.Encode()}, volumeName, bound)
}

// deleteHeld deletes c while a finalizer holds it: it stays, being
// deleted, until the test ends.
func deleteHeld(t testing.TB, cs kubernetes.Interface, c *corev1.PersistentVolumeClaim) {
	t.Helper()
	ctx := context.Background()
	c = c.DeepCopy()
	c.Finalizers = append(c.Finalizers, "example.org/hold")
	if _, err := cs.CoreV1().PersistentVolumeClaims(c.Namespace).Update(ctx, c, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cs.CoreV1().PersistentVolumeClaims(c.Namespace).Delete(ctx, c.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = cs.CoreV1().PersistentVolumeClaims(c.Namespace).Patch(context.Background(), c.Name, "application/merge-patch+json", []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
	})
}

// recordMerge gives c a merge record into user's directory of home-nfs
// whose claim_uid is recordUID ("": c's UID), or record itself when it is
// not ""; and the merged mark when mark is not "".
func recordMerge(t testing.TB, cs kubernetes.Interface, c *corev1.PersistentVolumeClaim, user, recordUID, record, mark string) *corev1.PersistentVolumeClaim {
	t.Helper()
	if record == "" {
		rec := migration.MergeRecord{User: user, Namespace: c.Namespace, Claim: c.Name, ClaimUID: cmp.Or(recordUID, string(c.UID)), Shared: "home-nfs", SharedUID: "s1", Directory: "home/" + user}
		record = rec.Encode()
	}
	c = annotateClaim(t, cs, c, migration.MergeAnnotation, record)
	if mark != "" {
		c = annotateClaim(t, cs, c, migration.MergedAnnotation, mark)
	}
	return c
}

// seedBoundClaim creates a ReadWriteOnce claim naming volume volumeName,
// Bound when bound.
func seedBoundClaim(t testing.TB, cs kubernetes.Interface, ns, name string, ann map[string]string, volumeName string, bound bool) *corev1.PersistentVolumeClaim {
	t.Helper()
	class := "longhorn"
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Annotations: ann},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, StorageClassName: &class,
			VolumeName: volumeName,
			Resources:  corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("10Gi")}}},
	}
	ctx := context.Background()
	out, err := cs.CoreV1().PersistentVolumeClaims(ns).Create(ctx, pvc, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !bound {
		return out
	}
	out.Status.Phase = corev1.ClaimBound
	out.Status.AccessModes = out.Spec.AccessModes
	out.Status.Capacity = out.Spec.Resources.Requests
	if out, err = cs.CoreV1().PersistentVolumeClaims(ns).UpdateStatus(ctx, out, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	return out
}

// splitValues are the chart's values with the transition's helm_values,
// and a sidecar that mounts the home volume's directory "notebooks" (of
// the user's claim, or of their directory of the shared claim).
func splitValues(t *testing.T, r Result, more map[string]any) map[string]any {
	t.Helper()
	sidecar := map[string]any{"singleuser": map[string]any{"extraContainers": []any{map[string]any{"name": "files", "image": "files:1",
		"volumeMounts": []any{map[string]any{"name": "home", "mountPath": "/srv/notebooks", "subPath": "notebooks"}}}}}}
	return mergeValues(mergeValues(mergeValues(z2jhValues(t), sidecar), more), helmValuesOf(t, r))
}

// splitPod is what assertions read of a spawn's pod.
type splitPod struct {
	homeClaim, homeSub, sidecarSub, initDir string
	sharedVolumes                           int // volumes of home-nfs
	pinned                                  bool
}

func splitPodOf(t *testing.T, id string, s hubSpawn) splitPod {
	t.Helper()
	pod, err := s.PodObject()
	if err != nil {
		t.Fatalf("%s: %v", id, err)
	}
	var p splitPod
	for _, v := range pod.Spec.Volumes {
		if v.PersistentVolumeClaim == nil {
			continue
		}
		if v.Name == kubespawner.HomeVolumeName {
			p.homeClaim = v.PersistentVolumeClaim.ClaimName
		}
		if v.PersistentVolumeClaim.ClaimName == "home-nfs" {
			p.sharedVolumes++
		}
	}
	for _, m := range pod.Spec.Containers[0].VolumeMounts {
		if m.Name == kubespawner.HomeVolumeName {
			p.homeSub = m.SubPath
		}
	}
	for _, c := range pod.Spec.Containers[1:] {
		for _, m := range c.VolumeMounts {
			if c.Name == "files" && m.Name == kubespawner.HomeVolumeName {
				p.sidecarSub = m.SubPath
			}
		}
	}
	for i, c := range pod.Spec.InitContainers {
		if c.Name != kubespawner.SharedInitContainer {
			continue
		}
		if i != 0 {
			t.Errorf("%s: the init container that makes the directory runs at position %d, not first", id, i)
		}
		for _, e := range c.Env {
			if e.Name == "HOME_DIRECTORY" {
				p.initDir = e.Value
			}
		}
	}
	_, p.pinned = pod.Labels[DefaultColocationLabel]
	return p
}

// Real KubeSpawner while homes move out of the shared layout: each spawn
// is decided from the server's claim as the API server has it then. A
// split claim Bound to its record's volume, and a claim without a record,
// are mounted (as the per-user layout mounts them, pinned to a node as
// ReadWriteOnce); with no claim the home is still the user's directory of
// the shared claim, made by the init container, and KubeSpawner renders
// no claim; a split claim not Bound, Bound to another volume or being
// deleted refuses the spawn (the home is being moved).
func TestSpawnerSpawn_splitFromShared(t *testing.T) {
	r := mustBuild(t, Config{Home: settingsOf(t, splitHome())})
	if r.Settings["storage_pvc_ensure"] != false || r.Settings["delete_pvc"] != false {
		t.Fatalf("storage_pvc_ensure %v, delete_pvc %v", r.Settings["storage_pvc_ensure"], r.Settings["delete_pvc"])
	}
	// Earlier configuration (the chart's storage type "static") mounts the
	// shared claim whole; it may not reach a server.
	static := map[string]any{"singleuser": map[string]any{"storage": map[string]any{"type": "static",
		"static": map[string]any{"pvcName": "home-nfs", "subPath": "{username}"},
	}}}
	values := splitValues(t, r, static)
	api := seededHub(t, nil)
	ns := api.Namespace
	cs := acctest.Cluster(t).Admin()
	seedClaim(t, cs, ns, "home-nfs", corev1.ReadWriteMany, nil, nil)
	seedSplitClaim(t, cs, ns, "alice", "vol-alice", "vol-alice", true)  // moved
	seedSplitClaim(t, cs, ns, "carol", "vol-carol", "vol-carol", false) // being moved: Pending
	seedSplitClaim(t, cs, ns, "dave", "vol-dave", "vol-other", true)    // Bound to another volume
	seedBoundClaim(t, cs, ns, "claim-erin", nil, "vol-erin", true)      // a claim of her own, no split
	deleteHeld(t, cs, seedSplitClaim(t, cs, ns, "frank", "vol-frank", "vol-frank", true))

	users := []hubUser{{Name: "alice"}, {Name: "bob"}, {Name: "Ada.Lovelace@Example.org"}, {Name: "carol"}, {Name: "dave"}, {Name: "erin"}, {Name: "frank"}}
	got := runHub(t, api, values, t.TempDir(), users)

	for _, id := range []string{"alice", "erin"} {
		s := got[id]
		if s.Refused != "" {
			t.Errorf("%s: refused %s (%s)", id, s.Refused, s.RefusedLog)
			continue
		}
		p := splitPodOf(t, id, s)
		want := splitPod{homeClaim: "claim-" + id, sidecarSub: "notebooks", pinned: true}
		if p != want {
			t.Errorf("%s: pod %+v, want %+v", id, p, want)
		}
		if s.PVC != nil {
			t.Errorf("%s: KubeSpawner rendered a claim: %v", id, s.PVC)
		}
	}
	for _, id := range []string{"bob", "Ada.Lovelace@Example.org"} {
		s := got[id]
		if s.Refused != "" {
			t.Errorf("%s: refused %s (%s)", id, s.Refused, s.RefusedLog)
			continue
		}
		dir, err := kubespawner.Expand("home/{username}", id, "", kubespawner.SchemeSafe)
		if err != nil {
			t.Fatal(err)
		}
		p := splitPodOf(t, id, s)
		// Not pinned: the shared claim mounted is ReadWriteMany, though
		// new claims are ReadWriteOnce.
		want := splitPod{homeClaim: "home-nfs", homeSub: dir, sidecarSub: dir + "/notebooks", initDir: dir, sharedVolumes: 1}
		if p != want {
			t.Errorf("%s: pod %+v, want %+v", id, p, want)
		}
		if s.PVC != nil {
			t.Errorf("%s: KubeSpawner rendered a claim: %v", id, s.PVC)
		}
		// The claim, the copies of its name (a copy would be the home), the
		// shared claim's mode.
		if s.HookRequests > 3 {
			t.Errorf("%s: the hooks made %d API requests, want at most 3", id, s.HookRequests)
		}
	}
	for _, id := range []string{"carol", "dave", "frank"} {
		s := got[id]
		if s.Pod != nil || s.Refused != moving {
			t.Errorf("%s: refused %q (%s), pod %v; want the home being moved", id, s.Refused, s.RefusedLog, s.Pod != nil)
		}
	}
	agreesWithHubHomes(t, cs, ns, got)
	for _, id := range []string{"bob", "Ada.Lovelace@Example.org"} {
		name, _ := kubespawner.Expand("claim-{username}", id, "", kubespawner.SchemeSafe)
		if _, err := cs.CoreV1().PersistentVolumeClaims(ns).Get(context.Background(), name, metav1.GetOptions{}); err == nil {
			t.Errorf("%s: claim %s was made", id, name)
		}
	}

	t.Run("dry_run", func(t *testing.T) {
		s := testAPIServer(t)
		pods := map[string]hubSpawn{}
		for id, sp := range got {
			if sp.Pod != nil {
				pods[id] = hubSpawn{Pod: sp.Pod}
			}
		}
		for _, id := range hubtest.SortedKeys(pods) {
			if err := s.DryRun(s.Namespace(), withKind(pods[id].Pod, "Pod")); err != nil {
				t.Errorf("%s: the API server rejects the pod: %v", id, err)
			}
		}
	})
}

// agreesWithHubHomes checks that safety.HubHomes, what the
// jupyter_home_claims data source reports, decides every spawn of got as
// the hub file did, from the claims of ns as they are now: a refused
// spawn is refused, a claim mounted is the claim, a directory the
// directory of home-nfs.
func agreesWithHubHomes(t *testing.T, cs kubernetes.Interface, ns string, got map[string]hubSpawn) {
	t.Helper()
	list, err := cs.CoreV1().PersistentVolumeClaims(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var live []claims.Claim
	var shared *claims.Claim
	for _, p := range list.Items {
		c := claims.Claim{Name: p.Name, Namespace: p.Namespace, UID: string(p.UID), Labels: p.Labels, Annotations: p.Annotations,
			Phase: string(p.Status.Phase), VolumeName: p.Spec.VolumeName, Deleting: p.DeletionTimestamp != nil}
		live = append(live, c)
		if c.Name == "home-nfs" {
			shared = &c
		}
	}
	h := splitHome()
	cfg := safety.Config{Namespace: ns, NameTemplate: h.NameTemplate, Scheme: h.Scheme,
		SplitFrom: &safety.SharedHome{Claim: h.SplitFrom.Claim, SubPathTemplate: h.SplitFrom.SubPathTemplate}}
	users := hubtest.SortedKeys(got)
	homes := safety.HubHomes(cfg, users, live, shared)
	for _, u := range users {
		s, home := got[u], homes[u]
		if (s.Refused != "") != (home.Kind == safety.HomeRefused) {
			t.Errorf("%s: the hub refused %q (%s); the data source says %+v", u, s.Refused, s.RefusedLog, home)
			continue
		}
		if s.Refused != "" {
			continue
		}
		p := splitPodOf(t, u, s)
		want := splitPod{homeClaim: home.Claim}
		if home.Kind == safety.HomeDirectory {
			want.homeSub = home.SubPath
		}
		if p.homeClaim != want.homeClaim || p.homeSub != want.homeSub {
			t.Errorf("%s: the hub mounts %s %q; the data source says %+v", u, p.homeClaim, p.homeSub, home)
		}
	}
}

// moving is what a user is told while their home is being moved.
const moving = "Your home directory is being moved to new storage. Try again in a few minutes; if this lasts, tell your administrator."

// Whatever configuration adds a mount of the whole shared claim (here an
// earlier profile's volumes, mounted by the server or by a sidecar), the
// hub refuses the spawn, for a user whose home is still on the shared
// claim and for one whose home moved to a claim of their own.
func TestSpawnerSpawn_splitFromSharedRefusesWholeClaim(t *testing.T) {
	r := mustBuild(t, Config{Home: settingsOf(t, splitHome())})
	everything := map[string]any{"name": "everything", "persistentVolumeClaim": map[string]any{"claimName": "home-nfs"}}
	homeVolume := map[string]any{"name": "home", "persistentVolumeClaim": map[string]any{"claimName": "{pvc_name}"}}
	homeMount := map[string]any{"name": "home", "mountPath": DefaultHomeMountPath}
	profiles := map[string]any{"singleuser": map[string]any{"profileList": []any{
		map[string]any{"display_name": "All homes", "slug": "all", "kubespawner_override": map[string]any{
			"volumes":       []any{homeVolume, everything},
			"volume_mounts": []any{homeMount, map[string]any{"name": "everything", "mountPath": "/mnt/everything"}},
		}},
		map[string]any{"display_name": "All homes, by a sidecar", "slug": "sidecar", "kubespawner_override": map[string]any{
			"volumes": []any{homeVolume, everything},
			"extra_containers": []any{map[string]any{"name": "peek", "image": "peek:1",
				"volumeMounts": []any{map[string]any{"name": "everything", "mountPath": "/mnt/everything"}}}},
		}},
		map[string]any{"display_name": "Plain", "slug": "plain"},
	}}}
	api := seededHub(t, nil)
	cs := acctest.Cluster(t).Admin()
	seedClaim(t, cs, api.Namespace, "home-nfs", corev1.ReadWriteMany, nil, nil)
	seedSplitClaim(t, cs, api.Namespace, "alice", "vol-alice", "vol-alice", true)
	var users []hubUser
	for _, name := range []string{"alice", "bob"} {
		for _, p := range []string{"all", "sidecar", "plain"} {
			users = append(users, hubUser{Name: name, Profile: p, ID: name + "/" + p})
		}
	}
	got := runHub(t, api, splitValues(t, r, profiles), t.TempDir(), users)
	for _, u := range users {
		s := got[u.ID]
		if u.Profile == "plain" {
			if s.Refused != "" || s.Pod == nil {
				t.Errorf("%s: refused %q (%s)", u.ID, s.Refused, s.RefusedLog)
			}
			continue
		}
		if s.Pod != nil || !strings.Contains(s.RefusedLog, "only the user's directory") || !strings.Contains(s.Refused, "every user's home") {
			t.Errorf("%s: refused %q (%s), pod %v", u.ID, s.Refused, s.RefusedLog, s.Pod != nil)
		}
	}
}

// One server's spawner spawns twice in a hub that keeps running: first
// with no claim (its home is its directory of the shared claim), then
// after its split claim was made and bound. The second pod mounts the
// claim: nothing of the first spawn's fallback stayed on the spawner.
func TestSpawnerSpawn_splitFromSharedSameSpawnerTwice(t *testing.T) {
	r := mustBuild(t, Config{Home: settingsOf(t, splitHome())})
	api := seededHub(t, nil)
	cs := acctest.Cluster(t).Admin()
	seedClaim(t, cs, api.Namespace, "home-nfs", corev1.ReadWriteMany, nil, nil)
	hub := hubtest.StartHub(t, api, splitValues(t, r, nil), t.TempDir(), FilesDir)
	gina := []hubUser{{Name: "gina", Keep: true}}
	first, err := hub.Spawn(gina)
	if err != nil {
		t.Fatal(err)
	}
	want := splitPod{homeClaim: "home-nfs", homeSub: "home/gina", sidecarSub: "home/gina/notebooks", initDir: "home/gina", sharedVolumes: 1}
	if p := splitPodOf(t, "gina (first)", first["gina"]); p != want {
		t.Fatalf("first spawn: pod %+v, want %+v", p, want)
	}
	seedSplitClaim(t, cs, api.Namespace, "gina", "vol-gina", "vol-gina", true)
	second, err := hub.Spawn(gina)
	if err != nil {
		t.Fatal(err)
	}
	want = splitPod{homeClaim: "claim-gina", sidecarSub: "notebooks", pinned: true}
	if p := splitPodOf(t, "gina (second)", second["gina"]); p != want {
		t.Errorf("second spawn: pod %+v, want %+v", p, want)
	}
}

// Copies while homes move out of the shared layout: the hub decides a
// missing claim as the per-user layout does (and as the plan does, which
// takes an orphaned copy for the user's home, "copied") before it falls
// back to the user's directory of the shared claim, which holds their
// home from before the move and the copy. hana's claim was copied to
// home-hana and switched, then deleted: she mounts the copy, never her
// stale directory. ivo's claim is gone and its copy home-ivo was never
// switched to: the spawn is refused, as for the per-user layout's ivy.
// jon has no claim and no copy: his directory. A split claim is checked
// before its copy record is followed: kai's split claim, not yet Bound,
// with a copy record at target-created (its home is the claim itself
// until the copy runs), is refused, not mounted.
func TestSpawnerSpawn_splitFromSharedCopies(t *testing.T) {
	r := mustBuild(t, Config{Home: settingsOf(t, splitHome())})
	api := seededHub(t, nil)
	ns := api.Namespace
	cs := acctest.Cluster(t).Admin()
	seedClaim(t, cs, ns, "home-nfs", corev1.ReadWriteMany, nil, nil)
	seedSwitchedCopy(t, cs, ns, "hana", "claim-hana", "home-hana")
	deleteClaim(t, cs, ns, "claim-hana")
	seedClaim(t, cs, ns, "home-ivo", corev1.ReadWriteMany, map[string]string{migration.CopyOfLabel: migration.CopyOfLabelValue("claim-ivo")},
		map[string]string{migration.CopyOfAnnotation: "claim-ivo"})
	kai := seedSplitClaim(t, cs, ns, "kai", "vol-kai", "vol-kai", false)
	annotateClaim(t, cs, kai, migration.CopyAnnotation, migration.CopyRecord{Step: migration.StepTargetCreated, User: "kai", Target: "home-kai", To: claims.RWX}.Encode())

	got := runHub(t, api, splitValues(t, r, nil), t.TempDir(), []hubUser{{Name: "hana"}, {Name: "ivo"}, {Name: "jon"}, {Name: "kai"}})

	hana := got["hana"]
	if hana.Refused != "" {
		t.Errorf("hana: refused %s (%s)", hana.Refused, hana.RefusedLog)
	} else {
		// Not pinned: the copy is ReadWriteMany.
		want := splitPod{homeClaim: "home-hana", sidecarSub: "notebooks"}
		if p := splitPodOf(t, "hana", hana); p != want || hana.PVCName != "home-hana" {
			t.Errorf("hana: KubeSpawner's claim %s, pod %+v, want home-hana, %+v", hana.PVCName, p, want)
		}
	}
	// The claim and the copies of its name: what the per-user layout asks.
	if hana.HookRequests > 2 {
		t.Errorf("hana: the hooks made %d API requests, want at most 2", hana.HookRequests)
	}
	if s := got["ivo"]; s.Pod != nil || s.Refused != moving || !strings.Contains(s.RefusedLog, "not switched") {
		t.Errorf("ivo: refused %q (%s), pod %v; want the home being moved", s.Refused, s.RefusedLog, s.Pod != nil)
	}
	if s := got["kai"]; s.Pod != nil || s.Refused != moving || !strings.Contains(s.RefusedLog, "not Bound") {
		t.Errorf("kai: refused %q (%s), pod %v; want the split not finished", s.Refused, s.RefusedLog, s.Pod != nil)
	}
	jon := got["jon"]
	if jon.Refused != "" {
		t.Errorf("jon: refused %s (%s)", jon.Refused, jon.RefusedLog)
	} else {
		want := splitPod{homeClaim: "home-nfs", homeSub: "home/jon", sidecarSub: "home/jon/notebooks", initDir: "home/jon", sharedVolumes: 1}
		if p := splitPodOf(t, "jon", jon); p != want {
			t.Errorf("jon: pod %+v, want %+v", p, want)
		}
	}
	// The claim, the copies of its name, the shared claim's mode.
	if jon.HookRequests > 3 {
		t.Errorf("jon: the hooks made %d API requests, want at most 3", jon.HookRequests)
	}
	agreesWithHubHomes(t, cs, ns, got)
	for _, name := range []string{"claim-hana", "claim-ivo", "claim-jon"} {
		if _, err := cs.CoreV1().PersistentVolumeClaims(ns).Get(context.Background(), name, metav1.GetOptions{}); err == nil {
			t.Errorf("claim %s was made", name)
		}
	}
}

// Configuration loaded after the provider's file replaces its
// pre_spawn_hook: the modify_pod_hook decides the home itself, and a pod
// made on the server's claim mounts the home decided, not the claim
// KubeSpawner was told before. hana's claim is gone and lia's exists, both
// copied and switched: each pod mounts the copy; jon's, never copied and
// missing, mounts his directory.
func TestSpawnerSpawn_splitFromSharedDecidedByThePodHook(t *testing.T) {
	r := mustBuild(t, Config{Home: settingsOf(t, splitHome())})
	api := seededHub(t, nil)
	ns := api.Namespace
	cs := acctest.Cluster(t).Admin()
	seedClaim(t, cs, ns, "home-nfs", corev1.ReadWriteMany, nil, nil)
	seedSwitchedCopy(t, cs, ns, "hana", "claim-hana", "home-hana")
	deleteClaim(t, cs, ns, "claim-hana")
	seedSwitchedCopy(t, cs, ns, "lia", "claim-lia", "home-lia")
	later := map[string]any{"hub": map[string]any{"extraConfig": map[string]any{"zzz-later-hook": `
def _later_pre_spawn(spawner):
    spawner.environment = dict(spawner.environment, LATER_HOOK="1")

c.KubeSpawner.pre_spawn_hook = _later_pre_spawn
`}}}
	got := runHub(t, api, mergeValues(splitValues(t, r, nil), later), t.TempDir(), []hubUser{{Name: "hana"}, {Name: "lia"}, {Name: "jon"}})
	for id, want := range map[string]splitPod{
		"hana": {homeClaim: "home-hana", sidecarSub: "notebooks"},
		"lia":  {homeClaim: "home-lia", sidecarSub: "notebooks"},
		"jon":  {homeClaim: "home-nfs", homeSub: "home/jon", sidecarSub: "home/jon/notebooks", initDir: "home/jon", sharedVolumes: 1},
	} {
		s := got[id]
		if s.Refused != "" {
			t.Errorf("%s: refused %s (%s)", id, s.Refused, s.RefusedLog)
			continue
		}
		if p := splitPodOf(t, id, s); p != want || s.PVCName != want.homeClaim && id != "jon" {
			t.Errorf("%s: KubeSpawner's claim %s, pod %+v, want %+v", id, s.PVCName, p, want)
		}
		// The later hook ran, in place of the provider's.
		pod, err := s.PodObject()
		if err != nil {
			t.Fatal(err)
		}
		if !slices.ContainsFunc(pod.Spec.Containers[0].Env, func(e corev1.EnvVar) bool { return e.Name == "LATER_HOOK" && e.Value == "1" }) {
			t.Errorf("%s: the later pre_spawn_hook did not run: env %v", id, pod.Spec.Containers[0].Env)
		}
	}
}

// A claim of a move by copy is refused until it is marked copied with its
// own UID: a copy under way (mo), a mark of another claim of the name
// (ned: a claim made again) and a copy marked (ola), which is mounted.
// The same hub runs merges back into the shared claim: a claim merged
// (record and mark naming its UID) is stale, and the user's directory of
// the shared claim is the home, made by the init container (pam; also
// while the claim is being deleted, val; a switched copy merged, wes; the
// same with the source claim gone, zed); a merge not finished refuses the
// spawn, the copy may be running: a record without mark (rex), a mark of
// another UID (sam), a record naming another claim's UID (tia), a record
// that cannot be read (uma), a mark without record (vic). The merge is
// checked before the claim's other records: rex's claim is a finished
// split, yan's a split not yet Bound.
func TestSpawnerSpawn_splitFromSharedByCopy(t *testing.T) {
	r := mustBuild(t, Config{Home: settingsOf(t, splitHome())})
	api := seededHub(t, nil)
	ns := api.Namespace
	cs := acctest.Cluster(t).Admin()
	seedClaim(t, cs, ns, "home-nfs", corev1.ReadWriteMany, nil, nil)
	copyClaim := func(user string) *corev1.PersistentVolumeClaim {
		rec := migration.SplitRecord{User: user, Namespace: ns, Claim: "claim-" + user, Shared: "home-nfs", SharedUID: "s1", Directory: "home/" + user,
			Method: migration.MethodDirectoryCopy}
		return seedBoundClaim(t, cs, ns, "claim-"+user, map[string]string{migration.SplitAnnotation: rec.Encode()}, "pv-"+user, true)
	}
	copyClaim("mo")
	ned := copyClaim("ned")
	annotateClaim(t, cs, ned, migration.SplitCopiedAnnotation, "an-older-claims-uid")
	ola := copyClaim("ola")
	annotateClaim(t, cs, ola, migration.SplitCopiedAnnotation, string(ola.UID))
	merge := func(user, recordUID, record, mark string) *corev1.PersistentVolumeClaim {
		c := seedBoundClaim(t, cs, ns, "claim-"+user, nil, "pv-"+user, true)
		return recordMerge(t, cs, c, user, recordUID, record, cmp.Or(mark, string(c.UID)))
	}
	merge("pam", "", "", "")
	deleteHeld(t, cs, merge("val", "", "", ""))
	_, wes := seedSwitchedCopy(t, cs, ns, "wes", "claim-wes", "home-wes")
	recordMerge(t, cs, wes, "wes", "", "", string(wes.UID))
	_, zed := seedSwitchedCopy(t, cs, ns, "zed", "claim-zed", "home-zed")
	recordMerge(t, cs, zed, "zed", "", "", string(zed.UID))
	deleteClaim(t, cs, ns, "claim-zed")
	rex := seedSplitClaim(t, cs, ns, "rex", "vol-rex", "vol-rex", true)
	recordMerge(t, cs, rex, "rex", "", "", "")
	yan := seedSplitClaim(t, cs, ns, "yan", "vol-yan", "vol-yan", false)
	recordMerge(t, cs, yan, "yan", "", "", string(yan.UID))
	merge("sam", "", "", "an-older-claims-uid")
	merge("tia", "an-older-claims-uid", "", "")
	merge("uma", "", "{", "")
	vic := seedBoundClaim(t, cs, ns, "claim-vic", nil, "pv-vic", true)
	annotateClaim(t, cs, vic, migration.MergedAnnotation, string(vic.UID))

	var users []hubUser
	for _, u := range []string{"mo", "ned", "ola", "pam", "val", "wes", "zed", "yan", "rex", "sam", "tia", "uma", "vic"} {
		users = append(users, hubUser{Name: u})
	}
	got := runHub(t, api, splitValues(t, r, nil), t.TempDir(), users)
	for _, u := range []string{"mo", "ned"} {
		if s := got[u]; s.Pod != nil || s.Refused != moving || !strings.Contains(s.RefusedLog, "being copied") {
			t.Errorf("%s: refused %q (%s), pod %v; want the home being copied", u, s.Refused, s.RefusedLog, s.Pod != nil)
		}
	}
	for _, u := range []string{"rex", "sam", "tia", "uma", "vic"} {
		if s := got[u]; s.Pod != nil || s.Refused != moving || !strings.Contains(s.RefusedLog, "being merged") {
			t.Errorf("%s: refused %q (%s), pod %v; want the home being merged", u, s.Refused, s.RefusedLog, s.Pod != nil)
		}
	}
	for _, u := range []string{"pam", "val", "wes", "zed", "yan"} {
		s := got[u]
		if s.Refused != "" {
			t.Errorf("%s: refused %s (%s)", u, s.Refused, s.RefusedLog)
			continue
		}
		want := splitPod{homeClaim: "home-nfs", homeSub: "home/" + u, sidecarSub: "home/" + u + "/notebooks", initDir: "home/" + u, sharedVolumes: 1}
		if p := splitPodOf(t, u, s); p != want {
			t.Errorf("%s: pod %+v, want %+v", u, p, want)
		}
	}
	agreesWithHubHomes(t, cs, ns, got)
	s := got["ola"]
	if s.Refused != "" {
		t.Fatalf("ola: refused %s (%s)", s.Refused, s.RefusedLog)
	}
	if p := splitPodOf(t, "ola", s); p.homeClaim != "claim-ola" || p.sharedVolumes != 0 || p.initDir != "" {
		t.Errorf("ola: pod %+v, want claim-ola without the shared claim", p)
	}
}

// KubeSpawner remembers a copy it mounted that was deleted since: the
// claim the template names decides, as in the per-user layout. Its record
// switched to the missing copy refuses the spawn (pia: never the stale
// directory); with no such claim the directory is the home (quin), and
// when that claim was merged into the directory (ray: checked before its
// split record, not Bound, which would refuse the spawn).
func TestSpawnerSpawn_splitFromSharedRememberedCopyGone(t *testing.T) {
	r := mustBuild(t, Config{Home: settingsOf(t, splitHome())})
	api := seededHub(t, nil)
	ns := api.Namespace
	cs := acctest.Cluster(t).Admin()
	seedClaim(t, cs, ns, "home-nfs", corev1.ReadWriteMany, nil, nil)
	seedSwitchedCopy(t, cs, ns, "pia", "claim-pia", "home-pia")
	deleteClaim(t, cs, ns, "home-pia")
	remember := func(name string) map[string]any {
		return map[string]any{"pvc_name": name, "kubespawner_version": "7.0.0"}
	}
	ray := seedSplitClaim(t, cs, ns, "ray", "vol-ray", "vol-ray", false)
	recordMerge(t, cs, ray, "ray", "", "", string(ray.UID))
	got := runHub(t, api, splitValues(t, r, nil), t.TempDir(), []hubUser{{Name: "pia", State: remember("home-pia")}, {Name: "quin", State: remember("home-quin")},
		{Name: "ray", State: remember("home-ray")}})
	if s := got["pia"]; s.Pod != nil || s.Refused == "" || !strings.Contains(s.RefusedLog, "does not exist") {
		t.Errorf("pia: refused %q (%s), pod %v; want refused: the copy switched to is missing", s.Refused, s.RefusedLog, s.Pod != nil)
	}
	for _, u := range []string{"quin", "ray"} {
		s := got[u]
		if s.Refused != "" {
			t.Errorf("%s: refused %s (%s)", u, s.Refused, s.RefusedLog)
			continue
		}
		if p := splitPodOf(t, u, s); p.homeClaim != "home-nfs" || p.homeSub != "home/"+u || p.initDir != "home/"+u {
			t.Errorf("%s: pod %+v, want the directory home/%s", u, p, u)
		}
	}
}

// In the plain per-user layout too, a claim a move out of the shared layout
// made is mounted only once finished: a copy not marked (rae) is refused,
// a marked one (sol) mounted. A claim merged into the shared claim is
// stale and this layout mounts no directory: refused, saying the home
// moved to the shared storage (tom; a switched copy merged, xia; a claim
// merged before its copy record is followed, yul); a
// merge record without mark is mounted (una: the claim is still the home,
// no copy runs under this hub); a mark of another UID refuses the spawn
// (vic: a claim made again from a merged home).
func TestSpawnerSpawn_perUserLayoutChecksMovedClaims(t *testing.T) {
	home := kubespawner.HomeStorage{AccessMode: claims.RWX, StorageClass: "longhorn", Capacity: "10Gi", NameTemplate: "claim-{username}", Scheme: kubespawner.SchemeSafe}
	r := mustBuild(t, Config{Home: settingsOf(t, home)})
	api := seededHub(t, nil)
	ns := api.Namespace
	cs := acctest.Cluster(t).Admin()
	copyClaim := func(user string) *corev1.PersistentVolumeClaim {
		rec := migration.SplitRecord{User: user, Namespace: ns, Claim: "claim-" + user, Shared: "home-nfs", SharedUID: "s1", Directory: user,
			Method: migration.MethodDirectoryCopy}
		return seedBoundClaim(t, cs, ns, "claim-"+user, map[string]string{migration.SplitAnnotation: rec.Encode()}, "pv-"+user, true)
	}
	copyClaim("rae")
	sol := copyClaim("sol")
	annotateClaim(t, cs, sol, migration.SplitCopiedAnnotation, string(sol.UID))
	tom := seedBoundClaim(t, cs, ns, "claim-tom", nil, "pv-tom", true)
	recordMerge(t, cs, tom, "tom", "", "", string(tom.UID))
	_, xia := seedSwitchedCopy(t, cs, ns, "xia", "claim-xia", "home-xia")
	recordMerge(t, cs, xia, "xia", "", "", string(xia.UID))
	yul, _ := seedSwitchedCopy(t, cs, ns, "yul", "claim-yul", "home-yul")
	recordMerge(t, cs, yul, "yul", "", "", string(yul.UID))
	recordMerge(t, cs, seedBoundClaim(t, cs, ns, "claim-una", nil, "pv-una", true), "una", "", "", "")
	recordMerge(t, cs, seedBoundClaim(t, cs, ns, "claim-vic", nil, "pv-vic", true), "vic", "", "", "an-older-claims-uid")
	var users []hubUser
	for _, u := range []string{"rae", "sol", "tom", "xia", "yul", "una", "vic"} {
		users = append(users, hubUser{Name: u})
	}
	got := runHub(t, api, mergeValues(z2jhValues(t), helmValuesOf(t, r)), t.TempDir(), users)
	if s := got["rae"]; s.Pod != nil || s.Refused != moving || !strings.Contains(s.RefusedLog, "being copied") {
		t.Errorf("rae: refused %q (%s), pod %v; want the home being copied", s.Refused, s.RefusedLog, s.Pod != nil)
	}
	for _, u := range []string{"sol", "una"} {
		if s := got[u]; s.Refused != "" || s.Pod == nil || s.PVCName != "claim-"+u {
			t.Errorf("%s: refused %q (%s), claim %s", u, s.Refused, s.RefusedLog, s.PVCName)
		}
	}
	for _, u := range []string{"tom", "xia", "yul"} {
		if s := got[u]; s.Pod != nil || !strings.Contains(s.Refused, "moved to the shared storage") || !strings.Contains(s.RefusedLog, "was merged") {
			t.Errorf("%s: refused %q (%s), pod %v; want the home moved to the shared storage", u, s.Refused, s.RefusedLog, s.Pod != nil)
		}
	}
	if s := got["vic"]; s.Pod != nil || !strings.Contains(s.Refused, "does not match") || !strings.Contains(s.RefusedLog, "not a finished merge") {
		t.Errorf("vic: refused %q (%s), pod %v; want a mark of another claim refused", s.Refused, s.RefusedLog, s.Pod != nil)
	}
}
