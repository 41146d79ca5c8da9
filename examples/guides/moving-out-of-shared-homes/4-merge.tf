# Merge claims back into the shared claim, up to batch_size per apply: each
# listed user's claim is copied into their directory and verified; the
# claims are kept.
resource "jupyter_home_storage" "homes" {
  namespace        = "jhub"
  access_mode      = "ReadWriteMany"
  capacity         = "20Gi"
  users            = jsonencode({ alice = {}, bob = {} })
  layout           = "shared"
  on_layout_change = "migrate"
  migration = {
    batch_size = 100
    copy_image = "registry.example.org/tools/rsync:3"
  }
  shared_home = {
    claim_name        = "home-nfs"
    sub_path_template = "{username}"
    init_image        = "busybox:1.36"
  }
}
