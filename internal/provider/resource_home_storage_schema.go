package provider

import (
	"context"
	"fmt"
	"regexp"

	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/listvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/booldefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/int64default"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringdefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/claims"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/kubespawner"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/safety"
)

type homeStorageModel struct {
	ID                    types.String    `tfsdk:"id"`
	Namespace             types.String    `tfsdk:"namespace"`
	AccessMode            types.String    `tfsdk:"access_mode"`
	StorageClassName      types.String    `tfsdk:"storage_class_name"`
	StorageClass          *scModel        `tfsdk:"storage_class"`
	Capacity              types.String    `tfsdk:"capacity"`
	PVCNameTemplate       types.String    `tfsdk:"pvc_name_template"`
	SlugScheme            types.String    `tfsdk:"slug_scheme"`
	Users                 types.String    `tfsdk:"users"`
	Labels                types.Map       `tfsdk:"labels"`
	Annotations           types.Map       `tfsdk:"annotations"`
	OnModeChange          types.String    `tfsdk:"on_mode_change"`
	AllowDataLoss         types.Bool      `tfsdk:"allow_data_loss"`
	DeletionPolicy        types.String    `tfsdk:"deletion_policy"`
	ChangeClass           types.String    `tfsdk:"change_class"`
	Changes               types.String    `tfsdk:"changes"`
	Claims                types.String    `tfsdk:"claims"`
	LegacyUsers           types.String    `tfsdk:"legacy_users"`
	ColocationRequired    types.Bool      `tfsdk:"colocation_required"`
	SpawnerSettings       types.String    `tfsdk:"spawner_settings"`
	Migration             *migrationModel `tfsdk:"migration"`
	MigrationPlan         types.String    `tfsdk:"migration_plan"`
	MigrationStatus       types.String    `tfsdk:"migration_status"`
	ExtraUserVolumes      types.List      `tfsdk:"extra_user_volumes"`
	UserNamespaceTemplate types.String    `tfsdk:"user_namespace_template"`
	SharedHome            *sharedModel    `tfsdk:"shared_home"`
	OnLayoutChange        types.String    `tfsdk:"on_layout_change"`
	Layout                types.String    `tfsdk:"layout"`
}

type sharedModel struct {
	ClaimName       types.String `tfsdk:"claim_name"`
	SubPathTemplate types.String `tfsdk:"sub_path_template"`
	DirectoryUID    types.Int64  `tfsdk:"directory_uid"`
	DirectoryGID    types.Int64  `tfsdk:"directory_gid"`
	DirectoryMode   types.String `tfsdk:"directory_mode"`
	InitImage       types.String `tfsdk:"init_image"`
	CreateClaim     types.Bool   `tfsdk:"create_claim"`
	Capacity        types.String `tfsdk:"capacity"`
}

type migrationModel struct {
	Method              types.String `tfsdk:"method"`
	CopyImage           types.String `tfsdk:"copy_image"`
	TargetNameTemplate  types.String `tfsdk:"target_name_template"`
	DeleteCopiedSources types.Bool   `tfsdk:"delete_copied_sources"`
	BatchSize           types.Int64  `tfsdk:"batch_size"`
	MaxParallel         types.Int64  `tfsdk:"max_parallel"`
	SkipRunning         types.Bool   `tfsdk:"skip_running"`
	RebindDrivers       types.List   `tfsdk:"rebind_drivers"`
}

type scModel struct {
	Name                 types.String `tfsdk:"name"`
	Provisioner          types.String `tfsdk:"provisioner"`
	Parameters           types.Map    `tfsdk:"parameters"`
	ReclaimPolicy        types.String `tfsdk:"reclaim_policy"`
	VolumeBindingMode    types.String `tfsdk:"volume_binding_mode"`
	AllowVolumeExpansion types.Bool   `tfsdk:"allow_volume_expansion"`
	MountOptions         types.List   `tfsdk:"mount_options"`
}

