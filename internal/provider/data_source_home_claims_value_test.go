package provider

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-go/tftypes"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/claims"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/migration"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/safety"
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

// claims is one JSON object, keyed as before it was a string, with every
// field of every claim; claim_count and access_mode_counts count the claims.
func TestHomeClaimsRead(t *testing.T) {
	ctx := context.Background()
	rwo := []string{"ReadWriteOnce"}
	live := []claims.Claim{
		{Name: "claim-alice", Username: "alice", UsernameLabel: "alice", AccessModes: rwo,
			Requested: "2Gi", Capacity: "2Gi", Phase: "Bound", VolumeName: "pv-alice"},
		{Name: "claim-bob---1f1b2a2e", Username: "Bob", UsernameLabel: "Bob", AccessModes: []string{"ReadWriteMany", "ReadOnlyMany"},
			StorageClass: "nfs", Requested: "5Gi", Phase: "Pending"},
		{Name: "claim-carol--gpu", Username: "carol@example.org", UsernameLabel: "carol-example-org", Servername: "gpu",
			AccessModes: rwo, StorageClass: "longhorn", Requested: "10Gi", Phase: "Pending"},
		{Name: "orphan", Phase: "Lost"}, // no username, no access modes
		{Name: "claim-dave-2", Username: "d&<ve>", AccessModes: rwo, Requested: "1Gi", Phase: "Pending"},
		{Name: "claim-dave-1", Username: "d&<ve>", AccessModes: rwo, Requested: "1Gi", Phase: "Bound"},
	}
	claim := func(name, user, label, server string, modes []any, class, req, capacity, phase, vol string) map[string]any {
		return map[string]any{"name": name, "username": user, "username_label": label, "servername": server,
			"access_modes": modes, "storage_class_name": class, "requested": req, "capacity": capacity,
			"phase": phase, "volume_name": vol}
	}
	want := map[string]any{
		"alice":                 claim("claim-alice", "alice", "alice", "", []any{"ReadWriteOnce"}, "", "2Gi", "2Gi", "Bound", "pv-alice"),
		"Bob":                   claim("claim-bob---1f1b2a2e", "Bob", "Bob", "", []any{"ReadWriteMany", "ReadOnlyMany"}, "nfs", "5Gi", "", "Pending", ""),
		"carol@example.org/gpu": claim("claim-carol--gpu", "carol@example.org", "carol-example-org", "gpu", []any{"ReadWriteOnce"}, "longhorn", "10Gi", "", "Pending", ""),
		"orphan":                claim("orphan", "", "", "", []any{}, "", "", "", "Lost", ""),
		"d&<ve>":                claim("claim-dave-1", "d&<ve>", "", "", []any{"ReadWriteOnce"}, "", "1Gi", "", "Bound", ""),
		"d&<ve> (claim-dave-2)": claim("claim-dave-2", "d&<ve>", "", "", []any{"ReadWriteOnce"}, "", "1Gi", "", "Pending", ""),
	}

	state := emptyHomeClaimsState(ctx, t)
	m := homeClaimsModel{Namespace: types.StringValue("jhub"), LabelSelector: types.StringNull()}
	var diags diag.Diagnostics
	readClaims(ctx, &m, live, &state, &diags)
	if diags.ErrorsCount() > 0 || diags.WarningsCount() != 1 || !strings.Contains(diags.Warnings()[0].Detail(), `listed as "d&<ve> (claim-dave-2)"`) {
		t.Fatalf("diagnostics: %v", diags)
	}
	var got homeClaimsModel
	if d := state.Get(ctx, &got); d.HasError() {
		t.Fatal(d)
	}
	var decoded map[string]any
	if err := json.Unmarshal([]byte(got.Claims.ValueString()), &decoded); err != nil {
		t.Fatalf("claims is not JSON: %v\n%s", err, got.Claims.ValueString())
	}
	if !reflect.DeepEqual(decoded, want) {
		t.Errorf("claims:\n got %v\nwant %v", decoded, want)
	}
	if got.Count.ValueInt64() != 6 {
		t.Errorf("claim_count = %v, want 6", got.Count)
	}
	wantModes := map[string]int64{"ReadWriteOnce": 4, "ReadWriteMany": 1, "ReadOnlyMany": 1}
	var modes map[string]int64
	if d := got.AccessModeCounts.ElementsAs(ctx, &modes, false); d.HasError() || !reflect.DeepEqual(modes, wantModes) {
		t.Errorf("access_mode_counts = %v, want %v (%v)", modes, wantModes, d)
	}

	// The value is the same string whatever the order of the List.
	rev := make([]claims.Claim, len(live))
	for i, c := range live {
		rev[len(live)-1-i] = c
	}
	m2 := homeClaimsModel{Namespace: types.StringValue("jhub"), LabelSelector: types.StringNull()}
	readClaims(ctx, &m2, rev, &state, &diags)
	var again types.String
	state.GetAttribute(ctx, path.Root("claims"), &again)
	if again.ValueString() != got.Claims.ValueString() {
		t.Errorf("claims differs with the claims listed in another order:\n%s\n%s", again.ValueString(), got.Claims.ValueString())
	}
}

