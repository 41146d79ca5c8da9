package hubconfig

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/claims"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/kubespawner"
)

// DefaultColocationLabel is the pod label co-location selects on by
// default. Nebari's data-science-pack uses "nebari.dev/colocate-user".
const DefaultColocationLabel = "hub.jupyter.org/colocate-user"

// HostnameTopologyKey is the topology of co-location: one node.
const HostnameTopologyKey = "kubernetes.io/hostname"

// Mode says which servers' pods are pinned to one node. The hub decides
// it at each spawn from the access mode of the claim the server mounts;
// Mode is what the home storage's access mode lets a plan say about it.
type Mode string

const (
	// ColocateAll: homes are ReadWriteOnce(Pod); every user's pods share a node.
	ColocateAll Mode = "all"
	// ColocateByClaim: homes are ReadWriteMany; a server whose claim is
	// still ReadWriteOnce (a home kept or not yet migrated) has its user's
	// pods share a node, the others none.
	ColocateByClaim Mode = "by_claim"
)

// Config is what jupyter_spawner_config combines.
type Config struct {
	Home            map[string]any   // jupyter_home_storage's spawner_settings
	Profiles        []map[string]any // profile_json of each jupyter_spawner_profile
	ColocationLabel string
	Extra           map[string]any // extra_settings_json
	// HomeMountPath is where the home is mounted in the server's
	// container (KubeSpawner template fields allowed); "" keeps the home
	// storage's, DefaultHomeMountPath unless it says otherwise.
	HomeMountPath string
}

// DefaultHomeMountPath is KubeSpawner's and z2jh's home.
const DefaultHomeMountPath = "/home/jovyan"

// Colocation is how the rendered hook pins a user's pods to one node (the
// label and the topology); Mode is not in the document.
type Colocation struct {
	Mode        Mode   `json:"-"`
	Label       string `json:"label"`
	TopologyKey string `json:"topology_key"`
}

// Result is the combined configuration.
type Result struct {
	AccessMode string
	Settings   map[string]any // applied to c.KubeSpawner
	Colocation Colocation
	Profiles   []map[string]any // as in Settings["profile_list"]
	// HomeMountPath is where the home volume is mounted.
	HomeMountPath string
	// SharedClaim is the claim holding every home in the shared layout;
	// "" when each user has a claim. SharedSubPath is the template of a
	// user's directory in it.
	SharedClaim, SharedSubPath string
	// While homes move out of the shared layout (kubespawner.HomeStorage's
	// SplitFrom), a server whose claim does not exist mounts the user's
	// directory FallbackSubPath of FallbackClaim instead, with the init
	// container FallbackInit (as the shared layout renders it) making a
	// missing directory; "" and nil otherwise.
	FallbackClaim, FallbackSubPath string
	FallbackInit                   map[string]any
}

// Document is the JSON kept beside the Python file in the ConfigMap: the
// settings and the co-location label, no user. "home" says where homes
// that are not a claim of their own are: in the shared layout
// {"shared_claim", "sub_path"}; while homes move out of it
// {"fallback_claim", "fallback_sub_path", "fallback_init_container"}, used
// at a spawn whose claim does not exist.
func (r Result) Document() map[string]any {
	d := map[string]any{"KubeSpawner": r.Settings, "colocation": r.Colocation}
	switch {
	case r.SharedClaim != "":
		d["home"] = map[string]any{"shared_claim": r.SharedClaim, "sub_path": r.SharedSubPath}
	case r.FallbackClaim != "":
		d["home"] = map[string]any{"fallback_claim": r.FallbackClaim, "fallback_sub_path": r.FallbackSubPath, "fallback_init_container": r.FallbackInit}
	}
	return d
}

// homesClaim is the claim holding users' homes as directories: the shared
// layout's, or the one homes are moving out of; "" in the per-user layout.
func (r Result) homesClaim() string {
	if r.SharedClaim != "" {
		return r.SharedClaim
	}
	return r.FallbackClaim
}

