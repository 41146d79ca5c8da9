"""Loads a hub's configuration the way zero-to-jupyterhub's hub loads it, then
renders users' claims and pods with the real KubeSpawner.

Input (argv[1], JSON):
  z2jh_hub_dir    the chart's files/hub (jupyterhub_config.py, z2jh.py), read in place
  kubespawner_dir the folder holding KubeSpawner's package, read in place
  config_d        a folder with the jupyterhub_config.d files, loaded in sorted order
  files_mount     where hub.extraFiles mounts the provider's files in the hub
                  ("" when the hub mounts them from the ConfigMap into jupyterhub_config.d)
  files_dir       the folder holding those files here
  values          the Helm values the chart was rendered with (chart defaults merged)
  users           [{name, auth_state, profile, id, server, state, keep}]
  api             {host, token, ca_file, namespace}: the API server the hub's
                  KubeSpawner client asks (the test bed's), as the hub's
                  ServiceAccount, and the hub's namespace

With serve true it loads the configuration once and then spawns, for each
line of stdin (a JSON list of users), the users of that line, printing one
line each: a hub that keeps running while its claims change.

It prints, per spawn (keyed by id, else by name: one user may spawn on
several profiles), the profiles offered, the claim manifest and the pod
manifest after pre_spawn_hook, load_user_options and modify_pod_hook, in
the order the hub runs them; or, when a hook refused the spawn, what the
hub would tell the user.

Only what the hub image has and Debian does not is stood in for:
kubernetes_asyncio (python3-kubernetes' generated models and API classes,
whose methods are made coroutines that run the real request in a thread, so
that an awaited request reaches the API server as with the real client; its
kube config loads the given API server), oauthenticator and jhub_apps (classes
and functions the configuration files import, doing nothing), and the
mounted Secret and ConfigMap z2jh.py reads (the values given here).
"""
import asyncio
import json
import os
import sys
import time
import types

cfg = json.load(open(sys.argv[1]))
# The configuration files print as they load; stdout carries only the result.
out_stream = sys.stdout
sys.stdout = sys.stderr

# -- kubernetes_asyncio from python3-kubernetes ---------------------------
import kubernetes
import kubernetes.client
import kubernetes.client.api_client
import kubernetes.client.models
import kubernetes.client.rest
import kubernetes.config
import kubernetes.watch

api = cfg["api"]


class _AsyncApiClient:
    # kubernetes_asyncio's ApiClient is an async context manager.
    def __init__(self, sync):
        self.sync = sync

    async def __aenter__(self):
        return self

    async def __aexit__(self, *exc):
        self.sync.close()

    def __getattr__(self, name):
        return getattr(self.sync, name)


# The requests the API classes made (each call is one request).
_requests = [0]


def _async_api(sync_class):
    # kubernetes_asyncio's API classes: the same generated method names,
    # each a coroutine; the request runs in a thread with the real client.
    class AsyncApi:
        def __init__(self, api_client=None):
            self._sync = sync_class(api_client)
            self.api_client = _AsyncApiClient(self._sync.api_client)

        def __getattr__(self, name):
            method = getattr(self._sync, name)
            if not callable(method):
                return method

            async def call(*args, **kwargs):
                _requests[0] += 1
                return await asyncio.to_thread(method, *args, **kwargs)

            return call

    AsyncApi.__name__ = sync_class.__name__
    return AsyncApi


client = types.ModuleType("kubernetes_asyncio.client")
client.__dict__.update({k: v for k, v in vars(kubernetes.client).items() if not k.startswith("__")})
for name in ("CoreV1Api", "NetworkingV1Api", "RbacAuthorizationV1Api"):
    setattr(client, name, _async_api(getattr(kubernetes.client, name)))
client.api_client = kubernetes.client.api_client
client.models = kubernetes.client.models
client.rest = kubernetes.client.rest


async def _load_kube_config(*args, **kwargs):
    conf = kubernetes.client.Configuration()
    conf.host = api["host"]
    conf.ssl_ca_cert = api["ca_file"]
    conf.api_key = {"authorization": "Bearer " + api["token"]}
    kubernetes.client.Configuration.set_default(conf)


