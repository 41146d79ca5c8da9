package hubconfig

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

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
