# The pack's release (hashicorp/helm, configured where your platform
# configures it). A change of legacy_users alone (a user's ReadWriteOnce
# claim appears or is migrated) changes the values
# provider::jupyter::helm_values renders, hence the hub pod template, so
# this release's `helm upgrade` restarts the hub, and nothing else does.

resource "helm_release" "data_science_pack" {
  name      = local.release
  namespace = local.namespace
  chart     = "nebari-data-science-pack" # from wherever your platform installs the pack
  # The function's values hold maps only, so they merge with the pack's
  # values.yaml (singleuser.storage.type stays "none": the file sets the
  # home). Their hub.annotations checksum restarts the hub when
  # legacy_users or home_claims change.
  values = [yamlencode({ jupyterhub = yamldecode(provider::jupyter::helm_values(jupyter_spawner_config.hub)) })]
}
