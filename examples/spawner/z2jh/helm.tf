# The chart release (hashicorp/helm). The values
# provider::jupyter::helm_values renders change only with the hub's
# settings, so `helm upgrade` restarts the hub then and only then; a home
# that is migrated changes nothing here (the hub reads it at the spawn).

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
