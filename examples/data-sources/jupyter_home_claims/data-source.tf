# Every home claim of the JupyterHub deployment in namespace "jhub".
data "jupyter_home_claims" "homes" {
  namespace = "jhub"
}

# claims is compact JSON (one string keeps plans fast at tens of thousands of
# users); decoded, it is an object keyed by username ("username/servername"
# for a named server's claim).
locals {
  homes = jsondecode(data.jupyter_home_claims.homes.claims)
}

output "homes_per_mode" {
  # e.g. { ReadWriteOnce = 12, ReadWriteMany = 3 }
  value = data.jupyter_home_claims.homes.access_mode_counts
}

output "rwo_users" {
  value = sort([
    for user, c in local.homes : user
    if contains(c.access_modes, "ReadWriteOnce")
  ])
}

output "pending_claims" {
  # e.g. { "carol/gpu" = "claim-carol--gpu" }
  value = { for user, c in local.homes : user => c.name if c.phase == "Pending" }
}

# Homes in a directory of one shared claim (zero-to-jupyterhub's
# singleuser.storage.type "static", Nebari classic "home/{username}"), while
# they move out into claims of their own (jupyter_home_storage with
# layout = "per_user" and shared_home): where each user's default server
# finds its home now, as the hub decides it at a spawn. Pass the values
# jupyter_home_storage has. No pod runs: directories cannot be listed, so
# only the users named are resolved.
data "jupyter_home_claims" "moving" {
  namespace         = "jhub"
  shared_claim      = "home-nfs"
  sub_path_template = "home/{username}"
  slug_scheme       = "safe"
  layout            = "per_user"
  users             = jsonencode({ for u in ["alice", "dan", "erin"] : u => {} })
}

locals {
  # e.g. { alice = { home = "claim", claim = "claim-alice", moved = true, ... } }
  moving = jsondecode(data.jupyter_home_claims.moving.homes)
}

output "still_in_directories" {
  # e.g. { dan = "home/dan" }: their directory of home-nfs
  value = { for user, h in local.moving : user => h.sub_path if h.home == "directory" }
}

output "moved" {
  # e.g. ["alice"]: a claim of their own, a finished move of their directory
  value = sort([for user, h in local.moving : user if h.moved])
}

output "waiting" {
  # e.g. { erin = "claim claim-erin is being moved out of the shared claim (Pending, not Bound)" }:
  # the hub refuses their spawn until the move is finished
  value = { for user, h in local.moving : user => h.reason if h.home == "refused" }
}

output "shared_claim_bound" {
  value = data.jupyter_home_claims.moving.shared_claim_status.phase == "Bound"
}
