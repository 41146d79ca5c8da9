// Package provider is the Terraform glue: schemas, models and the
// translation between Terraform values and the pure cores (kubespawner,
// safety) and the kube layer. Decisions live in those packages, not here.
package provider
