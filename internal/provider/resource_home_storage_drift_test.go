package provider

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	tfjson "github.com/hashicorp/terraform-json"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/acctest"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/testcluster"
)

// throttledResponses sums apiserver_request_total{code="429"} over every
// series of the API server's /metrics.
func throttledResponses(ctx context.Context, cs kubernetes.Interface) (float64, error) {
	body, err := cs.Discovery().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return 0, fmt.Errorf("read /metrics: %w", err)
	}
	var n float64
	for _, line := range strings.Split(string(body), "\n") {
		if !strings.HasPrefix(line, "apiserver_request_total{") || !strings.Contains(line, `code="429"`) {
			continue
		}
		f := strings.Fields(line)
		v, err := strconv.ParseFloat(f[len(f)-1], 64)
		if err != nil {
			return 0, fmt.Errorf("metric line %q: %w", line, err)
		}
		n += v
	}
	return n, nil
}

// homeClaimsByUser lists the home claims of a namespace by their username label.
func homeClaimsByUser(cs kubernetes.Interface, ns string) (map[string][]string, error) {
	l, err := cs.CoreV1().PersistentVolumeClaims(ns).List(context.Background(), metav1.ListOptions{LabelSelector: DefaultClaimSelector})
	if err != nil {
		return nil, err
	}
	out := map[string][]string{}
	for _, p := range l.Items {
		u := p.Labels["hub.jupyter.org/username"]
		out[u] = append(out[u], p.Name)
	}
	return out, nil
}

func requested(p *corev1.PersistentVolumeClaim) string {
	q := p.Spec.Resources.Requests[corev1.ResourceStorage]
	return q.String()
}

// An API server that admits one request at a time answers most of the
// provider's parallel writes with 429 Too Many Requests. The apply of 150
// users still completes: one claim per user, then an empty plan.
//
// The provider connects as the least-privilege identity (bound to
// cluster-admin here): the API server never throttles system:masters, so
// the admin identity would not see a single 429.
func TestAccHomeStorage_throttled(t *testing.T) {
	const total = 150
	acctest.Cluster(t) // fails or skips as every acceptance test does
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c2, err := testcluster.Start(ctx, testcluster.Options{APIServerArgs: []string{
		"--max-requests-inflight=1", "--max-mutating-requests-inflight=1",
		// Priority and fairness would queue the excess rather than refuse it;
		// the classic in-flight limit answers it with 429 at once.
		"--enable-priority-and-fairness=false",
	}})
	if err != nil {
		t.Fatalf("start the throttled test cluster: %v", err)
	}
	defer c2.Stop()
	admin := c2.Admin()
	ns := "homes-throttled"
	if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "jupyter-provider-admin"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects:   []rbacv1.Subject{{Kind: "User", APIGroup: rbacv1.GroupName, Name: testcluster.LimitedUser}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	users := make([]string, total)
	quoted := make([]string, total)
	for i := range users {
		users[i] = fmt.Sprintf("user%03d", i)
		quoted[i] = strconv.Quote(users[i])
	}
	cfg := acctest.Config(acctest.ProviderBlock(c2, c2.LimitedToken), fmt.Sprintf(`
resource "jupyter_home_storage" "homes" {
  namespace = %q
  capacity  = "1Gi"
  users     = jsonencode({ for u in [%s] : u => {} })
}`, ns, strings.Join(quoted, ", ")))

	before, err := throttledResponses(ctx, admin)
	if err != nil {
		t.Fatal(err)
	}
	var started time.Time
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				PreConfig: func() { started = time.Now() },
				Config:    cfg,
				Check: resource.ComposeAggregateTestCheckFunc(
					func(*terraform.State) error {
						byUser, err := homeClaimsByUser(admin, ns)
						if err != nil {
							return err
						}
						if len(byUser) != total {
							return fmt.Errorf("%d users have claims, want %d", len(byUser), total)
						}
						for _, u := range users {
							if got := byUser[u]; len(got) != 1 || got[0] != "claim-"+u {
								return fmt.Errorf("user %s has claims %v, want exactly [claim-%s]", u, got, u)
							}
						}
						return nil
					},
					checkClaim("user000", "name", "claim-user000"),
					checkClaim("user149", "capacity", "1Gi"),
					func(*terraform.State) error {
						after, err := throttledResponses(context.Background(), admin)
						if err != nil {
							return err
						}
						t.Logf("apply of %d users took %s; the API server answered %.0f requests with 429",
							total, time.Since(started).Round(100*time.Millisecond), after-before)
						if after-before < 1 {
							return fmt.Errorf("the API server answered no request with 429: the test did not throttle the provider")
						}
						return nil
					},
				),
			},
			{Config: cfg, PlanOnly: true},
		},
	})
}

