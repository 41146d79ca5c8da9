package provider

import (
	"context"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
)

// Attributes that hold one entry per user are one string (JSON), never a
// map, a list, a set or nested attributes: OpenTofu diffs a list or a set
// in time that grows with the square of its length in every plan, and
// OpenTofu and the framework convert and walk a collection entry by entry
// in every request, which a string is not (BENCHMARKS.md, DESIGN.md).
func TestPerUserAttributesScale(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		res     resource.Resource
		strings []string
	}{
		{NewHomeStorageResource(), []string{"users", "claims", "changes", "legacy_users", "migration_plan", "migration_status"}},
	} {
		var resp resource.SchemaResponse
		c.res.Schema(ctx, resource.SchemaRequest{}, &resp)
		for _, name := range c.strings {
			if _, ok := resp.Schema.Attributes[name].(schema.StringAttribute); !ok {
				t.Errorf("%T: %s is a %T, not a string attribute", c.res, name, resp.Schema.Attributes[name])
			}
		}
	}
}
