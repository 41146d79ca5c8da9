package provider

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/acctest"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/testcluster"
)

// limitedHomeStorage is a jupyter_home_storage with a class it creates,
// applied as the least-privilege identity.
func limitedHomeStorage(c *testcluster.Cluster, ns, class, extra string) string {
	return acctest.Config(acctest.ProviderBlock(c, c.LimitedToken), fmt.Sprintf(`
resource "jupyter_home_storage" "homes" {
  namespace = %q
  storage_class = {
    name        = %q
    provisioner = "driver.longhorn.io"
  }
%s
}
`, ns, class, extra))
}

// The whole life of a deployment (create with its own StorageClass, grow,
// flip to ReadWriteMany keeping the existing claims, destroy) works with
// exactly the documented RBAC bound to the least-privilege identity.
func TestAccHomeStorage_leastPrivilege(t *testing.T) {
	c := acctest.Cluster(t)
	cs := c.Admin()
	ns := acctest.Namespace(t)
	class := "homes-" + ns
	bindVolume(t, cs, ns, "claim-alice", class)
	bindVolume(t, cs, ns, "claim-bob", class)
	acctest.GrantWriter(t, ns)
	t.Cleanup(func() {
		_ = cs.StorageV1().StorageClasses().Delete(context.Background(), class, metav1.DeleteOptions{})
	})

	var created map[string]string
	sameUIDs := func(*terraform.State) error {
		if got := uids(t, cs, ns, "claim-alice", "claim-bob"); fmt.Sprint(got) != fmt.Sprint(created) {
			return fmt.Errorf("claims were replaced: before %v, after %v", created, got)
		}
		return nil
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6ProviderFactories,
		CheckDestroy: func(*terraform.State) error {
			if got := uids(t, cs, ns, "claim-alice", "claim-bob", "claim-carol"); len(got) != 3 {
				return fmt.Errorf("destroy with deletion_policy = retain removed claims: left %v", got)
			}
			return nil
		},
		Steps: []resource.TestStep{
			{
				Config: limitedHomeStorage(c, ns, class, `
  capacity = "1Gi"
  users    = jsonencode({ alice = {}, bob = {} })`),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{expectClass("safe")}},
				Check: func(*terraform.State) error {
					if _, err := cs.StorageV1().StorageClasses().Get(context.Background(), class, metav1.GetOptions{}); err != nil {
						return fmt.Errorf("the StorageClass was not created: %w", err)
					}
					for _, n := range []string{"claim-alice", "claim-bob"} {
						if err := waitBound(cs, ns, n); err != nil {
							return err
						}
					}
					created = uids(t, cs, ns, "claim-alice", "claim-bob")
					return nil
				},
			},
			{
				Config: limitedHomeStorage(c, ns, class, `
  capacity = "2Gi"
  users    = jsonencode({ alice = {}, bob = {} })`),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{expectClass("safe")}},
				Check: resource.ComposeAggregateTestCheckFunc(sameUIDs,
					claimCheck(cs, ns, "claim-bob", func(p *corev1.PersistentVolumeClaim) error {
						if q := p.Spec.Resources.Requests[corev1.ResourceStorage]; q.String() != "2Gi" {
							return fmt.Errorf("claim-bob requests %s, want 2Gi", q.String())
						}
						return nil
					})),
			},
			{
				Config: limitedHomeStorage(c, ns, class, `
  capacity       = "2Gi"
  access_mode    = "ReadWriteMany"
  on_mode_change = "keep_existing"
  users          = jsonencode({ alice = {}, bob = {}, carol = {} })`),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					expectClass("safe"),
					plancheck.ExpectKnownValue(hsAddr, tfjsonpath.New("legacy_users"),
						legacyUsersExact(map[string]string{"alice": "claim-alice", "bob": "claim-bob"})),
				}},
				Check: resource.ComposeAggregateTestCheckFunc(sameUIDs,
					expectModes(cs, ns, "claim-carol", corev1.ReadWriteMany)),
			},
		},
	})
}

