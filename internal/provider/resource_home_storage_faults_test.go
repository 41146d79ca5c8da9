package provider

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	tfjson "github.com/hashicorp/terraform-json"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	corev1 "k8s.io/api/core/v1"
	kresource "k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/acctest"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/migration"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/userset"
)

// claimUIDsByName lists the home claims of a namespace: name -> UID.
func claimUIDsByName(cs kubernetes.Interface, ns string) (map[string]string, error) {
	l, err := cs.CoreV1().PersistentVolumeClaims(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(l.Items))
	for _, p := range l.Items {
		out[p.Name] = string(p.UID)
	}
	return out, nil
}

// priorCheck hands the resource's prior state, as the plan shows it, to f.
type priorCheck struct {
	f func(before map[string]any, rc *tfjson.ResourceChange) error
}

func (c priorCheck) CheckPlan(_ context.Context, req plancheck.CheckPlanRequest, resp *plancheck.CheckPlanResponse) {
	for _, rc := range req.Plan.ResourceChanges {
		if rc.Address == hsAddr && rc.Change != nil {
			before, _ := rc.Change.Before.(map[string]any)
			resp.Error = c.f(before, rc)
			return
		}
	}
	resp.Error = fmt.Errorf("no planned change for %s", hsAddr)
}

// recordedUsers are the users of a users value in a plan's JSON, sorted.
func recordedUsers(v any) ([]string, error) {
	s, ok := v.(string)
	if !ok {
		return nil, fmt.Errorf("users is %T, not a string", v)
	}
	return userset.Parse(s)
}

// The API server stops in the middle of an apply that creates 300 home
// claims: the apply fails soon with an error that says so, the state records
// the claims that were created, nothing is deleted, and once the API server
// is back a re-apply converges to one claim per user and an empty plan.
func TestAccHomeStorage_faultAPIServerStopped(t *testing.T) {
	const total, stopAfter = 300, 50
	c := acctest.Cluster(t)
	cs := c.Admin()
	ns := acctest.Namespace(t)

	var mu sync.Mutex
	stopped := false
	restart := func() error {
		mu.Lock()
		defer mu.Unlock()
		if !stopped {
			return nil
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if err := c.StartAPIServer(ctx); err != nil {
			return err
		}
		stopped = false
		return nil
	}
	// Registered after Namespace, so it runs before the namespace is deleted.
	t.Cleanup(func() {
		if err := restart(); err != nil {
			t.Errorf("restart the API server: %v", err)
		}
	})
	pollCtx, stopPolling := context.WithCancel(context.Background())
	t.Cleanup(stopPolling)

	users := make([]string, total)
	quoted := make([]string, total)
	for i := range users {
		users[i] = fmt.Sprintf("user%03d", i)
		quoted[i] = fmt.Sprintf("%q", users[i])
	}
	// qps keeps the apply slow enough (about 30 creates a second) that the
	// API server is stopped well before the last claim.
	cfg := acctest.Config(fmt.Sprintf(`
provider "jupyter" {
  host                   = %q
  token                  = %q
  cluster_ca_certificate = %q
  qps                    = 30
  burst                  = 30
}`, c.Host, c.AdminToken, c.CAPEM), fmt.Sprintf(`
resource "jupyter_home_storage" "homes" {
  namespace = %q
  capacity  = "1Gi"
  users     = jsonencode({ for u in [%s] : u => {} })
  # The failed create leaves a tainted resource that the re-apply replaces
  # (destroy, then create): even with these settings that destroy must not
  # delete the claims made before the failure.
  deletion_policy = "delete"
  allow_data_loss = true
}`, ns, strings.Join(quoted, ", ")))

	atStop := make(chan int, 1)
	var afterFailure map[string]string // claims that exist once the apply failed
	var failedAfter time.Duration
	var started time.Time
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				PreConfig: func() {
					started = time.Now()
					go func() {
						for pollCtx.Err() == nil {
							got, err := claimUIDsByName(cs, ns)
							if err == nil && len(got) >= stopAfter {
								mu.Lock()
								c.StopAPIServer()
								stopped = true
								mu.Unlock()
								atStop <- len(got)
								return
							}
							time.Sleep(20 * time.Millisecond)
						}
					}()
				},
				Config:      cfg,
				ExpectError: wrapRE(fmt.Sprintf(`(?s)\d+ of %d home claim changes failed: the API server could not be reached.*connection refused.*more not attempted: the API server could not be reached.*change\(s\) were made; the state records them\. Apply again to converge`, total)),
			},
			{
				PreConfig: func() {
					failedAfter = time.Since(started)
					select {
					case n := <-atStop:
						t.Logf("API server stopped with %d claims; the apply failed %s after it started", n, failedAfter.Round(time.Second))
					default:
						t.Fatal("the apply failed but the API server was never stopped")
					}
					if err := restart(); err != nil {
						t.Fatalf("restart the API server: %v", err)
					}
					var err error
					if afterFailure, err = claimUIDsByName(cs, ns); err != nil {
						t.Fatal(err)
					}
					if len(afterFailure) < stopAfter || len(afterFailure) >= total {
						t.Fatalf("%d claims after the failed apply; want at least %d and fewer than %d", len(afterFailure), stopAfter, total)
					}
					// Retries must not wait out every claim: with 16 at a time and
					// half a minute of retries each, that would take minutes.
					if failedAfter > 90*time.Second {
						t.Errorf("the apply took %s to give up after the API server stopped", failedAfter)
					}
				},
				Config: cfg,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					priorCheck{func(before map[string]any, rc *tfjson.ResourceChange) error {
						recorded, err := recordedUsers(before["users"])
						if err != nil {
							return err
						}
						if len(recorded) == 0 {
							return fmt.Errorf("the state records no user after the failed apply (actions %v)", rc.Change.Actions)
						}
						// Every user the state records has a claim; claims the state
						// does not record are at most the requests cut off in flight.
						for _, u := range recorded {
							if afterFailure["claim-"+u] == "" {
								return fmt.Errorf("state records %s but claim-%s does not exist", u, u)
							}
						}
						if missing := len(afterFailure) - len(recorded); missing < 0 || missing > 16 {
							return fmt.Errorf("state records %d users, %d claims exist", len(recorded), len(afterFailure))
						}
						// The refresh lists every claim that exists, recorded or not.
						s, _ := before["claims"].(string)
						claims, err := decodeClaims(s)
						if err != nil {
							return err
						}
						if len(claims) != len(afterFailure) {
							return fmt.Errorf("the refreshed state lists %d claims; %d exist", len(claims), len(afterFailure))
						}
						t.Logf("after the failure the state records %d of %d users; %d claims exist; planned actions %v",
							len(recorded), total, len(afterFailure), rc.Change.Actions)
						return nil
					}},
					expectClass("safe"),
				}},
				Check: func(*terraform.State) error {
					now, err := claimUIDsByName(cs, ns)
					if err != nil {
						return err
					}
					if len(now) != total {
						return fmt.Errorf("%d claims after the re-apply, want %d", len(now), total)
					}
					for _, u := range users {
						if now["claim-"+u] == "" {
							return fmt.Errorf("no claim for %s", u)
						}
					}
					var replaced []string
					for name, uid := range afterFailure {
						if now[name] != uid {
							replaced = append(replaced, name)
						}
					}
					sort.Strings(replaced)
					if len(replaced) > 0 {
						return fmt.Errorf("claims created before the failure were deleted or replaced: %v", replaced)
					}
					return nil
				},
			},
			{Config: cfg, PlanOnly: true},
		},
	})
}

