package parallel

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// ErrNotAttempted is the error of an item ForEach did not start because the
// API server could not be reached by an earlier one.
var ErrNotAttempted = errors.New("not attempted")

// ForEach runs fn for every item with at most n at once and returns the
// error of each item that failed, by index.
//
// When an item fails with an error unreachable says means the API server
// cannot be reached, the items still running are cancelled at their next
// retry and the ones not started yet are not attempted: their error wraps
// ErrNotAttempted and the cause. Waiting out every item's retries would only
// make the caller wait minutes for the same answer. unreachable may be nil.
func ForEach[T any](ctx context.Context, items []T, n int, unreachable func(error) bool, fn func(context.Context, T) error) map[int]error {
	if n < 1 {
		n = 1
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var mu sync.Mutex
	errs := map[int]error{}
	var down error // the first error that says the API server cannot be reached
	sem := make(chan struct{}, n)
	var wg sync.WaitGroup
	for i, it := range items {
		sem <- struct{}{}
		mu.Lock()
		stop := down
		mu.Unlock()
		if stop != nil {
			<-sem
			mu.Lock()
			errs[i] = fmt.Errorf("%w: the API server could not be reached: %w", ErrNotAttempted, stop)
			mu.Unlock()
			continue
		}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			if err := fn(ctx, it); err != nil {
				mu.Lock()
				errs[i] = err
				if down == nil && unreachable != nil && unreachable(err) {
					down = err
					cancel()
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return errs
}
