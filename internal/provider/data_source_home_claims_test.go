package provider

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"regexp"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/acctest"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/migration"
)

func ptr[T any](v T) *T { return &v }

// seedMixed seeds RWO and RWX claims, with and without a class, bound and pending.
func seedMixed(t *testing.T, ns string) {
	c := acctest.Cluster(t)
	acctest.Seed(t, c.Admin(), ns,
		// Bound by the PV binder to a pre-created volume with no class.
		acctest.SeedClaim{Name: "claim-alice", Username: "alice", Size: "2Gi", Bound: true},
		// KubeSpawner's safe scheme: an upper-case name hashes, the label keeps it.
		acctest.SeedClaim{Name: "claim-bob---1f1b2a2e", Username: "Bob", UsernameLabel: "Bob",
			Modes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany}, StorageClass: ptr("nfs"), Size: "5Gi"},
		// A named server's claim, pending on a class that does not exist.
		acctest.SeedClaim{Name: "claim-carol--gpu", Username: "carol@example.org", UsernameLabel: "carol-example-org",
			Servername: "gpu", StorageClass: ptr("longhorn"), Size: "10Gi"},
	)
}

// aliceClaimOutput is alice's claim name read from data.jupyter_home_claims.test
// through OpenTofu's jsondecode; checkAliceClaim checks it.
const aliceClaimOutput = `
output "alice_claim" {
  value = jsondecode(data.jupyter_home_claims.test.claims).alice.name
}`

var checkAliceClaim = resource.TestCheckOutput("alice_claim", "claim-alice")

// claimsKeysOutput lists the keys of data.jupyter_home_claims.test's claims,
// decoded by OpenTofu.
const claimsKeysOutput = `
output "keys" {
  value = keys(jsondecode(data.jupyter_home_claims.test.claims))
}`

func TestAccHomeClaimsDataSource_attributes(t *testing.T) {
	ns := acctest.Namespace(t)
	seedMixed(t, ns)
	ds := "data.jupyter_home_claims.test"
	str := knownvalue.StringExact
	claim := func(name, user, label, server, mode, class, requested, capacity, phase string, volume knownvalue.Check) knownvalue.Check {
		return knownvalue.ObjectExact(map[string]knownvalue.Check{
			"name": str(name), "username": str(user), "username_label": str(label), "servername": str(server),
			"access_modes":       knownvalue.ListExact([]knownvalue.Check{str(mode)}),
			"storage_class_name": str(class), "requested": str(requested), "capacity": str(capacity),
			"phase": str(phase), "volume_name": volume,
		})
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6ProviderFactories,
		Steps: []resource.TestStep{{
			Config: acctest.AdminConfig(t, fmt.Sprintf(`data "jupyter_home_claims" "test" { namespace = %q }
output "claims" {
  value = jsondecode(data.jupyter_home_claims.test.claims)
}`, ns)),
			Check: resource.ComposeAggregateTestCheckFunc(
				resource.TestCheckResourceAttr(ds, "claim_count", "3"),
				resource.TestCheckResourceAttr(ds, "access_mode_counts.%", "2"),
				resource.TestCheckResourceAttr(ds, "access_mode_counts.ReadWriteOnce", "2"),
				resource.TestCheckResourceAttr(ds, "access_mode_counts.ReadWriteMany", "1"),
			),
			// Every field of every claim, as a configuration sees it.
			ConfigStateChecks: []statecheck.StateCheck{
				statecheck.ExpectKnownOutputValue("claims", knownvalue.MapExact(map[string]knownvalue.Check{
					"alice": claim("claim-alice", "alice", "alice", "", "ReadWriteOnce", "", "2Gi", "2Gi", "Bound",
						knownvalue.StringRegexp(regexp.MustCompile(`^pv-`+regexp.QuoteMeta(ns)))),
					"Bob": claim("claim-bob---1f1b2a2e", "Bob", "Bob", "", "ReadWriteMany", "nfs", "5Gi", "", "Pending", str("")),
					"carol@example.org/gpu": claim("claim-carol--gpu", "carol@example.org", "carol-example-org", "gpu",
						"ReadWriteOnce", "longhorn", "10Gi", "", "Pending", str("")),
				})),
				statecheck.ExpectKnownValue(ds, tfjsonpath.New("homes"), knownvalue.Null()),
				statecheck.ExpectKnownValue(ds, tfjsonpath.New("shared_claim_status"), knownvalue.Null()),
			},
		}, sharedLayoutStep(t, ns)},
	})
}

