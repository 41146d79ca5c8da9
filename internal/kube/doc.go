// Package kube is the provider's only door to the Kubernetes API: it builds
// clients from connection settings and wraps the few calls the provider makes
// (paginated List, create, patch) with retries and backoff.
package kube