// homeKeys are the settings jupyter_home_storage owns; extra settings may
// not replace them (volumes and volume_mounts are appended to instead).
var homeKeys = []string{"storage_pvc_ensure", "storage_access_modes", "storage_capacity", "storage_class",
	"enable_user_namespaces", "user_namespace_template",
	"pvc_name_template", "slug_scheme", "storage_extra_labels"}

// Build combines the inputs into KubeSpawner settings and derives
// co-location. Errors name the attribute at fault.
func Build(c Config) (Result, []claims.Finding) {
	r := Result{Settings: map[string]any{}}
	if f, ok := r.takeHome(deepCopy(c.Home)); !ok {
		return r, []claims.Finding{f}
	}
	var errs []claims.Finding
	if c.HomeMountPath != "" {
		if f, ok := checkHomeMountPath(c.HomeMountPath); !ok {
			errs = append(errs, f)
		} else {
			r.HomeMountPath = c.HomeMountPath
			setHomeMountPath(r.Settings, c.HomeMountPath)
		}
	}
	r.Colocation = colocation(r.AccessMode, c.ColocationLabel)
	extra := deepCopy(c.Extra)
	for _, k := range slices.Sorted(maps.Keys(extra)) { // findings in one order, run to run
		errs = append(errs, r.addExtra(k, extra[k])...)
	}
	errs = append(errs, r.addProfiles(c.Profiles)...)
	return r, errs
}

// takeHome reads the home storage's settings into r: its access mode, its
// settings (all but kubespawner.SplitFromKey), where it mounts the home,
// the shared layout's claim and sub-path, and the move out of it.
func (r *Result) takeHome(home map[string]any) (claims.Finding, bool) {
	modes, _ := home["storage_access_modes"].([]any)
	if len(modes) != 1 {
		return claims.Finding{Attribute: "home_storage_settings", Summary: "No home access mode", Detail: "home_storage_settings must be the spawner_settings of a jupyter_home_storage (a JSON object with storage_access_modes); pass jupyter_home_storage.<name>.spawner_settings."}, false
	}
	r.AccessMode, _ = modes[0].(string)
	for k, v := range home {
		if k != kubespawner.SplitFromKey {
			r.Settings[k] = v
		}
	}
	r.HomeMountPath = homeMountPath(r.Settings)
	r.SharedClaim = sharedClaim(r.Settings)
	if r.SharedClaim != "" {
		r.SharedSubPath = homeSubPath(r.Settings)
	}
	if from, ok := home[kubespawner.SplitFromKey]; ok {
		return r.splitFrom(from)
	}
	return claims.Finding{}, true
}

// colocation pins every user's pods to one node unless homes are
// ReadWriteMany, where the claim each server mounts decides (label ""
// means DefaultColocationLabel).
func colocation(accessMode, label string) Colocation {
	if label == "" {
		label = DefaultColocationLabel
	}
	c := Colocation{Mode: ColocateByClaim, Label: label, TopologyKey: HostnameTopologyKey}
	if accessMode != claims.RWX {
		c.Mode = ColocateAll
	}
	return c
}

// addExtra adds the extra setting k: the settings profiles and the home
// storage own are refused, the named lists are appended to the home's,
// the rest set as given.
func (r *Result) addExtra(k string, v any) []claims.Finding {
	switch {
	case k == "profile_list":
		return []claims.Finding{{Attribute: "extra_settings_json", Summary: "profile_list is set by profiles", Detail: "Remove profile_list from extra_settings_json and pass the profiles' profile_json in profiles."}}
	case k == "modify_pod_hook":
		return []claims.Finding{{Attribute: "extra_settings_json", Summary: "modify_pod_hook cannot be JSON", Detail: "A hook is Python; put it in hub.extraConfig. The rendered file keeps any hook set before it and runs it first."}}
	case slices.Contains(homeKeys, k) || k == "delete_pvc" && r.homesClaim() != "":
		return []claims.Finding{{Attribute: "extra_settings_json", Summary: fmt.Sprintf("%s is set by the home storage", k), Detail: fmt.Sprintf("Remove %s from extra_settings_json; it comes from jupyter_home_storage's spawner_settings. Change it there, where the plan checks it against the live claims.", k)}}
	case slices.Contains(NamedLists, k):
		return r.addExtraList(k, v)
	}
	r.Settings[k] = v
	return nil
}

