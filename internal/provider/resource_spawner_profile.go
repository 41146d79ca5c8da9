package provider

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-framework/types/basetypes"
	corev1 "k8s.io/api/core/v1"
	kresource "k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/claims"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/hubconfig"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/kube"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/kubespawner"
)

type spawnerProfileResource struct{ data *providerData }

var (
	_ resource.ResourceWithConfigure      = (*spawnerProfileResource)(nil)
	_ resource.ResourceWithModifyPlan     = (*spawnerProfileResource)(nil)
	_ resource.ResourceWithValidateConfig = (*spawnerProfileResource)(nil)
)

// NewSpawnerProfileResource is the jupyter_spawner_profile resource.
func NewSpawnerProfileResource() resource.Resource { return &spawnerProfileResource{} }

func (r *spawnerProfileResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_spawner_profile"
}

func (r *spawnerProfileResource) Schema(_ context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	resp.Schema = spawnerProfileSchema()
}

func (r *spawnerProfileResource) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	r.data = configuredData(req.ProviderData, &resp.Diagnostics)
}

// profile converts the model to the core's Profile. known is false when a
// value the profile dict needs is not known yet; unknown values are left
// out, so that what is known can still be validated.
func (m *spawnerProfileModel) profile(ctx context.Context, diags *diag.Diagnostics) (p hubconfig.Profile, known bool) {
	r := &profileReader{ctx: ctx, diags: diags, known: true}
	p.Slug, p.DisplayName, p.Description = r.str(m.Slug), r.str(m.DisplayName), r.str(m.Description)
	p.Image, p.MemGuarantee, p.MemLimit = r.str(m.Image), r.str(m.MemGuarantee), r.str(m.MemLimit)
	p.Default = m.Default.ValueBool()
	r.check(m.Default)
	p.CPUGuarantee, p.CPULimit = r.float(m.CPUGuarantee), r.float(m.CPULimit)
	p.GPU = r.gpu(m.GPU)
	p.NodeSelector, p.Environment = r.stringMap(m.NodeSelector), r.stringMap(m.Environment)
	p.Tolerations = r.tolerations(m.Tolerations)
	p.Volumes = r.volumes(m.Volumes)
	p.Override = r.object(m.OverrideJSON, path.Root("kubespawner_override_json"))
	p.Options = r.options(m.Options)
	return p, r.known
}

// profileReader reads the values of a profile's model for the core and
// notes whether every one it reads is known (known).
type profileReader struct {
	ctx   context.Context
	diags *diag.Diagnostics
	known bool
}

// check notes whether v is known.
func (r *profileReader) check(v attr.Value) {
	if v.IsUnknown() {
		r.known = false
	}
}

func (r *profileReader) str(v types.String) string {
	r.check(v)
	return v.ValueString()
}

// stringMap is a map of strings (nil when null or unknown).
func (r *profileReader) stringMap(v types.Map) map[string]string {
	m, ok := knownStringMap(r.ctx, v, r.diags)
	if !ok {
		r.known = false
	}
	return m
}

// object is a JSON object (jsonObject) of the attribute at.
func (r *profileReader) object(v types.String, at path.Path) map[string]any {
	o, ok := jsonObject(v, at, r.diags)
	if !ok {
		r.known = false
	}
	return o
}

// float is v, or nil when it is null or unknown.
func (r *profileReader) float(v types.Float64) *float64 {
	r.check(v)
	if v.IsUnknown() || v.IsNull() {
		return nil
	}
	x := v.ValueFloat64()
	return &x
}

// gpu is the gpu block; a count not known yet counts as one GPU.
func (r *profileReader) gpu(g *gpuModel) *hubconfig.GPU {
	if g == nil {
		return nil
	}
	gpu := &hubconfig.GPU{Count: g.Count.ValueInt64(), ResourceName: r.str(g.ResourceName)}
	if g.Count.IsUnknown() {
		r.known = false
		gpu.Count = 1
	}
	return gpu
}

