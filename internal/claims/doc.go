// Package claims is the vocabulary every layer shares, free of Terraform and
// Kubernetes client types: what the provider knows of one live home claim
// (Claim, Ref), a claim or StorageClass to create (Spec, StorageClass), the
// access modes, the labels and annotations of the provider's own objects,
// the errors the client answers the executor with (ErrExists, ErrChanged),
// and a decision core's diagnostic (Finding).
package claims
