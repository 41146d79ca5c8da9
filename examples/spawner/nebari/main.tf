# Nebari's data-science-pack (the z2jh chart as a subchart under
# "jupyterhub:"). This file holds the provider's resources; helm.tf
# installs the pack with provider::jupyter::helm_values(jupyter_spawner_config.hub)
# nested under "jupyterhub:". The pack mounts its own ConfigMap
# (nebari-data-science-pack-hub-config, named after the chart) at
# jupyterhub_config.d/ through hub.extraVolumes; the values leave that list
# alone (it carries the provider's file in hub.extraFiles and applies it from
# hub.extraConfig, after the pack's 00- to 03- files). The file composes with
# the pack's: its volumes (shared, nebi-bin, nebi-config, singleuser-config),
# init containers, hooks and per-user profile callable stay. The pack's
# co-location label is nebari.dev/colocate-user: the file replaces the pack's
# own templated affinity on it with the derived one.
#
# Checked against the data-science-pack 0.1.4 (commit d98c4f9; its z2jh
# subchart is 4.4.0, JupyterHub 5.4.3) with the zero-to-jupyterhub chart at
# commit 48ea50e3 standing in for that subchart, and KubeSpawner 7.1.1.dev0
# (commit 4161d54), installed with the hashicorp/helm provider 3.1.2 on a
# Kubernetes 1.37 API server: the provider's acceptance tests apply this
# file and helm.tf as written and spawn users from the hub Helm installed
# (internal/provider/provider_examples_helm_test.go).

locals {
  namespace = "nebari"
  release   = "nebari-data-science-pack"
}

resource "jupyter_home_storage" "homes" {
  namespace = local.namespace
  # The pack's homes are Longhorn block volumes (ReadWriteOnce), which pin
  # each user's pods to one node. Longhorn serves ReadWriteMany too (its
  # share manager exports a volume over NFS): new homes are ReadWriteMany,
  # and users whose claims are ReadWriteOnce keep them (listed in
  # legacy_users), their pods co-located by the hub at each spawn, until
  # they are migrated.
  access_mode        = "ReadWriteMany"
  storage_class_name = "longhorn"
  on_mode_change     = "keep_existing"
  capacity           = "20Gi"
  slug_scheme        = "escape" # the pack pins it; keeps existing claim names
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
