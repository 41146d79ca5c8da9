package hubconfig

import (
	_ "embed"
	"strings"
)

// File names in the ConfigMap. The "90-" prefix sorts the file after a
// chart's own jupyterhub_config.d files (Nebari's are 00- to 03-), so its
// settings win over theirs.
const (
	PythonFile = "90-jupyter-spawner.py"
	// DocumentFile is the document the file applies (Result.Document):
	// JSON compressed with gzip, so that it fits in a ConfigMap and in the
	// hub Secret at tens of thousands of users.
	DocumentFile = "90-jupyter-spawner.json.gz"
	// ConfigDir is where z2jh's hub loads jupyterhub_config.d files from.
	ConfigDir = "/usr/local/etc/jupyterhub/jupyterhub_config.d"
)

// Python is the jupyterhub_config.d file (hub_config.py, verbatim). It
// reads DocumentFile from the directory it was loaded from
// (traitlets' loader and the hub.extraConfig entry give it __file__; z2jh's
// jupyterhub_config.d loader runs it without, so it falls back to
// ConfigDir); a document it cannot read stops the hub's start (JupyterHub
// raises errors of config files). It composes the "KubeSpawner" settings
// with what earlier configuration set (Compose rules):
//
//   - lists of named things (volumes, volume_mounts, init_containers,
//     extra_containers, tolerations) are merged: an entry is identified by
//     its name (a volume mount by its mountPath, a toleration by its key and
//     effect); the provider's entries replace earlier ones with the same
//     identity in place, the rest are appended; earlier volumes that are the
//     home claim under another name, and earlier mounts of a volume the
//     provider defines or dropped, go; nothing else is dropped, and the
//     earlier form (list or dict) is kept;
//   - dicts are merged recursively, the provider's values winning;
//   - profiles are added to the earlier profile_list (a list, a dict or a
//     per-user callable, whose result is composed on each call): a
//     provider profile replaces an earlier one with the same slug, in its
//     place; a provider default takes the default from earlier profiles;
//     the lists of named things in a provider profile's
//     kubespawner_override are merged into the user's at spawn time.
//
// It holds no users. Each spawn is decided from the cluster, after any
// earlier hook: a pre_spawn_hook reads the claim the server is about to
// mount and follows a switched copy, refuses the spawn while the home is
// being copied, rebound or deleted (never letting KubeSpawner create an
// empty claim over a home that moved) and fails when the API server cannot
// be asked; a modify_pod_hook pins the user's pods to one node exactly when
// that claim is ReadWriteOnce or ReadWriteOncePod. Co-location on the label
// is derived there only: the label and every required pod affinity term
// on it that earlier configuration set are removed (from extra_labels and
// extra_pod_config, and from the pod an earlier modify_pod_hook returns);
// the label value is KubeSpawner's label-safe username.
//
// Applying the file twice gives the same configuration as applying it once.
func Python() string { return hubConfig }

//go:embed hub_config.py
var hubConfig string

// FilesDir is where HelmValues puts the rendered file and its document
// in the hub (hub.extraFiles), outside jupyterhub_config.d: a chart may
// mount its own ConfigMap there, and a file cannot be mounted into it.
const FilesDir = "/usr/local/etc/jupyterhub/jupyter-spawner"

// ExtraConfig is the hub.extraConfig entry that applies the file after
// every other hub.extraConfig entry (z2jh runs them, sorted by key, after
// jupyterhub_config.d), so that none of them overrides it: the copy
// HelmValues puts in FilesDir, else the ConfigMap's when it is mounted
// into jupyterhub_config.d.
func ExtraConfig() string {
	return strings.NewReplacer("@FILES@", pyString(FilesDir+"/"+PythonFile), "@CONFIGD@", pyString(ConfigDir+"/"+PythonFile)).Replace(extraConfigTemplate)
}

// ExtraConfigKey sorts after the usual hub.extraConfig keys.
const ExtraConfigKey = "zz-jupyter-spawner"

func pyString(s string) string { return JSON(s) }

const extraConfigTemplate = `# terraform-provider-jupyter: apply jupyter_spawner_config after every other
# hub.extraConfig entry, so that none of them overrides it. hub.extraFiles
# carries the file compressed with gzip; the ConfigMap's is plain text.
import gzip as _jupyter_spawner_gzip
import os as _jupyter_spawner_os

for _jupyter_spawner_path in (@FILES@, @CONFIGD@):
    if _jupyter_spawner_os.path.exists(_jupyter_spawner_path):
        with open(_jupyter_spawner_path, "rb") as _jupyter_spawner_f:
            _jupyter_spawner_src = _jupyter_spawner_f.read()
        if _jupyter_spawner_src[:2] == b"\x1f\x8b":
            _jupyter_spawner_src = _jupyter_spawner_gzip.decompress(_jupyter_spawner_src)
        exec(compile(_jupyter_spawner_src.decode("utf-8"), _jupyter_spawner_path, "exec"), {"c": c, "__file__": _jupyter_spawner_path})
        break
`
