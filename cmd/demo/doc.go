// Command demo shows the provider at work on the local test cluster: it
// builds the provider, starts etcd, kube-apiserver, the controllers and the
// test node, seeds a JupyterHub namespace with home claims as KubeSpawner
// makes them, runs `init` and `apply` (OpenTofu, or Terraform with CLI=terraform) on examples/quickstart with
// a dev override, shows the plan refusing an unsafe ReadWriteOnce ->
// ReadWriteMany flip, keep_existing, and then on_mode_change = "migrate"
// moving every home to ReadWriteMany on its own volume. Then a pod writes
// files into a home on the node's disk, on_mode_change = "migrate" copies
// it into a new ReadWriteMany claim with its Job, and a pod reads the files
// back from the new home. It stops everything. Run it with `make demo`.
package main
