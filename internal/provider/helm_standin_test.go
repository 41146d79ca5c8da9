package provider

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/provider"
	pschema "github.com/hashicorp/terraform-plugin-framework/provider/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	rschema "github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

// helmStandIn stands in for hashicorp/helm, which cannot be installed
// here, so that OpenTofu validates, plans and applies the examples' helm.tf
// as written: it has the schema of the attributes the examples set
// (hashicorp/helm 3.x: the provider's kubernetes object, helm_release's
// name, namespace, repository, chart, version and values) and keeps a
// release's values in the state, evaluated by OpenTofu. The tests render
// the chart with them as helm upgrade would.
type helmStandIn struct{}

func (helmStandIn) Metadata(_ context.Context, _ provider.MetadataRequest, resp *provider.MetadataResponse) {
	resp.TypeName = "helm"
}

func (helmStandIn) Schema(_ context.Context, _ provider.SchemaRequest, resp *provider.SchemaResponse) {
	resp.Schema = pschema.Schema{Attributes: map[string]pschema.Attribute{
		"kubernetes": pschema.SingleNestedAttribute{Optional: true, Attributes: map[string]pschema.Attribute{
			"config_path":    pschema.StringAttribute{Optional: true},
			"config_context": pschema.StringAttribute{Optional: true},
		}},
	}}
}

func (helmStandIn) Configure(context.Context, provider.ConfigureRequest, *provider.ConfigureResponse) {
}

func (helmStandIn) Resources(context.Context) []func() resource.Resource {
	return []func() resource.Resource{func() resource.Resource { return helmReleaseStandIn{} }}
}

func (helmStandIn) DataSources(context.Context) []func() datasource.DataSource { return nil }

type helmReleaseStandIn struct{}

type helmReleaseModel struct {
	ID         types.String `tfsdk:"id"`
	Name       types.String `tfsdk:"name"`
	Namespace  types.String `tfsdk:"namespace"`
	Repository types.String `tfsdk:"repository"`
	Chart      types.String `tfsdk:"chart"`
	Version    types.String `tfsdk:"version"`
	Values     types.List   `tfsdk:"values"`
}

func (helmReleaseStandIn) Metadata(_ context.Context, _ resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = "helm_release"
}

func (helmReleaseStandIn) Schema(_ context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	resp.Schema = rschema.Schema{Attributes: map[string]rschema.Attribute{
		"id":         rschema.StringAttribute{Computed: true, PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown()}},
		"name":       rschema.StringAttribute{Required: true, PlanModifiers: []planmodifier.String{stringplanmodifier.RequiresReplace()}},
		"namespace":  rschema.StringAttribute{Optional: true, PlanModifiers: []planmodifier.String{stringplanmodifier.RequiresReplace()}},
		"repository": rschema.StringAttribute{Optional: true},
		"chart":      rschema.StringAttribute{Required: true},
		"version":    rschema.StringAttribute{Optional: true},
		"values":     rschema.ListAttribute{Optional: true, ElementType: types.StringType},
	}}
}

func (helmReleaseStandIn) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	var m helmReleaseModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &m)...)
	m.ID = m.Name
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

func (helmReleaseStandIn) Read(context.Context, resource.ReadRequest, *resource.ReadResponse) {}

func (helmReleaseStandIn) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	var m helmReleaseModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &m)...)
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

func (helmReleaseStandIn) Delete(context.Context, resource.DeleteRequest, *resource.DeleteResponse) {}
