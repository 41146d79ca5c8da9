package safety

import (
	"fmt"
	"reflect"
	"slices"
	"testing"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/claims"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/kubespawner"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/migration"
)

func size(gib int64) claimOpt {
	return func(c *claims.Claim) {
		c.Requested = fmt.Sprintf("%dGi", gib)
		c.RequestedBytes = gib * gi
	}
}

func TestPlanFirstApply(t *testing.T) {
	runPlanCases(t, []planCase{
		{
			name:       "empty namespace, no users",
			cfg:        cfg(nil),
			live:       Live{Class: gp3(true)},
			class:      ClassNone,
			colocation: true,
		},
		{
			name:       "empty namespace, no users, class not read",
			cfg:        cfg(nil, mode(claims.RWX), sclass("")),
			class:      ClassNone,
			colocation: false,
		},
		{
			name:       "empty namespace with users: one create each",
			cfg:        cfg([]string{"alice", "Alice", "dave.smith"}),
			live:       Live{Class: gp3(true)},
			class:      ClassSafe,
			actions:    map[string]Action{"alice": ActionCreate, "Alice": ActionCreate, "dave.smith": ActionCreate},
			claimNames: map[string]string{"alice": "claim-alice", "Alice": home(t, "Alice"), "dave.smith": home(t, "dave.smith")},
			colocation: true,
		},
		{
			name:       "escape scheme names new claims the legacy way",
			cfg:        cfg([]string{"Alice"}, scheme(kubespawner.SchemeEscape)),
			class:      ClassSafe,
			actions:    map[string]Action{"Alice": ActionCreate},
			claimNames: map[string]string{"Alice": name(t, tmpl, "Alice", kubespawner.SchemeEscape)},
			colocation: true,
		},
		{
			name:       "existing matching claims are adopted",
			cfg:        cfg([]string{"alice", "bob"}),
			live:       Live{Claims: pvcs(t, []string{"alice", "bob"}), Class: gp3(true)},
			class:      ClassSafe,
			actions:    map[string]Action{"alice": ActionKeep, "bob": ActionKeep},
			colocation: true,
		},
		{
			name:       "KubeSpawner claims of unlisted users that match are observed",
			cfg:        cfg([]string{"alice"}),
			live:       Live{Claims: pvcs(t, []string{"alice", "bob", "Carol"}), Class: gp3(true)},
			class:      ClassSafe, // alice is adopted
			actions:    map[string]Action{"alice": ActionKeep, "bob": ActionObserve, "Carol": ActionObserve},
			colocation: true,
			checkResult: func(t *testing.T, r Result) {
				for _, up := range r.Users {
					if up.User != "alice" && (up.Managed || up.Live == nil) {
						t.Errorf("observed user %q: managed %v, live %v", up.User, up.Managed, up.Live)
					}
				}
			},
		},
		{
			name:       "only observed claims: nothing changes",
			cfg:        cfg(nil),
			live:       Live{Claims: pvcs(t, []string{"bob", "Carol"}), Class: gp3(true)},
			class:      ClassNone,
			actions:    map[string]Action{"bob": ActionObserve, "Carol": ActionObserve},
			colocation: true,
		},
		{
			name:       "named-server claims are not homes and not strays",
			cfg:        cfg([]string{"alice"}),
			live:       Live{Claims: []claims.Claim{pvc(t, "alice"), pvc(t, "alice", named("claim-alice--lab"), server("lab"))}},
			class:      ClassSafe,
			actions:    map[string]Action{"alice": ActionKeep},
			colocation: true,
		},
		{
			name:       "claims without a username are ignored",
			cfg:        cfg(nil),
			live:       Live{Claims: []claims.Claim{pvc(t, "x", named("scratch"), func(c *claims.Claim) { c.Username = "" })}},
			class:      ClassNone,
			colocation: true,
		},
	})
}

