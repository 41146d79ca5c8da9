package hubconfig

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/acctest"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/claims"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/hubtest"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/kubespawner"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/migration"
)

// The hub's spawn-time decisions, with real KubeSpawner loading the
// rendered configuration as z2jh's hub does and its hooks asking the test
// bed's API server as the chart's hub ServiceAccount. Each server mounts
// the claim its home lives on now, read at the spawn; a home that is
// moving is never replaced by an empty claim; no user is in the
// configuration, which is the same for every case.
func TestSpawnerSpawn_decidedFromTheCluster(t *testing.T) {
	home := kubespawner.HomeStorage{AccessMode: claims.RWX, StorageClass: "longhorn", Capacity: "10Gi", NameTemplate: "claim-{user_server}", Scheme: kubespawner.SchemeSafe}
	var settings map[string]any
	if err := json.Unmarshal([]byte(JSON(home.Settings())), &settings); err != nil {
		t.Fatal(err)
	}
	r := mustBuild(t, Config{Home: settings})
	// Each user's workspace claim (Nebari's kind of extra user volume).
	workspace := map[string]any{"singleuser": map[string]any{"storage": map[string]any{
		"extraVolumes":      map[string]any{"workspace": map[string]any{"name": "workspace", "persistentVolumeClaim": map[string]any{"claimName": "workspace-{username}"}}},
		"extraVolumeMounts": map[string]any{"workspace": map[string]any{"name": "workspace", "mountPath": "/workspace"}},
	}}}
	values := mergeValues(mergeValues(z2jhValues(t), workspace), helmValuesOf(t, r))
	claimOf := func(user, server string) string {
		name, err := kubespawner.Expand("claim-{user_server}", user, server, kubespawner.SchemeSafe)
		if err != nil {
			t.Fatal(err)
		}
		return name
	}
	api := seededHub(t, nil)
	ns := api.Namespace
	cs := acctest.Cluster(t).Admin()

	// kim: her default server's home was copied and switched; her named
	// server "gpu" has its own ReadWriteOnce claim, never the copy.
	seedSwitchedCopy(t, cs, ns, "kim", claimOf("kim", ""), "home-kim")
	seedClaim(t, cs, ns, claimOf("kim", "gpu"), corev1.ReadWriteOnce, nil, nil)
	// erin: her home is being copied.
	erin := seedClaim(t, cs, ns, claimOf("erin", ""), corev1.ReadWriteOnce, nil, nil)
	annotateClaim(t, cs, erin, migration.CopyAnnotation, migration.CopyRecord{Step: migration.StepCopying, User: "erin", Target: "home-erin", To: claims.RWX}.Encode())
	// fay: her claim was just created again by a rebind, not yet bound.
	seedClaim(t, cs, ns, claimOf("fay", ""), corev1.ReadWriteMany, nil, map[string]string{"jupyter-infra.github.io/migrated": "rebind from ReadWriteOnce, volume pv-fay"})
	// gus: his claim is being deleted (held by a finalizer here).
	gus := seedClaim(t, cs, ns, claimOf("gus", ""), corev1.ReadWriteOnce, nil, nil)
	holdAndDelete(t, cs, ns, gus.Name)
	// qin: her old claim is being deleted after the switch to home-qin.
	qinSource, _ := seedSwitchedCopy(t, cs, ns, "qin", claimOf("qin", ""), "home-qin")
	holdAndDelete(t, cs, ns, qinSource.Name)
	// hal: his old claim was deleted after the switch to home-hal.
	_, hal := seedSwitchedCopy(t, cs, ns, "hal", claimOf("hal", ""), "home-hal")
	deleteClaim(t, cs, ns, claimOf("hal", ""))
	// ivy: her old claim is gone and her copy was never switched to.
	seedClaim(t, cs, ns, "home-ivy", corev1.ReadWriteMany, map[string]string{migration.CopyOfLabel: migration.CopyOfLabelValue(claimOf("ivy", ""))},
		map[string]string{migration.CopyOfAnnotation: claimOf("ivy", "")})
	// jay: switched to a copy that someone deleted.
	seedSwitchedCopy(t, cs, ns, "jay", claimOf("jay", ""), "home-jay")
	deleteClaim(t, cs, ns, "home-jay")
	// ron: his copy's target exists, the Job not started: his home is
	// still his claim.
	ron := seedClaim(t, cs, ns, claimOf("ron", ""), corev1.ReadWriteOnce, nil, nil)
	annotateClaim(t, cs, ron, migration.CopyAnnotation, migration.CopyRecord{Step: migration.StepTargetCreated, User: "ron", Target: "home-ron", To: claims.RWX}.Encode())
	// sam: his old claim was made again after the switch (another UID, no
	// record): the copy stays his home, as the plan says.
	seedSwitchedCopy(t, cs, ns, "sam", claimOf("sam", ""), "home-sam")
	deleteClaim(t, cs, ns, claimOf("sam", ""))
	seedClaim(t, cs, ns, claimOf("sam", ""), corev1.ReadWriteOnce, nil, nil)
	// tia: KubeSpawner remembers her copy, whose switch annotation an
	// apply stopped before writing (the record says switched).
	_, tiaCopy := seedSwitchedCopy(t, cs, ns, "tia", claimOf("tia", ""), "home-tia")
	annotateClaim(t, cs, tiaCopy, migration.CopySwitchedAnnotation, "")
	if _, err := cs.CoreV1().PersistentVolumeClaims(ns).Patch(context.Background(), "home-tia", types.JSONPatchType,
		[]byte(`[{"op":"remove","path":"/metadata/annotations/jupyter-infra.github.io~1copy-switched"}]`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	// uma: KubeSpawner remembers her switched copy, which someone deleted:
	// never an empty claim in its place. vic: the same, and the admin
	// removed the record from the old claim: the old claim is her home.
	seedSwitchedCopy(t, cs, ns, "uma", claimOf("uma", ""), "home-uma")
	deleteClaim(t, cs, ns, "home-uma")
	seedSwitchedCopy(t, cs, ns, "vic", claimOf("vic", ""), "home-vic")
	deleteClaim(t, cs, ns, "home-vic")
	if _, err := cs.CoreV1().PersistentVolumeClaims(ns).Patch(context.Background(), claimOf("vic", ""), types.JSONPatchType,
		[]byte(`[{"op":"remove","path":"/metadata/annotations/`+strings.ReplaceAll(migration.CopyAnnotation, "/", "~1")+`"}]`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	// lee: a ReadWriteOnce home kept; mo: new; pia: a ReadWriteMany home
	// and a workspace claim still ReadWriteOnce, which pins her pods.
	seedClaim(t, cs, ns, claimOf("lee", ""), corev1.ReadWriteOnce, nil, nil)
	seedClaim(t, cs, ns, claimOf("pia", ""), corev1.ReadWriteMany, nil, nil)
	seedClaim(t, cs, ns, "workspace-pia", corev1.ReadWriteOnce, nil, nil)

	got := runHub(t, api, values, t.TempDir(), []hubUser{
		{Name: "kim"}, {Name: "kim", Server: "gpu", ID: "kim/gpu"},
		{Name: "erin"}, {Name: "fay"}, {Name: "gus"}, {Name: "hal"},
		// hal again, as KubeSpawner remembers the copy after a spawn on it.
		{Name: "hal", ID: "hal/remembered", State: map[string]any{"pvc_name": hal.Name, "kubespawner_version": "7.0.0"}},
		{Name: "ivy"}, {Name: "jay"}, {Name: "lee"}, {Name: "mo"}, {Name: "pia"}, {Name: "qin"},
		{Name: "ron"}, {Name: "sam"}, {Name: "tia", State: map[string]any{"pvc_name": "home-tia", "kubespawner_version": "7.0.0"}},
		{Name: "uma", State: map[string]any{"pvc_name": "home-uma", "kubespawner_version": "7.0.0"}},
		{Name: "vic", State: map[string]any{"pvc_name": "home-vic", "kubespawner_version": "7.0.0"}},
	})
	mounts := map[string]struct {
		claim  string
		pinned bool
	}{
		"kim": {"home-kim", false}, "kim/gpu": {claimOf("kim", "gpu"), true},
		"hal": {"home-hal", false}, "hal/remembered": {"home-hal", false},
		"lee": {claimOf("lee", ""), true}, "mo": {claimOf("mo", ""), false},
		"pia": {claimOf("pia", ""), true}, "qin": {"home-qin", false},
		"ron": {claimOf("ron", ""), true}, "sam": {"home-sam", false}, "tia": {"home-tia", false},
		"vic": {claimOf("vic", ""), true},
	}
	for id, want := range mounts {
		s := got[id]
		if s.Refused != "" {
			t.Errorf("%s: refused: %s (%s)", id, s.Refused, s.RefusedLog)
			continue
		}
		f := factsOf(t, s.Pod)
		if s.PVCName != want.claim || dig(f.Volumes["home"], "persistentVolumeClaim.claimName") != want.claim {
			t.Errorf("%s: mounts %s (home volume %v), want %s", id, s.PVCName, f.Volumes["home"], want.claim)
		}
		if _, pinned := f.Labels[DefaultColocationLabel]; pinned != want.pinned || (len(f.ColocationTerms(DefaultColocationLabel)) > 0) != want.pinned {
			t.Errorf("%s: pinned = %v, want %v (labels %v)", id, pinned, want.pinned, f.Labels)
		}
	}
	// The cost per spawn: the home is decided with one or two requests (the
	// claim; its copy, or the copies of a claim of that name), and each
	// other claim the pod mounts (the workspace) takes one more.
	for id, s := range got {
		others := 1
		if s.Refused != "" {
			others = 0 // refused before the pod is made
		}
		if id == "uma" || id == "vic" {
			others++ // the remembered claim is gone: the template's claim decides
		}
		if s.HookRequests < 1 || s.HookRequests > 2+others {
			t.Errorf("%s: the hooks made %d API requests, want 1 to %d", id, s.HookRequests, 2+others)
		}
	}
	refused := map[string]string{
		"erin": "being copied", "fay": "being rebound", "gus": "being deleted",
		"ivy": "not switched", "jay": "does not exist", "uma": "does not exist",
	}
	for id, why := range refused {
		s := got[id]
		if s.Refused == "" || !strings.Contains(s.RefusedLog, why) {
			t.Errorf("%s: not refused for %q: refused %q (%s), claim %s", id, why, s.Refused, s.RefusedLog, s.PVCName)
		}
	}
	if s := got["erin"]; !strings.Contains(s.Refused, "being moved") || !strings.Contains(s.Refused, "Try again") {
		t.Errorf("erin is told %q", s.Refused)
	}
	if s := got["jay"]; !strings.Contains(s.Refused, "home-jay") || !strings.Contains(s.Refused, "administrator") {
		t.Errorf("jay is told %q", s.Refused)
	}
}

// A migration applied while the hub runs moves the user's next spawn to the
// new home, with the same rendered configuration (no restart, no change).
func TestSpawnerSpawn_followsAMoveWithoutReRendering(t *testing.T) {
	r := mustBuild(t, Config{Home: homeSettings(claims.RWX)})
	values := mergeValues(z2jhValues(t), helmValuesOf(t, r))
	api := seededHub(t, nil)
	cs := acctest.Cluster(t).Admin()
	seedClaim(t, cs, api.Namespace, "claim-nia", corev1.ReadWriteOnce, nil, nil)
	before := runHub(t, api, values, t.TempDir(), []hubUser{{Name: "nia"}})["nia"]
	if before.PVCName != "claim-nia" || factsOf(t, before.Pod).Labels[DefaultColocationLabel] != "nia" {
		t.Fatalf("before the copy: claim %s, labels %v", before.PVCName, factsOf(t, before.Pod).Labels)
	}
	// The copy's switch, as the executor records it: nothing else changes.
	deleteClaim(t, cs, api.Namespace, "claim-nia")
	seedSwitchedCopy(t, cs, api.Namespace, "nia", "claim-nia", "home-nia")
	after := runHub(t, api, values, t.TempDir(), []hubUser{{Name: "nia"}})["nia"]
	if after.PVCName != "home-nia" {
		t.Fatalf("after the copy: claim %s (%s)", after.PVCName, after.RefusedLog)
	}
	if _, pinned := factsOf(t, after.Pod).Labels[DefaultColocationLabel]; pinned {
		t.Errorf("after the copy to a ReadWriteMany claim the pod is still pinned")
	}
}

// The API server cannot be asked, or refuses the hub: the spawn fails and
// says so; nothing is guessed (no claim is rendered).
func TestSpawnerSpawn_apiServerUnreachable(t *testing.T) {
	r := mustBuild(t, Config{Home: homeSettings(claims.RWX)})
	values := mergeValues(z2jhValues(t), helmValuesOf(t, r))
	api := seededHub(t, nil)
	for name, c := range map[string]struct {
		edit      func(*hubtest.HubAPI)
		told, log string
	}{
		"refused":      {func(a *hubtest.HubAPI) { a.Token = "not-a-token" }, "lacks a permission", "get and list on persistentvolumeclaims"},
		"not_answered": {func(a *hubtest.HubAPI) { a.Host = "https://127.0.0.1:1" }, "did not answer", "cannot read claim"},
	} {
		t.Run(name, func(t *testing.T) {
			broken := api
			c.edit(&broken)
			got := runHub(t, broken, values, t.TempDir(), []hubUser{{Name: "olga"}})["olga"]
			if !strings.Contains(got.Refused, c.told) || !strings.Contains(got.RefusedLog, c.log) || got.PVC != nil || got.Pod != nil {
				t.Errorf("told %q (log %q), claim %v", got.Refused, got.RefusedLog, got.PVC)
			}
		})
	}
}

// deleteClaim deletes a claim and waits until it is gone. No pod uses it;
// this package's test bed runs no controller-manager, so the test lets the
// claim go as the claim protection controller would.
func deleteClaim(t testing.TB, cs kubernetes.Interface, ns, name string) {
	t.Helper()
	ctx := context.Background()
	if err := cs.CoreV1().PersistentVolumeClaims(ns).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().PersistentVolumeClaims(ns).Patch(ctx, name, types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{}); err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := cs.CoreV1().PersistentVolumeClaims(ns).Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		t.Fatalf("claim %s/%s was not deleted: %v", ns, name, err)
	}
}

// holdAndDelete deletes a claim that a finalizer holds, so that it stays
// being deleted for the test (the finalizer goes at cleanup).
func holdAndDelete(t *testing.T, cs kubernetes.Interface, ns, name string) {
	t.Helper()
	ctx := context.Background()
	patch := []byte(`{"metadata":{"finalizers":["example.com/hold"]}}`)
	if _, err := cs.CoreV1().PersistentVolumeClaims(ns).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = cs.CoreV1().PersistentVolumeClaims(ns).Patch(ctx, name, types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
	})
	if err := cs.CoreV1().PersistentVolumeClaims(ns).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
}

// BenchmarkSpawnHooks measures what the hooks add to a spawn with real
// KubeSpawner and the test bed's API server (make bench reports it): the
// time of the pre_spawn_hook and the modify_pod_hook as the hub measures
// it, and their API requests, for a home kept, a home copied and switched,
// the copy of a deleted claim (found by its label) and a new user.
func BenchmarkSpawnHooks(b *testing.B) {
	r := mustBuild(b, Config{Home: homeSettings(claims.RWX)})
	values := mergeValues(hubtest.Z2jhValues(b), helmValuesOf(b, r))
	api := seededHub(b, nil)
	cs := acctest.Cluster(b).Admin()
	ns := api.Namespace
	seedClaim(b, cs, ns, "claim-kept", corev1.ReadWriteOnce, nil, nil)
	seedSwitchedCopy(b, cs, ns, "copied", "claim-copied", "home-copied")
	seedSwitchedCopy(b, cs, ns, "moved", "claim-moved", "home-moved")
	deleteClaim(b, cs, ns, "claim-moved")
	hub := hubtest.StartHub(b, api, values, b.TempDir(), FilesDir)
	for _, c := range []struct{ name, user, claim string }{
		{"kept", "kept", "claim-kept"}, {"copied", "copied", "home-copied"}, {"source_deleted", "moved", "home-moved"}, {"new_user", "newcomer", "claim-newcomer"},
	} {
		b.Run(c.name, func(b *testing.B) {
			var seconds []float64
			requests := 0
			for b.Loop() {
				got, err := hub.Spawn([]hubtest.HubUser{{Name: c.user}})
				if err != nil {
					b.Fatal(err)
				}
				s := got[c.user]
				if s.PVCName != c.claim {
					b.Fatalf("%s mounts %q (%s), want %s", c.user, s.PVCName, s.RefusedLog, c.claim)
				}
				seconds = append(seconds, s.HookSeconds)
				requests = max(requests, s.HookRequests)
			}
			slices.Sort(seconds)
			b.ReportMetric(seconds[len(seconds)/2]*1000, "ms/hooks")
			b.ReportMetric(float64(requests), "requests/spawn")
		})
	}
}
