package provider

import (
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/claims"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/kubespawner"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/safety"
)

// The record step: values the plan showed stand; values it could not know
// come from what apply classified and from the claims as recorded.
func TestRecordApply(t *testing.T) {
	cfg := safety.Config{Namespace: "jhub", AccessMode: claims.RWX, StorageClass: "efs", Capacity: "1Gi", CapacityBytes: 1 << 30,
		NameTemplate: "claim-{username}", Scheme: kubespawner.SchemeSafe, Users: []string{"alice", "bob"}, OnModeChange: safety.OnModeChangeKeepExisting}
	rwo := claims.Claim{Name: "claim-alice", Namespace: "jhub", UID: "a1", Username: "alice", AccessModes: []string{claims.RWO},
		StorageClass: "efs", Requested: "1Gi", RequestedBytes: 1 << 30, Phase: "Bound"}
	live := safety.Live{Claims: []claims.Claim{rwo}}
	res := safety.Plan(cfg, nil, live)
	model := func() *homeStorageModel {
		return &homeStorageModel{Namespace: types.StringValue("jhub"), AccessMode: types.StringValue(claims.RWX), StorageClassName: types.StringValue("efs"),
			Capacity: types.StringValue("1Gi"), PVCNameTemplate: types.StringValue("claim-{username}"), SlugScheme: types.StringValue("safe"),
			Claims: types.StringUnknown(), LegacyUsers: types.StringUnknown(), ColocationRequired: types.BoolUnknown(),
			ChangeClass: types.StringUnknown(), Changes: types.StringUnknown(), SpawnerSettings: types.StringUnknown(), MigrationPlan: types.StringUnknown()}
	}

	// The plan could not read the cluster: everything comes from apply.
	m := model()
	after := live
	after.Claims = append(after.Claims, claims.Claim{Name: "claim-bob", Namespace: "jhub", UID: "b1", Username: "bob", AccessModes: []string{claims.RWX}, StorageClass: "efs", Requested: "1Gi", RequestedBytes: 1 << 30})
	recordApply(m, cfg, res, after, applied{})
	for name, v := range map[string]interface{ IsUnknown() bool }{"claims": m.Claims, "legacy_users": m.LegacyUsers, "colocation_required": m.ColocationRequired,
		"change_class": m.ChangeClass, "changes": m.Changes, "spawner_settings": m.SpawnerSettings, "migration_plan": m.MigrationPlan} {
		if v.IsUnknown() {
			t.Errorf("%s is still unknown after apply", name)
		}
	}
	if got := m.Changes.ValueString(); got != `{"bob":{"action":"create","namespace":"jhub","claim":"claim-bob"}}` {
		t.Errorf("changes %s", got)
	}
	if m.ChangeClass.ValueString() != "safe" || !m.ColocationRequired.ValueBool() || m.LegacyUsers.ValueString() != `{"alice":"claim-alice"}` {
		t.Errorf("class %s, colocation %v, legacy %v", m.ChangeClass, m.ColocationRequired, m.LegacyUsers)
	}
	if got := m.Claims.ValueString(); got == "" || !contains(got, `"bob":{`) || !contains(got, `"alice":{`) {
		t.Errorf("claims %s", got)
	}

	// What the plan showed stands.
	m = model()
	m.Claims, m.ChangeClass, m.Changes = types.StringValue("planned"), types.StringValue("safe"), types.StringValue("{}")
	m.LegacyUsers, m.ColocationRequired = types.StringValue(`{"alice":"claim-alice"}`), types.BoolValue(true)
	recordApply(m, cfg, res, after, applied{})
	if m.Claims.ValueString() != "planned" || m.Changes.ValueString() != "{}" {
		t.Errorf("planned values were replaced: %s %s", m.Claims, m.Changes)
	}
	// Unless some change failed: then the claims that exist are recorded.
	recordApply(m, cfg, res, after, applied{failures: true})
	if m.Claims.ValueString() == "planned" {
		t.Errorf("after a failure the planned claims were recorded")
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }
