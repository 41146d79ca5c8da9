package kube

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"weak"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The one paginator: pages follow their continue tokens; a token that
// expired mid-list (410 Gone) restarts the list once, and the result holds
// every item once; a second expiry is an error.
func TestListAll(t *testing.T) {
	pages := map[string]page[int]{
		"":   {items: []int{1, 2}, meta: metav1.ListMeta{Continue: "p2", RemainingItemCount: ptr(int64(3))}},
		"p2": {items: []int{3, 4}, meta: metav1.ListMeta{Continue: "p3"}},
		"p3": {items: []int{5}, meta: metav1.ListMeta{}},
	}
	for _, tc := range []struct {
		name    string
		expire  int // how many times the token p2 has expired
		want    []int
		wantErr bool
	}{
		{"three pages", 0, []int{1, 2, 3, 4, 5}, false},
		{"expired once: restarted", 1, []int{1, 2, 3, 4, 5}, false},
		{"expired twice", 2, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			expired, calls := 0, 0
			c := &Client{}
			got, err := listAll(context.Background(), c, "things", "ns", metav1.ListOptions{}, func(_ context.Context, opts metav1.ListOptions) (page[int], error) {
				calls++
				if opts.Limit != PageSize {
					t.Errorf("limit %d", opts.Limit)
				}
				if opts.Continue == "p2" && expired < tc.expire {
					expired++
					return page[int]{}, apierrors.NewResourceExpired("the token expired")
				}
				return pages[opts.Continue], nil
			})
			if (err != nil) != tc.wantErr || !slices.Equal(got, tc.want) {
				t.Errorf("got %v, %v; want %v (error %v) after %d calls", got, err, tc.want, tc.wantErr, calls)
			}
		})
	}
	one := []int{7}
	got, err := listAll(context.Background(), &Client{}, "things", "", metav1.ListOptions{}, func(context.Context, metav1.ListOptions) (page[int], error) {
		return page[int]{items: one}, nil
	})
	if err != nil || &got[0] != &one[0] {
		t.Errorf("one page is returned as it is: %v %v", got, err)
	}
}

