package provider

import (
	"context"
	"fmt"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-go/tftypes"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/claims"
)

// manyClaims is n claims as KubeSpawner makes them: bound, ReadWriteOnce,
// every tenth a named server's.
func manyClaims(n int) []claims.Claim {
	out := make([]claims.Claim, n)
	for i := range out {
		u := fmt.Sprintf("user%05d@example.org", i)
		c := claims.Claim{Name: fmt.Sprintf("claim-user%05d-40example-2eorg", i), Username: u,
			UsernameLabel: fmt.Sprintf("user%05d-example-org", i), AccessModes: []string{"ReadWriteOnce"},
			StorageClass: "standard", Requested: "10Gi", Capacity: "10Gi", Phase: "Bound",
			VolumeName: fmt.Sprintf("pvc-%08x-0000-4000-8000-000000000000", i)}
		if i%10 == 0 {
			c.Servername = "gpu"
			c.Name += "--gpu"
		}
		out[i] = c
	}
	return out
}

// emptyHomeClaimsState is a state of the data source's schema, as Read gets it.
func emptyHomeClaimsState(ctx context.Context, tb testing.TB) tfsdk.State {
	var resp datasource.SchemaResponse
	NewHomeClaimsDataSource().Schema(ctx, datasource.SchemaRequest{}, &resp)
	if resp.Diagnostics.HasError() {
		tb.Fatal(resp.Diagnostics)
	}
	return tfsdk.State{Schema: resp.Schema, Raw: tftypes.NewValue(resp.Schema.Type().TerraformType(ctx), nil)}
}

// What the provider does in ReadDataSource after the List, for 20,000
// claims: the attributes, the state, and its encoding for OpenTofu (msgpack,
// as the framework sends it). Compare with `go test -bench HomeClaims`
// across commits; figures of whole plans belong in `make bench`.
func BenchmarkHomeClaimsRead20000(b *testing.B) {
	ctx := context.Background()
	live := manyClaims(20000)
	state := emptyHomeClaimsState(ctx, b)
	typ := state.Schema.Type().TerraformType(ctx)
	b.ReportAllocs()
	for b.Loop() {
		m := homeClaimsModel{Namespace: types.StringValue("jhub"), LabelSelector: types.StringNull()}
		var diags diag.Diagnostics
		readClaims(ctx, &m, live, &state, &diags)
		if diags.HasError() {
			b.Fatal(diags)
		}
		if _, err := tfprotov6.NewDynamicValue(typ, state.Raw); err != nil {
			b.Fatal(err)
		}
	}
}
