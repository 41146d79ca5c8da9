provider "jupyter" {
  config_path = "~/.kube/config"
}