// addExtraList appends the extra named list k to the home's: each entry
// must have its identity, none may mount the shared home again, and no
// name may repeat one the home storage uses (a volume mount aside).
func (r *Result) addExtraList(k string, v any) []claims.Finding {
	extra, ok := v.([]any)
	if !ok {
		return []claims.Finding{{Attribute: "extra_settings_json", Summary: k + " must be a list", Detail: fmt.Sprintf("extra_settings_json.%s is merged by identity with the home's and earlier configuration's %s; give a JSON list of %s.", k, k, k)}}
	}
	if f, ok := checkIdentities(k, extra); !ok {
		return []claims.Finding{f}
	}
	if f, ok := r.checkSharedHome("extra_settings_json", k, extra); !ok {
		return []claims.Finding{f}
	}
	have, homeHas := r.Settings[k].([]any)
	if !homeHas {
		r.Settings[k] = v
		return nil
	}
	var errs []claims.Finding
	for _, e := range extra {
		if n := nameOf(e); n != "" && slices.ContainsFunc(have, func(h any) bool { return nameOf(h) == n }) && k != "volume_mounts" {
			errs = append(errs, claims.Finding{Attribute: "extra_settings_json", Summary: "Duplicate name in " + k, Detail: fmt.Sprintf("extra_settings_json.%s names %q, which the home storage already uses. Choose another name.", k, n)})
		}
	}
	r.Settings[k] = append(have, extra...)
	return errs
}

// addProfiles checks the profiles (distinct slugs, one default at most,
// each a profile that leaves the shared home alone), puts the global
// volumes in front of each one's own and sets profile_list.
func (r *Result) addProfiles(profiles []map[string]any) []claims.Finding {
	var errs []claims.Finding
	slugs := map[string]bool{}
	var defaults []string
	for i, p := range profiles {
		p = deepCopy(p)
		name := ProfileName(p)
		slug, _ := p["slug"].(string)
		if slug != "" && slugs[slug] {
			errs = append(errs, claims.Finding{Attribute: "profiles", Summary: "Duplicate profile slug", Detail: fmt.Sprintf("Two profiles have slug %q; KubeSpawner picks profiles by slug. Give each a distinct slug.", slug)})
		}
		slugs[slug] = true
		if d, _ := p["default"].(bool); d {
			defaults = append(defaults, name)
		}
		if _, ok := p["display_name"].(string); !ok {
			errs = append(errs, claims.Finding{Attribute: "profiles", Summary: "Not a profile", Detail: fmt.Sprintf("profiles[%d] has no display_name; pass the profile_json of a jupyter_spawner_profile.", i)})
		}
		override, _ := p["kubespawner_override"].(map[string]any)
		errs = append(errs, r.checkProfileOverride(name, override)...)
		withGlobalVolumes(p, r.Settings)
		r.Profiles = append(r.Profiles, p)
	}
	if len(defaults) > 1 {
		errs = append(errs, claims.Finding{Attribute: "profiles", Summary: "More than one default profile", Detail: fmt.Sprintf("Profiles %s are all marked default; KubeSpawner uses only one. Set default = true on one profile.", strings.Join(defaults, ", "))})
	}
	if len(r.Profiles) > 0 {
		list := make([]any, len(r.Profiles))
		for i, p := range r.Profiles {
			list[i] = p
		}
		r.Settings["profile_list"] = list
	}
	return errs
}

