# The KubeSpawner configuration of the hub in "jhub": homes from
# jupyter_home_storage, two profiles, and any other KubeSpawner setting.
resource "jupyter_spawner_config" "hub" {
  namespace             = "jhub"
  home_storage_settings = jupyter_home_storage.homes.spawner_settings
  profiles = [
    jupyter_spawner_profile.small.profile_json,
    jupyter_spawner_profile.gpu.profile_json,
  ]
  extra_settings_json = jsonencode({ start_timeout = 600 })
}

# Co-location is derived: "all" for ReadWriteOnce homes; "by_claim" for
# ReadWriteMany homes, where the hub pins a user's pods to one node only
# while the claim a server mounts is still ReadWriteOnce (read at the spawn).
output "colocation_mode" {
  value = jupyter_spawner_config.hub.colocation_mode
}

# The plan shows the settings (kubespawner_json), the co-location and
# hub_checksum; it names no user: the hub decides each spawn from the cluster. The hub's file and document
# are in the ConfigMap; a helm_release passes them to the chart with
#   values = [provider::jupyter::helm_values(jupyter_spawner_config.hub)]
