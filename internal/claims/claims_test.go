package claims

import (
	"reflect"
	"testing"
)

// Two claims of one user: the first by name keeps the user's key, the
// other is keyed with its name and noted, in whatever order they come.
func TestByKeySharedKey(t *testing.T) {
	a := Claim{Name: "claim-alice", Username: "alice"}
	old := Claim{Name: "claim-alice-old", Username: "alice"}
	gpu := Claim{Name: "claim-alice--gpu", Username: "alice", Servername: "gpu"}
	bare := Claim{Name: "scratch"}
	for _, in := range [][]Claim{{a, old, gpu, bare}, {old, bare, gpu, a}} {
		got, notes := ByKey(in)
		want := map[string]Claim{"alice": a, "alice (claim-alice-old)": old, "alice/gpu": gpu, "scratch": bare}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("ByKey(%v):\n got %v\nwant %v", in, got, want)
		}
		if wantNotes := []string{`claims claim-alice and claim-alice-old both belong to "alice"; the second is listed as "alice (claim-alice-old)"`}; !reflect.DeepEqual(notes, wantNotes) {
			t.Errorf("notes %q, want %q", notes, wantNotes)
		}
	}
}
