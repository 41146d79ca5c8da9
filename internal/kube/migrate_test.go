package kube

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/claims"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/hubconfig"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/migration"
)

// A rebound claim asks for what the old one did, but never for more than
// its volume holds: while an expansion is pending the old claim asked for
// more, and a claim asking that of a smaller volume would stay Pending.
func TestReboundClaimSize(t *testing.T) {
	pv := volumeView(&corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-a"},
		Spec: corev1.PersistentVolumeSpec{Capacity: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("10Gi")}}})
	for _, tc := range []struct{ requested, want string }{
		{"10Gi", "10Gi"},
		{"8Gi", "8Gi"},   // a volume larger than asked for binds a smaller request
		{"20Gi", "10Gi"}, // an expansion to 20Gi pending
		{"", "10Gi"},
	} {
		rec := migration.Record{Claim: "claim-a", Namespace: "jhub", To: claims.RWX, Requested: tc.requested}
		pvc, err := reboundClaim(rec, pv)
		if err != nil {
			t.Fatal(err)
		}
		if got := pvc.Spec.Resources.Requests[corev1.ResourceStorage]; got.String() != tc.want {
			t.Errorf("requested %q: the rebound claim asks for %s, want %s", tc.requested, got.String(), tc.want)
		}
	}
}

// The hub refuses a spawn on a claim a rebind created until it is bound:
// it knows such a claim by this annotation, whose name its Python writes.
func TestMigratedAnnotationIsTheHubs(t *testing.T) {
	if want := `rebound = "` + migration.MigratedAnnotation + `"  # MigratedAnnotation`; !strings.Contains(hubconfig.Python(), want) {
		t.Errorf("the hub's Python lacks %s", want)
	}
}
