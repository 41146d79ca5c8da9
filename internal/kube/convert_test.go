package kube

import (
	"context"
	"fmt"
	"reflect"
	"runtime"
	"testing"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/claims"
)

// BenchmarkListClaims lists 20,000 bound KubeSpawner claims from protobuf
// pages of PageSize, decoded at every fetch as client-go decodes them, and
// converts them to claims.Claim: page by page with the strings claims share
// interned (what ListClaims does), page by page without, or all listed
// first and then converted (as the client did before).
// Besides time and allocations it reports the largest live heap seen during
// one list (peak-MiB, measured after a collection at each page and at the
// end) and what the result keeps per claim (kept-B/claim).
func BenchmarkListClaims(b *testing.B) {
	const n = 20000
	pages := encodedPages(b, n)
	fetch := func(probe func()) func(context.Context, metav1.ListOptions) (page[corev1.PersistentVolumeClaim], error) {
		return func(_ context.Context, opts metav1.ListOptions) (page[corev1.PersistentVolumeClaim], error) {
			var l corev1.PersistentVolumeClaimList
			if err := l.Unmarshal(pages[opts.Continue]); err != nil {
				return page[corev1.PersistentVolumeClaim]{}, err
			}
			probe()
			return page[corev1.PersistentVolumeClaim]{items: l.Items, meta: l.ListMeta}, nil
		}
	}
	for _, tc := range []struct {
		name string
		list func(probe func()) ([]claims.Claim, error)
	}{
		{"page by page, interned", func(probe func()) ([]claims.Claim, error) {
			in := interner{}
			return listConverted(context.Background(), &Client{}, "persistentvolumeclaims", "hub", metav1.ListOptions{}, fetch(probe),
				func(p *corev1.PersistentVolumeClaim) claims.Claim { return convertClaim(p, in) })
		}},
		{"page by page", func(probe func()) ([]claims.Claim, error) {
			return listConverted(context.Background(), &Client{}, "persistentvolumeclaims", "hub", metav1.ListOptions{}, fetch(probe), ClaimFromPVC)
		}},
		{"listed, then converted", func(probe func()) ([]claims.Claim, error) {
			pvcs, err := listAll(context.Background(), &Client{}, "persistentvolumeclaims", "hub", metav1.ListOptions{}, fetch(probe))
			out := make([]claims.Claim, len(pvcs))
			for i := range pvcs {
				out[i] = ClaimFromPVC(&pvcs[i])
			}
			probe()
			return out, err
		}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			base := liveHeap()
			var peak uint64
			got, err := tc.list(func() { peak = max(peak, liveHeap()) })
			if err != nil || len(got) != n {
				b.Fatalf("%d claims, %v", len(got), err)
			}
			kept := liveHeap()
			runtime.KeepAlive(got)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := tc.list(func() {}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(peak-base)/(1<<20), "peak-MiB")
			b.ReportMetric(float64(kept-base)/n, "kept-B/claim")
		})
	}
}

// A List's claims converted with an interner are the claims ClaimFromPVC
// makes, with the strings they share kept once: the keys of their labels
// and annotations, their namespace, class and size. Past maxInterned
// strings nothing more is kept, and strings are still converted as they are.
func TestConvertClaimInterned(t *testing.T) {
	in := interner{}
	a, b := decoded(t, 1), decoded(t, 2) // strings of their own, as a List brings them
	ca, cb := convertClaim(&a, in), convertClaim(&b, in)
	if !reflect.DeepEqual(ca, ClaimFromPVC(&a)) || !reflect.DeepEqual(cb, ClaimFromPVC(&b)) {
		t.Fatalf("interned conversion differs:\n%+v\n%+v", ca, ClaimFromPVC(&a))
	}
	same := func(x, y string) bool { return unsafe.StringData(x) == unsafe.StringData(y) }
	for k := range cb.Annotations {
		var ka string
		for k2 := range ca.Annotations {
			if k2 == k {
				ka = k2
			}
		}
		if !same(k, ka) {
			t.Errorf("annotation key %q is kept twice", k)
		}
	}
	if !same(ca.Labels["app"], cb.Labels["app"]) || !same(ca.Namespace, cb.Namespace) || !same(ca.StorageClass, cb.StorageClass) || !same(ca.Requested, cb.Requested) {
		t.Errorf("shared values are kept twice")
	}
	ca.Labels["app"] = "changed"
	if a.Labels["app"] != "jupyterhub" || cb.Labels["app"] != "jupyterhub" {
		t.Errorf("an interned claim's labels are shared with another map")
	}
	for i := 3; i < 3+maxInterned && len(in) < maxInterned; i++ {
		p := boundClaim(i)
		convertClaim(&p, in)
	}
	p := boundClaim(100000)
	if c := convertClaim(&p, in); len(in) != maxInterned || !reflect.DeepEqual(c, ClaimFromPVC(&p)) {
		t.Errorf("a full interner: %d strings; %+v", len(in), c)
	}
}

func liveHeap() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// decoded is boundClaim(i) as it arrives from the API server.
func decoded(t *testing.T, i int) corev1.PersistentVolumeClaim {
	p := boundClaim(i)
	data, err := p.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	var out corev1.PersistentVolumeClaim
	if err := out.Unmarshal(data); err != nil {
		t.Fatal(err)
	}
	return out
}