// Without each permission the documented RBAC grants, the apply or plan
// that needs it fails naming the verb, the resource and where it is missing,
// and no claim is lost.
func TestAccHomeStorage_leastPrivilegeMissingVerb(t *testing.T) {
	c := acctest.Cluster(t)
	cs := c.Admin()
	base := `
  capacity = "1Gi"
  users    = jsonencode({ alice = {} })`
	recreate := `
  capacity        = "1Gi"
  access_mode     = "ReadWriteMany"
  on_mode_change  = "recreate"
  allow_data_loss = true
  users           = jsonencode({ dave = {} })`
	type step struct{ extra, want string }
	cases := []struct {
		verb, resource string
		seedDave       bool // a ReadWriteOnce claim the recreate config replaces
		bindAlice      bool // so that alice's claim binds and can grow
		steps          []step
	}{
		{verb: "list", resource: "persistentvolumeclaims", steps: []step{{base, "cannot list persistentvolumeclaims in namespace NS"}}},
		{verb: "create", resource: "persistentvolumeclaims", steps: []step{{base, "cannot create persistentvolumeclaims in namespace NS"}}},
		{verb: "patch", resource: "persistentvolumeclaims", bindAlice: true, steps: []step{{base, ""}, {`
  capacity = "2Gi"
  users    = jsonencode({ alice = {} })`, "cannot patch persistentvolumeclaims in namespace NS"}}},
		{verb: "delete", resource: "persistentvolumeclaims", seedDave: true, steps: []step{{recreate, "cannot delete persistentvolumeclaims in namespace NS"}}},
		{verb: "get", resource: "persistentvolumeclaims", seedDave: true, steps: []step{{recreate, "cannot get persistentvolumeclaims in namespace NS"}}},
		{verb: "list", resource: "pods", seedDave: true, steps: []step{{recreate, "cannot list pods in namespace NS"}}},
		{verb: "get", resource: "storageclasses", steps: []step{{base, "cannot get storageclasses cluster-wide"}}},
		{verb: "create", resource: "storageclasses", steps: []step{{base, "cannot create storageclasses cluster-wide"}}},
		{verb: "patch", resource: "storageclasses", steps: []step{{base, ""}, {`
  capacity = "1Gi"
  users    = jsonencode({ alice = {}, bob = {} })`, "cannot patch storageclasses cluster-wide"}}},
	}
	for _, tc := range cases {
		t.Run(tc.verb+"_"+tc.resource, func(t *testing.T) {
			ns := acctest.Namespace(t)
			class := "homes-" + ns
			t.Cleanup(func() {
				_ = cs.StorageV1().StorageClasses().Delete(context.Background(), class, metav1.DeleteOptions{})
			})
			if tc.seedDave {
				acctest.Seed(t, cs, ns, acctest.SeedClaim{Name: "claim-dave", Username: "dave", StorageClass: &class})
				// The class must exist for the get/list/patch of the recreate path.
			}
			if tc.bindAlice {
				bindVolume(t, cs, ns, "claim-alice", class)
			}
			acctest.GrantWriter(t, ns, tc.verb, tc.resource)
			before := uids(t, cs, ns, "claim-dave")
			var steps []resource.TestStep
			for _, s := range tc.steps {
				st := resource.TestStep{Config: limitedHomeStorage(c, ns, class, s.extra)}
				if s.want == "" {
					if tc.bindAlice {
						st.Check = func(*terraform.State) error { return waitBound(cs, ns, "claim-alice") }
					}
				} else {
					want := strings.ReplaceAll(s.want, "NS", regexp.QuoteMeta(ns))
					st.ExpectError = wrapRE(`(?s)permission denied: the provider's identity ` + want + `.*Grant the verb "` + tc.verb + `" on "` + tc.resource + `"`)
				}
				steps = append(steps, st)
			}
			resource.Test(t, resource.TestCase{ProtoV6ProviderFactories: protoV6ProviderFactories, Steps: steps})
			// A refused delete leaves the claim; only the allowed recreate
			// (delete granted, get refused) may have replaced it.
			if tc.verb == "delete" || tc.verb == "list" && tc.resource == "pods" {
				if after := uids(t, cs, ns, "claim-dave"); fmt.Sprint(after) != fmt.Sprint(before) {
					t.Errorf("claim-dave changed although its delete was refused: before %v, after %v", before, after)
				}
			}
		})
	}
}

// capturingT records everything the test harness writes to the test output.
type capturingT struct {
	*testing.T
	mu  sync.Mutex
	out strings.Builder
}

