package kube

import (
	"context"
	"maps"
	"net/http"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/acctest"
)

// requestLog records the method of every request a client sends.
type requestLog struct {
	collected
	next http.RoundTripper
}

func (l *requestLog) RoundTrip(r *http.Request) (*http.Response, error) {
	l.add(r.Method)
	return l.next.RoundTrip(r)
}

// ApplyConfigMap against the API server: it creates the ConfigMap, sends
// nothing but a read when it already holds the content, and otherwise
// replaces the data and sets its labels and annotations, keeping those
// others put there; a ConfigMap that exists is never sent in a Create the
// API server would refuse (the hub's document is large at many users).
func TestAccApplyConfigMap(t *testing.T) {
	ns, ctx := acctest.Namespace(t), context.Background()
	rc := acctest.Cluster(t).RESTConfig(acctest.Cluster(t).AdminToken)
	log := &requestLog{}
	rc.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { log.next = rt; return log }
	api, err := NewAPI(rc)
	if err != nil {
		t.Fatal(err)
	}
	c := NewClient(api)
	want := func(data string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "spawner", Namespace: ns,
			Labels: map[string]string{"app.kubernetes.io/managed-by": "terraform-provider-jupyter"}, Annotations: map[string]string{"a": "1"}},
			Data: map[string]string{"config.py": data}, BinaryData: map[string][]byte{"doc.json.gz": []byte(data + "\x00\xff")}}
	}
	// apply applies the ConfigMap holding data and checks the requests it sent.
	apply := func(step, data string, requests ...string) {
		t.Helper()
		log.take()
		if err := c.ApplyConfigMap(ctx, want(data)); err != nil {
			t.Fatal(err)
		}
		if got := log.take(); !slices.Equal(got, requests) {
			t.Errorf("%s: requests %v, want %v", step, got, requests)
		}
	}
	get := func() *corev1.ConfigMap {
		t.Helper()
		cm, err := c.Kube.CoreV1().ConfigMaps(ns).Get(ctx, "spawner", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return cm
	}
	apply("create", "one", "GET", "POST")
	first := get()
	if first.Data["config.py"] != "one" || string(first.BinaryData["doc.json.gz"]) != "one\x00\xff" {
		t.Fatalf("created %v %q", first.Data, first.BinaryData)
	}
	apply("the same content again", "one", "GET")
	// Someone else's label and annotation; then a label of ours changed
	// outside Terraform, with the data as it was: it is set back.
	first.Labels["team"], first.Annotations["note"] = "data", "x"
	first.Labels["app.kubernetes.io/managed-by"] = "someone"
	if _, err := c.Kube.CoreV1().ConfigMaps(ns).Update(ctx, first, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	apply("a label of ours changed outside", "one", "GET", "PUT")
	if got := get(); got.Labels["app.kubernetes.io/managed-by"] != "terraform-provider-jupyter" || got.Labels["team"] != "data" {
		t.Errorf("labels after apply: %v", got.Labels)
	}
	apply("new content", "two", "GET", "PUT")
	got := get()
	if got.Data["config.py"] != "two" || string(got.BinaryData["doc.json.gz"]) != "two\x00\xff" {
		t.Errorf("updated %v %q", got.Data, got.BinaryData)
	}
	if wantAnn := map[string]string{"a": "1", "note": "x"}; !maps.Equal(got.Annotations, wantAnn) {
		t.Errorf("annotations %v, want %v", got.Annotations, wantAnn)
	}
}
