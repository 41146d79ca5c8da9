package provider

// jupyter_home_claims' view of the shared layout: where each listed
// user's default server finds its home at a spawn now (safety.HubHomes),
// and what the shared claim is.

import (
	"fmt"
	"strconv"

	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/claims"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/kubespawner"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/safety"
)

// Defaults of the shared layout's inputs: jupyter_home_storage's.
const (
	defaultSubPathTemplate = "{username}"
	defaultNameTemplate    = "claim-{username}"
)

// homesModel is the data source's shared-layout part.
type homesModel struct {
	SharedClaim       types.String            `tfsdk:"shared_claim"`
	SubPathTemplate   types.String            `tfsdk:"sub_path_template"`
	SlugScheme        types.String            `tfsdk:"slug_scheme"`
	PVCNameTemplate   types.String            `tfsdk:"pvc_name_template"`
	Layout            types.String            `tfsdk:"layout"`
	Users             types.String            `tfsdk:"users"`
	Homes             types.String            `tfsdk:"homes"`
	SharedClaimStatus *sharedClaimStatusModel `tfsdk:"shared_claim_status"`
}

type sharedClaimStatusModel struct {
	Exists       types.Bool   `tfsdk:"exists"`
	UID          types.String `tfsdk:"uid"`
	AccessModes  types.List   `tfsdk:"access_modes"`
	StorageClass types.String `tfsdk:"storage_class_name"`
	Phase        types.String `tfsdk:"phase"`
	VolumeName   types.String `tfsdk:"volume_name"`
	Deleting     types.Bool   `tfsdk:"deleting"`
}

func homesAttributes() map[string]schema.Attribute {
	needsShared := stringvalidator.AlsoRequires(path.MatchRoot("shared_claim"))
	computedStr := func(desc string) schema.StringAttribute {
		return schema.StringAttribute{Computed: true, MarkdownDescription: desc}
	}
	return map[string]schema.Attribute{
		"shared_claim": schema.StringAttribute{Optional: true,
			MarkdownDescription: "The shared layout's claim in `namespace`, which holds every home not in a claim of its own (zero-to-jupyterhub's `singleuser.storage.static.pvcName`; " +
				"`jupyter_home_storage`'s `shared_home.claim_name`). Set it to get `homes` and `shared_claim_status`; it costs one more request (a Get of this claim).",
			Validators: []validator.String{sharedClaimValidator()}},
		"sub_path_template": schema.StringAttribute{Optional: true,
			MarkdownDescription: "The user's directory in `shared_claim`, a KubeSpawner template: `{username}` (default, z2jh's `static.subPath`), `home/{username}` (Nebari classic). " +
				"As `jupyter_home_storage`'s `shared_home.sub_path_template`; expanded as KubeSpawner expands it, under `slug_scheme`.",
			Validators: []validator.String{subPathTemplateValidator{}, needsShared}},
		"slug_scheme": schema.StringAttribute{Optional: true, MarkdownDescription: slugSchemeDescription + " Only with `shared_claim`.",
			Validators: []validator.String{slugSchemeValidator(), needsShared}},
		"pvc_name_template": schema.StringAttribute{Optional: true,
			MarkdownDescription: "KubeSpawner's `pvc_name_template`, the claim the hub reads for a user's default server while homes move out of the shared layout. " +
				"Default `" + defaultNameTemplate + "`, as `jupyter_home_storage`'s. Only with `shared_claim`.",
			Validators: []validator.String{templateValidator{}, needsShared}},
		"layout": schema.StringAttribute{Optional: true,
			MarkdownDescription: "The hub's layout, as `jupyter_home_storage`'s `layout` with `shared_home`: `shared` (default: every home is the user's directory of `shared_claim`; the hub reads no claim) " +
				"or `per_user` (homes move out of the shared layout, or merge back into it: the hub mounts the user's claim when it exists and is finished, else their directory). Only with `shared_claim`.",
			Validators: []validator.String{layoutValidator(), needsShared}},
		"users": schema.StringAttribute{Optional: true,
			MarkdownDescription: "The users whose homes `homes` resolves, raw JupyterHub usernames in the form of `jupyter_home_storage`'s `users`: one JSON object from each name to `{}`, " +
				"e.g. `jsonencode({ for u in var.users : u => {} })`, or `jupyter_home_storage.<name>.users` itself. No pod runs at read time, so directories cannot be listed: " +
				"only the users named here are resolved. Only with `shared_claim`.",
			Validators: []validator.String{usersMap, needsShared}},
		"homes": computedStr("Where each user of `users` has their default server's home at a spawn now, as the hub decides it from the cluster, as compact JSON: " +
			"`jsondecode(data.jupyter_home_claims.<name>.homes)` is an object by username, each an object of " +
			"`home` (`directory`: their directory of `shared_claim`; `claim`: a claim of their own, or the copy it was switched to; `refused`: the hub refuses the spawn now, `reason` says why: " +
			"a move, copy, merge or rebind under way, a missing shared claim), `claim` (the claim mounted: `shared_claim` for a directory; for `refused` the claim whose state refuses it), " +
			"`sub_path` (the user's directory of `shared_claim` under `sub_path_template` and `slug_scheme`, whatever the home is), " +
			"`moved` (`true` when the claim is a finished move of that very directory of `shared_claim`, per the move's record), `moved_from` (the directory the record names, for any claim a move made), " +
			"`method` (that move's: `split`, zero copy, the claim's volume is the directory itself; or `directory-copy`, the directory was copied and is stale since), `reason` " +
			"and `earlier_places` (for a directory: the places `shared_claim` records the home had before a move by rename, `on_layout_change = \"move\"` of jupyter_home_storage; until the user's next spawn renames it, the home may still be at one of them). " +
			"With `layout = \"per_user\"` the hub's rule: the claim `pvc_name_template` names exists → it is the home once its move finished (a switched copy followed), the spawn is refused while it is under way; " +
			"it does not exist → its switched copy, else the directory; the claim, or its switched copy, was merged into the directory (marked merged with its own UID) → the directory, " +
			"and a merge not finished refuses the spawn. " +
			"Decided from the claims the List finds, so keep `label_selector` at its default (a claim outside the selector counts as missing), " +
			"and for the claim name the template gives (a KubeSpawner state remembering a copy since deleted is not seen). Named servers are not resolved. " +
			"Null without `shared_claim`. No pod runs: what a directory holds is not read."),
		"shared_claim_status": schema.SingleNestedAttribute{Computed: true,
			MarkdownDescription: "What the cluster shows of `shared_claim` (null without it): `exists`, `uid`, `access_modes`, `storage_class_name`, `phase`, `volume_name` and `deleting`. " +
				"The volume's source is not read (a request more); see the PersistentVolume `volume_name`.",
			Attributes: map[string]schema.Attribute{
				"exists":             schema.BoolAttribute{Computed: true, MarkdownDescription: "Whether the claim exists; when not, the other fields are empty and a warning says so."},
				"uid":                computedStr("The claim's UID; a move's record names it."),
				"access_modes":       schema.ListAttribute{Computed: true, ElementType: types.StringType, MarkdownDescription: "Access modes, e.g. `[\"ReadWriteMany\"]`."},
				"storage_class_name": computedStr("Its storage class; empty when it names none."),
				"phase":              computedStr("`Pending`, `Bound` or `Lost`."),
				"volume_name":        computedStr("Its PersistentVolume; empty until bound."),
				"deleting":           schema.BoolAttribute{Computed: true, MarkdownDescription: "Whether the claim is being deleted."},
			}},
	}
}

