package kube

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/acctest"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/claims"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/migration"
)

// RecordPlaces on the API server, as the provider's least-privilege
// identity: places are added to both lists and never taken off (places
// another apply added stay, none is written twice), and nothing is
// written to a claim that is not the object the plan read (another UID)
// or that is gone.
func TestAccRecordPlaces(t *testing.T) {
	c, ns, ctx := acctest.Cluster(t), acctest.Namespace(t), context.Background()
	admin := c.Admin()
	acctest.Grant(t, ns) // the documented Role: patch on claims
	api, err := NewAPI(c.RESTConfig(c.LimitedToken))
	if err != nil {
		t.Fatal(err)
	}
	limited := NewClient(api)
	shared := sharedClaim(t, admin, ns, "home-nfs", corev1.PersistentVolumeSource{NFS: &corev1.NFSVolumeSource{Server: "nfs.example.org", Path: "/homes"}}, nil)
	ref := claims.Ref{Namespace: ns, Name: shared.Name}
	get := func() map[string]string {
		pvc, err := admin.CoreV1().PersistentVolumeClaims(ns).Get(ctx, shared.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return pvc.Annotations
	}
	if err := limited.RecordPlaces(ctx, ref, string(shared.UID), []string{"{escaped_username}"}, nil); err != nil {
		t.Fatal(err)
	}
	// Another apply adds a place meanwhile; this one adds its own and
	// repeats one: both kept, once each.
	pvc, err := admin.CoreV1().PersistentVolumeClaims(ns).Get(ctx, shared.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pvc.Annotations[migration.MovedFromAnnotation] = `["{escaped_username}","old_/{safe_username}"]`
	if _, err := admin.CoreV1().PersistentVolumeClaims(ns).Update(ctx, pvc, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := limited.RecordPlaces(ctx, ref, string(shared.UID), []string{"{escaped_username}", "v2_/{safe_username}"}, []string{"v1_/{safe_username}"}); err != nil {
		t.Fatal(err)
	}
	a := get()
	if got, want := a[migration.MovedFromAnnotation], `["{escaped_username}","old_/{safe_username}","v2_/{safe_username}"]`; got != want {
		t.Errorf("moved from %s, want %s", got, want)
	}
	if got, want := a[migration.LeftAtAnnotation], `["v1_/{safe_username}"]`; got != want {
		t.Errorf("left at %s, want %s", got, want)
	}
	// Another UID (the claim made again): nothing written.
	if err := limited.RecordPlaces(ctx, ref, "another-uid", []string{"x_/{safe_username}"}, nil); err == nil || !strings.Contains(err.Error(), "made again") {
		t.Errorf("another UID: %v", err)
	}
	if got := get()[migration.MovedFromAnnotation]; strings.Contains(got, "x_/") {
		t.Errorf("written to a claim of another UID: %s", got)
	}
	if err := limited.RecordPlaces(ctx, claims.Ref{Namespace: ns, Name: "gone"}, "u", []string{"x_/{safe_username}"}, nil); err == nil || !strings.Contains(err.Error(), "gone") {
		t.Errorf("gone: %v", err)
	}
}
