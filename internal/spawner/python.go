package spawner

import (
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
	// JSONFile is the plain JSON document provider versions before
	// DocumentFile wrote; the file reads it only when DocumentFile is
	// absent.
	JSONFile = "90-jupyter-spawner.json"
	// ConfigDir is where z2jh's hub loads jupyterhub_config.d files from.
	ConfigDir = "/usr/local/etc/jupyterhub/jupyterhub_config.d"
)

// Python renders the jupyterhub_config.d file. It reads DocumentFile (else
// JSONFile) from the directory it was loaded from (traitlets' loader and
// the hub.extraConfig entry give it __file__; z2jh's jupyterhub_config.d
// loader runs it without, so it falls back to ConfigDir); a document it
// cannot read stops the hub's start (JupyterHub raises errors of config
// files), so no server is spawned without the users' home claims. It
// composes the "KubeSpawner"
// settings with what earlier configuration set (Compose rules):
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
//     kubespawner_override are merged into the user's at spawn time;
//   - co-location on the label is derived here only: the label and every
//     required pod affinity term on it that earlier configuration set are
//     removed (from extra_labels and extra_pod_config, and from the pod an
//     earlier modify_pod_hook returns), and the hook adds its own for the
//     users concerned; the label value is KubeSpawner's label-safe
//     username, so label and affinity always carry the same value;
//   - with home_claims, a pre_spawn_hook points a user whose home was
//     copied to a new claim at that claim, running any earlier hook first.
//
// Applying the file twice gives the same configuration as applying it once.
func Python() string {
	return strings.NewReplacer(
		"@PYTHON_FILE@", pyString(PythonFile),
		"@JSON_FILE@", pyString(JSONFile),
		"@DOCUMENT_FILE@", pyString(DocumentFile),
		"@CONFIG_DIR@", pyString(ConfigDir),
	).Replace(pythonTemplate)
}

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

