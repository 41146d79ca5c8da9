package provider

import (
	"fmt"
	"regexp"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	corev1 "k8s.io/api/core/v1"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/acctest"
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

func TestAccHomeClaimsDataSource_attributes(t *testing.T) {
	ns := acctest.Namespace(t)
	seedMixed(t, ns)
	ds := "data.jupyter_home_claims.test"
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6ProviderFactories,
		Steps: []resource.TestStep{{
			Config: acctest.AdminConfig(t, fmt.Sprintf(`data "jupyter_home_claims" "test" { namespace = %q }`, ns)),
			Check: resource.ComposeAggregateTestCheckFunc(
				resource.TestCheckResourceAttr(ds, "claim_count", "3"),
				resource.TestCheckResourceAttr(ds, "access_mode_counts.%", "2"),
				resource.TestCheckResourceAttr(ds, "access_mode_counts.ReadWriteOnce", "2"),
				resource.TestCheckResourceAttr(ds, "access_mode_counts.ReadWriteMany", "1"),
				resource.TestCheckResourceAttr(ds, "claims.%", "3"),

				resource.TestCheckResourceAttr(ds, "claims.alice.name", "claim-alice"),
				resource.TestCheckResourceAttr(ds, "claims.alice.username", "alice"),
				resource.TestCheckResourceAttr(ds, "claims.alice.username_label", "alice"),
				resource.TestCheckResourceAttr(ds, "claims.alice.servername", ""),
				resource.TestCheckResourceAttr(ds, "claims.alice.access_modes.#", "1"),
				resource.TestCheckResourceAttr(ds, "claims.alice.access_modes.0", "ReadWriteOnce"),
				resource.TestCheckResourceAttr(ds, "claims.alice.storage_class_name", ""),
				resource.TestCheckResourceAttr(ds, "claims.alice.requested", "2Gi"),
				resource.TestCheckResourceAttr(ds, "claims.alice.capacity", "2Gi"),
				resource.TestCheckResourceAttr(ds, "claims.alice.phase", "Bound"),
				resource.TestCheckResourceAttrWith(ds, "claims.alice.volume_name", nonEmpty),

				resource.TestCheckResourceAttr(ds, "claims.Bob.name", "claim-bob---1f1b2a2e"),
				resource.TestCheckResourceAttr(ds, "claims.Bob.username_label", "Bob"),
				resource.TestCheckResourceAttr(ds, "claims.Bob.access_modes.0", "ReadWriteMany"),
				resource.TestCheckResourceAttr(ds, "claims.Bob.storage_class_name", "nfs"),
				resource.TestCheckResourceAttr(ds, "claims.Bob.requested", "5Gi"),
				resource.TestCheckResourceAttr(ds, "claims.Bob.capacity", ""),
				resource.TestCheckResourceAttr(ds, "claims.Bob.phase", "Pending"),
				resource.TestCheckResourceAttr(ds, "claims.Bob.volume_name", ""),

				resource.TestCheckResourceAttr(ds, "claims.carol@example.org/gpu.name", "claim-carol--gpu"),
				resource.TestCheckResourceAttr(ds, "claims.carol@example.org/gpu.username", "carol@example.org"),
				resource.TestCheckResourceAttr(ds, "claims.carol@example.org/gpu.username_label", "carol-example-org"),
				resource.TestCheckResourceAttr(ds, "claims.carol@example.org/gpu.servername", "gpu"),
				resource.TestCheckResourceAttr(ds, "claims.carol@example.org/gpu.storage_class_name", "longhorn"),
				resource.TestCheckResourceAttr(ds, "claims.carol@example.org/gpu.phase", "Pending"),
			),
		}},
	})
}

func nonEmpty(v string) error {
	if v == "" {
		return fmt.Errorf("empty")
	}
	return nil
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
			{
				Config: acctest.AdminConfig(t, fmt.Sprintf(`data "jupyter_home_claims" "test" {
  namespace      = %q
  label_selector = "hub.jupyter.org/username=alice"
}`, ns)),
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(ds, "claim_count", "1"),
					resource.TestCheckResourceAttr(ds, "claims.alice.name", "claim-alice"),
				),
			},
			{
				Config: acctest.AdminConfig(t, fmt.Sprintf(`data "jupyter_home_claims" "test" {
  namespace      = %q
  label_selector = "component=nothing-here"
}`, ns)),
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(ds, "claim_count", "0"),
					resource.TestCheckResourceAttr(ds, "claims.%", "0"),
					resource.TestCheckResourceAttr(ds, "access_mode_counts.%", "0"),
				),
			},
		},
	})
}
