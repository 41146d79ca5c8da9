package provider

import (
	"context"
	"maps"
	"slices"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/claims"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/kubespawner"
)

// DefaultClaimSelector is the label KubeSpawner puts on every home claim it creates.
const DefaultClaimSelector = kubespawner.LabelComponent + "=" + kubespawner.ComponentSingleuserStorage

type homeClaimsDataSource struct{ data *providerData }

var _ datasource.DataSourceWithConfigure = (*homeClaimsDataSource)(nil)

// NewHomeClaimsDataSource is the jupyter_home_claims data source.
func NewHomeClaimsDataSource() datasource.DataSource { return &homeClaimsDataSource{} }

type homeClaimsModel struct {
	Namespace        types.String `tfsdk:"namespace"`
	LabelSelector    types.String `tfsdk:"label_selector"`
	Claims           types.String `tfsdk:"claims"`
	Count            types.Int64  `tfsdk:"claim_count"`
	AccessModeCounts types.Map    `tfsdk:"access_mode_counts"`
	homesModel
}

func (d *homeClaimsDataSource) Metadata(_ context.Context, req datasource.MetadataRequest, resp *datasource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_home_claims"
}

func (d *homeClaimsDataSource) Schema(_ context.Context, _ datasource.SchemaRequest, resp *datasource.SchemaResponse) {
	resp.Schema = schema.Schema{
		MarkdownDescription: "Reads the home-directory claims of one JupyterHub deployment: every PersistentVolumeClaim " +
			"in `namespace` that matches `label_selector`, with one paginated List (no request per claim).\n\n" +
			"With `shared_claim` (the shared layout: every home a directory of one claim, as zero-to-jupyterhub's `static` storage and Nebari classic keep them), " +
			"it also says where each user named in `users` has their home now (`homes`): their directory, a claim of their own (a finished move of the directory), " +
			"or a spawn the hub refuses while a move is under way, as the hub decides at each spawn; and what the shared claim is (`shared_claim_status`, one Get more).",
		Attributes: map[string]schema.Attribute{
			"namespace": schema.StringAttribute{Required: true, MarkdownDescription: "Namespace of the JupyterHub deployment.",
				Validators: []validator.String{namespaceValidator()}},
			"label_selector": schema.StringAttribute{Optional: true, MarkdownDescription: "Label selector for the claims. Default `" +
				DefaultClaimSelector + "`, which KubeSpawner sets on every home claim it creates.",
				Validators: []validator.String{labelSelectorValidator()}},
			"claims": schema.StringAttribute{Computed: true,
				MarkdownDescription: "The claims as compact JSON: `jsondecode(data.jupyter_home_claims.<name>.claims)` is an object " +
					"keyed by raw JupyterHub username (the `hub.jupyter.org/username` annotation, else the label of that name). " +
					"A named server's claim is keyed `username/servername`; a claim with no username at all by its own name. " +
					"If two claims share a key, the second is keyed `key (claim name)` and a warning says so. " +
					"Each claim is an object of `name`, `username` (annotation, else label), `username_label` (the label's value), " +
					"`servername` (empty for the default server), `access_modes` (a list, e.g. `[\"ReadWriteOnce\"]`), " +
					"`storage_class_name` (empty when the claim names none), `requested` (a Kubernetes quantity such as `10Gi`), " +
					"`capacity` (empty until bound), `phase` (`Pending`, `Bound` or `Lost`) and `volume_name` (empty until bound). " +
					"One string rather than a map of objects keeps plans and reads fast at tens of thousands of users: " +
					"converting a map of 20,000 claims took the provider seconds on every read."},
			"claim_count": schema.Int64Attribute{Computed: true, MarkdownDescription: "Number of claims (`count` is a reserved name in Terraform)."},
			"access_mode_counts": schema.MapAttribute{Computed: true, ElementType: types.Int64Type,
				MarkdownDescription: "Claims per access mode, e.g. `{ ReadWriteOnce = 12 }`."},
		},
	}
	maps.Copy(resp.Schema.Attributes, homesAttributes())
}

func (d *homeClaimsDataSource) Configure(_ context.Context, req datasource.ConfigureRequest, resp *datasource.ConfigureResponse) {
	d.data = configuredData(req.ProviderData, &resp.Diagnostics)
}

