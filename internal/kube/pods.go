package kube

import (
	"context"
	"maps"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/claims"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/migration"
)

// Which pods mount which claims. Every step that deletes a claim or copies
// into one asks this right before it runs (the gate's facts), so a List of
// the namespace's pods serves each such step. Steps run in parallel
// (Parallelism), so asking at once must not cost one List each: a caller
// gets the result of a List that began after it asked, and callers that
// ask while a List is under way share the next one. Each answer is as
// fresh as one List per caller would be; a round of parallel steps costs
// one List.

// podUse is one unfinished pod mounting a claim.
type podUse struct {
	pod string
	job string // the Job the pod belongs to; "" when none
}

// podList is one List of a namespace's unfinished pods, by claim mounted.
type podList struct {
	done chan struct{}
	uses map[claims.Ref][]podUse
	err  error
}

// podLists are a namespace's List under way and the one that waits for it.
type podLists struct{ running, next *podList }

// mountsNow is, by claim, the unfinished pods in namespace ("" for all)
// that mount it, from a List that began after the call.
func (c *Client) mountsNow(ctx context.Context, namespace string) (map[claims.Ref][]podUse, error) {
	c.podMu.Lock()
	if c.pods == nil {
		c.pods = map[string]*podLists{}
	}
	st := c.pods[namespace]
	if st == nil {
		st = &podLists{}
		c.pods[namespace] = st
	}
	var l, after *podList
	run := true
	switch {
	case st.running == nil:
		l = &podList{done: make(chan struct{})}
		st.running = l
	case st.next != nil:
		l, run = st.next, false // not begun yet: it begins after this call
	default:
		l = &podList{done: make(chan struct{})}
		st.next, after = l, st.running
	}
	c.podMu.Unlock()
	if run {
		if after != nil {
			<-after.done
			c.podMu.Lock()
			st.running, st.next = l, nil
			c.podMu.Unlock()
		}
		l.uses, l.err = c.listPodUses(ctx, namespace)
		c.podMu.Lock()
		if st.running == l {
			st.running = nil
		}
		c.podMu.Unlock()
		close(l.done)
	}
	select {
	case <-l.done:
		return l.uses, l.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// listPodUses lists the unfinished pods of namespace, by claim mounted.
func (c *Client) listPodUses(ctx context.Context, namespace string) (map[claims.Ref][]podUse, error) {
	uses := map[claims.Ref][]podUse{}
	seen := map[string]bool{} // a restarted List shows a pod again
	err := eachPage(ctx, c, "pods", namespace, metav1.ListOptions{}, c.podPage(namespace), func(l listed[corev1.Pod]) {
		for i := range l.items {
			p := &l.items[i]
			if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed || seen[p.Namespace+"/"+p.Name] {
				continue
			}
			seen[p.Namespace+"/"+p.Name] = true
			for _, v := range p.Spec.Volumes {
				if v.PersistentVolumeClaim != nil {
					ref := claims.Ref{Namespace: p.Namespace, Name: v.PersistentVolumeClaim.ClaimName}
					uses[ref] = append(uses[ref], podUse{pod: p.Name, job: p.Labels[JobNameLabel]})
				}
			}
		}
	})
	return uses, err
}

// podPage fetches one page of the pods of namespace (eachPage).
func (c *Client) podPage(namespace string) func(context.Context, metav1.ListOptions) (page[corev1.Pod], error) {
	return func(ctx context.Context, opts metav1.ListOptions) (page[corev1.Pod], error) {
		l, err := c.Kube.CoreV1().Pods(namespace).List(ctx, opts)
		if err != nil {
			return page[corev1.Pod]{}, err
		}
		return page[corev1.Pod]{items: l.Items, meta: l.ListMeta}, nil
	}
}

// MountedBy lists the unfinished pods in namespace that mount claim, except
// those of Job exceptJob (execute.Cluster), from a List that began after
// the call.
func (c *Client) MountedBy(ctx context.Context, namespace, claim, exceptJob string) ([]string, error) {
	uses, err := c.mountsNow(ctx, namespace)
	if err != nil {
		return nil, err
	}
	pods := map[string]bool{}
	for _, u := range uses[claims.Ref{Namespace: namespace, Name: claim}] {
		if exceptJob == "" || u.job != exceptJob {
			pods[u.pod] = true
		}
	}
	return slices.Sorted(maps.Keys(pods)), nil
}

// MountedClaims returns the claims used by pods in namespace ("" for all) that
// have not finished, but for the pods of this provider's own copy and
// verification Jobs (migration.IsMigrationJob): these are not servers.
// The gate's MountedBy counts them.
func (c *Client) MountedClaims(ctx context.Context, namespace string) (map[claims.Ref]bool, error) {
	uses, err := c.mountsNow(ctx, namespace)
	if err != nil {
		return nil, err
	}
	out := map[claims.Ref]bool{}
	for claim, us := range uses {
		for _, u := range us {
			if !migration.IsMigrationJob(u.job) {
				out[claim] = true
			}
		}
	}
	return out, nil
}

// podState guards the Lists of pods of a Client.
type podState struct {
	podMu sync.Mutex
	pods  map[string]*podLists
}