// checkProfileOverride refuses, with homes on a shared claim, a profile's
// override of the settings the home storage owns, and in any layout a
// profile's volume or mount of the shared home (checkSharedHome).
func (r *Result) checkProfileOverride(name string, override map[string]any) []claims.Finding {
	var errs []claims.Finding
	if r.homesClaim() != "" {
		for _, k := range append([]string{"delete_pvc", "init_containers"}, homeKeys...) {
			if _, set := override[k]; set {
				errs = append(errs, claims.Finding{Attribute: "profiles", Summary: "A profile changes the shared home",
					Detail: fmt.Sprintf("Profile %q sets %s in its kubespawner_override. With homes on shared claim %s it would move its users' servers to other directories or claims than the plan checked, or drop the init container that makes them. Remove it from the profile.", name, k, r.homesClaim())})
			}
		}
	}
	for _, k := range []string{"volumes", "volume_mounts"} {
		if items, _ := override[k].([]any); len(items) > 0 {
			if f, ok := r.checkSharedHome("profiles", k, items); !ok {
				errs = append(errs, f)
			}
		}
	}
	return errs
}

// CheckHomeMountPath returns the plan-time error for a home_mount_path
// that is not an absolute path with KubeSpawner's template fields, or nil.
func CheckHomeMountPath(p string) *claims.Finding {
	if f, ok := checkHomeMountPath(p); !ok {
		return &f
	}
	return nil
}

// NamedLists are the KubeSpawner settings the rendered file merges by
// identity with earlier configuration's (Python).
var NamedLists = []string{"volumes", "volume_mounts", "init_containers", "extra_containers", "tolerations"}

// checkIdentities requires each entry of a named list to be an object with
// the field that identifies it, so that merging (and loading the file
// twice) never adds it twice.
func checkIdentities(kind string, items []any) (claims.Finding, bool) {
	field := "name"
	switch kind {
	case "volume_mounts":
		field = "mountPath"
	case "tolerations":
		return claims.Finding{}, true // identified by key and effect, both optional
	}
	for i, e := range items {
		m, ok := e.(map[string]any)
		if s, _ := m[field].(string); !ok || s == "" {
			return claims.Finding{Attribute: "extra_settings_json", Summary: fmt.Sprintf("%s[%d] has no %s", kind, i, field),
				Detail: fmt.Sprintf("Each entry of extra_settings_json.%s must be an object with a non-empty %q: the rendered file merges %s with earlier configuration's by it.", kind, field, kind)}, false
		}
	}
	return claims.Finding{}, true
}

// checkHomeMountPath accepts an absolute path whose template fields are
// KubeSpawner's.
func checkHomeMountPath(p string) (claims.Finding, bool) {
	bad := func(why string) (claims.Finding, bool) {
		return claims.Finding{Attribute: "home_mount_path", Summary: "Invalid home mount path", Detail: fmt.Sprintf("home_mount_path %q %s. Use an absolute path such as \"/home/jovyan\" (z2jh's singleuser.storage.homeMountPath) or \"/home/{username}\" (Nebari classic).", p, why)}, false
	}
	switch {
	case !strings.HasPrefix(p, "/"):
		return bad("is not absolute")
	case p == "/":
		return bad("is the container's root")
	case slices.Contains(strings.Split(p, "/"), ".."):
		return bad("contains \"..\"")
	case strings.ContainsAny(p, ":\x00"):
		return bad("contains \":\" or a NUL byte, which a volume mount path cannot")
	}
	if err := kubespawner.ValidateTemplate(p); err != nil {
		return bad(fmt.Sprintf("is not a KubeSpawner template (%v); the fields are %s", err, strings.Join(kubespawner.FieldNames(), ", ")))
	}
	return claims.Finding{}, true
}

// homeMountPath is where the home volume is mounted in settings.
func homeMountPath(s map[string]any) string {
	mounts, _ := s["volume_mounts"].([]any)
	for _, m := range mounts {
		if mm, _ := m.(map[string]any); nameOf(m) == kubespawner.HomeVolumeName {
			if p, _ := mm["mountPath"].(string); p != "" {
				return p
			}
		}
	}
	return DefaultHomeMountPath
}

