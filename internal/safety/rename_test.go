package safety

import (
	"slices"
	"strings"
	"testing"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/claims"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/kubespawner"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/migration"
)

// A change of the slug scheme and the template with on_layout_change =
// "move" names every listed user whose directory is renamed, fails
// nothing, and adds the old place, scheme-free, to the shared claim's
// list, after what it holds.
func TestPlanShared_moveRenamesAtSpawn(t *testing.T) {
	was := sharedConfig("{username}", kubespawner.SchemeEscape, "alice", "Bob")
	now := sharedConfig("homes_v2/{username}", kubespawner.SchemeSafe, "alice", "Bob")
	now.OnLayoutChange = OnLayoutChangeMove
	live := sharedLive(claims.RWX)
	live.Shared.Annotations = map[string]string{migration.MovedFromAnnotation: `["old_/{safe_username}"]`}
	res := Plan(now, &Prior{Config: was}, live)
	if len(res.Errors) != 0 || res.Class != ClassSafe {
		t.Fatalf("%s %s", res.Class, findingsText(res.Errors))
	}
	if text := findingsText(res.Warnings); !strings.Contains(text, "renamed at their next spawn") || !strings.Contains(text, "Bob:") || !strings.Contains(text, `alice: directory "alice" of claim hub/home-nfs → directory "homes_v2/alice"`) {
		t.Errorf("warnings:\n%s", text)
	}
	if want := []string{"old_/{safe_username}", "{escaped_username}"}; !slices.Equal(res.MovedFrom, want) {
		t.Errorf("moved from %q, want %q", res.MovedFrom, want)
	}
	// The next plan, with the list recorded: nothing more to say or add.
	live.Shared.Annotations[migration.MovedFromAnnotation] = migration.EncodeMovedFrom(res.MovedFrom)
	res = Plan(now, &Prior{Config: now}, live)
	if len(res.Errors)+len(res.Warnings) != 0 || res.Class != ClassNone || len(res.MovedFrom) != 2 {
		t.Fatalf("after: %s %q %s %s", res.Class, res.MovedFrom, findingsText(res.Errors), findingsText(res.Warnings))
	}
	// Reverted: one more move; the list keeps every earlier place.
	back := was
	back.OnLayoutChange = OnLayoutChangeMove
	res = Plan(back, &Prior{Config: now}, live)
	if len(res.Errors) != 0 || !slices.Equal(res.MovedFrom, []string{"old_/{safe_username}", "{escaped_username}", "homes_v2/{safe_username}"}) {
		t.Fatalf("reverted: %q %s", res.MovedFrom, findingsText(res.Errors))
	}
	// Without a move the list is carried as it is (the hub keeps renaming).
	back.OnLayoutChange = OnLayoutChangeFail
	if res = Plan(back, &Prior{Config: back}, live); len(res.MovedFrom) != 2 {
		t.Fatalf("carried: %q", res.MovedFrom)
	}
}