const pythonTemplate = `# Rendered by terraform-provider-jupyter (jupyter_spawner_config); the next
# apply overwrites it. It composes the KubeSpawner settings kept beside it
# with what earlier configuration set, and derives the co-location of a
# user's pods. Loading it twice gives the same configuration as once.


def _jupyter_spawner_config(c, here):
    import copy
    import gzip
    import inspect
    import json
    import os

    config_dir = @CONFIG_DIR@
    if here and os.path.basename(here) == @PYTHON_FILE@:
        config_dir = os.path.dirname(os.path.abspath(here))
    # The document is gzip-compressed JSON; a plain JSON one is what older
    # provider versions wrote. One that cannot be read stops the hub from
    # starting: without it a copied user's server would mount the old home.
    path = os.path.join(config_dir, @DOCUMENT_FILE@)
    try:
        if os.path.exists(path):
            with gzip.open(path, "rt", encoding="utf-8") as f:
                doc = json.load(f)
        else:
            path = os.path.join(config_dir, @JSON_FILE@)
            with open(path, encoding="utf-8") as f:
                doc = json.load(f)
    except Exception as e:  # OSError, EOFError, zlib.error, ValueError
        raise RuntimeError("jupyter_spawner_config: cannot read %s: %s" % (path, e)) from e
    spawner = c.KubeSpawner
    colocation = doc["colocation"]
    key = colocation["label"]
    required = "requiredDuringSchedulingIgnoredDuringExecution"
    required_snake = "required_during_scheduling_ignored_during_execution"
    named = ("volumes", "volume_mounts", "init_containers", "extra_containers", "tolerations")  # NamedLists

    def current(name):
        return spawner[name] if name in spawner else None

    def unwrap(value):
        return getattr(value, "jupyter_spawner_previous", value)

    def pick(d, camel, snake):
        return camel if camel in d or snake not in d else snake

    def field(obj, camel, snake):
        if isinstance(obj, dict):
            return obj.get(camel, obj.get(snake))
        return getattr(obj, snake, None)

    def selects(term):
        selector = field(term, "labelSelector", "label_selector")
        if selector is None:
            return False
        exprs = field(selector, "matchExpressions", "match_expressions") or []
        labels = field(selector, "matchLabels", "match_labels") or {}
        return key in labels or any(field(e, "key", "key") == key for e in exprs)

    # -- lists of named things ------------------------------------------------
    # An entry is identified by its name; a volume mount by its mountPath and
    # a toleration by its key and effect. The provider's entries replace
    # earlier ones with the same identity (in place); earlier volumes that
    # are the home claim under another name, and earlier mounts of a volume
    # the provider defines or dropped, go too. Everything else stays, in the
    # form (list or dict) earlier configuration chose.
    home_claims_names = {"{pvc_name}"}

    def ident(kind, item):
        if not isinstance(item, dict):
            return None
        if kind == "volume_mounts":
            return item.get("mountPath", item.get("mount_path"))
        if kind == "tolerations":
            return (item.get("key"), item.get("effect"))
        return item.get("name")

    def claim_of(volume):
        pvc = field(volume, "persistentVolumeClaim", "persistent_volume_claim") if isinstance(volume, dict) else None
        return field(pvc, "claimName", "claim_name") if pvc is not None else None

    def merge_named(kind, earlier, own, dropped_volumes=None):
        own = list(own)
        ids = {ident(kind, x) for x in own} - {None}

        def drop(item):
            if ident(kind, item) in ids:
                return True
            if kind == "volumes":
                return claim_of(item) in home_claims_names and claim_of(item) is not None
            if kind == "volume_mounts" and isinstance(item, dict):
                name = item.get("name")
                return name in (dropped_volumes or set())
            return False

        def merged_list(items):
            out, used = [], set()
            by_id = {ident(kind, x): x for x in own}
            for item in items:
                i = ident(kind, item)
                if i in ids:
                    if i not in used:
                        out.append(copy.deepcopy(by_id[i]))
                        used.add(i)
                elif not drop(item):
                    out.append(item)
            out.extend(copy.deepcopy(x) for x in own if ident(kind, x) not in used)
            return out

        if isinstance(earlier, dict):
            out = {k: v for k, v in earlier.items() if not drop(v)}
            for x in own:
                k = str(x.get("name")) if kind != "tolerations" else "%s:%s" % ident(kind, x)
                if k in out and ident(kind, out[k]) != ident(kind, x):
                    k = "jupyter-spawner-" + k
                out[k] = copy.deepcopy(x)
            return out
        return merged_list(list(earlier or []))

    def dropped_volume_names(earlier, own):
        names = set(x.get("name") for x in own if isinstance(x, dict)) - {None}
        values = earlier.values() if isinstance(earlier, dict) else (earlier or [])
        for v in values:
            if isinstance(v, dict) and claim_of(v) in home_claims_names:
                names.add(v.get("name"))
        return names

    def merge_dict(earlier, own):
        out = dict(earlier)
        for k, v in own.items():
            if isinstance(v, dict) and isinstance(out.get(k), dict):
                out[k] = merge_dict(out[k], v)
            else:
                out[k] = copy.deepcopy(v)
        return out

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
                req_key = pick(pod_affinity, required, required_snake)
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

    settings = doc["KubeSpawner"]
    earlier_template = current("pvc_name_template")
    if isinstance(earlier_template, str):
        home_claims_names.add(earlier_template)
    if isinstance(settings.get("pvc_name_template"), str):
        home_claims_names.add(settings["pvc_name_template"])
    dropped = dropped_volume_names(current("volumes"), settings.get("volumes") or [])
    for name, value in settings.items():
        if name == "profile_list":
            continue
        earlier = current(name)
        if name in named and isinstance(value, list):
            spawner[name] = merge_named(name, earlier, value, dropped)
        elif isinstance(value, dict) and isinstance(earlier, dict):
            spawner[name] = merge_dict(earlier, value)
        else:
            spawner[name] = copy.deepcopy(value)

    # -- profiles ---------------------------------------------------------------
    # The provider's profiles are added to what earlier configuration offers
    # (a list, a dict or a per-user callable, whose result is composed on
    # each call). A provider profile replaces an earlier one with the same
    # slug, in its place; the others come after. When a provider profile is
    # the default, earlier profiles lose their default. A profile's lists of
    # named things are merged into the user's at spawn time, not replaced.
    own_profiles = settings.get("profile_list") or []

    def profile_id(p):
        return (p.get("slug") or p.get("display_name")) if isinstance(p, dict) else None

    class ComposedList(list):
        # A profile's own list of named things: it reads (and serializes to
        # JSON, for jhub-apps' server types) as that list, and KubeSpawner,
        # which calls a callable override with the spawner, gets the list
        # merged into the user's instead of replacing it.
        def __call__(self, spawner):
            return merge_named(self.kind, getattr(spawner, self.kind), list(self))

    def composed_override(kind, own):
        composed = ComposedList(own)
        composed.kind = kind
        return composed

    def provider_profile(p):
        p = copy.deepcopy(p)
        override = p.get("kubespawner_override")
        if isinstance(override, dict):
            for kind in named:
                if isinstance(override.get(kind), list):
                    override[kind] = composed_override(kind, override[kind])
        return p

    def compose_profiles(earlier):
        if isinstance(earlier, dict):
            earlier = [earlier[k] for k in sorted(earlier)]
        ids = {profile_id(p): p for p in own_profiles}
        own_default = any(p.get("default") for p in own_profiles)
        out, used = [], set()
        for p in earlier or []:
            i = profile_id(p)
            if i in ids:
                if i not in used:
                    out.append(provider_profile(ids[i]))
                    used.add(i)
                continue
            if own_default and isinstance(p, dict) and p.get("default"):
                p = dict(p, default=False)
            out.append(p)
        out.extend(provider_profile(p) for p in own_profiles if profile_id(p) not in used)
        return out

    earlier_profiles = unwrap(current("profile_list"))
    if own_profiles:
        if callable(earlier_profiles):
            async def composed_profile_list(spawner):
                result = earlier_profiles(spawner)
                if inspect.isawaitable(result):
                    result = await result
                return compose_profiles(result)

            composed_profile_list.jupyter_spawner_previous = earlier_profiles
            spawner.profile_list = composed_profile_list
        else:
            spawner.profile_list = compose_profiles(earlier_profiles)
    elif earlier_profiles is not None:
        spawner.profile_list = earlier_profiles

    # Users whose home was copied to a new claim: KubeSpawner restores the
    # old pvc_name from its state (remember_pvc_name) before the spawn, so
    # a pre_spawn_hook sets the new one.
    home_claims = doc.get("home_claims") or {}
    previous_pre = unwrap(current("pre_spawn_hook"))
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

    # -- co-location --------------------------------------------------------------
    # The hook runs any earlier hook first, then removes the label and every
    # required pod affinity term on it that the earlier hook (or
    # extra_pod_config) added, and adds its own for the users concerned.
    previous = unwrap(current("modify_pod_hook"))
    if colocation["mode"] == "none" and previous is None:
        if "modify_pod_hook" in spawner:
            del spawner["modify_pod_hook"]
        return

    users = colocation["users"] or {}

    def strip(pod):
        labels = pod.metadata.labels
        if labels and key in labels:
            pod.metadata.labels = {k: v for k, v in labels.items() if k != key}
        affinity = pod.spec.affinity
        if affinity is None:
            return
        if isinstance(affinity, dict):
            pa_key = pick(affinity, "podAffinity", "pod_affinity")
            pod_affinity = affinity.get(pa_key)
        else:
            pod_affinity = affinity.pod_affinity
        if isinstance(pod_affinity, dict):
            req_key = pick(pod_affinity, required, required_snake)
            terms = pod_affinity.get(req_key)
            if isinstance(terms, list):
                kept = [t for t in terms if not selects(t)]
                if kept:
                    pod_affinity[req_key] = kept
                else:
                    del pod_affinity[req_key]
            if isinstance(affinity, dict) and not pod_affinity:
                del affinity[pa_key]
        elif pod_affinity is not None:
            terms = pod_affinity.required_during_scheduling_ignored_during_execution
            if terms:
                kept = [t for t in terms if not selects(t)]
                pod_affinity.required_during_scheduling_ignored_during_execution = kept or None
        if isinstance(affinity, dict) and not affinity:
            pod.spec.affinity = None

    def add_term(holder, term):
        terms = holder.setdefault(pick(holder, required, required_snake), [])
        if term not in terms:
            terms.append(term)

    async def colocate_user_pods(spawner, pod):
        if previous is not None:
            pod = previous(spawner, pod)
            if inspect.isawaitable(pod):
                pod = await pod
        strip(pod)
        if colocation["mode"] == "all":
            value = (pod.metadata.labels or {}).get("hub.jupyter.org/username")
        elif colocation["mode"] == "legacy":
            value = users.get(spawner.user.name)
        else:
            value = None
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

const extraConfigTemplate = `# terraform-provider-jupyter: apply jupyter_spawner_config after every other
# hub.extraConfig entry, so that none of them overrides it.
import os as _jupyter_spawner_os

for _jupyter_spawner_path in (@FILES@, @CONFIGD@):
    if _jupyter_spawner_os.path.exists(_jupyter_spawner_path):
        with open(_jupyter_spawner_path) as _jupyter_spawner_f:
            exec(compile(_jupyter_spawner_f.read(), _jupyter_spawner_path, "exec"), {"c": c, "__file__": _jupyter_spawner_path})
        break
`