// seedSharedLayout adds to seedMixed's claims a shared claim home-nfs,
// makes alice's claim a finished zero-copy move of her directory
// home/alice (bound to the volume its record names) and adds erin's, an
// unfinished one (Pending); dan has no claim, nor has Bob under the name
// the template gives (KubeSpawner 7's safe name; his claim has another).
// Moving out of the shared layout, the hub mounts alice's claim, refuses
// erin and mounts Bob's and dan's directories; in the shared layout every
// home is the directory.
func seedSharedLayout(t *testing.T, ns string) {
	cs := acctest.Cluster(t).Admin()
	acctest.Seed(t, cs, ns, acctest.SeedClaim{Name: "home-nfs", Modes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany}, Size: "5Gi", Bound: true},
		acctest.SeedClaim{Name: "claim-erin", Username: "erin", StorageClass: ptr("longhorn")})
	ctx := context.Background()
	shared, err := cs.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "home-nfs", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for name, dir := range map[string]string{"claim-alice": "home/alice", "claim-erin": "home/erin"} {
		pvc, err := cs.CoreV1().PersistentVolumeClaims(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		rec := migration.SplitRecord{User: pvc.Annotations["hub.jupyter.org/username"], Namespace: ns, Claim: name, Shared: "home-nfs",
			SharedUID: string(shared.UID), Directory: dir, Volume: cmp.Or(pvc.Spec.VolumeName, migration.SplitVolumeName(ns, name))}
		pvc.Annotations[migration.SplitAnnotation] = rec.Encode()
		if _, err := cs.CoreV1().PersistentVolumeClaims(ns).Update(ctx, pvc, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

// sharedLayoutStep reads seedSharedLayout's homes, moving out of the
// shared layout and in it.
func sharedLayoutStep(t *testing.T, ns string) resource.TestStep {
	str := knownvalue.StringExact
	home := func(kind, claim, sub string, moved bool, from, method, reason string) knownvalue.Check {
		return knownvalue.ObjectExact(map[string]knownvalue.Check{"home": str(kind), "claim": str(claim), "sub_path": str(sub),
			"moved": knownvalue.Bool(moved), "moved_from": str(from), "method": str(method), "reason": str(reason),
			"earlier_places": knownvalue.ListExact([]knownvalue.Check{})})
	}
	return resource.TestStep{
		PreConfig: func() { seedSharedLayout(t, ns) },
		Config: acctest.AdminConfig(t, fmt.Sprintf(`
locals {
  users = ["alice", "Bob", "dan", "erin"]
}
data "jupyter_home_claims" "test" {
  namespace         = %[1]q
  shared_claim      = "home-nfs"
  sub_path_template = "home/{username}"
  layout            = "per_user"
  users             = jsonencode({ for u in local.users : u => {} })
}
data "jupyter_home_claims" "shared" {
  namespace         = %[1]q
  shared_claim      = "home-nfs"
  sub_path_template = "home/{username}"
  users             = jsonencode({ for u in local.users : u => {} })
}
output "moving" {
  value = jsondecode(data.jupyter_home_claims.test.homes)
}
output "shared" {
  value = { for u, h in jsondecode(data.jupyter_home_claims.shared.homes) : u => "${h.home} ${h.claim} ${h.sub_path}" }
}`, ns)),
		ConfigStateChecks: []statecheck.StateCheck{
			statecheck.ExpectKnownOutputValue("moving", knownvalue.MapExact(map[string]knownvalue.Check{
				"alice": home("claim", "claim-alice", "home/alice", true, "home/alice", "split", ""),
				"Bob":   home("directory", "home-nfs", "home/bob---cd9fb1e1", false, "", "", ""),
				"dan":   home("directory", "home-nfs", "home/dan", false, "", "", ""),
				"erin":  home("refused", "claim-erin", "home/erin", false, "", "", "claim claim-erin is being moved out of the shared claim (Pending, not Bound)"),
			})),
			statecheck.ExpectKnownOutputValue("shared", knownvalue.MapExact(map[string]knownvalue.Check{
				"alice": str("directory home-nfs home/alice"), "Bob": str("directory home-nfs home/bob---cd9fb1e1"),
				"dan": str("directory home-nfs home/dan"), "erin": str("directory home-nfs home/erin"),
			})),
			statecheck.ExpectKnownValue("data.jupyter_home_claims.test", tfjsonpath.New("shared_claim_status"), knownvalue.ObjectExact(map[string]knownvalue.Check{
				"exists": knownvalue.Bool(true), "uid": knownvalue.StringRegexp(regexp.MustCompile(`^[0-9a-f-]{36}$`)),
				"access_modes": knownvalue.ListExact([]knownvalue.Check{str("ReadWriteMany")}), "storage_class_name": str(""),
				"phase": str("Bound"), "volume_name": str("pv-" + ns + "-home-nfs"), "deleting": knownvalue.Bool(false),
			})),
		},
	}
}

func TestAccHomeClaimsDataSource_selectorAndEmpty(t *testing.T) {
	ns := acctest.Namespace(t)
	seedMixed(t, ns)
	ds := "data.jupyter_home_claims.test"
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6ProviderFactories,
		Steps: []resource.TestStep{
			// Invalid input fails at validate time; the last step's config is also destroyed, so these come first.
			{
				Config: acctest.AdminConfig(t, `data "jupyter_home_claims" "test" {
  namespace      = "Not_A_Namespace"
}`),
				ExpectError: regexp.MustCompile(`(?s)namespace.*valid namespace name`),
			},
			{
				Config: acctest.AdminConfig(t, fmt.Sprintf(`data "jupyter_home_claims" "test" {
  namespace      = %q
  label_selector = "a b c"
}`, ns)),
				ExpectError: regexp.MustCompile(`Invalid label selector`),
			},
			// The shared layout's inputs: jupyter_home_storage's rules, and
			// none of them without shared_claim.
			{
				Config: acctest.AdminConfig(t, fmt.Sprintf(`data "jupyter_home_claims" "test" {
  namespace         = %q
  shared_claim      = "home-nfs"
  sub_path_template = "/home/{username}"
}`, ns)),
				ExpectError: regexp.MustCompile(`(?s)Invalid sub_path_template.*relative to the claim's root`),
			},
			{
				Config: acctest.AdminConfig(t, fmt.Sprintf(`data "jupyter_home_claims" "test" {
  namespace = %q
  users     = jsonencode({ alice = {} })
}`, ns)),
				ExpectError: regexp.MustCompile(`(?s)Attribute "shared_claim" must be specified when "users" is\s+specified`),
			},
			{
				Config: acctest.AdminConfig(t, fmt.Sprintf(`data "jupyter_home_claims" "test" {
  namespace      = %q
  label_selector = "hub.jupyter.org/username=alice"
}`+aliceClaimOutput+claimsKeysOutput, ns)),
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(ds, "claim_count", "1"),
					checkAliceClaim,
				),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownOutputValue("keys", knownvalue.ListExact([]knownvalue.Check{knownvalue.StringExact("alice")})),
				},
			},
			{
				Config: acctest.AdminConfig(t, fmt.Sprintf(`data "jupyter_home_claims" "test" {
  namespace      = %q
  label_selector = "component=nothing-here"
}`+claimsKeysOutput, ns)),
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(ds, "claim_count", "0"),
					resource.TestCheckResourceAttr(ds, "claims", "{}"),
					resource.TestCheckResourceAttr(ds, "access_mode_counts.%", "0"),
				),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownOutputValue("keys", knownvalue.ListExact([]knownvalue.Check{})),
				},
			},
		},
	})
}

