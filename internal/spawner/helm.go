package spawner

import (
	"slices"

	"sigs.k8s.io/yaml"
)

// VolumeName is the hub volume that carries the ConfigMap.
const VolumeName = "jupyter-spawner-config"

// chartStorageKeys are the settings singleuser.storage expresses; the
// others go to hub.config.KubeSpawner.
var chartStorageKeys = []string{"storage_pvc_ensure", "storage_access_modes", "storage_capacity", "storage_class", "pvc_name_template", "profile_list"}

// HelmValues returns values for the zero-to-jupyterhub chart that express
// r where the chart has a key for it, and mount the ConfigMap configMap
// into the hub's jupyterhub_config.d, where the rendered file applies what
// the chart cannot express (the co-location hook). projected are other
// ConfigMaps that must be mounted there too (z2jh's hub.extraVolumes
// replace, not merge; Nebari's data-science-pack mounts its own there):
// they share one projected volume.
func HelmValues(r Result, configMap string, projected []string) map[string]any {
	s := r.Settings
	dynamic := map[string]any{"storageAccessModes": s["storage_access_modes"]}
	if v, ok := s["storage_class"]; ok {
		dynamic["storageClass"] = v
	}
	if v, ok := s["pvc_name_template"]; ok {
		dynamic["pvcNameTemplate"] = v
	}
	storage := map[string]any{"type": "dynamic", "dynamic": dynamic, "homeMountPath": homeMountPath(s)}
	if v, ok := s["storage_capacity"]; ok {
		storage["capacity"] = v
	}
	singleuser := map[string]any{"storage": storage}
	if len(r.Profiles) > 0 {
		list := make([]any, len(r.Profiles))
		for i, p := range r.Profiles {
			list[i] = p
		}
		singleuser["profileList"] = list
	}
	spawner := map[string]any{}
	for k, v := range s {
		if !slices.Contains(chartStorageKeys, k) {
			spawner[k] = v
		}
	}
	var volume map[string]any
	if len(projected) == 0 {
		volume = map[string]any{"name": VolumeName, "configMap": map[string]any{"name": configMap}}
	} else {
		var sources []any
		for _, cm := range append(slices.Clone(projected), configMap) {
			sources = append(sources, map[string]any{"configMap": map[string]any{"name": cm}})
		}
		volume = map[string]any{"name": VolumeName, "projected": map[string]any{"sources": sources}}
	}
	hub := map[string]any{
		"config":            map[string]any{"KubeSpawner": spawner},
		"extraConfig":       map[string]any{ExtraConfigKey: ExtraConfig()},
		"extraVolumes":      []any{volume},
		"extraVolumeMounts": []any{map[string]any{"name": VolumeName, "mountPath": ConfigDir}},
	}
	return map[string]any{"singleuser": singleuser, "hub": hub}
}

// HelmYAML renders HelmValues as YAML.
func HelmYAML(v map[string]any) (string, error) {
	b, err := yaml.Marshal(v)
	return string(b), err
}

// homeMountPath is where the home volume is mounted.
func homeMountPath(s map[string]any) string {
	mounts, _ := s["volume_mounts"].([]any)
	for _, m := range mounts {
		if mm, _ := m.(map[string]any); nameOf(m) == "home" {
			if p, _ := mm["mountPath"].(string); p != "" {
				return p
			}
		}
	}
	return "/home/jovyan"
}