func (r *profileReader) tolerations(ts []tolerationModel) []hubconfig.Toleration {
	var out []hubconfig.Toleration
	for _, t := range ts {
		tol := hubconfig.Toleration{Key: r.str(t.Key), Operator: r.str(t.Operator), Value: r.str(t.Value), Effect: r.str(t.Effect)}
		if t.TolerationSeconds.IsUnknown() {
			r.known = false
		} else if !t.TolerationSeconds.IsNull() {
			s := t.TolerationSeconds.ValueInt64()
			tol.TolerationSeconds = &s
		}
		out = append(out, tol)
	}
	return out
}

// volumes are the profile's volumes; a new_claim's claim is named after
// its volume.
func (r *profileReader) volumes(vs []profileVolumeModel) []hubconfig.Volume {
	var out []hubconfig.Volume
	for _, v := range vs {
		vol := hubconfig.Volume{Name: r.str(v.Name), MountPath: r.str(v.MountPath), SubPath: r.str(v.SubPath), ReadOnly: v.ReadOnly.ValueBool(), ClaimName: r.str(v.ExistingClaim)}
		if v.NewClaim != nil {
			vol.ClaimName = vol.Name
		}
		r.check(v.ReadOnly)
		out = append(out, vol)
	}
	return out
}

// options are the profile's options by key (nil when null or unknown).
func (r *profileReader) options(v types.Map) map[string]hubconfig.Option {
	if v.IsUnknown() {
		r.known = false
		return nil
	}
	if v.IsNull() {
		return nil
	}
	opts := map[string]optionModel{}
	r.diags.Append(v.ElementsAs(r.ctx, &opts, false)...)
	out := map[string]hubconfig.Option{}
	for k, o := range opts {
		at := path.Root("options").AtMapKey(k)
		opt := hubconfig.Option{DisplayName: r.str(o.DisplayName)}
		r.check(o.Choices)
		r.check(o.Unlisted)
		if !o.Choices.IsNull() && !o.Choices.IsUnknown() {
			opt.Choices = r.choices(o.Choices, at.AtName("choices"))
		}
		if !o.Unlisted.IsNull() && !o.Unlisted.IsUnknown() {
			opt.Unlisted = r.unlisted(o.Unlisted, at.AtName("unlisted_choice"))
		}
		out[k] = opt
	}
	return out
}

// choices are an option's choices by key; at is their attribute.
func (r *profileReader) choices(v types.Map, at path.Path) map[string]hubconfig.Choice {
	choices := map[string]choiceModel{}
	r.diags.Append(v.ElementsAs(r.ctx, &choices, false)...)
	out := map[string]hubconfig.Choice{}
	for ck, c := range choices {
		ov := r.object(c.OverrideJSON, at.AtMapKey(ck).AtName("kubespawner_override_json"))
		r.check(c.Default)
		out[ck] = hubconfig.Choice{DisplayName: r.str(c.DisplayName), Default: c.Default.ValueBool(), Override: ov}
	}
	return out
}

// unlisted is an option's unlisted_choice; at is its attribute.
func (r *profileReader) unlisted(v types.Object, at path.Path) *hubconfig.UnlistedChoice {
	var u unlistedModel
	r.diags.Append(v.As(r.ctx, &u, basetypes.ObjectAsOptions{})...)
	ov := r.object(u.OverrideJSON, at.AtName("kubespawner_override_json"))
	return &hubconfig.UnlistedChoice{DisplayName: r.str(u.DisplayName), DisplayNameInChoices: r.str(u.DisplayNameInChoices),
		ValidationRegex: r.str(u.ValidationRegex), ValidationMessage: r.str(u.ValidationMessage), Override: ov}
}

// knownStringMap reads a map of strings; ok is false when it is unknown.
func knownStringMap(ctx context.Context, m types.Map, diags *diag.Diagnostics) (map[string]string, bool) {
	if m.IsUnknown() {
		return nil, false
	}
	if m.IsNull() {
		return nil, true
	}
	out := map[string]string{}
	diags.Append(m.ElementsAs(ctx, &out, false)...)
	for _, v := range m.Elements() {
		if v.IsUnknown() {
			return out, false
		}
	}
	return out, true
}