// The data source's documented example, as written but for its namespace,
// gives what its comments say.
func TestAccHomeClaimsDataSource_example(t *testing.T) {
	ns := acctest.Namespace(t)
	seedMixed(t, ns)
	src, err := os.ReadFile("../../examples/data-sources/jupyter_home_claims/data-source.tf")
	if err != nil {
		t.Fatal(err)
	}
	nsLine := regexp.MustCompile(`(namespace\s*=\s*)"jhub"`)
	if n := len(nsLine.FindAllString(string(src), -1)); n != 2 {
		t.Fatalf("the example holds namespace = \"jhub\" %d times, not twice", n)
	}
	str := knownvalue.StringExact
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6ProviderFactories,
		Steps: []resource.TestStep{{
			PreConfig: func() { seedSharedLayout(t, ns) },
			Config:    acctest.AdminConfig(t, nsLine.ReplaceAllString(string(src), fmt.Sprintf("${1}%q", ns))),
			ConfigStateChecks: []statecheck.StateCheck{
				statecheck.ExpectKnownOutputValue("homes_per_mode", knownvalue.MapExact(map[string]knownvalue.Check{
					"ReadWriteOnce": knownvalue.Int64Exact(3), "ReadWriteMany": knownvalue.Int64Exact(2)})),
				statecheck.ExpectKnownOutputValue("rwo_users", knownvalue.ListExact([]knownvalue.Check{
					str("alice"), str("carol@example.org/gpu"), str("erin")})),
				statecheck.ExpectKnownOutputValue("pending_claims", knownvalue.MapExact(map[string]knownvalue.Check{
					"Bob": str("claim-bob---1f1b2a2e"), "carol@example.org/gpu": str("claim-carol--gpu"), "erin": str("claim-erin")})),
				statecheck.ExpectKnownOutputValue("still_in_directories", knownvalue.MapExact(map[string]knownvalue.Check{"dan": str("home/dan")})),
				statecheck.ExpectKnownOutputValue("moved", knownvalue.ListExact([]knownvalue.Check{str("alice")})),
				statecheck.ExpectKnownOutputValue("waiting", knownvalue.MapExact(map[string]knownvalue.Check{
					"erin": str("claim claim-erin is being moved out of the shared claim (Pending, not Bound)")})),
				statecheck.ExpectKnownOutputValue("shared_claim_bound", knownvalue.Bool(true)),
			},
		}},
	})
}
