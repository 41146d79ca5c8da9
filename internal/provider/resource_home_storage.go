package provider

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/claims"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/execute"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/kube"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/kubespawner"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/migration"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/safety"
)

// homeStorageResource is jupyter_home_storage. This file holds its plan
// (ModifyPlan: classify, planValues; planDestroy) and its CRUD; the schema
// and model are in _schema.go, the model's view for the safety core in
// _model.go, apply in _apply.go, computed values in _values.go, migrations
// in _migrate.go.
type homeStorageResource struct{ data *providerData }

var (
	_ resource.ResourceWithConfigure      = (*homeStorageResource)(nil)
	_ resource.ResourceWithModifyPlan     = (*homeStorageResource)(nil)
	_ resource.ResourceWithImportState    = (*homeStorageResource)(nil)
	_ resource.ResourceWithValidateConfig = (*homeStorageResource)(nil)
)

// NewHomeStorageResource is the jupyter_home_storage resource.
func NewHomeStorageResource() resource.Resource { return &homeStorageResource{} }

func (r *homeStorageResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_home_storage"
}

func (r *homeStorageResource) Schema(_ context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	resp.Schema = homeStorageSchema()
}

func (r *homeStorageResource) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	r.data = configuredData(req.ProviderData, &resp.Diagnostics)
}

func (r *homeStorageResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("namespace"), req.ID)...)
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("id"), req.ID)...)
}

// ValidateConfig checks combinations that no single attribute can.
func (r *homeStorageResource) ValidateConfig(ctx context.Context, req resource.ValidateConfigRequest, resp *resource.ValidateConfigResponse) {
	var m homeStorageModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	validateDataLoss(&m, &resp.Diagnostics)
	if sh := m.SharedHome; sh != nil && !sh.ClaimName.IsUnknown() && !m.PVCNameTemplate.IsUnknown() && sh.ClaimName.ValueString() == m.PVCNameTemplate.ValueString() {
		resp.Diagnostics.AddAttributeError(path.Root("pvc_name_template"), "pvc_name_template names the shared home claim",
			"pvc_name_template is the name of a user's own claim; naming the claim that holds every home with it would make KubeSpawner treat that claim as each user's own. Keep the default claim-{username}.")
	}
	if m.SharedHome != nil && !m.UserNamespaceTemplate.IsNull() {
		resp.Diagnostics.AddAttributeError(path.Root("shared_home"), "shared_home cannot be used with user_namespace_template",
			"A claim can be mounted only by pods in its own namespace, so one shared claim cannot hold the homes of servers in per-user namespaces. Remove user_namespace_template, or use per-user claims (remove shared_home).")
	}
	if m.Layout.ValueString() == layoutShared && m.SharedHome == nil {
		resp.Diagnostics.AddAttributeError(path.Root("layout"), "layout = \"shared\" needs shared_home",
			"The shared layout keeps every home in a directory of one claim: name it in shared_home (claim_name, init_image), or set layout = \"per_user\".")
	}
	if m.OnLayoutChange.ValueString() == string(safety.OnLayoutChangeMigrate) && m.SharedHome == nil && !m.Layout.IsUnknown() {
		resp.Diagnostics.AddAttributeError(path.Root("on_layout_change"), "on_layout_change = \"migrate\" moves homes between claims of their own and the shared claim",
			"With layout = \"per_user\" it moves each listed user's directory of shared_home's claim into a claim of their own; with layout = \"shared\" it copies each listed user's claim "+
				"into their directory of shared_home's claim. Name that claim in shared_home. Other changes of the layout are kept (\"keep\") or refused (\"fail\").")
	}
	if m.OnLayoutChange.ValueString() == string(safety.OnLayoutChangeMove) && (m.SharedHome == nil || m.Layout.ValueString() == layoutPerUser) && !m.Layout.IsUnknown() {
		resp.Diagnostics.AddAttributeError(path.Root("on_layout_change"), "on_layout_change = \"move\" renames directories of the shared claim",
			"It renames each user's directory of shared_home's claim when sub_path_template or slug_scheme changes: keep shared_home and the shared layout. "+
				"To move homes out of the shared layout into claims of their own, use on_layout_change = \"migrate\" with layout = \"per_user\".")
	}
	validateCreateClaim(&m, &resp.Diagnostics)
	if m.AccessMode.ValueString() == claims.RWX && m.StorageClass == nil && m.StorageClassName.IsNull() && (m.SharedHome == nil || m.SharedHome.CreateClaim.ValueBool()) {
		resp.Diagnostics.AddAttributeError(path.Root("storage_class_name"), "ReadWriteMany needs a storage class",
			"The cluster's default class is usually a block-volume class that cannot serve ReadWriteMany. Name a class backed by a shared file system with storage_class_name, or create one with storage_class = { name = ..., provisioner = ... }.")
	}
}

