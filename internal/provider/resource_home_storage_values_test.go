package provider

import (
	"encoding/json"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/claims"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/safety"
)

// The `claims` value: the most common claim as "default", every user's
// claim as its name and the fields that differ from it.
func TestClaimsValue(t *testing.T) {
	cfg := safety.Config{AccessMode: claims.RWX, StorageClass: "nfs", Capacity: "10240Mi"}
	live := func(name, mode, phase string) *claims.Claim {
		return &claims.Claim{Name: name, AccessModes: []string{mode}, StorageClass: "nfs", Requested: "10Gi", Phase: phase}
	}
	tests := []struct {
		name  string
		ups   []safety.UserPlan
		final bool
		want  string
	}{
		{name: "no claims", want: `{"default":null,"users":{}}`},
		{
			name: "most common claim is the default",
			ups: []safety.UserPlan{
				{User: "ann", ClaimName: "claim-ann", Action: safety.ActionObserve, Live: live("claim-ann", claims.RWO, "Bound")},
				{User: "bob", ClaimName: "claim-bob", Action: safety.ActionObserve, Live: live("claim-bob", claims.RWO, "Bound")},
				{User: "cat", ClaimName: "claim-cat", Managed: true, Action: safety.ActionKeep, Live: live("claim-cat", claims.RWX, "Pending")},
				{User: "dan", ClaimName: "claim-dan", Managed: true, Action: safety.ActionCreate},
				{User: "eve", ClaimName: "claim-eve", Action: safety.ActionRelease}, // no claim: not listed
			},
			want: `{"default":{"access_mode":"ReadWriteOnce","storage_class_name":"nfs","capacity":"10Gi","phase":"Bound","managed":false},"users":{` +
				`"ann":{"name":"claim-ann"},"bob":{"name":"claim-bob"},` +
				`"cat":{"access_mode":"ReadWriteMany","managed":true,"name":"claim-cat","phase":"Pending"},` +
				`"dan":{"access_mode":"ReadWriteMany","managed":true,"name":"claim-dan","phase":""}}}`,
		},
		{
			name:  "after apply only claims that exist; ties go to the first by fields",
			final: true,
			ups: []safety.UserPlan{
				{User: "ann", ClaimName: "claim-ann", Action: safety.ActionObserve, Live: live("claim-ann", claims.RWX, "Bound")},
				{User: "bob", ClaimName: "claim-bob", Action: safety.ActionObserve, Live: live("claim-bob", claims.RWO, "Bound")},
				{User: "dan", ClaimName: "claim-dan", Managed: true, Action: safety.ActionCreate},
			},
			want: `{"default":{"access_mode":"ReadWriteMany","storage_class_name":"nfs","capacity":"10Gi","phase":"Bound","managed":false},"users":{` +
				`"ann":{"name":"claim-ann"},"bob":{"access_mode":"ReadWriteOnce","name":"claim-bob"}}}`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for i := 0; i < 5; i++ { // map order must not show
				if got := claimsValueAt(&safety.Result{Users: tc.ups}, cfg, tc.final).ValueString(); got != tc.want {
					t.Fatalf("got  %s\nwant %s", got, tc.want)
				}
			}
			if m, err := decodeClaims(claimsValueAt(&safety.Result{Users: tc.ups}, cfg, tc.final).ValueString()); err != nil || len(tc.ups) > 1 && m["ann"]["name"] != "claim-ann" {
				t.Fatalf("decodeClaims: %v %v", m, err)
			}
		})
	}
}

// claimsValue writes its JSON itself; it must write what encoding/json
// writes for the same document (a map of users, the fields that differ
// from the default), or every state would show a change to claims. Random
// plans, with names that need escaping, repeated users and every field
// differing, against that reference.
func TestClaimsValueIsEncodingJSON(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	names := []string{"ann", "bob", "a<b", "c&d", "e>f", `q"uote`, `back\slash`, "tab\t", "é", "\u2028line", "\x7f", "ß", "Ω", "", "z"}
	pick := func(xs ...string) string { return xs[rng.IntN(len(xs))] }
	cfg := safety.Config{AccessMode: claims.RWX, StorageClass: "nfs", Capacity: "10Gi"}
	for i := 0; i < 2000; i++ {
		var ups []safety.UserPlan
		for j := rng.IntN(12); j > 0; j-- {
			up := safety.UserPlan{User: pick(names...), ClaimName: "claim-" + pick(names...), Managed: rng.IntN(2) == 0,
				Action: []safety.Action{safety.ActionObserve, safety.ActionCreate, safety.ActionKeep, safety.ActionResize, safety.ActionRelease}[rng.IntN(5)]}
			if rng.IntN(4) > 0 {
				up.Live = &claims.Claim{Name: up.ClaimName, AccessModes: []string{pick(claims.RWO, claims.RWX, "a<b")},
					StorageClass: pick("nfs", "", "x&y"), Requested: pick("10Gi", "1Gi"), Phase: pick("Bound", "Pending", "")}
			}
			ups = append(ups, up)
		}
		slices.SortStableFunc(ups, func(a, b safety.UserPlan) int { return strings.Compare(a.User, b.User) })
		if rng.IntN(3) == 0 {
			rng.Shuffle(len(ups), func(a, b int) { ups[a], ups[b] = ups[b], ups[a] })
		}
		final := rng.IntN(2) == 0
		if got, want := claimsValueAt(&safety.Result{Users: ups}, cfg, final).ValueString(), claimsValueReference(ups, cfg, final); got != want {
			t.Fatalf("plan %d:\ngot  %s\nwant %s", i, got, want)
		}
	}
}

// claimsValueAt is claimsValue, or finalClaimsValue when final (after
// apply).
func claimsValueAt(res *safety.Result, cfg safety.Config, final bool) types.String {
	if final {
		return finalClaimsValue(res, cfg)
	}
	return claimsValue(res, cfg)
}

// claimsValueReference is claimsValue through encoding/json: maps of the
// users and of the fields that differ, marshalled.
func claimsValueReference(ups []safety.UserPlan, cfg safety.Config, final bool) string {
	type doc struct {
		Default *claimView                `json:"default"`
		Users   map[string]map[string]any `json:"users"`
	}
	entries := map[string]claimEntry{}
	counts := map[claimView]int{}
	for _, up := range ups {
		if up.Live == nil && (final || up.Action != safety.ActionCreate) {
			continue
		}
		e := claimEntryOf(up, cfg, canonicalQuantity(cfg.Capacity))
		entries[up.User] = e
		counts[e.view]++
	}
	d := doc{Users: map[string]map[string]any{}}
	if len(entries) > 0 {
		def := mostCommon(counts, claimViewLess)
		d.Default = &def
	}
	for u, e := range entries {
		m := map[string]any{"name": e.name}
		v, def := e.view, *d.Default
		if v.AccessMode != def.AccessMode {
			m["access_mode"] = v.AccessMode
		}
		if v.StorageClassName != def.StorageClassName {
			m["storage_class_name"] = v.StorageClassName
		}
		if v.Capacity != def.Capacity {
			m["capacity"] = v.Capacity
		}
		if v.Phase != def.Phase {
			m["phase"] = v.Phase
		}
		if v.Managed != def.Managed {
			m["managed"] = v.Managed
		}
		d.Users[u] = m
	}
	b, _ := json.Marshal(d)
	return string(b)
}
