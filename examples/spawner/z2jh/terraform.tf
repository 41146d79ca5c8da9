terraform {
  required_providers {
    jupyter = { source = "jupyter-infra/jupyter" }
    helm    = { source = "hashicorp/helm" }
  }
}
