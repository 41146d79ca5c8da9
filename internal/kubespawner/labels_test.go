package kubespawner

import (
	"reflect"
	"testing"
)

// test_get_pvc_manifest in jupyterhub/kubespawner tests/test_spawner.py:
// username "mock@name", storage_extra_labels and storage_extra_annotations
// {"user": "{username}"}, default common labels and component label.
func TestPVCMetadataUpstream(t *testing.T) {
	const username = "mock@name"
	slug, err := SafeSlug(username, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	user, err := Expand("{username}", username, "", SchemeSafe)
	if err != nil {
		t.Fatal(err)
	}
	m := PVCMetadata{
		Username:           username,
		ExtraLabels:        map[string]string{"user": user},
		ExtraAnnotations:   map[string]string{"user": user},
		KubeSpawnerVersion: "7.1.0",
		JupyterHubVersion:  "5.5.0",
	}
	labels, err := PVCLabels(m)
	if err != nil {
		t.Fatal(err)
	}
	wantLabels := map[string]string{
		"user":                         slug,
		"hub.jupyter.org/username":     slug,
		"app.kubernetes.io/name":       "jupyterhub",
		"app.kubernetes.io/managed-by": "kubespawner",
		"app.kubernetes.io/component":  "singleuser-server",
		"app":                          "jupyterhub",
		"heritage":                     "jupyterhub",
		"component":                    "singleuser-storage",
	}
	if !reflect.DeepEqual(labels, wantLabels) {
		t.Errorf("PVCLabels = %v; want %v", labels, wantLabels)
	}
	wantAnn := map[string]string{
		"user":                                slug,
		"hub.jupyter.org/username":            username,
		"hub.jupyter.org/jupyterhub-version":  "5.5.0",
		"hub.jupyter.org/kubespawner-version": "7.1.0",
	}
	if ann := PVCAnnotations(m); !reflect.DeepEqual(ann, wantAnn) {
		t.Errorf("PVCAnnotations = %v; want %v", ann, wantAnn)
	}
}

func TestPVCMetadataPrecedence(t *testing.T) {
	m := PVCMetadata{
		Username:       "Alice",
		Servername:     "My Server",
		ExtraLabels:    map[string]string{"hub.jupyter.org/username": "x", "heritage": "x", "component": "x", "team": "a"},
		CommonLabels:   map[string]string{"heritage": "jupyterhub", "release": "jhub"},
		ComponentLabel: "custom",
		ExtraAnnotations: map[string]string{
			"hub.jupyter.org/username": "override",
		},
	}
	labels, err := PVCLabels(m)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		// extras override the username label; common labels override
		// extras; the component labels override everything.
		"hub.jupyter.org/username":    "x",
		"heritage":                    "jupyterhub",
		"release":                     "jhub",
		"team":                        "a",
		"app.kubernetes.io/component": "custom",
		"component":                   "singleuser-storage",
	}
	if !reflect.DeepEqual(labels, want) {
		t.Errorf("PVCLabels = %v; want %v", labels, want)
	}
	ann := PVCAnnotations(m)
	wantAnn := map[string]string{
		"hub.jupyter.org/username":   "override",
		"hub.jupyter.org/servername": "My Server",
	}
	if !reflect.DeepEqual(ann, wantAnn) {
		t.Errorf("PVCAnnotations = %v; want %v", ann, wantAnn)
	}
	// An empty non-nil CommonLabels means none.
	labels, _ = PVCLabels(PVCMetadata{Username: "alice", CommonLabels: map[string]string{}})
	if len(labels) != 3 {
		t.Errorf("PVCLabels without common labels = %v", labels)
	}
}

func TestUsernameLabel(t *testing.T) {
	for _, tc := range []struct{ in, label, server string }{
		{"Alice", "Alice", "Alice"},
		{"user_1", "user_1", "user_1"},
		{"a.b", "a.b", "a.b"},
		{"mock@name", "mock-name---6241db84", "mock-name---6241db84"},
		{"", "", ""},
	} {
		if got, err := UsernameLabel(tc.in); err != nil || got != tc.label {
			t.Errorf("UsernameLabel(%q) = %q, %v; want %q", tc.in, got, err, tc.label)
		}
		if got, err := ServernameLabel(tc.in); err != nil || got != tc.server {
			t.Errorf("ServernameLabel(%q) = %q, %v; want %q", tc.in, got, err, tc.server)
		}
	}
	// {username} differs from the label for "Alice".
	if got, _ := Expand("{username}", "Alice", "", SchemeSafe); got != "alice---3bc51062" {
		t.Errorf("{username} for Alice = %q", got)
	}
}
