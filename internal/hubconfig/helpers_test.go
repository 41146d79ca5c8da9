package hubconfig

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/acctest"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/hubtest"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/migration"
)

// seededHub is a fresh namespace on the test bed holding claims (name ->
// access mode) and the hub's identity there.
func seededHub(t testing.TB, claims map[string]corev1.PersistentVolumeAccessMode) hubtest.HubAPI {
	t.Helper()
	ns := acctest.Namespace(t)
	cs := acctest.Cluster(t).Admin()
	for _, name := range sortedKeys(claims) {
		seedClaim(t, cs, ns, name, claims[name], nil, nil)
	}
	return hubtest.HubIdentity(t, ns)
}

// seedEveryKindOfUser holds everyKindOfUser's claims as a home storage
// leaves them: alice's ReadWriteOnce claim, bob's rebound ReadWriteMany
// one, carol's old claim with the record of its switched copy and the
// copy home-carol (annotations as internal/kube writes them), none for
// dave.
func seedEveryKindOfUser(t *testing.T) hubtest.HubAPI {
	t.Helper()
	api := seededHub(t, map[string]corev1.PersistentVolumeAccessMode{"claim-alice": corev1.ReadWriteOnce, "claim-bob": corev1.ReadWriteMany})
	seedSwitchedCopy(t, acctest.Cluster(t).Admin(), api.Namespace, "carol", "claim-carol", "home-carol")
	return api
}

// seedSwitchedCopy creates source (ReadWriteOnce) and its verified copy
// target (ReadWriteMany), and records the switch as the copy does.
func seedSwitchedCopy(t testing.TB, cs kubernetes.Interface, ns, user, source, target string) (src, dst *corev1.PersistentVolumeClaim) {
	t.Helper()
	src = seedClaim(t, cs, ns, source, corev1.ReadWriteOnce, nil, nil)
	dst = seedClaim(t, cs, ns, target, corev1.ReadWriteMany,
		map[string]string{migration.CopyOfLabel: migration.CopyOfLabelValue(source)},
		map[string]string{migration.CopyOfAnnotation: source, migration.CopyIDAnnotation: "id-1", migration.CopyOfUIDAnnotation: string(src.UID),
			migration.CopySwitchedAnnotation: "true"})
	rec := migration.CopyRecord{Step: migration.StepSwitched, User: user, Target: target, To: string(corev1.ReadWriteMany), ID: "id-1", TargetUID: string(dst.UID)}
	src = annotateClaim(t, cs, src, migration.CopyAnnotation, rec.Encode())
	return src, dst
}

// seedClaim creates a claim of the test bed's kind (no provisioner binds
// it: it stays Pending, which the hub's lookup does not mind).
func seedClaim(t testing.TB, cs kubernetes.Interface, ns, name string, mode corev1.PersistentVolumeAccessMode, labels, ann map[string]string) *corev1.PersistentVolumeClaim {
	t.Helper()
	class := "longhorn"
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels, Annotations: ann},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{mode}, StorageClassName: &class,
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("10Gi")}}},
	}
	out, err := cs.CoreV1().PersistentVolumeClaims(ns).Create(context.Background(), pvc, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// annotateClaim sets one annotation on c.
func annotateClaim(t testing.TB, cs kubernetes.Interface, c *corev1.PersistentVolumeClaim, key, value string) *corev1.PersistentVolumeClaim {
	t.Helper()
	c = c.DeepCopy()
	if c.Annotations == nil {
		c.Annotations = map[string]string{}
	}
	c.Annotations[key] = value
	out, err := cs.CoreV1().PersistentVolumeClaims(c.Namespace).Update(context.Background(), c, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func yamlRef(t *testing.T, parts ...string) map[string]any {
	t.Helper()
	return hubtest.YAMLRef(t, parts...)
}

func mergeValues(dst, src map[string]any) map[string]any { return hubtest.MergeValues(dst, src) }

func z2jhValues(t testing.TB) map[string]any { t.Helper(); return hubtest.Z2jhValues(t) }

func packConfigD(t *testing.T, dir string) { t.Helper(); hubtest.PackConfigD(t, dir) }

type (
	hubUser  = hubtest.HubUser
	hubSpawn = hubtest.HubSpawn
	podFacts = hubtest.PodFacts
)

// runHub loads the configuration (values rendered by the chart, the
// jupyterhub_config.d files in configD, the provider's files where
// helm_values' hub.extraFiles put them) and spawns the users.
// Its KubeSpawner asks the test bed's API server as api says.
func runHub(t *testing.T, api hubtest.HubAPI, values map[string]any, configD string, users []hubUser) map[string]hubSpawn {
	t.Helper()
	extra, _ := dig(values, "hub.extraFiles").(map[string]any)
	for _, key := range []string{ExtraFilePython, ExtraFileDocument} {
		f, _ := extra[key].(map[string]any)
		if mount := str(f["mountPath"]); !strings.HasPrefix(mount, FilesDir+"/") {
			t.Fatalf("hub.extraFiles.%s.mountPath = %q, not in %s", key, mount, FilesDir)
		}
	}
	return hubtest.RunHub(t, api, values, configD, FilesDir, users)
}

// helmValuesOf renders r's helm_values and reads them back as a values file.
func helmValuesOf(t testing.TB, r Result) map[string]any {
	t.Helper()
	text, err := HelmYAML(HelmValues(r, Render(r)))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := yaml.Unmarshal([]byte(text), &m); err != nil {
		t.Fatalf("helm_values is not YAML: %v\n%s", err, text)
	}
	return m
}

func list(v any) []map[string]any { return hubtest.List(v) }

func str(v any) string { return hubtest.Str(v) }

func factsOf(t *testing.T, pod map[string]any) podFacts { t.Helper(); return hubtest.FactsOf(t, pod) }

// earlierHook is a hub.extraConfig entry, sorted before the provider's,
// whose modify_pod_hook pins every pod on label, the way a deployment's
// own co-location does.
func earlierHook(label string) string {
	return `
def _earlier_colocation(spawner, pod):
    value = pod.metadata.labels["hub.jupyter.org/username"]
    pod.metadata.labels[` + pyString(label) + `] = value
    term = {"labelSelector": {"matchLabels": {` + pyString(label) + `: value}}, "topologyKey": "kubernetes.io/hostname"}
    if pod.spec.affinity is None:
        pod.spec.affinity = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
    return pod

c.KubeSpawner.modify_pod_hook = _earlier_colocation
`
}