func homeStorageSchema() schema.Schema {
	computedStr := func(desc string) schema.StringAttribute {
		return schema.StringAttribute{Computed: true, MarkdownDescription: desc}
	}
	return schema.Schema{
		MarkdownDescription: "The home storage of one JupyterHub deployment: access mode, storage class, capacity and claim naming, " +
			"and the per-user home claims Terraform pre-provisions.\n\n" +
			"Every plan reads the live claims (one paginated List) and says in `change_class` whether the change is " +
			"`none`, `safe` or `destructive`. A change that would leave live claims in another access mode or class fails " +
			"at plan time naming the users, unless `on_mode_change` says how to proceed. Home data is deleted only when " +
			"`allow_data_loss = true` says so.\n\n" +
			"**What is guaranteed across plan and apply.** Every file a user wrote stays on a claim that exists, unless an apply whose plan " +
			"showed that claim's deletion (`destructive`, by UID in `changes`, with `allow_data_loss`) deleted it; and no apply does anything its plan did not show:\n\n" +
			"- `changes` lists, per user, what the plan does and to which claim (its UID). OpenTofu plans again at apply, also for a saved plan, and stops " +
			"before anything is done when that differs: a user's server created a claim since the plan, or a claim was replaced. The message is " +
			"\"Provider produced inconsistent final plan\" naming `changes`; it is the intended stop. Plan again.\n" +
			"- Each step that deletes a claim (recreate, `delete_copied_sources`, destroy with `deletion_policy = \"delete\"`, a rebind once the volume is retained) " +
			"or copies into one first checks, right before it, that the claim is the object the plan showed and that no pod mounts it; a copy writes only into " +
			"the claim it created empty; an old home is deleted only after a verification made right then finds everything of it in the new home.\n" +
			"- A replacement (`-replace`, a new `namespace`, a tainted resource) deletes no claim: only a destroy, whose plan lists the claims, deletes them.\n" +
			"- Settings that change where homes are looked for (`namespace`, `user_namespace_template`, `pvc_name_template`, `slug_scheme`) fail the plan " +
			"naming the homes they would leave behind, unless `on_mode_change = \"keep_existing\"`.\n" +
			"- A plan that cannot read the cluster cannot show deletions: with `allow_data_loss` and `recreate` or `delete_copied_sources` it fails.\n\n" +
			"Limits: between a step's check and the step there are milliseconds in which a server may start; Kubernetes then keeps the claim until that " +
			"server stops, and deletes it (the plan showed that deletion). A hub still running an older configuration creates claims by its own settings; plans and " +
			"checks see them, but cannot prevent them.",
		Attributes: map[string]schema.Attribute{
			"id": schema.StringAttribute{Computed: true, MarkdownDescription: "The namespace.",
				PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown()}},
			"namespace": schema.StringAttribute{Required: true, MarkdownDescription: "Namespace of the JupyterHub deployment. Changing it replaces the resource; the claims in the old namespace stay (a replacement deletes no claim), and the plan fails naming them unless `on_mode_change = \"keep_existing\"`.",
				Validators:    []validator.String{namespaceValidator()},
				PlanModifiers: []planmodifier.String{stringplanmodifier.RequiresReplace()}},
			"access_mode": schema.StringAttribute{Optional: true, Computed: true, Default: stringdefault.StaticString(claims.RWO),
				MarkdownDescription: "`ReadWriteOnce` (default): a user's pods must share a node (co-location). `ReadWriteMany`: servers can run on any node; needs a shared-file-system provisioner. " +
					"`ReadWriteOncePod`: one pod per claim in the whole cluster. Existing claims keep their mode (it is immutable): see `on_mode_change`.",
				Validators: []validator.String{stringvalidator.OneOf(claims.RWO, claims.RWX, claims.RWOP)}},
			"storage_class_name": schema.StringAttribute{Optional: true,
				MarkdownDescription: "An existing StorageClass for the claims. Leave unset (and no `storage_class`) for the cluster's default class.",
				Validators: []validator.String{
					stringvalidator.LengthAtLeast(1),
					stringvalidator.ConflictsWith(pathExpr("storage_class")),
				}},
			"capacity": schema.StringAttribute{Required: true,
				MarkdownDescription: "Size of each home claim, a Kubernetes quantity such as `10Gi`. Growing it resizes managed claims in place when the class has `allowVolumeExpansion`; shrinking is refused.",
				Validators:          []validator.String{quantityValidator{}}},
			"pvc_name_template": schema.StringAttribute{Optional: true, Computed: true, Default: stringdefault.StaticString("claim-{username}"),
				MarkdownDescription: "KubeSpawner's `pvc_name_template`. Default `claim-{username}`: one home per user, shared by all of the user's servers. " +
					"A template that names the server (`{servername}`, `{user_server}`, e.g. `claim-{user_server}`) gives each named server a claim of its own: those claims are homes too, " +
					"found in the cluster (KubeSpawner creates them at the server's first spawn; the provider never does), classified, migrated and reported like the default server's, " +
					"keyed `user/server` in `changes`, `claims`, `migration_plan` and `migration_status`, and never recreated.",
				Validators: []validator.String{templateValidator{}}},
			"slug_scheme": schema.StringAttribute{Optional: true, Computed: true, Default: stringdefault.StaticString(string(kubespawner.SchemeSafe)),
				MarkdownDescription: slugSchemeDescription, Validators: []validator.String{slugSchemeValidator()}},
			"users": schema.StringAttribute{Optional: true,
				MarkdownDescription: "JupyterHub users whose claims Terraform creates and manages, as one JSON object from each raw username to `{}` (no per-user settings yet): " +
					"`users = jsonencode({ for u in var.users : u => {} })` for a list or set of names, or `jsonencode({ alice = {}, bob = {} })`. " +
					"Names JupyterHub refuses (with a `/`, or white space at either end) are refused. " +
					"Claims KubeSpawner made for other users are read and classified but never modified. " +
					"Removing a user leaves the claim in place. Listing users is optional: with `storage_pvc_ensure` (in `spawner_settings`) KubeSpawner creates a missing home at the user's first spawn. " +
					"Plans show a change of `users` user by user (`+ zed = {}`), the unchanged users hidden.\n\n" +
					"One JSON string rather than a list, set or map because of plan time at tens of thousands of users: OpenTofu (1.12) diffs a list or set against its prior value in time and memory that grow with " +
					"the square of its length, in every plan and even when nothing changed (a no-change plan over 20,000 claims took 26 s with the users in a list), and both OpenTofu and the plugin framework convert, " +
					"walk and encode a map entry by entry in every request (with 20,000 users in a map a no-change plan took 7 times as long as without them); a string is passed whole. " +
					"For the same reason a JSON array is refused. Each name is read in Unicode NFC, as OpenTofu reads every string, and listed once. " +
					"With many users, keep the names in a file and write `users = file(\"users.json\")` with the file in this form, which skips evaluating the expression: " +
					"`{\"alice\":{},\"bob\":{}}`.",
				Validators: []validator.String{usersMap}},
			"user_namespace_template": schema.StringAttribute{Optional: true,
				MarkdownDescription: "KubeSpawner's `user_namespace_template` when each user's server and claims live in the user's own namespace (`enable_user_namespaces`), e.g. `{hubnamespace}-{username}` " +
					"(`{hubnamespace}` is `namespace`). Claims are then read with one cluster-wide List (the provider needs `list` on claims and pods in every namespace, see examples/rbac), " +
					"a claim counts only in its user's namespace, and new claims, migrations and copies happen there. `spawner_settings` turns user namespaces on with this template.",
				Validators: []validator.String{namespaceTemplateValidator{}}},
			"extra_user_volumes": schema.ListAttribute{Optional: true, ElementType: types.StringType,
				MarkdownDescription: "Name templates of other per-user claims that a user's servers mount besides the home, e.g. `[\"nebi-workspaces-{username}\"]` (Nebari's data-science-pack). " +
					"Their access mode counts for co-location: a `ReadWriteOnce` workspace pins its user's pods to one node as a `ReadWriteOnce` home does, so such users are in `legacy_users`. " +
					"`on_mode_change` applies to them as to homes, except that they are only kept (`keep_existing`) or rebound (`migrate`), never recreated or copied. They are never created or deleted.",
				Validators: []validator.List{listvalidator.ValueStringsAre(templateValidator{})}},
			"labels": schema.MapAttribute{Optional: true, ElementType: types.StringType,
				MarkdownDescription: "Extra labels for created claims, besides the ones KubeSpawner uses (so that it adopts them)."},
			"annotations": schema.MapAttribute{Optional: true, ElementType: types.StringType,
				MarkdownDescription: "Extra annotations for created claims."},
			"on_mode_change": schema.StringAttribute{Optional: true, Computed: true, Default: stringdefault.StaticString(string(safety.OnModeChangeFail)),
				MarkdownDescription: "What to do with live claims whose access mode or class differs from the configuration: `fail` (default; the plan fails naming them), " +
					"`keep_existing` (they stay as they are, their users are listed in `legacy_users` and keep co-location; safe), " +
					"`migrate` (move them to the new mode keeping every byte, see `migration`; safe), " +
					"or `recreate` (delete and recreate them empty; needs `allow_data_loss`; destructive).",
				Validators: []validator.String{stringvalidator.OneOf(string(safety.OnModeChangeFail), string(safety.OnModeChangeKeepExisting), string(safety.OnModeChangeMigrate), string(safety.OnModeChangeRecreate))}},
			"allow_data_loss": schema.BoolAttribute{Optional: true, Computed: true, Default: booldefault.StaticBool(false),
				MarkdownDescription: "Must be `true` for any operation that deletes a home claim (`on_mode_change = \"recreate\"`, `deletion_policy = \"delete\"`)."},
			"deletion_policy": schema.StringAttribute{Optional: true, Computed: true, Default: stringdefault.StaticString(safety.DeletionRetain),
				MarkdownDescription: "On destroy: `retain` (default) leaves every claim and its data; `delete` deletes managed claims, only together with `allow_data_loss = true`, " +
					"and only the claims the destroy plan listed (each still the object the plan read, with no pod mounting it). A replacement deletes no claim.",
				Validators: []validator.String{stringvalidator.OneOf(safety.DeletionRetain, safety.DeletionDelete)}},
			"change_class": computedStr("`none`, `safe` or `destructive`: what this plan does to home data, read from the live cluster. A plan that changes nothing keeps the value of the last apply (so that it stays empty)."),
			"changes": computedStr("JSON object of what this plan does to claims, by username (`user/server` for a named server's own claim, `user (claim)` for a claim of `extra_user_volumes`): the `action` " +
				"(`create`, `resize`, `recreate`, `delete-source` or `migrate`), the `claim`, the `uid` of the claim the plan read (the object the action is for) and, for `migrate`, the `method`. " +
				"Apply does exactly these: OpenTofu plans again at apply, and when the cluster no longer gives the same changes (a user's server created a claim, a claim was replaced) " +
				"it stops before anything is done with \"Provider produced inconsistent final plan\" naming `changes`; plan again. Each step that deletes a claim or copies into one " +
				"checks again, right before it, that the claim is the object the plan showed and that no pod mounts it. Like `change_class`, a plan that changes nothing keeps the last value."),
			"claims": schema.StringAttribute{Computed: true,
				MarkdownDescription: "JSON of the home claims: the managed ones and those KubeSpawner made that match the template. " +
					"`users` maps each username (`user/server` for a named server's own claim) to its claim's `name` and the fields in which the claim differs from `default`, the most common claim " +
					"(`null` when there is none). The fields are `access_mode` (comma-separated when several), `storage_class_name` (empty when none is named), " +
					"`capacity` (requested size), `phase` (`Pending`, `Bound` or `Lost`; empty for a claim apply has just created, until the next refresh) " +
					"and `managed` (listed in `users`). A user whose home was copied to a new claim (`on_mode_change = \"migrate\"`) is listed with that claim. With `c = jsondecode(claims)`, every user's full claim is " +
					"`{ for user, e in c.users : user => merge(c.default, e) }`; plans show changes to it user by user. " +
					"(One compact string rather than a map of objects keeps plans fast at thousands of users.)"},
			"legacy_users": schema.StringAttribute{Computed: true,
				MarkdownDescription: "JSON object from each user kept on a claim that differs from the configuration (`keep_existing`) to that claim's name (comma-separated when several of the user's claims differ: " +
					"the home, a named server's own claim, a claim of `extra_user_volumes`), compact with the keys sorted, e.g. `{\"alice\":\"claim-alice\"}`; `{}` when there is none. Information only: the hub keeps co-location for them by reading, at each spawn, the claims a server mounts; " +
					"`keys(jsondecode(jupyter_home_storage.<name>.legacy_users))` lists the users. " +
					"One string rather than a map keeps plans fast when every user is legacy, as after a switch to `ReadWriteMany` with `keep_existing` (see `users`)."},
			"colocation_required": schema.BoolAttribute{Computed: true,
				MarkdownDescription: "True while some user's home cannot be shared across nodes (the mode is not ReadWriteMany, or a legacy claim is not)."},
			"migration_plan": computedStr("JSON object, by username (keyed as in `changes`), of what `on_mode_change = \"migrate\"` does in this apply: `method` (`rebind` or `copy`), `claim`, `volume` (rebind) or `target` (copy), `from` and `to` modes, " +
				"or, for a user left for a later apply, `method` = `none` and the `reason` (a running server, `batch_size`). `{}` when nothing is migrated. Like `change_class`, a plan that changes nothing keeps the last value."),
			"migration_status": computedStr("JSON object, by username (keyed as in `changes`), of the migrations the last apply ran: `method`, `volume` or `target`, the `step` reached (rebind: `done` when finished, " +
				"`pending`, `retained`, `released` or `rebound` when it stopped there; copy: `switched` when finished, `pending`, `target-created`, `copying` or `verified`) and `error` if it failed. " +
				"A later apply resumes an unfinished migration from the cluster's record of it."),
			"spawner_settings": computedStr("JSON object of the KubeSpawner settings this storage implies (`storage_access_modes`, `storage_class`, `storage_capacity`, `pvc_name_template`, `slug_scheme`, `storage_pvc_ensure`, the home `volumes` and `volume_mounts`)."),
			"shared_home": schema.SingleNestedAttribute{Optional: true,
				MarkdownDescription: "The shared layout: every user's home is a directory of one claim (an existing one, or one this resource creates: `create_claim`), as zero-to-jupyterhub's `singleuser.storage.type: static` " +
					"and Nebari's classic deployments keep them, instead of a claim per user. Servers mount the user's directory (`sub_path_template`) of `claim_name`; an init container " +
					"creates a missing directory with `directory_uid`, `directory_gid` and `directory_mode` (kubelet would create it owned by root) and leaves an existing one as it is. " +
					"KubeSpawner creates no per-user claim (`storage_pvc_ensure = false`) and deletes none when a user or a named server is deleted (`delete_pvc = false`: per-user claims of an earlier layout, kept, are homes too). No other mount of the home volume, mount over the home's path or volume of the shared claim is accepted from `jupyter_spawner_config` (every server would get every home). " +
					"The provider never deletes the shared claim, and destroy deletes no claim in this layout; it creates the claim only with `create_claim`, and changes nothing of it but the list of earlier places of `on_layout_change = \"move\"` (an annotation).\n\n" +
					"A change that moves homes (another `claim_name`, `sub_path_template`, `slug_scheme` or `namespace`, or a switch between this layout and per-user claims, also onto listed users' claims when the resource is new) " +
					"fails the plan naming, old and new, every listed user whose default server's home moves, and an example of an unlisted user's or a named server's home that moves, " +
					"unless `on_layout_change = \"keep\"`; a change that would give a user the directory holding the old homes (`home/{username}` to `{username}`: a user named `home`) fails even then. " +
					"When the resource is new the plan cannot see which directories the hub mounts now: `sub_path_template` and `slug_scheme` must be what it uses (the plan warns). " +
					"`access_mode` is the shared claim's mode (the plan checks it); it should be `ReadWriteMany`: a `ReadWriteOnce` claim works only on a one-node cluster (the plan warns). " +
					"Not with `user_namespace_template` (a claim is mountable only in its namespace). The init container runs as root with only the CHOWN, FOWNER and DAC_OVERRIDE capabilities, " +
					"which Pod Security's `baseline` level allows and `restricted` does not.",
				Attributes: map[string]schema.Attribute{
					"claim_name": schema.StringAttribute{Required: true, MarkdownDescription: "The claim holding every home, in `namespace` (z2jh's `singleuser.storage.static.pvcName`).",
						Validators: []validator.String{sharedClaimValidator()}},
					"sub_path_template": schema.StringAttribute{Optional: true, Computed: true, Default: stringdefault.StaticString("{username}"),
						MarkdownDescription: "The user's directory in the claim, a KubeSpawner template relative to the claim's root: `{username}` (default, z2jh's `static.subPath`), `home/{username}` (Nebari classic). " +
							"`{username}` follows `slug_scheme`; `{escaped_username}` keeps the names KubeSpawner gave before version 7.",
						Validators: []validator.String{subPathTemplateValidator{}}},
					"directory_uid": schema.Int64Attribute{Optional: true, Computed: true, Default: int64default.StaticInt64(1000),
						MarkdownDescription: "Owner of a directory the init container creates; default 1000 (jovyan).", Validators: []validator.Int64{int64validator.AtLeast(0)}},
					"directory_gid": schema.Int64Attribute{Optional: true, Computed: true, Default: int64default.StaticInt64(100),
						MarkdownDescription: "Group of a directory the init container creates; default 100 (users).", Validators: []validator.Int64{int64validator.AtLeast(0)}},
					"directory_mode": schema.StringAttribute{Optional: true, Computed: true, Default: stringdefault.StaticString("0700"),
						MarkdownDescription: "Mode of a directory the init container creates, in octal; default `0700`.",
						Validators:          []validator.String{stringvalidator.RegexMatches(octalModeRE, "must be an octal mode such as \"0700\" or \"2775\"")}},
					"init_image": schema.StringAttribute{Required: true,
						MarkdownDescription: "Image of the init container that creates a missing directory; it needs `sh`, `ls`, `mkdir`, `chown`, `chmod` and, for `on_layout_change = \"move\"`, `mv -T` (e.g. a busybox or Alpine image)."},
					"create_claim": schema.BoolAttribute{Optional: true, Computed: true, Default: booldefault.StaticBool(false),
						MarkdownDescription: "Create `claim_name` when it does not exist (default `false`: it must exist, and a plan without it fails). Apply creates it right before anything else it changes, in `namespace`, " +
							"with `access_mode`, the resource's storage class (`storage_class` or `storage_class_name`; the cluster's default when neither is set), `shared_home.capacity`, " +
							"the resource's `labels` and `annotations`, the label `app.kubernetes.io/managed-by: terraform-provider-jupyter` and the annotation " +
							"`jupyter-infra.github.io/created-by: jupyter_home_storage.shared_home.create_claim`; the plan warns that it does and is `safe`. The claim is not listed in `changes`, which is by user. " +
							"A claim that exists is used as it is: never resized, relabelled or otherwise changed, also when someone made it between plan and apply (apply then checks its mode as the plan does).\n\n" +
							"It never creates a claim that existed: when the state shows that the last apply used a claim of that name (in this namespace), a volume was bound to one " +
							"(a PersistentVolume whose `claimRef` names it with a UID; read only when the claim is missing), or a home was moved out of one, the plan fails naming the claim: a new, empty claim would give every user an empty home. " +
							"Restore the claim (bind its retained volume again, or from a backup), or create an empty one yourself if starting over is intended. " +
							"Nor while homes move out of the shared layout (`layout = \"per_user\"`): the homes not yet moved are directories of the claim that is missing. " +
							"The provider never deletes the claim: not on destroy, also with `deletion_policy = \"delete\"` (the destroy plan warns that it stays), not on replacement, not when `create_claim` is turned off or `shared_home` removed. " +
							"With `ReadWriteMany` it needs a storage class that serves it (`storage_class` or `storage_class_name`)."},
					"capacity": schema.StringAttribute{Optional: true,
						MarkdownDescription: "Size of the claim `create_claim` creates, a Kubernetes quantity such as `500Gi`; required with `create_claim`, and only then. " +
							"It is the whole file system's, not a user's: the resource's `capacity` is each user's home claim's (KubeSpawner's `storage_capacity`), and the shared claim holds every home. " +
							"Some provisioners enforce it (Longhorn, CephFS quotas, Azure Files), others ignore it (NFS subdirectories, EFS). A claim that exists is never resized to it.",
						Validators: []validator.String{quantityValidator{}}},
				}},
			"on_layout_change": schema.StringAttribute{Optional: true, Computed: true, Default: stringdefault.StaticString(string(safety.OnLayoutChangeFail)),
				MarkdownDescription: "What to do when a change moves users' homes to other directories or claims (see `shared_home` and `layout`): `fail` (default; the plan names every listed user whose home moves), " +
					"`keep` (apply it: the old directories and claims stay as they are, untouched and no longer mounted, and those users start in the new ones; on the same shared claim the old place is recorded in its annotation `jupyter-infra.github.io/home-left-at`, " +
					"and, as for `move`, a template whose directories can be those old homes of other users is refused), " +
					"`move` (in the shared layout, when `sub_path_template` or `slug_scheme` changes on the same claim: each user's directory is renamed to its new name at the user's next spawn, see below), " +
					"or `migrate` (with `layout = \"per_user\"` and `shared_home`: each listed user's directory becomes a claim of their own, zero copy or by a copy; " +
					"with `layout = \"shared\"`: each listed user's claim is copied into their directory of `shared_home`'s claim, see **Merge** below and `layout`).\n\n" +
					"**Merge** (consolidation: per-user claims into the shared claim). From the per-user layout, `layout = \"shared\"` with `shared_home` and `on_layout_change = \"migrate\"` " +
					"gives the hub the settings of a move between layouts: at each spawn it mounts the user's claim (KubeSpawner's name, `pvc_name_template`) until it was merged, and the user's directory " +
					"once it was, and for users without a claim (KubeSpawner creates none meanwhile). The first apply gives the hub those settings and copies no one (the hub running until then would mount a claim during its copy); " +
					"from the next apply on each listed user is merged (up to `migration.batch_size` per apply; `migration.copy_image` needed; users whose claim or directory a running pod uses are left for a later apply " +
					"with `migration.skip_running`, else the plan fails naming them): a Job makes the directory (owner and mode as `shared_home` says) and refuses one that holds files, or an earlier place of the home that does; " +
					"the claim gets the record `jupyter-infra.github.io/home-merge` (from then on the hub refuses the user's spawns); a Job copies the claim, mounted read-only, into the directory and compares both " +
					"(rsync with owners, modes, hard links, sparse files, ACLs and extended attributes, then a checksum comparison that must find nothing); the claim is marked `jupyter-infra.github.io/home-merged` with its own UID, " +
					"and the user's next server mounts the directory. Every write is by UID: a claim made again is never taken for a merged one. The claims are kept as they were (stale once merged), never deleted. " +
					"An apply stopped at any step resumes; a merge not finished fails every other plan, saying how to finish it or undo it (remove the record: the claim is the home again). " +
					"Only listed users' default servers are merged; other claims stay mounted until they are. Once every listed user is merged, drop `on_layout_change = \"migrate\"`: the plain shared layout " +
					"fails naming each claim not merged (what it holds is not in the directory) unless `on_layout_change = \"keep\"`; the per-user layout fails naming merged users (its hub refuses them: their home is the directory).\n\n" +
					"**Move by rename.** The plan names every listed user whose directory is renamed. It fails where the new template and any earlier place (the old one, and every place the claim recorded before) can give two users one directory, or one inside another's, " +
					"for any names: KubeSpawner's two schemes overlap (user `bob-` is `bob-2d` under `escape`, and `bob-2d` is user `bob-2d`'s `safe` name), so the same template under the other scheme is refused: " +
					"move into a directory no old name can be, one with a character names never have (e.g. `homes_v2/{username}`), or keep the old names with `{escaped_username}`. " +
					"It also fails where a listed user's new directory is another listed user's old one or lies inside an old home, and for a move from a directory per server (`{user_server}`) to one per user (a rename cannot merge them); " +
					"from one per user to one per server, the default server takes the home and named servers start in directories of their own. " +
					"Apply renames nothing: it records the old place, as a template any slug scheme expands alike (`{username}` of the `escape` scheme is `{escaped_username}`), " +
					"in the shared claim's annotation `jupyter-infra.github.io/home-moved-from` (the provider needs `patch` on claims), and the layout's init container, when it finds the user's directory missing " +
					"and the home at a place that annotation lists, renames it there: one rename on the shared file system, nothing copied, owner, mode and files kept. " +
					"Every user is moved so, listed or not, whenever they next start a server; until then their home stays where it was. A rename never replaces a directory that holds files: " +
					"a home found at two places with files (the new directory and an old one, or two old ones), or whose old place is a symbolic link, is not renamed, and the user's spawn fails naming both until a person keeps one. " +
					"The list on the claim only grows (a home is found at an earlier place however many changes later; going back is one more move), and it is read at every plan (a list the claim lost is written back from what the last apply gave the hub, with a warning): " +
					"it survives a replaced resource or a removed state, and the move out of the shared layout renames a home from there too before it moves it. " +
					"`init_image` needs an `mv` with `-T` (current BusyBox and Alpine images, GNU coreutils): without it the rename fails and so does the spawn, nothing moved. Not across claims or layouts, and not for a `{user_server}` path of the `escape` scheme that continues after it (the plan says so).",
				Validators: []validator.String{stringvalidator.OneOf(string(safety.OnLayoutChangeFail), string(safety.OnLayoutChangeKeep), string(safety.OnLayoutChangeMove), string(safety.OnLayoutChangeMigrate))}},
			"layout": schema.StringAttribute{Optional: true,
				MarkdownDescription: "`shared` (every home a directory of `shared_home`'s claim; the default when `shared_home` is set) or `per_user` (a claim per user; the default otherwise). " +
					"`per_user` with `shared_home` set moves homes out of the shared layout, one user at a time: the hub decides at each spawn, mounting the user's claim when it exists and " +
					"their directory of `shared_home`'s claim when it does not (KubeSpawner creates no claim meanwhile), and refusing the spawn while the user's move is under way. " +
					"With `on_layout_change = \"migrate\"` apply moves each listed user (up to `migration.batch_size` per apply): a Job makes a missing directory, then the user's claim " +
					"(`pvc_name_template`, no storage class) and a PersistentVolume on that very directory (reclaim policy `Retain`, a volume handle of its own, reserved for the claim by UID) are made and bound. " +
					"Nothing is copied or deleted: the directory stays on the shared claim, and the user's next server mounts the same files through their claim. " +
					"The shared claim's volume must be a host path, NFS, `nfs.csi.k8s.io` or `efs.csi.aws.com` (without an access point); the provider needs to create PersistentVolumes (cluster-wide). " +
					"An apply stopped at any step resumes; a move not finished is never planned over (the plan says how to finish or undo it). " +
					"Once every user has a claim, remove `shared_home` (the plan fails unless `on_layout_change = \"keep\"`: users not listed who were never moved would get new, empty claims).",
				Validators: []validator.String{layoutValidator()}},
			"migration": schema.SingleNestedAttribute{Optional: true,
				MarkdownDescription: "How `on_mode_change = \"migrate\"` moves users to the new mode without losing data.\n\n" +
					"**Rebind** (zero copy) serves the same volume in the new mode. Per user, with the user's servers stopped: the volume's reclaim policy is set to `Retain` " +
					"(the old one is recorded on the volume), the claim is deleted, the volume is reserved for a new claim with the same name, labels and annotations in the new mode, " +
					"that claim is bound to it, and the reclaim policy is restored. No volume is ever deleted, and the claim only once its volume is retained. " +
					"Each step is decided from what the cluster shows (the record lives in an annotation on the volume), so an apply stopped at any point resumes where it stopped. " +
					"Rebind works for `ReadWriteMany` on Longhorn (`driver.longhorn.io` turns a volume used by an RWX claim into a shared one) and on the file-system drivers that serve any of their volumes to many nodes " +
					"(`nfs.csi.k8s.io`, `efs.csi.aws.com`, `cephfs.csi.ceph.com` and Rook's `NAMESPACE.cephfs.csi.ceph.com`), besides the drivers listed in `rebind_drivers`, and keeps the claim's class.\n\n" +
					"**Copy**, for every other home (EBS, PD, Azure Disk, Hetzner to EFS, NFS, CephFS, ...): a new claim (`target_name_template`) in the new mode and class, a Job (`copy_image`) " +
					"that mounts both and copies with rsync keeping ownership, permissions, times, hard links and sparse files, then compares both sides with checksums; the file count and bytes " +
					"are recorded on the source claim, and the user is switched to the new claim by that record: the hub file `jupyter_spawner_config` renders reads it at the user's next spawn, after KubeSpawner " +
					"restores the remembered claim name, and mounts the copy (no change of the hub's configuration, no restart); spawns during the copy are refused. The source claim is kept. A copy that takes longer than one apply waits for goes on; the next apply waits for it again. A user is switched only to a copy checked by the apply that switches: one that finished before that apply looked is brought up to date first (rsync sends only what changed), and none starts or is switched while a server uses the old home.\n\n" +
					"**Pod Security.** The copy and verification Jobs run rsync as root with only the capabilities `CHOWN`, `DAC_OVERRIDE`, `FOWNER` and `FSETID` (all others dropped, no privilege escalation), " +
					"which Pod Security's `baseline` level allows. Every plan that would copy or verify reads the namespace's `pod-security.kubernetes.io/enforce`, `warn` and `audit` labels (`get` on namespaces, " +
					"in the read-only ClusterRole of examples/rbac): where `restricted` is enforced, which admits no root container, the plan fails naming the namespace and the choices (label it `baseline` " +
					"for the migration, `method = \"rebind\"` where the backend allows it, or `keep_existing`); where `restricted` is only warned of or audited, the plan warns. A default level or exemptions " +
					"set in the API server's admission configuration are not visible through the API and are not read.\n\n" +
					"Users with a running server (a pod mounting the claim) are never touched. Needs the migrator ClusterRole (volumes) and, for copies, the copier Role (Jobs) of examples/rbac.",
				Attributes: map[string]schema.Attribute{
					"method": schema.StringAttribute{Optional: true, MarkdownDescription: "`auto` (default: rebind where the volume allows it, else copy), `rebind` (fail the plan for homes that cannot be rebound) or `copy`. " +
						"Moving homes out of the shared layout (`layout = \"per_user\"` with `shared_home`), `auto` moves each directory zero copy where the shared volume can serve it as a volume of its own (host path, NFS, `nfs.csi.k8s.io`, EFS), else by a copy into the user's new claim; `copy` always copies (homes onto another storage class); `rebind` cannot move a directory.",
						Validators: []validator.String{stringvalidator.OneOf("auto", "rebind", "copy")}},
					"copy_image": schema.StringAttribute{Optional: true, MarkdownDescription: "Image of the copy Job: it needs `sh` and `rsync` 3 (e.g. an Alpine image with rsync installed). Required when a home is copied, also from a directory of the shared claim.",
						Validators: []validator.String{stringvalidator.LengthAtLeast(1)}},
					"target_name_template": schema.StringAttribute{Optional: true, MarkdownDescription: "Name of a copied home's new claim, a KubeSpawner template such as `home-{username}`; it must differ from `pvc_name_template`. Required when a home is copied. " +
						"Where named servers have claims of their own, it must name the server too (e.g. `home-{user_server}`): the plan refuses to copy two homes into one claim.",
						Validators: []validator.String{templateValidator{}}},
					"delete_copied_sources": schema.BoolAttribute{Optional: true, MarkdownDescription: "Delete the source claims of finished copies, the old homes (their data was copied and verified; the copies are the users' homes). " +
						"Default `false`: sources are kept. Needs `allow_data_loss = true`; the plan is then `destructive` and lists them. " +
						"Right before each delete a Job (the `copy_image`, both claims mounted read-only) verifies again that the new home holds everything the old one does " +
						"(an rsync dry run by checksum; files changed in the new home since do not count); an old home that fails it is kept.",
					},
					"batch_size": schema.Int64Attribute{Optional: true, MarkdownDescription: "Users migrated per apply (default: all). The rest keep their claims, stay in `legacy_users` and are reported; the next apply continues.",
						Validators: []validator.Int64{int64validator.AtLeast(1)}},
					"max_parallel": schema.Int64Attribute{Optional: true, MarkdownDescription: "Users migrated at a time (default 4).",
						Validators: []validator.Int64{int64validator.AtLeast(1)}},
					"rebind_drivers": schema.ListAttribute{Optional: true, ElementType: types.StringType,
						MarkdownDescription: "CSI driver names (as in a volume's `spec.csi.driver`) that you know serve an existing volume as `ReadWriteMany` once a `ReadWriteMany` claim uses it: " +
							"homes on them are rebound to `ReadWriteMany`, besides the built-in `driver.longhorn.io`, `nfs.csi.k8s.io`, `efs.csi.aws.com` and `cephfs.csi.ceph.com`. " +
							"File-system drivers that serve any of their volumes to many nodes qualify (e.g. `filestore.csi.storage.gke.io`, or `file.csi.azure.com` when no volume of the class is a VHD disk); " +
							"block-volume drivers (EBS, PD, Azure Disk, Ceph RBD, ...) do not: a volume of theirs " +
							"bound to a `ReadWriteMany` claim fails to mount on a second node or, worse, is mounted twice by a file system that is not made for it. " +
							"Listing a driver only lets homes on it be rebound; `method = \"copy\"` ignores it.",
						Validators: []validator.List{listvalidator.SizeAtLeast(1), rebindDriversValidator{}, listvalidator.ValueStringsAre(csiDriverNameValidator{})}},
					"skip_running": schema.BoolAttribute{Optional: true, MarkdownDescription: "Default `true`: users with a running server are left for a later apply and reported (their pods stay co-located). " +
						"`false`: the plan fails naming them, so that they are stopped first."},
				},
			},
			"storage_class": schema.SingleNestedAttribute{Optional: true,
				MarkdownDescription: "A StorageClass this resource creates and uses. Changing `provisioner`, `parameters`, `reclaim_policy` or `volume_binding_mode` " +
					"(immutable in Kubernetes) replaces the class; existing claims and volumes keep working.",
				Attributes: map[string]schema.Attribute{
					"name":        schema.StringAttribute{Required: true, MarkdownDescription: "Class name.", Validators: []validator.String{stringvalidator.LengthAtLeast(1)}},
					"provisioner": schema.StringAttribute{Required: true, MarkdownDescription: "Provisioner, e.g. `driver.longhorn.io` or `efs.csi.aws.com`.", Validators: []validator.String{stringvalidator.LengthAtLeast(1)}},
					"parameters":  schema.MapAttribute{Optional: true, ElementType: types.StringType, MarkdownDescription: "Provisioner parameters."},
					"reclaim_policy": schema.StringAttribute{Optional: true, MarkdownDescription: "`Retain` (default: these are home directories) or `Delete`.",
						Validators: []validator.String{stringvalidator.OneOf("Retain", "Delete")}},
					"volume_binding_mode": schema.StringAttribute{Optional: true, MarkdownDescription: "`Immediate` (default) or `WaitForFirstConsumer`.",
						Validators: []validator.String{stringvalidator.OneOf("Immediate", "WaitForFirstConsumer")}},
					"allow_volume_expansion": schema.BoolAttribute{Optional: true, MarkdownDescription: "Whether claims can grow in place. Default `true`; changeable in place."},
					"mount_options":          schema.ListAttribute{Optional: true, ElementType: types.StringType, MarkdownDescription: "Mount options for new volumes."},
				},
			},
		},
	}
}

