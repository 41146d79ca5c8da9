package provider

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	kresource "k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/claims"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/execute"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/kube"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/kubespawner"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/safety"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/spawner"
)

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
	if m.DeletionPolicy.ValueString() == safety.DeletionDelete && !m.AllowDataLoss.IsUnknown() && !m.AllowDataLoss.ValueBool() {
		resp.Diagnostics.AddAttributeError(path.Root("deletion_policy"), "deletion_policy = \"delete\" needs allow_data_loss = true",
			"Deleting home claims on destroy deletes users' home directories. Set allow_data_loss = true as well if that is intended, or keep deletion_policy = \"retain\".")
	}
	if sc := m.StorageClass; sc != nil {
		if sc.Name.IsNull() || sc.Provisioner.IsNull() {
			resp.Diagnostics.AddAttributeError(path.Root("storage_class"), "storage_class needs name and provisioner",
				"Set storage_class.name and storage_class.provisioner, or remove the block and use storage_class_name for an existing class.")
		}
	}
	if m.Migration != nil && m.Migration.DeleteCopiedSources.ValueBool() && !m.AllowDataLoss.IsUnknown() && !m.AllowDataLoss.ValueBool() {
		resp.Diagnostics.AddAttributeError(path.Root("migration").AtName("delete_copied_sources"), "delete_copied_sources needs allow_data_loss = true",
			"Deleting the source claims of copied homes deletes the old home directories (the verified copies stay). Set allow_data_loss = true as well if that is intended, or remove delete_copied_sources to keep them.")
	}
	if m.Migration != nil && !m.OnModeChange.IsUnknown() && m.OnModeChange.ValueString() != string(safety.OnModeChangeMigrate) {
		resp.Diagnostics.AddAttributeWarning(path.Root("migration"), "The migration block is not used",
			fmt.Sprintf("on_mode_change = %q: the migration block applies only with on_mode_change = \"migrate\".", m.OnModeChange.ValueString()))
	}
	if m.AccessMode.ValueString() == safety.RWX && m.StorageClass == nil && m.StorageClassName.IsNull() {
		resp.Diagnostics.AddAttributeError(path.Root("storage_class_name"), "ReadWriteMany needs a storage class",
			"The cluster's default class is usually a block-volume class that cannot serve ReadWriteMany. Name a class backed by a shared file system with storage_class_name, or create one with a storage_class block.")
	}
}

// config turns the model into the safety core's view of it.
func (m *homeStorageModel) config(ctx context.Context, diags *diag.Diagnostics) safety.Config {
	cfg := safety.Config{
		Namespace:      m.Namespace.ValueString(),
		AccessMode:     m.AccessMode.ValueString(),
		StorageClass:   m.className(),
		Capacity:       m.Capacity.ValueString(),
		NameTemplate:   m.PVCNameTemplate.ValueString(),
		Scheme:         kubespawner.Scheme(m.SlugScheme.ValueString()),
		OnModeChange:   safety.OnModeChange(m.OnModeChange.ValueString()),
		AllowDataLoss:  m.AllowDataLoss.ValueBool(),
		DeletionPolicy: m.DeletionPolicy.ValueString(),
		Migration:      m.migrationConfig(),
		// The template KubeSpawner uses: "" when user namespaces are off.
		UserNamespaceTemplate: m.UserNamespaceTemplate.ValueString(),
	}
	if !m.ExtraUserVolumes.IsNull() && !m.ExtraUserVolumes.IsUnknown() {
		diags.Append(m.ExtraUserVolumes.ElementsAs(ctx, &cfg.ExtraVolumes, false)...)
	}
	if q, err := kresource.ParseQuantity(cfg.Capacity); err == nil {
		cfg.CapacityBytes = q.Value()
	}
	if !m.Users.IsNull() && !m.Users.IsUnknown() {
		diags.Append(m.Users.ElementsAs(ctx, &cfg.Users, false)...)
	}
	return cfg
}

func (m *homeStorageModel) userNamespaces() bool {
	return m.UserNamespaceTemplate.ValueString() != ""
}

func (m *homeStorageModel) className() string {
	if m.StorageClass != nil {
		return m.StorageClass.Name.ValueString()
	}
	return m.StorageClassName.ValueString()
}

// prior is what the state says was applied.
func (m *homeStorageModel) prior(ctx context.Context, diags *diag.Diagnostics) *safety.Prior {
	cfg := m.config(ctx, diags)
	p := &safety.Prior{Config: cfg, Managed: map[string]string{}, ClassManaged: m.StorageClass != nil}
	for _, u := range cfg.Users {
		name, err := kubespawner.Expand(cfg.NameTemplate, u, "", cfg.Scheme)
		if err == nil {
			p.Managed[u] = name
		}
	}
	return p
}

// readMode says what a read of the live cluster includes besides the
// claims and the storage class.
type readMode struct {
	pods       bool // the pods that mount claims (a claim may be deleted)
	fresh      bool // a new List, not the process's snapshot (apply reads afresh)
	migrations bool // migrations in progress and, when some claim differs, the volumes
}

