package provider

import (
	"context"
	"fmt"
	"regexp"

	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/kube"
)

// configuredData unpacks the provider's data in a resource's or data source's Configure.
func configuredData(v any, diags *diag.Diagnostics) *providerData {
	if v == nil {
		return nil // Configure is called before the provider is configured, too.
	}
	pd, ok := v.(*providerData)
	if !ok {
		diags.AddError("Unexpected provider data", fmt.Sprintf("expected *providerData, got %T; this is a bug in the provider", v))
		return nil
	}
	return pd
}

// requireClient returns the API client or explains why there is none.
func requireClient(pd *providerData, diags *diag.Diagnostics) *kube.Client {
	switch {
	case pd == nil:
		diags.AddError("Provider not configured", "The jupyter provider has no configuration; this is a bug in the provider or in Terraform.")
	case pd.Client == nil:
		diags.AddError("Cluster connection not known yet",
			fmt.Sprintf("The provider setting %q is not known until apply, so the cluster cannot be read now. "+
				"Create the cluster in an earlier apply (or with -target), or make the setting known at plan time.", pd.Unknown))
	default:
		return pd.Client
	}
	return nil
}

var dns1123Label = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

// dns1123Subdomain is an object name such as a claim's.
var dns1123Subdomain = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)

func namespaceValidator() validator.String {
	return stringvalidator.All(
		stringvalidator.LengthBetween(1, 63),
		stringvalidator.RegexMatches(dns1123Label, "must be a valid namespace name: lowercase letters, digits and '-', starting and ending with a letter or digit, at most 63 characters (e.g. \"jhub\")"),
	)
}

type labelSelector struct{}

func labelSelectorValidator() validator.String { return labelSelector{} }

func (labelSelector) Description(_ context.Context) string {
	return "must be a Kubernetes label selector"
}
func (v labelSelector) MarkdownDescription(ctx context.Context) string { return v.Description(ctx) }
func (labelSelector) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	if _, err := labels.Parse(req.ConfigValue.ValueString()); err != nil {
		resp.Diagnostics.AddAttributeError(req.Path, "Invalid label selector",
			fmt.Sprintf("%v. Use the syntax of kubectl -l, e.g. \"component=singleuser-storage,app=jupyterhub\".", err))
	}
}

func pathExpr(name string) path.Expression { return path.MatchRoot(name) }

// planApply reads the plan into a model, lets apply complete it against the
// cluster, and records it as the new state unless apply failed.
func planApply[M any](ctx context.Context, plan tfsdk.Plan, state *tfsdk.State, diags *diag.Diagnostics, apply func(*M)) {
	var m M
	diags.Append(plan.Get(ctx, &m)...)
	if diags.HasError() {
		return
	}
	apply(&m)
	if diags.HasError() {
		return
	}
	diags.Append(state.Set(ctx, &m)...)
}