// labelWriter is another client that keeps relabelling claims with
// resourceVersion-checked Updates, as a controller would.
type labelWriter struct {
	cs    kubernetes.Interface
	ns    string
	names []string
	grown string // the size the apply sets

	stop     chan struct{}
	stopOnce sync.Once
	done     chan struct{}

	mu         sync.Mutex
	writes     int
	conflicts  int
	grownWrite map[string]int    // writes made on a claim that already requested grown
	last       map[string]string // the last label value written per claim
	err        error
}

const (
	writerLabel = "homes.test/backup-policy"
	writerSeq   = "homes.test/write-seq"
)

func startLabelWriter(t *testing.T, cs kubernetes.Interface, ns, grown string, names []string) *labelWriter {
	w := &labelWriter{cs: cs, ns: ns, names: names, grown: grown, stop: make(chan struct{}), done: make(chan struct{}),
		grownWrite: map[string]int{}, last: map[string]string{}}
	t.Cleanup(w.halt)
	go w.run()
	return w
}

func (w *labelWriter) halt() {
	w.stopOnce.Do(func() { close(w.stop) })
	<-w.done
}

func (w *labelWriter) run() {
	defer close(w.done)
	ctx := context.Background()
	for i := 0; ; i++ {
		select {
		case <-w.stop:
			return
		default:
		}
		name := w.names[i%len(w.names)]
		pvc, err := w.cs.CoreV1().PersistentVolumeClaims(w.ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			w.fail(err)
			continue
		}
		if pvc.Labels == nil {
			pvc.Labels = map[string]string{}
		}
		seq := strconv.Itoa(i)
		pvc.Labels[writerLabel] = "nightly"
		pvc.Labels[writerSeq] = seq
		_, err = w.cs.CoreV1().PersistentVolumeClaims(w.ns).Update(ctx, pvc, metav1.UpdateOptions{})
		w.mu.Lock()
		switch {
		case apierrors.IsConflict(err):
			w.conflicts++
		case err != nil:
			w.err = err
		default:
			w.writes++
			w.last[name] = seq
			if requested(pvc) == w.grown {
				w.grownWrite[name]++
			}
		}
		w.mu.Unlock()
	}
}

func (w *labelWriter) fail(err error) {
	w.mu.Lock()
	w.err = err
	w.mu.Unlock()
	time.Sleep(10 * time.Millisecond)
}

