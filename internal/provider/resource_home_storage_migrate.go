package provider

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/kube"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/migration"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/safety"
)

// on_mode_change = "migrate": the glue between the plan (safety.Plan's
// ActionMigrate), the steps (kube.Client.Rebind) and the attributes
// migration_plan and migration_status.

const defaultMaxParallel = 4

// migrationConfig is the migration block with its defaults.
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

// readMigrations adds to live what a migration needs: the records of
// migrations in progress (one label-selected List of volumes) and, when some
// claim differs from the configuration, the CSI driver of every volume (one
// paginated List).
func readMigrations(ctx context.Context, client *kube.Client, cfg safety.Config, live *safety.Live) error {
	vols, recs, err := client.MigrationsInProgress(ctx, cfg.Namespace)
	if err != nil {
		return err
	}
	live.InProgress = map[string]safety.InProgress{}
	for claim, rec := range recs {
		live.InProgress[claim] = safety.InProgress{Volume: vols[claim].Name, Record: *rec}
	}
	need := false
	for _, c := range live.Claims {
		if safety.Differs(cfg, c) {
			need = true
			break
		}
	}
	if !need {
		return nil
	}
	pvs, err := client.ListVolumes(ctx, "")
	if err != nil {
		return err
	}
	live.Volumes = make(map[string]safety.Volume, len(pvs))
	for _, pv := range pvs {
		v := safety.Volume{}
		if pv.Spec.CSI != nil {
			v.CSIDriver = pv.Spec.CSI.Driver
		}
		live.Volumes[pv.Name] = v
	}
	return nil
}

// migrationPlanEntry is one user's entry in migration_plan.
type migrationPlanEntry struct {
	Method string `json:"method"`
	Claim  string `json:"claim"`
	Volume string `json:"volume,omitempty"`
	From   string `json:"from,omitempty"`
	To     string `json:"to,omitempty"`
	Resume string `json:"resume_from,omitempty"`
	Reason string `json:"reason,omitempty"`
}

// migrationPlanValue is migration_plan: the users migrated by this apply
// and, under on_mode_change = "migrate", those left for later.
func migrationPlanValue(ups []safety.UserPlan, cfg safety.Config) (types.String, int) {
	out := map[string]migrationPlanEntry{}
	n := 0
	for _, up := range ups {
		switch {
		case up.Action == safety.ActionMigrate:
			n++
			e := migrationPlanEntry{Method: string(up.Method), Claim: up.ClaimName, Volume: up.Volume, To: cfg.AccessMode}
			if up.Live != nil {
				e.From = strings.Join(up.Live.AccessModes, ",")
			}
			if up.Resume != nil {
				e.From, e.To, e.Resume = strings.Join(up.Resume.From, ","), up.Resume.To, string(up.Resume.Step)
			}
			out[up.User] = e
		case up.Action == safety.ActionLegacy && cfg.OnModeChange == safety.OnModeChangeMigrate:
			out[up.User] = migrationPlanEntry{Method: "none", Claim: up.ClaimName, Reason: up.Reason}
		}
	}
	b, _ := json.Marshal(out)
	return types.StringValue(string(b)), n
}

// plannedMigrations are the users migration_plan says this apply rebinds;
// nil when the plan could not know (every user the apply finds may move).
func plannedMigrations(v types.String) map[string]bool {
	if v.IsUnknown() || v.IsNull() {
		return nil
	}
	var entries map[string]migrationPlanEntry
	if json.Unmarshal([]byte(v.ValueString()), &entries) != nil {
		return nil
	}
	out := map[string]bool{}
	for u, e := range entries {
		if e.Method == string(migration.MethodRebind) {
			out[u] = true
		}
	}
	return out
}

// migrationStatusEntry is one user's entry in migration_status.
type migrationStatusEntry struct {
	Method string `json:"method"`
	Volume string `json:"volume"`
	Step   string `json:"step"`
	Error  string `json:"error,omitempty"`
}

// runMigrations rebinds the planned users, max_parallel at a time, and
// returns migration_status. Failures are reported per user; no data is lost
// by a failure at any step (the volume is retained from the first step on).
func runMigrations(ctx context.Context, client *kube.Client, plan *homeStorageModel, ups []safety.UserPlan, cfg safety.Config, diags *diag.Diagnostics) types.String {
	status := map[string]migrationStatusEntry{}
	var mu sync.Mutex
	failed := kube.ForEachN(ctx, ups, plan.maxParallel(), func(ctx context.Context, up safety.UserPlan) error {
		to := cfg.AccessMode
		if up.Resume != nil {
			to = up.Resume.To
		}
		step, err := client.Rebind(ctx, kube.Rebind{User: up.User, Namespace: cfg.Namespace, Claim: up.ClaimName, Volume: up.Volume, To: to})
		e := migrationStatusEntry{Method: string(migration.MethodRebind), Volume: up.Volume, Step: string(step)}
		if err != nil {
			e.Error = err.Error()
		}
		mu.Lock()
		status[up.User] = e
		mu.Unlock()
		return err
	})
	if len(failed) > 0 {
		var lines []string
		for i, err := range failed {
			up := ups[i]
			if errors.Is(err, kube.ErrNotAttempted) {
				status[up.User] = migrationStatusEntry{Method: string(migration.MethodRebind), Volume: up.Volume, Step: string(migration.StepPending), Error: err.Error()}
			}
			lines = append(lines, fmt.Sprintf("  %s (%s, volume %s, stopped at %s): %v", up.User, up.ClaimName, up.Volume, status[up.User].Step, err))
		}
		sort.Strings(lines)
		if len(lines) > safety.ListLimit {
			lines = append(lines[:safety.ListLimit], fmt.Sprintf("  ... and %d more", len(lines)-safety.ListLimit))
		}
		diags.AddError(fmt.Sprintf("%d of %d home migrations did not finish", len(failed), len(ups)),
			"These users' homes were not fully migrated:\n"+strings.Join(lines, "\n")+
				"\nNo data was lost: each volume is retained from the first step on, and its record of the migration is an annotation on the volume. "+
				"Apply again to resume from the step reached; these users stay in legacy_users (co-located) until then.")
	}
	b, _ := json.Marshal(status)
	return types.StringValue(string(b))
}
