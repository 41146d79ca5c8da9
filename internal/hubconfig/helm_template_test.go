package hubconfig

import (
	"bytes"
	"encoding/base64"
	"errors"
	"slices"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/claims"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/hubtest"
)

func z2jhChart(t *testing.T) string { t.Helper(); return hubtest.Z2jhChart(t) }

// helmTemplate renders the chart as release hub in namespace jupyter with
// the values files, in order, and returns the objects by kind/name.
func helmTemplate(t *testing.T, chart string, values ...map[string]any) map[string]map[string]any {
	t.Helper()
	return hubtest.HelmTemplate(t, chart, values...)
}

// The chart rendered with the data-science-pack's values and the
// provider's helm_values: the hub Deployment keeps the pack's volumes and
// mounts, mounts the provider's files where the hub.extraConfig entry
// reads them, and carries the checksum, which changes when only a setting
// changes (so helm upgrade restarts the hub then) and only then.
func TestSpawnerHelm_templateWithThePack(t *testing.T) {
	chart := z2jhChart(t)
	pack := yamlRef(t, "nebari-data-science-pack", "values.yaml")
	sub, _ := pack["jupyterhub"].(map[string]any)
	cfg := Config{Home: homeSettings(claims.RWX), ColocationLabel: "nebari.dev/colocate-user",
		Profiles: []map[string]any{gpuProfileDict()}, Extra: map[string]any{"start_timeout": 600.0}}
	var objs map[string]map[string]any
	render := func(c Config) (map[string]any, map[string]any, Result) {
		r := mustBuild(t, c)
		objs = helmTemplate(t, chart, sub, helmValuesOf(t, r))
		dep, secret := objs["Deployment/hub"], objs["Secret/hub"]
		if dep == nil || secret == nil {
			t.Fatalf("no hub Deployment or Secret among %v", sortedKeys(objs))
		}
		return dep, secret, r
	}
	dep, secret, r := render(cfg)
	rendered := objs

	pod := dig(dep, "spec.template").(map[string]any)
	if got := dig(pod, "metadata.annotations."+ChecksumAnnotation); got != Render(r).Checksum {
		t.Errorf("hub pod annotation %s = %v, want %s", ChecksumAnnotation, got, Render(r).Checksum)
	}
	volumes := map[string]map[string]any{}
	for _, v := range list(dig(pod, "spec.volumes")) {
		volumes[str(v["name"])] = v
	}
	for _, v := range []string{"custom-config", "oauth-client", "org-ca", "ca-merged", "files"} {
		if volumes[v] == nil {
			t.Errorf("hub pod lacks volume %s; has %v", v, sortedKeys(volumes))
		}
	}
	var keys []string
	for _, item := range list(dig(volumes["files"], "secret.items")) {
		keys = append(keys, str(item["key"]))
	}
	if !slices.Contains(keys, ExtraFilePython) || !slices.Contains(keys, ExtraFileDocument) {
		t.Errorf("the files volume carries %v", keys)
	}
	mounts := map[string]map[string]any{}
	containers := list(dig(pod, "spec.containers"))
	for _, m := range list(containers[0]["volumeMounts"]) {
		mounts[str(m["mountPath"])] = m
	}
	for path, want := range map[string]string{
		FilesDir + "/" + PythonFile:                      "files/" + ExtraFilePython,
		FilesDir + "/" + DocumentFile:                    "files/" + ExtraFileDocument,
		"/usr/local/etc/jupyterhub/jupyterhub_config.d/": "custom-config/",
		"/etc/oauth": "oauth-client/",
	} {
		m := mounts[path]
		if got := str(m["name"]) + "/" + str(m["subPath"]); got != want {
			t.Errorf("mount at %s = %q, want %q", path, got, want)
		}
	}
	// The hub Secret holds the files' content as the hub reads it: the
	// file and the document, each compressed, as the Secret's base64 data.
	gz, err := base64.StdEncoding.DecodeString(str(dig(secret, "data."+ExtraFileDocument)))
	pyGz, perr := base64.StdEncoding.DecodeString(str(dig(secret, "data."+ExtraFilePython)))
	if err != nil || perr != nil || !bytes.Equal(pyGz, Render(r).PythonGzip) || !bytes.Equal(gz, Render(r).Document) {
		t.Errorf("the hub Secret's files differ from the rendered file and document (%v, %v)", err, perr)
	}
	if py, err := inflate(pyGz); err != nil || string(py) != Python() {
		t.Errorf("the hub Secret's file does not decompress to the rendered file (%v)", err)
	}
	if text, _ := dig(secret, "stringData").(map[string]any); text[ExtraFileDocument] != nil || text[ExtraFilePython] != nil {
		t.Errorf("the hub Secret carries the files as text too")
	}
	var doc map[string]any
	if err := DecodeDocumentFile(gz, &doc); err != nil || dig(doc, "colocation.label") != "nebari.dev/colocate-user" {
		t.Errorf("document %v: %v", err, dig(doc, "colocation"))
	}

	// checksum/secret is left out: without a cluster to look the hub
	// Secret up in, helm template generates its random secrets anew.
	stable := func(pod map[string]any) string {
		return JSON([]any{dig(pod, "metadata.annotations.checksum/config-map"), dig(pod, "metadata.annotations."+ChecksumAnnotation)})
	}
	if same, _, _ := render(cfg); stable(dig(same, "spec.template").(map[string]any)) != stable(pod) {
		t.Error("the same configuration rendered another hub pod template: every helm upgrade would restart the hub")
	}
	cfg.Extra = map[string]any{"start_timeout": 900.0}
	moved, _, _ := render(cfg)
	if dig(moved, "spec.template.metadata.annotations."+ChecksumAnnotation) == dig(pod, "metadata.annotations."+ChecksumAnnotation) {
		t.Error("a new setting left the hub pod's checksum annotation unchanged: helm upgrade would not restart the hub")
	}

	// Every object the chart renders is accepted by the API server.
	t.Run("dry_run", func(t *testing.T) {
		s := testAPIServer(t)
		ns := s.Namespace()
		var notServed []string
		for _, key := range sortedKeys(rendered) {
			err := s.DryRun(ns, rendered[key])
			switch {
			case errors.Is(err, errNotServed):
				notServed = append(notServed, key)
			case err != nil:
				t.Errorf("the API server rejects %s: %v", key, err)
			}
		}
		// The chart renders only kinds Kubernetes itself serves; one it
		// does not (a CRD's) would show here, and fail.
		route := map[string]any{"apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute", "metadata": map[string]any{"name": "hub"}}
		if err := s.DryRun(ns, route); !errors.Is(err, errNotServed) {
			t.Errorf("a kind the test bed does not serve: %v, want it reported as not served", err)
		}
		if len(notServed) > 0 {
			t.Errorf("the chart renders kinds the API server does not serve: %v", notServed)
		}
		t.Logf("%d objects accepted: %v", len(rendered)-len(notServed), sortedKeys(rendered))
	})
}