// readLive lists the claims (one paginated List), the storage class and
// what mode asks for. state is what the last apply recorded (nil when
// none): when it looked for homes elsewhere, claims are read there too (the
// old namespace; cluster-wide when user namespaces are or were on), so that
// the homes the new settings no longer find are seen (safety: homes left
// behind).
func (r *homeStorageResource) readLive(ctx context.Context, client *kube.Client, m, state *homeStorageModel, mode readMode) (safety.Live, error) {
	var live safety.Live
	list := client.ListClaims
	if mode.fresh {
		list = client.ListClaimsFresh
	}
	selector := DefaultClaimSelector
	if len(m.ExtraUserVolumes.Elements()) > 0 {
		selector = "" // other per-user claims need not carry KubeSpawner's labels
	}
	// Under per-user namespaces, one cluster-wide List (the safety core
	// keeps the claims in their users' namespaces).
	namespace := m.Namespace.ValueString()
	var also string // the namespace the last apply used, when it was another
	switch {
	case m.userNamespaces() || state != nil && (state.userNamespaces() || !state.UserNamespaceTemplate.Equal(m.UserNamespaceTemplate)):
		namespace = ""
	case state != nil && !state.Namespace.Equal(m.Namespace):
		also = state.Namespace.ValueString()
	}
	pvcs, err := list(ctx, namespace, selector)
	if err != nil {
		return live, err
	}
	if also != "" {
		more, err := list(ctx, also, selector)
		if err != nil {
			return live, err
		}
		pvcs = append(slices.Clip(pvcs), more...)
	}
	live.Claims = make([]claims.Claim, len(pvcs))
	for i := range pvcs {
		live.Claims[i] = kube.ClaimFromPVC(&pvcs[i])
	}
	sc, err := client.GetStorageClass(ctx, m.className())
	if err != nil {
		return live, err
	}
	switch {
	case m.StorageClass != nil:
		live.Class = &safety.StorageClass{Name: m.className(), Provisioner: m.StorageClass.Provisioner.ValueString(),
			AllowExpansion: m.StorageClass.AllowVolumeExpansion.IsNull() || m.StorageClass.AllowVolumeExpansion.ValueBool(),
			Exists:         sc != nil, Created: true}
	case sc != nil:
		live.Class = &safety.StorageClass{Name: sc.Name, Provisioner: sc.Provisioner,
			AllowExpansion: sc.AllowVolumeExpansion != nil && *sc.AllowVolumeExpansion, Exists: true}
	case m.className() != "":
		live.Class = &safety.StorageClass{Name: m.className()}
	}
	needPods := mode.pods
	if mode.migrations {
		// Whether a server runs matters only for a claim a migration may
		// touch: one that differs, or the source of a finished copy.
		var diags diag.Diagnostics
		cfg := m.config(ctx, &diags)
		differs, err := readMigrations(ctx, client, cfg, &live)
		if err != nil {
			return live, err
		}
		needPods = needPods || differs || cfg.Migration.DeleteSources
	}
	if needPods {
		if live.Mounted, err = client.MountedClaims(ctx, namespace); err != nil {
			return live, err
		}
	}
	return live, nil
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
	if !plan.Capacity.IsUnknown() && !plan.AccessMode.IsUnknown() && !plan.PVCNameTemplate.IsUnknown() && !plan.SlugScheme.IsUnknown() && !migrates(&plan, state) {
		// Known from the configuration alone, unless migrations may switch
		// copied users to new claims (then it is set below from the cluster).
		plan.SpawnerSettings = types.StringValue(spawnerSettings(&plan, nil))
	}
	client := r.client()
	if client == nil || !plannable(&plan) {
		r.planWithoutCluster(&plan, client == nil, &resp.Diagnostics)
	} else {
		res, cfg, ok := r.classify(ctx, client, &plan, state, &resp.Diagnostics)
		if !ok {
			return
		}
		planValues(&plan, state, cfg, res)
	}
	if !resp.Diagnostics.HasError() {
		resp.Diagnostics.Append(resp.Plan.Set(ctx, &plan)...)
	}
}

// planWithoutCluster plans when the cluster cannot be read (the connection
// or some argument is not known until apply): the values read from the
// cluster are unknown, and a plan that may delete homes fails.
func (r *homeStorageResource) planWithoutCluster(plan *homeStorageModel, noClient bool, diags *diag.Diagnostics) {
	reason := "some of its arguments are not known until apply"
	if noClient && r.data != nil {
		reason = fmt.Sprintf("the provider setting %q is not known until apply", r.data.Unknown)
	}
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
	plan.LegacyUsers = types.ListUnknown(types.StringType)
	plan.ColocationRequired = types.BoolUnknown()
	plan.MigrationPlan, plan.MigrationStatus = types.StringUnknown(), types.StringUnknown()
}

