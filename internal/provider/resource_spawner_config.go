package provider

import (
	"context"
	"fmt"
	"regexp"

	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/int64default"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringdefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/claims"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/hubconfig"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/kube"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/kubespawner"
)

type spawnerConfigResource struct{ data *providerData }

var (
	_ resource.ResourceWithConfigure  = (*spawnerConfigResource)(nil)
	_ resource.ResourceWithModifyPlan = (*spawnerConfigResource)(nil)
)

// NewSpawnerConfigResource is the jupyter_spawner_config resource.
func NewSpawnerConfigResource() resource.Resource { return &spawnerConfigResource{} }

type spawnerConfigModel struct {
	ID                  types.String `tfsdk:"id"`
	Namespace           types.String `tfsdk:"namespace"`
	ConfigMapName       types.String `tfsdk:"config_map_name"`
	HomeStorageSettings types.String `tfsdk:"home_storage_settings"`
	Profiles            types.List   `tfsdk:"profiles"`
	ColocationLabel     types.String `tfsdk:"colocation_label"`
	ExtraSettingsJSON   types.String `tfsdk:"extra_settings_json"`
	ColocatedServers    types.Int64  `tfsdk:"colocated_servers"`
	HomeMountPath       types.String `tfsdk:"home_mount_path"`
	HubChecksum         types.String `tfsdk:"hub_checksum"`
	ColocationRequired  types.Bool   `tfsdk:"colocation_required"`
	ColocationMode      types.String `tfsdk:"colocation_mode"`
	KubeSpawnerJSON     types.String `tfsdk:"kubespawner_json"`
}

func (r *spawnerConfigResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_spawner_config"
}