// waitGrownWrites waits until the writer has written every claim at least
// once after the claim was resized, so its write raced nothing but the
// final state.
func (w *labelWriter) waitGrownWrites(limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		w.mu.Lock()
		missing := 0
		for _, n := range w.names {
			if w.grownWrite[n] == 0 {
				missing++
			}
		}
		w.mu.Unlock()
		if missing == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the other writer did not update %d claim(s) after their resize within %s", missing, limit)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// While apply grows bound claims, another client relabels the same claims
// in a tight loop with Update (which fails on a stale resourceVersion).
// Neither write is lost: every claim requests the new size and carries the
// other client's last labels, and no claim was replaced.
func TestAccHomeStorage_conflictingWrite(t *testing.T) {
	cs := acctest.Cluster(t).Admin()
	ns := acctest.Namespace(t)
	class := "homes-" + ns
	users := []string{"ada", "bea", "cyd", "dot", "eve", "fay"}
	names := make([]string, len(users))
	quoted := make([]string, len(users))
	for i, u := range users {
		names[i] = "claim-" + u
		quoted[i] = strconv.Quote(u)
		bindVolume(t, cs, ns, names[i], class)
	}
	cfg := func(capacity string) string {
		return homeStorageConfig(t, ns, class, fmt.Sprintf(`
  capacity = %q
  users    = jsonencode({ for u in [%s] : u => {} })`, capacity, strings.Join(quoted, ", ")))
	}
	var created map[string]string
	var writer *labelWriter
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: cfg("1Gi"),
				Check: func(*terraform.State) error {
					for _, n := range names {
						if err := waitBound(cs, ns, n); err != nil {
							return err
						}
					}
					created = uids(t, cs, ns, names...)
					return nil
				},
			},
			{
				PreConfig: func() { writer = startLabelWriter(t, cs, ns, "2Gi", names) },
				Config:    cfg("2Gi"),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(hsAddr, plancheck.ResourceActionUpdate),
					expectClass("safe"),
				}},
				Check: func(*terraform.State) error {
					err := writer.waitGrownWrites(20 * time.Second)
					writer.halt()
					if err != nil {
						return err
					}
					writer.mu.Lock()
					defer writer.mu.Unlock()
					if writer.err != nil {
						return fmt.Errorf("the other writer failed: %w", writer.err)
					}
					t.Logf("the other writer made %d updates (%d refused as conflicts) during the apply", writer.writes, writer.conflicts)
					for _, n := range names {
						p, err := cs.CoreV1().PersistentVolumeClaims(ns).Get(context.Background(), n, metav1.GetOptions{})
						if err != nil {
							return err
						}
						if got := requested(p); got != "2Gi" {
							return fmt.Errorf("%s requests %s after the apply, want 2Gi: the resize was lost", n, got)
						}
						if p.Labels[writerLabel] != "nightly" || p.Labels[writerSeq] != writer.last[n] {
							return fmt.Errorf("%s labels %v: the other writer's last write (seq %s) was lost", n, p.Labels, writer.last[n])
						}
						if p.Labels["hub.jupyter.org/username"] == "" || p.Labels["component"] != "singleuser-storage" {
							return fmt.Errorf("%s lost its KubeSpawner labels: %v", n, p.Labels)
						}
						if string(p.UID) != created[n] {
							return fmt.Errorf("%s was replaced (UID %s, was %s)", n, p.UID, created[n])
						}
					}
					return nil
				},
			},
			{Config: cfg("2Gi"), PlanOnly: true},
		},
	})
}

// claimsBefore hands the prior (refreshed) `claims` of the plan to f.
func claimsBefore(f func(map[string]map[string]any) error) plancheck.PlanCheck {
	return priorCheck{func(before map[string]any, _ *tfjson.ResourceChange) error {
		s, _ := before["claims"].(string)
		m, err := decodeClaims(s)
		if err != nil {
			return fmt.Errorf("prior claims: %v", err)
		}
		return f(m)
	}}
}