// classify reads the cluster and classifies the change (internal/safety);
// its findings become diagnostics. ok is false when the plan fails.
func (r *homeStorageResource) classify(ctx context.Context, client *kube.Client, plan, state *homeStorageModel, diags *diag.Diagnostics) (safety.Result, safety.Config, bool) {
	cfg := plan.config(ctx, diags)
	var prior *safety.Prior
	if state != nil {
		prior = state.prior(ctx, diags)
		if plan.StorageClass != nil && state.StorageClass != nil {
			cfg.ClassReplaced = immutableClassChanges(state.StorageClass, plan.StorageClass)
		}
	}
	live, err := r.readLive(ctx, client, plan, state, readMode{pods: cfg.OnModeChange == safety.OnModeChangeRecreate, migrations: migrates(plan, state)})
	if err != nil {
		diags.AddError("Cannot read the live home claims", err.Error())
		return safety.Result{}, cfg, false
	}
	res := safety.Plan(cfg, prior, live)
	addFindings(diags, res.Errors, true)
	addFindings(diags, res.Warnings, false)
	return res, cfg, !diags.HasError()
}

// planValues are the planned values of a classified change. A change that
// does nothing keeps what the last apply or refresh recorded, so that the
// plan is empty; values that migrations decide are known after apply.
func planValues(plan, state *homeStorageModel, cfg safety.Config, res safety.Result) {
	plan.ChangeClass = types.StringValue(string(res.Class))
	plan.Changes = types.StringValue(safety.ChangesOf(res).Encode())
	plan.LegacyUsers = stringList(res.LegacyUsers)
	plan.ColocationRequired = types.BoolValue(res.ColocationRequired)
	var nMigrations, nCopies int
	plan.MigrationPlan, nMigrations, nCopies = migrationPlanValue(res, cfg)
	plan.SpawnerSettings = types.StringValue(spawnerSettings(plan, res.HomeClaims))
	if nCopies > 0 {
		// Copied users are switched to their new claim once their copy is verified.
		plan.SpawnerSettings = types.StringUnknown()
	}
	plan.MigrationStatus = types.StringValue("{}")
	if state != nil && !state.MigrationStatus.IsNull() {
		plan.MigrationStatus = state.MigrationStatus
	}
	if state != nil && res.Class == safety.ClassNone && sameArguments(plan, state) {
		// Observations such as a claim's phase are refreshed by Read.
		plan.ChangeClass = state.ChangeClass
		plan.Changes = state.Changes
		plan.Claims = state.Claims
		plan.MigrationPlan = state.MigrationPlan
	} else {
		plan.Claims = claimsValue(res.Users, cfg, false)
	}
	if nMigrations > 0 {
		// Who ends up legacy, and the claims' new identities, are known once
		// the migrations ran (a user may start a server meanwhile).
		plan.LegacyUsers = types.ListUnknown(types.StringType)
		plan.ColocationRequired = types.BoolUnknown()
		plan.Claims = types.StringUnknown()
		plan.MigrationStatus = types.StringUnknown()
	}
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
	addFindings(&resp.Diagnostics, res.Errors, true)
	addFindings(&resp.Diagnostics, res.Warnings, false)
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

// destroysAtApply reports whether the configuration may delete home claims
// in an apply (not counting destroy): allow_data_loss with on_mode_change =
// "recreate" or migration.delete_copied_sources, any of them possibly unknown.
func destroysAtApply(m *homeStorageModel) bool {
	if !m.AllowDataLoss.IsUnknown() && !m.AllowDataLoss.ValueBool() {
		return false
	}
	if m.OnModeChange.IsUnknown() || m.OnModeChange.ValueString() == string(safety.OnModeChangeRecreate) {
		return true
	}
	mm := m.Migration
	return mm != nil && (mm.DeleteCopiedSources.IsUnknown() || mm.DeleteCopiedSources.ValueBool())
}

// plannable reports whether every argument the classification needs is known.
func plannable(m *homeStorageModel) bool {
	for _, v := range []attr.Value{m.Namespace, m.AccessMode, m.StorageClassName, m.Capacity, m.PVCNameTemplate, m.SlugScheme,
		m.Users, m.OnModeChange, m.AllowDataLoss, m.DeletionPolicy, m.ExtraUserVolumes, m.UserNamespaceTemplate} {
		if v.IsUnknown() {
			return false
		}
	}
	if sc := m.StorageClass; sc != nil && (sc.Name.IsUnknown() || sc.Provisioner.IsUnknown() || sc.AllowVolumeExpansion.IsUnknown()) {
		return false
	}
	if mm := m.Migration; mm != nil {
		for _, v := range []attr.Value{mm.Method, mm.CopyImage, mm.TargetNameTemplate, mm.DeleteCopiedSources, mm.BatchSize, mm.MaxParallel, mm.SkipRunning} {
			if v.IsUnknown() {
				return false
			}
		}
	}
	return true
}

// sameArguments reports whether plan and state agree on every argument.
func sameArguments(a, b *homeStorageModel) bool {
	av := []attr.Value{a.Namespace, a.AccessMode, a.StorageClassName, a.Capacity, a.PVCNameTemplate, a.SlugScheme,
		a.Users, a.Labels, a.Annotations, a.OnModeChange, a.AllowDataLoss, a.DeletionPolicy, a.ExtraUserVolumes, a.UserNamespaceTemplate}
	bv := []attr.Value{b.Namespace, b.AccessMode, b.StorageClassName, b.Capacity, b.PVCNameTemplate, b.SlugScheme,
		b.Users, b.Labels, b.Annotations, b.OnModeChange, b.AllowDataLoss, b.DeletionPolicy, b.ExtraUserVolumes, b.UserNamespaceTemplate}
	for i := range av {
		if !av[i].Equal(bv[i]) {
			return false
		}
	}
	if a.migrationConfig() != b.migrationConfig() || a.maxParallel() != b.maxParallel() {
		return false
	}
	if (a.StorageClass == nil) != (b.StorageClass == nil) {
		return false
	}
	return a.StorageClass == nil || len(immutableClassChanges(a.StorageClass, b.StorageClass)) == 0 &&
		a.StorageClass.AllowVolumeExpansion.Equal(b.StorageClass.AllowVolumeExpansion) && a.StorageClass.MountOptions.Equal(b.StorageClass.MountOptions)
}

// addFindings is the one adapter from the decision cores' findings to
// Terraform's diagnostics, at the attribute each names.
func addFindings(diags *diag.Diagnostics, fs []safety.Finding, isError bool) {
	for _, f := range fs {
		if isError {
			diags.AddAttributeError(findingPath(f.Attribute), f.Summary, f.Detail)
		} else {
			diags.AddAttributeWarning(findingPath(f.Attribute), f.Summary, f.Detail)
		}
	}
}

// claimView is what `claims` says about one user's claim besides its name.
type claimView struct {
	AccessMode       string `json:"access_mode"`
	StorageClassName string `json:"storage_class_name"`
	Capacity         string `json:"capacity"`
	Phase            string `json:"phase"`
	Managed          bool   `json:"managed"`
}

// claimsDoc is the `claims` attribute: the most common claim as "default",
// and for every user the claim's name and the fields in which it differs
// from the default.
type claimsDoc struct {
	Default *claimView                `json:"default"`
	Users   map[string]map[string]any `json:"users"`
}

// claimsValue is the `claims` attribute: every user's claim, as its name and
// the fields that differ from the most common claim ("default"). A claim
// that apply creates has an empty phase (and, on the cluster's default
// class, an empty class) until the next refresh observes it.
//
// final is set after apply: only claims that exist are listed.
//
// It is one string rather than a map of objects on purpose: the framework
// walks every value node of a resource several times per plan, at a cost
// that grows with the square of their number, and thousands of users would
// make every plan take minutes (BENCHMARKS.md). It is compact because
// OpenTofu and the provider decode, copy and compare it several times per
// plan: at 5,000 users every field of every claim made 650 KB, names and
// differences from the default make 225 KB.
func claimsValue(ups []safety.UserPlan, cfg safety.Config, final bool) types.String {
	type entry struct {
		name string
		view claimView
	}
	entries := make(map[string]entry, len(ups))
	counts := map[claimView]int{}
	capacity := canonicalQuantity(cfg.Capacity)
	for _, up := range ups {
		if up.Live == nil && (final || up.Action != safety.ActionCreate) {
			continue
		}
		e := entry{name: up.ClaimName, view: claimView{Managed: up.Managed}}
		v := &e.view
		switch up.Action {
		case safety.ActionCreate, safety.ActionRecreate:
			v.AccessMode, v.StorageClassName, v.Capacity = cfg.AccessMode, cfg.StorageClass, capacity
		default:
			c := up.Live
			if (up.Action == safety.ActionCopied || up.Action == safety.ActionDeleteSource) && up.TargetLive != nil {
				c = up.TargetLive // the user's home now; the source is kept aside
			}
			e.name, v.AccessMode, v.StorageClassName, v.Capacity, v.Phase = c.Name, strings.Join(c.AccessModes, ","), c.StorageClass, c.Requested, c.Phase
			if up.Action == safety.ActionResize {
				v.Capacity = capacity
			}
		}
		entries[up.User] = e
		counts[e.view]++
	}
	doc := claimsDoc{Users: make(map[string]map[string]any, len(entries))}
	if len(entries) > 0 {
		// The most common claim; among equally common ones the first by its
		// fields, so that the value is stable.
		var def claimView
		n := 0
		for v, c := range counts {
			if c > n || c == n && claimViewLess(v, def) {
				def, n = v, c
			}
		}
		doc.Default = &def
	}
	for u, e := range entries {
		d := claimDelta(e.view, *doc.Default)
		d["name"] = e.name
		doc.Users[u] = d
	}
	b, _ := json.Marshal(doc) // map keys are sorted: the value is stable
	return types.StringValue(string(b))
}

// claimDelta is the fields of v that differ from def.
func claimDelta(v, def claimView) map[string]any {
	d := map[string]any{}
	if v.AccessMode != def.AccessMode {
		d["access_mode"] = v.AccessMode
	}
	if v.StorageClassName != def.StorageClassName {
		d["storage_class_name"] = v.StorageClassName
	}
	if v.Capacity != def.Capacity {
		d["capacity"] = v.Capacity
	}
	if v.Phase != def.Phase {
		d["phase"] = v.Phase
	}
	if v.Managed != def.Managed {
		d["managed"] = v.Managed
	}
	return d
}

func claimViewLess(a, b claimView) bool {
	if a.AccessMode != b.AccessMode {
		return a.AccessMode < b.AccessMode
	}
	if a.StorageClassName != b.StorageClassName {
		return a.StorageClassName < b.StorageClassName
	}
	if a.Capacity != b.Capacity {
		return a.Capacity < b.Capacity
	}
	if a.Phase != b.Phase {
		return a.Phase < b.Phase
	}
	return !a.Managed && b.Managed
}

// canonicalQuantity writes a quantity the way the API returns it ("10240Mi" is "10Gi").
func canonicalQuantity(s string) string {
	q, err := kresource.ParseQuantity(s)
	if err != nil {
		return s
	}
	return q.String()
}

func stringList(v []string) types.List {
	elems := make([]attr.Value, len(v))
	for i, s := range v {
		elems[i] = types.StringValue(s)
	}
	return types.ListValueMust(types.StringType, elems)
}

// spawnerSettings is the spawner_settings attribute: KubeSpawner's settings
// for this storage, and the users whose home was copied to a new claim.
func spawnerSettings(m *homeStorageModel, homeClaims map[string]string) string {
	h := kubespawner.HomeStorage{
		AccessMode: m.AccessMode.ValueString(), StorageClass: m.className(), Capacity: m.Capacity.ValueString(),
		NameTemplate: m.PVCNameTemplate.ValueString(), Scheme: kubespawner.Scheme(m.SlugScheme.ValueString()),
		UserNamespaceTemplate: m.UserNamespaceTemplate.ValueString(),
	}
	s := h.Settings()
	if len(homeClaims) > 0 {
		s[spawner.HomeClaimsKey] = homeClaims
	}
	b, _ := json.Marshal(s)
	return string(b)
}

func immutableClassChanges(was, now *scModel) []string {
	var out []string
	if !was.Provisioner.Equal(now.Provisioner) {
		out = append(out, "provisioner")
	}
	if !mapsEqual(was.Parameters, now.Parameters) {
		out = append(out, "parameters")
	}
	if reclaim(was) != reclaim(now) {
		out = append(out, "reclaim_policy")
	}
	if binding(was) != binding(now) {
		out = append(out, "volume_binding_mode")
	}
	if !was.Name.Equal(now.Name) {
		out = append(out, "name")
	}
	return out
}

func mapsEqual(a, b types.Map) bool {
	if len(a.Elements()) == 0 && len(b.Elements()) == 0 {
		return true
	}
	return a.Equal(b)
}

func reclaim(sc *scModel) string {
	if sc.ReclaimPolicy.IsNull() {
		return "Retain"
	}
	return sc.ReclaimPolicy.ValueString()
}

func binding(sc *scModel) string {
	if sc.VolumeBindingMode.IsNull() {
		return "Immediate"
	}
	return sc.VolumeBindingMode.ValueString()
}

func (r *homeStorageResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	var plan homeStorageModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if !r.apply(ctx, &plan, nil, &resp.Diagnostics) {
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
}

func (r *homeStorageResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	var plan, state homeStorageModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if !r.apply(ctx, &plan, &state, &resp.Diagnostics) {
		plan = state // no claim was touched: the state stays as it was
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
}

// apply makes the cluster match the plan: the StorageClass first, then the
// claims the plan showed, then the migrations it showed; then it records
// what came of them. On partial failure the state records what exists, the
// failed users are named, and a re-apply converges. It returns false when it
// stopped before changing any claim; plan is then not a state to record.
func (r *homeStorageResource) apply(ctx context.Context, plan, state *homeStorageModel, diags *diag.Diagnostics) bool {
	client := requireClient(r.data, diags)
	if client == nil {
		return false
	}
	plan.ID = plan.Namespace
	if plan.StorageClass != nil {
		if err := r.ensureClass(ctx, client, plan, state); err != nil {
			diags.AddAttributeError(path.Root("storage_class"), "Cannot create the StorageClass", err.Error())
			return false
		}
	}
	cfg := plan.config(ctx, diags)
	var prior *safety.Prior
	if state != nil {
		prior = state.prior(ctx, diags)
	}
	live, err := r.readLive(ctx, client, plan, state, readMode{pods: cfg.OnModeChange == safety.OnModeChangeRecreate, fresh: true, migrations: migrates(plan, state)})
	if err != nil {
		diags.AddError("Cannot read the live home claims", err.Error())
		return false
	}
	res := safety.Plan(cfg, prior, live)
	if len(res.Errors) > 0 {
		addFindings(diags, res.Errors, true)
		return false
	}
	planned, known, ok := plannedChanges(plan, diags)
	if !ok {
		return false
	}
	// Apply does what the plan showed, to the objects the plan read: the
	// changes read now are compared with the plan's, and a user whose claim
	// changed since is left alone (OpenTofu's check of the plan made again
	// at apply catches most of these before this point).
	sel := execute.Select(res, planned, known)
	reportReconcile(diags, sel.Refused, sel.Moot)
	labels, annotations := stringMap(ctx, plan.Labels, diags), stringMap(ctx, plan.Annotations, diags)
	out := runHomes(ctx, client, cfg, sel, labels, annotations, diags)
	var migrations []migrationItem
	for _, it := range migrationItems(res, toMigrate) {
		if sel.Migrate[it.key] {
			it.uid = sel.Planned[it.key].UID
			migrations = append(migrations, it)
		}
	}
	migrated := len(migrations) > 0 && !out.unreachable
	if migrated {
		plan.MigrationStatus = runMigrations(ctx, client, plan, migrations, cfg, labels, diags)
	}
	if plan.MigrationStatus.IsUnknown() {
		plan.MigrationStatus = types.StringValue("{}")
		if state != nil && !state.MigrationStatus.IsNull() && !state.MigrationStatus.IsUnknown() {
			plan.MigrationStatus = state.MigrationStatus
		}
	}
	if len(out.failedUsers) > 0 {
		var kept []string
		for _, u := range cfg.Users {
			if !out.failedUsers[u] {
				kept = append(kept, u)
			}
		}
		plan.Users = stringList(kept)
		cfg.Users = kept
	}
	live = r.liveAfterApply(ctx, client, plan, state, live, cfg, out, migrated, diags)
	recordApply(plan, cfg, res, live, len(migrations) > 0, len(out.failedUsers) > 0)
	return true
}

// plannedChanges reads the changes the plan showed; known is false when the
// plan could not know them.
func plannedChanges(plan *homeStorageModel, diags *diag.Diagnostics) (safety.Changes, bool, bool) {
	if plan.Changes.IsUnknown() || plan.Changes.IsNull() {
		return safety.Changes{}, false, true
	}
	planned, err := safety.DecodeChanges(plan.Changes.ValueString())
	if err != nil {
		diags.AddAttributeError(path.Root("changes"), "Cannot read the planned changes", err.Error())
		return nil, false, false
	}
	return planned, true, true
}

// homesOutcome is what the home changes of an apply came to.
type homesOutcome struct {
	todo        []safety.UserPlan
	failed      map[int]error                            // by index in todo
	created     map[string]*corev1.PersistentVolumeClaim // by user
	failedUsers map[string]bool                          // failed, or refused because the claim changed since the plan
	unreachable bool
}

// runHomes makes the selected home changes in parallel, each destructive
// step through the gate (execute.Home), and reports those that failed.
func runHomes(ctx context.Context, client *kube.Client, cfg safety.Config, sel execute.Selection, labels, annotations map[string]string, diags *diag.Diagnostics) homesOutcome {
	out := homesOutcome{todo: sel.Homes, created: map[string]*corev1.PersistentVolumeClaim{}, failedUsers: map[string]bool{}}
	for _, m := range sel.Refused {
		out.failedUsers[m.Key] = true
	}
	var mu sync.Mutex
	out.failed = kube.ForEach(ctx, out.todo, func(ctx context.Context, up safety.UserPlan) error {
		create := func(ctx context.Context) error {
			pvc, err := newClaim(cfg, up, labels, annotations)
			if err != nil {
				return err
			}
			created, err := client.CreateClaim(ctx, pvc)
			if err == nil {
				mu.Lock()
				out.created[up.User] = created
				mu.Unlock()
			}
			return err
		}
		resize := func(ctx context.Context) error {
			return client.ResizeClaim(ctx, up.Namespace, up.Live.Name, cfg.Capacity)
		}
		return execute.Home(ctx, client, up, sel.Planned[up.User].UID, cfg.Migration.CopyImage, create, resize)
	})
	if len(out.failed) == 0 {
		return out
	}
	var lines []string
	notAttempted := 0
	for i, err := range out.failed {
		out.failedUsers[out.todo[i].User] = true
		if errors.Is(err, kube.ErrNotAttempted) {
			notAttempted++
			continue
		}
		out.unreachable = out.unreachable || kube.Unreachable(err)
		lines = append(lines, fmt.Sprintf("%s (%s, %s): %v", out.todo[i].User, out.todo[i].ClaimName, out.todo[i].Action, err))
	}
	sort.Strings(lines)
	list := safety.CutLines(lines)
	if notAttempted > 0 {
		list = strings.TrimLeft(list+fmt.Sprintf("\n  %d more not attempted: the API server could not be reached", notAttempted), "\n")
	}
	summary := fmt.Sprintf("%d of %d home claim changes failed", len(out.failed), len(out.todo))
	if out.unreachable {
		summary += ": the API server could not be reached"
	}
	diags.AddError(summary,
		"These users' claims were not changed as planned:\n"+list+
			fmt.Sprintf("\n%d change(s) were made; the state records them. Apply again to converge. No claim was deleted except by on_mode_change = \"recreate\".", len(out.todo)-len(out.failed)))
	return out
}

// liveAfterApply is the cluster as the state records it after apply.
// Migrations replace claims (new objects, new modes): the claims are read
// afresh after them. When the plan could not know the claims, or some
// changes failed, the state records the claims that exist: after a partial
// failure read afresh (a change that failed may have been made all the
// same); otherwise, and when the API server cannot be reached, the claims
// read before with the changes this apply made. When nothing of that holds,
// the planned values stand and live is returned as it was read.
func (r *homeStorageResource) liveAfterApply(ctx context.Context, client *kube.Client, plan, state *homeStorageModel, live safety.Live,
	cfg safety.Config, out homesOutcome, migrated bool, diags *diag.Diagnostics) safety.Live {
	before := live
	if migrated {
		fresh, err := r.readLive(ctx, client, plan, state, readMode{fresh: true})
		if err == nil {
			return fresh
		}
		diags.AddError("Cannot read the home claims after the migrations", err.Error()+
			"\nApply again: the next plan reads them, and a migration that did not finish resumes.")
	} else if len(out.failedUsers) > 0 && !out.unreachable {
		fresh, err := r.readLive(ctx, client, plan, state, readMode{fresh: true})
		if err == nil {
			return fresh
		}
		diags.AddError("Cannot read the home claims after apply", err.Error()+
			"\nThe state records the claims this apply created or changed; apply again to converge.")
	}
	if !plan.Claims.IsUnknown() && len(out.failedUsers) == 0 {
		return before
	}
	before.Claims = appliedClaims(before.Claims, out.todo, out.failed, out.created, cfg)
	return before
}

// recordApply sets the values the state records that the plan could not
// know, from what apply did: res is the classification made at apply, live
// the cluster as it is recorded (liveAfterApply). What the plan showed
// stands; a value it could not know comes from these. migrations says
// whether this apply ran migrations (who is still legacy is known only now),
// failures whether some user's change was not made (the claims that exist
// are recorded, not the planned ones).
func recordApply(plan *homeStorageModel, cfg safety.Config, res safety.Result, live safety.Live, migrations, failures bool) {
	if plan.Claims.IsUnknown() || failures {
		plan.Claims = claimsValue(safety.Plan(cfg, nil, live).Users, cfg, true)
	}
	if plan.SpawnerSettings.IsUnknown() {
		plan.SpawnerSettings = types.StringValue(spawnerSettings(plan, safety.Plan(cfg, nil, live).HomeClaims))
	}
	if plan.MigrationPlan.IsUnknown() {
		plan.MigrationPlan, _, _ = migrationPlanValue(res, cfg)
	}
	if migrations || plan.LegacyUsers.IsUnknown() && cfg.OnModeChange == safety.OnModeChangeMigrate {
		// Who is still on a claim that differs: the users whose migration
		// was skipped or stopped.
		kept := cfg
		kept.OnModeChange = safety.OnModeChangeKeepExisting
		now := safety.Plan(kept, nil, live)
		plan.LegacyUsers = stringList(now.LegacyUsers)
		plan.ColocationRequired = types.BoolValue(now.ColocationRequired)
	}
	if plan.LegacyUsers.IsUnknown() {
		plan.LegacyUsers = stringList(res.LegacyUsers)
	}
	if plan.ColocationRequired.IsUnknown() {
		plan.ColocationRequired = types.BoolValue(res.ColocationRequired)
	}
	if plan.ChangeClass.IsUnknown() {
		plan.ChangeClass = types.StringValue(string(res.Class))
	}
	if plan.Changes.IsUnknown() {
		plan.Changes = types.StringValue(safety.ChangesOf(res).Encode())
	}
}

// appliedClaims is the live claims read before apply with the changes that
// succeeded: created claims added, recreated ones replaced, resized ones grown.
func appliedClaims(before []claims.Claim, todo []safety.UserPlan, failed map[int]error, created map[string]*corev1.PersistentVolumeClaim, cfg safety.Config) []claims.Claim {
	resized, replaced := map[string]bool{}, map[string]bool{}
	var out []claims.Claim
	for i, up := range todo {
		if failed[i] != nil {
			continue
		}
		switch up.Action {
		case safety.ActionResize:
			resized[up.Live.Name] = true
		case safety.ActionRecreate, safety.ActionDeleteSource:
			replaced[up.Live.Name] = true
		}
		if pvc := created[up.User]; pvc != nil {
			out = append(out, kube.ClaimFromPVC(pvc))
		}
	}
	for _, c := range before {
		switch {
		case replaced[c.Name]:
			continue
		case resized[c.Name]:
			c.Requested, c.RequestedBytes = canonicalQuantity(cfg.Capacity), cfg.CapacityBytes
		}
		out = append(out, c)
	}
	return out
}

func (r *homeStorageResource) ensureClass(ctx context.Context, client *kube.Client, plan, state *homeStorageModel) error {
	sc := plan.StorageClass
	name := sc.Name.ValueString()
	existing, err := client.GetStorageClass(ctx, name)
	if err != nil {
		return err
	}
	expand := sc.AllowVolumeExpansion.IsNull() || sc.AllowVolumeExpansion.ValueBool()
	var mountOptions []string
	if !sc.MountOptions.IsNull() {
		sc.MountOptions.ElementsAs(ctx, &mountOptions, false)
	}
	replace := state != nil && state.StorageClass != nil && len(immutableClassChanges(state.StorageClass, sc)) > 0
	if existing != nil && !replace {
		return client.UpdateStorageClass(ctx, name, expand, mountOptions, map[string]string{kubespawner.LabelAppManagedBy: claims.ManagedBy})
	}
	if existing != nil {
		if err := client.DeleteStorageClass(ctx, name); err != nil {
			return err
		}
	}
	if replace && !state.StorageClass.Name.Equal(sc.Name) {
		_ = client.DeleteStorageClass(ctx, state.StorageClass.Name.ValueString())
	}
	params := map[string]string{}
	if !sc.Parameters.IsNull() {
		sc.Parameters.ElementsAs(ctx, &params, false)
	}
	reclaimPolicy := corev1.PersistentVolumeReclaimPolicy(reclaim(sc))
	mode := storagev1.VolumeBindingMode(binding(sc))
	return client.CreateStorageClass(ctx, &storagev1.StorageClass{
		ObjectMeta:           metav1.ObjectMeta{Name: name, Labels: map[string]string{kubespawner.LabelAppManagedBy: claims.ManagedBy}},
		Provisioner:          sc.Provisioner.ValueString(),
		Parameters:           params,
		ReclaimPolicy:        &reclaimPolicy,
		VolumeBindingMode:    &mode,
		AllowVolumeExpansion: &expand,
		MountOptions:         mountOptions,
	})
}

// newClaim builds a home claim the way KubeSpawner would, so that it adopts it on spawn.
func newClaim(cfg safety.Config, up safety.UserPlan, labels, annotations map[string]string) (*corev1.PersistentVolumeClaim, error) {
	meta := kubespawner.PVCMetadata{Username: up.User, ExtraLabels: labels, ExtraAnnotations: annotations}
	l, err := kubespawner.PVCLabels(meta)
	if err != nil {
		return nil, err
	}
	a := kubespawner.PVCAnnotations(meta)
	l[kubespawner.LabelAppManagedBy] = claims.ManagedBy
	size, err := kresource.ParseQuantity(cfg.Capacity)
	if err != nil {
		return nil, err
	}
	return kube.NewClaim(metav1.ObjectMeta{Name: up.ClaimName, Namespace: up.Namespace, Labels: l, Annotations: a},
		cfg.AccessMode, cfg.StorageClass, size), nil
}

func stringMap(ctx context.Context, m types.Map, diags *diag.Diagnostics) map[string]string {
	out := map[string]string{}
	if !m.IsNull() && !m.IsUnknown() {
		diags.Append(m.ElementsAs(ctx, &out, false)...)
	}
	return out
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
	state.Claims = claimsValue(res.Users, cfg, true)
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
		state.LegacyUsers = stringList(res.LegacyUsers)
		state.ColocationRequired = types.BoolValue(res.ColocationRequired)
		state.ChangeClass = types.StringValue(string(safety.ClassNone))
		state.SpawnerSettings = types.StringValue(spawnerSettings(&state, res.HomeClaims))
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &state)...)
}

// fillImported sets defaults for an imported deployment: the settings most
// of its claims have, so that the first plan shows what the configuration changes.
func (r *homeStorageResource) fillImported(ctx context.Context, client *kube.Client, m *homeStorageModel, diags *diag.Diagnostics) {
	m.ID = m.Namespace
	m.AccessMode = types.StringValue(safety.RWO)
	m.PVCNameTemplate = types.StringValue("claim-{username}")
	m.SlugScheme = types.StringValue(string(kubespawner.SchemeSafe))
	m.OnModeChange = types.StringValue(string(safety.OnModeChangeFail))
	m.AllowDataLoss = types.BoolValue(false)
	m.DeletionPolicy = types.StringValue(safety.DeletionRetain)
	m.Users = types.ListNull(types.StringType)
	m.Labels, m.Annotations = types.MapNull(types.StringType), types.MapNull(types.StringType)
	m.Capacity = types.StringValue("10Gi")
	pvcs, err := client.ListClaimsFresh(ctx, m.Namespace.ValueString(), DefaultClaimSelector)
	if err != nil {
		diags.AddError("Cannot read the live home claims", err.Error())
		return
	}
	modes, sizes, classes := map[string]int{}, map[string]int{}, map[string]int{}
	for i := range pvcs {
		c := kube.ClaimFromPVC(&pvcs[i])
		modes[strings.Join(c.AccessModes, ",")]++
		sizes[c.Requested]++
		classes[c.StorageClass]++
	}
	if v := mostCommon(modes); v != "" && slices.Contains([]string{safety.RWO, safety.RWX, safety.RWOP}, v) {
		m.AccessMode = types.StringValue(v)
	}
	if v := mostCommon(sizes); v != "" {
		m.Capacity = types.StringValue(v)
	}
	if v := mostCommon(classes); v != "" {
		m.StorageClassName = types.StringValue(v)
	}
}

func mostCommon(counts map[string]int) string {
	best, n := "", 0
	for _, k := range slices.Sorted(maps.Keys(counts)) {
		if counts[k] > n {
			best, n = k, counts[k]
		}
	}
	return best
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