func (r *spawnerConfigResource) Schema(_ context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	computed := func(desc string) schema.StringAttribute {
		return schema.StringAttribute{Computed: true, MarkdownDescription: desc}
	}
	resp.Schema = schema.Schema{
		MarkdownDescription: "The KubeSpawner configuration of one JupyterHub deployment: the home storage's settings, the profiles and any other " +
			"KubeSpawner setting, combined into a ConfigMap with a Python file for the hub's `jupyterhub_config.d/` (`" + hubconfig.PythonFile + "`) and the JSON document it applies to `c.KubeSpawner`, " +
			"compressed with gzip (`" + hubconfig.DocumentFile + "`, in the ConfigMap's `binaryData`). The function `provider::jupyter::helm_values` renders values for the zero-to-jupyterhub chart " +
			"that carry the same two files: `values = [provider::jupyter::helm_values(jupyter_spawner_config.hub)]` in a `helm_release`.\n\n" +
			"A plan shows what a reviewer decides on, not generated text: the inputs, `kubespawner_json` (the settings, a change key by key), " +
			"`colocation_mode`, and `hub_checksum`, whose change restarts the hub. The hub's Python file (about 470 lines, the same for every configuration " +
			"of a provider version) and the Helm values (the file again, and the document compressed) are in no attribute, so no plan prints them: " +
			"the ConfigMap holds the file and the document, and the function's result is where a `helm_release` passes it (see *What a plan shows* below).\n\n" +
			"The file composes with what earlier configuration set (the chart's settings, a chart's own `jupyterhub_config.d` files such as Nebari's data-science-pack, " +
			"other `hub.extraConfig` entries) instead of replacing it; see *Composition* below.\n\n" +
			"The hub decides each spawn from the cluster, so the configuration lists no user and a migration changes nothing in it: a `pre_spawn_hook` " +
			"reads the claim the server (default or named) is about to mount, with KubeSpawner's own client and within the chart's hub Role (get and list on claims). " +
			"A home whose copy was switched is mounted from the copy (names and UIDs checked), also once the old claim is deleted; while a home is being copied, rebound " +
			"or deleted the spawn is refused with a message telling the user to try again, instead of KubeSpawner creating an empty claim over it; when the API server " +
			"cannot be asked the spawn fails. See *Spawn-time decisions* below.\n\n" +
			"Co-location of a user's pods is derived from that claim, never written by hand: a server whose claim is `ReadWriteOnce` or `ReadWriteOncePod` gets the " +
			"`colocation_label` (the user's label-safe name, as KubeSpawner writes `hub.jupyter.org/username`) and a required pod affinity on it " +
			"(`topologyKey: kubernetes.io/hostname`); a server on a `ReadWriteMany` claim gets none. A `modify_pod_hook` in the rendered file does this, so label and affinity always carry the same value " +
			"(email usernames broke templated affinities in the wild).\n\n" +
			"Under co-location, plans warn about its failure modes: GPU profiles blocked behind running apps, GPU nodes kept alive by apps, and " +
			"a user's servers that do not fit on the largest node.\n\n" +
			"JupyterHub reads its configuration at start. `provider::jupyter::helm_values` carries `hub_checksum` as a hub pod annotation, so `helm upgrade` restarts the hub " +
			"exactly when a setting the hub reads from this resource changed; migrations of homes change none. A deployment that mounts the ConfigMap " +
			"itself instead must restart the hub when `hub_checksum` changes.\n\n" +
			"The document holds the settings and the profiles, whatever the number of users. The plan fails when the ConfigMap would exceed the API server's 1 MiB, and warns when the Helm values would take too much of the chart's hub Secret " +
			"(which holds the values and the files of `hub.extraFiles`, so the document twice) or of Helm's release record; then mount the ConfigMap into the hub instead " +
			"(see *Large hubs* below).",
		Attributes: map[string]schema.Attribute{
			"id": schema.StringAttribute{Computed: true, MarkdownDescription: "`<namespace>/<config_map_name>`.",
				PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown()}},
			"namespace": schema.StringAttribute{Required: true, MarkdownDescription: "Namespace of the hub.",
				Validators: []validator.String{namespaceValidator()}, PlanModifiers: []planmodifier.String{stringplanmodifier.RequiresReplace()}},
			"config_map_name": schema.StringAttribute{Optional: true, Computed: true, Default: stringdefault.StaticString("jupyter-spawner"),
				MarkdownDescription: "Name of the ConfigMap; default `jupyter-spawner`.",
				Validators:          []validator.String{stringvalidator.RegexMatches(dns1123Label, "must be a DNS label, e.g. \"jupyter-spawner\"")},
				PlanModifiers:       []planmodifier.String{stringplanmodifier.RequiresReplace()}},
			"home_storage_settings": schema.StringAttribute{Required: true,
				MarkdownDescription: "The `spawner_settings` of a `jupyter_home_storage`: the home's access mode, class, size, claim naming and volume."},
			"profiles": schema.ListAttribute{Optional: true, ElementType: types.StringType,
				MarkdownDescription: "`profile_json` of each `jupyter_spawner_profile`, in the order of the spawn form, after the profiles earlier configuration offers (see *Composition*). A profile's own `volumes` get the global ones (the home first) in front, and are merged into the user's at spawn time."},
			"colocation_label": schema.StringAttribute{Optional: true, Computed: true, Default: stringdefault.StaticString(hubconfig.DefaultColocationLabel),
				MarkdownDescription: "Pod label co-location selects on. Default `hub.jupyter.org/colocate-user`; Nebari's data-science-pack uses `nebari.dev/colocate-user`, and the file then replaces that pack's own co-location.",
				Validators:          []validator.String{labelKeyValidator{}}},
			"extra_settings_json": schema.StringAttribute{Optional: true,
				MarkdownDescription: "JSON object of any other KubeSpawner settings (traitlet names), e.g. `jsonencode({ start_timeout = 600 })`. `volumes` and `volume_mounts` are appended to the home's; " +
					"lists of named things and dicts compose with earlier configuration (see *Composition*). The home storage's own settings and `profile_list` cannot be set here.",
				Validators: []validator.String{jsonObjectValidator{}}},
			"colocated_servers": schema.Int64Attribute{Optional: true, Computed: true, Default: int64default.StaticInt64(2),
				MarkdownDescription: "How many of one user's servers run at once (a lab and its apps); default 2. Under co-location they must fit on one node: the plan warns when a lab on the largest profile plus the others on the smallest does not fit on the largest node.",
				Validators:          []validator.Int64{int64validator.AtLeast(1)}},
			"home_mount_path": schema.StringAttribute{Optional: true, Computed: true, Default: stringdefault.StaticString(hubconfig.DefaultHomeMountPath),
				MarkdownDescription: "Where the home is mounted in the server's container; default `/home/jovyan` (z2jh's `singleuser.storage.homeMountPath`). " +
					"KubeSpawner template fields are allowed, e.g. `/home/{username}` (Nebari classic). `provider::jupyter::helm_values` sets `singleuser.storage.homeMountPath` to the same.",
				Validators: []validator.String{homeMountPathValidator{}}},
			"hub_checksum": computed("SHA-256 of everything the hub reads from this resource (the file and its document, taken before compression). `provider::jupyter::helm_values` carries it as the hub pod annotation `" +
				hubconfig.ChecksumAnnotation + "` (`hub.annotations`), so a `helm upgrade` restarts the hub when it changes. A refresh computes it from the ConfigMap's " +
				"content, so a ConfigMap edited outside OpenTofu, or written by another provider version, shows in the plan as a change of this one line."),
			"colocation_required": schema.BoolAttribute{Computed: true, MarkdownDescription: "Whether every user's pods are pinned to one node (a `ReadWriteOnce` or `ReadWriteOncePod` home). With a `ReadWriteMany` home it is false: only servers whose claim is still `ReadWriteOnce` are pinned, decided at each spawn."},
			"colocation_mode":     computed("`all` (a `ReadWriteOnce` or `ReadWriteOncePod` home: every user's pods share a node) or `by_claim` (a `ReadWriteMany` home: a server's pods share a node only when the claim it mounts is still `ReadWriteOnce`, as the hub reads it at the spawn)."),
			"kubespawner_json":    computed("JSON object of the settings the file applies to `c.KubeSpawner` (a plan shows it key by key)."),
		},
	}
}

