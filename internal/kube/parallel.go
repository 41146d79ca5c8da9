package kube

import (
	"context"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/parallel"
)

// ErrNotAttempted is the error of an item ForEach did not start because the
// API server could not be reached by an earlier one (parallel.ErrNotAttempted).
var ErrNotAttempted = parallel.ErrNotAttempted

// ForEach runs fn for every item with at most Parallelism at once and
// returns the error of each item that failed, by index.
//
// When an item fails because the API server cannot be reached (Unreachable),
// the items still running are cancelled at their next retry and the ones
// not started yet are not attempted: their error wraps ErrNotAttempted and
// the cause (parallel.ForEach).
func ForEach[T any](ctx context.Context, items []T, fn func(context.Context, T) error) map[int]error {
	return ForEachN(ctx, items, Parallelism, fn)
}

// ForEachN is ForEach with at most n items at once.
func ForEachN[T any](ctx context.Context, items []T, n int, fn func(context.Context, T) error) map[int]error {
	return parallel.ForEach(ctx, items, n, Unreachable, fn)
}
