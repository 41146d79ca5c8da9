//go:build tools

// Package helm pins the Helm command for the test bed.
package helm

import _ "helm.sh/helm/v4/cmd/helm"
