# Home storage of the JupyterHub deployment in "jhub": ReadWriteMany homes on
# a Longhorn class this resource creates, with two pre-provisioned users.

# set(string), not list(string): OpenTofu converts a list variable set from a
# .tfvars file with go-cty's type unification, in time that grows with the
# square of its length (seconds at 20,000 users), and a set in linear time.
variable "users" {
  type    = set(string)
  default = ["alice", "bob"]
}

resource "jupyter_home_storage" "homes" {
  namespace   = "jhub"
  access_mode = "ReadWriteMany"
  capacity    = "20Gi"

  storage_class = {
    name        = "jupyter-homes"
    provisioner = "driver.longhorn.io"
    parameters = {
      numberOfReplicas = "2"
    }
    # reclaim_policy defaults to Retain: these are home directories.
  }

  # The users whose claims Terraform creates: one JSON object from each
  # username to {}, here from var.users (above), or at tens of thousands of
  # users users = file("users.json"), the file in the form jsonencode writes.
  users = jsonencode({ for u in var.users : u => {} })

  # Users whose claims KubeSpawner made as ReadWriteOnce keep them (and their
  # co-location) until they are migrated; without this the plan fails and
  # names them.
  on_mode_change = "keep_existing"
}

# The users still on a claim that differs, by name (legacy_users is one JSON
# string, username to claim names; pass it as it is to jupyter_spawner_config).
output "legacy_users" {
  value = keys(jsondecode(jupyter_home_storage.homes.legacy_users))
}

# What the plan does to home data: none, safe or destructive.
output "change_class" {
  value = jupyter_home_storage.homes.change_class
}

# Every user's home claim: name, access_mode, storage_class_name, capacity,
# phase and managed. `claims` lists each user's name and what differs from
# the most common claim, `default`.
locals {
  home_claims = jsondecode(jupyter_home_storage.homes.claims)
}

output "home_claims" {
  value = { for user, c in local.home_claims.users : user => merge(local.home_claims.default, c) }
}

# Users whose homes are not ReadWriteMany yet.
output "not_shared" {
  value = sort([for user, c in local.home_claims.users : user if merge(local.home_claims.default, c).access_mode != "ReadWriteMany"])
}

# Later, move the legacy users' homes to ReadWriteMany keeping their data:
# each claim is rebound to its own Longhorn volume (zero copy; likewise on NFS,
# EFS and CephFS, and on the CSI drivers listed in rebind_drivers), homes on
# other backends are copied into new claims by a Job, users with a running
# server are left for the next apply.
#
#   on_mode_change = "migrate"
#   migration = {
#     rebind_drivers       = ["nfs.example.org"] # a driver you know serves any volume to many nodes
#     batch_size           = 50
#     max_parallel         = 4
#     copy_image           = "registry.example.org/tools/rsync:3"
#     target_name_template = "home-{username}"
#   }
