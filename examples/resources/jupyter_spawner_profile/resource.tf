# A GPU profile with a shared, read-only datasets volume and an image choice.
resource "jupyter_spawner_profile" "gpu" {
  slug          = "gpu"
  display_name  = "GPU (1 × NVIDIA)"
  description   = "4 cores, 16 GiB, one GPU"
  namespace     = "jhub" # where the new_claim volume is created
  image         = "quay.io/jupyter/pytorch-notebook:cuda12-2024-07-29"
  cpu_guarantee = 2
  cpu_limit     = 4
  mem_guarantee = "8G" # KubeSpawner units: powers of 1024
  mem_limit     = "16G"

  gpu = {
    count = 1 # nvidia.com/gpu unless resource_name says otherwise
  }

  node_selector = { "node.kubernetes.io/instance-type" = "g5.xlarge" }

  # These replace the global tolerations; repeat any the profile still needs.
  tolerations = [{
    key      = "nvidia.com/gpu"
    operator = "Exists"
    effect   = "NoSchedule"
  }]

  volume_defaults = {
    allowed_access_modes = ["ReadWriteMany", "ReadOnlyMany"]
    storage_class_name   = "efs"
  }

  volumes = [{
    name       = "datasets"
    mount_path = "/datasets"
    read_only  = true
    new_claim = {
      size = "500Gi"
    }
  }]

  options = {
    image = {
      display_name = "Image"
      choices = {
        pytorch = {
          display_name              = "PyTorch"
          default                   = true
          kubespawner_override_json = jsonencode({ image = "quay.io/jupyter/pytorch-notebook:cuda12-2024-07-29" })
        }
        tensorflow = {
          display_name              = "TensorFlow"
          kubespawner_override_json = jsonencode({ image = "quay.io/jupyter/tensorflow-notebook:cuda-2024-07-29" })
        }
      }
      unlisted_choice = {
        display_name              = "Another image from quay.io/jupyter"
        validation_regex          = "^quay\\.io/jupyter/[a-z-]+:[A-Za-z0-9._-]+$"
        validation_message        = "Use an image from quay.io/jupyter."
        kubespawner_override_json = jsonencode({ image = "{value}" })
      }
    }
  }

  # Escape hatch for any other KubeSpawner setting, merged last.
  kubespawner_override_json = jsonencode({ default_url = "/lab" })

  # Fail the plan when no node could ever hold these guarantees.
  require_schedulable = true
}