// A home claim's create and a migration fail in the same apply: one error
// names both, each with what was done and what to do; the state drops the
// user whose claim was not created, and the next apply converges.
func TestAccHomeStorage_oneFailureReport(t *testing.T) {
	cs := acctest.Cluster(t).Admin()
	ns := acctest.Namespace(t)
	class := "longhorn-" + ns
	vols := migratingHomes(t, cs, ns, class, "dana")
	old := uids(t, cs, ns, "claim-dana")
	// A quota of one claim, used up by dana's (its status written here: the
	// test bed runs no quota controller): admission refuses every new claim
	// in the namespace (erin's create) until the quota is deleted.
	one := corev1.ResourceList{corev1.ResourcePersistentVolumeClaims: kresource.MustParse("1")}
	quota, err := cs.CoreV1().ResourceQuotas(ns).Create(context.Background(), &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: "one-claim", Namespace: ns}, Spec: corev1.ResourceQuotaSpec{Hard: one}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	quota.Status = corev1.ResourceQuotaStatus{Hard: one, Used: one}
	if _, err := cs.CoreV1().ResourceQuotas(ns).UpdateStatus(context.Background(), quota, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	stopped := false
	stopping := afterStep(func(user string, op migration.Op) error {
		if op == migration.OpRetain && !stopped {
			stopped = true
			return fmt.Errorf("apply stopped after step %s", op)
		}
		return nil
	})
	cfg := migrateConfig(t, ns, class, `jsonencode({ dana = {}, erin = {} })`)
	resource.Test(t, resource.TestCase{
		Steps: []resource.TestStep{
			{
				ProtoV6ProviderFactories: stopping,
				Config:                   cfg,
				// One diagnostic: its summary names both failures, its detail
				// each user's, with what was done and what to do.
				ExpectError: wrapRE(fmt.Sprintf(`(?s)Error: 1 of 1 home claim changes failed; 1 of 1 home migrations did not finish.*`+
					`1 of 1 home claim changes failed These users' claims were not changed as planned:.*erin \(claim-erin, create\):.*quota.*`+
					`0 change\(s\) were made; the state records them\. Apply again to converge\. No claim was deleted except by on_mode_change = "recreate"\..*`+
					`1 of 1 home migrations did not finish These users' homes were not fully migrated:.*dana \(claim-dana, volume %s, stopped at .*apply stopped after step retain.*No data was lost.*Apply again to resume`,
					vols["claim-dana"][0])),
			},
			{
				PreConfig: func() {
					if !stopped {
						t.Fatal("the migration never reached its first step")
					}
					if err := cs.CoreV1().ResourceQuotas(ns).Delete(context.Background(), quota.Name, metav1.DeleteOptions{}); err != nil {
						t.Fatal(err)
					}
				},
				ProtoV6ProviderFactories: protoV6ProviderFactories,
				Config:                   cfg,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					priorCheck{func(before map[string]any, _ *tfjson.ResourceChange) error {
						recorded, err := recordedUsers(before["users"])
						if err != nil {
							return err
						}
						if strings.Join(recorded, ",") != "dana" {
							return fmt.Errorf("after the failed apply the state records users %v, want dana only (erin's claim was not created)", recorded)
						}
						return nil
					}},
				}},
				Check: resource.ComposeAggregateTestCheckFunc(
					rebound(cs, ns, vols, old, "claim-dana"),
					checkClaim("erin", "access_mode", "ReadWriteMany"),
				),
			},
			{ProtoV6ProviderFactories: protoV6ProviderFactories, Config: cfg, PlanOnly: true},
		},
	})
}
