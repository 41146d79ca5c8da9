package hubconfig

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/claims"
)

// DefaultGPUResource is the extended resource gpu asks for by default.
const DefaultGPUResource = "nvidia.com/gpu"

// Profile is one KubeSpawner profile_list entry.
type Profile struct {
	Slug        string
	DisplayName string
	Description string
	Default     bool
	Image       string

	CPUGuarantee *float64 // cores
	CPULimit     *float64
	MemGuarantee string // KubeSpawner byte specification, e.g. "8G"
	MemLimit     string

	GPU *GPU

	NodeSelector map[string]string
	Tolerations  []Toleration
	Environment  map[string]string
	Volumes      []Volume
	Options      map[string]Option

	// Override is kubespawner_override_json, merged last.
	Override map[string]any
}

// GPU is a request for GPUs, as an extended resource.
type GPU struct {
	Count        int64
	ResourceName string // "" means DefaultGPUResource
}

// Resource is the extended resource name.
func (g *GPU) Resource() string {
	if g.ResourceName == "" {
		return DefaultGPUResource
	}
	return g.ResourceName
}

// Toleration is a pod toleration.
type Toleration struct {
	Key               string
	Operator          string // Equal (default) or Exists
	Value             string
	Effect            string // "" tolerates every effect
	TolerationSeconds *int64
}

// Volume is an extra volume of a profile, backed by a claim.
type Volume struct {
	Name      string
	MountPath string
	SubPath   string
	ReadOnly  bool
	ClaimName string
}

// Option is a KubeSpawner profile option.
type Option struct {
	DisplayName string
	Choices     map[string]Choice
	Unlisted    *UnlistedChoice
}

// Choice is one choice of an option.
type Choice struct {
	DisplayName string
	Default     bool
	Override    map[string]any
}

// UnlistedChoice lets the user type a value; {value} in its override is
// replaced with it.
type UnlistedChoice struct {
	DisplayName          string
	DisplayNameInChoices string
	ValidationRegex      string
	ValidationMessage    string
	Override             map[string]any
}

var byteSpec = regexp.MustCompile(`^([0-9]+(?:\.[0-9]*)?|\.[0-9]+)([KMGT])$`)

// ParseBytes reads a KubeSpawner byte specification: an integer number of
// bytes, or a number with the suffix K, M, G or T (powers of 1024, as
// JupyterHub's ByteSpecification reads them: "8G" is 8 GiB).
func ParseBytes(s string) (int64, error) {
	if n, err := strconv.ParseInt(s, 10, 64); err == nil && n >= 0 {
		return n, nil
	}
	m := byteSpec.FindStringSubmatch(s)
	if m == nil {
		return 0, fmt.Errorf("%q is not a KubeSpawner memory size: use a number with K, M, G or T (powers of 1024), e.g. \"8G\", or a whole number of bytes (Kubernetes units such as \"8Gi\" are not accepted by KubeSpawner)", s)
	}
	f, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		return 0, fmt.Errorf("%q: %v", s, err)
	}
	mult := map[string]float64{"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}[m[2]]
	v := f * mult
	if v > math.MaxInt64/2 {
		return 0, fmt.Errorf("%q is too large", s)
	}
	return int64(v), nil
}

// Validate checks the profile on its own. Each finding names the attribute.
func (p Profile) Validate() []claims.Finding {
	var out profileFindings
	p.checkNames(&out)
	p.checkMemory(&out)
	p.checkCPU(&out)
	p.checkGPU(&out)
	checkTolerations(&out, p.Tolerations)
	checkVolumes(&out, p.Volumes)
	checkOptions(&out, p.Options)
	return out
}

// profileFindings collects what Validate finds.
type profileFindings []claims.Finding

func (f *profileFindings) add(attr, summary, detail string) {
	*f = append(*f, claims.Finding{Attribute: attr, Summary: summary, Detail: detail})
}

// checkNames requires a display name and a slug KubeSpawner accepts.
func (p Profile) checkNames(out *profileFindings) {
	if p.DisplayName == "" {
		out.add("display_name", "display_name is required", "KubeSpawner shows it in the spawn form; set it, e.g. \"GPU (1 × A100)\".")
	}
	if p.Slug != "" && !slugRE.MatchString(p.Slug) {
		out.add("slug", "Invalid slug", fmt.Sprintf("%q: use lowercase letters, digits, '-' and '_', starting with a letter or digit; it identifies the profile in user_options and the spawn form.", p.Slug))
	}
}