func (d *homeClaimsDataSource) Read(ctx context.Context, req datasource.ReadRequest, resp *datasource.ReadResponse) {
	var m homeClaimsModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	client := requireClient(d.data, &resp.Diagnostics)
	if client == nil {
		return
	}
	selector := DefaultClaimSelector
	if !m.LabelSelector.IsNull() {
		selector = m.LabelSelector.ValueString()
	}
	live, err := client.ListClaims(ctx, m.Namespace.ValueString(), selector)
	if err != nil {
		resp.Diagnostics.AddError("Cannot read home claims", err.Error())
		return
	}
	var shared *claims.Claim
	if !m.SharedClaim.IsNull() {
		if shared, err = client.Claim(ctx, m.Namespace.ValueString(), m.SharedClaim.ValueString()); err != nil {
			resp.Diagnostics.AddAttributeError(path.Root("shared_claim"), "Cannot read the shared claim", err.Error())
			return
		}
	}
	m.readHomes(m.Namespace.ValueString(), live, shared, &resp.Diagnostics)
	if resp.Diagnostics.HasError() {
		return
	}
	readClaims(ctx, &m, live, &resp.State, &resp.Diagnostics)
}

// readClaims sets m's computed attributes from the live claims and writes m
// to state: everything Read does after the List.
func readClaims(ctx context.Context, m *homeClaimsModel, live []claims.Claim, state *tfsdk.State, diags *diag.Diagnostics) {
	byKey, notes := claims.ByKey(live)
	for _, n := range notes {
		diags.AddAttributeWarning(path.Root("claims"), "Two claims for one user", n)
	}
	m.Claims = types.StringValue(homeClaimsJSON(byKey))
	m.Count = types.Int64Value(int64(len(live)))
	counts := map[string]attr.Value{}
	for mode, n := range claims.ModeCounts(live) {
		counts[mode] = types.Int64Value(int64(n))
	}
	m.AccessModeCounts = types.MapValueMust(types.Int64Type, counts)
	diags.Append(state.Set(ctx, m)...)
}

// homeClaimsJSON is the `claims` value: the claims by key, as compact JSON.
// One string rather than a map of objects on purpose: the framework builds,
// encodes and OpenTofu decodes one value per field of every claim, which
// takes seconds for tens of thousands of claims (BenchmarkHomeClaimsRead20000;
// BENCHMARKS.md). It is written directly, byte for byte what encoding/json
// writes for the map of structs (a random test compares the two), in a
// fraction of the time (BENCHMARKS.md). Map keys are sorted, so the value
// is stable.
func homeClaimsJSON(byKey map[string]claims.Claim) string {
	keys := slices.Sorted(maps.Keys(byKey)) // as encoding/json orders a map's keys
	return sortedJSONObject(keys, 320, func(b []byte, k string) []byte {
		c := byKey[k]
		return appendLiveClaim(b, &c)
	})
}

// sortedJSONObject writes one JSON object of keys (sorted, as encoding/json
// orders a map's keys), each value appended by value; size is about the
// bytes of one entry.
func sortedJSONObject(keys []string, size int, value func(b []byte, key string) []byte) string {
	b := make([]byte, 0, 2+len(keys)*size)
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = value(append(appendJSONString(b, k), ':'), k)
	}
	return string(append(b, '}'))
}

// appendLiveClaim appends claim c as encoding/json writes a liveClaimJSON:
// its fields in order, the access modes [] when there are none.
func appendLiveClaim(b []byte, c *claims.Claim) []byte {
	field := func(b []byte, key, v string) []byte {
		return appendJSONString(append(b, key...), v)
	}
	b = field(b, `{"name":`, c.Name)
	b = field(b, `,"username":`, c.Username)
	b = field(b, `,"username_label":`, c.UsernameLabel)
	b = field(b, `,"servername":`, c.Servername)
	b = append(b, `,"access_modes":[`...)
	for i, m := range c.AccessModes {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, m)
	}
	b = field(append(b, ']'), `,"storage_class_name":`, c.StorageClass)
	b = field(b, `,"requested":`, c.Requested)
	b = field(b, `,"capacity":`, c.Capacity)
	b = field(b, `,"phase":`, c.Phase)
	b = field(b, `,"volume_name":`, c.VolumeName)
	return append(b, '}')
}
