package kube

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/claims"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/kubespawner"
)

// NewClaim is a claim object with meta, one access mode, a storage class
// (the cluster's default when "") and a requested size.
func NewClaim(meta metav1.ObjectMeta, mode, class string, size resource.Quantity) *corev1.PersistentVolumeClaim {
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: meta,
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.PersistentVolumeAccessMode(mode)},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: size}},
		},
	}
	if class != "" {
		pvc.Spec.StorageClassName = &class
	}
	return pvc
}

// Parallelism is how many claims are written at once.
const Parallelism = 16

// NamespaceLabels returns a namespace's labels (nil when it does not
// exist): the plan reads the Pod Security labels of the namespaces where a
// copy would run its Jobs.
func (c *Client) NamespaceLabels(ctx context.Context, name string) (map[string]string, error) {
	var ns *corev1.Namespace
	err := c.Backoff.Retry(ctx, func() (err error) {
		ns, err = c.Kube.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
		return err
	})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the Pod Security labels of namespace %s, where a copy runs its Jobs: %w", name, Explain(err, "get", "namespaces", ""))
	}
	return ns.Labels, nil
}

// GetStorageClass returns the named class, or nil when it does not exist.
// With name "" it returns the cluster's default class (nil if none).
func (c *Client) GetStorageClass(ctx context.Context, name string) (*storagev1.StorageClass, error) {
	if name == "" {
		var list *storagev1.StorageClassList
		err := c.Backoff.Retry(ctx, func() (err error) {
			list, err = c.Kube.StorageV1().StorageClasses().List(ctx, metav1.ListOptions{})
			return err
		})
		if err != nil {
			return nil, Explain(err, "list", "storageclasses", "")
		}
		for i := range list.Items {
			if list.Items[i].Annotations["storageclass.kubernetes.io/is-default-class"] == "true" {
				return &list.Items[i], nil
			}
		}
		return nil, nil
	}
	var sc *storagev1.StorageClass
	err := c.Backoff.Retry(ctx, func() (err error) {
		sc, err = c.Kube.StorageV1().StorageClasses().Get(ctx, name, metav1.GetOptions{})
		return err
	})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, Explain(err, "get", "storageclasses", "")
	}
	return sc, nil
}

// CreateStorageClass creates a class; one that already exists is an error.
func (c *Client) CreateStorageClass(ctx context.Context, sc *storagev1.StorageClass) error {
	err := c.Backoff.Retry(ctx, func() error {
		_, err := c.Kube.StorageV1().StorageClasses().Create(ctx, sc, metav1.CreateOptions{})
		return err
	})
	return explainIf(err, "create", "storageclasses", "")
}

// DeleteStorageClass deletes a class; a missing one is not an error.
// Claims and volumes provisioned from it keep working.
func (c *Client) DeleteStorageClass(ctx context.Context, name string) error {
	err := c.Backoff.Retry(ctx, func() error {
		err := c.Kube.StorageV1().StorageClasses().Delete(ctx, name, metav1.DeleteOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	})
	return explainIf(err, "delete", "storageclasses", "")
}

// CreateClaim creates a claim. A claim of that name that already exists
// for the same user and server (say KubeSpawner made it between plan and
// apply) is returned as it is; one of another user or server is an error,
// never taken for this one.
func (c *Client) CreateClaim(ctx context.Context, pvc *corev1.PersistentVolumeClaim) (*corev1.PersistentVolumeClaim, error) {
	var out *corev1.PersistentVolumeClaim
	err := c.Backoff.Retry(ctx, func() (err error) {
		out, err = c.Kube.CoreV1().PersistentVolumeClaims(pvc.Namespace).Create(ctx, pvc, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			out, err = c.Kube.CoreV1().PersistentVolumeClaims(pvc.Namespace).Get(ctx, pvc.Name, metav1.GetOptions{})
		}
		return err
	})
	if err == nil {
		for _, k := range []string{kubespawner.AnnotationUsername, kubespawner.AnnotationServername} {
			if want, got := pvc.Annotations[k], out.Annotations[k]; got != "" && got != want {
				return nil, fmt.Errorf("claim %s/%s exists already and is not this home: its %s is %q, not %q; nothing was changed", pvc.Namespace, pvc.Name, k, got, want)
			}
		}
	}
	return out, explainIf(err, "create", "persistentvolumeclaims", pvc.Namespace)
}

// ResizeClaim sets a claim's requested storage.
func (c *Client) ResizeClaim(ctx context.Context, namespace, name, size string) error {
	return c.patchClaim(ctx, namespace, name, map[string]any{"spec": map[string]any{"resources": map[string]any{"requests": map[string]string{"storage": size}}}})
}

// patchClaim merge-patches a claim.
func (c *Client) patchClaim(ctx context.Context, namespace, name string, patch map[string]any) error {
	body, err := json.Marshal(patch)
	if err != nil {
		return err
	}
	err = c.Backoff.Retry(ctx, func() error {
		_, err := c.Kube.CoreV1().PersistentVolumeClaims(namespace).Patch(ctx, name, types.MergePatchType, body, metav1.PatchOptions{})
		return err
	})
	return explainIf(err, "patch", "persistentvolumeclaims", namespace)
}

// RemoveClaim deletes a claim, only if it still has uid, and waits until it
// is gone. A missing claim is not an error. Only execute.Delete calls it,
// after the gate (safety.Gate).
func (c *Client) RemoveClaim(ctx context.Context, namespace, name, uid string) error {
	opts := metav1.DeleteOptions{}
	if uid != "" {
		u := types.UID(uid)
		opts.Preconditions = &metav1.Preconditions{UID: &u}
	}
	err := c.Backoff.Retry(ctx, func() error {
		err := c.Kube.CoreV1().PersistentVolumeClaims(namespace).Delete(ctx, name, opts)
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	})
	if err != nil {
		return explainIf(err, "delete", "persistentvolumeclaims", namespace)
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		_, err := c.Kube.CoreV1().PersistentVolumeClaims(namespace).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil && !Retriable(err) {
			// Forbidden, say: waiting longer cannot tell whether the claim is gone.
			return Explain(err, "get", "persistentvolumeclaims", namespace)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("claim %s/%s still exists two minutes after its deletion; a pod may still use it (kubernetes.io/pvc-protection)", namespace, name)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// GetClaim returns the claim, or nil when it does not exist.
func (c *Client) GetClaim(ctx context.Context, namespace, name string) (*corev1.PersistentVolumeClaim, error) {
	var pvc *corev1.PersistentVolumeClaim
	err := c.Backoff.Retry(ctx, func() (err error) {
		pvc, err = c.Kube.CoreV1().PersistentVolumeClaims(namespace).Get(ctx, name, metav1.GetOptions{})
		return err
	})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, Explain(err, "get", "persistentvolumeclaims", namespace)
	}
	return pvc, nil
}

// Claim is the claim as it is now (execute.Cluster); nil when it does not exist.
func (c *Client) Claim(ctx context.Context, namespace, name string) (*claims.Claim, error) {
	pvc, err := c.GetClaim(ctx, namespace, name)
	if err != nil || pvc == nil {
		return nil, err
	}
	cl := ClaimFromPVC(pvc)
	return &cl, nil
}

func explainIf(err error, verb, resource, namespace string) error {
	if err == nil {
		return nil
	}
	return Explain(err, verb, resource, namespace)
}