// checkMemory requires byte specifications KubeSpawner reads, the
// guarantee not above the limit.
func (p Profile) checkMemory(out *profileFindings) {
	mem := map[string]int64{}
	for _, f := range []struct{ attr, s string }{{"mem_guarantee", p.MemGuarantee}, {"mem_limit", p.MemLimit}} {
		attr, s := f.attr, f.s
		if s == "" {
			continue
		}
		n, err := ParseBytes(s)
		if err != nil {
			out.add(attr, "Invalid memory size", err.Error())
			continue
		}
		mem[attr] = n
	}
	if g, ok := mem["mem_guarantee"]; ok {
		if l, ok := mem["mem_limit"]; ok && g > l {
			out.add("mem_guarantee", "mem_guarantee is above mem_limit",
				fmt.Sprintf("mem_guarantee = %q is more than mem_limit = %q; Kubernetes rejects a request above its limit. Lower mem_guarantee or raise mem_limit.", p.MemGuarantee, p.MemLimit))
		}
	}
}

// checkCPU requires positive cores, the guarantee not above the limit.
func (p Profile) checkCPU(out *profileFindings) {
	for _, f := range []struct {
		attr string
		v    *float64
	}{{"cpu_guarantee", p.CPUGuarantee}, {"cpu_limit", p.CPULimit}} {
		attr, v := f.attr, f.v
		if v != nil && *v <= 0 {
			out.add(attr, "CPU must be positive", fmt.Sprintf("%s = %v: give cores, e.g. 0.5 or 2, or leave it unset.", attr, *v))
		}
	}
	if p.CPUGuarantee != nil && p.CPULimit != nil && *p.CPUGuarantee > *p.CPULimit {
		out.add("cpu_guarantee", "cpu_guarantee is above cpu_limit",
			fmt.Sprintf("cpu_guarantee = %v is more than cpu_limit = %v; Kubernetes rejects a request above its limit. Lower cpu_guarantee or raise cpu_limit.", *p.CPUGuarantee, *p.CPULimit))
	}
}

// checkGPU requires at least one GPU of an extended resource.
func (p Profile) checkGPU(out *profileFindings) {
	if p.GPU == nil {
		return
	}
	if p.GPU.Count < 1 {
		out.add("gpu.count", "GPU count must be at least 1",
			fmt.Sprintf("gpu.count = %d asks for no GPU. Set a count of 1 or more, or remove gpu for a CPU-only profile.", p.GPU.Count))
	}
	if !extendedResourceRE.MatchString(p.GPU.Resource()) {
		out.add("gpu.resource_name", "Invalid resource name", fmt.Sprintf("%q is not an extended resource name such as \"nvidia.com/gpu\" or \"amd.com/gpu\".", p.GPU.Resource()))
	}
}

// checkTolerations requires each toleration's operator to go with its key
// and value, and a known effect.
func checkTolerations(out *profileFindings, tolerations []Toleration) {
	for i, t := range tolerations {
		a := fmt.Sprintf("tolerations[%d]", i)
		switch t.Operator {
		case "", "Equal":
			if t.Key == "" {
				out.add(a, "A toleration with operator Equal needs a key", "Set key, or use operator = \"Exists\" to tolerate every taint.")
			}
		case "Exists":
			if t.Value != "" {
				out.add(a, "A toleration with operator Exists takes no value", "Remove value, or use operator = \"Equal\".")
			}
		default:
			out.add(a, "Invalid toleration operator", fmt.Sprintf("%q: use \"Equal\" or \"Exists\".", t.Operator))
		}
		if t.Effect != "" && !slices.Contains([]string{"NoSchedule", "PreferNoSchedule", "NoExecute"}, t.Effect) {
			out.add(a, "Invalid toleration effect", fmt.Sprintf("%q: use \"NoSchedule\", \"PreferNoSchedule\" or \"NoExecute\", or leave it empty for all.", t.Effect))
		}
	}
}

