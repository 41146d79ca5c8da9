# Once every user has a claim of their own: the per-user layout alone, new
# users' claims of a ReadWriteMany class. The plan fails unless
# on_layout_change = "keep": it cannot see whether users it does not list
# still have a directory (they would get a new, empty claim).
resource "jupyter_home_storage" "homes" {
  namespace          = "jhub"
  access_mode        = "ReadWriteMany"
  storage_class_name = "nfs-csi"
  capacity           = "20Gi"
  users              = jsonencode({ alice = {}, bob = {} })
  on_layout_change   = "keep"
}
