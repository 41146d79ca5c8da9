package provider

// Apply of jupyter_home_storage: read the cluster, run the changes the plan
// showed (internal/execute), run the planned migrations, record the result.

import (
	"context"
	"slices"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/claims"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/execute"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/kube"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/migration"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/safety"
)

// readMode says what a read of the live cluster includes besides the
// claims and the storage class.
type readMode struct {
	pods       bool // the pods that mount claims (a claim may be deleted)
	fresh      bool // a new List, not the process's snapshot (apply reads afresh)
	migrations bool // the configuration migrates: when some claim differs, the volumes
}

// claimLister lists the claims of a namespace ("" for all) that match a
// label selector.
type claimLister func(ctx context.Context, namespace, selector string) ([]claims.Claim, error)

// lister is the List mode asks for: the process's snapshot unless fresh.
func (mode readMode) lister(client *kube.Client) claimLister {
	if mode.fresh {
		return client.ListClaimsFresh
	}
	return client.ListClaims
}

// readLive lists the claims (one paginated List), the storage class and
// what mode asks for. state is what the last apply recorded (nil when
// none): when it looked for homes elsewhere, claims are read there too (the
// old namespace; cluster-wide when user namespaces are or were on), so that
// the homes the new settings no longer find are seen (safety: homes left
// behind).
func (r *homeStorageResource) readLive(ctx context.Context, client *kube.Client, m, state *homeStorageModel, mode readMode) (safety.Live, error) {
	var live safety.Live
	var namespace string
	var err error
	if live.Claims, namespace, err = listHomes(ctx, mode.lister(client), m, state); err != nil {
		return live, err
	}
	if live.Class, err = liveClass(ctx, client, m); err != nil {
		return live, err
	}
	// Migrations in progress are read whatever the configuration says: a
	// rebind stopped after its claim was deleted must be finished (or
	// reported), never planned over as a new, empty home, also once
	// on_mode_change no longer says "migrate" or the state was removed.
	var diags diag.Diagnostics
	cfg := m.config(ctx, &diags)
	if err := readInProgress(ctx, client, cfg, &live); err != nil {
		return live, err
	}
	if err := readShared(ctx, client, cfg, &live); err != nil {
		return live, err
	}
	if err := readSharedDirectories(ctx, client, cfg, &live); err != nil {
		return live, err
	}
	return live, readMounted(ctx, client, cfg, mode, namespace, &live)
}

// readShared reads the shared claim shared_home names, and, while it is
// missing and this resource creates it, whether a claim of that name
// existed before.
func readShared(ctx context.Context, client *kube.Client, cfg safety.Config, live *safety.Live) error {
	sh := safety.DirectoryOf(cfg)
	if sh == nil {
		return nil
	}
	var err error
	if live.Shared, err = client.Claim(ctx, cfg.Namespace, sh.Claim); err != nil {
		return err
	}
	if live.Shared == nil && sh.Create {
		// Whether a claim of that name existed, before one is created.
		live.FormerSharedVolumes, err = client.FormerVolumes(ctx, cfg.Namespace, sh.Claim)
	}
	return err
}

// readSharedDirectories reads what moving directories out of a shared
// claim (a split that migrates) or into one (a merge) waits on: how they
// move, and which directories running pods use.
func readSharedDirectories(ctx context.Context, client *kube.Client, cfg safety.Config, live *safety.Live) error {
	if live.Shared == nil {
		return nil
	}
	// The shared claim directories move out of or into (never both:
	// safety.Config).
	var claim string
	switch {
	case cfg.SplitFrom != nil && cfg.OnLayoutChange == safety.OnLayoutChangeMigrate:
		claim = cfg.SplitFrom.Claim
		// Whether directories move zero copy or by a copy.
		var err error
		if live.SharedSource, err = client.PlannedSharedSource(ctx, cfg.Namespace, claim); err != nil {
			return err
		}
		// Directories a running pod uses wait (a copy runs on none): below.
	case cfg.MergeInto != nil:
		// Merges wait while a pod uses the claim or the directory: below.
		claim = cfg.MergeInto.Claim
	default:
		return nil
	}
	use, err := client.SharedDirectoryUse(ctx, cfg.Namespace, claim)
	if err != nil {
		return err
	}
	live.DirectoriesInUse = &use
	return nil
}

