# The chart release (hashicorp/helm). A change of legacy_users alone (a
# user's ReadWriteOnce claim appears or is migrated) changes the values
# provider::jupyter::helm_values renders, hence the hub pod template, so
# this release's `helm upgrade` restarts the hub, and nothing else does.

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
    # The hub's file and document, the checksum that restarts the hub, the
    # home (see the function's docs). The function renders them from the
    # resource; they are no attribute of it, so its plan stays short.
    provider::jupyter::helm_values(jupyter_spawner_config.hub),
    # Your own values go after it. The function's values are maps only, so
    # they merge: your singleuser.storage.extraVolumes, hub.extraVolumes and
    # singleuser.profileList stay, and the file composes with them.
    yamlencode({ proxy = { service = { type = "ClusterIP" } } }),
  ]
}
