package spawner

import (
	"strings"
)

// File names in the ConfigMap. The "90-" prefix sorts the file after a
// chart's own jupyterhub_config.d files (Nebari's are 00- to 03-), so its
// settings win over theirs.
const (
	PythonFile = "90-jupyter-spawner.py"
	JSONFile   = "90-jupyter-spawner.json"
	// ConfigDir is where z2jh's hub loads jupyterhub_config.d files from.
	ConfigDir = "/usr/local/etc/jupyterhub/jupyterhub_config.d"
)

// Python renders the jupyterhub_config.d file. It reads JSONFile from the
// directory it was loaded from (traitlets' loader gives it __file__; z2jh's
// loader executes it without, so it falls back to ConfigDir), applies
// the "KubeSpawner" settings to c.KubeSpawner, and arranges co-location:
//
//   - it first removes the co-location label and any required pod affinity
//     term on it that earlier configuration set (a chart's own file), so
//     that co-location on that label is derived here only;
//   - with home_claims, it installs a pre_spawn_hook that points a user
//     whose home was copied to a new claim at that claim (after KubeSpawner
//     restored the remembered name), running any earlier hook first;
//   - unless the mode is "none", it installs a modify_pod_hook that gives
//     the pods of the users concerned the label and a required pod
//     affinity on it. The hook runs any hook set before it first, and
//     applying the file twice installs it once.
//
// The label value is KubeSpawner's label-safe username: in mode "all" the
// hook copies the pod's own hub.jupyter.org/username label, in mode
// "legacy" it is the value listed for the user. Label and affinity always
// carry the same value.
func Python() string {
	return strings.NewReplacer(
		"@PYTHON_FILE@", pyString(PythonFile),
		"@JSON_FILE@", pyString(JSONFile),
		"@CONFIG_DIR@", pyString(ConfigDir),
	).Replace(pythonTemplate)
}

// ExtraConfig is the hub.extraConfig entry that applies the mounted file
// once more after every other hub.extraConfig entry (z2jh runs them, sorted
// by key, after jupyterhub_config.d), so that none of them overrides it.
func ExtraConfig() string {
	return strings.NewReplacer("@PATH@", pyString(ConfigDir+"/"+PythonFile)).Replace(extraConfigTemplate)
}

// ExtraConfigKey sorts after the usual hub.extraConfig keys.
const ExtraConfigKey = "zz-jupyter-spawner"

func pyString(s string) string { return JSON(s) }

