# Quickstart: read the home claims of a JupyterHub deployment.
# The connection comes from KUBE_CONFIG_PATH (make demo sets it).
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
    for user, c in data.jupyter_home_claims.homes.claims :
    user => "${c.name}: ${join(",", c.access_modes)} ${c.phase} ${c.requested}"
  }
}

output "access_mode_counts" {
  value = data.jupyter_home_claims.homes.access_mode_counts
}
