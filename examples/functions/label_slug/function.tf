# KubeSpawner labels each home claim with hub.jupyter.org/username. Label
# values allow upper case, '.' and '_', so the label often differs from the
# slug in the claim's name.
locals {
  user = "Alice"
}

output "name_and_label" {
  # { name = "alice---3bc51062", label = "Alice" }
  value = {
    name  = provider::jupyter::safe_slug(local.user)
    label = provider::jupyter::label_slug(local.user)
  }
}

# The home claims of one user, found by label.
data "jupyter_home_claims" "alice" {
  namespace = "jhub"
  # "hub.jupyter.org/username=Alice"
  label_selector = "hub.jupyter.org/username=${provider::jupyter::label_slug(local.user)}"
}

output "alice_claims" {
  value = keys(jsondecode(data.jupyter_home_claims.alice.claims))
}

output "email_label" {
  # "user-email-com---0925f997": '@' is not allowed in a label, so it is hashed.
  value = provider::jupyter::label_slug("user@email.com")
}
