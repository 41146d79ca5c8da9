package hubconfig

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// Files are what the hub reads from the provider, rendered once per
// request: the Python file, the document compressed (DocumentFile), and
// their Checksum. The ConfigMap and HelmValues carry the same bytes.
type Files struct {
	Python string
	// PythonGzip is Python compressed with gzip (deterministic, as
	// Document), as hub.extraFiles carries it.
	PythonGzip []byte
	// Document is the gzip of the document's JSON (Result.Document),
	// deterministic: the gzip header holds no time and no name, so the
	// same document always gives the same bytes.
	Document []byte
	// DocumentJSONBytes is the size of the JSON before compression.
	DocumentJSONBytes int
	Checksum          string
}

// Render encodes r's document once: its JSON, the checksum over the file
// and that JSON, and the JSON compressed with gzip (default level).
func Render(r Result) Files {
	doc := []byte(JSON(r.Document()))
	return Files{Python: Python(), PythonGzip: pythonGzip, Document: gzipBytes(doc), DocumentJSONBytes: len(doc), Checksum: checksum(Python(), doc)}
}

// checksum is the SHA-256 of everything the hub reads from the provider:
// the rendered file and its document (settings, profiles, co-location,
// legacy users, home_claims). It is taken over the document's JSON before
// compression, so it changes exactly when the content does, whatever the
// compressor's output.
func checksum(python string, doc []byte) string {
	h := sha256.New()
	h.Write([]byte(python))
	h.Write([]byte{0})
	h.Write(doc)
	return hex.EncodeToString(h.Sum(nil))
}

// pythonGzip is the file compressed, once.
var pythonGzip = gzipBytes([]byte(Python()))

func gzipBytes(b []byte) []byte {
	var buf bytes.Buffer
	// The zero Header: no name, no comment, modification time 0 (gzip's
	// "no time stamp"); the OS byte is always 255 (unknown).
	w, err := gzip.NewWriterLevel(&buf, gzip.DefaultCompression)
	if err != nil {
		panic(err) // only for an invalid level
	}
	if _, err := w.Write(b); err != nil {
		panic(err) // a bytes.Buffer does not fail
	}
	if err := w.Close(); err != nil {
		panic(err)
	}
	return buf.Bytes()
}

// maxDocumentBytes bounds what DecodeDocumentFile inflates: far above any
// document the provider renders (it names no user; BENCHMARKS.md, "The
// hub's configuration at N users", has its size), far below what a gzip
// of 1 MiB can expand to.
const maxDocumentBytes = 256 << 20

// DecodeDocumentFile decodes DocumentFile's content (gzip of the JSON
// document) into v, as the hub's file reads it.
func DecodeDocumentFile(gz []byte, v any) error {
	b, err := inflate(gz)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: %w", DocumentFile, err)
	}
	return nil
}

// inflate is DocumentFile's JSON, decompressed.
func inflate(gz []byte) ([]byte, error) {
	r, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", DocumentFile, err)
	}
	b, err := io.ReadAll(io.LimitReader(r, maxDocumentBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", DocumentFile, err)
	}
	if len(b) > maxDocumentBytes {
		return nil, fmt.Errorf("%s: more than %d bytes when decompressed", DocumentFile, maxDocumentBytes)
	}
	return b, nil
}

// ConfigMapChecksum is the checksum of what a ConfigMap's data and
// binaryData give the hub to read, taken as Render takes it: the file and
// the document's JSON (DocumentFile decompressed). It equals the rendered Checksum exactly when the
// ConfigMap holds the rendered file and document, so that a ConfigMap
// edited outside the provider shows in a plan as a change of hub_checksum,
// one line, instead of the file's text. A document that cannot be
// decompressed counts as its bytes after a NUL, which no JSON starts with.
func ConfigMapChecksum(data map[string]string, binaryData map[string][]byte) string {
	var doc []byte
	if gz, ok := binaryData[DocumentFile]; ok {
		var err error
		if doc, err = inflate(gz); err != nil {
			doc = append([]byte{0}, gz...)
		}
	}
	return checksum(data[PythonFile], doc)
}

// ErrNoDocument says a ConfigMap holds no DocumentFile.
var ErrNoDocument = errors.New("no " + DocumentFile)

// DecodeConfigMapDocument decodes the document from a ConfigMap's
// binaryData (DocumentFile), as the hub's file reads it.
func DecodeConfigMapDocument(binaryData map[string][]byte, v any) error {
	if gz, ok := binaryData[DocumentFile]; ok {
		return DecodeDocumentFile(gz, v)
	}
	return ErrNoDocument
}
