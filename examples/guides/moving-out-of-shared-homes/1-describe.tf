# The layout the hub uses today: zero-to-jupyterhub with
# singleuser.storage.type = "static", static.pvcName = "home-nfs" and
# static.subPath = "{username}".
resource "jupyter_home_storage" "homes" {
  namespace   = "jhub"
  access_mode = "ReadWriteMany"
  capacity    = "20Gi"
  users       = jsonencode({ alice = {}, bob = {} })
  shared_home = {
    claim_name        = "home-nfs"
    sub_path_template = "{username}"
    init_image        = "busybox:1.36"
  }
}
