package kube

import (
	"context"
	"maps"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/acctest"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/claims"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/execute"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/kubespawner"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/migration"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/testcluster"
)

// directoryMade stands in for PrepareDirectory in this package only: its
// test cluster has an API server and the PV binder but no node, so no Job
// can run. The directory Job runs for real in internal/nodeacc
// (TestAccSplitOnNode); here every other step runs against the API server.
type directoryMade struct{ *Client }

func (directoryMade) PrepareDirectory(context.Context, migration.Split) error { return nil }

// sharedClaim creates a claim bound to a volume of src, as a shared home
// claim of the shared layout is (zero-to-jupyterhub's "static" storage),
// and waits until the binder bound them. The volume is deleted at the end.
func sharedClaim(t *testing.T, cs kubernetes.Interface, ns, name string, src corev1.PersistentVolumeSource, affinity *corev1.VolumeNodeAffinity) *corev1.PersistentVolumeClaim {
	t.Helper()
	ctx := context.Background()
	pvName := "shared-" + ns + "-" + name
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: pvName},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("10Gi")},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			ClaimRef:                      &corev1.ObjectReference{Namespace: ns, Name: name},
			MountOptions:                  []string{"noatime"},
			NodeAffinity:                  affinity,
			PersistentVolumeSource:        src,
		},
	}
	if _, err := cs.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cs.CoreV1().PersistentVolumes().Delete(context.Background(), pvName, metav1.DeleteOptions{})
	})
	none := ""
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany},
			StorageClassName: &none,
			VolumeName:       pvName,
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("10Gi")}},
		},
	}
	if _, err := cs.CoreV1().PersistentVolumeClaims(ns).Create(ctx, pvc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := testcluster.WaitClaimPhase(ctx, cs, ns, name, corev1.ClaimBound); err != nil {
		t.Fatal(err)
	}
	got, err := cs.CoreV1().PersistentVolumeClaims(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func splitOf(ns, user string) migration.Split {
	return migration.Split{User: user, Shared: "home-shared", Directory: "home/" + user, UID: 1000, GID: 100, Mode: "0700", Image: testcluster.ToolsImage,
		Spec: claims.Spec{Namespace: ns, Name: "claim-" + user, User: user, Mode: claims.RWX, Size: "1Gi",
			Class: "a-class-the-split-claim-must-not-name", Labels: map[string]string{"team": "data"}, Annotations: map[string]string{"example.org/owner": user}}}
}

// The split against the API server and kube-controller-manager's PV
// binder, as the least-privilege identity with the documented RBAC (the
// migrator ClusterRole and the copier Role): for alice and bob, a volume
// on their directory of the shared claim's host path (Retain, no class,
// reserved for their claim by name, a path that must be a directory), and
// their claim as KubeSpawner would adopt it, naming it, bound by the
// binder. Running it again changes nothing. A claim of a user's name made
// by someone else (KubeSpawner, or with a record that cannot be read) is
// never taken over, and no volume is made for it; a shared claim on a kind
// of volume the split cannot serve is refused, naming the kind.
func TestAccSplit(t *testing.T) {
	c, ns, ctx := acctest.Cluster(t), acctest.Namespace(t), context.Background()
	admin := c.Admin()
	acctest.GrantLayoutMover(t, ns)
	api, err := NewAPI(c.RESTConfig(c.LimitedToken))
	if err != nil {
		t.Fatal(err)
	}
	limited := NewClient(api)
	hostAffinity := &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
		MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "kubernetes.io/hostname", Operator: corev1.NodeSelectorOpIn, Values: []string{"node-a"}}}}}}}
	root := "/srv/homes-" + ns
	shared := sharedClaim(t, admin, ns, "home-shared", corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: root}}, hostAffinity)
	users := []string{"alice", "bob"}
	for _, u := range users {
		t.Cleanup(func() {
			_ = admin.CoreV1().PersistentVolumes().Delete(context.Background(), migration.SplitVolumeName(ns, "claim-"+u), metav1.DeleteOptions{})
		})
	}

	var ran []string
	runner := execute.SplitRunner{Cluster: directoryMade{limited}, AfterStep: func(user string, op migration.Op) error {
		ran = append(ran, user+" "+string(op))
		return nil
	}}
	for _, u := range users {
		if step, err := runner.Split(ctx, splitOf(ns, u)); err != nil || step != migration.StepDone {
			t.Fatalf("%s: %s %v", u, step, err)
		}
	}
	t.Logf("steps: %v", ran)
	type uids struct{ pv, pvc string }
	first := map[string]uids{}
	seenVolumes := map[string]bool{}
	for _, u := range users {
		job := splitOf(ns, u)
		name := migration.SplitVolumeName(ns, job.Spec.Name)
		if seenVolumes[name] {
			t.Fatalf("two users' volumes are both named %s", name)
		}
		seenVolumes[name] = true
		pv, err := admin.CoreV1().PersistentVolumes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		pvc, err := admin.CoreV1().PersistentVolumeClaims(ns).Get(ctx, job.Spec.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		first[u] = uids{string(pv.UID), string(pvc.UID)}
		want := migration.SplitRecord{User: u, Namespace: ns, Claim: job.Spec.Name, Shared: "home-shared", SharedUID: string(shared.UID), Directory: "home/" + u, Volume: name}
		// The volume.
		s := pv.Spec
		switch {
		case s.HostPath == nil || s.HostPath.Path != root+"/home/"+u || s.HostPath.Type == nil || *s.HostPath.Type != corev1.HostPathDirectory:
			t.Errorf("%s: host path %+v, want %s/home/%s, type Directory", name, s.HostPath, root, u)
		case s.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimRetain:
			t.Errorf("%s: reclaim policy %s", name, s.PersistentVolumeReclaimPolicy)
		case s.StorageClassName != "":
			t.Errorf("%s: class %q", name, s.StorageClassName)
		case s.ClaimRef == nil || s.ClaimRef.Namespace != ns || s.ClaimRef.Name != job.Spec.Name || s.ClaimRef.UID != pvc.UID:
			t.Errorf("%s: claimRef %+v, want %s/%s (UID %s, filled in by the binder)", name, s.ClaimRef, ns, job.Spec.Name, pvc.UID)
		case len(s.AccessModes) != 1 || s.AccessModes[0] != corev1.ReadWriteMany:
			t.Errorf("%s: modes %v", name, s.AccessModes)
		case s.Capacity.Storage().Cmp(resource.MustParse("1Gi")) != 0:
			t.Errorf("%s: capacity %v", name, s.Capacity)
		case s.VolumeMode == nil || *s.VolumeMode != corev1.PersistentVolumeFilesystem:
			t.Errorf("%s: volume mode %v", name, s.VolumeMode)
		case strings.Join(s.MountOptions, ",") != "noatime" || s.NodeAffinity == nil || s.NodeAffinity.Required.NodeSelectorTerms[0].MatchExpressions[0].Values[0] != "node-a":
			t.Errorf("%s: mount options %v and node affinity %+v, want the shared volume's", name, s.MountOptions, s.NodeAffinity)
		case pv.Labels[kubespawner.LabelAppManagedBy] != claims.ManagedBy:
			t.Errorf("%s: labels %v", name, pv.Labels)
		case pv.Status.Phase != corev1.VolumeBound:
			t.Errorf("%s: phase %s", name, pv.Status.Phase)
		}
		if rec, err := migration.DecodeSplitRecord(pv.Annotations[migration.SplitAnnotation]); err != nil || rec != want {
			t.Errorf("%s: record %+v (%v), want %+v", name, rec, err, want)
		}
		// The claim: KubeSpawner's labels and annotations, as HomeClaim
		// builds them, but no class and the volume.
		home, err := HomeClaim(job.Spec)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case !maps.Equal(pvc.Labels, home.Labels):
			t.Errorf("%s: labels %v, want %v", job.Spec.Name, pvc.Labels, home.Labels)
		case pvc.Annotations[kubespawner.AnnotationUsername] != u || pvc.Annotations["example.org/owner"] != u:
			t.Errorf("%s: annotations %v", job.Spec.Name, pvc.Annotations)
		case pvc.Spec.StorageClassName == nil || *pvc.Spec.StorageClassName != "":
			t.Errorf("%s: class %v, want \"\" (no default class)", job.Spec.Name, pvc.Spec.StorageClassName)
		case pvc.Spec.VolumeName != name || pvc.Status.Phase != corev1.ClaimBound:
			t.Errorf("%s: volume %s phase %s, want bound to %s", job.Spec.Name, pvc.Spec.VolumeName, pvc.Status.Phase, name)
		}
		if rec, err := migration.DecodeSplitRecord(pvc.Annotations[migration.SplitAnnotation]); err != nil || rec != want {
			t.Errorf("%s: record %+v (%v)", job.Spec.Name, rec, err)
		}
	}

	// Again: nothing to do, the same objects.
	ran = nil
	for _, u := range users {
		if step, err := runner.Split(ctx, splitOf(ns, u)); err != nil || step != migration.StepDone {
			t.Fatalf("%s again: %s %v", u, step, err)
		}
		pv, _ := admin.CoreV1().PersistentVolumes().Get(ctx, migration.SplitVolumeName(ns, "claim-"+u), metav1.GetOptions{})
		pvc, _ := admin.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "claim-"+u, metav1.GetOptions{})
		if pv == nil || pvc == nil || (uids{string(pv.UID), string(pvc.UID)}) != first[u] {
			t.Errorf("%s: objects replaced: %v, now %v %v", u, first[u], pv, pvc)
		}
	}
	if len(ran) != 0 {
		t.Errorf("steps run again: %v", ran)
	}

	// Claims of users' names made by someone else: never taken over, and no
	// volume made for them.
	carol := splitOf(ns, "carol")
	kubespawners, err := HomeClaim(carol.Spec)
	if err != nil {
		t.Fatal(err)
	}
	dave := splitOf(ns, "dave")
	garbled, err := HomeClaim(dave.Spec)
	if err != nil {
		t.Fatal(err)
	}
	garbled.Annotations[migration.SplitAnnotation] = "{not a record"
	for _, pvc := range []*corev1.PersistentVolumeClaim{kubespawners, garbled} {
		if _, err := admin.CoreV1().PersistentVolumeClaims(ns).Create(ctx, pvc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, job := range []migration.Split{carol, dave} {
		before, _ := admin.CoreV1().PersistentVolumeClaims(ns).Get(ctx, job.Spec.Name, metav1.GetOptions{})
		if _, err := runner.Split(ctx, job); err == nil || !strings.Contains(err.Error(), "never taken over") {
			t.Errorf("%s's claim made by someone else: %v", job.User, err)
		}
		if v, err := limited.SplitVolume(ctx, migration.SplitVolumeName(ns, job.Spec.Name)); v != nil || err != nil {
			t.Errorf("%s: a volume was made for a claim that is not the move's: %+v %v", job.User, v, err)
		}
		after, _ := admin.CoreV1().PersistentVolumeClaims(ns).Get(ctx, job.Spec.Name, metav1.GetOptions{})
		if after.UID != before.UID || after.Spec.VolumeName != "" || after.ResourceVersion != before.ResourceVersion {
			t.Errorf("%s's claim was changed: %+v", job.User, after)
		}
	}
	if got, _ := limited.SplitClaim(ctx, ns, "claim-dave"); got == nil || got.Record != nil {
		t.Errorf("a record that cannot be read: %+v, want none", got)
	}

	// The shared claim is as it was.
	now, _ := admin.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "home-shared", metav1.GetOptions{})
	if now.UID != shared.UID || now.Spec.VolumeName != shared.Spec.VolumeName || now.Status.Phase != corev1.ClaimBound || !maps.Equal(now.Annotations, shared.Annotations) {
		t.Errorf("the shared claim changed: %+v", now)
	}

	// A shared claim on a local volume: refused, naming the kind.
	sharedClaim(t, admin, ns, "home-local", corev1.PersistentVolumeSource{Local: &corev1.LocalVolumeSource{Path: "/mnt/disk"}}, hostAffinity)
	local := splitOf(ns, "erin")
	local.Shared = "home-local"
	if _, err := runner.Split(ctx, local); err == nil || !strings.Contains(err.Error(), "is a local volume") {
		t.Errorf("a local volume: %v", err)
	}
	if v, _ := limited.SplitVolume(ctx, migration.SplitVolumeName(ns, "claim-erin")); v != nil {
		t.Errorf("a volume was made on a local volume's directory: %+v", v)
	}
}
