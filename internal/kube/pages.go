package kube

import (
	"context"
	"errors"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// page is one page of a List: its items and its list metadata. A page may
// come undecoded: meta was read from the response ahead of its items (see
// peekListMeta), and decode yields the items and the metadata as decoded.
type page[T any] struct {
	items  []T
	meta   metav1.ListMeta
	decode func() ([]T, metav1.ListMeta, error)
}

// listed is a page as eachPage hands it on: its items, its list metadata,
// and whether it is the first page of the list (or of the list restarted).
type listed[T any] struct {
	items []T
	meta  metav1.ListMeta
	first bool
}

// fetched is the outcome of one page's request.
type fetched[T any] struct {
	p   page[T]
	err error
}

// eachPage lists a resource in pages of PageSize, each request retried as
// any other, and calls fn with every page (listed). A page token that
// expired mid-list (410 Gone) restarts the list from the beginning, once:
// fn then sees the first pages again, so it must not count an item twice.
// The one paginator of the package.
//
// A page that comes undecoded has its continue token read ahead: the next
// page is asked for before this one is decoded, so the API server prepares
// page k+1 while the provider decodes and converts page k. The token that
// decoding finds must be the one read ahead, or the list fails. Pages that
// come decoded are fetched one after the other, so at most one page of
// decoded objects is alive at a time either way.
func eachPage[T any](ctx context.Context, c *Client, resource, namespace string, opts metav1.ListOptions,
	fetch func(context.Context, metav1.ListOptions) (page[T], error), fn func(listed[T])) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // a page asked for ahead is not waited for
	get := func(opts metav1.ListOptions) <-chan fetched[T] {
		out := make(chan fetched[T], 1)
		go func() {
			var f fetched[T]
			f.err = c.Backoff.Retry(ctx, func() (err error) {
				f.p, err = fetch(ctx, opts)
				return err
			})
			out <- f
		}()
		return out
	}
	opts.Limit = PageSize
	restarted, first := false, true
	next := get(opts)
	for {
		f := <-next
		if apierrors.IsResourceExpired(f.err) && !restarted {
			restarted, first, opts.Continue = true, true, ""
			next = get(opts)
			continue
		}
		if f.err != nil {
			return Explain(f.err, "list", resource, namespace)
		}
		items, meta := f.p.items, f.p.meta
		if f.p.decode != nil {
			if meta.Continue != "" {
				ahead := opts
				ahead.Continue = meta.Continue
				next = get(ahead)
			}
			read := meta.Continue
			var err error
			if items, meta, err = f.p.decode(); err != nil {
				return Explain(err, "list", resource, namespace)
			}
			if meta.Continue != read {
				return Explain(errors.New("the page token read ahead of decoding differs from the decoded one"), "list", resource, namespace)
			}
		}
		fn(listed[T]{items: items, meta: meta, first: first})
		if meta.Continue == "" {
			return nil
		}
		first, opts.Continue = false, meta.Continue
		if f.p.decode == nil {
			next = get(opts)
		}
	}
}

// listAll is every item of a resource (eachPage). One page is returned
// without a copy; the slice of several is sized once from the first page:
// copying thousands of claims as the slice grows costs more than decoding
// them.
func listAll[T any](ctx context.Context, c *Client, resource, namespace string, opts metav1.ListOptions,
	fetch func(context.Context, metav1.ListOptions) (page[T], error)) ([]T, error) {
	var out []T
	err := eachPage(ctx, c, resource, namespace, opts, fetch, func(l listed[T]) {
		switch {
		case l.first && l.meta.Continue == "":
			out = l.items // one page: no copy
			return
		case l.first:
			out = make([]T, 0, sizeHint(l.items, l.meta))
		}
		out = append(out, l.items...)
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
	err := eachPage(ctx, c, resource, namespace, opts, fetch, func(l listed[T]) {
		if l.first {
			out = make([]U, 0, sizeHint(l.items, l.meta))
		}
		for i := range l.items {
			out = append(out, conv(&l.items[i]))
		}
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// sizeHint is how many items a list whose first page is items has, as far
// as the answer's remainingItemCount says: the server's count is trusted
// only between 1 and maxRemaining (outside it the slice grows as pages
// arrive; a negative or huge count must not size, or fail, an allocation).
func sizeHint[T any](items []T, meta metav1.ListMeta) int {
	n := len(items)
	if r := meta.RemainingItemCount; r != nil && *r > 0 && *r < maxRemaining {
		n += int(*r)
	}
	return n
}

// maxRemaining bounds the remainingItemCount an API server's answer may size
// a slice by; past it the slice grows as pages arrive.
const maxRemaining = 1 << 22