type quantityValidator struct{}

func (quantityValidator) Description(context.Context) string { return "a positive Kubernetes quantity" }
func (v quantityValidator) MarkdownDescription(ctx context.Context) string {
	return v.Description(ctx)
}
func (quantityValidator) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	s := req.ConfigValue.ValueString()
	q, err := resource.ParseQuantity(s)
	switch {
	case err != nil:
		resp.Diagnostics.AddAttributeError(req.Path, "Invalid quantity",
			fmt.Sprintf("%q is not a Kubernetes quantity. Use binary units such as \"10Gi\" or \"500Mi\" (\"GB\" is not a unit; \"10G\" means 10^9 bytes).", s))
	case q.Sign() <= 0:
		resp.Diagnostics.AddAttributeError(req.Path, "Capacity must be positive", fmt.Sprintf("%q: use a size such as \"10Gi\".", s))
	}
}

type templateValidator struct{}

func (templateValidator) Description(context.Context) string { return "a KubeSpawner name template" }
func (v templateValidator) MarkdownDescription(ctx context.Context) string {
	return v.Description(ctx)
}
func (templateValidator) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	t := req.ConfigValue.ValueString()
	err := kubespawner.ValidateTemplate(t)
	if err == nil {
		// Fields such as {userid} are valid for KubeSpawner but need values
		// only the hub knows; a claim name cannot be computed from them here.
		_, err = kubespawner.Expand(t, "jovyan", "", kubespawner.SchemeSafe)
	}
	if err != nil {
		resp.Diagnostics.AddAttributeError(req.Path, "Invalid name template",
			fmt.Sprintf("%v. Fields are written in braces, e.g. \"claim-{username}\"; usable fields: {username}, {servername}, {user_server} and their safe_, escaped_ and unescaped_ forms.", err))
	}
}