// readMounted reads the pods that mount claims in namespace ("" for all)
// when they matter: mode asks for them, a migration is in progress, a
// merge waits on them, or (mode.migrations) a migration may touch a claim.
func readMounted(ctx context.Context, client *kube.Client, cfg safety.Config, mode readMode, namespace string, live *safety.Live) error {
	needPods := mode.pods || len(live.InProgress) > 0 || cfg.MergeInto != nil
	if mode.migrations {
		// Whether a server runs matters only for a claim a migration may
		// touch: one that differs, or the source of a finished copy.
		differs, err := readVolumes(ctx, client, cfg, live)
		if err != nil {
			return err
		}
		needPods = needPods || differs || cfg.Migration.DeleteSources
	}
	if !needPods {
		return nil
	}
	var err error
	live.Mounted, err = client.MountedClaims(ctx, namespace)
	return err
}

// listHomes lists the claims that may be homes (one paginated List) and
// returns them with the namespace listed ("" for all). Under per-user
// namespaces the List is cluster-wide (the safety core keeps the claims in
// their users' namespaces).
func listHomes(ctx context.Context, list claimLister, m, state *homeStorageModel) ([]claims.Claim, string, error) {
	selector := DefaultClaimSelector
	if len(m.ExtraUserVolumes.Elements()) > 0 {
		selector = "" // other per-user claims need not carry KubeSpawner's labels
	}
	namespace := m.Namespace.ValueString()
	var also string // the namespace the last apply used, when it was another
	switch {
	case m.userNamespaces() || state != nil && (state.userNamespaces() || !state.UserNamespaceTemplate.Equal(m.UserNamespaceTemplate)):
		namespace = ""
	case state != nil && !state.Namespace.Equal(m.Namespace):
		also = state.Namespace.ValueString()
	}
	out, err := list(ctx, namespace, selector)
	if err != nil {
		return nil, namespace, err
	}
	if also != "" {
		more, err := list(ctx, also, selector)
		if err != nil {
			return nil, namespace, err
		}
		out = append(out, more...) // out is this call's own copy
	}
	return out, namespace, nil
}

// liveClass is what is known of the storage class the homes use: the one
// this resource creates (storage_class), or the named one as it is.
func liveClass(ctx context.Context, client *kube.Client, m *homeStorageModel) (*safety.StorageClass, error) {
	sc, err := client.GetStorageClass(ctx, m.className())
	if err != nil {
		return nil, err
	}
	switch {
	case m.StorageClass != nil:
		return &safety.StorageClass{Name: m.className(), Provisioner: m.StorageClass.Provisioner.ValueString(),
			AllowExpansion: m.StorageClass.AllowVolumeExpansion.IsNull() || m.StorageClass.AllowVolumeExpansion.ValueBool(),
			Exists:         sc != nil, Created: true}, nil
	case sc != nil:
		return &safety.StorageClass{Name: sc.Name, Provisioner: sc.Provisioner,
			AllowExpansion: sc.AllowVolumeExpansion != nil && *sc.AllowVolumeExpansion, Exists: true}, nil
	case m.className() != "":
		return &safety.StorageClass{Name: m.className()}, nil
	}
	return nil, nil
}