func TestPlanUnchanged(t *testing.T) {
	c := cfg([]string{"alice", "bob"})
	runPlanCases(t, []planCase{
		{
			name:       "same config, same claims",
			cfg:        c,
			prior:      prior(t, c),
			live:       Live{Claims: pvcs(t, []string{"alice", "bob"}), Class: gp3(true)},
			class:      ClassNone,
			actions:    map[string]Action{"alice": ActionKeep, "bob": ActionKeep},
			colocation: true,
		},
		{
			name:       "capacity 0 means any size",
			cfg:        cfg([]string{"alice"}, func(c *Config) { c.CapacityBytes, c.Capacity = 0, "" }),
			prior:      prior(t, cfg([]string{"alice"}, func(c *Config) { c.CapacityBytes, c.Capacity = 0, "" })),
			live:       Live{Claims: pvcs(t, []string{"alice"}, size(50))},
			class:      ClassNone,
			actions:    map[string]Action{"alice": ActionKeep},
			colocation: true,
		},
		{
			name:       "changing only on_mode_change is a safe state change",
			cfg:        cfg([]string{"alice"}, onChange(OnModeChangeKeepExisting)),
			prior:      prior(t, cfg([]string{"alice"})),
			live:       Live{Claims: pvcs(t, []string{"alice"})},
			class:      ClassSafe,
			actions:    map[string]Action{"alice": ActionKeep},
			colocation: true,
		},
	})
}

func TestPlanUsersChange(t *testing.T) {
	abc := []string{"alice", "bob", "carol"}
	c := cfg(abc)
	runPlanCases(t, []planCase{
		{
			name:       "a user removed from users is released, never deleted",
			cfg:        cfg([]string{"alice", "carol"}),
			prior:      prior(t, c),
			live:       Live{Claims: pvcs(t, abc), Class: gp3(true)},
			class:      ClassSafe,
			actions:    map[string]Action{"alice": ActionKeep, "bob": ActionRelease, "carol": ActionKeep},
			colocation: true,
			checkResult: func(t *testing.T, r Result) {
				for _, up := range r.Users {
					if up.User == "bob" && (up.Managed || up.Live == nil || up.ClaimName != "claim-bob") {
						t.Errorf("released bob: %+v", up)
					}
				}
			},
		},
		{
			name:       "a user removed even with allow_data_loss and recreate is released",
			cfg:        cfg([]string{"alice"}, onChange(OnModeChangeRecreate), dataLoss(), policy(DeletionDelete)),
			prior:      prior(t, c),
			live:       Live{Claims: pvcs(t, abc)},
			class:      ClassSafe,
			actions:    map[string]Action{"alice": ActionKeep, "bob": ActionRelease, "carol": ActionRelease},
			colocation: true,
		},
		{
			name:       "a removed user whose claim is gone drops out",
			cfg:        cfg([]string{"alice", "carol"}),
			prior:      prior(t, c),
			live:       Live{Claims: pvcs(t, []string{"alice", "carol"})},
			class:      ClassNone,
			actions:    map[string]Action{"alice": ActionKeep, "carol": ActionKeep},
			colocation: true,
		},
		{
			name:       "a managed claim deleted out of band is created again, with a warning",
			cfg:        c,
			prior:      prior(t, c),
			live:       Live{Claims: pvcs(t, []string{"alice", "carol"}), Class: gp3(true)},
			class:      ClassSafe,
			actions:    map[string]Action{"alice": ActionKeep, "bob": ActionCreate, "carol": ActionKeep},
			colocation: true,
			warnings:   []want{{attr: "users", has: []string{"claim-bob", `"bob"`, "no longer exists", "gone", "empty"}}},
			checkResult: func(t *testing.T, r Result) {
				if r.Users[1].Reason != "deleted outside Terraform" {
					t.Errorf("bob's reason %q", r.Users[1].Reason)
				}
			},
		},
		{
			name:       "a user added later is created",
			cfg:        cfg([]string{"alice", "bob", "carol", "dave"}),
			prior:      prior(t, c),
			live:       Live{Claims: pvcs(t, abc)},
			class:      ClassSafe,
			actions:    map[string]Action{"alice": ActionKeep, "bob": ActionKeep, "carol": ActionKeep, "dave": ActionCreate},
			colocation: true,
		},
		{
			name:       "a listed KubeSpawner claim is adopted",
			cfg:        cfg([]string{"alice", "bob", "carol", "dave"}),
			prior:      prior(t, c),
			live:       Live{Claims: pvcs(t, []string{"alice", "bob", "carol", "dave"})},
			class:      ClassSafe,
			actions:    map[string]Action{"alice": ActionKeep, "bob": ActionKeep, "carol": ActionKeep, "dave": ActionKeep},
			colocation: true,
		},
		{
			name:       "a username that is not UTF-8",
			cfg:        cfg([]string{"alice", "\xff"}),
			live:       Live{Claims: pvcs(t, []string{"alice"})},
			class:      ClassNone,
			actions:    map[string]Action{"alice": ActionKeep},
			colocation: true,
			errors:     []want{{attr: "users", has: []string{`"\xff"`, "UTF-8"}}},
		},
	})
}

