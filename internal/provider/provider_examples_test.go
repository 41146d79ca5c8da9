package provider

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	pschema "github.com/hashicorp/terraform-plugin-framework/provider/schema"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/zclconf/go-cty/cty"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/hubconfig"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/hubtest"
)

// The examples under examples/spawner are applied here as written, read
// in place: terraform.tf (the required providers, hashicorp/helm among
// them), main.tf (the provider's resources) and helm.tf (the chart
// release), with the real hashicorp/helm provider (provider_examples_helm_test.go).
// What the test changes is listed in exampleCase.edits, the namespace (a
// fresh one per test), and what the test bed gives the release
// (helmPlatforms); the provider block is the test bed's, in place of
// z2jh's provider.tf.

// edit replaces old with new in a file, which must hold old exactly n times.
type edit struct {
	old, new string
	n        int
}

type exampleCase struct {
	dir     string            // examples/spawner/<dir>
	files   []string          // the files OpenTofu reads, in the order given
	skipped map[string]string // files not read, and why
	edits   map[string][]edit // per file; "NS" in new is the test's namespace
	chart   string            // the chart helm.tf's release installs
	class   string            // the home storage's class
	label   string            // the co-location label
	small   string            // a profile slug of the example
	gpu     string            // its GPU profile's slug
	auth    map[string]any    // the users' auth state
	podVols []string          // volumes the hub's own configuration gives every pod
}

func exampleCases() map[string]exampleCase {
	return map[string]exampleCase{
		"z2jh": {
			dir: "z2jh", files: []string{"terraform.tf", "main.tf", "helm.tf"},
			skipped: map[string]string{"provider.tf": "the provider block; the test bed's is used (TestExamplesSpawner_providerBlocks checks it)"},
			edits: map[string][]edit{
				"main.tf": {{`"jhub"`, `"NS"`, 2}},
				"helm.tf": {{`"jhub"`, `"NS"`, 1}},
			},
			chart: "jupyterhub", class: "efs",
			label: hubconfig.DefaultColocationLabel, small: "small", gpu: "gpu",
		},
		"nebari": {
			dir: "nebari", files: []string{"terraform.tf", "main.tf", "helm.tf"},
			edits: map[string][]edit{
				"main.tf": {{`namespace = "nebari"`, `namespace = "NS"`, 1}},
			},
			chart: "nebari-data-science-pack", class: "longhorn",
			label: "nebari.dev/colocate-user", small: "small-instance", gpu: "gpu-instance",
			auth:    map[string]any{"groups": []any{"/data-team"}},
			podVols: []string{"shared", "nebi-bin", "nebi-workspaces", "singleuser-config"},
		},
	}
}

// exampleFactories serve the provider.
func exampleFactories() map[string]func() (tfprotov6.ProviderServer, error) {
	return factories(Options{})
}

// The provider blocks the examples leave to the user (z2jh's provider.tf,
// which the acceptance test replaces with the test bed's) set only
// settings the provider's schema has, with values of their type: every
// file of examples/spawner is then read by OpenTofu or checked here.
func TestExamplesSpawner_providerBlocks(t *testing.T) {
	attrs := providerSchema().Attributes
	checked := 0
	for name, e := range exampleCases() {
		for file := range e.skipped {
			path := filepath.Join(hubtest.RepoRoot(t), "examples", "spawner", e.dir, file)
			src, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			f, diags := hclsyntax.ParseConfig(src, path, hcl.InitialPos)
			if diags.HasErrors() {
				t.Fatalf("%s: %s", name, diags)
			}
			body := f.Body.(*hclsyntax.Body)
			if len(body.Attributes) != 0 || len(body.Blocks) != 1 || body.Blocks[0].Type != "provider" || body.Blocks[0].Labels[0] != "jupyter" {
				t.Fatalf("%s: %s must hold only the jupyter provider block", name, path)
			}
			block := body.Blocks[0].Body
			if len(block.Blocks) != 0 || len(block.Attributes) == 0 {
				t.Errorf("%s: the provider block has nested blocks or no settings", path)
			}
			for key, a := range block.Attributes {
				def, ok := attrs[key]
				if !ok {
					t.Errorf("%s: the provider has no setting %q", path, key)
					continue
				}
				v, diags := a.Expr.Value(nil)
				if diags.HasErrors() {
					t.Errorf("%s: %s: %s", path, key, diags)
					continue
				}
				if _, isString := def.(pschema.StringAttribute); isString != (v.Type() == cty.String) {
					t.Errorf("%s: %s = %s, the provider's setting is %T", path, key, v.GoString(), def)
				}
				checked++
			}
		}
	}
	if checked == 0 {
		t.Error("no provider block checked")
	}
}
