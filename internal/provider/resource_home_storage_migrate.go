package provider

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/claims"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/execute"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/kube"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/kubespawner"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/migration"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/safety"
)

// on_mode_change = "migrate": the glue between the plan (safety.Plan's
// ActionMigrate), the steps (execute.Runner) and the attributes
// migration_plan and migration_status.

const defaultMaxParallel = 4

// checkPodSecurity reads the Pod Security labels of the namespaces where
// applying res runs a copy's or a verification's Job (one get each; none
// when it runs none) and adds what admission will do to res
// (safety.CheckPodSecurity): a namespace that enforces restricted fails the
// plan, and the apply, before any Job exists.
func checkPodSecurity(ctx context.Context, client *kube.Client, res *safety.Result) error {
	nss := safety.JobNamespaces(res)
	if len(nss) == 0 {
		return nil
	}
	levels := make(map[string]safety.PodSecurity, len(nss))
	for _, ns := range nss {
		labels, err := client.NamespaceLabels(ctx, ns)
		if err != nil {
			return err
		}
		levels[ns] = safety.PodSecurityOf(labels)
	}
	safety.CheckPodSecurity(res, levels)
	return nil
}

// migrationConfig is the migration attribute with its defaults.
func (m *homeStorageModel) migrationConfig() safety.Migration {
	out := safety.Migration{Method: migration.MethodAuto, SkipRunning: true}
	mm := m.Migration
	if mm == nil {
		return out
	}
	if v := mm.Method.ValueString(); v != "" {
		out.Method = migration.Method(v)
	}
	if !mm.BatchSize.IsNull() && !mm.BatchSize.IsUnknown() {
		out.BatchSize = int(mm.BatchSize.ValueInt64())
	}
	if !mm.SkipRunning.IsNull() && !mm.SkipRunning.IsUnknown() {
		out.SkipRunning = mm.SkipRunning.ValueBool()
	}
	out.CopyImage, out.TargetTemplate = mm.CopyImage.ValueString(), mm.TargetNameTemplate.ValueString()
	out.DeleteSources = mm.DeleteCopiedSources.ValueBool()
	if !mm.RebindDrivers.IsNull() && !mm.RebindDrivers.IsUnknown() {
		for _, e := range mm.RebindDrivers.Elements() {
			if s, ok := e.(types.String); ok && !s.IsNull() && !s.IsUnknown() {
				out.RebindDrivers = append(out.RebindDrivers, s.ValueString())
			}
		}
	}
	return out
}

func (m *homeStorageModel) maxParallel() int {
	if m.Migration == nil || m.Migration.MaxParallel.IsNull() || m.Migration.MaxParallel.IsUnknown() {
		return defaultMaxParallel
	}
	return int(m.Migration.MaxParallel.ValueInt64())
}

// migrates reports whether reading the cluster must look for migrations:
// the configuration asks for them, or the last apply did (one may have
// stopped part-way).
func migrates(plan, state *homeStorageModel) bool {
	for _, m := range []*homeStorageModel{plan, state} {
		if m != nil && m.OnModeChange.ValueString() == string(safety.OnModeChangeMigrate) {
			return true
		}
	}
	return false
}

// readInProgress adds to live the records of the rebinds in progress of
// this deployment's claims (one label-selected List of volumes).
func readInProgress(ctx context.Context, client *kube.Client, cfg safety.Config, live *safety.Live) error {
	namespace := cfg.Namespace
	if cfg.UserNamespaceTemplate != "" {
		namespace = "" // every namespace; kept below when it is the user's
	}
	vols, recs, err := client.MigrationsInProgress(ctx, namespace)
	if err != nil {
		return err
	}
	live.InProgress = make(map[claims.Ref]safety.InProgress, len(recs))
	for ref, rec := range recs {
		if ns, err := cfg.NamespaceOf(rec.User); err != nil || ns != rec.Namespace {
			continue // another deployment's migration
		}
		live.InProgress[ref] = safety.InProgress{Volume: vols[ref].Name, Record: *rec}
	}
	return nil
}

// readVolumes adds to live, when some claim differs from the
// configuration, the CSI driver of every volume (one paginated List), which
// the choice of a migration's method needs. It reports whether some claim
// differs.
func readVolumes(ctx context.Context, client *kube.Client, cfg safety.Config, live *safety.Live) (differs bool, err error) {
	need := false
	for _, c := range live.Claims {
		if safety.Differs(cfg, c) {
			need = true
			break
		}
	}
	if !need {
		return false, nil
	}
	pvs, err := client.ListVolumes(ctx, "")
	if err != nil {
		return false, err
	}
	live.Volumes = make(map[string]safety.Volume, len(pvs))
	for _, pv := range pvs {
		v := safety.Volume{}
		if pv.Spec.CSI != nil {
			v.CSIDriver = pv.Spec.CSI.Driver
		}
		live.Volumes[pv.Name] = v
	}
	return true, nil
}

