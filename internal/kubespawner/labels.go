package kubespawner

// Label and annotation keys KubeSpawner puts on the objects it creates.
const (
	// LabelUsername carries UsernameLabel(username).
	LabelUsername = "hub.jupyter.org/username"
	// LabelServername carries ServernameLabel(servername) on pods (not on
	// PVCs).
	LabelServername = "hub.jupyter.org/servername"
	// LabelComponent is "singleuser-storage" on PVCs (and the component
	// label, "singleuser-server" by default, on pods).
	LabelComponent = "component"
	// LabelAppComponent is the component label, "singleuser-server" by
	// default, on pods and PVCs alike.
	LabelAppComponent = "app.kubernetes.io/component"
	LabelAppName      = "app.kubernetes.io/name"
	LabelAppManagedBy = "app.kubernetes.io/managed-by"
	LabelApp          = "app"
	LabelHeritage     = "heritage"

	// AnnotationUsername carries the raw username.
	AnnotationUsername = "hub.jupyter.org/username"
	// AnnotationServername carries the raw server name, for named servers
	// only.
	AnnotationServername         = "hub.jupyter.org/servername"
	AnnotationKubeSpawnerVersion = "hub.jupyter.org/kubespawner-version"
	AnnotationJupyterHubVersion  = "hub.jupyter.org/jupyterhub-version"
	// AnnotationBetaStorageClass is set on PVCs, together with
	// spec.storageClassName, when storage_class is configured.
	AnnotationBetaStorageClass = "volume.beta.kubernetes.io/storage-class"
)

// Label values.
const (
	// DefaultComponentLabel is KubeSpawner's component_label default.
	DefaultComponentLabel = "singleuser-server"
	// ComponentSingleuserStorage is the fixed "component" label of PVCs.
	ComponentSingleuserStorage = "singleuser-storage"
)

// DefaultCommonLabels returns KubeSpawner's common_labels default. The
// zero-to-jupyterhub chart replaces it with its own chart and release
// labels.
func DefaultCommonLabels() map[string]string {
	return map[string]string{
		LabelAppName:      "jupyterhub",
		LabelAppManagedBy: "kubespawner",
		LabelApp:          "jupyterhub",
		LabelHeritage:     "jupyterhub",
	}
}

// UsernameLabel returns the value of the hub.jupyter.org/username label:
// SafeSlug(username, IsValidLabel, 0). Label rules allow uppercase, '.' and
// '_', and hashed values are at most 32 characters, so this often differs
// from {username}: "Alice" stays "Alice" here but is "alice---3bc51062" as
// a name.
//
// Like upstream, the result may be invalid for Kubernetes when the username
// contains one of the characters IsValidLabel lets through; check it with
// IsValidLabelValue.
func UsernameLabel(username string) (string, error) {
	return SafeSlug(username, IsValidLabel, 0)
}

// ServernameLabel returns the value of the hub.jupyter.org/servername pod
// label: SafeSlug(servername, IsValidLabel, 0), which is "" for the
// default server.
func ServernameLabel(servername string) (string, error) {
	return SafeSlug(servername, IsValidLabel, 0)
}

// PVCMetadata describes a user server for PVC labels and annotations.
type PVCMetadata struct {
	Username   string
	Servername string // "" for the default server
	// ExtraLabels are storage_extra_labels, already expanded.
	ExtraLabels map[string]string
	// CommonLabels are common_labels; nil means DefaultCommonLabels(), an
	// empty non-nil map means none.
	CommonLabels map[string]string
	// ComponentLabel is component_label; "" means DefaultComponentLabel.
	ComponentLabel string
	// ExtraAnnotations are storage_extra_annotations, already expanded.
	ExtraAnnotations map[string]string
	// KubeSpawnerVersion and JupyterHubVersion fill the version
	// annotations; an empty value leaves that annotation out.
	KubeSpawnerVersion string
	JupyterHubVersion  string
}

// PVCLabels returns the labels KubeSpawner's get_pvc_manifest puts on a
// user's PVC, merged in upstream's order (later entries win):
//
//  1. hub.jupyter.org/username = UsernameLabel(username);
//  2. the extra labels;
//  3. the common labels;
//  4. app.kubernetes.io/component = component label, and
//     component = singleuser-storage.
func PVCLabels(m PVCMetadata) (map[string]string, error) {
	user, err := UsernameLabel(m.Username)
	if err != nil {
		return nil, err
	}
	labels := map[string]string{LabelUsername: user}
	for k, v := range m.ExtraLabels {
		labels[k] = v
	}
	common := m.CommonLabels
	if common == nil {
		common = DefaultCommonLabels()
	}
	for k, v := range common {
		labels[k] = v
	}
	component := m.ComponentLabel
	if component == "" {
		component = DefaultComponentLabel
	}
	labels[LabelAppComponent] = component
	labels[LabelComponent] = ComponentSingleuserStorage
	return labels, nil
}

// PVCAnnotations returns the annotations KubeSpawner's
// _build_common_annotations puts on a user's PVC (later entries win):
// hub.jupyter.org/username = the raw username, hub.jupyter.org/servername =
// the raw server name (named servers only), the two version annotations,
// then the extra annotations. The storage-class annotation is not included;
// it belongs with the PVC spec (AnnotationBetaStorageClass).
func PVCAnnotations(m PVCMetadata) map[string]string {
	ann := map[string]string{AnnotationUsername: m.Username}
	if m.Servername != "" {
		ann[AnnotationServername] = m.Servername
	}
	if m.KubeSpawnerVersion != "" {
		ann[AnnotationKubeSpawnerVersion] = m.KubeSpawnerVersion
	}
	if m.JupyterHubVersion != "" {
		ann[AnnotationJupyterHubVersion] = m.JupyterHubVersion
	}
	for k, v := range m.ExtraAnnotations {
		ann[k] = v
	}
	return ann
}