func (r *spawnerConfigResource) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	r.data = configuredData(req.ProviderData, &resp.Diagnostics)
}

// known reports whether every input of the rendering is known.
func (m *spawnerConfigModel) known() bool {
	for _, v := range []attr.Value{m.Namespace, m.ConfigMapName, m.HomeStorageSettings, m.Profiles, m.ColocationLabel,
		m.ExtraSettingsJSON, m.ColocatedServers, m.HomeMountPath} {
		if v.IsUnknown() {
			return false
		}
	}
	for _, e := range m.Profiles.Elements() {
		if e.IsUnknown() {
			return false
		}
	}
	return true
}

// build renders the model. Errors name the attribute.
func (m *spawnerConfigModel) build(diags *diag.Diagnostics) (hubconfig.Result, bool) {
	cfg := hubconfig.Config{ColocationLabel: m.ColocationLabel.ValueString(), HomeMountPath: m.HomeMountPath.ValueString()}
	var ok bool
	if cfg.Home, ok = jsonObject(m.HomeStorageSettings, path.Root("home_storage_settings"), diags); !ok || cfg.Home == nil {
		if !diags.HasError() {
			diags.AddAttributeError(path.Root("home_storage_settings"), "home_storage_settings is empty", "Pass jupyter_home_storage.<name>.spawner_settings.")
		}
		return hubconfig.Result{}, false
	}
	cfg.Extra, _ = jsonObject(m.ExtraSettingsJSON, path.Root("extra_settings_json"), diags)
	for i, e := range m.Profiles.Elements() {
		s, _ := e.(types.String)
		p, _ := jsonObject(s, path.Root("profiles").AtListIndex(i), diags)
		cfg.Profiles = append(cfg.Profiles, p)
	}
	if diags.HasError() {
		return hubconfig.Result{}, false
	}
	res, errs := hubconfig.Build(cfg)
	addErrorFindings(diags, errs)
	return res, len(errs) == 0
}

