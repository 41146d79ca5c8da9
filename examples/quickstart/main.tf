# Quickstart: read the home claims of a JupyterHub deployment and manage its
# home storage. The connection comes from KUBE_CONFIG_PATH (make demo sets it).
terraform {
  required_providers {
    jupyter = { source = "jupyter-infra/jupyter" }
  }
}

provider "jupyter" {}

variable "namespace" {
  type    = string
  default = "jhub"
}

data "jupyter_home_claims" "homes" {
  namespace = var.namespace
}

output "claims" {
  value = {
    for user, c in jsondecode(data.jupyter_home_claims.homes.claims) :
    user => "${c.name}: ${join(",", c.access_modes)} ${c.phase} ${c.requested}"
  }
}

output "access_mode_counts" {
  value = data.jupyter_home_claims.homes.access_mode_counts
}

variable "access_mode" {
  type    = string
  default = "ReadWriteOnce"
}

variable "on_mode_change" {
  type    = string
  default = "fail"
}

# The users whose homes Terraform creates, e.g. from a users.auto.tfvars.json
# file ({"users": ["alice", "bob"]}). Type it set(string), not list(string):
# OpenTofu converts a list variable set from a .tfvars file with go-cty's type
# unification, in time that grows with the square of its length (seconds at
# 20,000 users), and a set in linear time. At that scale
# users = file("users.json"), the file in the form jsonencode writes, is
# faster still.
variable "users" {
  type    = set(string)
  default = ["dave"]
}

resource "jupyter_home_storage" "homes" {
  namespace      = var.namespace
  access_mode    = var.access_mode
  capacity       = "10Gi"
  on_mode_change = var.on_mode_change
  users          = jsonencode({ for u in var.users : u => {} })

  storage_class = {
    name        = "jupyter-homes"
    provisioner = "driver.longhorn.io"
  }
}

output "change_class" {
  value = jupyter_home_storage.homes.change_class
}

# The users still on a claim that differs (keep_existing), by name.
output "legacy_users" {
  value = keys(jsondecode(jupyter_home_storage.homes.legacy_users))
}

output "colocation_required" {
  value = jupyter_home_storage.homes.colocation_required
}

output "migration_status" {
  value = jupyter_home_storage.homes.migration_status
}

# The hub's KubeSpawner configuration follows the homes: co-location only
# for the users whose home is still ReadWriteOnce. Its plan shows the
# settings (kubespawner_json), the co-location and hub_checksum (no user:
# the hub decides each spawn from the cluster); the hub's file is in the ConfigMap, and
# provider::jupyter::helm_values(jupyter_spawner_config.hub) gives the
# zero-to-jupyterhub values (examples/spawner/z2jh).
resource "jupyter_spawner_config" "hub" {
  namespace             = var.namespace
  home_storage_settings = jupyter_home_storage.homes.spawner_settings
}

output "colocation_mode" {
  value = jupyter_spawner_config.hub.colocation_mode
}
