package provider

import (
	"github.com/hashicorp/terraform-plugin-framework-validators/listvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/booldefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/claims"
)

type spawnerProfileModel struct {
	ID                 types.String         `tfsdk:"id"`
	Slug               types.String         `tfsdk:"slug"`
	DisplayName        types.String         `tfsdk:"display_name"`
	Description        types.String         `tfsdk:"description"`
	Default            types.Bool           `tfsdk:"default"`
	Image              types.String         `tfsdk:"image"`
	CPUGuarantee       types.Float64        `tfsdk:"cpu_guarantee"`
	CPULimit           types.Float64        `tfsdk:"cpu_limit"`
	MemGuarantee       types.String         `tfsdk:"mem_guarantee"`
	MemLimit           types.String         `tfsdk:"mem_limit"`
	GPU                *gpuModel            `tfsdk:"gpu"`
	NodeSelector       types.Map            `tfsdk:"node_selector"`
	Tolerations        []tolerationModel    `tfsdk:"tolerations"`
	Environment        types.Map            `tfsdk:"environment"`
	Namespace          types.String         `tfsdk:"namespace"`
	Volumes            []profileVolumeModel `tfsdk:"volumes"`
	VolumeDefaults     *volumeDefaultsModel `tfsdk:"volume_defaults"`
	Options            types.Map            `tfsdk:"options"`
	OverrideJSON       types.String         `tfsdk:"kubespawner_override_json"`
	RequireSchedulable types.Bool           `tfsdk:"require_schedulable"`
	ProfileJSON        types.String         `tfsdk:"profile_json"`
}

type gpuModel struct {
	Count        types.Int64  `tfsdk:"count"`
	ResourceName types.String `tfsdk:"resource_name"`
}

type tolerationModel struct {
	Key               types.String `tfsdk:"key"`
	Operator          types.String `tfsdk:"operator"`
	Value             types.String `tfsdk:"value"`
	Effect            types.String `tfsdk:"effect"`
	TolerationSeconds types.Int64  `tfsdk:"toleration_seconds"`
}

type profileVolumeModel struct {
	Name          types.String   `tfsdk:"name"`
	MountPath     types.String   `tfsdk:"mount_path"`
	ReadOnly      types.Bool     `tfsdk:"read_only"`
	SubPath       types.String   `tfsdk:"sub_path"`
	ExistingClaim types.String   `tfsdk:"existing_claim"`
	NewClaim      *newClaimModel `tfsdk:"new_claim"`
}

type newClaimModel struct {
	Size             types.String `tfsdk:"size"`
	AccessMode       types.String `tfsdk:"access_mode"`
	StorageClassName types.String `tfsdk:"storage_class_name"`
}

type volumeDefaultsModel struct {
	AllowedAccessModes types.List   `tfsdk:"allowed_access_modes"`
	StorageClassName   types.String `tfsdk:"storage_class_name"`
	Annotations        types.Map    `tfsdk:"annotations"`
}

type optionModel struct {
	DisplayName types.String `tfsdk:"display_name"`
	Choices     types.Map    `tfsdk:"choices"`
	Unlisted    types.Object `tfsdk:"unlisted_choice"`
}

type choiceModel struct {
	DisplayName  types.String `tfsdk:"display_name"`
	Default      types.Bool   `tfsdk:"default"`
	OverrideJSON types.String `tfsdk:"kubespawner_override_json"`
}

type unlistedModel struct {
	DisplayName          types.String `tfsdk:"display_name"`
	DisplayNameInChoices types.String `tfsdk:"display_name_in_choices"`
	ValidationRegex      types.String `tfsdk:"validation_regex"`
	ValidationMessage    types.String `tfsdk:"validation_message"`
	OverrideJSON         types.String `tfsdk:"kubespawner_override_json"`
}

var accessModes = []string{claims.RWO, claims.RWX, claims.RWOP, claims.ROX}

