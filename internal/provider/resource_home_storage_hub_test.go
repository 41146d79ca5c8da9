package provider

import (
	"context"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

type privateMap map[string][]byte

func (p privateMap) SetKey(_ context.Context, key string, value []byte) diag.Diagnostics {
	if len(value) == 0 {
		delete(p, key)
	} else {
		p[key] = value
	}
	return nil
}

// The hub's settings of a move are recorded by an apply that finished
// without an error; an apply with an error keeps an earlier record of the
// same settings and drops any other (Terraform applied nothing after it
// that passes the new settings to the hub); outside a move none is kept.
func TestRecordHubSettings(t *testing.T) {
	ctx := context.Background()
	moving := &homeStorageModel{Namespace: types.StringValue("hub"), Layout: types.StringValue(layoutPerUser), SharedHome: &sharedModel{ClaimName: types.StringValue("home-nfs"), SubPathTemplate: types.StringValue("{username}")},
		PVCNameTemplate: types.StringValue("claim-{username}"), SlugScheme: types.StringValue("safe")}
	var diags diag.Diagnostics
	sig := moveSignature(moving.config(ctx, &diags))
	if sig == "" || diags.HasError() {
		t.Fatalf("no signature: %v", diags)
	}
	failed := diag.Diagnostics{}
	failed.AddError("a copy failed", "")
	for _, tc := range []struct {
		name  string
		diags diag.Diagnostics
		was   string
		want  string
	}{
		{"clean", nil, "", sig},
		{"failed, first", failed, "", ""},
		{"failed, same settings recorded", failed, sig, sig},
		{"failed, other settings recorded", failed, `["hub","other"]`, ""},
	} {
		p := privateMap{}
		d := tc.diags
		recordHubSettings(ctx, p, moving, tc.was, &d)
		if got := string(p[hubKey]); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
	plain := &homeStorageModel{Namespace: types.StringValue("hub"), PVCNameTemplate: types.StringValue("claim-{username}"), SlugScheme: types.StringValue("safe")}
	p := privateMap{hubKey: []byte(sig)}
	recordHubSettings(ctx, p, plain, sig, &diags)
	if _, ok := p[hubKey]; ok {
		t.Error("kept outside a move")
	}
}

// The signature names the hub's rules: a record of the same settings made
// without them (a hub file from before merges, which mounts a claim being
// merged) is not this hub's, so no copy starts under it; a merge and a
// move out of the same claim give the hub the same settings.
func TestMoveSignature_namesTheHubRules(t *testing.T) {
	ctx := context.Background()
	shared := &sharedModel{ClaimName: types.StringValue("home-nfs"), SubPathTemplate: types.StringValue("{username}")}
	moving := &homeStorageModel{Namespace: types.StringValue("hub"), Layout: types.StringValue(layoutPerUser), SharedHome: shared,
		PVCNameTemplate: types.StringValue("claim-{username}"), SlugScheme: types.StringValue("safe")}
	merging := *moving
	merging.Layout, merging.OnLayoutChange = types.StringValue(layoutShared), types.StringValue("migrate")
	var diags diag.Diagnostics
	out, in := moveSignature(moving.config(ctx, &diags)), moveSignature(merging.config(ctx, &diags))
	if out == "" || out != in || diags.HasError() {
		t.Fatalf("move out %q, merge %q: %v", out, in, diags)
	}
	if before := `["hub","home-nfs","{username}","claim-{username}","safe"]`; out == before || !strings.Contains(out, hubRules) || !strings.Contains(hubRules, "merged") {
		t.Errorf("signature %q does not name the hub's rules %q", out, hubRules)
	}
}