// readHomes sets homes and shared_claim_status from the List (live) and
// the shared claim (nil when it does not exist).
func (m *homesModel) readHomes(namespace string, live []claims.Claim, shared *claims.Claim, diags *diag.Diagnostics) {
	m.Homes, m.SharedClaimStatus = types.StringNull(), nil
	if m.SharedClaim.IsNull() {
		return
	}
	sh := &safety.SharedHome{Claim: m.SharedClaim.ValueString(), SubPathTemplate: orDefault(m.SubPathTemplate, defaultSubPathTemplate)}
	cfg := safety.Config{Namespace: namespace, NameTemplate: orDefault(m.PVCNameTemplate, defaultNameTemplate),
		Scheme: kubespawner.Scheme(orDefault(m.SlugScheme, string(kubespawner.SchemeSafe))), Shared: sh}
	if m.Layout.ValueString() == layoutPerUser {
		cfg.SplitFrom, cfg.Shared = sh, nil
	}
	users := usersMap.names(m.Users, diags)
	if diags.HasError() {
		return
	}
	m.Homes = types.StringValue(homesJSON(users, safety.HubHomes(cfg, users, live, shared)))
	st := &sharedClaimStatusModel{Exists: types.BoolValue(shared != nil), UID: types.StringValue(""), StorageClass: types.StringValue(""),
		Phase: types.StringValue(""), VolumeName: types.StringValue(""), Deleting: types.BoolValue(false), AccessModes: types.ListValueMust(types.StringType, nil)}
	if shared == nil {
		diags.AddAttributeWarning(path.Root("shared_claim"), "The shared claim does not exist",
			fmt.Sprintf("Claim %s/%s was not found. Every home still in a directory is on it: check shared_claim and namespace. "+
				"Meanwhile a server of the shared layout waits for the claim, and the hub moving homes out of it refuses every user without a claim of their own.", namespace, sh.Claim))
	} else {
		st.UID, st.StorageClass = types.StringValue(shared.UID), types.StringValue(shared.StorageClass)
		st.Phase, st.VolumeName, st.Deleting = types.StringValue(shared.Phase), types.StringValue(shared.VolumeName), types.BoolValue(shared.Deleting)
		modes := make([]attr.Value, len(shared.AccessModes))
		for i, am := range shared.AccessModes {
			modes[i] = types.StringValue(am)
		}
		st.AccessModes = types.ListValueMust(types.StringType, modes)
	}
	m.SharedClaimStatus = st
}

func orDefault(v types.String, def string) string {
	if v.IsNull() || v.IsUnknown() {
		return def
	}
	return v.ValueString()
}

// homesJSON is the `homes` value: one object per user, every field
// written, in the order of users (sorted), as encoding/json writes a map.
func homesJSON(users []string, homes map[string]safety.Home) string {
	return sortedJSONObject(users, 140, func(b []byte, u string) []byte {
		h := homes[u]
		b = appendJSONString(append(b, `{"home":`...), h.Kind)
		b = appendJSONString(append(b, `,"claim":`...), h.Claim)
		b = appendJSONString(append(b, `,"sub_path":`...), h.SubPath)
		b = strconv.AppendBool(append(b, `,"moved":`...), h.Moved)
		b = appendJSONString(append(b, `,"moved_from":`...), h.MovedFrom)
		b = appendJSONString(append(b, `,"method":`...), string(h.Method))
		b = appendJSONString(append(b, `,"reason":`...), h.Reason)
		b = append(b, `,"earlier_places":[`...)
		for i, d := range h.EarlierPlaces {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, d)
		}
		return append(b, "]}"...)
	})
}