// The result never refers to the caller's slices in a way that lets Plan
// change them, and the caller's inputs are left as they were.
func TestPlanDoesNotModifyInputs(t *testing.T) {
	us := []string{"carol", "alice", "bob"}
	c := cfg(us, mode(claims.RWX), onChange(OnModeChangeKeepExisting))
	live := Live{Claims: pvcs(t, []string{"bob", "alice"}), Mounted: map[claims.Ref]bool{at("claim-bob"): true}}
	c0, live0 := deepCopyConfig(c), deepCopyLive(live)
	Plan(c, nil, live)
	if !reflect.DeepEqual(c, c0) || !reflect.DeepEqual(live, live0) {
		t.Errorf("Plan modified its inputs")
	}
}

// Under KubeSpawner's per-user namespaces, a user's home is the claim named
// by the template in the user's own namespace; claims elsewhere (another
// hub, another user's namespace) are not this deployment's and are neither
// homes nor strays; new claims go to the user's namespace.
func TestPlanUserNamespaces(t *testing.T) {
	runPlanCases(t, []planCase{
		{
			name: "claims are read per user namespace",
			cfg:  cfg([]string{"carol"}, userNamespaces("{hubnamespace}-{username}")),
			live: Live{Claims: []claims.Claim{
				pvc(t, "alice", inNS("jhub-alice")),
				pvc(t, "alice", inNS("other-hub"), named("claim-alice"), modes(claims.RWOP)),
				pvc(t, "bob", inNS("jhub-alice")),
				{Name: "scratch", Namespace: "jhub-alice", AccessModes: []string{claims.RWO}},
			}},
			class:      ClassSafe,
			actions:    map[string]Action{"alice": ActionObserve, "carol": ActionCreate},
			colocation: true,
			checkResult: func(t *testing.T, r Result) {
				ns := map[string]string{}
				for _, up := range r.Users {
					ns[up.User] = up.Namespace
				}
				if ns["alice"] != "jhub-alice" || ns["carol"] != "jhub-carol" {
					t.Errorf("namespaces %v", ns)
				}
				if r.Users[0].Live.Namespace != "jhub-alice" {
					t.Errorf("alice's home is the claim in %q", r.Users[0].Live.Namespace)
				}
			},
		},
	})
	// dave's claim in his own namespace not named by the template is a stray, as in one namespace.
	r := Plan(cfg(nil, userNamespaces("jupyter-{username}")), nil, Live{Claims: []claims.Claim{pvc(t, "dave", inNS("jupyter-dave"), named("home-dave"))}})
	if len(r.Errors) != 1 || r.Errors[0].Attribute != "pvc_name_template" {
		t.Errorf("stray in a user namespace: %s", dump(r.Errors))
	}
	// A template that cannot name a namespace for a user is an error naming the attribute.
	r = Plan(cfg([]string{"alice"}, userNamespaces("{nope}")), nil, Live{})
	if len(r.Errors) == 0 || r.Errors[0].Attribute != "user_namespace_template" {
		t.Errorf("bad template: %s", dump(r.Errors))
	}
}

