# KubeSpawner 6 and earlier (and slug_scheme = "escape") escape every
# character other than a-z and 0-9. Claims created then keep these names,
# e.g. under the zero-to-jupyterhub chart's old template
# "claim-{username}{servername}".
locals {
  users = ["alice", "Alice", "user@email.com", "has-hyphen"]
}

output "legacy_claims" {
  # {
  #   "Alice"          = "claim--41lice"
  #   "alice"          = "claim-alice"
  #   "has-hyphen"     = "claim-has-2dhyphen"
  #   "user@email.com" = "claim-user-40email-2ecom"
  # }
  value = { for u in local.users : u => "claim-${provider::jupyter::escape_slug(u)}" }
}