// validateCreateClaim checks shared_home.create_claim and
// shared_home.capacity: one goes with the other.
func validateCreateClaim(m *homeStorageModel, diags *diag.Diagnostics) {
	sh := m.SharedHome
	if sh == nil || sh.CreateClaim.IsUnknown() || sh.Capacity.IsUnknown() {
		return
	}
	switch {
	case sh.CreateClaim.ValueBool() && sh.Capacity.IsNull():
		diags.AddAttributeError(path.Root("shared_home").AtName("capacity"), "shared_home.create_claim needs shared_home.capacity",
			"The shared claim holds every user's home: give its size, e.g. capacity = \"500Gi\". The resource's capacity is one user's home claim's, and is not used for it.")
	case !sh.CreateClaim.ValueBool() && !sh.Capacity.IsNull():
		diags.AddAttributeError(path.Root("shared_home").AtName("capacity"), "shared_home.capacity is used only with create_claim",
			"shared_home.capacity is the size of the claim shared_home.create_claim = true creates; an existing shared claim is never resized. Set create_claim = true, or remove capacity.")
	}
}

// validateDataLoss refuses settings that delete homes without
// allow_data_loss, and says when migration is set but not used.
func validateDataLoss(m *homeStorageModel, diags *diag.Diagnostics) {
	if m.DeletionPolicy.ValueString() == safety.DeletionDelete && !m.AllowDataLoss.IsUnknown() && !m.AllowDataLoss.ValueBool() {
		diags.AddAttributeError(path.Root("deletion_policy"), "deletion_policy = \"delete\" needs allow_data_loss = true",
			"Deleting home claims on destroy deletes users' home directories. Set allow_data_loss = true as well if that is intended, or keep deletion_policy = \"retain\".")
	}
	if m.Migration != nil && m.Migration.DeleteCopiedSources.ValueBool() && !m.AllowDataLoss.IsUnknown() && !m.AllowDataLoss.ValueBool() {
		diags.AddAttributeError(path.Root("migration").AtName("delete_copied_sources"), "delete_copied_sources needs allow_data_loss = true",
			"Deleting the source claims of copied homes deletes the old home directories (the verified copies stay). Set allow_data_loss = true as well if that is intended, or remove delete_copied_sources to keep them.")
	}
	if m.Migration != nil && m.Migration.Method.ValueString() == string(migration.MethodCopy) && !m.Migration.RebindDrivers.IsNull() && !m.Migration.RebindDrivers.IsUnknown() {
		diags.AddAttributeWarning(path.Root("migration").AtName("rebind_drivers"), "migration.rebind_drivers is not used",
			"migration.method = \"copy\" copies every home; migration.rebind_drivers applies only with method = \"rebind\" or \"auto\".")
	}
	if m.Migration != nil && !m.OnModeChange.IsUnknown() && m.OnModeChange.ValueString() != string(safety.OnModeChangeMigrate) && m.OnLayoutChange.ValueString() != string(safety.OnLayoutChangeMigrate) {
		diags.AddAttributeWarning(path.Root("migration"), "migration is not used",
			fmt.Sprintf("on_mode_change = %q: migration applies only with on_mode_change = \"migrate\" (or its batch_size and max_parallel with on_layout_change = \"migrate\").", m.OnModeChange.ValueString()))
	}
}