// render fills the computed attributes from res and returns the files
// the hub reads (the document compressed once).
func (m *spawnerConfigModel) render(res hubconfig.Result) hubconfig.Files {
	files := hubconfig.Render(res)
	m.ID = types.StringValue(m.Namespace.ValueString() + "/" + m.ConfigMapName.ValueString())
	m.ColocationMode = types.StringValue(string(res.Colocation.Mode))
	m.ColocationRequired = types.BoolValue(res.Colocation.Mode == hubconfig.ColocateAll)
	m.KubeSpawnerJSON = types.StringValue(hubconfig.JSON(res.Settings))
	m.HubChecksum = types.StringValue(files.Checksum)
	return files
}

func (m *spawnerConfigModel) unknownOutputs() {
	m.ColocationMode, m.KubeSpawnerJSON, m.HubChecksum = types.StringUnknown(), types.StringUnknown(), types.StringUnknown()
	m.ColocationRequired = types.BoolUnknown()
}

func (r *spawnerConfigResource) ModifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	if req.Plan.Raw.IsNull() {
		return
	}
	var plan spawnerConfigModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if !plan.known() {
		plan.unknownOutputs()
		resp.Diagnostics.Append(resp.Plan.Set(ctx, &plan)...)
		return
	}
	res, ok := plan.build(&resp.Diagnostics)
	if !ok {
		return
	}
	files := plan.render(res)
	values, err := hubconfig.HelmYAML(hubconfig.HelmValues(res, files))
	if err != nil {
		resp.Diagnostics.AddError("Cannot render the Helm values", err.Error())
		return
	}
	resp.Diagnostics.Append(spawnerConfigSizeDiagnostics(res, files, values, plan.ConfigMapName.ValueString())...)
	if resp.Diagnostics.HasError() {
		return
	}
	resp.Diagnostics.Append(resp.Plan.Set(ctx, &plan)...)
	if res.Colocation.Mode != hubconfig.ColocateAll {
		return // co-location only for claims still ReadWriteOnce: nothing to warn about
	}
	var nodes []hubconfig.Node
	if client := r.client(); client != nil {
		live, err := client.ListNodes(ctx)
		if err != nil {
			resp.Diagnostics.AddError("Cannot list the cluster's nodes", err.Error())
			return
		}
		for i := range live {
			nodes = append(nodes, nodeOf(&live[i]))
		}
	}
	resp.Diagnostics.Append(spawnerConfigDiagnostics(res, nodes, int(plan.ColocatedServers.ValueInt64()))...)
}

// spawnerConfigDiagnostics are the plan's co-location warnings for res
// against the nodes (nil when the cluster could not be read).
func spawnerConfigDiagnostics(res hubconfig.Result, nodes []hubconfig.Node, colocated int) diag.Diagnostics {
	var diags diag.Diagnostics
	addWarningFindings(&diags, hubconfig.Warnings(res, nodes, colocated))
	return diags
}

// spawnerConfigSizeDiagnostics are the plan's size checks: an error when
// the ConfigMap would exceed the API server's limit, a warning when
// the Helm values (provider::jupyter::helm_values) are too large for the
// hub Secret or Helm's release record.
func spawnerConfigSizeDiagnostics(res hubconfig.Result, files hubconfig.Files, helmValues, configMap string) diag.Diagnostics {
	var diags diag.Diagnostics
	errs, warnings := hubconfig.SizeFindings(res, hubconfig.SizesOf(files, helmValues), configMap)
	addErrorFindings(&diags, errs)
	addWarningFindings(&diags, warnings)
	return diags
}

func (r *spawnerConfigResource) client() *kube.Client { return r.data.client() }

// configMap is the ConfigMap with the rendered file and its compressed
// document.
func configMap(m *spawnerConfigModel, files hubconfig.Files) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: m.ConfigMapName.ValueString(), Namespace: m.Namespace.ValueString(),
			Labels: map[string]string{kubespawner.LabelAppManagedBy: claims.ManagedBy, kubespawner.LabelAppComponent: "spawner-config"}},
		Data:       map[string]string{hubconfig.PythonFile: files.Python},
		BinaryData: map[string][]byte{hubconfig.DocumentFile: files.Document},
	}
}

func (r *spawnerConfigResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	planApply(ctx, req.Plan, &resp.State, &resp.Diagnostics, func(m *spawnerConfigModel) { r.apply(ctx, m, &resp.Diagnostics) })
}

