// Package hubtest loads a hub's configuration the way zero-to-jupyterhub's
// hub loads it and checks what it renders: the upstream sources read in
// place from ../shared/reference/ (upstream-sources.md), `helm template` of
// the z2jh chart with the test bed's Helm, the hub's configuration loaded
// by the chart's own jupyterhub_config.py with real KubeSpawner rendering
// users' claims and pods (testdata/hub.py), and server-side dry runs of
// what they render on the test bed's API server. Tests of internal/hubconfig
// and of the examples (internal/provider) use it.
package hubtest
