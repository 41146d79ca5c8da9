package kube

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/claims"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/kubespawner"
)

// A home claim is built as KubeSpawner builds it, so that KubeSpawner adopts
// it at spawn: its labels and annotations, the configuration's added, and
// the provider's managed-by label.
func TestHomeClaim(t *testing.T) {
	spec := claims.Spec{Namespace: "hub", Name: "claim-ann-2emarie", User: "ann.marie", Mode: "ReadWriteMany", Class: "homes", Size: "10Gi",
		Labels: map[string]string{"team": "a"}, Annotations: map[string]string{"note": "b"}}
	pvc, err := HomeClaim(spec)
	if err != nil {
		t.Fatal(err)
	}
	meta := kubespawner.PVCMetadata{Username: "ann.marie", ExtraLabels: spec.Labels, ExtraAnnotations: spec.Annotations}
	labels, err := kubespawner.PVCLabels(meta)
	if err != nil {
		t.Fatal(err)
	}
	labels[kubespawner.LabelAppManagedBy] = claims.ManagedBy
	switch {
	case pvc.Name != spec.Name || pvc.Namespace != "hub":
		t.Fatalf("claim %s/%s", pvc.Namespace, pvc.Name)
	case !reflect.DeepEqual(pvc.Labels, labels):
		t.Fatalf("labels %v, want %v", pvc.Labels, labels)
	case !reflect.DeepEqual(pvc.Annotations, kubespawner.PVCAnnotations(meta)):
		t.Fatalf("annotations %v, want %v", pvc.Annotations, kubespawner.PVCAnnotations(meta))
	case pvc.Annotations[kubespawner.AnnotationServername] != "" || pvc.Labels["team"] != "a" || pvc.Annotations["note"] != "b":
		t.Fatalf("labels %v, annotations %v", pvc.Labels, pvc.Annotations)
	case pvc.Spec.StorageClassName == nil || *pvc.Spec.StorageClassName != "homes":
		t.Fatalf("class %v", pvc.Spec.StorageClassName)
	case !reflect.DeepEqual(pvc.Spec.AccessModes, []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany}):
		t.Fatalf("modes %v", pvc.Spec.AccessModes)
	case !pvc.Spec.Resources.Requests[corev1.ResourceStorage].Equal(resource.MustParse("10Gi")):
		t.Fatalf("requests %v", pvc.Spec.Resources.Requests)
	}
	// The cluster's default class: none named.
	spec.Class = ""
	if pvc, _ := HomeClaim(spec); pvc.Spec.StorageClassName != nil {
		t.Fatalf("class %v, want none", *pvc.Spec.StorageClassName)
	}
	spec.Size = "ten"
	if _, err := HomeClaim(spec); err == nil {
		t.Fatal("a size that does not parse built a claim")
	}
}

// The StorageClass object carries every field of the class apply writes.
func TestStorageClassOf(t *testing.T) {
	sc := claims.StorageClass{Name: "homes", Provisioner: "p", Parameters: map[string]string{"a": "b"}, ReclaimPolicy: "Retain",
		BindingMode: "WaitForFirstConsumer", AllowExpansion: true, MountOptions: []string{"noatime"}, Labels: map[string]string{"l": "v"}}
	o := StorageClassOf(sc)
	if o.Name != "homes" || o.Provisioner != "p" || o.Parameters["a"] != "b" || *o.ReclaimPolicy != "Retain" || *o.VolumeBindingMode != "WaitForFirstConsumer" ||
		!*o.AllowVolumeExpansion || !reflect.DeepEqual(o.MountOptions, []string{"noatime"}) || o.Labels["l"] != "v" {
		t.Fatalf("StorageClassOf = %+v", o)
	}
}

// The shared claim a resource creates is no user's: none of KubeSpawner's
// labels or annotations (the List of homes and the hub would take it for a
// user's), the configuration's, the provider's managed-by label and the
// annotation that this resource created it; the spec's mode, class and size.
func TestSharedClaim(t *testing.T) {
	spec := claims.Spec{Namespace: "hub", Name: "home-nfs", Mode: "ReadWriteMany", Class: "nfs", Size: "500Gi", Shared: true,
		Labels: map[string]string{"team": "a"}, Annotations: map[string]string{"note": "b"}}
	pvc, err := SharedClaim(spec)
	if err != nil {
		t.Fatal(err)
	}
	wantLabels := map[string]string{"team": "a", kubespawner.LabelAppManagedBy: claims.ManagedBy, kubespawner.LabelAppComponent: SharedClaimComponent}
	wantAnn := map[string]string{"note": "b", claims.SharedCreatedAnnotation: claims.SharedCreatedBy}
	if !reflect.DeepEqual(pvc.Labels, wantLabels) || !reflect.DeepEqual(pvc.Annotations, wantAnn) {
		t.Fatalf("labels %v, annotations %v", pvc.Labels, pvc.Annotations)
	}
	if pvc.Name != "home-nfs" || pvc.Namespace != "hub" || *pvc.Spec.StorageClassName != "nfs" || pvc.Spec.AccessModes[0] != corev1.ReadWriteMany ||
		!pvc.Spec.Resources.Requests[corev1.ResourceStorage].Equal(resource.MustParse("500Gi")) {
		t.Fatalf("claim %+v", pvc)
	}
	if spec.Labels[kubespawner.LabelAppManagedBy] != "" || len(spec.Annotations) != 1 {
		t.Fatalf("the configuration's maps were written: %v %v", spec.Labels, spec.Annotations)
	}
	spec.User = "alice"
	if _, err := SharedClaim(spec); err == nil {
		t.Fatal("a user's spec built as a shared claim")
	}
}