// setHomeMountPath points the home volume's mounts at p.
func setHomeMountPath(s map[string]any, p string) {
	mounts, _ := s["volume_mounts"].([]any)
	for _, m := range mounts {
		if mm, _ := m.(map[string]any); nameOf(m) == kubespawner.HomeVolumeName {
			mm["mountPath"] = p
		}
	}
}

// withGlobalVolumes puts the global volumes (the home first) in front of a
// profile's own: KubeSpawner replaces the volumes and volume_mounts lists
// with a profile's, which would drop the home.
func withGlobalVolumes(p map[string]any, settings map[string]any) {
	o, _ := p["kubespawner_override"].(map[string]any)
	if o == nil {
		return
	}
	for _, k := range []string{"volumes", "volume_mounts"} {
		own, ok := o[k].([]any)
		if !ok {
			continue
		}
		global, _ := settings[k].([]any)
		var merged []any
		for _, g := range global {
			if n := nameOf(g); k == "volume_mounts" || !slices.ContainsFunc(own, func(x any) bool { return nameOf(x) == n }) {
				merged = append(merged, g)
			}
		}
		o[k] = append(merged, own...)
	}
}

// ProfileName is how messages name a profile: its slug, else its display name.
func ProfileName(p map[string]any) string {
	if s, _ := p["slug"].(string); s != "" {
		return s
	}
	s, _ := p["display_name"].(string)
	return fmt.Sprintf("%q", s)
}

func nameOf(v any) string {
	m, _ := v.(map[string]any)
	s, _ := m["name"].(string)
	return s
}

// deepCopy copies a JSON-like value through encoding/json, which also turns
// typed slices and maps ([]string, map[string]string) into []any and
// map[string]any, the shapes the rest of this package reads.
func deepCopy(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	var out map[string]any
	if err := json.Unmarshal([]byte(JSON(m)), &out); err != nil {
		panic(err)
	}
	return out
}

// Warnings are the plan-time warnings about co-location: they name the
// failure mode, the profiles and the fix. nodes may be nil when the cluster
// could not be read; the capacity check is then skipped. colocated is how
// many of one user's servers run at once (a lab and its apps).
func Warnings(r Result, nodes []Node, colocated int) []claims.Finding {
	if r.Colocation.Mode != ColocateAll || len(r.Profiles) == 0 {
		return nil
	}
	why := fmt.Sprintf("The home access mode is %s, so all servers of every user are pinned to one node (required pod affinity on %s).", r.AccessMode, r.Colocation.Label)
	fix := "Fix: switch the home to ReadWriteMany (jupyter_home_storage access_mode = \"ReadWriteMany\") and migrate the homes, which removes co-location."
	var out []claims.Finding
	var gpu []string
	for _, p := range r.Profiles {
		if len(extendedResources(p)) > 0 {
			gpu = append(gpu, ProfileName(p))
		}
	}
	if len(gpu) > 0 {
		names := strings.Join(gpu, ", ")
		out = append(out, claims.Finding{Attribute: "profiles", Summary: "Co-location blocks GPU servers behind running apps", Detail: fmt.Sprintf("%s A user with an app or lab running on a CPU node cannot start GPU profile %s: the new pod must join the node the others run on, which has no GPU, "+
			"so it stays Pending until the spawn timeout, and a cluster autoscaler cannot help (no new node satisfies the affinity). %s", why, names, fix)})
		out = append(out, claims.Finding{Attribute: "profiles", Summary: "Co-location keeps GPU nodes alive", Detail: fmt.Sprintf("%s Apps a user starts while GPU profile %s runs ride along onto the GPU node and keep it busy after the lab stops, so the autoscaler cannot scale it down. %s", why, names, fix)})
	}
	if f, ok := capacity(r, nodes, colocated, why, fix); ok {
		out = append(out, f)
	}
	return out
}