// migrationPlanEntry is one user's entry in migration_plan.
type migrationPlanEntry struct {
	Method string `json:"method"`
	Claim  string `json:"claim"`
	Volume string `json:"volume,omitempty"`
	Target string `json:"target,omitempty"`
	From   string `json:"from,omitempty"`
	To     string `json:"to,omitempty"`
	Resume string `json:"resume_from,omitempty"`
	Reason string `json:"reason,omitempty"`
}

// migrationPlanValue is migration_plan: the users migrated by this apply
// and, under on_mode_change = "migrate", those left for later. It also
// counts the migrations.
func migrationPlanValue(res safety.Result, cfg safety.Config) (v types.String, n int) {
	out := map[string]migrationPlanEntry{}
	splitLater := func(up *safety.UserPlan) bool { // a directory a later apply moves (batch_size)
		return up.Action == safety.ActionKeep && up.Live == nil && cfg.SplitFrom != nil && cfg.OnLayoutChange == safety.OnLayoutChangeMigrate
	}
	mergeLater := func(up *safety.UserPlan) bool { // a claim a later apply merges
		return up.Action == safety.ActionKeep && up.Live != nil && up.Managed && up.Server == "" && cfg.MergeInto != nil &&
			!migration.Merged(up.Live.Annotations, up.Live.UID) && !safety.InMergeDirectory(cfg, up.User, up.Live, "")
	}
	shown := func(up *safety.UserPlan) bool {
		return up.Action == safety.ActionMigrate || up.Action == safety.ActionLegacy && cfg.OnModeChange == safety.OnModeChangeMigrate || splitLater(up) || mergeLater(up)
	}
	for _, it := range migrationItems(res, shown) {
		up := it.up
		switch {
		case up.Action == safety.ActionMigrate:
			n++
			e := migrationPlanEntry{Method: string(up.Method), Claim: up.ClaimName, Volume: up.Volume, Target: up.Target, To: cfg.AccessMode}
			if up.Live != nil {
				e.From = strings.Join(up.Live.AccessModes, ",")
			}
			if up.Resume != nil {
				e.From, e.To, e.Resume = strings.Join(up.Resume.From, ","), up.Resume.To, string(up.Resume.Step)
			}
			if up.CopyResume != nil {
				e.To, e.Resume = up.CopyResume.To, string(up.CopyResume.Step)
			}
			out[it.key] = e
		case up.Action == safety.ActionLegacy && cfg.OnModeChange == safety.OnModeChangeMigrate, splitLater(&up), mergeLater(&up):
			out[it.key] = migrationPlanEntry{Method: "none", Claim: up.ClaimName, Reason: up.Reason}
		}
	}
	b, _ := json.Marshal(out)
	return types.StringValue(string(b)), n
}

// migrationItem is one claim to migrate, keyed as in migration_plan and
// migration_status (safety.Result.Keyed): the username for a default
// server's home, "user/server" for a named server's, "user (claim)" for
// another per-user claim (extra_user_volumes).
type migrationItem struct {
	key string
	up  safety.UserPlan
	uid string // of the claim the plan read; "" when it read none
}

// migrationItems lists the homes and other per-user claims of a plan that
// keep selects (toMigrate: those to migrate).
func migrationItems(res safety.Result, keep func(*safety.UserPlan) bool) []migrationItem {
	var out []migrationItem
	for k, up := range res.Keyed() {
		if keep(up) {
			out = append(out, migrationItem{key: k, up: *up})
		}
	}
	return out
}

func toMigrate(up *safety.UserPlan) bool { return up.Action == safety.ActionMigrate }

// migrationStatusEntry is one user's entry in migration_status.
type migrationStatusEntry struct {
	Method string `json:"method"`
	Volume string `json:"volume,omitempty"`
	Target string `json:"target,omitempty"`
	Step   string `json:"step"`
	Error  string `json:"error,omitempty"`
}

// runMigrations runs the planned users' migrations (execute.Apply.Migrate),
// max_parallel at a time, and returns migration_status. Failures are
// reported with the apply's other failures (reportOutcome); no data is lost
// by a failure at any step (the volume is retained from the first step on).
func runMigrations(ctx context.Context, ex *execute.Apply, plan *homeStorageModel, items []migrationItem, cfg safety.Config, res safety.Result, spec claims.Spec) types.String {
	labels := spec.Labels
	ms := make([]execute.Migration, len(items))
	for i, it := range items {
		up := it.up
		ms[i] = execute.Migration{Key: it.key, Plan: up}
		switch up.Method {
		case migration.MethodSplit:
			ms[i].Split = splitJob(plan, cfg, res, up, spec)
		case migration.MethodDirectoryCopy:
			ms[i].DirectoryCopy = directoryCopyJob(plan, cfg, res, up, spec)
		case migration.MethodMerge:
			ms[i].Merge = mergeJob(plan, cfg, res, up, it.uid)
		case migration.MethodCopy:
			to := cfg.AccessMode
			if up.CopyResume != nil {
				to = up.CopyResume.To
			}
			ms[i].Copy = &migration.Copy{User: up.User, Namespace: up.Namespace, Source: up.ClaimName, Target: up.Target, To: to,
				StorageClass: cfg.StorageClass, Capacity: cfg.Capacity, Image: cfg.Migration.CopyImage, ExtraLabels: labels}
		default:
			job := execute.Rebind{User: up.User, Namespace: up.Namespace, Claim: up.ClaimName, Volume: up.Volume, To: cfg.AccessMode, UID: it.uid}
			if up.Resume != nil {
				job.To = up.Resume.To
			}
			if up.Resize {
				job.Resize = cfg.Capacity
			}
			ms[i].Rebind = &job
		}
	}
	ex.Migrate(ctx, ms, plan.maxParallel())
	status := map[string]migrationStatusEntry{}
	for _, m := range ex.Outcome.Migrations {
		up := m.Plan
		e := migrationStatusEntry{Method: string(up.Method), Volume: up.Volume, Target: up.Target, Step: string(m.Step)}
		if m.Err != nil {
			e.Error = m.Err.Error()
		}
		status[m.Key] = e
	}
	b, _ := json.Marshal(status)
	return types.StringValue(string(b))
}