// A move names what it cannot do: into another claim, a layout switch,
// a list on the claim that cannot be read, a template the new scheme
// cannot express, a listed user given another's old directory or one
// inside an old home.
func TestPlanShared_moveRefusals(t *testing.T) {
	was := sharedConfig("{username}", kubespawner.SchemeEscape, "alice")
	now := was
	now.OnLayoutChange = OnLayoutChangeMove
	now.Shared = &SharedHome{Claim: "other", SubPathTemplate: "{username}"}
	live := sharedLive(claims.RWX)
	live.Shared.Name = "other"
	if text := findingsText(Plan(now, &Prior{Config: was}, live).Errors); !strings.Contains(text, "only within the shared claim") {
		t.Errorf("another claim:\n%s", text)
	}
	perUser := now
	perUser.Shared = nil
	if text := findingsText(Plan(perUser, &Prior{Config: was}, Live{}).Errors); !strings.Contains(text, "only within the shared claim") {
		t.Errorf("a layout switch:\n%s", text)
	}

	now.Shared = &SharedHome{Claim: "home-nfs", SubPathTemplate: "{username}"}
	now.Scheme = kubespawner.SchemeSafe
	live = sharedLive(claims.RWX)
	live.Shared.Annotations = map[string]string{migration.MovedFromAnnotation: "{not json"}
	if text := findingsText(Plan(now, &Prior{Config: was}, live).Errors); !strings.Contains(text, "cannot be read") {
		t.Errorf("unreadable list:\n%s", text)
	}

	ws := sharedConfig("{user_server}/x", kubespawner.SchemeEscape, "alice")
	ns := ws
	ns.Scheme, ns.OnLayoutChange = kubespawner.SchemeSafe, OnLayoutChangeMove
	if text := findingsText(Plan(ns, &Prior{Config: ws}, sharedLive(claims.RWX)).Errors); !strings.Contains(text, "cannot be found at spawn") {
		t.Errorf("inexpressible:\n%s", text)
	}

	// "a.b" was "a-2eb" under escape; safe gives user "a-2eb" that name.
	was = sharedConfig("{username}", kubespawner.SchemeEscape, "a.b", "a-2eb")
	now = was
	now.Scheme, now.OnLayoutChange = kubespawner.SchemeSafe, OnLayoutChangeMove
	if text := findingsText(Plan(now, &Prior{Config: was}, sharedLive(claims.RWX)).Errors); !strings.Contains(text, `a-2eb: "a-2eb" is a.b's old home`) {
		t.Errorf("taken:\n%s", text)
	}
	was = sharedConfig("{username}", kubespawner.SchemeSafe, "alice")
	now = sharedConfig("{username}/home", kubespawner.SchemeSafe, "alice")
	now.OnLayoutChange = OnLayoutChangeMove
	if text := findingsText(Plan(now, &Prior{Config: was}, sharedLive(claims.RWX)).Errors); !strings.Contains(text, `inside alice's old home "alice"`) {
		t.Errorf("inside:\n%s", text)
	}
}

// While homes move out of the shared layout, a pod on a place a home had
// before a rename uses that home: the copy waits for it.
func TestPlanSplit_podOnAnEarlierPlaceUsesTheHome(t *testing.T) {
	cfg := splitConfig("alice", "bob")
	cfg.Migration.CopyImage, cfg.Migration.Method, cfg.Migration.SkipRunning = "rsync:3", migration.MethodCopy, true
	live := sharedLive(claims.RWX)
	live.Shared.Annotations = map[string]string{migration.MovedFromAnnotation: `["old_/{escaped_username}"]`}
	use := migration.NewDirectoryUse([]string{"old_/alice"})
	live.DirectoriesInUse = &use
	res := Plan(cfg, &Prior{Config: cfg, HubSwitched: true}, live)
	if a, b := planOf(res, "alice"), planOf(res, "bob"); len(res.Errors) != 0 || a.Action != ActionKeep || b.Action != ActionMigrate {
		t.Fatalf("%+v\n%+v\n%s", a, b, findingsText(res.Errors))
	}
	if !slices.Equal(res.MovedFrom, []string{"old_/{escaped_username}"}) {
		t.Errorf("moved from %q", res.MovedFrom)
	}
	// The move's directory Job renames from there too: places that can be
	// another user's are refused as in the shared layout.
	live.Shared.Annotations[migration.MovedFromAnnotation] = `["{escaped_username}"]`
	if text := findingsText(Plan(cfg, &Prior{Config: cfg, HubSwitched: true}, live).Errors); !strings.Contains(text, "could be taken by another home") {
		t.Errorf("moving out:\n%s", text)
	}
}

