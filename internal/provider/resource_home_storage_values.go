package provider

// The computed values of jupyter_home_storage: what a plan shows and what
// the state records after apply.

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/types"
	kresource "k8s.io/apimachinery/pkg/api/resource"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/execute"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/kubespawner"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/safety"
)

// planValues are the planned values of a classified change. A change that
// does nothing keeps what the last apply or refresh recorded, so that the
// plan is empty; values that migrations decide are known after apply.
func planValues(plan, state *homeStorageModel, cfg safety.Config, res safety.Result) {
	plan.ChangeClass = types.StringValue(string(res.Class))
	plan.Changes = types.StringValue(safety.ChangesOf(res).Encode())
	plan.LegacyUsers = legacyValue(res)
	plan.ColocationRequired = types.BoolValue(res.ColocationRequired)
	var nMigrations int
	plan.MigrationPlan, nMigrations = migrationPlanValue(res, cfg)
	// The settings name no user: a migration never changes them, so the
	// hub's configuration does not change during one.
	plan.SpawnerSettings = types.StringValue(spawnerSettings(plan, res.MovedFrom))
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
		plan.Claims = claimsValue(&res, cfg)
	}
	if nMigrations > 0 {
		// Who ends up legacy, and the claims' new identities, are known once
		// the migrations ran (a user may start a server meanwhile).
		plan.LegacyUsers = types.StringUnknown()
		plan.ColocationRequired = types.BoolUnknown()
		plan.Claims = types.StringUnknown()
		plan.MigrationStatus = types.StringUnknown()
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

// claimsValue is the `claims` attribute a plan shows: every user's home
// claim (a named server's keyed "user/server", as the jupyter_home_claims
// data source keys it), as its name and the fields that differ from the
// most common claim ("default"). A claim that apply creates has an empty
// phase (and, on the cluster's default class, an empty class) until the
// next refresh observes it.
//
// It is one string rather than a map of objects on purpose: the framework
// walks every value node of a resource several times per plan, at a cost
// that grows with the square of their number, and thousands of users would
// make every plan take minutes (BENCHMARKS.md). It is compact because
// OpenTofu and the provider decode, copy and compare it several times per
// plan: names and the differences from the default are far smaller than
// every field of every claim (sizes: BENCHMARKS.md, "What the state's
// per-user strings cost OpenTofu itself").
func claimsValue(res *safety.Result, cfg safety.Config) types.String {
	return claimsValueOf(res, cfg, func(up *safety.UserPlan) bool { return up.Live != nil || up.Action == safety.ActionCreate })
}

// finalClaimsValue is the `claims` attribute after apply and refresh: only
// the claims that exist are listed.
func finalClaimsValue(res *safety.Result, cfg safety.Config) types.String {
	return claimsValueOf(res, cfg, func(up *safety.UserPlan) bool { return up.Live != nil })
}

// claimsValueOf is the `claims` attribute (claimsValue) of the users'
// claims that listed keeps.
func claimsValueOf(res *safety.Result, cfg safety.Config, listed func(*safety.UserPlan) bool) types.String {
	entries := make([]userClaim, 0, len(res.Users)+len(res.Servers))
	counts := map[claimView]int{}
	capacity := canonicalQuantity(cfg.Capacity)
	for _, list := range [2][]safety.UserPlan{res.Users, res.Servers} {
		for i := range list {
			up := &list[i]
			if !listed(up) {
				continue
			}
			e := claimEntryOf(*up, cfg, capacity)
			entries = append(entries, userClaim{up.Who(), e})
			counts[e.view]++
		}
	}
	// The users sorted, as JSON writes a map's keys, and each once: the last
	// entry of a user counts, as in a map. Plans list their users sorted, so
	// the sort finds them in order.
	slices.SortStableFunc(entries, func(a, b userClaim) int { return strings.Compare(a.user, b.user) })
	kept := entries[:0]
	for i, e := range entries {
		if i+1 < len(entries) && entries[i+1].user == e.user {
			continue
		}
		kept = append(kept, e)
	}
	b := make([]byte, 0, 64+len(kept)*48)
	b = append(b, `{"default":`...)
	if len(kept) == 0 {
		return types.StringValue(string(append(b, `null,"users":{}}`...)))
	}
	def := mostCommon(counts, claimViewLess)
	d, _ := json.Marshal(def)
	b = append(append(b, d...), `,"users":{`...)
	for i, e := range kept {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(appendJSONString(b, e.user), ':')
		b = appendClaimDelta(b, e.claimEntry, def)
	}
	return types.StringValue(string(append(b, "}}"...)))
}

// userClaim is one user's entry of claims.
type userClaim struct {
	user string
	claimEntry
}

// appendClaimDelta appends the JSON object of claim e: its name and the
// fields in which it differs from def, the keys sorted (as JSON writes a
// map).
func appendClaimDelta(b []byte, e claimEntry, def claimView) []byte {
	v := e.view
	b = append(b, '{')
	if v.AccessMode != def.AccessMode {
		b = append(appendJSONString(append(b, `"access_mode":`...), v.AccessMode), ',')
	}
	if v.Capacity != def.Capacity {
		b = append(appendJSONString(append(b, `"capacity":`...), v.Capacity), ',')
	}
	if v.Managed != def.Managed {
		b = append(strconv.AppendBool(append(b, `"managed":`...), v.Managed), ',')
	}
	b = appendJSONString(append(b, `"name":`...), e.name)
	if v.Phase != def.Phase {
		b = appendJSONString(append(b, `,"phase":`...), v.Phase)
	}
	if v.StorageClassName != def.StorageClassName {
		b = appendJSONString(append(b, `,"storage_class_name":`...), v.StorageClassName)
	}
	return append(b, '}')
}

// appendJSONString appends s as encoding/json writes it: printable ASCII
// other than the quote, the backslash and <, >, & as it is; anything else
// through encoding/json itself.
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s)
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// claimEntry is one user's claim in claims.
type claimEntry struct {
	name string
	view claimView
}

