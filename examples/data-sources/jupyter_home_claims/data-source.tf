# Every home claim of the JupyterHub deployment in namespace "jhub".
data "jupyter_home_claims" "homes" {
  namespace = "jhub"
}

output "homes_per_mode" {
  # e.g. { ReadWriteOnce = 12, ReadWriteMany = 3 }
  value = data.jupyter_home_claims.homes.access_mode_counts
}

output "rwo_users" {
  value = sort([
    for user, c in data.jupyter_home_claims.homes.claims : user
    if contains(c.access_modes, "ReadWriteOnce")
  ])
}
