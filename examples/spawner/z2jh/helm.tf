# The chart release (hashicorp/helm). A change of legacy_users alone (a
# user's ReadWriteOnce claim appears or is migrated) changes helm_values,
# hence the hub pod template, so this release's `helm upgrade` restarts the
# hub, and nothing else does.

provider "helm" {
  kubernetes = {
    config_path = "~/.kube/config"
  }
}

resource "helm_release" "jupyterhub" {
  name       = "jupyterhub"
  namespace  = "jhub"
  repository = "https://hub.jupyter.org/helm-chart/"
  chart      = "jupyterhub"
  version    = "4.4.0" # the data-science-pack pins it too; the tests render the chart at 48ea50e3 (main)
  values = [
    jupyter_spawner_config.hub.helm_values,
    # Your own values go after it. helm_values holds maps only, so they
    # merge: your singleuser.storage.extraVolumes, hub.extraVolumes and
    # singleuser.profileList stay, and the file composes with them.
    yamlencode({ proxy = { service = { type = "ClusterIP" } } }),
  ]
}
