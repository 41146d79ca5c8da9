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