func (c *capturingT) record(args ...any) {
	c.mu.Lock()
	fmt.Fprintln(&c.out, args...)
	c.mu.Unlock()
}
func (c *capturingT) Log(args ...any) { c.record(args...); c.T.Log(args...) }
func (c *capturingT) Logf(f string, args ...any) {
	c.record(fmt.Sprintf(f, args...))
	c.T.Logf(f, args...)
}
func (c *capturingT) Error(args ...any) { c.record(args...); c.T.Error(args...) }
func (c *capturingT) Errorf(f string, args ...any) {
	c.record(fmt.Sprintf(f, args...))
	c.T.Errorf(f, args...)
}
func (c *capturingT) Fatal(args ...any) { c.record(args...); c.T.Fatal(args...) }
func (c *capturingT) Fatalf(f string, args ...any) {
	c.record(fmt.Sprintf(f, args...))
	c.T.Fatalf(f, args...)
}
func (c *capturingT) output() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.out.String()
}

// pemBody is the base64 text of a PEM block, without its armour lines:
// what a leak would show even if the BEGIN/END lines were cut off.
func pemBody(pem []byte) []string {
	var out []string
	for _, l := range strings.Split(string(pem), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "-----") {
			out = append(out, l)
		}
	}
	return out
}

// A plan and apply at TF_LOG=trace, once with a bearer token and once with a
// client certificate, write neither the token nor the client key to the log
// file (the CLI's own log and the in-process provider's) or to the test
// output. The credentials reach the provider block through sensitive
// variables, as a real configuration would pass them.
func TestAccHomeStorage_secretsNotLogged(t *testing.T) {
	c := acctest.Cluster(t)
	ns := acctest.Namespace(t)
	logPath := filepath.Join(t.TempDir(), "tf.log")
	t.Setenv("TF_LOG", "trace")
	t.Setenv("TF_LOG_PATH", logPath)
	t.Setenv("TF_ACC_LOG_PATH", logPath) // the harness hands this to the tofu binary as its TF_LOG_PATH
	t.Setenv("TF_VAR_token", c.AdminToken)
	t.Setenv("TF_VAR_client_certificate", string(c.ClientCertPEM))
	t.Setenv("TF_VAR_client_key", string(c.ClientKeyPEM))

	vars := `
variable "token" {
  type      = string
  sensitive = true
}
variable "client_certificate" {
  type      = string
  sensitive = true
}
variable "client_key" {
  type      = string
  sensitive = true
}
`
	tokenProvider := fmt.Sprintf(`
provider "jupyter" {
  host                   = %q
  cluster_ca_certificate = %q
  token                  = var.token
}`, c.Host, c.CAPEM)
	certProvider := fmt.Sprintf(`
provider "jupyter" {
  host                   = %q
  cluster_ca_certificate = %q
  client_certificate     = var.client_certificate
  client_key             = var.client_key
}`, c.Host, c.CAPEM)
	body := func(users string) string {
		return vars + fmt.Sprintf(`
resource "jupyter_home_storage" "homes" {
  namespace = %q
  capacity  = "1Gi"
  users     = %s
}`, ns, users)
	}
	ct := &capturingT{T: t}
	resource.Test(ct, resource.TestCase{
		ProtoV6ProviderFactories: protoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: acctest.Config(tokenProvider, body(`jsonencode({ alice = {} })`)),
				Check:  checkClaim("alice", "name", "claim-alice"),
			},
			{
				Config: acctest.Config(certProvider, body(`jsonencode({ alice = {}, bob = {} })`)),
				Check:  checkClaim("bob", "name", "claim-bob"),
			},
		},
	})

	data, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatalf("no log written at TF_LOG=trace: %v", err)
	}
	log := string(data)
	// The log must hold both writers' lines, or finding no secret in it proves nothing.
	for what, re := range map[string]*regexp.Regexp{
		"the CLI's own log":       regexp.MustCompile(acctest.CLI().Product + ` version`),
		"the provider's log":      regexp.MustCompile(`sdk\.framework.*tf_resource_type=jupyter_home_storage`),
		"the provider's API host": regexp.MustCompile(regexp.QuoteMeta(strings.TrimPrefix(c.Host, "https://"))),
	} {
		if !re.MatchString(log) {
			t.Errorf("the log file (%d bytes) has no line of %s (%s)", len(data), what, re)
		}
	}
	secrets := map[string]string{"the bearer token": c.AdminToken}
	for i, l := range pemBody(c.ClientKeyPEM) {
		secrets[fmt.Sprintf("line %d of the client key", i+1)] = l
	}
	for where, text := range map[string]string{"the TF_LOG_PATH file": log, "the test output": ct.output()} {
		for what, secret := range secrets {
			if strings.Contains(text, secret) {
				t.Errorf("%s appears in %s", what, where)
			}
		}
	}
	if t.Failed() {
		t.Logf("log file kept at %s", logPath)
	}
}
