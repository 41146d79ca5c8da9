package hubconfig

import (
	"fmt"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/claims"
)

// MaxObjectBytes is the API server's limit on one ConfigMap's or Secret's
// data (the bytes of its values; keys are not counted).
const MaxObjectBytes = 1 << 20

// HubSecretBudget is the share of the chart's hub Secret the helm values may
// take: 1 MiB less 128 KiB for the chart's own values and secrets.
const HubSecretBudget = MaxObjectBytes - 128<<10

// HelmReleaseBudget is the share of Helm's release record (a Secret of its
// own, sh.helm.release.v1.<release>.v<revision>) the helm values may take:
// 1 MiB less 384 KiB for the chart itself (its templates, files and
// schema, and the other objects it renders) and the other values.
// BENCHMARKS.md ("The hub's configuration at N users") has the record
// Helm makes with the zero-to-jupyterhub chart; with the
// data-science-pack's files the chart's share is about 330 KB (estimated
// from its files), within the 384 KiB.
const HelmReleaseBudget = MaxObjectBytes - 384<<10

// Sizes are the bytes the rendered configuration takes where the API
// server limits them.
type Sizes struct {
	// ConfigMap is the ConfigMap's data: the file and the compressed
	// document.
	ConfigMap int
	// HubSecret is what the helm values (HelmValues) add to the chart's hub Secret. The
	// chart keeps every value there twice: once in its copy of the values
	// (values.yaml, which z2jh's hub reads) and once as the files of
	// hub.extraFiles, decoded (the file and the document, compressed).
	HubSecret int
	// HelmRelease estimates what the helm values add to Helm's release
	// record, which holds the values, the rendered hub Secret (with its
	// base64 copy of the values) and the chart, compressed with gzip and
	// base64-encoded twice (by Helm, then as Secret data). The document and
	// the file are compressed data already, and base64 of compressed data
	// cannot be compressed below 3/4 of its length: each of their three
	// copies costs at least its compressed size, four times that in the
	// record; the estimate takes four and a half (the record measured with
	// Helm is in BENCHMARKS.md).
	HelmRelease int
	// DocumentJSON is the document's size before compression.
	DocumentJSON int
}

// SizesOf measures f and the helm values' text (HelmYAML) that carries it.
func SizesOf(f Files, helmValues string) Sizes {
	return Sizes{
		ConfigMap:    len(f.Python) + len(f.Document),
		HubSecret:    len(helmValues) + len(f.PythonGzip) + len(f.Document),
		HelmRelease:  (len(f.Document) + len(f.PythonGzip)) * 9 / 2,
		DocumentJSON: f.DocumentJSONBytes,
	}
}

// SizeFindings are the plan-time findings about sizes: an error when the
// ConfigMap would exceed the API server's limit (the apply would fail),
// a warning when the helm values would take more of the hub Secret or of
// Helm's release record than their budgets (helm upgrade would fail or
// come close).
func SizeFindings(r Result, s Sizes, configMap string) (errs, warnings []claims.Finding) {
	// The document holds settings and profiles, no user: what grows is
	// the profiles and extra_settings_json.
	content := fmt.Sprintf("the rendered file and the compressed document of %d profile(s) and the settings", len(r.Profiles))
	attr := "profiles"
	if s.ConfigMap > MaxObjectBytes {
		errs = append(errs, claims.Finding{Attribute: attr, Summary: "The hub configuration does not fit in a ConfigMap",
			Detail: fmt.Sprintf("ConfigMap %q would hold %s (%s, %s as JSON before compression); the API server accepts at most %s in one ConfigMap, so the apply would fail. "+
				"Move large values out of profiles and extra_settings_json (an image pull secret, a file the hub mounts instead).",
				configMap, kib(s.ConfigMap), content, kib(s.DocumentJSON), kib(MaxObjectBytes))})
	}
	if s.HubSecret > HubSecretBudget || s.HelmRelease > HelmReleaseBudget {
		warnings = append(warnings, claims.Finding{Attribute: attr, Summary: "The helm values are too large for helm upgrade",
			Detail: fmt.Sprintf("provider::jupyter::helm_values carries %s in hub.extraFiles. The chart keeps the values and the files in its hub Secret, where they take %s (budget %s), "+
				"and Helm keeps its release record in a Secret too, where they take about %s (budget %s); each Secret is limited to %s by the API server, "+
				"and the chart and its other values need the rest, so helm upgrade fails or is close to failing. "+
				"Instead of passing the values' hub.extraFiles, mount the ConfigMap %q into the hub: a hub.extraVolumes entry for the ConfigMap and hub.extraVolumeMounts of its %s and %s "+
				"(subPath each) into %s/, and set the hub pod annotation %s (hub.annotations) to hub_checksum so that the hub restarts when they change. "+
				"The %s entry of hub.extraConfig in the values then applies the mounted file.",
				content, kib(s.HubSecret), kib(HubSecretBudget), kib(s.HelmRelease), kib(HelmReleaseBudget), kib(MaxObjectBytes),
				configMap, PythonFile, DocumentFile, ConfigDir, ChecksumAnnotation, ExtraConfigKey)})
	}
	return errs, warnings
}

// kib renders a byte count for a message.
func kib(n int) string {
	if n < 10<<10 {
		return fmt.Sprintf("%d bytes", n)
	}
	return fmt.Sprintf("%d KiB", n>>10)
}
