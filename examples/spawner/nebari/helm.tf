# The pack's release (hashicorp/helm, configured where your platform
# configures it). The values provider::jupyter::helm_values renders change
# only with the hub's settings, so `helm upgrade` restarts the hub then and
# only then; a home that is migrated changes nothing here (the hub reads it
# at the spawn).

resource "helm_release" "data_science_pack" {
  name      = local.release
  namespace = local.namespace
  chart     = "nebari-data-science-pack" # from wherever your platform installs the pack
  # The function's values hold maps only, so they merge with the pack's
  # values.yaml (singleuser.storage.type stays "none": the file sets the
  # home). Their hub.annotations checksum restarts the hub when a
  # setting changes.
  values = [yamlencode({ jupyterhub = yamldecode(provider::jupyter::helm_values(jupyter_spawner_config.hub)) })]
}
