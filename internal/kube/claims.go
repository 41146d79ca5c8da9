package kube

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/claims"
)

// PageSize is the number of objects asked for per List call. A deployment of
// N claims costs ceil(N/PageSize) requests. Every page costs the API server
// and the provider a fixed overhead on top of its objects; 2,500 claims
// per page keeps that small at 5,000 users while bounding the size of one
// response (BENCHMARKS.md has the plans over N claims).
const PageSize = 2500

// Options are what a Client can be given besides its API: what tests
// inject, and the limits of its waits. The zero value is the default.
type Options struct {
	// CopyTimeout bounds how long one apply waits for a copy or verification
	// Job (default 2 hours). A copy that takes longer goes on; the next
	// apply waits again and then verifies it.
	CopyTimeout time.Duration
	// StepTimeout bounds each other wait of a migration: claim gone, volume
	// released, claim bound (default 2 minutes).
	StepTimeout time.Duration
}

// Default limits of Options.
const (
	DefaultCopyTimeout = 2 * time.Hour
	DefaultStepTimeout = 2 * time.Minute
)

// Client is what the provider holds after Configure.
type Client struct {
	Kube    API
	Backoff Backoff
	Options

	mu        sync.Mutex
	snapshots map[string]snapshot
	podState
}

// SnapshotTTL is how long a List of claims is reused within one provider
// process. OpenTofu refreshes and then plans in the same process; both read
// the same snapshot, so a plan costs one List. Apply always lists afresh,
// and every destructive step reads its claim again right before it (the
// gate, internal/execute): a snapshot only ever feeds a plan.
const SnapshotTTL = 30 * time.Second

// snapshot holds the claims converted (ClaimFromPVC), not the API's objects:
// a claims.Claim keeps a small part of a PersistentVolumeClaim (no managed
// fields, no conditions), and what it keeps is all any caller reads.
type snapshot struct {
	at     time.Time
	claims []claims.Claim
}

// NewClient wraps an API with the default retry policy and opts.
func NewClient(cs API, opts ...Options) *Client {
	c := &Client{Kube: cs, Backoff: DefaultBackoff, snapshots: map[string]snapshot{}}
	if len(opts) > 0 {
		c.Options = opts[0]
	}
	if c.CopyTimeout <= 0 {
		c.CopyTimeout = DefaultCopyTimeout
	}
	if c.StepTimeout <= 0 {
		c.StepTimeout = DefaultStepTimeout
	}
	return c
}

// ListClaims is ListClaimsFresh, or its result from less than SnapshotTTL ago.
func (c *Client) ListClaims(ctx context.Context, namespace, selector string) ([]claims.Claim, error) {
	key := namespace + "\x00" + selector
	c.mu.Lock()
	s, ok := c.snapshots[key]
	c.mu.Unlock()
	if ok && time.Since(s.at) < SnapshotTTL {
		return slices.Clone(s.claims), nil
	}
	return c.ListClaimsFresh(ctx, namespace, selector)
}

// ListClaimsFresh returns every PersistentVolumeClaim in namespace that
// matches selector as a claims.Claim, listed in pages of PageSize and
// converted page by page. A page token that expired mid-list (410 Gone)
// restarts the list from the beginning, once.
//
// The slice is the caller's own: the snapshot keeps another one, so a
// caller may reorder or change its elements. The elements' Labels,
// Annotations and AccessModes are shared with the snapshot and only read.
func (c *Client) ListClaimsFresh(ctx context.Context, namespace, selector string) ([]claims.Claim, error) {
	at := time.Now()
	items, err := c.listClaims(ctx, namespace, selector)
	if err != nil {
		return nil, err
	}
	if c.snapshots != nil {
		c.mu.Lock()
		c.snapshots[namespace+"\x00"+selector] = snapshot{at: at, claims: items}
		c.mu.Unlock()
		items = slices.Clone(items)
	}
	return items, nil
}

func (c *Client) listClaims(ctx context.Context, namespace, selector string) ([]claims.Claim, error) {
	in := interner{}
	return listConverted(ctx, c, "persistentvolumeclaims", namespace, metav1.ListOptions{LabelSelector: selector},
		func(ctx context.Context, opts metav1.ListOptions) (page[corev1.PersistentVolumeClaim], error) {
			pvcs := c.Kube.CoreV1().PersistentVolumeClaims(namespace)
			if pl, ok := pvcs.(pageLister); ok {
				return pl.listPage(ctx, opts)
			}
			l, err := pvcs.List(ctx, opts)
			if err != nil {
				return page[corev1.PersistentVolumeClaim]{}, err
			}
			return page[corev1.PersistentVolumeClaim]{items: l.Items, meta: l.ListMeta}, nil
		}, func(p *corev1.PersistentVolumeClaim) claims.Claim { return convertClaim(p, in) })
}

// Explain turns an API error into one a person can act on; for a forbidden
// call it names the verb, resource and namespace to grant.
func Explain(err error, verb, resource, namespace string) error {
	where := "cluster-wide"
	if namespace != "" {
		where = "in namespace " + namespace
	}
	switch {
	case untrusted(err):
		return fmt.Errorf("the API server's certificate is not trusted; set cluster_ca_certificate to the cluster's CA (or use a kubeconfig that has it): %w", err)
	case apierrors.IsForbidden(err):
		return fmt.Errorf("permission denied: the provider's identity cannot %s %s %s. Grant the verb %q on %q to it (see the provider documentation for the minimal Role): %w",
			verb, resource, where, verb, resource, err)
	case apierrors.IsUnauthorized(err):
		return fmt.Errorf("the API server rejected the provider's credentials (401) while trying to %s %s %s; check token, client certificate or exec settings: %w", verb, resource, where, err)
	}
	return fmt.Errorf("%s %s %s: %w", verb, resource, where, err)
}
