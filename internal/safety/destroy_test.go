package safety

import (
	"reflect"
	"testing"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/claims"
)

type destroyCase struct {
	name     string
	cfg      Config
	prior    Prior
	live     Live
	class    Class
	actions  map[string]Action
	errors   []want
	warnings []want
}

func TestDestroy(t *testing.T) {
	ab := []string{"alice", "bob"}
	pr := *prior(t, cfg(ab))
	live := Live{Claims: pvcs(t, ab)}
	for _, tc := range []destroyCase{
		{
			name:     "retain keeps every claim",
			cfg:      cfg(ab, policy(DeletionRetain)),
			prior:    pr,
			live:     live,
			class:    ClassNone,
			actions:  map[string]Action{"alice": ActionRelease, "bob": ActionRelease},
			warnings: []want{{attr: "deletion_policy", has: []string{`deletion_policy = "retain"`, "2 managed home claim(s)", "namespace jhub", "left in place"}}},
		},
		{
			name:     "retain is the default",
			cfg:      cfg(ab),
			prior:    pr,
			live:     live,
			class:    ClassNone,
			actions:  map[string]Action{"alice": ActionRelease, "bob": ActionRelease},
			warnings: []want{{attr: "deletion_policy", has: []string{`deletion_policy = "retain"`, "left in place"}}},
		},
		{
			name:     "retain with allow_data_loss still keeps every claim",
			cfg:      cfg(ab, policy(DeletionRetain), dataLoss()),
			prior:    pr,
			live:     live,
			class:    ClassNone,
			actions:  map[string]Action{"alice": ActionRelease, "bob": ActionRelease},
			warnings: []want{{attr: "deletion_policy", has: []string{"left in place"}}},
		},
		{
			name:     "delete without allow_data_loss keeps every claim",
			cfg:      cfg(ab, policy(DeletionDelete)),
			prior:    pr,
			live:     live,
			class:    ClassNone,
			actions:  map[string]Action{"alice": ActionRelease, "bob": ActionRelease},
			warnings: []want{{attr: "deletion_policy", has: []string{"left in place"}}},
		},
		{
			name:     "delete with allow_data_loss is destructive",
			cfg:      cfg(ab, policy(DeletionDelete), dataLoss()),
			prior:    pr,
			live:     live,
			class:    ClassDestructive,
			actions:  map[string]Action{"alice": ActionRecreate, "bob": ActionRecreate},
			warnings: []want{{attr: "deletion_policy", has: []string{"deletes 2 home claim(s)", "alice: claim-alice", "bob: claim-bob"}}},
		},
		{
			name:    "delete under a running server is refused",
			cfg:     cfg(ab, policy(DeletionDelete), dataLoss()),
			prior:   pr,
			live:    Live{Claims: live.Claims, Mounted: map[claims.Ref]bool{at("claim-alice"): true}},
			class:   ClassNone,
			actions: map[string]Action{"alice": ActionRecreate, "bob": ActionRecreate},
			errors:  []want{{attr: "deletion_policy", has: []string{"alice: claim-alice", "Stop these users' servers"}, hasNot: []string{"bob"}}},
		},
		{
			name:     "retain under a running server is fine",
			cfg:      cfg(ab),
			prior:    pr,
			live:     Live{Claims: live.Claims, Mounted: map[claims.Ref]bool{at("claim-alice"): true}},
			class:    ClassNone,
			actions:  map[string]Action{"alice": ActionRelease, "bob": ActionRelease},
			warnings: []want{{attr: "deletion_policy"}},
		},
		{
			name:    "only managed claims are deleted",
			cfg:     cfg(ab, policy(DeletionDelete), dataLoss()),
			prior:   Prior{Config: cfg([]string{"alice"}), Managed: map[string]string{"alice": "claim-alice"}},
			live:    live,
			class:   ClassDestructive,
			actions: map[string]Action{"alice": ActionRecreate},
			warnings: []want{{attr: "deletion_policy", has: []string{"deletes 1 home claim(s)", "alice: claim-alice"},
				hasNot: []string{"bob"}}},
		},
		{
			name:    "managed claims already gone",
			cfg:     cfg(ab, policy(DeletionDelete), dataLoss()),
			prior:   pr,
			live:    Live{},
			class:   ClassNone,
			actions: map[string]Action{},
		},
		{
			name:    "nothing managed",
			cfg:     cfg(nil),
			prior:   Prior{},
			live:    live,
			class:   ClassNone,
			actions: map[string]Action{},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := Destroy(tc.cfg, tc.prior, tc.live)
			if r.Class != tc.class {
				t.Errorf("class %q, want %q", r.Class, tc.class)
			}
			if got := actions(r); !reflect.DeepEqual(got, tc.actions) {
				t.Errorf("actions\n got %v\nwant %v", got, tc.actions)
			}
			checkFindings(t, "errors", r.Errors, tc.errors)
			checkFindings(t, "warnings", r.Warnings, tc.warnings)
			checkDestroyInvariants(t, tc.cfg, r)
		})
	}
}

func TestDestroyTruncatesLists(t *testing.T) {
	many := users("user", 25)
	pr := *prior(t, cfg(many))
	live := Live{Claims: pvcs(t, many)}
	r := Destroy(cfg(many, policy(DeletionDelete), dataLoss()), pr, live)
	checkFindings(t, "warnings", r.Warnings, []want{{attr: "deletion_policy",
		has: []string{"deletes 25 home claim(s)", "user00: claim-user00", "user19: claim-user19", "... and 5 more (25 in all)"}, hasNot: []string{"user20:"}}})
	live.Mounted = mountedAll(t, many)
	r = Destroy(cfg(many, policy(DeletionDelete), dataLoss()), pr, live)
	checkFindings(t, "errors", r.Errors, []want{{attr: "deletion_policy",
		has: []string{"user19: claim-user19", "... and 5 more (25 in all)"}, hasNot: []string{"user20:"}}})
}