// What the size check counts of the hub Secret is what the chart puts
// there: with the data-science-pack's values and helm_values, for a small
// hub and for a large one, the Secret's data (decoded) is at least the
// check's count (less the small differences of the chart's re-encoding of
// the values) and at most that plus the part of the Secret the budget
// leaves to the chart.
func TestSpawnerHelm_hubSecretSize(t *testing.T) {
	chart := z2jhChart(t)
	sub, _ := yamlRef(t, "nebari-data-science-pack", "values.yaml")["jupyterhub"].(map[string]any)
	small := mustBuild(t, Config{Home: homeSettings(claims.RWX)})
	for name, r := range map[string]Result{"small": small, "large": largeHub(t)} {
		t.Run(name, func(t *testing.T) {
			f := Render(r)
			text, err := HelmYAML(HelmValues(r, f))
			if err != nil {
				t.Fatal(err)
			}
			var values map[string]any
			if err := yaml.Unmarshal([]byte(text), &values); err != nil {
				t.Fatal(err)
			}
			secret := helmTemplate(t, chart, sub, values)["Secret/hub"]
			total := 0
			for k, v := range dig(secret, "data").(map[string]any) {
				b, err := base64.StdEncoding.DecodeString(str(v))
				if err != nil {
					t.Fatalf("data.%s: %v", k, err)
				}
				total += len(b)
			}
			stringData, _ := dig(secret, "stringData").(map[string]any)
			for _, v := range stringData {
				total += len(str(v))
			}
			s := SizesOf(f, text)
			t.Logf("hub Secret %d bytes, counted %d (document %d bytes compressed, %d as JSON)", total, s.HubSecret, len(f.Document), f.DocumentJSONBytes)
			if total < s.HubSecret-s.HubSecret/100 || total > s.HubSecret+(MaxObjectBytes-HubSecretBudget) {
				t.Errorf("the hub Secret holds %d bytes; the check counts %d for helm_values and leaves %d to the chart", total, s.HubSecret, MaxObjectBytes-HubSecretBudget)
			}
		})
	}
}
