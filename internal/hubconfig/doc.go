// Package hubconfig is the pure core of the spawner resources: it turns typed
// profiles, the home storage's settings and the legacy users into the
// KubeSpawner settings, the jupyterhub_config.d Python file and the chart's
// Helm values, derives co-location, and checks profiles against nodes.
// It has no Terraform or client-go imports.
package hubconfig