func (r *spawnerConfigResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	planApply(ctx, req.Plan, &resp.State, &resp.Diagnostics, func(m *spawnerConfigModel) { r.apply(ctx, m, &resp.Diagnostics) })
}

func (r *spawnerConfigResource) apply(ctx context.Context, plan *spawnerConfigModel, diags *diag.Diagnostics) {
	client := requireClient(r.data, diags)
	if client == nil {
		return
	}
	res, ok := plan.build(diags)
	if !ok {
		return
	}
	files := plan.render(res)
	if err := client.ApplyConfigMap(ctx, configMap(plan, files)); err != nil {
		diags.AddError("Cannot write the spawner ConfigMap", err.Error())
	}
}

// Read notices a ConfigMap deleted or edited outside Terraform: a deleted
// one is removed from the state (the next plan creates it), an edited one
// shows as a change back to the rendered content: hub_checksum is the
// checksum of what the ConfigMap holds (one line in the plan), and
// kubespawner_json its settings.
func (r *spawnerConfigResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	var state spawnerConfigModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	client := r.client()
	if resp.Diagnostics.HasError() || client == nil {
		return
	}
	cm, err := client.GetConfigMap(ctx, state.Namespace.ValueString(), state.ConfigMapName.ValueString())
	if err != nil {
		resp.Diagnostics.AddError("Cannot read the spawner ConfigMap", err.Error())
		return
	}
	if cm == nil {
		resp.State.RemoveResource(ctx)
		return
	}
	state.HubChecksum = types.StringValue(hubconfig.ConfigMapChecksum(cm.Data, cm.BinaryData))
	var doc struct {
		KubeSpawner map[string]any `json:"KubeSpawner"`
	}
	if err := hubconfig.DecodeConfigMapDocument(cm.BinaryData, &doc); err != nil || doc.KubeSpawner == nil {
		state.KubeSpawnerJSON = types.StringValue(fmt.Sprintf("(unreadable %s in the ConfigMap)", hubconfig.DocumentFile))
	} else {
		state.KubeSpawnerJSON = types.StringValue(hubconfig.JSON(doc.KubeSpawner))
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &state)...)
}

func (r *spawnerConfigResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	var state spawnerConfigModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	client := requireClient(r.data, &resp.Diagnostics)
	if client == nil {
		return
	}
	if err := client.DeleteConfigMap(ctx, state.Namespace.ValueString(), state.ConfigMapName.ValueString()); err != nil {
		resp.Diagnostics.AddError("Cannot delete the spawner ConfigMap", err.Error())
	}
}

// homeMountPathValidator accepts an absolute path with KubeSpawner's
// template fields.
type homeMountPathValidator struct{}

func (homeMountPathValidator) Description(context.Context) string {
	return "an absolute path; KubeSpawner template fields allowed"
}
func (v homeMountPathValidator) MarkdownDescription(ctx context.Context) string {
	return v.Description(ctx)
}
func (homeMountPathValidator) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	if f := hubconfig.CheckHomeMountPath(req.ConfigValue.ValueString()); f != nil {
		resp.Diagnostics.AddAttributeError(req.Path, f.Summary, f.Detail)
	}
}

// labelKeyValidator accepts a Kubernetes label key.
type labelKeyValidator struct{}

func (labelKeyValidator) Description(context.Context) string { return "a Kubernetes label key" }
func (v labelKeyValidator) MarkdownDescription(ctx context.Context) string {
	return v.Description(ctx)
}
func (labelKeyValidator) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	if !labelKeyRE.MatchString(req.ConfigValue.ValueString()) || len(req.ConfigValue.ValueString()) > 316 {
		resp.Diagnostics.AddAttributeError(req.Path, "Invalid label key",
			fmt.Sprintf("%q is not a Kubernetes label key; use an optional DNS prefix and a name of at most 63 characters, e.g. \"hub.jupyter.org/colocate-user\".", req.ConfigValue.ValueString()))
	}
}

var labelKeyRE = regexp.MustCompile(`^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$`)
