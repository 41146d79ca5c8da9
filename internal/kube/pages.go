package kube

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// page is one page of a List: its items and its list metadata.
type page[T any] struct {
	items []T
	meta  metav1.ListMeta
}

// eachPage lists a resource in pages of PageSize, each request retried as
// any other, and calls fn with the items of every page. A page token that
// expired mid-list (410 Gone) restarts the list from the beginning, once:
// fn then sees the first pages again, so it must not count an item twice.
// The one paginator of the package.
func eachPage[T any](ctx context.Context, c *Client, resource, namespace string, opts metav1.ListOptions,
	fetch func(context.Context, metav1.ListOptions) (page[T], error), fn func(items []T, meta metav1.ListMeta, first bool)) error {
	opts.Limit = PageSize
	restarted, first := false, true
	for {
		var p page[T]
		err := c.Backoff.Retry(ctx, func() (err error) {
			p, err = fetch(ctx, opts)
			return err
		})
		if apierrors.IsResourceExpired(err) && !restarted {
			restarted, first, opts.Continue = true, true, ""
			continue
		}
		if err != nil {
			return Explain(err, "list", resource, namespace)
		}
		fn(p.items, p.meta, first)
		if p.meta.Continue == "" {
			return nil
		}
		first, opts.Continue = false, p.meta.Continue
	}
}

// listAll is every item of a resource (eachPage). One page is returned
// without a copy; the slice of several is sized once from the first page:
// copying thousands of claims as the slice grows costs more than decoding
// them.
func listAll[T any](ctx context.Context, c *Client, resource, namespace string, opts metav1.ListOptions,
	fetch func(context.Context, metav1.ListOptions) (page[T], error)) ([]T, error) {
	var out []T
	err := eachPage(ctx, c, resource, namespace, opts, fetch, func(items []T, meta metav1.ListMeta, first bool) {
		switch {
		case first && meta.Continue == "":
			out = items // one page: no copy
			return
		case first && meta.RemainingItemCount != nil:
			out = make([]T, 0, len(items)+int(*meta.RemainingItemCount))
		case first:
			out = nil
		}
		out = append(out, items...)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// listConverted is every item of a resource (eachPage), each converted by
// conv as its page arrives, and returns what conv made: only one page of the
// API's objects is alive at a time, however many pages the list has. The
// slice is sized once from the first page. A restarted list (410 Gone)
// starts the slice again, so no item is converted into it twice.
func listConverted[T, U any](ctx context.Context, c *Client, resource, namespace string, opts metav1.ListOptions,
	fetch func(context.Context, metav1.ListOptions) (page[T], error), conv func(*T) U) ([]U, error) {
	var out []U
	err := eachPage(ctx, c, resource, namespace, opts, fetch, func(items []T, meta metav1.ListMeta, first bool) {
		if first {
			n := len(items)
			if r := meta.RemainingItemCount; r != nil && *r > 0 && *r < maxRemaining {
				n += int(*r)
			}
			out = make([]U, 0, n)
		}
		for i := range items {
			out = append(out, conv(&items[i]))
		}
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// maxRemaining bounds the remainingItemCount an API server's answer may size
// a slice by; past it the slice grows as pages arrive.
const maxRemaining = 1 << 22