// splitJob is the move of up's home out of the shared layout: its
// directory (as the planner checked, the one a resumed move began from),
// the places it had before a rename, and the owner, mode and image of a
// directory the move makes.
func splitJob(plan *homeStorageModel, cfg safety.Config, res safety.Result, up safety.UserPlan, spec claims.Spec) *migration.Split {
	sh := plan.splitFrom()
	dir, _ := kubespawner.Expand(cfg.SplitFrom.SubPathTemplate, up.User, "", cfg.Scheme) // the plan expanded it
	spec = execute.SpecFor(spec, up)
	spec.Class = ""
	return &migration.Split{User: up.User, Shared: cfg.SplitFrom.Claim, Directory: dir, MovedFrom: safety.MovedDirectories(res.MovedFrom, up.User), Spec: spec,
		UID: sh.DirectoryUID.ValueInt64(), GID: sh.DirectoryGID.ValueInt64(), Mode: sh.DirectoryMode.ValueString(), Image: sh.InitImage.ValueString()}
}

// directoryCopyJob is the move of up's home out of the shared layout by a
// copy: as splitJob, into a claim of the configured class, with the copy
// image.
func directoryCopyJob(plan *homeStorageModel, cfg safety.Config, res safety.Result, up safety.UserPlan, spec claims.Spec) *migration.DirectoryCopy {
	s := splitJob(plan, cfg, res, up, spec)
	spec = execute.SpecFor(spec, up)
	return &migration.DirectoryCopy{User: s.User, Shared: s.Shared, Directory: s.Directory, MovedFrom: s.MovedFrom, Spec: spec, UID: s.UID, GID: s.GID, Mode: s.Mode, Image: s.Image,
		CopyImage: cfg.Migration.CopyImage}
}

// mergeJob is the merge of up's claim (of UID uid, as the plan read it)
// into the user's directory of the shared claim: the directory the plan
// expanded, the places the home had before a rename (one with files
// refuses the merge), the owner, mode and image of a directory the merge
// makes, and the copy image.
func mergeJob(plan *homeStorageModel, cfg safety.Config, res safety.Result, up safety.UserPlan, uid string) *migration.Merge {
	sh := plan.SharedHome
	dir, _ := kubespawner.Expand(cfg.MergeInto.SubPathTemplate, up.User, "", cfg.Scheme) // the plan expanded it
	return &migration.Merge{User: up.User, Namespace: up.Namespace, Claim: up.ClaimName, ClaimUID: uid, Shared: cfg.MergeInto.Claim, Directory: dir,
		Earlier: safety.MovedDirectories(res.MovedFrom, up.User), UID: sh.DirectoryUID.ValueInt64(), GID: sh.DirectoryGID.ValueInt64(),
		Mode: sh.DirectoryMode.ValueString(), Image: sh.InitImage.ValueString(), CopyImage: cfg.Migration.CopyImage}
}

// reportReconcile turns the differences between the plan and the cluster at
// apply into diagnostics: an error for a change the plan did not show (it is
// not made), a warning where nothing is left to do.
func reportReconcile(diags *diag.Diagnostics, refused, moot []safety.Mismatch) {
	lines := func(ms []safety.Mismatch) string {
		return safety.Cut(len(ms), func(i int) string { return ms[i].String() })
	}
	if len(refused) > 0 {
		diags.AddAttributeError(path.Root("changes"), "Claims changed since the plan",
			fmt.Sprintf("The cluster no longer gives the changes the plan showed for %d claim(s); apply does only what the plan showed, so nothing was done for these:\n%s\n"+
				"A user's server may have created or replaced a claim since the plan. Plan again, and apply the new plan.", len(refused), lines(refused)))
	}
	if len(moot) > 0 {
		diags.AddAttributeWarning(path.Root("changes"), "Nothing left to do for some planned changes",
			fmt.Sprintf("The cluster already shows what the plan would have done, or no longer needs it, for %d claim(s):\n%s", len(moot), lines(moot)))
	}
}
