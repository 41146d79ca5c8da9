package safety

import (
	"slices"
	"testing"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/claims"
)

// ownClaims without user namespaces: the claims of the deployment's
// namespace (or of none), in their order; all of them are returned as they
// are, without a copy.
func TestOwnClaimsOfTheNamespace(t *testing.T) {
	cfg := Config{Namespace: "jhub"}
	mixed := []claims.Claim{{Name: "a", Namespace: "jhub"}, {Name: "b", Namespace: "other"}, {Name: "c"}, {Name: "d", Namespace: "other"}, {Name: "e", Namespace: "jhub"}}
	var names []string
	for _, c := range ownClaims(cfg, mixed) {
		names = append(names, c.Name)
	}
	if want := []string{"a", "c", "e"}; !slices.Equal(names, want) {
		t.Fatalf("ownClaims = %v, want %v", names, want)
	}
	if got := ownClaims(cfg, mixed[1:2]); len(got) != 0 {
		t.Fatalf("ownClaims of another namespace's claim = %v, want none", got)
	}
	all := []claims.Claim{{Name: "a", Namespace: "jhub"}, {Name: "c"}}
	if got := ownClaims(cfg, all); len(got) != 2 || &got[0] != &all[0] {
		t.Fatalf("ownClaims of own claims = %v, want the same slice", got)
	}
}