// Earlier places and the directory template must never give two users
// one directory, or one inside another's, for any names: the same template
// under the other scheme ("bob-" escaped is user "bob-2d"'s safe name), a
// chain whose first template holds the later ones (user "home"), and a
// list that lost a place the last apply recorded (restored, with a
// warning) are all checked against every place on the claim.
func TestPlanShared_placesNeverMeet(t *testing.T) {
	was := sharedConfig("{username}", kubespawner.SchemeEscape, "alice")
	now := was
	now.Scheme, now.OnLayoutChange = kubespawner.SchemeSafe, OnLayoutChangeMove
	if text := findingsText(Plan(now, &Prior{Config: was}, sharedLive(claims.RWX)).Errors); !strings.Contains(text, "could be taken by another home") {
		t.Errorf("escape to safe on one template:\n%s", text)
	}
	// home/{username} → u-{username} (moved) → {username}: user "home"
	// would get the directory holding the homes not renamed since.
	first := sharedConfig("home/{username}", kubespawner.SchemeSafe, "alice")
	second := sharedConfig("u-{username}", kubespawner.SchemeSafe, "alice")
	second.OnLayoutChange = OnLayoutChangeMove
	live := sharedLive(claims.RWX)
	res := Plan(second, &Prior{Config: first}, live)
	if len(res.Errors) != 0 {
		t.Fatalf("first move: %s", findingsText(res.Errors))
	}
	live.Shared.Annotations = map[string]string{migration.MovedFromAnnotation: migration.EncodeMovedFrom(res.MovedFrom)}
	third := sharedConfig("{username}", kubespawner.SchemeSafe, "alice")
	third.OnLayoutChange = OnLayoutChangeMove
	if text := findingsText(Plan(third, &Prior{Config: second}, live).Errors); !strings.Contains(text, "could be taken by another home") || !strings.Contains(text, "home/{safe_username}") {
		t.Errorf("chain:\n%s", text)
	}
	// So is a keep onto such a template while the list holds a place.
	third.OnLayoutChange = OnLayoutChangeKeep
	if text := findingsText(Plan(third, &Prior{Config: second}, live).Errors); !strings.Contains(text, "could be taken by another home") {
		t.Errorf("keep:\n%s", text)
	}
	// The claim lost its list: restored from what the last apply gave the hub.
	res = Plan(second, &Prior{Config: second, MovedFrom: []string{"home/{safe_username}"}}, sharedLive(claims.RWX))
	if !slices.Equal(res.MovedFrom, []string{"home/{safe_username}"}) || !strings.Contains(findingsText(res.Warnings), "lost earlier places") {
		t.Errorf("lost: %q\n%s", res.MovedFrom, findingsText(res.Warnings))
	}
}

// A move from a directory per server to one per user cannot merge them;
// the other way the default server takes the home (the script's rule).
func TestPlanShared_moveAndNamedServers(t *testing.T) {
	perServer := sharedConfig("{user_server}", kubespawner.SchemeSafe, "alice")
	perUser := sharedConfig("v2_/{username}", kubespawner.SchemeSafe, "alice")
	perUser.OnLayoutChange = OnLayoutChangeMove
	if text := findingsText(Plan(perUser, &Prior{Config: perServer}, sharedLive(claims.RWX)).Errors); !strings.Contains(text, "cannot be renamed into one directory") {
		t.Errorf("per server to per user:\n%s", text)
	}
	perServer.OnLayoutChange = OnLayoutChangeMove
	if res := Plan(perServer, &Prior{Config: perUser}, sharedLive(claims.RWX)); len(res.Errors) != 0 {
		t.Errorf("per user to per server:\n%s", findingsText(res.Errors))
	}
}

// A place the claim lost, restored from the state, is one a pod may still
// use: the copy waits for it as for the claim's own places.
func TestPlanSplit_restoredPlaceInUse(t *testing.T) {
	cfg := splitConfig("alice", "bob")
	cfg.Migration.CopyImage, cfg.Migration.Method, cfg.Migration.SkipRunning = "rsync:3", migration.MethodCopy, true
	live := sharedLive(claims.RWX)
	use := migration.NewDirectoryUse([]string{"old_/alice"})
	live.DirectoriesInUse = &use
	res := Plan(cfg, &Prior{Config: cfg, HubSwitched: true, MovedFrom: []string{"old_/{escaped_username}"}}, live)
	if a := planOf(res, "alice"); a.Action != ActionKeep || !strings.Contains(findingsText(res.Warnings), "lost earlier places") {
		t.Fatalf("%+v\n%s", a, findingsText(res.Warnings))
	}
}

// A template for all of a user's servers while a place gives each server
// its own (a keep in between) would rename a named server's home into the
// user's: refused. Places on the claim are templates the hub can expand.
func TestPlanShared_placesOfServersAndBadPlaces(t *testing.T) {
	cfg := sharedConfig("v3_/{username}", kubespawner.SchemeSafe, "alice")
	live := sharedLive(claims.RWX)
	live.Shared.Annotations = map[string]string{migration.MovedFromAnnotation: `["{safe_user_server}"]`}
	if text := findingsText(Plan(cfg, &Prior{Config: cfg}, live).Errors); !strings.Contains(text, "a named server's old home") {
		t.Errorf("servers:\n%s", text)
	}
	for _, bad := range []string{`[""]`, `["{nope}"]`, `["{unescaped_username}"]`} {
		live.Shared.Annotations[migration.MovedFromAnnotation] = bad
		if text := findingsText(Plan(cfg, &Prior{Config: cfg}, live).Errors); !strings.Contains(text, "cannot be read") {
			t.Errorf("%s:\n%s", bad, text)
		}
	}
}
