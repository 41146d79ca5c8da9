package kube

import (
	"bytes"
	"mime"

	"google.golang.org/protobuf/encoding/protowire"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// protobufMagic opens every protobuf body of the Kubernetes API: the bytes
// "k8s\x00", then a runtime.Unknown whose field 2 holds the object and
// whose field 3 names its encoding (none).
var protobufMagic = []byte{0x6b, 0x38, 0x73, 0x00}

// peekListMeta reads the list metadata of a protobuf List answer without
// decoding its items: the object is a List whose field 1 is its ListMeta
// (field 2 resourceVersion, 3 continue, 4 remainingItemCount). ok is false
// for any other content type and for a body it does not read as that shape
// (a field of interest twice, an encoding named); the caller then decodes
// the whole answer. eachPage checks the token it read against the one
// decoding finds.
func peekListMeta(contentType string, body []byte) (metav1.ListMeta, bool) {
	if mt, _, err := mime.ParseMediaType(contentType); err != nil || mt != ContentTypeProtobuf {
		return metav1.ListMeta{}, false
	}
	rest, ok := bytes.CutPrefix(body, protobufMagic)
	if !ok {
		return metav1.ListMeta{}, false
	}
	unknown, ok := scanFields(rest, 0)
	if !ok || len(unknown.bytes[3]) > 0 {
		return metav1.ListMeta{}, false
	}
	list, ok := scanFields(unknown.bytes[2], 2) // field 2: the items
	if !ok {
		return metav1.ListMeta{}, false
	}
	m, ok := scanFields(list.bytes[1], 0)
	if !ok {
		return metav1.ListMeta{}, false
	}
	meta := metav1.ListMeta{ResourceVersion: string(m.bytes[2]), Continue: string(m.bytes[3])}
	if v := m.varints[4]; v != nil {
		n := int64(*v)
		meta.RemainingItemCount = &n
	}
	return meta, true
}

// fieldsOf are the fields 1 to 4 of one protobuf message: length-delimited
// ones and varints, by number.
type fieldsOf struct {
	bytes   [5][]byte
	varints [5]*uint64
}

// scanFields reads the top level of one protobuf message, skipping the
// values of field skip (a List's items) and of fields above 4. ok is false
// for a malformed message and for another field of 1 to 4 seen twice: the
// decoder would merge or override it, and peekListMeta does not guess how.
func scanFields(b []byte, skip protowire.Number) (f fieldsOf, ok bool) {
	var seen [5]bool
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return f, false
		}
		b = b[n:]
		n = protowire.ConsumeFieldValue(num, typ, b)
		if n < 0 {
			return f, false
		}
		value := b[:n]
		b = b[n:]
		if num < 1 || num > 4 || num == skip {
			continue
		}
		if seen[num] {
			return f, false
		}
		seen[num] = true
		switch typ {
		case protowire.BytesType:
			f.bytes[num], _ = protowire.ConsumeBytes(value)
		case protowire.VarintType:
			v, _ := protowire.ConsumeVarint(value)
			f.varints[num] = &v
		default:
			return f, false
		}
	}
	return f, true
}