// capacity warns when a lab on the largest profile plus colocated-1 apps
// on the smallest does not fit on any node.
func capacity(r Result, nodes []Node, colocated int, why, fix string) (claims.Finding, bool) {
	if len(nodes) == 0 || colocated < 1 {
		return claims.Finding{}, false
	}
	type g struct {
		name     string
		cpu, mem int64
	}
	var gs []g
	for _, p := range r.Profiles {
		cpu, mem := profileGuarantees(p, r.Settings)
		gs = append(gs, g{ProfileName(p), cpu, mem})
	}
	maxCPU := slices.MaxFunc(gs, func(a, b g) int { return cmpInt(a.cpu, b.cpu) })
	maxMem := slices.MaxFunc(gs, func(a, b g) int { return cmpInt(a.mem, b.mem) })
	minCPU := slices.MinFunc(gs, func(a, b g) int { return cmpInt(a.cpu, b.cpu) })
	minMem := slices.MinFunc(gs, func(a, b g) int { return cmpInt(a.mem, b.mem) })
	n := int64(colocated - 1)
	sumCPU, sumMem := maxCPU.cpu+n*minCPU.cpu, maxMem.mem+n*minMem.mem
	for _, node := range nodes {
		if !node.Unschedulable && node.CPUMillis >= sumCPU && node.MemBytes >= sumMem {
			return claims.Finding{}, false
		}
	}
	largest := slices.MaxFunc(nodes, func(a, b Node) int {
		if c := cmpInt(a.CPUMillis, b.CPUMillis); c != 0 {
			return c
		}
		return cmpInt(a.MemBytes, b.MemBytes)
	})
	return claims.Finding{Attribute: "colocated_servers", Summary: "One user's servers do not fit on one node", Detail: fmt.Sprintf("%s The largest node, %s, has allocatable CPU %s and memory %s. The largest profile guarantees CPU %s (%s) and memory %s (%s); "+
		"a lab on it plus %d app(s) on the smallest profile (CPU %s, memory %s) needs CPU %s and memory %s on one node (colocated_servers = %d). "+
		"The last server to start stays Pending although the cluster may have room elsewhere. %s",
		why, largest.Name, Cores(largest.CPUMillis), Bytes(largest.MemBytes),
		Cores(maxCPU.cpu), maxCPU.name, Bytes(maxMem.mem), maxMem.name,
		n, Cores(minCPU.cpu), Bytes(minMem.mem), Cores(sumCPU), Bytes(sumMem), colocated, fix)}, true
}

// profileGuarantees reads a profile's CPU (millicores) and memory (bytes)
// guarantees, falling back to the global settings.
func profileGuarantees(p, settings map[string]any) (cpu, mem int64) {
	o, _ := p["kubespawner_override"].(map[string]any)
	get := func(k string) any {
		if v, ok := o[k]; ok {
			return v
		}
		return settings[k]
	}
	if f, ok := get("cpu_guarantee").(float64); ok {
		cpu = int64(f*1000 + 0.5)
	}
	switch v := get("mem_guarantee").(type) {
	case float64:
		mem = int64(v)
	case string:
		mem, _ = ParseBytes(v)
	}
	return cpu, mem
}

