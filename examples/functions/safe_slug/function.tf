# KubeSpawner 7 and later (slug scheme "safe") keep a user name that is a
# valid object name and hash every other one.
locals {
  users = ["alice", "Alice", "user@email.com", "9lives"]
}

output "user_slugs" {
  # {
  #   "9lives"         = "x-9lives---bc867356"
  #   "Alice"          = "alice---3bc51062"
  #   "alice"          = "alice"
  #   "user@email.com" = "user-email-com---0925f997"
  # }
  value = { for u in local.users : u => provider::jupyter::safe_slug(u) }
}

# Users whose names KubeSpawner hashes: their pods and claims do not carry
# the name as typed.
output "hashed_users" {
  # ["9lives", "Alice", "user@email.com"]
  value = sort([for u in local.users : u if provider::jupyter::safe_slug(u) != u])
}