def _load_incluster_config(*args, **kwargs):
    raise kubernetes.config.ConfigException("not in a cluster")


config = types.ModuleType("kubernetes_asyncio.config")
config.ConfigException = kubernetes.config.ConfigException
config.load_kube_config = _load_kube_config
config.load_incluster_config = _load_incluster_config
kubernetes_asyncio = types.ModuleType("kubernetes_asyncio")
kubernetes_asyncio.client, kubernetes_asyncio.config, kubernetes_asyncio.watch = client, config, kubernetes.watch
for name, mod in {
    "kubernetes_asyncio": kubernetes_asyncio,
    "kubernetes_asyncio.client": client,
    "kubernetes_asyncio.client.api_client": kubernetes.client.api_client,
    "kubernetes_asyncio.client.models": kubernetes.client.models,
    "kubernetes_asyncio.client.rest": kubernetes.client.rest,
    "kubernetes_asyncio.config": config,
    "kubernetes_asyncio.watch": kubernetes.watch,
}.items():
    sys.modules[name] = mod

# -- what the configuration files import that Debian lacks -----------------
import traitlets.config


def _module(name, **attrs):
    mod = types.ModuleType(name)
    mod.__dict__.update(attrs)
    sys.modules[name] = mod
    return mod


class GenericOAuthenticator(traitlets.config.LoggingConfigurable):
    pass


class OAuthLogoutHandler:
    pass


_module("oauthenticator")
_module("oauthenticator.generic", GenericOAuthenticator=GenericOAuthenticator)
_module("oauthenticator.oauth2", OAuthLogoutHandler=OAuthLogoutHandler)
_module("jhub_apps", theme_template_paths=[], themes=types.SimpleNamespace(DEFAULT_THEME={}))
_module("jhub_apps.configuration", install_jhub_apps=lambda c, spawner_to_subclass=None: c)

# -- z2jh.py, reading the given values instead of the mounted Secret --------
sys.path.insert(0, cfg["kubespawner_dir"])
sys.path.insert(0, cfg["z2jh_hub_dir"])
import z2jh

z2jh._load_config = lambda: json.loads(json.dumps(cfg["values"]))
z2jh._get_config_value = lambda key: key
z2jh.get_name = lambda name: name
z2jh.get_secret_value = lambda key, default="never-explicitly-set": "secret"
os.environ.setdefault("HUB_SERVICE_PORT", "8081")
os.environ.setdefault("PROXY_API_SERVICE_PORT", "8001")
os.environ["POD_NAMESPACE"] = api["namespace"]

# -- the chart's jupyterhub_config.py, as the hub loads it -----------------
c = traitlets.config.Config()
path = os.path.join(cfg["z2jh_hub_dir"], "jupyterhub_config.py")
src = open(path).read()
src = src.replace('"/usr/local/etc/jupyterhub/jupyterhub_config.d"', repr(cfg["config_d"]))
extra = {}
for key, text in (cfg["values"].get("hub", {}).get("extraConfig") or {}).items():
    text = text.replace('"/usr/local/etc/jupyterhub/jupyterhub_config.d', '"' + cfg["config_d"])
    if cfg["files_mount"]:
        text = text.replace(cfg["files_mount"], cfg["files_dir"])
    extra[key] = text
cfg["values"].setdefault("hub", {})["extraConfig"] = extra
z2jh_globals = {"__file__": path, "__name__": "__main__", "get_config": lambda: c}
exec(compile(src, path, "exec"), z2jh_globals)

# -- a user's spawn, with the real KubeSpawner -----------------------------
from jupyterhub.objects import Hub
from kubespawner import KubeSpawner


class User:
    def __init__(self, name, auth_state):
        self.name = name
        self.id = 1
        self.url = f"/user/{name}/"
        self.groups = []
        self._auth_state = auth_state
        self.spawners = {}
        self.settings = {}

    async def get_auth_state(self):
        return self._auth_state