// apply makes the cluster match the plan: the StorageClass first, then the
// claims the plan showed, then the migrations it showed; then it records
// what came of them. On partial failure the state records what exists, the
// failed users are named, and a re-apply converges. It returns false when it
// stopped before changing any claim; plan is then not a state to record.
func (r *homeStorageResource) apply(ctx context.Context, plan, state *homeStorageModel, hub string, diags *diag.Diagnostics) bool {
	client := requireClient(r.data, diags)
	if client == nil {
		return false
	}
	plan.ID = plan.Namespace
	// Validation and the plan refuse a users value that does not parse; an
	// apply that still got one stops before it creates anything (it would
	// otherwise go on as if no users were listed).
	cfg := plan.config(ctx, diags)
	if diags.HasError() {
		return false
	}
	ex := &execute.Apply{Cluster: client, Parallel: kube.Parallelism, Unreachable: kube.Unreachable, AfterStep: r.data.AfterStep}
	if !applyClass(ctx, ex, plan, state, diags) {
		return false
	}
	live, res, ok := r.classifyAtApply(ctx, client, plan, state, cfg, hub, diags)
	if !ok {
		return false
	}
	planned, ok := plannedChanges(plan, diags)
	if !ok {
		return false
	}
	labels, annotations := stringMap(ctx, plan.Labels, diags), stringMap(ctx, plan.Annotations, diags)
	if !applySharedClaim(ctx, ex, cfg, res, labels, annotations, diags) {
		return false
	}
	// Where homes were before a move by rename is on the shared claim
	// before the hub is given the new settings (Terraform applies what
	// reads spawner_settings after this resource).
	if err := recordPlaces(ctx, client, live, res); err != nil {
		diags.AddAttributeError(path.Root("on_layout_change"), "Cannot record where the homes were", err.Error())
		return false
	}
	// Apply does what the plan showed, to the objects the plan read: the
	// changes read now are compared with the plan's, and a user whose claim
	// changed since is left alone (OpenTofu's check of the plan made again
	// at apply catches most of these before this point).
	var sel execute.Selection
	if planned.known {
		sel = execute.Select(res, planned.changes)
	} else {
		sel = execute.SelectUnplanned(res) // the plan could not show the changes
	}
	reportReconcile(diags, sel.Refused, sel.Moot)
	spec := claims.Spec{Mode: cfg.AccessMode, Class: cfg.StorageClass, Size: cfg.Capacity, Labels: labels, Annotations: annotations}
	ex.Homes(ctx, sel, spec, cfg.Migration.CopyImage)
	out := homesOutcomeOf(sel, ex.Outcome)
	hadMigrations, migrated := runPlannedMigrations(ctx, migrationRun{ex: ex, plan: plan, state: state, cfg: cfg, res: res,
		sel: sel, spec: spec, reachable: !out.unreachable})
	out.migrated = migrated
	reportOutcome(diags, ex.Outcome)
	cfg = withoutFailedUsers(plan, cfg, out.failedUsers)
	live = r.liveAfterApply(ctx, client, plan, state, live, cfg, out, diags)
	recordApply(plan, cfg, res, live, applied{migrations: hadMigrations, failures: len(out.failedUsers) > 0})
	return true
}

// applyClass creates or changes the StorageClass this resource manages
// (storage_class), if any. It returns false when that failed.
func applyClass(ctx context.Context, ex *execute.Apply, plan, state *homeStorageModel, diags *diag.Diagnostics) bool {
	if plan.StorageClass == nil {
		return true
	}
	var prior *claims.StorageClass
	if state != nil && state.StorageClass != nil {
		c := classOf(state.StorageClass)
		prior = &c
	}
	if !ex.Class(ctx, classOf(plan.StorageClass), prior) {
		reportOutcome(diags, ex.Outcome)
		return false
	}
	return true
}