// ModifyPlan reads the live cluster and classifies the change. This is where
// a plan fails when it would strand or destroy home data; the rules are in
// internal/safety.
func (r *homeStorageResource) ModifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	if req.Plan.Raw.IsNull() {
		r.planDestroy(ctx, req, resp)
		return
	}
	var plan homeStorageModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	var state *homeStorageModel
	if !req.State.Raw.IsNull() {
		state = &homeStorageModel{}
		resp.Diagnostics.Append(req.State.Get(ctx, state)...)
	}
	if resp.Diagnostics.HasError() {
		return
	}
	// Only a destroy plan lists claims to delete (planDestroy); a replacement's
	// destroy, never classified, deletes none.
	resp.Diagnostics.Append(resp.Private.SetKey(ctx, destroyKey, nil)...)
	plan.ID = plan.Namespace
	if !plan.Capacity.IsUnknown() && !plan.AccessMode.IsUnknown() && !plan.PVCNameTemplate.IsUnknown() && !plan.SlugScheme.IsUnknown() && plan.SharedHome == nil {
		// Known from the configuration alone: it names no user, so no
		// migration changes it. With shared_home it also holds the places
		// homes had before a move (read from the shared claim: planValues).
		plan.SpawnerSettings = types.StringValue(spawnerSettings(&plan, nil))
	}
	client := r.client()
	switch {
	case client == nil:
		planWithoutCluster(&plan, r.unknownConnection(), &resp.Diagnostics)
	case !plannable(&plan):
		planWithoutCluster(&plan, unknownArguments, &resp.Diagnostics)
	default:
		res, cfg, ok := r.classify(ctx, client, &plan, state, hubSettingsOf(ctx, req.Private, &resp.Diagnostics), &resp.Diagnostics)
		if !ok {
			return
		}
		planValues(&plan, state, cfg, res)
	}
	if !resp.Diagnostics.HasError() {
		resp.Diagnostics.Append(resp.Plan.Set(ctx, &plan)...)
	}
}

// unknownArguments is why a plan cannot read the cluster when some of the
// resource's arguments are not known until apply.
const unknownArguments = "some of its arguments are not known until apply"

// unknownConnection is why a plan cannot read the cluster when the
// provider has no client: the setting not known until apply.
func (r *homeStorageResource) unknownConnection() string {
	if r.data == nil {
		return unknownArguments
	}
	return fmt.Sprintf("the provider setting %q is not known until apply", r.data.Unknown)
}

// planWithoutCluster plans when the cluster cannot be read, for reason
// (the connection or some argument is not known until apply): the values
// read from the cluster are unknown, and a plan that may delete homes fails.
func planWithoutCluster(plan *homeStorageModel, reason string, diags *diag.Diagnostics) {
	diags.AddWarning("Live home claims not checked",
		fmt.Sprintf("The plan for jupyter_home_storage could not read the cluster because %s. Whether this change is safe is decided again at apply, against the live claims, and the apply stops if it is not.", reason))
	if destroysAtApply(plan) {
		diags.AddAttributeError(path.Root("allow_data_loss"), "Deleting homes needs a plan that reads the cluster",
			fmt.Sprintf("allow_data_loss = true with on_mode_change = \"recreate\" or migration.delete_copied_sources may delete home claims, and this plan cannot read the cluster because %s, so it cannot show which. "+
				"Nothing the plan does not show is ever deleted. Make the connection known at plan time (apply the cluster first, e.g. with -target), or set allow_data_loss = false for this apply.", reason))
		return
	}
	plan.ChangeClass = types.StringUnknown()
	plan.Changes = types.StringUnknown()
	plan.Claims = types.StringUnknown()
	plan.LegacyUsers = types.StringUnknown()
	plan.ColocationRequired = types.BoolUnknown()
	plan.MigrationPlan, plan.MigrationStatus = types.StringUnknown(), types.StringUnknown()
}

