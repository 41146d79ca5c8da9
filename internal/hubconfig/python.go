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
// reads DocumentFile from the directory it was loaded from (traitlets'
// loader and the hub.extraConfig entry give it __file__; z2jh's
// jupyterhub_config.d loader runs it without, so it falls back to
// ConfigDir); a document it cannot read stops the hub's start (JupyterHub
// raises errors of config files). It composes the document's "KubeSpawner"
// settings with what earlier configuration set, and decides each spawn
// from the cluster (the claim a server mounts, whether the user's pods
// share a node); the rules are stated in hub_config.py, beside the code
// that applies them. It holds no users. Applying the file twice gives the
// same configuration as applying it once.
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
