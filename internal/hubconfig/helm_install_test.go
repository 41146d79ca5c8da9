package hubconfig

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/acctest"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/hubtest"
)

// helmInstall runs `helm install` of the chart as release in namespace ns
// on the test bed's API server with the values (without the chart's
// hooks, whose Jobs no node runs here) and returns Helm's output and error.
func helmInstall(t *testing.T, kubeconfig, chart, release, ns string, values map[string]any) (string, error) {
	t.Helper()
	text, err := HelmYAML(values)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	p := filepath.Join(dir, "values.yaml")
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(hubtest.HelmBinary(t), "install", release, chart, "--namespace", ns, "--kubeconfig", kubeconfig, "--no-hooks", "-f", p)
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+dir, "HELM_CONFIG_HOME="+dir, "HELM_DATA_HOME="+dir)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// secretBytes is the size of a Secret's data as the API server limits it.
func secretBytes(t *testing.T, cs kubernetes.Interface, ns, name string) int {
	t.Helper()
	s, err := cs.CoreV1().Secrets(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, v := range s.Data {
		n += len(v)
	}
	return n
}

// Helm on the test bed's API server with the zero-to-jupyterhub chart and
// a large hub's configuration (which names no user, so it is the same at
// any number of users):
//   - with helm_values the hub Secret Helm makes stays under 64 KiB, and
//     what the size check counts plus the part its budgets leave to the
//     chart covers the hub Secret and Helm's release record;
//   - the ConfigMap the resource renders (the API server accepts it)
//     mounted into jupyterhub_config.d, helm_values without
//     hub.extraFiles: the hub Deployment mounts both of its files and
//     carries the checksum.
func TestSpawnerHelm_install(t *testing.T) {
	c := acctest.Cluster(t)
	cs := c.Admin()
	chart := z2jhChart(t)
	r := largeHub(t)
	f := Render(r)

	t.Run("helm_values", func(t *testing.T) {
		values := HelmValues(r, f)
		text, _ := HelmYAML(values)
		s := SizesOf(f, text)
		if _, warnings := SizeFindings(r, s, "jupyter-spawner"); len(warnings) > 0 {
			t.Fatalf("warned: %v", warnings)
		}
		ns := acctest.Namespace(t)
		if out, err := helmInstall(t, c.KubeconfigPath, chart, "values", ns, values); err != nil {
			t.Fatalf("helm install: %v\n%s", err, out)
		}
		hub, record := secretBytes(t, cs, ns, "hub"), secretBytes(t, cs, ns, "sh.helm.release.v1.values.v1")
		t.Logf("hub Secret %d bytes (counted %d), release record %d bytes (estimated %d)", hub, s.HubSecret, record, s.HelmRelease)
		// The whole Secret Helm made: the chart's own values and secrets,
		// and the file and the document twice each, compressed.
		if hub > 64<<10 {
			t.Errorf("the hub Secret takes %d bytes, more than 64 KiB", hub)
		}
		if hub > s.HubSecret+(MaxObjectBytes-HubSecretBudget) || record > s.HelmRelease+(MaxObjectBytes-HelmReleaseBudget) {
			t.Errorf("the chart takes more than the budgets leave it: hub Secret %d for %d counted, release record %d for %d estimated", hub, s.HubSecret, record, s.HelmRelease)
		}
	})
	t.Run("config_map", func(t *testing.T) {
		ns := acctest.Namespace(t)
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "jupyter-spawner"},
			Data: map[string]string{PythonFile: f.Python}, BinaryData: map[string][]byte{DocumentFile: f.Document}}
		if _, err := cs.CoreV1().ConfigMaps(ns).Create(context.Background(), cm, metav1.CreateOptions{}); err != nil {
			t.Fatalf("the API server rejects the ConfigMap: %v", err)
		}
		own := HelmValues(r, f)
		hub := own["hub"].(map[string]any)
		delete(hub, "extraFiles")
		hub["extraVolumes"] = []any{map[string]any{"name": VolumeName, "configMap": map[string]any{"name": "jupyter-spawner"}}}
		var mounts []any
		for _, name := range []string{PythonFile, DocumentFile} {
			mounts = append(mounts, map[string]any{"name": VolumeName, "mountPath": ConfigDir + "/" + name, "subPath": name})
		}
		hub["extraVolumeMounts"] = mounts
		if out, err := helmInstall(t, c.KubeconfigPath, chart, "mounted", ns, own); err != nil {
			t.Fatalf("helm install: %v\n%s", err, out)
		}
		dep, err := cs.AppsV1().Deployments(ns).Get(context.Background(), "hub", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		pod := dep.Spec.Template
		if got := pod.Annotations[ChecksumAnnotation]; got != f.Checksum {
			t.Errorf("hub pod annotation %s = %q, want %s", ChecksumAnnotation, got, f.Checksum)
		}
		found := false
		for _, v := range pod.Spec.Volumes {
			found = found || v.Name == VolumeName && v.ConfigMap != nil && v.ConfigMap.Name == "jupyter-spawner"
		}
		got := map[string]string{}
		for _, m := range pod.Spec.Containers[0].VolumeMounts {
			if m.Name == VolumeName {
				got[m.MountPath] = m.SubPath
			}
		}
		if !found || got[ConfigDir+"/"+PythonFile] != PythonFile || got[ConfigDir+"/"+DocumentFile] != DocumentFile {
			t.Errorf("the hub mounts the ConfigMap %v at %v", found, got)
		}
		t.Logf("hub Secret %d bytes, release record %d bytes", secretBytes(t, cs, ns, "hub"), secretBytes(t, cs, ns, "sh.helm.release.v1.mounted.v1"))
	})
}
