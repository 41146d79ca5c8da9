# Rendered by terraform-provider-jupyter (jupyter_spawner_config); the next
# apply overwrites it. It composes the KubeSpawner settings kept beside it
# with what earlier configuration set, and decides each spawn from the
# cluster: which claim the server mounts (a home that was moved is followed,
# a home being moved is never replaced by an empty one; while homes move
# out of the shared layout, a server without a claim yet mounts the user's
# directory of the shared claim) and whether the user's pods share a node
# (from that claim's access mode). It holds no users: a migration changes
# nothing here and needs no restart of the hub.
# Loading it twice gives the same configuration as once.


def _jupyter_spawner_config(c, here):
    import asyncio
    import copy
    import gzip
    import hashlib
    import inspect
    import json
    import os

    # The names below are the provider's (internal/hubconfig, internal/migration);
    # a test checks that they agree.
    config_dir = "/usr/local/etc/jupyterhub/jupyterhub_config.d"  # ConfigDir
    python_file = "90-jupyter-spawner.py"  # PythonFile
    document_file = "90-jupyter-spawner.json.gz"  # DocumentFile
    if here and os.path.basename(here) == python_file:
        config_dir = os.path.dirname(os.path.abspath(here))
    # The document is gzip-compressed JSON. One that cannot be read stops
    # the hub from starting: without it a copied user's server would mount
    # the old home.
    path = os.path.join(config_dir, document_file)
    try:
        with gzip.open(path, "rt", encoding="utf-8") as f:
            doc = json.load(f)
    except Exception as e:  # OSError, EOFError, zlib.error, ValueError
        raise RuntimeError("jupyter_spawner_config: cannot read %s: %s" % (path, e)) from e
    spawner = c.KubeSpawner
    colocation = doc["colocation"]
    # The shared layout: every home is a directory of this claim (mounted by
    # the home volume, whose mode the plan checked); no per-user claim.
    home_doc = doc.get("home") or {}
    shared_claim = home_doc.get("shared_claim")
    shared_sub_path = home_doc.get("sub_path") or ""
    # Homes moving out of the shared layout, one user at a time: a server
    # whose claim does not exist yet mounts the user's directory of this
    # claim, as in the shared layout, with the init container that makes a
    # missing directory.
    fallback_claim = home_doc.get("fallback_claim")
    fallback_sub_path = home_doc.get("fallback_sub_path") or ""
    fallback_init = home_doc.get("fallback_init_container")
    homes_claim = shared_claim or fallback_claim
    key = colocation["label"]
    required = "requiredDuringSchedulingIgnoredDuringExecution"
    required_snake = "required_during_scheduling_ignored_during_execution"
    named = ("volumes", "volume_mounts", "init_containers", "extra_containers", "tolerations")  # NamedLists
    kubespawner_home = "home"  # HomeVolumeName

    def current(name):
        return spawner[name] if name in spawner else None

    def earlier_hook(name):
        # A hook earlier configuration set, on KubeSpawner or on Spawner (the
        # form JupyterHub's documentation shows); this file's own runs it.
        if name in spawner:
            return spawner[name]
        return c.Spawner[name] if name in c.Spawner else None

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
    # The lists in `named` are merged with earlier configuration's, not
    # replaced. An entry is identified by its name; a volume mount by its
    # mountPath and a toleration by its key and effect. The provider's
    # entries replace earlier ones with the same identity (in place), its
    # others are appended; earlier volumes that are the home claim under
    # another name, and earlier mounts of a volume the provider defines or
    # dropped, go too. Nothing else is dropped, and the earlier form (list
    # or dict) is kept. Dicts are merged recursively, the provider's values
    # winning; any other setting is the provider's.
    home_claims_names = {"{pvc_name}"}
    if homes_claim:
        # Every home is (or was) on it: earlier configuration's volumes of it
        # (and their mounts) go, so that no server gets every user's home.
        home_claims_names.add(homes_claim)

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

    def drop_terms(pod_affinity):
        # The required terms on the label go from a pod affinity (a dict).
        req_key = pick(pod_affinity, required, required_snake)
        terms = pod_affinity.get(req_key)
        if isinstance(terms, list):
            kept = [t for t in terms if not selects(t)]
            if kept:
                pod_affinity[req_key] = kept
            else:
                del pod_affinity[req_key]

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
                drop_terms(pod_affinity)
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

    # -- spawn-time decisions ---------------------------------------------------
    # Which claim a server mounts, and whether the user's pods share a node,
    # are read from the cluster at each spawn, with KubeSpawner's own client
    # (z2jh's hub Role allows get and list on claims). The pre_spawn_hook
    # runs after KubeSpawner restored the server's state (remember_pvc_name),
    # so it sees the claim this server (default or named) is about to mount:
    #   - a claim whose copy was switched: the copy, as the source's record
    #     names it and the copy's annotations confirm (names and UIDs);
    #   - a claim with a switched copy but no record (made again after the
    #     copy, or its record removed), or gone: that copy, found by its
    #     label; gone without a copy: KubeSpawner creates it, as for a new user;
    #   - a claim being copied (the Job runs or is checked), rebound (not yet
    #     bound) or deleted, or a copy not switched to: the spawn is refused
    #     and the user told to try again;
    #   - the API server cannot be asked (after three tries within
    #     KubeSpawner's request timeout): the spawn fails; nothing is guessed;
    #   - a claim a merge copied into the user's directory of the shared
    #     claim (a merge record): mounted while not marked merged (it is still
    #     the home: no copy runs under this hub); marked merged with its own
    #     UID, the spawn is refused (the home is that directory, which this
    #     layout does not mount; the claim is stale), and so is a mark that
    #     is not this claim's finished merge (a restore). This is checked
    #     on the server's claim before its other records are followed, and
    #     on the claim they lead to (a switched copy).
    # While homes move out of the shared layout (fallback_claim), and while
    # they merge back into it (the same settings), KubeSpawner creates no
    # claim, and the server's claim decides:
    #   - it does not exist and was copied: as above (its switched copy;
    #     a copy not switched to refuses the spawn);
    #   - it does not exist and was never copied: the home is still the
    #     user's directory of the shared claim; the modify_pod_hook points
    #     the pod's volumes of the claim at it, at that directory, and adds
    #     the init container that makes a missing directory;
    #   - it, or the claim its records lead to (a switched copy), was merged
    #     (a merge record naming its UID and the merged mark = its UID, also
    #     while it is being deleted): the home is the user's directory of
    #     the shared claim, mounted as for a missing claim; a merge record or
    #     mark that is not such a finished merge (the copy may be running,
    #     or the claim was made again) refuses the spawn (the home is being
    #     moved). Checked first, before any other record the claim carries;
    #   - it carries a split record and is not Bound to the record's volume,
    #     or is being deleted: the spawn is refused (the home is being
    #     moved), whatever else the claim carries;
    #   - otherwise: as above (the claim, or the copy it was switched to).
    # In the shared layout and while homes move out of it, no container
    # may mount the shared claim but at the user's own directory.
    # Two requests decide the home (a third on a first spawn where
    # KubeSpawner then falls back to a legacy-named claim, and in the
    # directory of the shared claim, whose mode is read); the pod's other
    # claims cost one each when the home does not pin it already.
    # The names are the provider's (internal/migration); a test checks them.
    copy_record = "jupyter-infra.github.io/home-copy"  # CopyAnnotation
    copy_of = "jupyter-infra.github.io/copy-of"  # CopyOfAnnotation
    copy_of_uid = "jupyter-infra.github.io/copy-of-uid"  # CopyOfUIDAnnotation
    copy_switched = "jupyter-infra.github.io/copy-switched"  # CopySwitchedAnnotation
    copy_of_label = "jupyter-infra.github.io/copy-of-claim"  # CopyOfLabel
    rebound = "jupyter-infra.github.io/migrated"  # MigratedAnnotation
    split_record = "jupyter-infra.github.io/home-split"  # SplitAnnotation
    split_copied = "jupyter-infra.github.io/home-split-copied"  # SplitCopiedAnnotation
    directory_copy = "directory-copy"  # MethodDirectoryCopy
    merge_record = "jupyter-infra.github.io/home-merge"  # MergeAnnotation
    merge_mark = "jupyter-infra.github.io/home-merged"  # MergedAnnotation
    moving_message = ("Your home directory is being moved to new storage. "
                      "Try again in a few minutes; if this lasts, tell your administrator.")
    previous_pre = unwrap(earlier_hook("pre_spawn_hook"))
    topology_key = colocation["topology_key"]

    class HomeUnavailable(RuntimeError):
        # JupyterHub shows jupyterhub_message to the user on the spawn page.
        def __init__(self, log, message):
            super().__init__(log)
            self.jupyterhub_message = message

    def unreachable(spawner, e):
        status = getattr(e, "status", None)
        if status in (401, 403):
            return HomeUnavailable(
                "jupyter_spawner_config: the hub may not read claims in namespace %s (%s): give its Role get and list on persistentvolumeclaims" % (spawner.namespace, e),
                "Your home directory cannot be checked (the hub lacks a permission). Tell your administrator.")
        return HomeUnavailable(
            "jupyter_spawner_config: cannot read claim(s) in namespace %s for %s: %s" % (spawner.namespace, spawner.pvc_name, e),
            "Your home directory cannot be checked right now (the cluster did not answer). Try again in a minute.")

    def moving(spawner, why):
        return HomeUnavailable("jupyter_spawner_config: not spawning on %s/%s: %s" % (spawner.namespace, spawner.pvc_name, why), moving_message)

    def label_value(name):
        # CopyOfLabelValue: a claim name as a label value.
        return hashlib.sha256(name.encode("utf-8")).hexdigest()[:40]

    async def ask(spawner, request):
        # One API request, within KubeSpawner's request timeout, tried three
        # times when the API server is busy or does not answer; a 404 is
        # None. Anything else fails the spawn: nothing is guessed.
        timeout = getattr(spawner, "k8s_api_request_timeout", None) or 3
        for attempt in range(3):
            try:
                return await asyncio.wait_for(request(), timeout)
            except Exception as e:
                status = getattr(e, "status", None)
                if status == 404:
                    return None
                retry = isinstance(e, asyncio.TimeoutError) or status == 429 or (status or 0) >= 500
                if not retry or attempt == 2:
                    raise unreachable(spawner, e) from e
                await asyncio.sleep(0.5 * (attempt + 1))

    async def read_claim(spawner, name):
        return await ask(spawner, lambda: spawner.api.read_namespaced_persistent_volume_claim(name, spawner.namespace))

    async def copies_of(spawner, name):
        # The copies of a claim, by their label, from the API server's cache
        # (resourceVersion 0: no read of every claim from etcd).
        found = await ask(spawner, lambda: spawner.api.list_namespaced_persistent_volume_claim(
            spawner.namespace, label_selector="%s=%s" % (copy_of_label, label_value(name)), resource_version="0"))
        return [x for x in (found.items if found is not None else []) if annotations(x).get(copy_of) == name]

    def annotations(claim):
        return claim.metadata.annotations or {}

    def merged_into_shared(spawner, claim):
        # The merge rule, for a claim the hub reads as a server's home: True
        # when a merge copied it into the user's directory of the shared
        # claim and the hub of this layout mounts that directory (the
        # caller does); False when the claim is the home as far as merges
        # go; else the spawn is refused. A finished merge is
        # migration.Merged: the record names the claim's UID and the
        # merged mark is that UID.
        ann = annotations(claim)
        if merge_record not in ann and merge_mark not in ann:
            return False
        name, uid = claim.metadata.name, claim.metadata.uid
        try:
            record = json.loads(ann[merge_record])
            record_uid = record.get("claim_uid") if isinstance(record, dict) else None
        except Exception:  # KeyError, ValueError: no record, or unreadable
            record_uid = None
        done = bool(uid) and record_uid == uid and ann.get(merge_mark) == uid
        if fallback_claim:
            # A merge runs under this hub: its directory is the home once
            # the copy was verified and marked (the claim stale, also while
            # it is being deleted); before, the copy may be running and
            # nothing may be written in the claim.
            if done:
                return True
            raise moving(spawner, "claim %s is being merged into its directory of shared claim %s (not marked %s with its UID %s: record %s, mark %s)" % (
                name, fallback_claim, merge_mark, uid, ann.get(merge_record, "none"), ann.get(merge_mark, "none")))
        if merge_mark not in ann:
            return False  # not merged: still the home
        if done:
            raise HomeUnavailable(
                "jupyter_spawner_config: %s/%s was merged into the user's directory of the shared claim (%s): the home is there now, "
                "and this layout mounts no directory; the claim is a stale copy. Configure the hub of the merge (the per-user layout with "
                "shared_home) or the shared layout" % (spawner.namespace, name, merge_mark),
                "Your home directory was moved to the shared storage, which this server's configuration does not mount. "
                "Tell your administrator; nothing was started.")
        raise HomeUnavailable(
            "jupyter_spawner_config: %s/%s carries %s = %r, not a finished merge of this claim (UID %s, record %r): "
            "made again from a merged home (a restore?); not mounted" % (spawner.namespace, name, merge_mark, ann[merge_mark], uid, ann.get(merge_record)),
            "Your home directory's claim does not match the record of its move to the shared storage. Tell your administrator; nothing was started.")

    def check_mountable(spawner, claim):
        # Also the merge rule: a claim a merge finished is mountable here
        # only as its directory (the caller's), whatever else it shows.
        if merged_into_shared(spawner, claim):
            return
        ann = annotations(claim)
        name = claim.metadata.name
        if claim.metadata.deletion_timestamp is not None:
            raise moving(spawner, "claim %s is being deleted" % name)
        if rebound in ann and (claim.status is None or claim.status.phase != "Bound"):
            raise moving(spawner, "claim %s is being rebound (%s)" % (name, ann[rebound]))

    def record_of(spawner, claim):
        try:
            record = json.loads(annotations(claim)[copy_record])
            return record["step"], record["target"], record.get("targetUID")
        except Exception as e:
            raise moving(spawner, "claim %s: unreadable %s: %s" % (claim.metadata.name, copy_record, e)) from e

    def is_copy_of(copied, source, target_uid):
        # copied is the copy source's record made: it names source (name and
        # UID) and, when the record knows it, has the UID the record names.
        ann = annotations(copied)
        return ann.get(copy_of) == source.metadata.name and ann.get(copy_of_uid) == source.metadata.uid and (
            not target_uid or copied.metadata.uid == target_uid)

    async def follow_copy(spawner, claim):
        # The claim carries a copy record. Before the copy runs the claim is
        # still the home; while it runs or is checked the spawn waits; once
        # switched, the copy is the home.
        name = claim.metadata.name
        step, target, target_uid = record_of(spawner, claim)
        if step in ("pending", "target-created"):
            check_mountable(spawner, claim)
            return claim
        if step != "switched":
            raise moving(spawner, "claim %s is being copied to %s (step %s)" % (name, target, step))
        copied = await read_claim(spawner, target)
        if copied is None:
            raise HomeUnavailable(
                "jupyter_spawner_config: %s/%s was switched to %s, which does not exist" % (spawner.namespace, name, target),
                "Your home directory was moved to claim %s, which is missing. Tell your administrator; nothing was created in its place." % target)
        if not is_copy_of(copied, claim, target_uid):
            raise HomeUnavailable(
                "jupyter_spawner_config: %s/%s names copy %s, but that claim is not the copy its record made" % (spawner.namespace, name, target),
                "Your home directory's new claim %s is not the one it was copied to. Tell your administrator." % target)
        check_mountable(spawner, copied)
        return copied

    async def mountable_copy(spawner, claim):
        # A copy mounted by its own name (KubeSpawner remembers it after a
        # spawn on it): switched, or its source's record says so (the target's
        # annotation follows the record; an apply may have stopped between).
        ann = annotations(claim)
        if copy_switched in ann:
            return claim
        source = await read_claim(spawner, ann[copy_of])
        if source is not None and copy_record in annotations(source):
            step, target, target_uid = record_of(spawner, source)
            if step == "switched" and target == claim.metadata.name and is_copy_of(claim, source, target_uid):
                return claim
        raise moving(spawner, "claim %s is a copy of %s not yet switched to" % (claim.metadata.name, ann[copy_of]))

    async def instead_of_missing(spawner, name):
        # The claim KubeSpawner remembers (a copy it mounted, or a name of an
        # older template) is gone. The claim the template names decides: its
        # record switched to the missing claim refuses the spawn (never an
        # empty claim in place of a copy); another record is followed; with
        # none it is the home again. With no such claim, KubeSpawner creates
        # the remembered one as for a new user.
        base_name = spawner._expand_user_properties(spawner.pvc_name_template)
        if not base_name or base_name == name:
            return None
        base = await read_claim(spawner, base_name)
        if base is None:
            return None
        if merged_into_shared(spawner, base):
            return base  # its directory is the home
        if split_record in annotations(base):
            check_split(spawner, base)
        if copy_record in annotations(base):
            step, target, _ = record_of(spawner, base)
            if step == "switched" and target == name:
                raise HomeUnavailable(
                    "jupyter_spawner_config: %s/%s was switched to %s, which does not exist" % (spawner.namespace, base_name, name),
                    "Your home directory was moved to claim %s, which is missing. Tell your administrator; nothing was created in its place." % name)
            return await follow_copy(spawner, base)
        check_mountable(spawner, base)
        return base

    def copy_home(spawner, name, copies, gone):
        # What a claim's copies (copies_of) decide: its switched copy is the
        # home (more than one: the spawn fails); a copy not switched to, the
        # claim gone, refuses the spawn (never an empty claim, never an
        # older home, in place of a copy); else None (the claim decides).
        switched = [x for x in copies if copy_switched in annotations(x)]
        if len(switched) > 1:
            raise HomeUnavailable(
                "jupyter_spawner_config: %s/%s has several switched copies: %s" % (spawner.namespace, name, ", ".join(sorted(x.metadata.name for x in switched))),
                "Your home directory has more than one copy. Tell your administrator.")
        if switched:
            check_mountable(spawner, switched[0])
            return switched[0]
        if gone and copies:
            raise moving(spawner, "claim %s is gone and its copy %s was not switched to" % (name, copies[0].metadata.name))
        return None

    async def home_of(spawner, claim=None):
        # The claim this server mounts (after following a copy), or None
        # when KubeSpawner creates it; claim is the server's claim when
        # already read.
        name = spawner.pvc_name
        if claim is None:
            claim = await read_claim(spawner, name)
        if claim is not None and merged_into_shared(spawner, claim):
            # A merge finished: the caller mounts the user's directory.
            # Checked before any other record the claim carries.
            return claim
        if claim is not None and split_record in annotations(claim):
            # A move out of the shared layout made it: mounted once finished
            # (bound to its volume, or copied), in any layout.
            check_split(spawner, claim)
        if claim is not None and copy_record in annotations(claim):
            # Also while the old home is being deleted: its copy is the home.
            return await follow_copy(spawner, claim)
        if claim is not None and copy_of in annotations(claim):
            check_mountable(spawner, claim)
            return await mountable_copy(spawner, claim)
        # A switched copy of this name is the home, whatever claim of the name
        # exists now (one KubeSpawner or someone made again after the copy,
        # or one whose record was removed): the plan says so too.
        copies = await copies_of(spawner, name)
        copied = copy_home(spawner, name, copies, claim is None)
        if copied is not None:
            return copied
        if claim is None:
            return await instead_of_missing(spawner, name)
        check_mountable(spawner, claim)
        return claim

    def access_modes(spawner, claim):
        if claim is not None and claim.spec is not None and claim.spec.access_modes:
            return list(claim.spec.access_modes)
        return list(spawner.storage_access_modes or [])

    def check_split(spawner, claim):
        # The user's claim of a move out of the shared layout: zero copy (a
        # volume on their directory of the shared claim), mountable once
        # Bound to the record's volume; by a copy, mountable once marked
        # copied with its own UID (a claim made again under the name is not).
        name = claim.metadata.name
        ann = annotations(claim)
        try:
            record = json.loads(ann[split_record])
            method = record.get("method") or ""
            volume = record["volume"] if not method else None
        except Exception as e:
            raise moving(spawner, "claim %s: unreadable %s: %s" % (name, split_record, e)) from e
        if claim.metadata.deletion_timestamp is not None:
            raise moving(spawner, "claim %s is being deleted" % name)
        if method == directory_copy:
            if not claim.metadata.uid or ann.get(split_copied) != claim.metadata.uid:
                raise moving(spawner, "claim %s is being copied from its directory of the shared claim" % name)
            return
        if method:
            raise moving(spawner, "claim %s: its move's method %r is not one this hub knows" % (name, method))
        phase = claim.status.phase if claim.status is not None else None
        if phase != "Bound":
            raise moving(spawner, "claim %s is being split from the shared claim (%s, not Bound)" % (name, phase))
        bound_to = claim.spec.volume_name if claim.spec is not None else None
        if bound_to != volume:
            raise moving(spawner, "claim %s is bound to volume %s, not to its split's volume %s" % (name, bound_to, volume))

    async def split_home(spawner):
        # While homes move out of the shared layout, or merge back into it:
        # (the claim mounted, its access modes, whether the user's directory
        # of the shared claim stands in for the server's claim, missing or
        # merged).
        name = spawner.pvc_name
        claim = await read_claim(spawner, name)
        if claim is None:
            # As home_of decides for a missing claim: a copy of it (its
            # source deleted after the switch) is the home, or refuses the
            # spawn when not switched to. Only a claim never copied leaves
            # the home in the user's directory of the shared claim.
            copied = copy_home(spawner, name, await copies_of(spawner, name), True)
            if copied is None:
                # KubeSpawner remembers a name the template does not give
                # (a copy it mounted, since deleted): the template's claim
                # decides, as in the per-user layout; the directory only
                # when there is none.
                copied = await instead_of_missing(spawner, name)
            if copied is not None and merged_into_shared(spawner, copied):
                return await directory_home(spawner, "merged into it")
            if copied is not None:
                spawner.pvc_name = copied.metadata.name
                return (spawner.pvc_name, access_modes(spawner, copied), False)
            return await directory_home(spawner, "does not exist")
        # A merge is checked first: a claim merged into the directory is
        # stale (the directory is the home), one with a merge not finished
        # refuses the spawn. Then a split claim, whatever else it carries
        # (a copy record too): one not Bound to its split's volume, or being
        # deleted, is never mounted nor followed, as the plan never plans
        # past an unfinished split.
        if merged_into_shared(spawner, claim):
            return await directory_home(spawner, "merged into it")
        if split_record in annotations(claim):
            check_split(spawner, claim)
        claim = await home_of(spawner, claim)
        if merged_into_shared(spawner, claim):
            # Its switched copy was merged: the directory too.
            return await directory_home(spawner, "merged into it (its copy %s)" % claim.metadata.name)
        spawner.pvc_name = claim.metadata.name
        return (spawner.pvc_name, access_modes(spawner, claim), False)

    async def directory_home(spawner, why):
        # The home is the user's directory of the shared claim: the server's
        # claim (spawner.pvc_name, what the pod is built on) stands for it,
        # and the modify_pod_hook points the pod's volumes of it there.
        shared = await read_claim(spawner, fallback_claim)
        if shared is None:
            raise HomeUnavailable(
                "jupyter_spawner_config: %s/%s %s and shared claim %s, which holds the user's home, is missing" % (
                    spawner.namespace, spawner.pvc_name, why, fallback_claim),
                "Your home directory's claim is missing. Tell your administrator; nothing was created in its place.")
        return (spawner.pvc_name, access_modes(spawner, shared), True)

    async def decide_home(spawner):
        if previous_pre is not None:
            r = previous_pre(spawner)
            if inspect.isawaitable(r):
                await r
        # (claim name, its access modes, whether the shared claim stands in
        # for it): for this spawn only; the modify_pod_hook consumes it.
        spawner.jupyter_spawner_home = None
        if not spawner.pvc_name or shared_claim:  # no per-user home claim
            spawner.jupyter_spawner_home = (spawner.pvc_name, access_modes(spawner, None), False)
            return
        if fallback_claim:
            spawner.jupyter_spawner_home = await split_home(spawner)
            return
        claim = await home_of(spawner)
        if claim is not None:
            spawner.pvc_name = claim.metadata.name
        spawner.jupyter_spawner_home = (spawner.pvc_name, access_modes(spawner, claim), False)

    decide_home.jupyter_spawner_previous = previous_pre
    spawner.pre_spawn_hook = decide_home

    # -- co-location --------------------------------------------------------------
    # A server whose claim is ReadWriteOnce (or ReadWriteOncePod), and only
    # such a server, gets the label and a required pod affinity on it, so
    # that the user's pods share a node. The modify_pod_hook runs any earlier
    # hook first, then removes the label and every required pod affinity term
    # on it that the earlier hook (or extra_pod_config) added. The label's
    # value is KubeSpawner's label-safe username (the pod's
    # hub.jupyter.org/username label).
    previous = unwrap(earlier_hook("modify_pod_hook"))

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
            drop_terms(pod_affinity)
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

    def single_node(modes):
        return "ReadWriteMany" not in modes and ("ReadWriteOnce" in modes or "ReadWriteOncePod" in modes)

    async def pins_to_one_node(spawner, pod, decided):
        if decided is not None:
            modes = decided[1]
        else:
            # KubeSpawner chose another claim after the pre_spawn_hook (its
            # legacy-named claim on a first spawn): ask about that one.
            modes = access_modes(spawner, await read_claim(spawner, spawner.pvc_name))
        if single_node(modes):
            return True
        # The pod's other claims (a user's workspace claim, say) pin it too
        # while they are ReadWriteOnce: one request each.
        for volume in pod.spec.volumes or []:
            pvc = field(volume, "persistentVolumeClaim", "persistent_volume_claim")
            name = field(pvc, "claimName", "claim_name") if pvc is not None else None
            if name and name != spawner.pvc_name and name != shared_claim and not (decided and decided[2] and name == fallback_claim):
                claim = await read_claim(spawner, name)
                if claim is not None and claim.spec is not None and single_node(claim.spec.access_modes or []):
                    return True
        return False

    # In the shared layout, and while homes move out of it, no container of
    # a pod may mount the shared claim but at the user's own directory (or
    # below it), whatever configuration added the mount (a sidecar, an init
    # container, a profile, earlier configuration): one whole mount would
    # give every server every user's home. Only the provider's own init
    # container, which makes a missing directory, mounts the claim's root.
    own_inits = [x for x in (settings.get("init_containers") or []) if isinstance(x, dict)]

    def set_field(obj, camel, snake, value):
        if isinstance(obj, dict):
            obj[pick(obj, camel, snake)] = value
        else:
            setattr(obj, snake, value)

    def home_volumes(pod, claim):
        # The names of the pod's volumes of claim.
        names = set()
        for v in pod.spec.volumes or []:
            pvc = field(v, "persistentVolumeClaim", "persistent_volume_claim")
            if pvc is not None and field(pvc, "claimName", "claim_name") == claim:
                names.add(field(v, "name", "name"))
        return names

    def move_home_to_shared(spawner, pod):
        # The server's claim does not exist: the home is still the user's
        # directory of the shared claim. Every volume of the pod on the
        # server's claim becomes the shared claim, every mount of one (in
        # any container) the user's directory, or the directory the mount
        # named below it; the init container that makes a missing directory
        # runs first. Only this pod changes: the spawner keeps its settings
        # for the next spawn.
        spec = pod.spec
        names = home_volumes(pod, spawner.pvc_name)
        if not names:
            return
        for v in spec.volumes or []:
            if field(v, "name", "name") in names:
                set_field(field(v, "persistentVolumeClaim", "persistent_volume_claim"), "claimName", "claim_name", fallback_claim)
        want = spawner._expand_user_properties(fallback_sub_path).rstrip("/")
        for c in list(spec.containers or []) + list(spec.init_containers or []):
            for m in field(c, "volumeMounts", "volume_mounts") or []:
                if field(m, "name", "name") in names:
                    sub = (field(m, "subPath", "sub_path") or "").strip("/")
                    set_field(m, "subPath", "sub_path", want + "/" + sub if sub else want)
        init = spawner._expand_all(copy.deepcopy(fallback_init))
        volume = kubespawner_home if kubespawner_home in names else sorted(names)[0]
        for m in init.get("volumeMounts") or []:
            m["name"] = volume
        spec.init_containers = [init] + list(spec.init_containers or [])

    def check_shared_mounts(spawner, pod, claim, sub_path, own_inits):
        spec = pod.spec
        volumes = home_volumes(pod, claim)
        want = spawner._expand_user_properties(sub_path).rstrip("/")
        for kind, containers in (("container", spec.containers or []), ("init container", spec.init_containers or [])):
            for c in containers:
                name, command = field(c, "name", "name"), field(c, "command", "command")
                own = kind == "init container" and any(x.get("name") == name and list(x.get("command") or []) == list(command or []) for x in own_inits)
                for m in field(c, "volumeMounts", "volume_mounts") or []:
                    if field(m, "name", "name") not in volumes or own:
                        continue
                    sub = (field(m, "subPath", "sub_path") or "").rstrip("/")
                    expr = field(m, "subPathExpr", "sub_path_expr")
                    if want and not expr and ".." not in sub.split("/") and (sub == want or sub.startswith(want + "/")):
                        continue
                    raise HomeUnavailable(
                        "jupyter_spawner_config: %s %s mounts claim %s at %r (subPath %r): only the user's directory %r may be mounted" % (
                            kind, name, claim, field(m, "mountPath", "mount_path"), sub or expr, want),
                        "Your server's configuration would mount every user's home. Tell your administrator; nothing was started.")

    async def colocate_user_pods(spawner, pod):
        if previous is not None:
            pod = previous(spawner, pod)
            if inspect.isawaitable(pod):
                pod = await pod
        # What the pre_spawn_hook decided for this spawn; taken, so that no
        # later spawn of this server reads it.
        decided = getattr(spawner, "jupyter_spawner_home", None)
        spawner.jupyter_spawner_home = None
        if decided is not None and decided[0] != spawner.pvc_name:
            decided = None
        if shared_claim:
            check_shared_mounts(spawner, pod, shared_claim, shared_sub_path, own_inits)
        elif fallback_claim:
            if decided is None and spawner.pvc_name:
                # No decision for this claim (another pre_spawn_hook replaced
                # this file's): decide now. The pod was made on the server's
                # claim; when the home is another (its copy), the pod's
                # volumes of that claim mount the home.
                built = spawner.pvc_name
                decided = await split_home(spawner)
                if decided[0] != built:
                    for v in pod.spec.volumes or []:
                        pvc = field(v, "persistentVolumeClaim", "persistent_volume_claim")
                        if pvc is not None and field(pvc, "claimName", "claim_name") == built:
                            set_field(pvc, "claimName", "claim_name", decided[0])
            fallback = decided is not None and decided[2]
            if fallback:
                move_home_to_shared(spawner, pod)
            check_shared_mounts(spawner, pod, fallback_claim, fallback_sub_path, [fallback_init] if fallback else [])
        strip(pod)
        value = (pod.metadata.labels or {}).get("hub.jupyter.org/username")
        if not value or not await pins_to_one_node(spawner, pod, decided):
            return pod
        labels = dict(pod.metadata.labels or {})
        labels[key] = value
        pod.metadata.labels = labels
        term = {
            "labelSelector": {"matchExpressions": [{"key": key, "operator": "In", "values": [value]}]},
            "topologyKey": topology_key,
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


_jupyter_spawner_config(globals()["c"], globals().get("__file__"))
del _jupyter_spawner_config