// classify reads the cluster and classifies the change (internal/safety);
// its findings become diagnostics. ok is false when the plan fails.
func (r *homeStorageResource) classify(ctx context.Context, client *kube.Client, plan, state *homeStorageModel, hub string, diags *diag.Diagnostics) (safety.Result, safety.Config, bool) {
	cfg := plan.config(ctx, diags)
	prior := priorOf(ctx, state, hub, diags)
	if state != nil && plan.StorageClass != nil && state.StorageClass != nil {
		cfg.ClassReplaced = immutableClassChanges(state.StorageClass, plan.StorageClass)
	}
	live, err := r.readLive(ctx, client, plan, state, readMode{pods: cfg.OnModeChange == safety.OnModeChangeRecreate, migrations: migrates(plan, state)})
	if err != nil {
		diags.AddError("Cannot read the live home claims", err.Error())
		return safety.Result{}, cfg, false
	}
	res := safety.Plan(cfg, prior, live)
	if err := checkPodSecurity(ctx, client, &res); err != nil {
		diags.AddAttributeError(path.Root("migration"), "Cannot read the namespace's Pod Security labels", err.Error())
		return res, cfg, false
	}
	addErrorFindings(diags, res.Errors)
	addWarningFindings(diags, res.Warnings)
	return res, cfg, !diags.HasError()
}

// destroyKey is the private state of a destroy plan: the claims it showed
// being deleted (deletion_policy = "delete"), by user. Delete deletes only
// these, and only while each is still the object the plan read.
const destroyKey = "destroy"

// plannedDelete is one claim a destroy plan deletes.
type plannedDelete struct {
	User      string `json:"user"`
	Namespace string `json:"namespace"`
	Claim     string `json:"claim"`
	UID       string `json:"uid"`
}

func (r *homeStorageResource) planDestroy(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	resp.Diagnostics.Append(resp.Private.SetKey(ctx, destroyKey, nil)...)
	var state homeStorageModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	client := r.client()
	if resp.Diagnostics.HasError() {
		return
	}
	cfg := state.config(ctx, &resp.Diagnostics)
	deletes := cfg.DeletionPolicy == safety.DeletionDelete && cfg.AllowDataLoss
	if client == nil {
		if deletes {
			resp.Diagnostics.AddWarning("Home claims are kept: the plan cannot read the cluster",
				"deletion_policy = \"delete\", but this destroy plan cannot read the cluster (the provider's connection is not known until apply), so it cannot show which claims would be deleted. "+
					"Nothing the plan does not show is deleted: destroy keeps every claim. Plan the destroy again with a known connection to delete them.")
		}
		return
	}
	live, err := r.readLive(ctx, client, &state, nil, readMode{pods: cfg.DeletionPolicy == safety.DeletionDelete})
	if err != nil {
		resp.Diagnostics.AddError("Cannot read the live home claims", err.Error())
		return
	}
	res := safety.Destroy(cfg, *state.prior(ctx, &resp.Diagnostics), live)
	addErrorFindings(&resp.Diagnostics, res.Errors)
	addWarningFindings(&resp.Diagnostics, res.Warnings)
	var del []plannedDelete
	for _, up := range res.Users {
		if up.Action == safety.ActionRecreate {
			del = append(del, plannedDelete{User: up.User, Namespace: up.Namespace, Claim: up.ClaimName, UID: up.Live.UID})
		}
	}
	if deletes && !resp.Diagnostics.HasError() {
		if del == nil {
			del = []plannedDelete{} // classified: nothing to delete
		}
		b, _ := json.Marshal(del)
		resp.Diagnostics.Append(resp.Private.SetKey(ctx, destroyKey, b)...)
	}
}

func (r *homeStorageResource) client() *kube.Client { return r.data.client() }

// addErrorFindings and addWarningFindings are the one adapter from the
// decision cores' findings to Terraform's diagnostics, at the attribute
// each names: as errors, and as warnings.
func addErrorFindings(diags *diag.Diagnostics, fs []claims.Finding) {
	for _, f := range fs {
		diags.AddAttributeError(findingPath(f.Attribute), f.Summary, f.Detail)
	}
}

func addWarningFindings(diags *diag.Diagnostics, fs []claims.Finding) {
	for _, f := range fs {
		diags.AddAttributeWarning(findingPath(f.Attribute), f.Summary, f.Detail)
	}
}

