# Nebari's data-science-pack (the z2jh chart as a subchart under
# "jupyterhub:"). The pack mounts its own ConfigMap
# (nebari-data-science-pack-hub-config, named after the chart) at
# jupyterhub_config.d/ through hub.extraVolumes; helm_values leaves that list
# alone (it carries the provider's file in hub.extraFiles and applies it from
# hub.extraConfig, after the pack's 00- to 03- files). The file composes with
# the pack's: its volumes (shared, nebi-bin, nebi-config, singleuser-config),
# init containers, hooks and per-user profile callable stay. The pack's
# co-location label is nebari.dev/colocate-user: the file replaces the pack's
# own templated affinity on it with the derived one.

terraform {
  required_providers {
    jupyter = { source = "jupyter-infra/jupyter" }
    helm    = { source = "hashicorp/helm" }
  }
}

locals {
  namespace = "nebari"
  release   = "nebari-data-science-pack"
}

resource "jupyter_home_storage" "homes" {
  namespace   = local.namespace
  access_mode = "ReadWriteOnce" # the pack's Longhorn block volumes
  capacity    = "20Gi"
  slug_scheme = "escape" # the pack pins it; keeps existing claim names
}

resource "jupyter_spawner_profile" "small" {
  slug          = "small-instance"
  display_name  = "Small Instance"
  default       = true
  cpu_guarantee = 0.5
  cpu_limit     = 1
  mem_guarantee = "1G"
  mem_limit     = "2G"
}

resource "jupyter_spawner_profile" "gpu" {
  slug          = "gpu-instance"
  display_name  = "GPU Instance"
  cpu_guarantee = 3
  mem_guarantee = "12G"
  gpu = {
    count = 1
  }
  # NIC taints GPU node groups with nvidia.com/gpu=true:NoSchedule.
  tolerations = [{
    key      = "nvidia.com/gpu"
    operator = "Exists"
    effect   = "NoSchedule"
  }]
}

resource "jupyter_spawner_config" "hub" {
  namespace             = local.namespace
  home_storage_settings = jupyter_home_storage.homes.spawner_settings
  legacy_users          = jupyter_home_storage.homes.legacy_users
  # Added to the pack's own profiles (jupyterhub.custom.profiles, still
  # filtered per user by its access keys); small-instance takes the place of
  # the pack's profile with that slug. These are offered to every user.
  profiles = [
    jupyter_spawner_profile.small.profile_json,
    jupyter_spawner_profile.gpu.profile_json,
  ]
  colocation_label = "nebari.dev/colocate-user"
  home_mount_path  = "/home/jovyan" # the pack's notebook_dir and HOME
}

resource "helm_release" "data_science_pack" {
  name      = local.release
  namespace = local.namespace
  chart     = "nebari-data-science-pack" # from wherever your platform installs the pack
  # helm_values holds maps only, so it merges with the pack's values.yaml
  # (singleuser.storage.type stays "none": the file sets the home). Its
  # hub.annotations checksum restarts the hub when legacy_users or
  # home_claims change.
  values = [yamlencode({ jupyterhub = yamldecode(jupyter_spawner_config.hub.helm_values) })]
}
