# Move the listed users, up to batch_size per apply: each directory becomes
# a claim of its own (zero copy where the shared volume allows it).
resource "jupyter_home_storage" "homes" {
  namespace        = "jhub"
  access_mode      = "ReadWriteMany"
  capacity         = "20Gi"
  users            = jsonencode({ alice = {}, bob = {} })
  layout           = "per_user"
  on_layout_change = "migrate"
  migration        = { batch_size = 100 }
  shared_home = {
    claim_name        = "home-nfs"
    sub_path_template = "{username}"
    init_image        = "busybox:1.36"
  }
}