// claimEntryOf is the claim user plan up leaves: the one it creates, or the
// live one (a copied user's new home), at its new capacity when resized.
func claimEntryOf(up safety.UserPlan, cfg safety.Config, capacity string) claimEntry {
	e := claimEntry{name: up.ClaimName, view: claimView{Managed: up.Managed}}
	v := &e.view
	if up.Action == safety.ActionCreate || up.Action == safety.ActionRecreate {
		v.AccessMode, v.StorageClassName, v.Capacity = cfg.AccessMode, cfg.StorageClass, capacity
		return e
	}
	c := up.Live
	if (up.Action == safety.ActionCopied || up.Action == safety.ActionDeleteSource) && up.TargetLive != nil {
		c = up.TargetLive // the user's home now; the source is kept aside
	}
	e.name, v.AccessMode, v.StorageClassName, v.Capacity, v.Phase = c.Name, strings.Join(c.AccessModes, ","), c.StorageClass, c.Requested, c.Phase
	if up.Action == safety.ActionResize {
		v.Capacity = capacity
	}
	return e
}

// mostCommon is the most common key of counts; among equally common ones
// the first by less, so that the value is stable. The zero K when empty.
func mostCommon[K comparable](counts map[K]int, less func(a, b K) bool) K {
	var best K
	n := 0
	for k, c := range counts {
		if c > n || c == n && less(k, best) {
			best, n = k, c
		}
	}
	return best
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

// spawnerSettings is the spawner_settings attribute: KubeSpawner's settings
// for this storage. It names no user: the hub finds copied homes at spawn.
// movedFrom are the places homes of the shared layout had under earlier
// settings (safety.Result.MovedFrom, read from the shared claim).
func spawnerSettings(m *homeStorageModel, movedFrom []string) string {
	h := kubespawner.HomeStorage{
		AccessMode: m.AccessMode.ValueString(), StorageClass: m.className(), Capacity: m.Capacity.ValueString(),
		NameTemplate: m.PVCNameTemplate.ValueString(), Scheme: kubespawner.Scheme(m.SlugScheme.ValueString()),
		UserNamespaceTemplate: m.UserNamespaceTemplate.ValueString(),
	}
	if sh := m.SharedHome; sh != nil {
		h.Shared = &kubespawner.SharedHome{Claim: sh.ClaimName.ValueString(), SubPathTemplate: sh.SubPathTemplate.ValueString(),
			UID: sh.DirectoryUID.ValueInt64(), GID: sh.DirectoryGID.ValueInt64(), Mode: sh.DirectoryMode.ValueString(), Image: sh.InitImage.ValueString(),
			MovedFrom: movedFrom}
		if m.splitFrom() != nil || m.merging() { // moving out or in: claims where they exist (and are not merged), directories elsewhere
			h.SplitFrom, h.Shared = h.Shared, nil
		}
	}
	b, _ := json.Marshal(h.Settings())
	return string(b)
}

// immutableClassChanges lists the fields of storage_class that cannot
// change in place and differ from the last apply's: the plan shows them, and
// apply deletes and creates the class again (execute.DecideClass).
func immutableClassChanges(was, now *scModel) []string {
	return execute.ImmutableClassChanges(classOf(was), classOf(now))
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

// applied is what an apply did, as recordApply records it.
type applied struct {
	// migrations says whether this apply ran migrations (who is still
	// legacy is known only now).
	migrations bool
	// failures says whether some user's change was not made (the claims
	// that exist are recorded, not the planned ones).
	failures bool
}

// recordApply sets the values the state records that the plan could not
// know, from what apply did (done): res is the classification made at
// apply, live the cluster as it is recorded (liveAfterApply). What the plan
// showed stands; a value it could not know comes from these.
func recordApply(plan *homeStorageModel, cfg safety.Config, res safety.Result, live safety.Live, done applied) {
	if plan.Claims.IsUnknown() || done.failures {
		fresh := safety.Plan(cfg, nil, live)
		plan.Claims = finalClaimsValue(&fresh, cfg)
	}
	if plan.SpawnerSettings.IsUnknown() {
		plan.SpawnerSettings = types.StringValue(spawnerSettings(plan, res.MovedFrom))
	}
	if plan.MigrationPlan.IsUnknown() {
		plan.MigrationPlan, _ = migrationPlanValue(res, cfg)
	}
	if done.migrations || plan.LegacyUsers.IsUnknown() && cfg.OnModeChange == safety.OnModeChangeMigrate {
		// Who is still on a claim that differs: the users whose migration
		// was skipped or stopped.
		kept := cfg
		kept.OnModeChange = safety.OnModeChangeKeepExisting
		now := safety.Plan(kept, nil, live)
		plan.LegacyUsers = legacyValue(now)
		plan.ColocationRequired = types.BoolValue(now.ColocationRequired)
	}
	if plan.LegacyUsers.IsUnknown() {
		plan.LegacyUsers = legacyValue(res)
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