func (r *homeStorageResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	var plan homeStorageModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if !r.apply(ctx, &plan, nil, "", &resp.Diagnostics) {
		return // nothing was created: no state
	}
	if resp.Diagnostics.HasError() {
		// A create that failed part-way leaves a tainted resource, which the
		// next apply replaces: destroy, then create. That destroy must not
		// delete homes (some may have been adopted, not created), so the
		// tainted state always retains its claims.
		plan.DeletionPolicy = types.StringValue(safety.DeletionRetain)
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
	recordHubSettings(ctx, resp.Private, &plan, "", &resp.Diagnostics)
}

func (r *homeStorageResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	var plan, state homeStorageModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	hub := hubSettingsOf(ctx, req.Private, &resp.Diagnostics)
	if !r.apply(ctx, &plan, &state, hub, &resp.Diagnostics) {
		plan = state // no claim was touched: the state stays as it was
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
	recordHubSettings(ctx, resp.Private, &plan, hub, &resp.Diagnostics)
}

// hubKey is the private state that says which settings of a move out of
// the shared layout (moveSignature) the hub was given: those of an apply
// that finished without an error, after which Terraform applied what
// passes spawner_settings to the hub (a failed apply stops it). A move by
// copy starts only under such a hub (safety.Prior.HubSwitched).
const hubKey = "hub_settings"

// hubRules names the records the hub's file (internal/hubconfig/hub_config.py)
// follows during a move between layouts. A hub given its settings by an
// apply whose signature lacks them runs a file that may not refuse a claim
// being copied (one from before merges mounts a claim during its merge):
// change it whenever the hub's file learns a record a copy relies on.
const hubRules = "split,split-copied,merge,merged"

// moveSignature is what identifies the hub's settings of a move between
// layouts for a copy (out of the shared layout, or a merge into it): the
// rules of the hub's file (hubRules), the namespace, the shared claim and
// directory template, the claim template and the scheme; "" outside a move.
func moveSignature(cfg safety.Config) string {
	fb := safety.Fallback(cfg)
	if fb == nil {
		return ""
	}
	b, _ := json.Marshal([]string{hubRules, cfg.Namespace, fb.Claim, fb.SubPathTemplate, cfg.NameTemplate, string(cfg.Scheme)})
	return string(b)
}

// privateState is what the framework's private state offers to read.
type privateState interface {
	GetKey(ctx context.Context, key string) ([]byte, diag.Diagnostics)
}

// hubSettingsOf is the hubKey recorded; "" when none.
func hubSettingsOf(ctx context.Context, p privateState, diags *diag.Diagnostics) string {
	if p == nil {
		return ""
	}
	b, d := p.GetKey(ctx, hubKey)
	diags.Append(d...)
	return string(b)
}

// privateWriter is what the framework's private state offers to write.
type privateWriter interface {
	SetKey(ctx context.Context, key string, value []byte) diag.Diagnostics
}

// recordHubSettings records the hub's settings after an apply of plan: this
// apply's when it finished without an error, else the earlier record while
// the settings are the same (an error in a later apply, such as a copy
// that failed, does not unsay that the hub has them).
func recordHubSettings(ctx context.Context, p privateWriter, plan *homeStorageModel, was string, diags *diag.Diagnostics) {
	sig := moveSignature(plan.config(ctx, diags))
	var v []byte
	if sig != "" && (!diags.HasError() || was == sig) {
		v = []byte(sig)
	}
	diags.Append(p.SetKey(ctx, hubKey, v)...)
}

func (r *homeStorageResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	var state homeStorageModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	client := r.client()
	if resp.Diagnostics.HasError() || client == nil {
		return
	}
	imported := state.Capacity.IsNull()
	if imported {
		r.fillImported(ctx, client, &state, &resp.Diagnostics)
	}
	cfg := state.config(ctx, &resp.Diagnostics)
	live, err := r.readLive(ctx, client, &state, nil, readMode{})
	if err != nil {
		resp.Diagnostics.AddError("Cannot read the live home claims", err.Error())
		return
	}
	res := safety.Plan(cfg, nil, live)
	state.Claims = finalClaimsValue(&res, cfg)
	for _, v := range []*types.String{&state.MigrationPlan, &state.MigrationStatus, &state.Changes} {
		if v.IsNull() || v.IsUnknown() {
			*v = types.StringValue("{}") // imported, or written before these attributes existed
		}
	}
	if state.StorageClass != nil && live.Class != nil && !live.Class.Exists {
		// The class this resource created was deleted outside Terraform: the
		// next plan shows the block being added, and apply creates it again.
		state.StorageClass = nil
	}
	if imported {
		state.LegacyUsers = legacyValue(res)
		state.ColocationRequired = types.BoolValue(res.ColocationRequired)
		state.ChangeClass = types.StringValue(string(safety.ClassNone))
		state.SpawnerSettings = types.StringValue(spawnerSettings(&state, res.MovedFrom))
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &state)...)
}

// fillImported sets defaults for an imported deployment: the settings most
// of its claims have, so that the first plan shows what the configuration changes.
func (r *homeStorageResource) fillImported(ctx context.Context, client *kube.Client, m *homeStorageModel, diags *diag.Diagnostics) {
	m.ID = m.Namespace
	m.AccessMode = types.StringValue(claims.RWO)
	m.PVCNameTemplate = types.StringValue("claim-{username}")
	m.SlugScheme = types.StringValue(string(kubespawner.SchemeSafe))
	m.OnModeChange = types.StringValue(string(safety.OnModeChangeFail))
	m.AllowDataLoss = types.BoolValue(false)
	m.DeletionPolicy = types.StringValue(safety.DeletionRetain)
	m.Users = types.StringNull()
	m.Labels, m.Annotations = types.MapNull(types.StringType), types.MapNull(types.StringType)
	m.Capacity = types.StringValue("10Gi")
	live, err := client.ListClaimsFresh(ctx, m.Namespace.ValueString(), DefaultClaimSelector)
	if err != nil {
		diags.AddError("Cannot read the live home claims", err.Error())
		return
	}
	modes, sizes, classes := map[string]int{}, map[string]int{}, map[string]int{}
	for _, c := range live {
		modes[strings.Join(c.AccessModes, ",")]++
		sizes[c.Requested]++
		classes[c.StorageClass]++
	}
	if v := mostCommon(modes, cmp.Less[string]); v != "" && slices.Contains([]string{claims.RWO, claims.RWX, claims.RWOP}, v) {
		m.AccessMode = types.StringValue(v)
	}
	if v := mostCommon(sizes, cmp.Less[string]); v != "" {
		m.Capacity = types.StringValue(v)
	}
	if v := mostCommon(classes, cmp.Less[string]); v != "" {
		m.StorageClassName = types.StringValue(v)
	}
}

// Delete forgets the deployment and leaves every claim in place, unless
// deletion_policy = "delete" and allow_data_loss = true, and then deletes
// only the claims the destroy plan showed (its private state), each
// through the gate: still the object the plan read, no pod mounting it.
// A replacement's destroy was never planned as one: it deletes nothing.
func (r *homeStorageResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	var state homeStorageModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	cfg := state.config(ctx, &resp.Diagnostics)
	if cfg.DeletionPolicy != safety.DeletionDelete || !cfg.AllowDataLoss {
		return
	}
	raw, diags := req.Private.GetKey(ctx, destroyKey)
	resp.Diagnostics.Append(diags...)
	var del []plannedDelete
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &del); err != nil {
			resp.Diagnostics.AddError("Cannot read the destroy plan's claims", err.Error())
			return
		}
	}
	if raw == nil {
		resp.Diagnostics.AddWarning("Home claims are kept",
			"deletion_policy = \"delete\", but no destroy plan listed claims to delete (this destroy replaces the resource, or its plan could not read the cluster). "+
				"A replacement never deletes homes; every claim stays, and the new resource finds them. To delete them, destroy the resource with `tofu destroy` (or by removing it from the configuration).")
		return
	}
	client := requireClient(r.data, &resp.Diagnostics)
	if client == nil {
		return
	}
	failed := kube.ForEach(ctx, del, func(ctx context.Context, d plannedDelete) error {
		return execute.Delete(ctx, client, safety.Step{Why: "destroy", User: d.User, Namespace: d.Namespace, Claim: d.Claim, UID: d.UID})
	})
	for i, err := range failed {
		resp.Diagnostics.AddError("A home claim was not deleted", fmt.Sprintf("%s (%s): %v", del[i].User, del[i].Claim, err))
	}
	if len(failed) == 0 && raw != nil && state.StorageClass != nil {
		if err := client.DeleteStorageClass(ctx, state.StorageClass.Name.ValueString()); err != nil {
			resp.Diagnostics.AddError("Cannot delete the StorageClass", err.Error())
		}
	}
}
