package kube

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/client-go/rest"
)

// answerAll is an API server that answers every request with 200 and one
// body.
func answerAll(t *testing.T, contentType string, body []byte) *Client {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", contentType)
		_, _ = w.Write(body)
	}))
	t.Cleanup(srv.Close)
	api, err := NewAPI(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	c := NewClient(api)
	c.Backoff = Backoff{Initial: time.Millisecond, Max: time.Millisecond, Attempts: 1}
	return c
}

// encoded is obj as the API server writes it, in protobuf or JSON.
func encoded(t *testing.T, obj runtime.Object, gvk schema.GroupVersionKind, pb bool) (string, []byte) {
	t.Helper()
	obj.GetObjectKind().SetGroupVersionKind(gvk)
	if !pb {
		b, err := json.Marshal(obj)
		if err != nil {
			t.Fatal(err)
		}
		return "application/json", b
	}
	var buf bytes.Buffer
	if err := protobuf.NewSerializer(scheme, scheme).Encode(obj, &buf); err != nil {
		t.Fatal(err)
	}
	return ContentTypeProtobuf, buf.Bytes()
}

// An answer of another kind than asked for (a Status of success, another
// kind of List) is an error, never an empty list: client-go's Into takes
// it as the object given, left empty, and every claim would be absent, or
// no server running, to the plan and the gate.
func TestAnAnswerOfAnotherKindIsAnError(t *testing.T) {
	ctx := context.Background()
	reads := map[string]func(*Client) (int, error){
		"claims": func(c *Client) (int, error) {
			l, err := c.ListClaimsFresh(ctx, "hub", "")
			return len(l), err
		},
		"pods": func(c *Client) (int, error) {
			m, err := c.MountedClaims(ctx, "hub")
			return len(m), err
		},
		"volumes": func(c *Client) (int, error) {
			l, err := c.ListVolumes(ctx, "")
			return len(l), err
		},
		"nodes": func(c *Client) (int, error) {
			l, err := c.ListNodes(ctx)
			return len(l), err
		},
		"one claim": func(c *Client) (int, error) {
			cl, err := c.GetClaim(ctx, "hub", "claim-alice")
			if cl == nil {
				return 0, err
			}
			return 1, err
		},
	}
	answers := map[string]struct {
		obj runtime.Object
		gvk schema.GroupVersionKind
	}{
		"a Status of success": {&metav1.Status{Status: metav1.StatusSuccess}, schema.GroupVersionKind{Version: "v1", Kind: "Status"}},
		"a ConfigMapList":     {&corev1.ConfigMapList{ListMeta: metav1.ListMeta{ResourceVersion: "1"}}, corev1.SchemeGroupVersion.WithKind("ConfigMapList")},
	}
	for read, do := range reads {
		for name, a := range answers {
			for _, pb := range []bool{true, false} {
				ct, body := encoded(t, a.obj.DeepCopyObject(), a.gvk, pb)
				n, err := do(answerAll(t, ct, body))
				if err == nil {
					t.Errorf("%s, answered with %s (%s): %d items and no error", read, name, ct, n)
				}
			}
		}
	}
}

// The control: an answer of the kind asked for decodes, in either content
// type.
func TestAnAnswerOfTheKindAskedForDecodes(t *testing.T) {
	for _, pb := range []bool{true, false} {
		l := &corev1.PersistentVolumeClaimList{ListMeta: metav1.ListMeta{ResourceVersion: "7"}, Items: []corev1.PersistentVolumeClaim{boundClaim(0), boundClaim(1)}}
		ct, body := encoded(t, l, corev1.SchemeGroupVersion.WithKind("PersistentVolumeClaimList"), pb)
		got, err := answerAll(t, ct, body).ListClaimsFresh(context.Background(), "hub", "")
		if err != nil || len(got) != 2 {
			t.Errorf("%s: %d claims, %v", ct, len(got), err)
		}
	}
}
