# The names KubeSpawner renders from its templates, for a list of users.
locals {
  users = ["alice", "Alice", "user@email.com"]
}

# Home claims under KubeSpawner 7's default pvc_name_template.
output "claims" {
  # {
  #   "Alice"          = "claim-alice---3bc51062"
  #   "alice"          = "claim-alice"
  #   "user@email.com" = "claim-user-email-com---0925f997"
  # }
  value = {
    for u in local.users : u => provider::jupyter::expand_template("claim-{user_server}", u, "", "safe")
  }
}

# The same claims as the zero-to-jupyterhub chart named them before
# version 4 (template "claim-{username}{servername}", slug scheme "escape"):
# an upgrade changes the name of every user but "alice".
output "legacy_claims" {
  # {
  #   "Alice"          = "claim--41lice"
  #   "alice"          = "claim-alice"
  #   "user@email.com" = "claim-user-40email-2ecom"
  # }
  value = {
    for u in local.users : u => provider::jupyter::expand_template("claim-{username}{servername}", u, "", "escape")
  }
}

# A named server: "{user_server}" joins the names with "--", and the
# trailing "--" of a default server is stripped.
output "pods" {
  # { default = "jupyter-alice", gpu = "jupyter-alice--gpu" }
  value = {
    default = provider::jupyter::expand_template("jupyter-{username}--{servername}", "alice", "", "safe")
    gpu     = provider::jupyter::expand_template("jupyter-{user_server}", "alice", "gpu", "safe")
  }
}
