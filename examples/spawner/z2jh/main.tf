# A plain zero-to-jupyterhub install whose storage and profiles come from
# this provider. This file holds the provider's resources; helm.tf installs
# the chart with provider::jupyter::helm_values(jupyter_spawner_config.hub),
# values that carry the rendered file into the hub (hub.extraFiles), apply
# it after the chart's settings (hub.extraConfig), state the home in
# singleuser.storage and restart the hub when the configuration changes
# (hub.annotations). The ConfigMap holds the same file for deployments that
# mount it themselves.
#
# Checked against the zero-to-jupyterhub chart at commit 48ea50e3 (main,
# JupyterHub 5.5.0) and KubeSpawner 7.1.1.dev0 (commit 4161d54), installed
# with the hashicorp/helm provider 3.1.2 on a Kubernetes 1.37 API server:
# the provider's acceptance tests apply this file and helm.tf as written
# and spawn users from the hub Helm installed
# (internal/provider/provider_examples_helm_test.go).

resource "jupyter_home_storage" "homes" {
  namespace          = "jhub"
  access_mode        = "ReadWriteMany"
  storage_class_name = "efs"
  capacity           = "20Gi"
  # Users whose claims KubeSpawner made as ReadWriteOnce keep them, and
  # their pods stay co-located, until they are migrated.
  on_mode_change = "keep_existing"
}

resource "jupyter_spawner_profile" "small" {
  slug          = "small"
  display_name  = "Small (1 core, 2 GiB)"
  default       = true
  cpu_guarantee = 0.5
  cpu_limit     = 1
  mem_guarantee = "1G"
  mem_limit     = "2G"
}

resource "jupyter_spawner_profile" "gpu" {
  slug          = "gpu"
  display_name  = "GPU"
  image         = "quay.io/jupyter/pytorch-notebook:cuda12-2024-07-29"
  cpu_guarantee = 2
  mem_guarantee = "8G"
  gpu = {
    count = 1
  }
  tolerations = [{
    key      = "nvidia.com/gpu"
    operator = "Exists"
    effect   = "NoSchedule"
  }]
}

resource "jupyter_spawner_config" "hub" {
  namespace             = "jhub"
  home_storage_settings = jupyter_home_storage.homes.spawner_settings
  profiles = [
    jupyter_spawner_profile.small.profile_json,
    jupyter_spawner_profile.gpu.profile_json,
  ]
  home_mount_path     = "/home/jovyan" # singleuser.storage.homeMountPath
  extra_settings_json = jsonencode({ start_timeout = 600 })
}
