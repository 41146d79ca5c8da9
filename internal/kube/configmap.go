package kube

import (
	"bytes"
	"context"
	"maps"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// GetConfigMap returns the ConfigMap, or nil when it does not exist.
func (c *Client) GetConfigMap(ctx context.Context, namespace, name string) (*corev1.ConfigMap, error) {
	var cm *corev1.ConfigMap
	err := c.Backoff.Retry(ctx, func() (err error) {
		cm, err = c.Kube.CoreV1().ConfigMaps(namespace).Get(ctx, name, metav1.GetOptions{})
		return err
	})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, Explain(err, "get", "configmaps", namespace)
	}
	return cm, nil
}

// ApplyConfigMap creates the ConfigMap, or replaces the data, labels and
// annotations of the one that exists. It reads first: the hub's document
// is large at tens of thousands of users (DESIGN.md's Cost at scale has
// its size), and a Create that the API server refuses (it exists) would
// send all of it for nothing. An existing one that already holds all of it
// is left as it is.
func (c *Client) ApplyConfigMap(ctx context.Context, cm *corev1.ConfigMap) error {
	cms := c.Kube.CoreV1().ConfigMaps(cm.Namespace)
	err := c.Backoff.Retry(ctx, func() error {
		live, err := cms.Get(ctx, cm.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			if _, err = cms.Create(ctx, cm, metav1.CreateOptions{}); !apierrors.IsAlreadyExists(err) {
				return err
			}
			live, err = cms.Get(ctx, cm.Name, metav1.GetOptions{}) // created since the Get
		}
		if err != nil {
			return err
		}
		changed := !maps.Equal(live.Data, cm.Data) || !maps.EqualFunc(live.BinaryData, cm.BinaryData, bytes.Equal)
		live.Data, live.BinaryData = cm.Data, cm.BinaryData
		if live.Labels == nil {
			live.Labels = map[string]string{}
		}
		for k, v := range cm.Labels {
			changed = changed || live.Labels[k] != v
			live.Labels[k] = v
		}
		if live.Annotations == nil {
			live.Annotations = map[string]string{}
		}
		for k, v := range cm.Annotations {
			changed = changed || live.Annotations[k] != v
			live.Annotations[k] = v
		}
		if !changed {
			return nil
		}
		_, err = cms.Update(ctx, live, metav1.UpdateOptions{})
		return err // a conflict is retried from the Get
	})
	return explainIf(err, "update", "configmaps", cm.Namespace)
}

// DeleteConfigMap deletes the ConfigMap; a missing one is not an error.
func (c *Client) DeleteConfigMap(ctx context.Context, namespace, name string) error {
	err := c.Backoff.Retry(ctx, func() error {
		err := c.Kube.CoreV1().ConfigMaps(namespace).Delete(ctx, name, metav1.DeleteOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	})
	return explainIf(err, "delete", "configmaps", namespace)
}

// ListNodes returns every Node, in pages of PageSize. A page token that
// expired mid-list (410 Gone) restarts the list once.
func (c *Client) ListNodes(ctx context.Context) ([]corev1.Node, error) {
	return listAll(ctx, c, "nodes", "", metav1.ListOptions{}, func(ctx context.Context, opts metav1.ListOptions) (page[corev1.Node], error) {
		l, err := c.Kube.CoreV1().Nodes().List(ctx, opts)
		if err != nil {
			return page[corev1.Node]{}, err
		}
		return page[corev1.Node]{items: l.Items, meta: l.ListMeta}, nil
	})
}
