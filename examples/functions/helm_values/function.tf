# The zero-to-jupyterhub values of a jupyter_spawner_config, for a
# helm_release: pass the resource itself. They are not an attribute of the
# resource, so its plan does not print them; the release's plan shows them
# as its values, a change line by line.
resource "helm_release" "jupyterhub" {
  name       = "jupyterhub"
  namespace  = jupyter_spawner_config.hub.namespace
  repository = "https://hub.jupyter.org/helm-chart/"
  chart      = "jupyterhub"
  values = [
    provider::jupyter::helm_values(jupyter_spawner_config.hub),
    # Your own values after it: the function's values are maps only, so they merge.
    yamlencode({ proxy = { service = { type = "ClusterIP" } } }),
  ]
}

# Nebari's data-science-pack takes the chart's values under "jupyterhub:".
locals {
  pack_values = yamlencode({ jupyterhub = yamldecode(provider::jupyter::helm_values(jupyter_spawner_config.hub)) })
}