// jsonObject parses a JSON object attribute; ok is false when it is unknown.
func jsonObject(v types.String, at path.Path, diags *diag.Diagnostics) (map[string]any, bool) {
	if v.IsUnknown() {
		return nil, false
	}
	if v.IsNull() || v.ValueString() == "" {
		return nil, true
	}
	var out map[string]any
	if err := json.Unmarshal([]byte(v.ValueString()), &out); err != nil {
		diags.AddAttributeError(at, "Not a JSON object", fmt.Sprintf("%v. Write it with jsonencode({ ... }).", err))
	}
	return out, true
}

// ValidateConfig checks what the attributes' own validators cannot: limits
// against guarantees, the GPU count, the volumes' claims and the defaults.
func (r *spawnerProfileResource) ValidateConfig(ctx context.Context, req resource.ValidateConfigRequest, resp *resource.ValidateConfigResponse) {
	var m spawnerProfileModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	p, _ := m.profile(ctx, &resp.Diagnostics)
	if m.GPU != nil && m.GPU.Count.IsNull() {
		resp.Diagnostics.AddAttributeError(path.Root("gpu").AtName("count"), "gpu.count is required",
			"Set count to the number of GPUs the server needs (1 or more), or remove gpu.")
		p.GPU.Count = 1
	}
	for _, f := range p.Validate() {
		switch f.Summary {
		case "Invalid memory size", "Invalid validation regex", "display_name is required":
			continue // the attribute validators report these
		}
		resp.Diagnostics.AddAttributeError(findingPath(f.Attribute), f.Summary, f.Detail)
	}
	var allowed []string
	if d := m.VolumeDefaults; d != nil && !d.AllowedAccessModes.IsNull() && !d.AllowedAccessModes.IsUnknown() {
		resp.Diagnostics.Append(d.AllowedAccessModes.ElementsAs(ctx, &allowed, false)...)
	}
	newClaims := false
	for i, v := range m.Volumes {
		at := path.Root("volumes").AtListIndex(i)
		hasExisting := !v.ExistingClaim.IsNull()
		if hasExisting == (v.NewClaim != nil) {
			resp.Diagnostics.AddAttributeError(at, "A volume needs exactly one claim",
				"Set existing_claim to the name of a PersistentVolumeClaim, or add new_claim = { size = ... } for a shared claim this resource creates; not both.")
		}
		if v.NewClaim == nil {
			continue
		}
		newClaims = true
		if v.NewClaim.Size.IsNull() {
			resp.Diagnostics.AddAttributeError(at.AtName("new_claim").AtName("size"), "new_claim.size is required", "Set the claim's size, e.g. \"100Gi\".")
		}
		mode := newClaimMode(v.NewClaim)
		if len(allowed) > 0 && !v.NewClaim.AccessMode.IsUnknown() && !slices.Contains(allowed, mode) {
			resp.Diagnostics.AddAttributeError(at.AtName("new_claim").AtName("access_mode"), "Access mode not allowed",
				fmt.Sprintf("%s is not in volume_defaults.allowed_access_modes (%s). Use one of those.", mode, strings.Join(allowed, ", ")))
		}
	}
	if newClaims && m.Namespace.IsNull() {
		resp.Diagnostics.AddAttributeError(path.Root("namespace"), "namespace is required for new_claim volumes",
			"Set namespace to the JupyterHub deployment's namespace: the shared claims are created there, beside the user servers that mount them.")
	}
}

func newClaimMode(c *newClaimModel) string {
	if c.AccessMode.IsNull() || c.AccessMode.IsUnknown() {
		return claims.RWX
	}
	return c.AccessMode.ValueString()
}

var findingStep = regexp.MustCompile(`^([a-z_]+)(?:\[(\d+)\]|\["([^"]*)"\])?$`)