// csiDriverNameRE is a CSI driver name: at most 63 characters, alphanumerics
// with dashes and dots between (the CSI spec's GetPluginInfo name).
var csiDriverNameRE = regexp.MustCompile(`^[A-Za-z0-9]([-A-Za-z0-9.]{0,61}[A-Za-z0-9])?$`)

// csiDriverNameValidator checks an entry of migration.rebind_drivers.
type csiDriverNameValidator struct{}

func (csiDriverNameValidator) Description(context.Context) string { return "a CSI driver name" }
func (v csiDriverNameValidator) MarkdownDescription(ctx context.Context) string {
	return v.Description(ctx)
}
func (csiDriverNameValidator) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	if name := req.ConfigValue.ValueString(); !csiDriverNameRE.MatchString(name) {
		resp.Diagnostics.AddAttributeError(req.Path, "Invalid migration.rebind_drivers entry",
			fmt.Sprintf("migration.rebind_drivers: %q is not a CSI driver name: it names drivers as a volume's spec.csi.driver does, e.g. \"nfs.csi.k8s.io\" "+
				"(at most 63 characters, letters, digits, dashes and dots, beginning and ending with a letter or digit).", name))
	}
}

// rebindDriversValidator names each driver listed twice in
// migration.rebind_drivers.
type rebindDriversValidator struct{}

