# Nebari classic: every home is home/{username} of one shared claim (name
# yours), made by an init container owned by 1000:100.
resource "jupyter_home_storage" "homes" {
  namespace   = "dev"
  access_mode = "ReadWriteMany"
  capacity    = "20Gi"
  users       = jsonencode({ alice = {}, bob = {} })
  shared_home = {
    claim_name        = "jupyterhub-dev-share"
    sub_path_template = "home/{username}"
    directory_uid     = 1000
    directory_gid     = 100
    init_image        = "busybox:1.36"
  }
}