// Claim names are unique per namespace only: under per-user namespaces a
// template without a user field ("home", legal in KubeSpawner) names every
// user's claim alike. Every lookup is by namespace and name; each case
// failed when claims were looked up by name.
func TestPlanClaimsKnownByNamespace(t *testing.T) {
	perUser := []cfgOpt{userNamespaces("jupyter-{username}"), template("home")}
	with := func(extra ...cfgOpt) []cfgOpt { return append(slices.Clone(perUser), extra...) }
	alice := pvc(t, "alice", inNS("jupyter-alice"), named("home"), uid("uid-alice"))
	bob := pvc(t, "bob", inNS("jupyter-bob"), named("home"), uid("uid-bob"))

	t.Run("destroy deletes the listed user's home, not another's of the same name", func(t *testing.T) {
		c := cfg([]string{"alice"}, with(policy(DeletionDelete), dataLoss())...)
		r := Destroy(c, *prior(t, c), Live{Claims: []claims.Claim{alice, bob}})
		if len(r.Users) != 1 || r.Users[0].Live == nil || r.Users[0].Live.UID != "uid-alice" || r.Users[0].Namespace != "jupyter-alice" {
			t.Fatalf("destroy plans %+v, want only alice's claim (uid-alice)", r.Users)
		}
		r = Destroy(c, *prior(t, c), Live{Claims: []claims.Claim{alice, bob}, Mounted: map[claims.Ref]bool{{Namespace: "jupyter-bob", Name: "home"}: true}})
		if len(r.Errors) > 0 {
			t.Errorf("bob's running server refused the delete of alice's home: %s", dump(r.Errors))
		}
	})
	t.Run("another user's copy is not this user's", func(t *testing.T) {
		c := cfg([]string{"alice", "bob"}, with(mode(claims.RWX), sclass("efs"), onChange(OnModeChangeMigrate), migrate(migration.MethodCopy, 0, true), copyTo("rsync:3", "home-rwx"))...)
		copied := pvc(t, "alice", inNS("jupyter-alice"), named("home"), uid("uid-alice"), withCopyRecord(migration.StepSwitched, "home-rwx"))
		target := claims.Claim{Name: "home-rwx", Namespace: "jupyter-alice", Username: "alice", AccessModes: []string{claims.RWX}, StorageClass: "efs", Phase: "Bound",
			Annotations: map[string]string{migration.CopyOfAnnotation: "home", migration.CopySwitchedAnnotation: "true"}}
		r := Plan(c, nil, Live{Claims: []claims.Claim{copied, target, bob}})
		got := actions(r)
		if got["alice"] != ActionCopied || got["bob"] != ActionMigrate {
			t.Fatalf("actions %v, want alice copied and bob migrated (copied to his own home-rwx)", got)
		}
		for _, up := range r.Users {
			if up.User == "bob" && (up.TargetLive != nil || up.Namespace != "jupyter-bob") {
				t.Errorf("bob's plan points at %+v in %s", up.TargetLive, up.Namespace)
			}
		}
		if copiedTo(r, "bob") != "" {
			t.Errorf("the hub would mount %q as bob's home", copiedTo(r, "bob"))
		}
	})
	t.Run("another user's migration in progress is not this user's", func(t *testing.T) {
		c := cfg([]string{"alice", "bob"}, with(mode(claims.RWX), onChange(OnModeChangeKeepExisting))...)
		rec := migration.Record{Step: migration.StepReleased, User: "bob", Claim: "home", Namespace: "jupyter-bob", From: []string{claims.RWO}, To: claims.RWX}
		r := Plan(c, nil, Live{Claims: []claims.Claim{alice}, InProgress: map[claims.Ref]InProgress{{Namespace: "jupyter-bob", Name: "home"}: {Volume: "pv-bob", Record: rec}}})
		for _, up := range r.Users {
			if up.User == "alice" && (up.Resume != nil || up.Volume != "") {
				t.Errorf("alice resumes bob's rebind: %+v", up)
			}
			if up.User == "bob" && (up.Resume == nil || up.Volume != "pv-bob") {
				t.Errorf("bob's rebind is not resumed: %+v", up)
			}
		}
	})
	t.Run("a server on another user's claim of the same name does not stop this user's change", func(t *testing.T) {
		c := cfg([]string{"alice"}, with(mode(claims.RWX), onChange(OnModeChangeRecreate), dataLoss())...)
		bob := bob
		bob.AccessModes = []string{claims.RWX}
		r := Plan(c, prior(t, c), Live{Claims: []claims.Claim{alice, bob}, Mounted: map[claims.Ref]bool{{Namespace: "jupyter-bob", Name: "home"}: true}})
		if got := actions(r); got["alice"] != ActionRecreate || len(r.Errors) > 0 {
			t.Errorf("actions %v, errors %s", got, dump(r.Errors))
		}
		r = Plan(c, prior(t, c), Live{Claims: []claims.Claim{alice, bob}, Mounted: map[claims.Ref]bool{{Namespace: "jupyter-alice", Name: "home"}: true}})
		if len(r.Errors) == 0 {
			t.Errorf("alice's running server did not stop the recreate of her home")
		}
	})
}

