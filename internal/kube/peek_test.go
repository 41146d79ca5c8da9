package kube

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
)

// encodeList is a List as the API server writes it in protobuf.
func encodeList(t testing.TB, l *corev1.PersistentVolumeClaimList) []byte {
	t.Helper()
	l.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("PersistentVolumeClaimList"))
	var buf bytes.Buffer
	if err := protobuf.NewSerializer(scheme, scheme).Encode(l, &buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// peekListMeta reads what decoding the whole answer finds, for Lists with
// and without a continue token and a remaining count, with items or none.
func TestPeekListMetaIsTheDecodedOne(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 300; i++ {
		l := &corev1.PersistentVolumeClaimList{ListMeta: metav1.ListMeta{ResourceVersion: fmt.Sprint(rng.Uint64())}}
		if rng.IntN(2) == 0 {
			l.Continue = fmt.Sprintf("token-%d", rng.Uint64())
		}
		if rng.IntN(2) == 0 {
			l.RemainingItemCount = ptr(rng.Int64N(1 << 40))
		}
		for j := rng.IntN(20); j > 0; j-- {
			l.Items = append(l.Items, boundClaim(rng.IntN(100000)))
		}
		body := encodeList(t, l)
		got, ok := peekListMeta("application/vnd.kubernetes.protobuf", body)
		var decoded corev1.PersistentVolumeClaimList
		if err := runtimeDecode(body, &decoded); err != nil {
			t.Fatal(err)
		}
		if !ok || !reflect.DeepEqual(got, decoded.ListMeta) {
			t.Fatalf("list %d: peeked %+v (%v), decoded %+v", i, got, ok, decoded.ListMeta)
		}
	}
}

// What peekListMeta does not read as a protobuf List it leaves to the
// decoder: another content type, a body without the magic, one cut short,
// an encoding named, a field of the metadata twice.
func TestPeekListMetaDeclines(t *testing.T) {
	l := &corev1.PersistentVolumeClaimList{ListMeta: metav1.ListMeta{ResourceVersion: "7", Continue: "next"}, Items: []corev1.PersistentVolumeClaim{boundClaim(1)}}
	body := encodeList(t, l)
	if m, ok := peekListMeta("application/vnd.kubernetes.protobuf; charset=binary", body); !ok || m.Continue != "next" {
		t.Fatalf("a parameter of the content type: %+v %v", m, ok)
	}
	list := listBytes(t, body)
	other, err := (&metav1.ListMeta{Continue: "other"}).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	twice := protowire.AppendBytes(protowire.AppendTag(bytes.Clone(list), 1, protowire.BytesType), other)
	for name, tc := range map[string]struct {
		contentType string
		body        []byte
	}{
		"JSON":             {"application/json", body},
		"no magic":         {"application/vnd.kubernetes.protobuf", body[4:]},
		"cut short":        {"application/vnd.kubernetes.protobuf", body[:len(body)-3]},
		"rewrapped":        {"application/vnd.kubernetes.protobuf", wrapUnknown(list, "")}, // the control: read
		"encoding named":   {"application/vnd.kubernetes.protobuf", wrapUnknown(list, "gzip")},
		"metadata twice":   {"application/vnd.kubernetes.protobuf", wrapUnknown(twice, "")},
		"bad content type": {"application/vnd.kubernetes.protobuf; =", body},
	} {
		m, ok := peekListMeta(tc.contentType, tc.body)
		if want := name == "rewrapped"; ok != want || ok && m.Continue != "next" {
			t.Errorf("%s: read %+v (%v)", name, m, ok)
		}
	}
}

// peekListMeta never panics, whatever the bytes.
func FuzzPeekListMeta(f *testing.F) {
	f.Add(encodeList(f, &corev1.PersistentVolumeClaimList{ListMeta: metav1.ListMeta{Continue: "c"}, Items: []corev1.PersistentVolumeClaim{boundClaim(2)}}))
	f.Fuzz(func(t *testing.T, body []byte) {
		peekListMeta("application/vnd.kubernetes.protobuf", body)
	})
}

// runtimeDecode decodes an answer as client-go does.
func runtimeDecode(body []byte, into *corev1.PersistentVolumeClaimList) error {
	_, _, err := codecs.UniversalDeserializer().Decode(body, nil, into)
	return err
}

// listBytes is the List inside a protobuf answer.
func listBytes(t *testing.T, body []byte) []byte {
	t.Helper()
	f, ok := scanFields(body[len(protobufMagic):], 0)
	if !ok || f.bytes[2] == nil {
		t.Fatal("not a protobuf answer")
	}
	return f.bytes[2]
}

// wrapUnknown is a protobuf answer holding raw, its encoding named.
func wrapUnknown(raw []byte, encoding string) []byte {
	b := protowire.AppendBytes(protowire.AppendTag(bytes.Clone(protobufMagic), 2, protowire.BytesType), raw)
	return protowire.AppendString(protowire.AppendTag(b, 3, protowire.BytesType), encoding)
}
