package hubconfig

import (
	"encoding/base64"

	"sigs.k8s.io/yaml"
)

// VolumeName is the hub volume a deployment may use to mount the ConfigMap
// itself (HelmValues does not: it carries the files in hub.extraFiles).
const VolumeName = "jupyter-spawner-config"

// ChecksumAnnotation is the hub pod annotation (z2jh's hub.annotations)
// that carries Checksum: a change of anything the hub reads from the
// provider changes the pod template, so `helm upgrade` restarts the hub.
const ChecksumAnnotation = "checksum/jupyter-spawner"

// Keys of the two files in hub.extraFiles.
const (
	ExtraFilePython   = "jupyter-spawner-py"
	ExtraFileDocument = "jupyter-spawner-json-gz"
)

// HelmValues returns values for the zero-to-jupyterhub chart (the function
// provider::jupyter::helm_values; no attribute holds them). Every key is
// a map, so that they merge with a chart's or a deployer's own values
// files instead of replacing their lists (hub.extraVolumes,
// singleuser.profileList):
//
//   - hub.extraFiles carries the rendered file and its document, both
//     compressed with gzip (binaryData, base64), into FilesDir (the chart
//     keeps them twice in the hub Secret, so compressed they take a third
//     of the room); the hub.extraConfig entry decompresses the file;
//   - hub.extraConfig runs the file after the chart's settings, every
//     jupyterhub_config.d file and every other hub.extraConfig entry, so
//     it composes with all of them (Python);
//   - hub.annotations carries Checksum, so the hub restarts exactly when
//     its configuration from the provider changed;
//   - singleuser.storage states the home the way the chart reads it
//     (homeMountPath, the dynamic claim's class, modes and name template).
//     Its type is left to the chart's or the deployer's values: the file
//     sets the home either way.
//
// f is Render(r).
func HelmValues(r Result, f Files) map[string]any {
	s := r.Settings
	dynamic := map[string]any{"storageAccessModes": s["storage_access_modes"]}
	if v, ok := s["storage_class"]; ok {
		dynamic["storageClass"] = v
	}
	if v, ok := s["pvc_name_template"]; ok {
		dynamic["pvcNameTemplate"] = v
	}
	storage := map[string]any{"dynamic": dynamic, "homeMountPath": r.HomeMountPath}
	if v, ok := s["storage_capacity"]; ok {
		storage["capacity"] = v
	}
	hub := map[string]any{
		"extraFiles": map[string]any{
			ExtraFilePython:   map[string]any{"mountPath": FilesDir + "/" + PythonFile, "binaryData": base64.StdEncoding.EncodeToString(f.PythonGzip)},
			ExtraFileDocument: map[string]any{"mountPath": FilesDir + "/" + DocumentFile, "binaryData": base64.StdEncoding.EncodeToString(f.Document)},
		},
		"extraConfig": map[string]any{ExtraConfigKey: ExtraConfig()},
		"annotations": map[string]any{ChecksumAnnotation: f.Checksum},
	}
	return map[string]any{"singleuser": map[string]any{"storage": storage}, "hub": hub}
}

// HelmYAML renders HelmValues as YAML.
func HelmYAML(v map[string]any) (string, error) {
	b, err := yaml.Marshal(v)
	return string(b), err
}