// extendedResources lists the extended resources (GPUs) a profile asks for.
func extendedResources(p map[string]any) []string {
	o, _ := p["kubespawner_override"].(map[string]any)
	var out []string
	for _, k := range []string{"extra_resource_limits", "extra_resource_guarantees"} {
		m, _ := o[k].(map[string]any)
		for r := range m {
			if !slices.Contains(out, r) {
				out = append(out, r)
			}
		}
	}
	slices.Sort(out)
	return out
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// sharedClaim is the claim the home volume names when it is not the
// user's own ("{pvc_name}"): the shared layout's.
func sharedClaim(settings map[string]any) string {
	vols, _ := settings["volumes"].([]any)
	for _, v := range vols {
		vm, _ := v.(map[string]any)
		if vm == nil || vm["name"] != kubespawner.HomeVolumeName {
			continue
		}
		pvc, _ := vm["persistentVolumeClaim"].(map[string]any)
		if name, _ := pvc["claimName"].(string); name != "" && name != "{pvc_name}" {
			return name
		}
	}
	return ""
}

// checkSharedHome refuses, in the shared layout and while homes move out
// of it, a volume of the shared claim or a mount of the home volume
// besides the home's own: either would give every user's server every
// user's home (the home volume is the shared claim for a user whose home
// has not moved yet).
func (r Result) checkSharedHome(attr, kind string, items []any) (claims.Finding, bool) {
	claim := r.homesClaim()
	if claim == "" {
		return claims.Finding{}, true
	}
	for _, it := range items {
		m, _ := it.(map[string]any)
		if m == nil {
			continue
		}
		switch kind {
		case "volumes":
			pvc, _ := m["persistentVolumeClaim"].(map[string]any)
			if name, _ := pvc["claimName"].(string); name == claim {
				return claims.Finding{Attribute: attr, Summary: "The shared home claim mounted whole",
					Detail: fmt.Sprintf("%s mounts claim %s, which holds every user's home: every server would see, change and delete every home. The home storage mounts each user's directory of it; remove this volume.", attr, claim)}, false
			}
		case "volume_mounts":
			path, _ := m["mountPath"].(string)
			if nameOf(m) == kubespawner.HomeVolumeName || path == r.HomeMountPath {
				return claims.Finding{Attribute: attr, Summary: "Another mount of the home",
					Detail: fmt.Sprintf("%s mounts volume %q at %q. With homes on shared claim %s the home volume is (or, for a home not moved yet, becomes) the claim of every user's home, mounted at the user's directory only: another mount of it (or over the home's path) would give every server every home. Remove this mount.", attr, nameOf(m), path, claim)}, false
			}
		}
	}
	return claims.Finding{}, true
}

// homeSubPath is the subPath of the home volume's mount.
func homeSubPath(settings map[string]any) string {
	mounts, _ := settings["volume_mounts"].([]any)
	for _, m := range mounts {
		mm, _ := m.(map[string]any)
		if mm != nil && mm["name"] == kubespawner.HomeVolumeName {
			sub, _ := mm["subPath"].(string)
			return sub
		}
	}
	return ""
}

// splitFrom reads the home storage's kubespawner.SplitFromKey (homes
// moving out of the shared layout) into r, with the shared layout's
// checks of the claim and sub-path template.
func (r *Result) splitFrom(v any) (claims.Finding, bool) {
	bad := func(why string) (claims.Finding, bool) {
		return claims.Finding{Attribute: "home_storage_settings", Summary: "Invalid home storage settings",
			Detail: fmt.Sprintf("home_storage_settings.%s %s; pass jupyter_home_storage.<name>.spawner_settings unchanged.", kubespawner.SplitFromKey, why)}, false
	}
	m, _ := v.(map[string]any)
	claim, _ := m["claim"].(string)
	sub, _ := m["sub_path"].(string)
	init, _ := m["init_container"].(map[string]any)
	switch {
	case m == nil || claim == "" || sub == "" || init == nil:
		return bad("must be an object with claim, sub_path and init_container")
	case r.SharedClaim != "":
		return bad(fmt.Sprintf("is set while the home volume is shared claim %s", r.SharedClaim))
	case homeSubPath(r.Settings) != "":
		return bad("is set while the home volume mounts a directory")
	case r.Settings["storage_pvc_ensure"] != false || r.Settings["delete_pvc"] != false:
		return bad("is set while KubeSpawner creates or deletes claims (storage_pvc_ensure, delete_pvc): a home not moved yet would get an empty claim")
	case nameOf(init) != kubespawner.SharedInitContainer:
		return bad(fmt.Sprintf("has an init container not named %s", kubespawner.SharedInitContainer))
	}
	if err := kubespawner.CheckSubPathTemplate(sub); err != nil {
		return bad(fmt.Sprintf("has sub-path template %v", err))
	}
	r.FallbackClaim, r.FallbackSubPath, r.FallbackInit = claim, sub, init
	return claims.Finding{}, true
}