// findingPath turns a core finding's attribute ("volumes[0].name",
// `options["image"].unlisted_choice`) into a Terraform path.
func findingPath(s string) path.Path {
	var p path.Path
	for i, step := range strings.Split(s, ".") {
		m := findingStep.FindStringSubmatch(step)
		if m == nil {
			return p
		}
		if i == 0 {
			p = path.Root(m[1])
		} else {
			p = p.AtName(m[1])
		}
		switch {
		case m[2] != "":
			n, _ := strconv.Atoi(m[2])
			p = p.AtListIndex(n)
		case strings.Contains(step, "[\""):
			p = p.AtMapKey(m[3])
		}
	}
	return p
}

func (r *spawnerProfileResource) ModifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	if req.Plan.Raw.IsNull() {
		return // destroy: shared claims stay
	}
	var plan spawnerProfileModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	p, known := plan.profile(ctx, &resp.Diagnostics)
	if resp.Diagnostics.HasError() {
		return
	}
	if known {
		plan.ProfileJSON = types.StringValue(hubconfig.JSON(p.Dict()))
		plan.ID = types.StringValue(profileID(p))
	} else {
		plan.ProfileJSON = types.StringUnknown()
	}
	resp.Diagnostics.Append(resp.Plan.Set(ctx, &plan)...)

	client := r.client()
	if client == nil {
		reason := "the provider is not configured"
		if r.data != nil {
			reason = fmt.Sprintf("the provider setting %q is not known until apply", r.data.Unknown)
		}
		resp.Diagnostics.AddWarning("Nodes not checked",
			fmt.Sprintf("The plan for jupyter_spawner_profile could not list the cluster's nodes because %s, so whether a node can run profile %q is not checked.", reason, profileID(p)))
		return
	}
	live, err := client.ListNodes(ctx)
	if err != nil {
		resp.Diagnostics.AddError("Cannot list the cluster's nodes", err.Error())
		return
	}
	nodes := make([]hubconfig.Node, len(live))
	for i := range live {
		nodes[i] = nodeOf(&live[i])
	}
	resp.Diagnostics.Append(profileNodeDiagnostics(p, nodes, hubconfig.ProfileCheck{RequireSchedulable: plan.RequireSchedulable.ValueBool()})...)
}

// profileNodeDiagnostics is the plan's verdict on a profile against the
// nodes: warnings when none can run it now, an error with
// require_schedulable when its guarantees exceed every node.
func profileNodeDiagnostics(p hubconfig.Profile, nodes []hubconfig.Node, check hubconfig.ProfileCheck) diag.Diagnostics {
	var diags diag.Diagnostics
	errs, warns := hubconfig.CheckProfile(profileID(p), p.Demand(), nodes, check)
	addErrorFindings(&diags, errs)
	addWarningFindings(&diags, warns)
	return diags
}

func profileID(p hubconfig.Profile) string {
	if p.Slug != "" {
		return p.Slug
	}
	return p.DisplayName
}

func (r *spawnerProfileResource) client() *kube.Client { return r.data.client() }

func (r *spawnerProfileResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	planApply(ctx, req.Plan, &resp.State, &resp.Diagnostics, func(m *spawnerProfileModel) { r.apply(ctx, m, &resp.Diagnostics) })
}

func (r *spawnerProfileResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	planApply(ctx, req.Plan, &resp.State, &resp.Diagnostics, func(m *spawnerProfileModel) { r.apply(ctx, m, &resp.Diagnostics) })
}