// listConverted converts page by page: the result holds every item once,
// after a restart (410 Gone) too, converted by conv; and an object of a page
// is not kept once its page is converted (only one page of the API's
// objects is alive at a time).
func TestListConverted(t *testing.T) {
	// thing stands for an API object: what it points to is the part the
	// conversion drops.
	type thing struct {
		n    int
		rest *[64]int
	}
	pages := map[string][]int{"": {1, 2}, "p2": {3, 4}, "p3": {5}}
	next := map[string]string{"": "p2", "p2": "p3"}
	for _, tc := range []struct {
		name    string
		expire  int // how many times the token p2 has expired
		want    []string
		wantErr bool
	}{
		{"three pages", 0, []string{"1", "2", "3", "4", "5"}, false},
		{"expired once: restarted", 1, []string{"1", "2", "3", "4", "5"}, false},
		{"expired twice", 2, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			expired, calls := 0, 0
			var earlier []weak.Pointer[[64]int] // what the pages fetched before hold
			got, err := listConverted(context.Background(), &Client{}, "things", "ns", metav1.ListOptions{}, func(_ context.Context, opts metav1.ListOptions) (page[thing], error) {
				calls++
				if opts.Limit != PageSize {
					t.Errorf("limit %d", opts.Limit)
				}
				runtime.GC()
				for i, w := range earlier {
					if w.Value() != nil {
						t.Errorf("call %d: an object of an earlier page (%d) is still alive", calls, i)
					}
				}
				if opts.Continue == "p2" && expired < tc.expire {
					expired++
					return page[thing]{}, apierrors.NewResourceExpired("the token expired")
				}
				var p page[thing]
				for _, n := range pages[opts.Continue] {
					rest := new([64]int)
					earlier = append(earlier, weak.Make(rest))
					p.items = append(p.items, thing{n, rest})
				}
				p.meta.Continue = next[opts.Continue]
				if opts.Continue == "" {
					p.meta.RemainingItemCount = ptr(int64(3))
				}
				return p, nil
			}, func(x *thing) string { return fmt.Sprint(x.n) })
			if (err != nil) != tc.wantErr || !slices.Equal(got, tc.want) {
				t.Errorf("got %v, %v; want %v (error %v) after %d calls", got, err, tc.want, tc.wantErr, calls)
			}
			if err == nil && cap(got) != len(got) {
				t.Errorf("the result was not sized from the first page: cap %d, len %d", cap(got), len(got))
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

// lazyPages are pages that come undecoded, as a protobuf answer does: the
// fetch reads the continue token, decode yields the items.
type lazyPages struct {
	items map[string][]int
	next  map[string]string
	// asked is closed when the page of that token is fetched.
	asked map[string]chan struct{}
}

func newLazyPages() *lazyPages {
	p := &lazyPages{items: map[string][]int{"": {1, 2}, "p2": {3, 4}, "p3": {5}}, next: map[string]string{"": "p2", "p2": "p3"}, asked: map[string]chan struct{}{}}
	for k := range p.items {
		p.asked[k] = make(chan struct{})
	}
	return p
}

// An undecoded page has the next one asked for before it is decoded: the
// decode of each page but the last waits until the next page's request is
// made (a list that fetched one page after the other would wait for ever,
// and fails after a while).
func TestEachPageAsksAheadOfDecoding(t *testing.T) {
	p := newLazyPages()
	var once sync.Map
	got, err := listConverted(context.Background(), &Client{}, "things", "ns", metav1.ListOptions{}, func(_ context.Context, opts metav1.ListOptions) (page[int], error) {
		tok := opts.Continue
		if _, seen := once.LoadOrStore(tok, true); !seen {
			close(p.asked[tok])
		}
		meta := metav1.ListMeta{Continue: p.next[tok]}
		return page[int]{meta: meta, decode: func() ([]int, metav1.ListMeta, error) {
			if n := p.next[tok]; n != "" {
				select {
				case <-p.asked[n]:
				case <-time.After(10 * time.Second):
					return nil, metav1.ListMeta{}, fmt.Errorf("page %q was not asked for while page %q decoded", n, tok)
				}
			}
			return p.items[tok], meta, nil
		}}, nil
	}, func(n *int) int { return *n })
	if err != nil || !slices.Equal(got, []int{1, 2, 3, 4, 5}) {
		t.Fatalf("got %v, %v", got, err)
	}
}

// A page asked for ahead whose token expired restarts the list once, and
// every item is there once; a decoded token other than the one read ahead
// fails the list; so does a page that does not decode.
func TestEachPageAheadFailures(t *testing.T) {
	for _, tc := range []struct {
		name    string
		expire  int    // how many times the token p2 expires
		lie     string // the token whose decode finds another continue token
		broken  string // the token whose decode fails
		want    []int
		wantErr string
	}{
		{name: "expired once: restarted", expire: 1, want: []int{1, 2, 3, 4, 5}},
		{name: "expired twice", expire: 2, wantErr: "expired"},
		{name: "decoded token differs", lie: "p2", wantErr: "differs"},
		{name: "decode fails", broken: "p3", wantErr: "cannot decode"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newLazyPages()
			var mu sync.Mutex
			expired := 0
			got, err := listConverted(context.Background(), &Client{}, "things", "ns", metav1.ListOptions{}, func(_ context.Context, opts metav1.ListOptions) (page[int], error) {
				tok := opts.Continue
				mu.Lock()
				if tok == "p2" && expired < tc.expire {
					expired++
					mu.Unlock()
					return page[int]{}, apierrors.NewResourceExpired("the token expired")
				}
				mu.Unlock()
				meta := metav1.ListMeta{Continue: p.next[tok]}
				return page[int]{meta: meta, decode: func() ([]int, metav1.ListMeta, error) {
					switch {
					case tc.lie != "" && tok == tc.lie:
						return p.items[tok], metav1.ListMeta{Continue: "elsewhere"}, nil
					case tc.broken != "" && tok == tc.broken:
						return nil, metav1.ListMeta{}, errors.New("cannot decode")
					}
					return p.items[tok], meta, nil
				}}, nil
			}, func(n *int) int { return *n })
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got %v, %v; want an error with %q", got, err, tc.wantErr)
				}
				return
			}
			if err != nil || !slices.Equal(got, tc.want) {
				t.Fatalf("got %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}

// A remainingItemCount out of bounds (negative, or past any real list)
// sizes no slice: the list is read as it comes (ListVolumes and ListNodes
// once panicked on it, makeslice: cap out of range).
func TestListSizesNoSliceByABadRemainingCount(t *testing.T) {
	for _, r := range []int64{-5, 0, 1 << 62} {
		pages := map[string]page[int]{
			"":   {items: []int{1, 2}, meta: metav1.ListMeta{Continue: "p2", RemainingItemCount: ptr(r)}},
			"p2": {items: []int{3}},
		}
		fetch := func(_ context.Context, opts metav1.ListOptions) (page[int], error) { return pages[opts.Continue], nil }
		func() {
			defer func() {
				if p := recover(); p != nil {
					t.Errorf("remainingItemCount %d: panic %v", r, p)
				}
			}()
			all, err := listAll(context.Background(), &Client{}, "things", "", metav1.ListOptions{}, fetch)
			if err != nil || !slices.Equal(all, []int{1, 2, 3}) {
				t.Errorf("listAll, remainingItemCount %d: %v %v", r, all, err)
			}
			conv, err := listConverted(context.Background(), &Client{}, "things", "", metav1.ListOptions{}, fetch, func(n *int) int { return *n })
			if err != nil || !slices.Equal(conv, []int{1, 2, 3}) {
				t.Errorf("listConverted, remainingItemCount %d: %v %v", r, conv, err)
			}
		}()
	}
}
