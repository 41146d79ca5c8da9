package kubespawner

// HomeStorage describes a deployment's home storage, as jupyter_home_storage configures it.
type HomeStorage struct {
	AccessMode   string
	StorageClass string // "" leaves the cluster default
	Capacity     string
	NameTemplate string
	Scheme       Scheme
	MountPath    string // default /home/jovyan
	ExtraLabels  map[string]string
	// UserNamespaceTemplate turns on KubeSpawner's per-user namespaces.
	UserNamespaceTemplate string
}

// HomeVolumeName is the name of the home volume in the pod spec, as
// zero-to-jupyterhub names it.
const HomeVolumeName = "home"

// Settings returns the KubeSpawner traitlets this home storage implies,
// keyed by traitlet name, ready to be applied to c.KubeSpawner. The home
// volume mounts "{pvc_name}", which KubeSpawner expands to the claim it
// resolved for the user (remembered names included).
func (h HomeStorage) Settings() map[string]any {
	mount := h.MountPath
	if mount == "" {
		mount = "/home/jovyan"
	}
	s := map[string]any{
		"storage_pvc_ensure":   true,
		"storage_access_modes": []string{h.AccessMode},
		"storage_capacity":     h.Capacity,
		"pvc_name_template":    h.NameTemplate,
		"slug_scheme":          string(h.Scheme),
		"volumes": []map[string]any{{
			"name":                  HomeVolumeName,
			"persistentVolumeClaim": map[string]any{"claimName": "{pvc_name}"},
		}},
		"volume_mounts": []map[string]any{{"name": HomeVolumeName, "mountPath": mount}},
	}
	if h.StorageClass != "" {
		s["storage_class"] = h.StorageClass
	}
	if h.UserNamespaceTemplate != "" {
		s["enable_user_namespaces"] = true
		s["user_namespace_template"] = h.UserNamespaceTemplate
	}
	if len(h.ExtraLabels) > 0 {
		s["storage_extra_labels"] = h.ExtraLabels
	}
	return s
}
