package provider

import (
	"context"
	"sort"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/claims"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/kube"
)

// DefaultClaimSelector is the label KubeSpawner puts on every home claim it creates.
const DefaultClaimSelector = "component=singleuser-storage"

type homeClaimsDataSource struct{ data *providerData }

var _ datasource.DataSourceWithConfigure = (*homeClaimsDataSource)(nil)

// NewHomeClaimsDataSource is the jupyter_home_claims data source.
func NewHomeClaimsDataSource() datasource.DataSource { return &homeClaimsDataSource{} }

type homeClaimsModel struct {
	Namespace        types.String `tfsdk:"namespace"`
	LabelSelector    types.String `tfsdk:"label_selector"`
	Claims           types.Map    `tfsdk:"claims"`
	Count            types.Int64  `tfsdk:"claim_count"`
	AccessModeCounts types.Map    `tfsdk:"access_mode_counts"`
}

var liveClaimAttrTypes = map[string]attr.Type{
	"name":               types.StringType,
	"username":           types.StringType,
	"username_label":     types.StringType,
	"servername":         types.StringType,
	"access_modes":       types.ListType{ElemType: types.StringType},
	"storage_class_name": types.StringType,
	"requested":          types.StringType,
	"capacity":           types.StringType,
	"phase":              types.StringType,
	"volume_name":        types.StringType,
}

func (d *homeClaimsDataSource) Metadata(_ context.Context, req datasource.MetadataRequest, resp *datasource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_home_claims"
}

func (d *homeClaimsDataSource) Schema(_ context.Context, _ datasource.SchemaRequest, resp *datasource.SchemaResponse) {
	s := func(desc string) schema.StringAttribute {
		return schema.StringAttribute{Computed: true, MarkdownDescription: desc}
	}
	resp.Schema = schema.Schema{
		MarkdownDescription: "Reads the home-directory claims of one JupyterHub deployment: every PersistentVolumeClaim " +
			"in `namespace` that matches `label_selector`, with one paginated List (no request per claim).",
		Attributes: map[string]schema.Attribute{
			"namespace": schema.StringAttribute{Required: true, MarkdownDescription: "Namespace of the JupyterHub deployment.",
				Validators: []validator.String{namespaceValidator()}},
			"label_selector": schema.StringAttribute{Optional: true, MarkdownDescription: "Label selector for the claims. Default `" +
				DefaultClaimSelector + "`, which KubeSpawner sets on every home claim it creates.",
				Validators: []validator.String{labelSelectorValidator()}},
			"claims": schema.MapNestedAttribute{Computed: true,
				MarkdownDescription: "Claims keyed by raw JupyterHub username (the `hub.jupyter.org/username` annotation, else the label of that name). " +
					"A named server's claim is keyed `username/servername`; a claim with no username at all by its own name. " +
					"If two claims share a key, the second is keyed `key (claim name)` and a warning says so.",
				NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
					"name":               s("Claim name."),
					"username":           s("Raw username (annotation, else label)."),
					"username_label":     s("Value of the `hub.jupyter.org/username` label."),
					"servername":         s("Named server the claim belongs to; empty for the default server."),
					"access_modes":       schema.ListAttribute{Computed: true, ElementType: types.StringType, MarkdownDescription: "Access modes, e.g. `[\"ReadWriteOnce\"]`."},
					"storage_class_name": s("Storage class; empty when the claim names none."),
					"requested":          s("Requested size, a Kubernetes quantity such as `10Gi`."),
					"capacity":           s("Provisioned size; empty until the claim is bound."),
					"phase":              s("`Pending`, `Bound` or `Lost`."),
					"volume_name":        s("Bound PersistentVolume; empty until bound."),
				}},
			},
			"claim_count": schema.Int64Attribute{Computed: true, MarkdownDescription: "Number of claims (`count` is a reserved name in Terraform)."},
			"access_mode_counts": schema.MapAttribute{Computed: true, ElementType: types.Int64Type,
				MarkdownDescription: "Claims per access mode, e.g. `{ ReadWriteOnce = 12 }`."},
		},
	}
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
	pvcs, err := client.ListClaims(ctx, m.Namespace.ValueString(), selector)
	if err != nil {
		resp.Diagnostics.AddError("Cannot read home claims", err.Error())
		return
	}
	live := make([]claims.Claim, len(pvcs))
	for i := range pvcs {
		live[i] = kube.ClaimFromPVC(&pvcs[i])
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
	keys := make([]string, 0, len(byKey))
	for k := range byKey {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	objs := make(map[string]attr.Value, len(byKey))
	for _, k := range keys {
		objs[k] = liveClaimObject(byKey[k])
	}
	m.Claims = types.MapValueMust(types.ObjectType{AttrTypes: liveClaimAttrTypes}, objs)
	m.Count = types.Int64Value(int64(len(live)))
	counts := map[string]attr.Value{}
	for mode, n := range claims.ModeCounts(live) {
		counts[mode] = types.Int64Value(int64(n))
	}
	m.AccessModeCounts = types.MapValueMust(types.Int64Type, counts)
	diags.Append(state.Set(ctx, m)...)
}

func liveClaimObject(c claims.Claim) attr.Value {
	modes := make([]attr.Value, len(c.AccessModes))
	for i, m := range c.AccessModes {
		modes[i] = types.StringValue(m)
	}
	return types.ObjectValueMust(liveClaimAttrTypes, map[string]attr.Value{
		"name":               types.StringValue(c.Name),
		"username":           types.StringValue(c.Username),
		"username_label":     types.StringValue(c.UsernameLabel),
		"servername":         types.StringValue(c.Servername),
		"access_modes":       types.ListValueMust(types.StringType, modes),
		"storage_class_name": types.StringValue(c.StorageClass),
		"requested":          types.StringValue(c.Requested),
		"capacity":           types.StringValue(c.Capacity),
		"phase":              types.StringValue(c.Phase),
		"volume_name":        types.StringValue(c.VolumeName),
	})
}
