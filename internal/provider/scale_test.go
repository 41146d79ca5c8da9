package provider

import (
	"context"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
)

// Attributes that hold one entry per user are maps: OpenTofu diffs a list
// or a set in time that grows with the square of its length in every plan
// (BENCHMARKS.md), a map key by key. Map attributes, not maps of nested
// attributes: the framework (v1.19) plans a nested map's elements in time
// that grows with the square of their number.
func TestPerUserAttributesAreMaps(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		res   resource.Resource
		attrs []string
	}{
		{NewHomeStorageResource(), []string{"users", "legacy_users"}},
		{NewSpawnerConfigResource(), []string{"legacy_users"}},
	} {
		var resp resource.SchemaResponse
		c.res.Schema(ctx, resource.SchemaRequest{}, &resp)
		for _, name := range c.attrs {
			if _, ok := resp.Schema.Attributes[name].(schema.MapAttribute); !ok {
				t.Errorf("%T: %s is a %T, not a map attribute", c.res, name, resp.Schema.Attributes[name])
			}
		}
	}
}