// classifyAtApply reads the cluster afresh and classifies the change again
// (internal/safety), as the plan did. ok is false when the apply stops: the
// cluster cannot be read, or the change is refused.
func (r *homeStorageResource) classifyAtApply(ctx context.Context, client *kube.Client, plan, state *homeStorageModel, cfg safety.Config, hub string,
	diags *diag.Diagnostics) (live safety.Live, res safety.Result, ok bool) {
	prior := priorOf(ctx, state, hub, diags)
	live, err := r.readLive(ctx, client, plan, state, readMode{pods: cfg.OnModeChange == safety.OnModeChangeRecreate, fresh: true, migrations: migrates(plan, state)})
	if err != nil {
		diags.AddError("Cannot read the live home claims", err.Error())
		return live, res, false
	}
	res = safety.Plan(cfg, prior, live)
	if err := checkPodSecurity(ctx, client, &res); err != nil {
		diags.AddAttributeError(path.Root("migration"), "Cannot read the namespace's Pod Security labels", err.Error())
		return live, res, false
	}
	if len(res.Errors) > 0 {
		addErrorFindings(diags, res.Errors)
		return live, res, false
	}
	return live, res, true
}

// priorOf is what the state says was applied (nil when there is no
// state), and whether the hub already switched to the settings of a move
// (hub is the signature the hub last read: hubSettingsOf).
func priorOf(ctx context.Context, state *homeStorageModel, hub string, diags *diag.Diagnostics) *safety.Prior {
	if state == nil {
		return nil
	}
	prior := state.prior(ctx, diags)
	prior.HubSwitched = hub != "" && hub == moveSignature(prior.Config)
	return prior
}

// applySharedClaim creates the shared claim when the classification made
// at apply decided it (it is still missing, and never existed). It returns
// false when that failed.
func applySharedClaim(ctx context.Context, ex *execute.Apply, cfg safety.Config, res safety.Result, labels, annotations map[string]string,
	diags *diag.Diagnostics) bool {
	if !res.CreateShared {
		return true
	}
	sh := cfg.Shared
	if !ex.SharedClaim(ctx, claims.Spec{Namespace: cfg.Namespace, Name: sh.Claim, Mode: cfg.AccessMode, Class: cfg.StorageClass, Size: sh.Capacity,
		Labels: labels, Annotations: annotations, Shared: true}) {
		reportOutcome(diags, ex.Outcome)
		return false
	}
	return true
}

// withoutFailedUsers drops the users whose change failed (or was refused)
// from the users the state records, and returns cfg with the same users.
func withoutFailedUsers(plan *homeStorageModel, cfg safety.Config, failed map[string]bool) safety.Config {
	if len(failed) == 0 {
		return cfg
	}
	var kept []string
	for _, u := range cfg.Users {
		if !failed[u] {
			kept = append(kept, u)
		}
	}
	plan.Users = usersValue(kept)
	cfg.Users = kept
	return cfg
}

// recordPlaces adds the places homes had before a move by rename, and
// those a keep left homes at (safety.Result.MovedFrom, LeftAt), to the
// shared claim's lists when they lack some.
func recordPlaces(ctx context.Context, client *kube.Client, live safety.Live, res safety.Result) error {
	if live.Shared == nil {
		return nil
	}
	grows := false
	for key, add := range map[string][]string{migration.MovedFromAnnotation: res.MovedFrom, migration.LeftAtAnnotation: res.LeftAt} {
		have, err := migration.DecodeMovedFrom(live.Shared.Annotations[key])
		if err != nil {
			return err
		}
		grows = grows || !slices.Equal(migration.WithMovedFrom(have, add...), have)
	}
	if !grows {
		return nil
	}
	return client.RecordPlaces(ctx, live.Shared.Ref(), live.Shared.UID, res.MovedFrom, res.LeftAt)
}

// migrationRun is what runPlannedMigrations works from.
type migrationRun struct {
	ex          *execute.Apply
	plan, state *homeStorageModel
	cfg         safety.Config
	res         safety.Result     // the classification made at apply
	sel         execute.Selection // what apply does of the plan's changes
	spec        claims.Spec
	reachable   bool // the API server can be reached: only then do the migrations run
}

