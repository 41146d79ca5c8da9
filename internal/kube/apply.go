package kube

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/claims"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/kubespawner"
)

// CreateHome creates the home claim spec describes (the executor's Claims), built
// by HomeClaim, and returns it as created (CreateClaim).
func (c *Client) CreateHome(ctx context.Context, spec claims.Spec) (claims.Claim, error) {
	build := HomeClaim
	if spec.Shared {
		build = SharedClaim
	}
	pvc, err := build(spec)
	if err != nil {
		return claims.Claim{}, err
	}
	created, err := c.CreateClaim(ctx, pvc)
	if err != nil {
		return claims.Claim{}, err
	}
	return ClaimFromPVC(created), nil
}

// HomeClaim is the claim spec describes, built the way KubeSpawner builds a
// home claim (kubespawner.PVCLabels, kubespawner.PVCAnnotations, with
// spec's labels and annotations as storage_extra_labels and
// storage_extra_annotations), so that KubeSpawner adopts it on spawn, and
// labelled as managed by this provider.
func HomeClaim(spec claims.Spec) (*corev1.PersistentVolumeClaim, error) {
	meta := kubespawner.PVCMetadata{Username: spec.User, Servername: spec.Server, ExtraLabels: spec.Labels, ExtraAnnotations: spec.Annotations}
	l, err := kubespawner.PVCLabels(meta)
	if err != nil {
		return nil, err
	}
	a := kubespawner.PVCAnnotations(meta)
	l[kubespawner.LabelAppManagedBy] = claims.ManagedBy
	size, err := resource.ParseQuantity(spec.Size)
	if err != nil {
		return nil, err
	}
	return NewClaim(metav1.ObjectMeta{Name: spec.Name, Namespace: spec.Namespace, Labels: l, Annotations: a},
		spec.Mode, spec.Class, size), nil
}

// SharedClaim is the shared layout's claim spec describes
// (shared_home.create_claim): no user's, so without KubeSpawner's labels
// and annotations (it is no home claim the hub or a List of homes would
// take for a user's); the configuration's labels and annotations, labelled
// as managed by this provider, and annotated as created by this resource.
func SharedClaim(spec claims.Spec) (*corev1.PersistentVolumeClaim, error) {
	if !spec.Shared || spec.User != "" || spec.Server != "" {
		return nil, fmt.Errorf("claim %s/%s: not a shared claim", spec.Namespace, spec.Name)
	}
	l := maps.Clone(spec.Labels)
	if l == nil {
		l = map[string]string{}
	}
	l[kubespawner.LabelAppManagedBy], l[kubespawner.LabelAppComponent] = claims.ManagedBy, SharedClaimComponent
	a := maps.Clone(spec.Annotations)
	if a == nil {
		a = map[string]string{}
	}
	a[claims.SharedCreatedAnnotation] = claims.SharedCreatedBy
	size, err := resource.ParseQuantity(spec.Size)
	if err != nil {
		return nil, fmt.Errorf("claim %s/%s: size %q: %w", spec.Namespace, spec.Name, spec.Size, err)
	}
	return NewClaim(metav1.ObjectMeta{Name: spec.Name, Namespace: spec.Namespace, Labels: l, Annotations: a}, spec.Mode, spec.Class, size), nil
}

// SharedClaimComponent is the app.kubernetes.io/component label of a
// shared claim the provider created.
const SharedClaimComponent = "shared-home"

// GetClass returns the named class (the executor's Classes); nil when it does not
// exist.
func (c *Client) GetClass(ctx context.Context, name string) (*claims.StorageClass, error) {
	sc, err := c.GetStorageClass(ctx, name)
	if err != nil || sc == nil {
		return nil, err
	}
	out := &claims.StorageClass{Name: sc.Name, Provisioner: sc.Provisioner, Parameters: sc.Parameters,
		MountOptions: sc.MountOptions, Labels: sc.Labels}
	if sc.ReclaimPolicy != nil {
		out.ReclaimPolicy = string(*sc.ReclaimPolicy)
	}
	if sc.VolumeBindingMode != nil {
		out.BindingMode = string(*sc.VolumeBindingMode)
	}
	out.AllowExpansion = sc.AllowVolumeExpansion != nil && *sc.AllowVolumeExpansion
	return out, nil
}

// CreateClass creates a class (the executor's Classes); one that exists already is
// an error.
func (c *Client) CreateClass(ctx context.Context, sc claims.StorageClass) error {
	return c.CreateStorageClass(ctx, StorageClassOf(sc))
}

// StorageClassOf is the StorageClass object of sc.
func StorageClassOf(sc claims.StorageClass) *storagev1.StorageClass {
	reclaim := corev1.PersistentVolumeReclaimPolicy(sc.ReclaimPolicy)
	mode := storagev1.VolumeBindingMode(sc.BindingMode)
	expand := sc.AllowExpansion
	return &storagev1.StorageClass{
		ObjectMeta:           metav1.ObjectMeta{Name: sc.Name, Labels: sc.Labels},
		Provisioner:          sc.Provisioner,
		Parameters:           sc.Parameters,
		ReclaimPolicy:        &reclaim,
		VolumeBindingMode:    &mode,
		AllowVolumeExpansion: &expand,
		MountOptions:         sc.MountOptions,
	}
}

// UpdateClass sets the fields of a class that change in place
// (the executor's Classes): volume expansion, mount options, labels.
func (c *Client) UpdateClass(ctx context.Context, sc claims.StorageClass) error {
	patch, _ := json.Marshal(map[string]any{
		"allowVolumeExpansion": sc.AllowExpansion,
		"mountOptions":         sc.MountOptions,
		"metadata":             map[string]any{"labels": sc.Labels},
	})
	err := c.Backoff.Retry(ctx, func() error {
		_, err := c.Kube.StorageV1().StorageClasses().Patch(ctx, sc.Name, types.MergePatchType, patch, metav1.PatchOptions{})
		return err
	})
	return explainIf(err, "patch", "storageclasses", "")
}

// DeleteClass deletes a class (the executor's Classes); a missing one is not an
// error.
func (c *Client) DeleteClass(ctx context.Context, name string) error {
	return c.DeleteStorageClass(ctx, name)
}
