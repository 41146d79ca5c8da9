package hubtest

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// PackChart is Nebari's data-science-pack from ../shared/reference/ in a
// temporary directory with its jupyterhub dependency in charts/: the
// zero-to-jupyterhub chart (Z2jhChart) stands in for the z2jh 4.4.0 its
// Chart.yaml names, which cannot be fetched here. Helm installs it as the
// pack's subchart.
func PackChart(t testing.TB) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "nebari-data-science-pack")
	copyTree(t, Reference(t, "nebari-data-science-pack"), dst)
	copyTree(t, Z2jhChart(t), filepath.Join(dst, "charts", "jupyterhub"))
	return dst
}

// copyTree copies the files under src to dst, writable.
func copyTree(t testing.TB, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o700)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o600)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// NebariAppCRD serves the NebariApp kind (reconcilers.nebari.dev/v1) on the
// test bed, as Nebari's operator does on a Nebari cluster: the pack
// installs one. Its schema keeps any field; nothing reconciles it here.
func NebariAppCRD(t testing.TB) {
	t.Helper()
	s := TestAPIServer(t)
	crd := map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1",
		"kind":       "CustomResourceDefinition",
		"metadata":   map[string]any{"name": "nebariapps.reconcilers.nebari.dev"},
		"spec": map[string]any{
			"group": "reconcilers.nebari.dev",
			"scope": "Namespaced",
			"names": map[string]any{"kind": "NebariApp", "listKind": "NebariAppList", "plural": "nebariapps", "singular": "nebariapp"},
			"versions": []any{map[string]any{
				"name": "v1", "served": true, "storage": true,
				"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}},
			}},
		},
	}
	if err := s.Create("", crd); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("NebariApp CRD: %v", err)
	}
	crds := s.Dyn.Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"})
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(200 * time.Millisecond) {
		got, err := crds.Get(context.Background(), "nebariapps.reconcilers.nebari.dev", metav1.GetOptions{})
		if err == nil && established(got) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the NebariApp CRD is not established after a minute: %v", err)
		}
	}
}

// established reports whether a CRD's Established condition is True.
func established(crd *unstructured.Unstructured) bool {
	conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == "Established" && m["status"] == "True" {
			return true
		}
	}
	return false
}
