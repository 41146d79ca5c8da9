package hubconfig

import (
	"regexp"
	"testing"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/kubespawner"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/migration"
)

// pyNames are the names the hub's Python writes as literals, each marked
// with the Go constant it must equal: `name = "value"  # GoName`.
func pyNames(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, m := range regexp.MustCompile(`(?m)^\s+\w+ = "([^"]*)"  # (\w+)$`).FindAllStringSubmatch(Python(), -1) {
		out[m[2]] = m[1]
	}
	return out
}

// The hub's Python and the provider agree on every name they share: the
// files, the annotations and label of copies, splits and merges the hub
// reads at spawn, and the home volume's name
// (kube's MigratedAnnotation is checked in internal/kube).
func TestSpawnerPython_namesAgree(t *testing.T) {
	got := pyNames(t)
	want := map[string]string{
		"ConfigDir": ConfigDir, "PythonFile": PythonFile, "DocumentFile": DocumentFile,
		"CopyAnnotation": migration.CopyAnnotation, "CopyOfAnnotation": migration.CopyOfAnnotation,
		"CopyOfUIDAnnotation": migration.CopyOfUIDAnnotation, "CopySwitchedAnnotation": migration.CopySwitchedAnnotation,
		"CopyOfLabel": migration.CopyOfLabel, "SplitAnnotation": migration.SplitAnnotation,
		"SplitCopiedAnnotation": migration.SplitCopiedAnnotation, "MethodDirectoryCopy": string(migration.MethodDirectoryCopy),
		"MergeAnnotation": migration.MergeAnnotation, "MergedAnnotation": migration.MergedAnnotation,
		"HomeVolumeName": kubespawner.HomeVolumeName,
	}
	for name, v := range want {
		if got[name] != v {
			t.Errorf("the hub's Python has %s = %q, the provider %q", name, got[name], v)
		}
	}
	if _, ok := got["MigratedAnnotation"]; !ok {
		t.Errorf("the hub's Python does not name MigratedAnnotation")
	}
}