// checkVolumes requires distinct volume names, not the home's, mounted at
// absolute paths.
func checkVolumes(out *profileFindings, volumes []Volume) {
	seen := map[string]bool{}
	for i, v := range volumes {
		a := fmt.Sprintf("volumes[%d]", i)
		if seen[v.Name] {
			out.add(a+".name", "Duplicate volume name", fmt.Sprintf("%q is used twice; volume names must be unique within the pod.", v.Name))
		}
		seen[v.Name] = true
		if v.Name == "home" {
			out.add(a+".name", "Reserved volume name", "\"home\" is the home volume from jupyter_home_storage; choose another name.")
		}
		if !strings.HasPrefix(v.MountPath, "/") {
			out.add(a+".mount_path", "mount_path must be absolute", fmt.Sprintf("%q: use an absolute path such as \"/data\".", v.MountPath))
		}
	}
}

// checkOptions requires each option, in key order, to have choices (one
// default at most) and an unlisted choice's regex to compile.
func checkOptions(out *profileFindings, options map[string]Option) {
	for _, k := range slices.Sorted(maps.Keys(options)) {
		o := options[k]
		a := "options[\"" + k + "\"]"
		defaults := 0
		for _, c := range o.Choices {
			if c.Default {
				defaults++
			}
		}
		if defaults > 1 {
			out.add(a, "More than one default choice", "Mark at most one choice of an option as default.")
		}
		if len(o.Choices) == 0 && o.Unlisted == nil {
			out.add(a, "An option needs choices", "Give at least one choice, or an unlisted_choice.")
		}
		if len(o.Choices) == 0 && o.Unlisted != nil {
			out.add(a, "An option with only an unlisted choice has no default",
				"KubeSpawner fails the spawn (\"Unable to determine a default choice\") when the user leaves it empty. Add at least one choice.")
		}
		if u := o.Unlisted; u != nil && u.ValidationRegex != "" {
			if err := CheckPythonRegex(u.ValidationRegex); err != nil {
				out.add(a+".unlisted_choice.validation_regex", "Invalid validation regex", err.Error())
			}
		}
	}
}