const pythonTemplate = `# Rendered by terraform-provider-jupyter (jupyter_spawner_config); the next
# apply overwrites it. It applies the KubeSpawner settings kept beside it in
# the same ConfigMap and derives the co-location of a user's pods.


def _jupyter_spawner_config(c, here):
    import copy
    import inspect
    import json
    import os

    config_dir = @CONFIG_DIR@
    if here and os.path.basename(here) == @PYTHON_FILE@:
        config_dir = os.path.dirname(os.path.abspath(here))
    with open(os.path.join(config_dir, @JSON_FILE@)) as f:
        doc = json.load(f)
    spawner = c.KubeSpawner
    colocation = doc["colocation"]
    key = colocation["label"]
    required = "requiredDuringSchedulingIgnoredDuringExecution"

    def current(name):
        return spawner[name] if name in spawner else None

    def pick(d, camel, snake):
        return camel if camel in d or snake not in d else snake

    def selects(term):
        selector = term.get("labelSelector", term.get("label_selector")) if isinstance(term, dict) else None
        if not isinstance(selector, dict):
            return False
        exprs = selector.get("matchExpressions", selector.get("match_expressions")) or []
        labels = selector.get("matchLabels", selector.get("match_labels")) or {}
        return key in labels or any(isinstance(e, dict) and e.get("key") == key for e in exprs)

    # Co-location on this label is derived here only: drop what earlier
    # configuration set on it, keeping everything else.
    labels = current("extra_labels")
    if isinstance(labels, dict) and key in labels:
        spawner.extra_labels = {k: v for k, v in labels.items() if k != key}
    pod_config = current("extra_pod_config")
    if isinstance(pod_config, dict):
        pod_config = copy.deepcopy(pod_config)
        aff_key = "affinity"
        affinity = pod_config.get(aff_key)
        if isinstance(affinity, dict):
            pa_key = pick(affinity, "podAffinity", "pod_affinity")
            pod_affinity = affinity.get(pa_key)
            if isinstance(pod_affinity, dict):
                req_key = pick(pod_affinity, required, "required_during_scheduling_ignored_during_execution")
                terms = pod_affinity.get(req_key)
                if isinstance(terms, list):
                    kept = [t for t in terms if not selects(t)]
                    if kept:
                        pod_affinity[req_key] = kept
                    else:
                        del pod_affinity[req_key]
                if not pod_affinity:
                    del affinity[pa_key]
            if not affinity:
                del pod_config[aff_key]
        spawner.extra_pod_config = pod_config

    for name, value in doc["KubeSpawner"].items():
        spawner[name] = value

    # Users whose home was copied to a new claim: KubeSpawner restores the
    # old pvc_name from its state (remember_pvc_name) before the spawn, so
    # a pre_spawn_hook sets the new one.
    home_claims = doc.get("home_claims") or {}
    previous_pre = current("pre_spawn_hook")
    previous_pre = getattr(previous_pre, "jupyter_spawner_previous", previous_pre)
    if home_claims:
        async def use_copied_home(spawner):
            if previous_pre is not None:
                r = previous_pre(spawner)
                if inspect.isawaitable(r):
                    await r
            name = home_claims.get(spawner.user.name)
            if name:
                spawner.pvc_name = name

        use_copied_home.jupyter_spawner_previous = previous_pre
        spawner.pre_spawn_hook = use_copied_home
    elif previous_pre is not None:
        spawner.pre_spawn_hook = previous_pre
    elif "pre_spawn_hook" in spawner:
        del spawner["pre_spawn_hook"]

    previous = current("modify_pod_hook")
    previous = getattr(previous, "jupyter_spawner_previous", previous)
    if colocation["mode"] == "none":
        if previous is None:
            if "modify_pod_hook" in spawner:
                del spawner["modify_pod_hook"]
        else:
            spawner.modify_pod_hook = previous
        return

    users = colocation["users"] or {}

    def add_term(holder, term):
        terms = holder.setdefault(pick(holder, required, "required_during_scheduling_ignored_during_execution"), [])
        if term not in terms:
            terms.append(term)

    async def colocate_user_pods(spawner, pod):
        if previous is not None:
            pod = previous(spawner, pod)
            if inspect.isawaitable(pod):
                pod = await pod
        if colocation["mode"] == "all":
            value = (pod.metadata.labels or {}).get("hub.jupyter.org/username")
        else:
            value = users.get(spawner.user.name)
        if not value:
            return pod
        labels = dict(pod.metadata.labels or {})
        labels[key] = value
        pod.metadata.labels = labels
        term = {
            "labelSelector": {"matchExpressions": [{"key": key, "operator": "In", "values": [value]}]},
            "topologyKey": colocation["topology_key"],
        }
        affinity = pod.spec.affinity
        if affinity is None:
            pod.spec.affinity = {"podAffinity": {required: [term]}}
        elif isinstance(affinity, dict):
            add_term(affinity.setdefault(pick(affinity, "podAffinity", "pod_affinity"), {}), term)
        elif affinity.pod_affinity is None:
            affinity.pod_affinity = {required: [term]}
        elif isinstance(affinity.pod_affinity, dict):
            add_term(affinity.pod_affinity, term)
        else:
            terms = list(affinity.pod_affinity.required_during_scheduling_ignored_during_execution or [])
            if term not in terms:
                terms.append(term)
            affinity.pod_affinity.required_during_scheduling_ignored_during_execution = terms
        return pod

    colocate_user_pods.jupyter_spawner_previous = previous
    spawner.modify_pod_hook = colocate_user_pods


_jupyter_spawner_config(c, globals().get("__file__"))
del _jupyter_spawner_config
`

const extraConfigTemplate = `# terraform-provider-jupyter: apply jupyter_spawner_config once more, after
# every other hub.extraConfig entry, so that none of them overrides it.
import os as _jupyter_spawner_os

if _jupyter_spawner_os.path.exists(@PATH@):
    with open(@PATH@) as _jupyter_spawner_f:
        exec(compile(_jupyter_spawner_f.read(), @PATH@, "exec"), {"c": c, "__file__": @PATH@})
`
