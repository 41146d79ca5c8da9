package provider

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/acctest"
)

// Each way of connecting reads the same seeded claim.
func TestAccProvider_connections(t *testing.T) {
	c := acctest.Cluster(t)
	ns := acctest.Namespace(t)
	acctest.Seed(t, c.Admin(), ns, acctest.SeedClaim{Name: "claim-alice", Username: "alice"})
	data := fmt.Sprintf(`data "jupyter_home_claims" "test" { namespace = %q }`, ns) + aliceClaimOutput

	cases := map[string]string{
		"kubeconfig": fmt.Sprintf(`provider "jupyter" { config_path = %q }`, c.KubeconfigPath),
		"kubeconfig_paths_and_context": fmt.Sprintf(`provider "jupyter" {
  config_paths   = [%q]
  config_context = "admin"
}`, c.KubeconfigPath),
		"host_token_ca": acctest.ProviderBlock(c, c.AdminToken),
		"client_certificate": fmt.Sprintf(`provider "jupyter" {
  host                   = %q
  cluster_ca_certificate = %q
  client_certificate     = %q
  client_key             = %q
}`, c.Host, c.CAPEM, c.ClientCertPEM, c.ClientKeyPEM),
		"kubeconfig_with_token_override": fmt.Sprintf(`provider "jupyter" {
  config_path    = %q
  config_context = "limited"
  token          = %q
}`, c.KubeconfigPath, c.AdminToken),
	}
	for name, block := range cases {
		t.Run(name, func(t *testing.T) {
			resource.Test(t, resource.TestCase{
				ProtoV6ProviderFactories: protoV6ProviderFactories,
				Steps:                    []resource.TestStep{{Config: acctest.Config(block, data), Check: checkAliceClaim}},
			})
		})
	}
}

// The least-privilege identity works with exactly the documented Role, and
// without the permission the error names it.
func TestAccProvider_leastPrivilege(t *testing.T) {
	c := acctest.Cluster(t)
	granted := acctest.Namespace(t)
	acctest.Seed(t, c.Admin(), granted, acctest.SeedClaim{Name: "claim-alice", Username: "alice"})
	acctest.Grant(t, granted)
	bare := acctest.Namespace(t)
	missingList := acctest.Namespace(t)
	acctest.Grant(t, missingList, "list", "persistentvolumeclaims")

	limited := acctest.ProviderBlock(c, c.LimitedToken)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: acctest.Config(limited, fmt.Sprintf(`data "jupyter_home_claims" "test" { namespace = %q }`, granted)+aliceClaimOutput),
				Check:  checkAliceClaim,
			},
			{
				Config:      acctest.Config(limited, fmt.Sprintf(`data "jupyter_home_claims" "test" { namespace = %q }`, bare)),
				ExpectError: wrapRE(`(?s)permission denied.*cannot list persistentvolumeclaims.*` + bare + `.*Grant the verb "list"`),
			},
			{
				Config:      acctest.Config(limited, fmt.Sprintf(`data "jupyter_home_claims" "test" { namespace = %q }`, missingList)),
				ExpectError: wrapRE(`(?s)cannot list persistentvolumeclaims.*` + missingList),
			},
		},
	})
}

// Configuration errors name the attribute and the fix.
func TestAccProvider_configErrors(t *testing.T) {
	c := acctest.Cluster(t)
	data := `data "jupyter_home_claims" "test" { namespace = "default" }`
	cases := []struct {
		name, block string
		want        string
	}{
		{"unreadable_path", `provider "jupyter" { config_path = "/nonexistent/kubeconfig" }`,
			`(?s)kubeconfig file cannot be read.*Point config_path at an existing kubeconfig`},
		{"unknown_context", fmt.Sprintf(`provider "jupyter" {
  config_path    = %q
  config_context = "nope"
}`, c.KubeconfigPath), `(?s)context "nope" is not in the kubeconfig.*config_context`},
		{"host_without_credentials", fmt.Sprintf(`provider "jupyter" {
  host                   = %q
  cluster_ca_certificate = %q
}`, c.Host, c.CAPEM), `(?s)host is set without credentials.*Set token`},
		{"wrong_ca", fmt.Sprintf(`provider "jupyter" {
  host  = %q
  token = %q
}`, c.Host, c.AdminToken), `(?s)certificate is not trusted; set cluster_ca_certificate.*signed by unknown authority`},
		{"bad_token", acctest.ProviderBlock(c, "not-a-token"), `(?s)rejected the provider's credentials \(401\)`},
		{"zero_burst", `provider "jupyter" { burst = 0 }`, `(?s)burst = 0.*burst value must be at least 1`},
		{"zero_qps", `provider "jupyter" { qps = 0 }`, `(?s)qps = 0.*qps value must be at least 1`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resource.Test(t, resource.TestCase{
				ProtoV6ProviderFactories: protoV6ProviderFactories,
				Steps:                    []resource.TestStep{{Config: acctest.Config(tc.block, data), ExpectError: wrapRE(tc.want)}},
			})
		})
	}
}

// wrapRE compiles a pattern whose spaces also match the line breaks
// OpenTofu puts into long diagnostics.
func wrapRE(pattern string) *regexp.Regexp {
	return regexp.MustCompile(strings.ReplaceAll(pattern, " ", `\s+`))
}
