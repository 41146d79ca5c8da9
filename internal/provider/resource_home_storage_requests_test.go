package provider

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/acctest"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/kube"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/testcluster"
)

// requestLog records every request the provider sends to the API server.
type requestLog struct {
	mu   sync.Mutex
	reqs []string
}

func (l *requestLog) reset() {
	l.mu.Lock()
	l.reqs = nil
	l.mu.Unlock()
}

func (l *requestLog) snapshot() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.reqs...)
}

type countingTransport struct {
	log  *requestLog
	next http.RoundTripper
}

func (t *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	t.log.mu.Lock()
	t.log.reqs = append(t.log.reqs, r.Method+" "+r.URL.Path+"?"+r.URL.RawQuery)
	t.log.mu.Unlock()
	return t.next.RoundTrip(r)
}

func countingFactories(log *requestLog) map[string]func() (tfprotov6.ProviderServer, error) {
	return factories(Options{ClientFactory: func(rc *rest.Config) (kube.API, error) {
		rc.Wrap(func(rt http.RoundTripper) http.RoundTripper { return &countingTransport{log: log, next: rt} })
		return kube.NewAPI(rc) // the provider's own client, counted
	}})
}

var perClaimGet = regexp.MustCompile(`^GET /api/v1/namespaces/[^/]+/persistentvolumeclaims/[^/?]+\?`)

// A plan over N claims costs ceil(N/kube.PageSize) List requests plus a
// constant, and never one request per claim. N spans two pages.
func TestAccHomeStorage_planRequestCount(t *testing.T) {
	const n = kube.PageSize + 234
	cs := acctest.Cluster(t).Admin()
	ns := acctest.Namespace(t)
	seeds := make([]acctest.SeedClaim, n)
	for i := range seeds {
		u := fmt.Sprintf("user%04d", i)
		seeds[i] = acctest.SeedClaim{Name: "claim-" + u, Username: u}
	}
	seedParallel(t, cs, ns, seeds)
	log := &requestLog{}
	cfg := acctest.AdminConfig(t, fmt.Sprintf(`
resource "jupyter_home_storage" "homes" {
  namespace = %q
  capacity  = "1Gi"
  users     = jsonencode({ user0000 = {}, user0001 = {}, newuser = {} })
}`, ns))
	pages := (n + kube.PageSize - 1) / kube.PageSize
	const constant = 4
	var planReqs []string
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: countingFactories(log),
		Steps: []resource.TestStep{
			{Config: cfg},
			{
				PreConfig: log.reset,
				Config:    cfg,
				PlanOnly:  true,
			},
			{
				PreConfig: func() { planReqs = log.snapshot() },
				Config:    cfg,
				PlanOnly:  true,
			},
		},
	})
	// The PlanOnly step runs a plan (refresh, then plan) and may run a second
	// non-refresh plan; count per plan command by counting Lists of claims.
	lists := 0
	for _, r := range planReqs {
		if perClaimGet.MatchString(r) {
			t.Errorf("per-claim GET during a plan: %s", r)
		}
		if strings.HasPrefix(r, "GET /api/v1/namespaces/"+ns+"/persistentvolumeclaims?") {
			lists++
		}
	}
	plans := 2 // terraform-plugin-testing's PlanOnly step: plan, then plan -refresh=false
	if most := plans * (pages + constant); len(planReqs) > most {
		t.Errorf("%d requests for %d plans over %d claims, want at most %d:\n%s", len(planReqs), plans, n, most, strings.Join(planReqs, "\n"))
	}
	if lists > plans*pages {
		t.Errorf("%d List calls of claims for %d plans, want at most %d (one paginated List per plan)", lists, plans, plans*pages)
	}
	if lists == 0 {
		t.Errorf("no List of claims recorded: the counter does not see the provider's requests:\n%s", strings.Join(planReqs, "\n"))
	}
	t.Logf("%d requests for %d plans over %d claims (%d pages each)", len(planReqs), plans, n, pages)
}

// seedParallel creates many KubeSpawner-style claims quickly.
func seedParallel(t *testing.T, cs kubernetes.Interface, ns string, seeds []acctest.SeedClaim) {
	t.Helper()
	errs := kube.ForEach(context.Background(), seeds, func(ctx context.Context, s acctest.SeedClaim) error {
		return testcluster.Seed(ctx, cs, ns, s)
	})
	if len(errs) > 0 {
		t.Fatal(errs)
	}
}
