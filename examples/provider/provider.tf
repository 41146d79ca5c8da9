# Connect with a kubeconfig, as kubectl does.
provider "jupyter" {
  config_path    = "~/.kube/config"
  config_context = "prod"
}

# Or with explicit credentials, e.g. from the module that creates the cluster.
# When these are unknown at plan time, resources still plan and warn that
# their checks against the live cluster were skipped.
provider "jupyter" {
  alias                  = "explicit"
  host                   = var.cluster_endpoint
  token                  = var.cluster_token
  cluster_ca_certificate = var.cluster_ca_pem
}

variable "cluster_endpoint" { type = string }
variable "cluster_token" {
  type      = string
  sensitive = true
}
variable "cluster_ca_pem" { type = string }