// Changes made outside Terraform:
//
// (a) a managed claim grown by someone else beyond capacity: the plan fails
// with "cannot shrink", naming the claim, and touches nothing; the refresh
// shows the claim's real size; raising capacity grows the others.
//
// (b) the StorageClass the resource created is deleted by someone else: the
// next plan creates it again, with the configured provisioner, and leaves
// the claims alone.
//
// (A claim deleted outside Terraform is TestAccHomeStorage_deletedOutOfBand.)
func TestAccHomeStorage_drift(t *testing.T) {
	cs := acctest.Cluster(t).Admin()
	ns := acctest.Namespace(t)
	class := "homes-" + ns
	names := []string{"claim-kim", "claim-lee"}
	for _, n := range names {
		bindVolume(t, cs, ns, n, class)
	}
	cfg := func(capacity string) string {
		return homeStorageConfig(t, ns, class, fmt.Sprintf(`
  capacity = %q
  users    = jsonencode({ kim = {}, lee = {} })`, capacity))
	}
	var created map[string]string
	sizes := func(want map[string]string) resource.TestCheckFunc {
		return func(*terraform.State) error {
			var wrong []string
			for n, size := range want {
				p, err := cs.CoreV1().PersistentVolumeClaims(ns).Get(context.Background(), n, metav1.GetOptions{})
				if err != nil {
					return err
				}
				if requested(p) != size || string(p.UID) != created[n] {
					wrong = append(wrong, fmt.Sprintf("%s requests %s (want %s), uid %s (was %s)", n, requested(p), size, p.UID, created[n]))
				}
			}
			sort.Strings(wrong)
			if len(wrong) > 0 {
				return fmt.Errorf("claims changed: %s", strings.Join(wrong, "; "))
			}
			return nil
		}
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: cfg("1Gi"),
				Check: func(*terraform.State) error {
					for _, n := range names {
						if err := waitBound(cs, ns, n); err != nil {
							return err
						}
					}
					created = uids(t, cs, ns, names...)
					return nil
				},
			},
			// (a) claim-kim grows to 2Gi outside Terraform; the config still says 1Gi.
			{
				PreConfig: func() {
					patch := []byte(`{"spec":{"resources":{"requests":{"storage":"2Gi"}}}}`)
					if _, err := cs.CoreV1().PersistentVolumeClaims(ns).Patch(context.Background(), "claim-kim",
						types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
						t.Fatal(err)
					}
				},
				Config:      cfg("1Gi"),
				ExpectError: wrapRE(`(?s)Home claims cannot shrink.*Claim claim-kim of user "kim" requests 2Gi; capacity = "1Gi" is smaller.*Keep capacity at 2Gi or more`),
			},
			{
				// Nothing was touched by the failed plan; raising capacity to
				// the grown size grows lee and leaves kim as it is.
				PreConfig: func() {
					if err := sizes(map[string]string{"claim-kim": "2Gi", "claim-lee": "1Gi"})(nil); err != nil {
						t.Fatal(err)
					}
				},
				Config: cfg("2Gi"),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(hsAddr, plancheck.ResourceActionUpdate),
					expectClass("safe"),
					// The refresh recorded the size someone else set.
					claimsBefore(func(m map[string]map[string]any) error {
						if m["kim"]["capacity"] != "2Gi" || m["lee"]["capacity"] != "1Gi" {
							return fmt.Errorf("refreshed claims do not show the live sizes: %v", m)
						}
						return nil
					}),
					expectPlannedClaim("kim", "capacity", "2Gi"),
					expectPlannedClaim("lee", "capacity", "2Gi"),
				}},
				Check: resource.ComposeAggregateTestCheckFunc(
					sizes(map[string]string{"claim-kim": "2Gi", "claim-lee": "2Gi"}),
					checkClaim("lee", "capacity", "2Gi"),
				),
			},
			// (b) the StorageClass is deleted outside Terraform.
			{
				PreConfig: func() {
					if err := cs.StorageV1().StorageClasses().Delete(context.Background(), class, metav1.DeleteOptions{}); err != nil {
						t.Fatal(err)
					}
				},
				Config: cfg("2Gi"),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(hsAddr, plancheck.ResourceActionUpdate),
					expectClass("safe"),
				}},
				Check: resource.ComposeAggregateTestCheckFunc(
					func(*terraform.State) error {
						sc, err := cs.StorageV1().StorageClasses().Get(context.Background(), class, metav1.GetOptions{})
						if err != nil {
							return fmt.Errorf("the StorageClass was not created again: %w", err)
						}
						if sc.Provisioner != "driver.longhorn.io" || sc.AllowVolumeExpansion == nil || !*sc.AllowVolumeExpansion {
							return fmt.Errorf("the StorageClass is not as configured: provisioner %s, allowVolumeExpansion %v", sc.Provisioner, sc.AllowVolumeExpansion)
						}
						return nil
					},
					sizes(map[string]string{"claim-kim": "2Gi", "claim-lee": "2Gi"}),
					checkClaim("kim", "phase", "Bound"),
				),
			},
			{Config: cfg("2Gi"), PlanOnly: true},
		},
	})
}
