package testcluster

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// SeedClaim describes a home claim as KubeSpawner would have created it.
type SeedClaim struct {
	Name          string
	Username      string // raw username: the annotation
	UsernameLabel string // label value; defaults to Username
	Servername    string
	Modes         []corev1.PersistentVolumeAccessMode
	StorageClass  *string
	Size          string
	// Bound pre-creates a PersistentVolume reserved for the claim; the test
	// cluster's PV binder (kube-controller-manager) then binds it.
	Bound bool
	// ReclaimPolicy of that volume; Retain when empty.
	ReclaimPolicy corev1.PersistentVolumeReclaimPolicy
	// Driver is that volume's CSI driver; driver.longhorn.io when empty.
	Driver string
}

// Seed creates claims as KubeSpawner would, through client-go, and for
// Bound ones waits until the PV binder has bound them.
func Seed(ctx context.Context, cs kubernetes.Interface, namespace string, seeds ...SeedClaim) error {
	for _, s := range seeds {
		s = s.withDefaults()
		pvc := s.claim(namespace)
		if s.Bound {
			pv := s.volume(namespace)
			if _, err := cs.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil {
				return fmt.Errorf("seed pv %s: %w", pv.Name, err)
			}
			pvc.Spec.VolumeName = pv.Name
		}
		if _, err := cs.CoreV1().PersistentVolumeClaims(namespace).Create(ctx, pvc, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("seed claim %s: %w", s.Name, err)
		}
	}
	for _, s := range seeds {
		if s.Bound {
			if err := WaitClaimPhase(ctx, cs, namespace, s.Name, corev1.ClaimBound); err != nil {
				return err
			}
		}
	}
	return nil
}

// withDefaults is s with the fields left empty filled in: 1Gi,
// ReadWriteOnce, the username as its label, driver.longhorn.io, Retain.
func (s SeedClaim) withDefaults() SeedClaim {
	if s.Size == "" {
		s.Size = "1Gi"
	}
	if len(s.Modes) == 0 {
		s.Modes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}
	}
	if s.UsernameLabel == "" {
		s.UsernameLabel = s.Username
	}
	if s.Driver == "" {
		s.Driver = "driver.longhorn.io"
	}
	if s.ReclaimPolicy == "" {
		s.ReclaimPolicy = corev1.PersistentVolumeReclaimRetain
	}
	return s
}

// claim is the claim KubeSpawner would have made for s in namespace.
func (s SeedClaim) claim(namespace string) *corev1.PersistentVolumeClaim {
	ann := map[string]string{"hub.jupyter.org/username": s.Username}
	if s.Servername != "" {
		ann["hub.jupyter.org/servername"] = s.Servername
	}
	return &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{
			Name: s.Name, Namespace: namespace, Annotations: ann,
			Labels: map[string]string{
				"app": "jupyterhub", "component": "singleuser-storage", "heritage": "jupyterhub",
				"hub.jupyter.org/username": s.UsernameLabel,
			},
		},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      s.Modes,
			StorageClassName: s.StorageClass,
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceStorage: resource.MustParse(s.Size),
			}},
		},
	}
}

// volume is the PersistentVolume reserved for a Bound s in namespace.
func (s SeedClaim) volume(namespace string) *corev1.PersistentVolume {
	pvName := fmt.Sprintf("pv-%s-%s", namespace, s.Name)
	if len(pvName) > 63 {
		pvName = strings.TrimRight(pvName[:63], "-.")
	}
	class := ""
	if s.StorageClass != nil {
		class = *s.StorageClass
	}
	return &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: pvName, Labels: map[string]string{SeededVolumeLabel: namespace}},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(s.Size)},
			AccessModes:                   s.Modes,
			StorageClassName:              class,
			PersistentVolumeReclaimPolicy: s.ReclaimPolicy,
			ClaimRef:                      &corev1.ObjectReference{Namespace: namespace, Name: s.Name},
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{
				Driver: s.Driver, VolumeHandle: pvName,
			}},
		},
	}
}

// WaitClaimPhase waits up to a minute for a claim to reach phase.
func WaitClaimPhase(ctx context.Context, cs kubernetes.Interface, namespace, name string, phase corev1.PersistentVolumeClaimPhase) error {
	deadline := time.Now().Add(time.Minute)
	for {
		pvc, err := cs.CoreV1().PersistentVolumeClaims(namespace).Get(ctx, name, metav1.GetOptions{})
		if err == nil && pvc.Status.Phase == phase {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("claim %s/%s not %s after a minute (last: %v)", namespace, name, phase, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// SeededVolumeLabel marks the PersistentVolumes Seed creates, by namespace.
const SeededVolumeLabel = "testcluster.jupyter-infra.dev/seeded-for"

// DeleteSeededVolumes deletes the PersistentVolumes Seed made for namespace.
func DeleteSeededVolumes(ctx context.Context, cs kubernetes.Interface, namespace string) {
	_ = cs.CoreV1().PersistentVolumes().DeleteCollection(ctx, metav1.DeleteOptions{},
		metav1.ListOptions{LabelSelector: SeededVolumeLabel + "=" + namespace})
}