// Result.All gives the homes' plans, then the other claims', in place, and
// stops when the loop does.
func TestResultAll(t *testing.T) {
	r := Result{Users: []UserPlan{{User: "a"}, {User: "b"}}, Extra: []UserPlan{{User: "c"}}}
	var got []string
	for up := range r.All() {
		got = append(got, up.User)
	}
	if want := []string{"a", "b", "c"}; !slices.Equal(got, want) {
		t.Errorf("All gave %v, want %v", got, want)
	}
	for _, stop := range []string{"a", "b", "c"} {
		var seen []string
		for up := range r.All() {
			seen = append(seen, up.User)
			if up.User == stop {
				break // All must not call yield again: that panics
			}
		}
		if seen[len(seen)-1] != stop {
			t.Errorf("a loop that stopped at %s went on to %v", stop, seen)
		}
	}
	for up := range r.All() {
		if up != &r.Users[0] {
			t.Error("All gave a copy, not the plan in place")
		}
		break
	}
}

// A claim without a copy record whose copy exists (KubeSpawner created the
// old name again after the copy, or the record was removed) is never copied
// over: a finished copy stays the home; an unfinished one fails the plan.
func TestPlanCopyWithoutRecord(t *testing.T) {
	toEFS := []cfgOpt{mode(claims.RWX), sclass("efs"), migrate(migration.MethodAuto, 0, true), copyTo("rsync:3", "home-{username}"), dataLoss(), deleteSources}
	switched := copyTarget(t, "alice", "home-alice")
	switched.Annotations[migration.CopySwitchedAnnotation] = "true"
	runPlanCases(t, []planCase{
		{
			name:     "the old name created again after a finished copy",
			cfg:      cfg([]string{"alice"}, toEFS...),
			live:     Live{Claims: []claims.Claim{ebsRWO(t, "alice"), switched}, Volumes: volumes(t, "ebs.csi.aws.com", "alice")},
			class:    ClassNone, // nothing copied, nothing deleted
			actions:  map[string]Action{"alice": ActionCopied},
			warnings: []want{{attr: "migration", has: []string{"has no copy record", "home-alice stays the user's home"}}},
			checkResult: func(t *testing.T, r Result) {
				if copiedTo(r, "alice") != "home-alice" {
					t.Errorf("home claim %q", copiedTo(r, "alice"))
				}
				if c := ChangesOf(r); len(c) != 0 {
					t.Errorf("changes %v", c)
				}
			},
		},
		{
			// The source was created again after a copy that was verified but
			// never switched (its source deleted, the copy the home since).
			name:     "the old name created again after a copy the user was not switched to",
			cfg:      cfg([]string{"alice"}, toEFS...),
			live:     Live{Claims: []claims.Claim{withUID(ebsRWO(t, "alice"), "s2"), fromUID(copyTarget(t, "alice", "home-alice"), "s1")}, Volumes: volumes(t, "ebs.csi.aws.com", "alice")},
			class:    ClassNone,
			actions:  map[string]Action{"alice": ActionCopied},
			warnings: []want{{attr: "migration", has: []string{"home-alice stays the user's home", "Check what claim-alice holds"}}},
		},
		{
			name:    "an unfinished copy of the same claim whose record is gone",
			cfg:     cfg([]string{"alice"}, toEFS...),
			live:    Live{Claims: []claims.Claim{withUID(ebsRWO(t, "alice"), "s1"), fromUID(copyTarget(t, "alice", "home-alice"), "s1")}, Volumes: volumes(t, "ebs.csi.aws.com", "alice")},
			class:   ClassNone,
			actions: map[string]Action{"alice": ActionKeep},
			errors:  []want{{attr: "migration", has: []string{"unfinished copy of that same claim", "keeps claim-alice, which holds the data"}}},
		},
	})
}

func withUID(c claims.Claim, uid string) claims.Claim { c.UID = uid; return c }

func fromUID(c claims.Claim, uid string) claims.Claim {
	c.Annotations[migration.CopyOfUIDAnnotation] = uid
	return c
}