// apply creates the shared claims of new_claim volumes (a claim that
// exists is kept as it is) and records the profile dict.
func (r *spawnerProfileResource) apply(ctx context.Context, plan *spawnerProfileModel, diags *diag.Diagnostics) {
	p, _ := plan.profile(ctx, diags)
	plan.ProfileJSON = types.StringValue(hubconfig.JSON(p.Dict()))
	plan.ID = types.StringValue(profileID(p))
	var claims []*corev1.PersistentVolumeClaim
	for i, v := range plan.Volumes {
		if v.NewClaim == nil {
			continue
		}
		pvc, err := sharedClaim(ctx, plan, v, diags)
		if err != nil {
			diags.AddAttributeError(path.Root("volumes").AtListIndex(i).AtName("new_claim"), "Invalid claim", err.Error())
			return
		}
		claims = append(claims, pvc)
	}
	if len(claims) == 0 {
		return
	}
	client := requireClient(r.data, diags)
	if client == nil {
		return
	}
	for _, pvc := range claims {
		if _, err := client.CreateClaim(ctx, pvc); err != nil {
			diags.AddError(fmt.Sprintf("Cannot create the shared claim %s", pvc.Name), err.Error())
			return
		}
	}
}

// sharedClaim is the claim of a new_claim volume, with the administrator's
// defaults from volume_defaults.
func sharedClaim(ctx context.Context, m *spawnerProfileModel, v profileVolumeModel, diags *diag.Diagnostics) (*corev1.PersistentVolumeClaim, error) {
	size, err := kresource.ParseQuantity(v.NewClaim.Size.ValueString())
	if err != nil {
		return nil, fmt.Errorf("size %q: %v", v.NewClaim.Size.ValueString(), err)
	}
	class := v.NewClaim.StorageClassName.ValueString()
	annotations := map[string]string{}
	if d := m.VolumeDefaults; d != nil {
		if class == "" {
			class = d.StorageClassName.ValueString()
		}
		annotations = stringMap(ctx, d.Annotations, diags)
	}
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{
			Name: v.Name.ValueString(), Namespace: m.Namespace.ValueString(), Annotations: annotations,
			Labels: map[string]string{kubespawner.LabelAppManagedBy: claims.ManagedBy, kubespawner.LabelAppComponent: "shared-volume"},
		},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.PersistentVolumeAccessMode(newClaimMode(v.NewClaim))},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: size}},
		},
	}
	if class != "" {
		pvc.Spec.StorageClassName = &class
	}
	return pvc, nil
}

func (r *spawnerProfileResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	var state spawnerProfileModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &state)...)
}

// Delete forgets the profile. Shared claims it created stay, with their data.
func (r *spawnerProfileResource) Delete(context.Context, resource.DeleteRequest, *resource.DeleteResponse) {
}

// jsonObjectValidator accepts a JSON object.
type jsonObjectValidator struct{}

func (jsonObjectValidator) Description(context.Context) string { return "a JSON object" }
func (v jsonObjectValidator) MarkdownDescription(ctx context.Context) string {
	return v.Description(ctx)
}
func (jsonObjectValidator) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(req.ConfigValue.ValueString()), &m); err != nil || m == nil {
		resp.Diagnostics.AddAttributeError(req.Path, "Not a JSON object",
			fmt.Sprintf("Give a JSON object of KubeSpawner settings, written with jsonencode({ ... }) (%v).", err))
	}
}

// byteSpecValidator accepts KubeSpawner memory sizes.
type byteSpecValidator struct{}

func (byteSpecValidator) Description(context.Context) string {
	return "a KubeSpawner memory size such as 8G"
}
func (v byteSpecValidator) MarkdownDescription(ctx context.Context) string { return v.Description(ctx) }
func (byteSpecValidator) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	if _, err := hubconfig.ParseBytes(req.ConfigValue.ValueString()); err != nil {
		resp.Diagnostics.AddAttributeError(req.Path, "Invalid memory size", err.Error())
	}
}

// pythonRegexValidator accepts regular expressions Python's re compiles.
type pythonRegexValidator struct{}

func (pythonRegexValidator) Description(context.Context) string { return "a regular expression" }
func (v pythonRegexValidator) MarkdownDescription(ctx context.Context) string {
	return v.Description(ctx)
}
func (pythonRegexValidator) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	if err := hubconfig.CheckPythonRegex(req.ConfigValue.ValueString()); err != nil {
		resp.Diagnostics.AddAttributeError(req.Path, "Invalid validation regex", err.Error())
	}
}