// encodedPages are n claims as the API server sends them for a List in
// pages of PageSize, by continue token ("" first).
func encodedPages(b *testing.B, n int) map[string][]byte {
	out := map[string][]byte{}
	token := ""
	for start := 0; start < n; start += PageSize {
		var l corev1.PersistentVolumeClaimList
		for i := start; i < min(start+PageSize, n); i++ {
			l.Items = append(l.Items, boundClaim(i))
		}
		next := ""
		if start+PageSize < n {
			next = fmt.Sprintf("page-%d", start+PageSize)
			l.ListMeta = metav1.ListMeta{Continue: next, RemainingItemCount: ptr(int64(n - start - PageSize))}
		}
		data, err := l.Marshal()
		if err != nil {
			b.Fatal(err)
		}
		out[token], token = data, next
	}
	return out
}

// boundClaim is the i-th user's home as KubeSpawner creates it and the
// controllers bind it: its labels, annotations, managed fields and status.
func boundClaim(i int) corev1.PersistentVolumeClaim {
	user := fmt.Sprintf("user-%05d", i)
	class := "standard"
	mode := corev1.PersistentVolumeFilesystem
	size := resource.MustParse("10Gi")
	return corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{
			Name: "claim-" + user, Namespace: "hub", UID: types.UID(fmt.Sprintf("0b7e3c2a-1f4d-4c5e-9a6b-%012d", i)),
			ResourceVersion: fmt.Sprint(100000 + i), CreationTimestamp: metav1.Unix(1700000000, 0),
			Labels: map[string]string{"app": "jupyterhub", "chart": "jupyterhub-4.1.0", "component": "singleuser-storage",
				"heritage": "jupyterhub", "hub.jupyter.org/username": user, "release": "jhub"},
			Annotations: map[string]string{"hub.jupyter.org/username": user, "pv.kubernetes.io/bind-completed": "yes",
				"pv.kubernetes.io/bound-by-controller": "yes", "volume.beta.kubernetes.io/storage-provisioner": "example.com/nfs",
				"volume.kubernetes.io/storage-provisioner": "example.com/nfs"},
			Finalizers: []string{"kubernetes.io/pvc-protection"},
			ManagedFields: []metav1.ManagedFieldsEntry{
				{Manager: "jupyterhub", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1", FieldsType: "FieldsV1",
					FieldsV1: metav1.NewFieldsV1(`{"f:metadata":{"f:annotations":{".":{},"f:hub.jupyter.org/username":{}},"f:labels":{".":{},"f:app":{},"f:chart":{},"f:component":{},"f:heritage":{},"f:hub.jupyter.org/username":{},"f:release":{}}},"f:spec":{"f:accessModes":{},"f:resources":{"f:requests":{".":{},"f:storage":{}}},"f:storageClassName":{},"f:volumeMode":{}}}`)},
				{Manager: "kube-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1", FieldsType: "FieldsV1",
					FieldsV1: metav1.NewFieldsV1(`{"f:metadata":{"f:annotations":{"f:pv.kubernetes.io/bind-completed":{},"f:pv.kubernetes.io/bound-by-controller":{},"f:volume.beta.kubernetes.io/storage-provisioner":{},"f:volume.kubernetes.io/storage-provisioner":{}}},"f:spec":{"f:volumeName":{}}}`)},
				{Manager: "kube-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1", FieldsType: "FieldsV1",
					Subresource: "status", FieldsV1: metav1.NewFieldsV1(`{"f:status":{"f:accessModes":{},"f:capacity":{".":{},"f:storage":{}},"f:phase":{}}}`)},
			},
		},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: size}},
			StorageClassName: &class, VolumeMode: &mode, VolumeName: fmt.Sprintf("pvc-0b7e3c2a-1f4d-4c5e-9a6b-%012d", i),
		},
		Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound,
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Capacity:    corev1.ResourceList{corev1.ResourceStorage: size}},
	}
}

// A claim whose expansion has not finished is Resizing: it requests more
// than its capacity, or carries a resize condition.
func TestConvertClaimResizing(t *testing.T) {
	claim := func(requested, capacity string, conds ...corev1.PersistentVolumeClaimConditionType) *corev1.PersistentVolumeClaim {
		p := &corev1.PersistentVolumeClaim{
			Spec:   corev1.PersistentVolumeClaimSpec{Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(requested)}}},
			Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound, Capacity: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(capacity)}},
		}
		for _, c := range conds {
			p.Status.Conditions = append(p.Status.Conditions, corev1.PersistentVolumeClaimCondition{Type: c, Status: corev1.ConditionTrue})
		}
		return p
	}
	for _, tc := range []struct {
		name string
		pvc  *corev1.PersistentVolumeClaim
		want bool
	}{
		{"as requested", claim("10Gi", "10Gi"), false},
		{"more than requested", claim("10Gi", "12Gi"), false},
		{"grown, not yet done", claim("20Gi", "10Gi"), true},
		{"filesystem resize pending", claim("20Gi", "20Gi", corev1.PersistentVolumeClaimFileSystemResizePending), true},
		{"resizing", claim("20Gi", "20Gi", corev1.PersistentVolumeClaimResizing), true},
	} {
		if got := ClaimFromPVC(tc.pvc).Resizing; got != tc.want {
			t.Errorf("%s: Resizing = %v, want %v", tc.name, got, tc.want)
		}
	}
}
