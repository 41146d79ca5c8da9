# Where each listed user's home is now, as the hub decides it at their next
# spawn: "directory" (not moved yet), "claim" or "refused" (a move under way).
data "jupyter_home_claims" "moving" {
  namespace         = "jhub"
  shared_claim      = "home-nfs"
  sub_path_template = "{username}"
  layout            = "per_user"
  users             = jupyter_home_storage.homes.users
}

output "still_in_directories" {
  value = sort([for u, h in jsondecode(data.jupyter_home_claims.moving.homes) : u if h.home == "directory"])
}