func (rebindDriversValidator) Description(context.Context) string {
	return "CSI driver names, each listed once"
}
func (v rebindDriversValidator) MarkdownDescription(ctx context.Context) string {
	return v.Description(ctx)
}
func (rebindDriversValidator) ValidateList(_ context.Context, req validator.ListRequest, resp *validator.ListResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	first := map[string]int{}
	for i, e := range req.ConfigValue.Elements() {
		s, ok := e.(types.String)
		if !ok || s.IsNull() || s.IsUnknown() {
			continue
		}
		if j, seen := first[s.ValueString()]; seen {
			resp.Diagnostics.AddAttributeError(req.Path.AtListIndex(i), "Repeated migration.rebind_drivers entry",
				fmt.Sprintf("migration.rebind_drivers: %q is listed more than once (rebind_drivers[%d] and rebind_drivers[%d]). List each driver once.", s.ValueString(), j, i))
			continue
		}
		first[s.ValueString()] = i
	}
}

type namespaceTemplateValidator struct{}

func (namespaceTemplateValidator) Description(context.Context) string {
	return "a KubeSpawner namespace template"
}
func (v namespaceTemplateValidator) MarkdownDescription(ctx context.Context) string {
	return v.Description(ctx)
}
func (namespaceTemplateValidator) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	t := req.ConfigValue.ValueString()
	hub := "jhub"
	ns, err := kubespawner.ExpandValues(t, kubespawner.Values{Username: "jovyan", HubNamespace: &hub}, kubespawner.SchemeSafe)
	if err == nil && !dns1123Label.MatchString(ns) {
		err = fmt.Errorf("it gives %q for user jovyan in namespace jhub, which is not a namespace name", ns)
	}
	if err != nil {
		resp.Diagnostics.AddAttributeError(req.Path, "Invalid user namespace template",
			fmt.Sprintf("%v. Write it as KubeSpawner does, e.g. \"{hubnamespace}-{username}\" or \"jupyter-{username}\".", err))
	}
}