// Building the claims value alone, for 20,000 claims.
func BenchmarkHomeClaimsJSON20000(b *testing.B) {
	byKey, _ := claims.ByKey(manyClaims(20000))
	b.ReportAllocs()
	for b.Loop() {
		if homeClaimsJSON(byKey) == "" {
			b.Fatal("empty")
		}
	}
}

// liveClaimJSON is one claim in the data source's `claims`, as
// homeClaimsJSON writes it.
type liveClaimJSON struct {
	Name          string   `json:"name"`
	Username      string   `json:"username"`
	UsernameLabel string   `json:"username_label"`
	Servername    string   `json:"servername"`
	AccessModes   []string `json:"access_modes"`
	StorageClass  string   `json:"storage_class_name"`
	Requested     string   `json:"requested"`
	Capacity      string   `json:"capacity"`
	Phase         string   `json:"phase"`
	VolumeName    string   `json:"volume_name"`
}

// homeClaimsJSONReference is homeClaimsJSON through encoding/json: a map
// of liveClaimJSON, marshalled.
func homeClaimsJSONReference(byKey map[string]claims.Claim) string {
	out := make(map[string]liveClaimJSON, len(byKey))
	for k, c := range byKey {
		modes := c.AccessModes
		if modes == nil {
			modes = []string{} // [], not null
		}
		out[k] = liveClaimJSON{
			Name: c.Name, Username: c.Username, UsernameLabel: c.UsernameLabel, Servername: c.Servername,
			AccessModes: modes, StorageClass: c.StorageClass, Requested: c.Requested, Capacity: c.Capacity,
			Phase: c.Phase, VolumeName: c.VolumeName,
		}
	}
	b, err := json.Marshal(out)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// homeClaimsJSON writes what encoding/json writes, on random claims whose
// strings need escapes (quotes, backslashes, control characters, the
// characters encoding/json escapes for HTML, U+2028, invalid UTF-8), keys
// included, and with no, one or several access modes.
func TestHomeClaimsJSONIsEncodingJSON(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	odd := []string{"", "alice", "a<b", "c&d", "e>f", `q"uote`, `back\slash`, "tab\t", "nl\n", "é", "\u2028line", "\x7f", "\xff\xfe", "ß", "Ω", "user@example.org", "claim-alice--gpu"}
	pick := func() string { return odd[rng.IntN(len(odd))] + odd[rng.IntN(len(odd))] }
	for i := 0; i < 3000; i++ {
		byKey := map[string]claims.Claim{}
		for j := rng.IntN(8); j > 0; j-- {
			c := claims.Claim{Name: pick(), Username: pick(), UsernameLabel: pick(), Servername: pick(),
				StorageClass: pick(), Requested: pick(), Capacity: pick(), Phase: pick(), VolumeName: pick()}
			switch rng.IntN(4) {
			case 0: // no modes: nil
			case 1:
				c.AccessModes = []string{}
			default:
				for k := 1 + rng.IntN(3); k > 0; k-- {
					c.AccessModes = append(c.AccessModes, pick())
				}
			}
			byKey[pick()] = c
		}
		if got, want := homeClaimsJSON(byKey), homeClaimsJSONReference(byKey); got != want {
			t.Fatalf("claims %d:\ngot  %s\nwant %s", i, got, want)
		}
	}
	live := manyClaims(2000)
	byKey, _ := claims.ByKey(live)
	if got, want := homeClaimsJSON(byKey), homeClaimsJSONReference(byKey); got != want {
		t.Fatalf("2,000 claims as KubeSpawner makes them differ from encoding/json")
	}
}

// homes of 18,001 users moving out of the shared layout (manyClaims'
// default servers, found under the escape scheme, and one in a directory):
// safety.HubHomes and the JSON, what Read adds to the List and the Get of
// the shared claim.
func BenchmarkHomeClaimsHomes20000(b *testing.B) {
	live := manyClaims(20000)
	users := make([]string, 0, 20000)
	for _, c := range live {
		if c.Servername == "" {
			users = append(users, c.Username)
		}
	}
	users = append(users, "new-user@example.org")
	m := homesModel{SharedClaim: types.StringValue("home-nfs"), Layout: types.StringValue(layoutPerUser), SlugScheme: types.StringValue("escape"),
		Users: types.StringValue(`{"` + strings.Join(users, `":{},"`) + `":{}}`)}
	shared := &claims.Claim{Name: "home-nfs", Phase: "Bound", AccessModes: []string{"ReadWriteMany"}}
	b.ReportAllocs()
	for b.Loop() {
		var diags diag.Diagnostics
		m.readHomes("jhub", live, shared, &diags)
		if diags.HasError() || !strings.Contains(m.Homes.ValueString(), `"user00001@example.org":{"home":"claim"`) {
			b.Fatal(diags, m.Homes.ValueString()[:200])
		}
	}
}

// homes is what encoding/json writes for the homes by user.
func TestHomesJSON(t *testing.T) {
	type home struct {
		Home      string   `json:"home"`
		Claim     string   `json:"claim"`
		SubPath   string   `json:"sub_path"`
		Moved     bool     `json:"moved"`
		MovedFrom string   `json:"moved_from"`
		Method    string   `json:"method"`
		Reason    string   `json:"reason"`
		Earlier   []string `json:"earlier_places"`
	}
	homes := map[string]safety.Home{
		"alice":   {Kind: safety.HomeClaim, Claim: "claim-alice", SubPath: "home/alice", Moved: true, MovedFrom: "home/alice", Method: migration.MethodSplit},
		"bob<&>":  {Kind: safety.HomeDirectory, Claim: "home-nfs", SubPath: "home/bob-3c-26-3e", EarlierPlaces: []string{"bob<&>", "old/\"b\""}},
		"élodie":  {Kind: safety.HomeRefused, Claim: "claim-elodie", Reason: "claim \"claim-elodie\" is being deleted\n"},
		"":        {},
		"zed/srv": {Kind: safety.HomeDirectory},
	}
	want := map[string]home{}
	users := []string{}
	for u, h := range homes {
		users = append(users, u)
		if h.EarlierPlaces == nil {
			h.EarlierPlaces = []string{}
			homes[u] = h
		}
		want[u] = home{h.Kind, h.Claim, h.SubPath, h.Moved, h.MovedFrom, string(h.Method), h.Reason, h.EarlierPlaces}
	}
	slices.Sort(users)
	w, err := json.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	if got := homesJSON(users, homes); got != string(w) {
		t.Errorf("homesJSON:\n%s\nencoding/json:\n%s", got, w)
	}
}