// runPlannedMigrations runs the migrations the plan showed (when the API
// server can be reached) and sets migration_status. It reports whether
// the plan showed any, and whether they ran.
func runPlannedMigrations(ctx context.Context, run migrationRun) (planned, ran bool) {
	plan, state := run.plan, run.state
	var migrations []migrationItem
	for _, it := range migrationItems(run.res, toMigrate) {
		if run.sel.Migrate[it.key] {
			it.uid = run.sel.Planned[it.key].UID
			migrations = append(migrations, it)
		}
	}
	ran = len(migrations) > 0 && run.reachable
	if ran {
		plan.MigrationStatus = runMigrations(ctx, run.ex, plan, migrations, run.cfg, run.res, run.spec)
	}
	if plan.MigrationStatus.IsUnknown() {
		plan.MigrationStatus = types.StringValue("{}")
		if state != nil && !state.MigrationStatus.IsNull() && !state.MigrationStatus.IsUnknown() {
			plan.MigrationStatus = state.MigrationStatus
		}
	}
	return len(migrations) > 0, ran
}

// plannedChangeList is the changes the plan showed; known is false when
// the plan could not know them.
type plannedChangeList struct {
	changes safety.Changes
	known   bool
}

// plannedChanges reads the changes the plan showed. ok is false when they
// cannot be read (an error is added).
func plannedChanges(plan *homeStorageModel, diags *diag.Diagnostics) (planned plannedChangeList, ok bool) {
	if plan.Changes.IsUnknown() || plan.Changes.IsNull() {
		return plannedChangeList{changes: safety.Changes{}}, true
	}
	changes, err := safety.DecodeChanges(plan.Changes.ValueString())
	if err != nil {
		diags.AddAttributeError(path.Root("changes"), "Cannot read the planned changes", err.Error())
		return plannedChangeList{}, false
	}
	return plannedChangeList{changes: changes, known: true}, true
}

// homesOutcome is what the home changes of an apply came to, as the state
// records it.
type homesOutcome struct {
	homes       []execute.HomeOutcome
	failedUsers map[string]bool // failed, or refused because the claim changed since the plan
	unreachable bool
	migrated    bool // migrations ran (they replace claims)
}

// homesOutcomeOf is the home changes' part of an apply's outcome.
func homesOutcomeOf(sel execute.Selection, o execute.Outcome) homesOutcome {
	out := homesOutcome{homes: o.Homes, failedUsers: map[string]bool{}, unreachable: o.Unreachable}
	for _, m := range sel.Refused {
		out.failedUsers[m.Key] = true
	}
	for _, h := range o.Homes {
		if h.Err != nil {
			out.failedUsers[h.Plan.Who()] = true
		}
	}
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
	cfg safety.Config, out homesOutcome, diags *diag.Diagnostics) safety.Live {
	before := live
	if out.migrated {
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
	before.Claims = appliedClaims(before.Claims, out.homes, cfg)
	return before
}

// appliedClaims is the live claims read before apply with the changes that
// succeeded: created claims added, recreated ones replaced, resized ones grown.
func appliedClaims(before []claims.Claim, homes []execute.HomeOutcome, cfg safety.Config) []claims.Claim {
	resized, replaced := map[claims.Ref]bool{}, map[claims.Ref]bool{} // names repeat across namespaces
	var out []claims.Claim
	for _, h := range homes {
		if h.Err != nil {
			continue
		}
		up := h.Plan
		switch up.Action {
		case safety.ActionResize:
			resized[up.Live.Ref()] = true
		case safety.ActionRecreate, safety.ActionDeleteSource:
			replaced[up.Live.Ref()] = true
		}
		if h.Created != nil {
			out = append(out, *h.Created)
		}
	}
	for _, c := range before {
		switch {
		case replaced[c.Ref()]:
			continue
		case resized[c.Ref()]:
			c.Requested, c.RequestedBytes = canonicalQuantity(cfg.Capacity), cfg.CapacityBytes
		}
		out = append(out, c)
	}
	return out
}
