package provider

// The model of jupyter_home_storage turned into the safety core's view of it.

import (
	"context"
	"slices"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/types"
	kresource "k8s.io/apimachinery/pkg/api/resource"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/kubespawner"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/safety"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/userset"
)

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
	cfg.OnLayoutChange = safety.OnLayoutChange(m.OnLayoutChange.ValueString())
	if sh := m.SharedHome; sh != nil {
		cfg.Shared = &safety.SharedHome{Claim: sh.ClaimName.ValueString(), SubPathTemplate: sh.SubPathTemplate.ValueString(),
			Create: sh.CreateClaim.ValueBool(), Capacity: sh.Capacity.ValueString()}
		switch {
		case m.Layout.ValueString() == layoutPerUser:
			cfg.SplitFrom, cfg.Shared = cfg.Shared, nil
		case m.merging():
			cfg.MergeInto, cfg.Shared = cfg.Shared, nil
		}
	}
	if q, err := kresource.ParseQuantity(cfg.Capacity); err == nil {
		cfg.CapacityBytes = q.Value()
	}
	cfg.Users = usersMap.names(m.Users, diags)
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

// Values of layout.
const (
	layoutShared  = "shared"
	layoutPerUser = "per_user"
)

// splitFrom is shared_home while homes move out of the shared layout
// (layout = "per_user" with shared_home); nil otherwise.
func (m *homeStorageModel) splitFrom() *sharedModel {
	if m.Layout.ValueString() == layoutPerUser {
		return m.SharedHome
	}
	return nil
}

// merging: homes move into the shared layout (layout = "shared" with
// on_layout_change = "migrate"): the hub mounts users' claims until they
// are merged into their directories.
func (m *homeStorageModel) merging() bool {
	return m.SharedHome != nil && m.Layout.ValueString() == layoutShared && m.OnLayoutChange.ValueString() == string(safety.OnLayoutChangeMigrate)
}

// prior is what the state says was applied.
func (m *homeStorageModel) prior(ctx context.Context, diags *diag.Diagnostics) *safety.Prior {
	cfg := m.config(ctx, diags)
	p := &safety.Prior{Config: cfg, Managed: map[string]string{}, ClassManaged: m.StorageClass != nil,
		MovedFrom: kubespawner.MovedFromOf(m.SpawnerSettings.ValueString())}
	if cfg.Shared != nil {
		return p // the shared layout manages no per-user claim
	}
	for _, u := range cfg.Users {
		name, err := kubespawner.Expand(cfg.NameTemplate, u, "", cfg.Scheme)
		if err == nil {
			p.Managed[u] = name
		}
	}
	return p
}

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
		for _, v := range []attr.Value{mm.Method, mm.CopyImage, mm.TargetNameTemplate, mm.DeleteCopiedSources, mm.BatchSize, mm.MaxParallel, mm.SkipRunning, mm.RebindDrivers} {
			if v.IsUnknown() {
				return false
			}
		}
	}
	return !m.OnLayoutChange.IsUnknown() && !m.Layout.IsUnknown() && m.sharedKnown()
}

// sharedKnown reports whether shared_home is known (or not set).
func (m *homeStorageModel) sharedKnown() bool {
	sh := m.SharedHome
	if sh == nil {
		return true
	}
	for _, v := range []attr.Value{sh.ClaimName, sh.SubPathTemplate, sh.DirectoryUID, sh.DirectoryGID, sh.DirectoryMode, sh.InitImage, sh.CreateClaim, sh.Capacity} {
		if v.IsUnknown() {
			return false
		}
	}
	return true
}

// sameShared reports whether a and b set the same shared_home.
func sameShared(a, b *sharedModel) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.ClaimName.Equal(b.ClaimName) && a.SubPathTemplate.Equal(b.SubPathTemplate) && a.DirectoryUID.Equal(b.DirectoryUID) &&
		a.DirectoryGID.Equal(b.DirectoryGID) && a.DirectoryMode.Equal(b.DirectoryMode) && a.InitImage.Equal(b.InitImage) &&
		a.CreateClaim.Equal(b.CreateClaim) && a.Capacity.Equal(b.Capacity)
}

// sameArguments reports whether plan and state agree on every argument.
func sameArguments(a, b *homeStorageModel) bool {
	if !sameShared(a.SharedHome, b.SharedHome) {
		return false
	}
	av := []attr.Value{a.Namespace, a.AccessMode, a.StorageClassName, a.Capacity, a.PVCNameTemplate, a.SlugScheme,
		a.Users, a.Labels, a.Annotations, a.OnModeChange, a.AllowDataLoss, a.DeletionPolicy, a.ExtraUserVolumes, a.UserNamespaceTemplate, a.OnLayoutChange, a.Layout}
	bv := []attr.Value{b.Namespace, b.AccessMode, b.StorageClassName, b.Capacity, b.PVCNameTemplate, b.SlugScheme,
		b.Users, b.Labels, b.Annotations, b.OnModeChange, b.AllowDataLoss, b.DeletionPolicy, b.ExtraUserVolumes, b.UserNamespaceTemplate, b.OnLayoutChange, b.Layout}
	for i := range av {
		if !av[i].Equal(bv[i]) {
			return false
		}
	}
	if !a.migrationConfig().Equal(b.migrationConfig()) || a.maxParallel() != b.maxParallel() {
		return false
	}
	if (a.StorageClass == nil) != (b.StorageClass == nil) {
		return false
	}
	return a.StorageClass == nil || len(immutableClassChanges(a.StorageClass, b.StorageClass)) == 0 &&
		a.StorageClass.AllowVolumeExpansion.Equal(b.StorageClass.AllowVolumeExpansion) && a.StorageClass.MountOptions.Equal(b.StorageClass.MountOptions)
}

// usersValue is the users attribute listing these users, as jsonencode
// writes it.
func usersValue(users []string) types.String {
	return types.StringValue(userset.Encode(users))
}

// legacyValue is legacy_users: JSON of an object from each legacy user to
// the names of its claims that differ from the configuration (the home, a
// claim of extra_user_volumes), comma-separated (internal/userset).
func legacyValue(res safety.Result) types.String {
	claims := map[string]string{}
	var several []string // users with more than one legacy claim
	for up := range res.All() {
		if up.Action != safety.ActionLegacy {
			continue
		}
		if n, ok := claims[up.User]; ok {
			claims[up.User] = n + "," + up.ClaimName
			several = append(several, up.User)
		} else {
			claims[up.User] = up.ClaimName
		}
	}
	for _, u := range several { // their names sorted, each once
		names := strings.Split(claims[u], ",")
		slices.Sort(names)
		claims[u] = strings.Join(slices.Compact(names), ",")
	}
	return types.StringValue(userset.EncodeLegacy(claims))
}

func stringMap(ctx context.Context, m types.Map, diags *diag.Diagnostics) map[string]string {
	out := map[string]string{}
	if !m.IsNull() && !m.IsUnknown() {
		diags.Append(m.ElementsAs(ctx, &out, false)...)
	}
	return out
}
