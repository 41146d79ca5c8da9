package provider

import (
	"context"
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/function"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/hubconfig"
)

var _ function.Function = (*HelmValuesFunction)(nil)

// HelmValuesFunction is provider::jupyter::helm_values: the
// zero-to-jupyterhub values of a jupyter_spawner_config, rendered from the
// resource's inputs as the resource renders its ConfigMap. They are not
// an attribute of the resource, so that its plans do not print them (the
// hub's Python file twice, the document compressed): only a helm_release
// that passes them shows them, as a change of its values.
type HelmValuesFunction struct{}

// NewHelmValuesFunction returns the helm_values function.
func NewHelmValuesFunction() function.Function { return &HelmValuesFunction{} }

// helmValuesConfig is the part of jupyter_spawner_config the values are
// rendered from; OpenTofu drops the resource's other attributes when it
// converts the object to this type.
type helmValuesConfig struct {
	HomeStorageSettings types.String `tfsdk:"home_storage_settings"`
	Profiles            types.List   `tfsdk:"profiles"`
	ColocationLabel     types.String `tfsdk:"colocation_label"`
	ExtraSettingsJSON   types.String `tfsdk:"extra_settings_json"`
	HomeMountPath       types.String `tfsdk:"home_mount_path"`
	HubChecksum         types.String `tfsdk:"hub_checksum"`
}

var helmValuesConfigTypes = map[string]attr.Type{
	"home_storage_settings": types.StringType,
	"profiles":              types.ListType{ElemType: types.StringType},
	"colocation_label":      types.StringType,
	"extra_settings_json":   types.StringType,
	"home_mount_path":       types.StringType,
	"hub_checksum":          types.StringType,
}

func (f *HelmValuesFunction) Metadata(_ context.Context, _ function.MetadataRequest, resp *function.MetadataResponse) {
	resp.Name = "helm_values"
}

func (f *HelmValuesFunction) Definition(_ context.Context, _ function.DefinitionRequest, resp *function.DefinitionResponse) {
	resp.Definition = function.Definition{
		Summary: "The zero-to-jupyterhub Helm values of a jupyter_spawner_config",
		Description: "Returns YAML values for the zero-to-jupyterhub chart that carry the hub file and document of the jupyter_spawner_config " +
			"given (pass the resource itself: provider::jupyter::helm_values(jupyter_spawner_config.hub)), for helm_release's values.",
		MarkdownDescription: "Returns YAML values for the zero-to-jupyterhub chart that carry the hub's file and document of the " +
			"`jupyter_spawner_config` given, for `helm_release`'s `values`: pass the resource itself, " +
			"`provider::jupyter::helm_values(jupyter_spawner_config.hub)`. They are rendered from the resource's inputs as the resource renders its " +
			"ConfigMap, and the function fails when their checksum is not the resource's `hub_checksum`.\n\n" +
			"Every key is a map, so that the values merge with the chart's and your own values files (Helm replaces lists such as " +
			"`hub.extraVolumes`, merges maps): `hub.extraFiles` puts the file and its compressed document (`binaryData`, base64) in `" +
			hubconfig.FilesDir + "`, a `hub.extraConfig` entry (`" + hubconfig.ExtraConfigKey + "`) applies the file after every " +
			"`jupyterhub_config.d` file and every other `hub.extraConfig` entry, `hub.annotations` carries `hub_checksum` as `" +
			hubconfig.ChecksumAnnotation + "`, and `singleuser.storage` states the home (`homeMountPath`, the dynamic claim's class, access modes " +
			"and name template; its `type` is left to your values).\n\n" +
			"The values are a function's result rather than an attribute of the resource so that the resource's plans do not print them (about " +
			"400 lines: the hub's Python file, and the document compressed); a `helm_release` that passes them shows them as its values, " +
			"a change line by line.",
		Parameters: []function.Parameter{
			function.ObjectParameter{
				Name:           "config",
				AttributeTypes: helmValuesConfigTypes,
				Description:    "A jupyter_spawner_config resource, e.g. jupyter_spawner_config.hub.",
				MarkdownDescription: "A `jupyter_spawner_config` resource, e.g. `jupyter_spawner_config.hub` (its `home_storage_settings`, `profiles`, " +
					"`colocation_label`, `extra_settings_json`, `home_mount_path` and `hub_checksum` are read).",
			},
		},
		Return: function.StringReturn{},
	}
}

func (f *HelmValuesFunction) Run(ctx context.Context, req function.RunRequest, resp *function.RunResponse) {
	var c helmValuesConfig
	if resp.Error = req.Arguments.Get(ctx, &c); resp.Error != nil {
		return
	}
	values, err := helmValues(c)
	if err != nil {
		resp.Error = function.NewArgumentFuncError(0, err.Error())
		return
	}
	resp.Error = resp.Result.Set(ctx, values)
}

// helmValues renders c as jupyter_spawner_config renders its ConfigMap,
// and fails unless the checksum is c's hub_checksum.
func helmValues(c helmValuesConfig) (string, error) {
	m := spawnerConfigModel{HomeStorageSettings: c.HomeStorageSettings, Profiles: c.Profiles,
		ColocationLabel: c.ColocationLabel, ExtraSettingsJSON: c.ExtraSettingsJSON, HomeMountPath: c.HomeMountPath}
	var diags diag.Diagnostics
	res, ok := m.build(&diags)
	if !ok {
		return "", fmt.Errorf("the jupyter_spawner_config does not render: %s", diagSummaries(diags))
	}
	files := hubconfig.Render(res)
	if files.Checksum != c.HubChecksum.ValueString() {
		return "", fmt.Errorf("the values render to checksum %s, not the hub_checksum given (%q): pass the jupyter_spawner_config resource itself, "+
			"e.g. provider::jupyter::helm_values(jupyter_spawner_config.hub)", files.Checksum, c.HubChecksum.ValueString())
	}
	return hubconfig.HelmYAML(hubconfig.HelmValues(res, files))
}

// diagSummaries joins the summaries and details of the errors in diags.
func diagSummaries(diags diag.Diagnostics) string {
	var s string
	for _, d := range diags.Errors() {
		if s != "" {
			s += "; "
		}
		s += d.Summary() + ": " + d.Detail()
	}
	return s
}