// octalModeRE is a file mode in octal, with the setuid, setgid and sticky bits.
var octalModeRE = regexp.MustCompile(`^0?[0-7]{3,4}$`)

// subPathTemplateValidator checks shared_home.sub_path_template: a
// KubeSpawner template naming a directory below the claim's root.
// The validators and descriptions jupyter_home_storage and the
// jupyter_home_claims data source share: one attribute, one rule.

const slugSchemeDescription = "KubeSpawner's `slug_scheme`: `safe` (default, KubeSpawner ≥ 7) or `escape` (older deployments; Nebari's data-science-pack pins it)."

func slugSchemeValidator() validator.String {
	return stringvalidator.OneOf(string(kubespawner.SchemeSafe), string(kubespawner.SchemeEscape))
}

// sharedClaimValidator: the shared layout's claim, a claim name.
func sharedClaimValidator() validator.String {
	return stringvalidator.RegexMatches(dns1123Subdomain, "must be a claim name (a DNS subdomain), e.g. \"home-nfs\"")
}

func layoutValidator() validator.String { return stringvalidator.OneOf(layoutShared, layoutPerUser) }

type subPathTemplateValidator struct{}

func (subPathTemplateValidator) Description(context.Context) string {
	return "a KubeSpawner template of a relative directory"
}
func (v subPathTemplateValidator) MarkdownDescription(ctx context.Context) string {
	return v.Description(ctx)
}
func (subPathTemplateValidator) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	if err := kubespawner.CheckSubPathTemplate(req.ConfigValue.ValueString()); err != nil {
		resp.Diagnostics.AddAttributeError(req.Path, "Invalid "+req.Path.String(),
			fmt.Sprintf("%v. Write a directory relative to the claim's root with the user's name in it, e.g. \"{username}\" or \"home/{username}\".", err))
	}
}
