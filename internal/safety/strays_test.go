package safety

import (
	"fmt"
	"slices"
	"testing"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/claims"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/kubespawner"
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

func TestPlanTemplateChange(t *testing.T) {
	ab := []string{"alice", "Bob"}
	old := cfg(ab)
	live := Live{Claims: pvcs(t, ab)}
	newTmpl := "home-{username}"
	orphans := []string{
		"alice: has claim-alice, the template gives home-alice",
		fmt.Sprintf("Bob: has %s, the template gives %s", home(t, "Bob"), name(t, newTmpl, "Bob", kubespawner.SchemeSafe)),
		"remember_pvc_name", `previous template ("claim-{username}", safe)`, `new one ("home-{username}", safe)`, "namespace jhub",
	}
	escName := name(t, tmpl, "Bob", kubespawner.SchemeEscape)
	runPlanCases(t, []planCase{
		{
			name:       "template change orphans existing homes",
			cfg:        cfg(ab, template(newTmpl)),
			prior:      prior(t, old),
			live:       live,
			class:      ClassNone,
			actions:    map[string]Action{"alice": ActionCreate, "Bob": ActionCreate},
			claimNames: map[string]string{"alice": "home-alice"},
			colocation: true,
			errors: []want{{attr: "pvc_name_template", has: append(orphans, `"keep_existing"`),
				hasNot: []string{"deleted outside"}}},
		},
		{
			name:       "template change with keep_existing is a warning",
			cfg:        cfg(ab, template(newTmpl), onChange(OnModeChangeKeepExisting)),
			prior:      prior(t, old),
			live:       live,
			class:      ClassSafe,
			actions:    map[string]Action{"alice": ActionCreate, "Bob": ActionCreate},
			colocation: true,
			// The old claims still exist: no "deleted outside Terraform" warning.
			warnings: []want{{attr: "pvc_name_template", has: orphans}},
		},
		{
			name:       "slug scheme change orphans homes whose names differ",
			cfg:        cfg(ab, scheme(kubespawner.SchemeEscape)),
			prior:      prior(t, old),
			live:       live,
			class:      ClassNone,
			actions:    map[string]Action{"alice": ActionKeep, "Bob": ActionCreate},
			claimNames: map[string]string{"Bob": escName},
			colocation: true,
			errors: []want{{attr: "pvc_name_template", has: []string{
				fmt.Sprintf("Bob: has %s, the template gives %s (matches slug_scheme = \"safe\")", home(t, "Bob"), escName),
				"remember_pvc_name",
			}, hasNot: []string{"alice"}}},
		},
		{
			name:       "homes named otherwise on the first plan",
			cfg:        cfg(nil, template(newTmpl)),
			live:       live,
			class:      ClassNone,
			colocation: true,
			errors: []want{{attr: "pvc_name_template", has: []string{
				"do not have the names that pvc_name_template and slug_scheme give", "alice: has claim-alice", "remember_pvc_name",
			}}},
		},
	})
}

// Settings that move where homes are looked for leave the old homes behind:
// the plan fails naming them, as a changed pvc_name_template does, unless
// keep_existing acknowledges them.
func TestPlanHomesLeftBehind(t *testing.T) {
	userNS := userNamespaces("{hubnamespace}-{username}")
	inHub := func(u string) claims.Claim { return pvc(t, u, inNS(ns)) }
	before := cfg([]string{"alice"})
	runPlanCases(t, []planCase{
		{
			name:       "user namespaces turned on while homes are in the hub namespace",
			cfg:        cfg([]string{"alice"}, userNS),
			prior:      prior(t, before),
			live:       Live{Claims: []claims.Claim{inHub("alice"), inHub("bob")}},
			class:      ClassNone,
			actions:    map[string]Action{"alice": ActionCreate},
			colocation: true,
			errors:     []want{{attr: "user_namespace_template", has: []string{"Homes left where the configuration no longer looks", "alice: " + ns + "/" + home(t, "alice"), "bob: " + ns + "/" + home(t, "bob"), "keep_existing"}}},
		},
		{
			name:       "acknowledged with keep_existing",
			cfg:        cfg([]string{"alice"}, userNS, onChange(OnModeChangeKeepExisting)),
			prior:      prior(t, before),
			live:       Live{Claims: []claims.Claim{inHub("alice")}},
			class:      ClassSafe,
			actions:    map[string]Action{"alice": ActionCreate},
			colocation: true,
			warnings:   []want{{attr: "user_namespace_template", has: []string{"alice: " + ns + "/"}}},
		},
		{
			name:       "a new namespace: the homes in the old one are left behind",
			cfg:        func() Config { c := cfg([]string{"alice"}); c.Namespace = "jhub2"; return c }(),
			prior:      prior(t, before),
			live:       Live{Claims: []claims.Claim{inHub("alice")}},
			class:      ClassNone,
			actions:    map[string]Action{"alice": ActionCreate},
			colocation: true,
			errors:     []want{{attr: "namespace", has: []string{"alice: " + ns + "/" + home(t, "alice"), "namespace jhub2"}}},
		},
		{
			name:       "user namespaces turned off: homes in the users' namespaces are left behind",
			cfg:        cfg([]string{"alice"}),
			prior:      prior(t, cfg([]string{"alice"}, userNS)),
			live:       Live{Claims: []claims.Claim{pvc(t, "alice", inNS(ns+"-alice"))}},
			class:      ClassNone,
			actions:    map[string]Action{"alice": ActionCreate},
			colocation: true,
			errors:     []want{{attr: "user_namespace_template", has: []string{"alice: " + ns + "-alice/"}}},
		},
		{
			name:       "another deployment's claims elsewhere are not this one's",
			cfg:        cfg([]string{"alice"}),
			prior:      prior(t, before),
			live:       Live{Claims: []claims.Claim{inHub("alice"), pvc(t, "bob", inNS("other-hub"))}},
			class:      ClassNone,
			actions:    map[string]Action{"alice": ActionKeep},
			colocation: true,
		},
	})
}
