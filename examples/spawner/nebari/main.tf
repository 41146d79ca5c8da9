# Nebari's data-science-pack (the z2jh chart as a subchart under
# "jupyterhub:"). The pack mounts its own ConfigMap (<release>-hub-config)
# at jupyterhub_config.d/; projected_config_maps keeps it there beside this
# provider's file, which sorts after the pack's 01-spawner.py and so wins.
# The pack's co-location label is nebari.dev/colocate-user: the file replaces
# the pack's own templated affinity on it with the derived one.

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
  # These replace the pack's own profile list (jupyterhub.custom.profiles,
  # filtered per user by its access keys). Leave profiles out to keep it.
  profiles = [
    jupyter_spawner_profile.small.profile_json,
    jupyter_spawner_profile.gpu.profile_json,
  ]
  colocation_label      = "nebari.dev/colocate-user"
  projected_config_maps = ["${local.release}-hub-config"]
  extra_settings_json = jsonencode({
    # The pack's own file adds this volume; this provider's file sets
    # volumes after it, so list it here (appended to the home volume).
    volumes       = [{ name = "singleuser-config", configMap = { name = "${local.release}-singleuser-config" } }]
    volume_mounts = [{ name = "singleuser-config", mountPath = "/etc/jupyter/jupyter_server_config.py", subPath = "jupyter_server_config.py" }]
  })
}

resource "helm_release" "data_science_pack" {
  name      = local.release
  namespace = local.namespace
  chart     = "nebari-data-science-pack" # from wherever your platform installs the pack
  values = [yamlencode({
    jupyterhub = merge(yamldecode(jupyter_spawner_config.hub.helm_values), {
      # The pack configures the home itself (jhub-apps wants a volumes list).
      singleuser = { storage = { type = "none", homeMountPath = "/home/jovyan" } }
    })
  })]
}