def plain(v):
    if hasattr(v, "to_dict"):
        return kubernetes.client.ApiClient().sanitize_for_serialization(v)
    return v


# The spawners of servers spawned with keep, by id: JupyterHub keeps a
# server's spawner object across its spawns.
kept = {}


async def spawn(u):
    key = u.get("id") or u["name"]
    spawner = kept.get(key) if u.get("keep") else None
    if spawner is not None:
        # The server stopped since its last spawn.
        spawner.clear_state()
    else:
        user = User(u["name"], u.get("auth_state"))
        # JupyterHub's Spawner.name is its ORM spawner's: the server's name.
        orm_spawner = types.SimpleNamespace(name=u.get("server") or "", server=None, state=None)
        spawner = KubeSpawner(config=c, user=user, hub=Hub(), _mock=True, orm_spawner=orm_spawner)
        if u.get("state"):
            spawner.load_state(u["state"])
        if u.get("keep"):
            kept[key] = spawner
    profiles = spawner.profile_list
    if callable(profiles):
        profiles = profiles(spawner)
        if asyncio.iscoroutine(profiles):
            profiles = await profiles
    if isinstance(profiles, dict):
        profiles = [profiles[k] for k in sorted(profiles)]
    offered = [p.get("slug") or p.get("display_name") for p in profiles or []]
    # jhub-apps serves the profiles as JSON: they must stay serializable.
    served = json.loads(json.dumps(profiles or []))
    # What the hooks add to the spawn: their time and API requests.
    hooks = {"seconds": 0.0, "requests": 0}
    started, before = time.perf_counter(), _requests[0]
    if spawner.pre_spawn_hook is not None:
        try:
            r = spawner.pre_spawn_hook(spawner)
            if asyncio.iscoroutine(r):
                await r
        except Exception as e:
            # JupyterHub shows the user jupyterhub_message, else the error.
            return {"refused": getattr(e, "jupyterhub_message", str(e)), "refused_log": str(e),
                    "hook_seconds": time.perf_counter() - started, "hook_requests": _requests[0] - before}
    hooks["seconds"] += time.perf_counter() - started
    hooks["requests"] += _requests[0] - before
    spawner.user_options = {"profile": u["profile"]} if u.get("profile") else {}
    await spawner.load_user_options()
    # As KubeSpawner._start: a claim is made only with storage_pvc_ensure.
    pvc = plain(spawner.get_pvc_manifest()) if spawner.storage_pvc_ensure else None
    pod = await spawner.get_pod_manifest()
    started, before = time.perf_counter(), _requests[0]
    if spawner.modify_pod_hook is not None:
        try:
            pod = spawner.modify_pod_hook(spawner, pod)
            if asyncio.iscoroutine(pod):
                pod = await pod
        except Exception as e:
            # KubeSpawner's start fails with it: no pod is created.
            return {"refused": getattr(e, "jupyterhub_message", str(e)), "refused_log": str(e), "pvc": pvc,
                    "hook_seconds": hooks["seconds"] + time.perf_counter() - started, "hook_requests": hooks["requests"] + _requests[0] - before}
    hooks["seconds"] += time.perf_counter() - started
    hooks["requests"] += _requests[0] - before
    return {"offered": offered, "served": served, "pvc": pvc, "pod": plain(pod), "pvc_name": spawner.pvc_name,
            "hook_seconds": hooks["seconds"], "hook_requests": hooks["requests"]}


async def main(users):
    out = {}
    for u in users:
        out[u.get("id") or u["name"]] = await spawn(u)
    return out


if cfg.get("serve"):
    # One hub serving spawns until stdin closes, its configuration loaded
    # once: a JSON list of users per line in, their spawns per line out.
    loop = asyncio.new_event_loop()
    for line in sys.stdin:
        if line.strip():
            print(json.dumps(loop.run_until_complete(main(json.loads(line)))), file=out_stream, flush=True)
    loop.close()
else:
    print(json.dumps(asyncio.run(main(cfg["users"]))), file=out_stream)