func spawnerProfileSchema() schema.Schema {
	str := func(desc string) schema.StringAttribute {
		return schema.StringAttribute{Optional: true, MarkdownDescription: desc}
	}
	jsonAttr := func(desc string) schema.StringAttribute {
		return schema.StringAttribute{Optional: true, MarkdownDescription: desc, Validators: []validator.String{jsonObjectValidator{}}}
	}
	return schema.Schema{
		MarkdownDescription: "One KubeSpawner `profile_list` entry, typed and validated. Pass `profile_json` to a `jupyter_spawner_config` (its `profiles`).\n\n" +
			"Every plan lists the cluster's nodes (one paginated List) and warns when no current node satisfies the profile's node selector, " +
			"tolerations (against the nodes' taints), GPU resource and guarantees; with `require_schedulable = true` it is an error when the " +
			"guarantees exceed every node's allocatable resources.\n\n" +
			"KubeSpawner *replaces* (does not merge) list settings such as `tolerations` and `volumes` with a profile's: a profile's `tolerations` " +
			"drop the global ones (z2jh's `scheduling.userPods.tolerations`), so list every toleration the profile needs. `jupyter_spawner_config` " +
			"puts the global volumes, the home first, in front of a profile's own `volumes`, so a profile never loses the home.",
		Attributes: map[string]schema.Attribute{
			"id": schema.StringAttribute{Computed: true, MarkdownDescription: "The slug, or the display name when there is none.",
				PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown()}},
			"slug": schema.StringAttribute{Optional: true, MarkdownDescription: "Stable identifier of the profile (in `user_options` and the spawn form). Lowercase letters, digits, `-` and `_`. " +
				"Without it KubeSpawner derives one from `display_name`; set it so that renaming the profile does not change it.",
				Validators: []validator.String{stringvalidator.LengthAtLeast(1)}},
			"display_name": schema.StringAttribute{Required: true, MarkdownDescription: "Name shown in the spawn form."},
			"description":  str("Description shown in the spawn form (HTML allowed)."),
			"default": schema.BoolAttribute{Optional: true, Computed: true, Default: booldefault.StaticBool(false),
				MarkdownDescription: "Whether this is the preselected profile. At most one profile of a `jupyter_spawner_config` may be default; without one KubeSpawner preselects the first."},
			"image":         str("Container image of the user server, e.g. `quay.io/jupyter/scipy-notebook:2024-07-29`."),
			"cpu_guarantee": schema.Float64Attribute{Optional: true, MarkdownDescription: "CPU cores reserved for the server (the pod's request). At most `cpu_limit`."},
			"cpu_limit":     schema.Float64Attribute{Optional: true, MarkdownDescription: "Most CPU cores the server may use."},
			"mem_guarantee": schema.StringAttribute{Optional: true, MarkdownDescription: "Memory reserved for the server, as KubeSpawner reads it: a number with `K`, `M`, `G` or `T` (powers of 1024, so `8G` is 8 GiB), or bytes. At most `mem_limit`.",
				Validators: []validator.String{byteSpecValidator{}}},
			"mem_limit": schema.StringAttribute{Optional: true, MarkdownDescription: "Most memory the server may use, e.g. `16G`.",
				Validators: []validator.String{byteSpecValidator{}}},
			"node_selector": schema.MapAttribute{Optional: true, ElementType: types.StringType, MarkdownDescription: "Node labels the server's node must have. Merged with the global `node_selector`."},
			"environment":   schema.MapAttribute{Optional: true, ElementType: types.StringType, MarkdownDescription: "Environment variables of the server. Merged with the global `environment`."},
			"namespace": schema.StringAttribute{Optional: true, MarkdownDescription: "Namespace of the JupyterHub deployment; needed when a volume has a `new_claim`, which this resource creates there.",
				Validators: []validator.String{namespaceValidator()}},
			"options": schema.MapNestedAttribute{Optional: true,
				MarkdownDescription: "KubeSpawner `profile_options` by key: choices the user picks in the spawn form, each with the settings it overrides. " +
					"KubeSpawner applies them in the order of their keys, after the profile's own settings.",
				NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
					"display_name": str("Label of the option in the form; default the key."),
					"choices": schema.MapNestedAttribute{Optional: true, MarkdownDescription: "Choices by key.",
						NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
							"display_name":              str("Label of the choice; default the key."),
							"default":                   schema.BoolAttribute{Optional: true, MarkdownDescription: "Whether the choice is preselected (at most one per option; without one, the first key)."},
							"kubespawner_override_json": jsonAttr("JSON object of the KubeSpawner settings this choice sets, e.g. `jsonencode({ image = \"...\" })`."),
						}}},
					"unlisted_choice": schema.SingleNestedAttribute{Optional: true,
						MarkdownDescription: "Lets the user type a value; `{value}` in its `kubespawner_override_json` is replaced with it.",
						Attributes: map[string]schema.Attribute{
							"display_name":            str("Label of the free-form field."),
							"display_name_in_choices": str("Label of the free-form entry in the choices (KubeSpawner's default: `Other...`)."),
							"validation_regex": schema.StringAttribute{Optional: true,
								MarkdownDescription: "Python regular expression the value must match (`re.match`). A pattern that does not compile is an error at validate time.",
								Validators:          []validator.String{pythonRegexValidator{}}},
							"validation_message":        str("Message shown when the value does not match."),
							"kubespawner_override_json": jsonAttr("JSON object of the settings the typed value sets, e.g. `jsonencode({ image = \"{value}\" })`."),
						}},
				}}},
			"kubespawner_override_json": jsonAttr("Escape hatch: a JSON object of KubeSpawner settings merged last into the profile's `kubespawner_override`, over the typed attributes."),
			"require_schedulable": schema.BoolAttribute{Optional: true, Computed: true, Default: booldefault.StaticBool(false),
				MarkdownDescription: "Make it an error at plan time when the profile's guarantees exceed every current node's allocatable resources (default: a warning, since an autoscaler may add larger nodes)."},
			"profile_json": schema.StringAttribute{Computed: true, MarkdownDescription: "JSON of the dict KubeSpawner expects in `profile_list`."},
			"gpu": schema.SingleNestedAttribute{Optional: true,
				MarkdownDescription: "GPUs for the server, requested as an extended resource in `extra_resource_limits` and `extra_resource_guarantees`.",
				Attributes: map[string]schema.Attribute{
					"count":         schema.Int64Attribute{Optional: true, MarkdownDescription: "Number of GPUs, at least 1 (required)."},
					"resource_name": schema.StringAttribute{Optional: true, MarkdownDescription: "Extended resource name; default `nvidia.com/gpu` (`amd.com/gpu`, `gpu.intel.com/i915`, ...)."},
				},
			},
			"tolerations": schema.ListNestedAttribute{Optional: true,
				MarkdownDescription: "Tolerations of the server's pod, e.g. for GPU nodes tainted `nvidia.com/gpu=true:NoSchedule` (AKS and kubeadm clusters do not add it for you). " +
					"They **replace** the global tolerations (KubeSpawner does not append), so repeat any global one the profile still needs.",
				NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
					"key":      str("Taint key; empty with `operator = \"Exists\"` tolerates every taint."),
					"operator": schema.StringAttribute{Optional: true, MarkdownDescription: "`Equal` (default) or `Exists`.", Validators: []validator.String{stringvalidator.OneOf("Equal", "Exists")}},
					"value":    str("Taint value (with `Equal`)."),
					"effect": schema.StringAttribute{Optional: true, MarkdownDescription: "`NoSchedule`, `PreferNoSchedule` or `NoExecute`; empty tolerates every effect.",
						Validators: []validator.String{stringvalidator.OneOf("NoSchedule", "PreferNoSchedule", "NoExecute")}},
					"toleration_seconds": schema.Int64Attribute{Optional: true, MarkdownDescription: "For `NoExecute`: how long the pod stays after the taint appears."},
				}},
			},
			"volumes": schema.ListNestedAttribute{Optional: true,
				MarkdownDescription: "Extra volumes of the server, each backed by a claim: an existing one (`existing_claim`) or a shared claim this resource creates (`new_claim`, in `namespace`; it is named after the volume and kept on destroy).",
				NestedObject: schema.NestedAttributeObject{
					Attributes: map[string]schema.Attribute{
						"name":           schema.StringAttribute{Required: true, MarkdownDescription: "Volume name in the pod (not `home`).", Validators: []validator.String{stringvalidator.RegexMatches(dns1123Label, "must be a DNS label, e.g. \"datasets\"")}},
						"mount_path":     schema.StringAttribute{Required: true, MarkdownDescription: "Absolute path in the server's container."},
						"read_only":      schema.BoolAttribute{Optional: true, MarkdownDescription: "Mount read-only."},
						"sub_path":       str("Path inside the volume to mount instead of its root; KubeSpawner expands `{username}` and the other template fields."),
						"existing_claim": schema.StringAttribute{Optional: true, MarkdownDescription: "Name of an existing PersistentVolumeClaim in the hub's namespace."},
						"new_claim": schema.SingleNestedAttribute{Optional: true,
							MarkdownDescription: "A shared claim this resource creates in `namespace`, named after the volume. Defaults come from `volume_defaults`.",
							Attributes: map[string]schema.Attribute{
								"size":               schema.StringAttribute{Optional: true, MarkdownDescription: "Size, a Kubernetes quantity such as `100Gi` (required).", Validators: []validator.String{quantityValidator{}}},
								"access_mode":        schema.StringAttribute{Optional: true, MarkdownDescription: "Default `ReadWriteMany` (a volume shared by many servers).", Validators: []validator.String{stringvalidator.OneOf(accessModes...)}},
								"storage_class_name": str("StorageClass; default `volume_defaults.storage_class_name`, else the cluster's default class."),
							},
						},
					},
				},
			},
			"volume_defaults": schema.SingleNestedAttribute{Optional: true,
				MarkdownDescription: "Administrator defaults and limits for `new_claim` volumes.",
				Attributes: map[string]schema.Attribute{
					"allowed_access_modes": schema.ListAttribute{Optional: true, ElementType: types.StringType, MarkdownDescription: "Access modes a new claim may use; others are an error at validate time.",
						Validators: []validator.List{listvalidator.ValueStringsAre(stringvalidator.OneOf(accessModes...))}},
					"storage_class_name": str("StorageClass of new claims that name none."),
					"annotations":        schema.MapAttribute{Optional: true, ElementType: types.StringType, MarkdownDescription: "Annotations of new claims."},
				},
			},
		},
	}
}