var (
	slugRE             = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]*$`)
	extendedResourceRE = regexp.MustCompile(`^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$`)
)

// CheckPythonRegex reports whether KubeSpawner can compile the pattern with
// Python's re module. It compiles it with Go's RE2 after translating \Z
// (Python's end of string) to \z. Lookarounds and backreferences, which
// Python has and RE2 lacks, cannot be checked here; such a pattern passes.
func CheckPythonRegex(pattern string) error {
	for _, unchecked := range []string{"(?=", "(?!", "(?<=", "(?<!", "(?P="} {
		if strings.Contains(pattern, unchecked) {
			return nil
		}
	}
	if _, err := regexp.Compile(strings.ReplaceAll(pattern, `\Z`, `\z`)); err != nil {
		return fmt.Errorf("%q does not compile: %v. KubeSpawner matches the user's value with Python's re.match; write e.g. \"^[a-z0-9./:-]+$\"", pattern, err)
	}
	return nil
}

// Dict returns the profile as KubeSpawner expects it in profile_list.
func (p Profile) Dict() map[string]any {
	d := map[string]any{"display_name": p.DisplayName}
	setIf(d, "slug", p.Slug)
	setIf(d, "description", p.Description)
	if p.Default {
		d["default"] = true
	}
	if o := p.overrideDict(); len(o) > 0 {
		d["kubespawner_override"] = o
	}
	if len(p.Options) > 0 {
		opts := map[string]any{}
		for k, opt := range p.Options {
			opts[k] = optionDict(k, opt)
		}
		d["profile_options"] = opts
	}
	return d
}

// overrideDict is the profile's kubespawner_override: its typed settings,
// then Override on top.
func (p Profile) overrideDict() map[string]any {
	o := map[string]any{}
	setIf(o, "image", p.Image)
	if p.CPUGuarantee != nil {
		o["cpu_guarantee"] = *p.CPUGuarantee
	}
	if p.CPULimit != nil {
		o["cpu_limit"] = *p.CPULimit
	}
	setIf(o, "mem_guarantee", p.MemGuarantee)
	setIf(o, "mem_limit", p.MemLimit)
	if p.GPU != nil {
		n := strconv.FormatInt(p.GPU.Count, 10)
		o["extra_resource_limits"] = map[string]any{p.GPU.Resource(): n}
		o["extra_resource_guarantees"] = map[string]any{p.GPU.Resource(): n}
	}
	if len(p.NodeSelector) > 0 {
		o["node_selector"] = stringAnyMap(p.NodeSelector)
	}
	if len(p.Tolerations) > 0 {
		var ts []any
		for _, t := range p.Tolerations {
			ts = append(ts, tolerationDict(t))
		}
		o["tolerations"] = ts
	}
	if len(p.Environment) > 0 {
		o["environment"] = stringAnyMap(p.Environment)
	}
	if len(p.Volumes) > 0 {
		o["volumes"], o["volume_mounts"] = volumeLists(p.Volumes)
	}
	for k, v := range p.Override {
		o[k] = v
	}
	return o
}

// tolerationDict is a toleration as a pod spec has it (operator Equal
// unless given).
func tolerationDict(t Toleration) map[string]any {
	m := map[string]any{"operator": "Equal"}
	setIf(m, "operator", t.Operator)
	setIf(m, "key", t.Key)
	setIf(m, "value", t.Value)
	setIf(m, "effect", t.Effect)
	if t.TolerationSeconds != nil {
		m["tolerationSeconds"] = *t.TolerationSeconds
	}
	return m
}

// volumeLists are the profile's volumes (claims) and their mounts.
func volumeLists(volumes []Volume) (vols, mounts []any) {
	for _, v := range volumes {
		pvc := map[string]any{"claimName": v.ClaimName}
		if v.ReadOnly {
			pvc["readOnly"] = true
		}
		vols = append(vols, map[string]any{"name": v.Name, "persistentVolumeClaim": pvc})
		m := map[string]any{"name": v.Name, "mountPath": v.MountPath}
		setIf(m, "subPath", v.SubPath)
		if v.ReadOnly {
			m["readOnly"] = true
		}
		mounts = append(mounts, m)
	}
	return vols, mounts
}

// optionDict is the option k of profile_options; a display name not given
// is the key (the option's, a choice's).
func optionDict(k string, opt Option) map[string]any {
	od := map[string]any{"display_name": opt.DisplayName}
	if opt.DisplayName == "" {
		od["display_name"] = k
	}
	choices := map[string]any{}
	for ck, c := range opt.Choices {
		cd := map[string]any{"display_name": c.DisplayName}
		if c.DisplayName == "" {
			cd["display_name"] = ck
		}
		if c.Default {
			cd["default"] = true
		}
		if len(c.Override) > 0 {
			cd["kubespawner_override"] = c.Override
		}
		choices[ck] = cd
	}
	if len(choices) > 0 {
		od["choices"] = choices
	}
	if u := opt.Unlisted; u != nil {
		od["unlisted_choice"] = unlistedDict(u)
	}
	return od
}

// unlistedDict is an option's unlisted_choice, enabled.
func unlistedDict(u *UnlistedChoice) map[string]any {
	ud := map[string]any{"enabled": true}
	setIf(ud, "display_name", u.DisplayName)
	setIf(ud, "display_name_in_choices", u.DisplayNameInChoices)
	setIf(ud, "validation_regex", u.ValidationRegex)
	setIf(ud, "validation_message", u.ValidationMessage)
	if len(u.Override) > 0 {
		ud["kubespawner_override"] = u.Override
	}
	return ud
}

// Guarantees returns what the profile's pod requests: CPU in millicores
// and memory in bytes. A guarantee that is not set counts as 0.
func (p Profile) Guarantees() (cpuMillis, memBytes int64) {
	if p.CPUGuarantee != nil {
		cpuMillis = int64(math.Ceil(*p.CPUGuarantee * 1000))
	}
	if p.MemGuarantee != "" {
		memBytes, _ = ParseBytes(p.MemGuarantee)
	}
	return cpuMillis, memBytes
}

// JSON encodes v compactly with sorted keys (encoding/json sorts map keys),
// so that equal values always render the same text.
func JSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // only plain maps, slices, strings, numbers and bools reach here
	}
	return string(b)
}

func setIf(m map[string]any, k, v string) {
	if v != "" {
		m[k] = v
	}
}

func stringAnyMap(m map[string]string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
