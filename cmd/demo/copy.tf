# The demo's second configuration: homes on the test node's disk (the
# host-path provisioner's class), which no driver can serve in another mode,
# so a migration copies them into new claims with a Job (rsync).
terraform {
  required_providers {
    jupyter = { source = "jupyter-infra/jupyter" }
  }
}

provider "jupyter" {}

variable "namespace" {
  type    = string
  default = "jhub-node"
}

variable "access_mode" {
  type    = string
  default = "ReadWriteOnce"
}

variable "on_mode_change" {
  type    = string
  default = "fail"
}

resource "jupyter_home_storage" "homes" {
  namespace          = var.namespace
  storage_class_name = "testbed-hostpath"
  capacity           = "1Gi"
  access_mode        = var.access_mode
  on_mode_change     = var.on_mode_change
  users              = jsonencode({ erin = {} })

  migration = {
    copy_image           = "testbed.invalid/tools:1" # busybox and rsync, built into the test node
    target_name_template = "home-{username}"
  }
}

resource "jupyter_spawner_config" "hub" {
  namespace             = var.namespace
  home_storage_settings = jupyter_home_storage.homes.spawner_settings
}

output "migration_status" {
  value = jupyter_home_storage.homes.migration_status
}
