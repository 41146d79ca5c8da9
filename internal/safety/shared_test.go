package safety

import (
	"slices"
	"strings"
	"testing"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/claims"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/kubespawner"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/migration"
)

func sharedConfig(tmpl string, scheme kubespawner.Scheme, users ...string) Config {
	return Config{Namespace: "hub", AccessMode: claims.RWX, Capacity: "10Gi", CapacityBytes: 10 << 30, NameTemplate: "claim-{username}",
		Scheme: scheme, Users: users, Shared: &SharedHome{Claim: "home-nfs", SubPathTemplate: tmpl}}
}

func sharedLive(modes ...string) Live {
	return Live{Shared: &claims.Claim{Namespace: "hub", Name: "home-nfs", UID: "s1", AccessModes: modes, Phase: "Bound"}}
}

func findingsText(fs []claims.Finding) string {
	var b strings.Builder
	for _, f := range fs {
		b.WriteString(f.Attribute + ": " + f.Summary + "\n" + f.Detail + "\n")
	}
	return b.String()
}

// A change of the slug scheme names, old and new, every listed user whose
// directory moves, and fails unless on_layout_change = "keep"; a user whose
// name is the same under both schemes is not named.
func TestPlanShared_slugSchemeChangeNamesEveryMovedDirectory(t *testing.T) {
	was := sharedConfig("{username}", kubespawner.SchemeEscape, "alice", "Bob", "chris.x@example.org")
	now := was
	now.Scheme = kubespawner.SchemeSafe
	res := Plan(now, &Prior{Config: was}, sharedLive(claims.RWX))
	text := findingsText(res.Errors)
	if len(res.Errors) != 1 || res.Errors[0].Attribute != "on_layout_change" {
		t.Fatalf("errors:\n%s", text)
	}
	for _, u := range []string{"Bob", "chris.x@example.org"} {
		was, _ := kubespawner.Expand("{username}", u, "", kubespawner.SchemeEscape)
		now, _ := kubespawner.Expand("{username}", u, "", kubespawner.SchemeSafe)
		if was == now || !strings.Contains(text, `directory "`+was+`" of claim hub/home-nfs → directory "`+now+`"`) {
			t.Errorf("%s (%q → %q) not named:\n%s", u, was, now, text)
		}
	}
	if strings.Contains(text, "alice:") {
		t.Errorf("alice's directory does not move:\n%s", text)
	}
	// Kept, the old homes stay where the new scheme can give them to other
	// users ("bob-" escaped is user "bob-2d"'s safe name): refused. Under a
	// directory no old name can be, the old homes are left and recorded.
	now.OnLayoutChange = OnLayoutChangeKeep
	res = Plan(now, &Prior{Config: was}, sharedLive(claims.RWX))
	if text := findingsText(res.Errors); !strings.Contains(text, "could be taken by another home") {
		t.Fatalf("keep onto the other scheme: %s", text)
	}
	now.Shared = &SharedHome{Claim: "home-nfs", SubPathTemplate: "homes_v2/{username}"}
	res = Plan(now, &Prior{Config: was}, sharedLive(claims.RWX))
	if len(res.Errors) != 0 || !strings.Contains(findingsText(res.Warnings), "Bob:") || res.Class != ClassSafe || !slices.Equal(res.LeftAt, []string{"{escaped_username}"}) {
		t.Fatalf("keep: %s %q %s\n%s", res.Class, res.LeftAt, findingsText(res.Errors), findingsText(res.Warnings))
	}
}

func TestPlanShared_subPathTemplateOrClaimChange(t *testing.T) {
	was := sharedConfig("{username}", kubespawner.SchemeSafe, "alice")
	now := was
	now.Shared = &SharedHome{Claim: "home-nfs", SubPathTemplate: "home/{username}"}
	if res := Plan(now, &Prior{Config: was}, sharedLive(claims.RWX)); !strings.Contains(findingsText(res.Errors), `alice: directory "alice" of claim hub/home-nfs → directory "home/alice" of claim hub/home-nfs`) {
		t.Fatalf("template change:\n%s", findingsText(res.Errors))
	}
	now.Shared = &SharedHome{Claim: "other", SubPathTemplate: "{username}"}
	live := sharedLive(claims.RWX)
	live.Shared.Name = "other"
	if res := Plan(now, &Prior{Config: was}, live); !strings.Contains(findingsText(res.Errors), "The layout of the homes changed") {
		t.Fatalf("claim change:\n%s", findingsText(res.Errors))
	}
	if res := Plan(was, &Prior{Config: was}, sharedLive(claims.RWX)); len(res.Errors)+len(res.Warnings) != 0 || res.Class != ClassNone {
		t.Fatalf("no change: %s %s %s", res.Class, findingsText(res.Errors), findingsText(res.Warnings))
	}
}

// Moving between the layouts without a migration leaves every listed
// user's home behind: the plan fails naming them, both ways.
func TestPlanShared_layoutSwitchFailsUnlessKept(t *testing.T) {
	shared := sharedConfig("{username}", kubespawner.SchemeSafe, "alice", "bob")
	perUser := shared
	perUser.Shared = nil
	alice := claims.Claim{Namespace: "hub", Name: "claim-alice", UID: "a1", Username: "alice", AccessModes: []string{claims.RWX}, Phase: "Bound",
		Requested: "10Gi", RequestedBytes: 10 << 30}
	live := sharedLive(claims.RWX)
	live.Claims = []claims.Claim{alice}
	res := Plan(shared, &Prior{Config: perUser, Managed: map[string]string{"alice": "claim-alice"}}, live)
	if text := findingsText(res.Errors); !strings.Contains(text, `alice: claim hub/claim-alice → directory "alice" of claim hub/home-nfs`) ||
		!strings.Contains(text, `bob: claim hub/claim-bob → directory "bob"`) {
		t.Fatalf("per-user → shared:\n%s", text)
	}
	res = Plan(perUser, &Prior{Config: shared}, Live{Claims: []claims.Claim{alice}})
	if text := findingsText(res.Errors); !strings.Contains(text, `bob: directory "bob" of claim hub/home-nfs → claim hub/claim-bob`) {
		t.Fatalf("shared → per-user:\n%s", text)
	}
	perUser.OnLayoutChange = OnLayoutChangeKeep
	if res = Plan(perUser, &Prior{Config: shared}, Live{Claims: []claims.Claim{alice}}); len(res.Errors) != 0 {
		t.Fatalf("kept: %s", findingsText(res.Errors))
	}
}

func TestPlanShared_claimMissingOrNotShared(t *testing.T) {
	cfg := sharedConfig("{username}", kubespawner.SchemeSafe, "alice")
	if res := Plan(cfg, nil, Live{}); len(res.Errors) != 1 || res.Errors[0].Attribute != "shared_home.claim_name" {
		t.Fatalf("missing: %s", findingsText(res.Errors))
	}
	if res := Plan(cfg, nil, sharedLive(claims.RWO)); len(res.Errors) != 1 || res.Errors[0].Attribute != "access_mode" {
		t.Fatalf("RWO claim, RWX configured: %s", findingsText(res.Errors))
	}
	cfg.AccessMode = claims.RWO
	if res := Plan(cfg, nil, sharedLive(claims.RWO)); len(res.Errors) != 0 || !strings.Contains(findingsText(res.Warnings), "Multi-Attach") {
		t.Fatalf("RWO: %s %s", findingsText(res.Errors), findingsText(res.Warnings))
	}
}

// A migration of per-user homes in flight is never left half-way by a
// move to the shared layout, whatever on_layout_change says.
func TestPlanShared_migrationInFlightFails(t *testing.T) {
	cfg := sharedConfig("{username}", kubespawner.SchemeSafe, "alice")
	cfg.OnLayoutChange = OnLayoutChangeKeep
	rec := migration.CopyRecord{User: "alice", Target: "home-alice", To: claims.RWX, Step: migration.StepCopying}.Encode()
	live := sharedLive(claims.RWX)
	live.Claims = []claims.Claim{{Namespace: "hub", Name: "claim-alice", UID: "a1", Username: "alice", AccessModes: []string{claims.RWO},
		Annotations: map[string]string{migration.CopyAnnotation: rec}}}
	if res := Plan(cfg, nil, live); !strings.Contains(findingsText(res.Errors), "claim-alice") {
		t.Fatalf("copy in flight: %s", findingsText(res.Errors))
	}
	live = sharedLive(claims.RWX)
	live.InProgress = map[claims.Ref]InProgress{{Namespace: "hub", Name: "claim-bob"}: {Volume: "pv-1", Record: migration.Record{User: "bob"}}}
	if res := Plan(cfg, nil, live); !strings.Contains(findingsText(res.Errors), "pv-1") {
		t.Fatalf("rebind in flight: %s", findingsText(res.Errors))
	}
}

// Adopting a shared layout names the users whose directory KubeSpawner
// before version 7 named otherwise.
func TestPlanShared_adoptionWarnsAboutOlderNames(t *testing.T) {
	cfg := sharedConfig("{username}", kubespawner.SchemeSafe, "alice", "Bob")
	res := Plan(cfg, nil, sharedLive(claims.RWX))
	if text := findingsText(res.Warnings); !strings.Contains(text, "Bob:") || strings.Contains(text, "alice:") {
		t.Fatalf("adoption:\n%s", text)
	}
}

// Destroy in the shared layout deletes nothing, whatever the state lists.
func TestDestroyShared_deletesNothing(t *testing.T) {
	cfg := sharedConfig("{username}", kubespawner.SchemeSafe, "alice")
	cfg.DeletionPolicy, cfg.AllowDataLoss = DeletionDelete, true
	live := sharedLive(claims.RWX)
	live.Claims = []claims.Claim{{Namespace: "hub", Name: "claim-alice", UID: "a1", Username: "alice", AccessModes: []string{claims.RWX}}}
	cfg.Shared.Create, cfg.Shared.Capacity = true, "500Gi" // also the claim this resource created
	res := Destroy(cfg, Prior{Config: cfg, Managed: map[string]string{"alice": "claim-alice"}}, live)
	for _, up := range res.Users {
		if up.Action == ActionRecreate {
			t.Fatalf("destroy deletes %s", up.ClaimName)
		}
	}
	if res.Class != ClassNone || !strings.Contains(findingsText(res.Warnings), "never deletes claim hub/home-nfs") {
		t.Fatalf("destroy: %s\n%s", res.Class, findingsText(res.Warnings))
	}
}

// A change of the naming fails the plan even when no listed user moves
// (no users listed at all): the plan cannot see unlisted users'
// directories. A change that moves nobody (a template on the escaped
// name, under either scheme) passes.
func TestPlanShared_namingChangeFailsWithoutListedUsers(t *testing.T) {
	was := sharedConfig("{username}", kubespawner.SchemeEscape)
	now := was
	now.Scheme = kubespawner.SchemeSafe
	if res := Plan(now, &Prior{Config: was}, sharedLive(claims.RWX)); !strings.Contains(findingsText(res.Errors), "Homes of users not listed in users") {
		t.Fatalf("no listed user: %s", findingsText(res.Errors))
	}
	was = sharedConfig("{escaped_username}", kubespawner.SchemeEscape, "Bob")
	now = was
	now.Scheme = kubespawner.SchemeSafe
	if res := Plan(now, &Prior{Config: was}, sharedLive(claims.RWX)); len(res.Errors) != 0 {
		t.Fatalf("a change that moves nobody: %s", findingsText(res.Errors))
	}
}

// Adopting the shared layout (no prior state) over listed users' claims of
// the per-user layout fails as a move does: their servers would mount
// new directories.
func TestPlanShared_adoptionOverPerUserClaims(t *testing.T) {
	cfg := sharedConfig("{username}", kubespawner.SchemeSafe, "alice", "bob")
	live := sharedLive(claims.RWX)
	live.Claims = []claims.Claim{{Namespace: "hub", Name: "claim-alice", UID: "a1", Username: "alice", AccessModes: []string{claims.RWO}, Phase: "Bound"}}
	res := Plan(cfg, nil, live)
	if text := findingsText(res.Errors); !strings.Contains(text, `alice: claim hub/claim-alice → directory "alice" of claim hub/home-nfs`) || strings.Contains(text, "bob:") {
		t.Fatalf("adoption over alice's claim:\n%s", text)
	}
	cfg.OnLayoutChange = OnLayoutChangeKeep
	if res := Plan(cfg, nil, live); len(res.Errors) != 0 {
		t.Fatalf("kept: %s", findingsText(res.Errors))
	}
}

// Adopting the shared layout counts every listed user's home claim in the
// namespace, found by the user's label, not only the one the template
// names under slug_scheme: a claim KubeSpawner named under the other
// scheme (before version 7), or a copy's new claim whose old claim is
// gone, is a home the shared layout leaves too. An unlisted user's claim,
// a named server's and another per-user claim (extra_user_volumes) are not.
func TestPlanShared_adoptionOverHomesNamedOtherwise(t *testing.T) {
	cfg := sharedConfig("{username}", kubespawner.SchemeEscape, "Bob", "alice")
	cfg.ExtraVolumes = []string{"workspace-{username}"}
	live := sharedLive(claims.RWX)
	live.Claims = []claims.Claim{
		{Namespace: "hub", Name: "claim-bob---cd9fb1e1", UID: "b1", Username: "Bob", AccessModes: []string{claims.RWO}, Phase: "Bound"},
		{Namespace: "hub", Name: "home-alice", UID: "a2", Username: "alice", AccessModes: []string{claims.RWX}, Phase: "Bound",
			Annotations: map[string]string{migration.CopyOfAnnotation: "claim-alice", migration.CopySwitchedAnnotation: "true"}},
		{Namespace: "hub", Name: "claim-alice-gpu", UID: "a3", Username: "alice", Servername: "gpu", AccessModes: []string{claims.RWO}, Phase: "Bound"},
		{Namespace: "hub", Name: "workspace-alice", UID: "a4", Username: "alice", AccessModes: []string{claims.RWO}, Phase: "Bound"},
		{Namespace: "hub", Name: "claim-carol", UID: "c1", Username: "carol", AccessModes: []string{claims.RWO}, Phase: "Bound"},
	}
	res := Plan(cfg, nil, live)
	text := findingsText(res.Errors)
	for _, want := range []string{`Bob: claim hub/claim-bob---cd9fb1e1 → directory "-42ob" of claim hub/home-nfs`, `alice: claim hub/home-alice → directory "alice"`} {
		if !strings.Contains(text, want) {
			t.Errorf("%q not named:\n%s", want, text)
		}
	}
	for _, not := range []string{"claim-alice-gpu →", "workspace-alice →", "carol:"} {
		if strings.Contains(text, not) {
			t.Errorf("%q named:\n%s", not, text)
		}
	}
	cfg.OnLayoutChange = OnLayoutChangeKeep
	if res := Plan(cfg, nil, live); len(res.Errors) != 0 || !strings.Contains(findingsText(res.Warnings), "Bob: claim hub/claim-bob---cd9fb1e1") {
		t.Fatalf("kept: %s\n%s", findingsText(res.Errors), findingsText(res.Warnings))
	}
}

// A change that moves only named servers' homes fails too.
func TestPlanShared_namedServersMove(t *testing.T) {
	was := sharedConfig("{username}", kubespawner.SchemeSafe, "alice")
	now := was
	now.Shared = &SharedHome{Claim: "home-nfs", SubPathTemplate: "{user_server}"}
	res := Plan(now, &Prior{Config: was}, sharedLive(claims.RWX))
	if text := findingsText(res.Errors); !strings.Contains(text, "server gpu") {
		t.Fatalf("named servers move:\n%s", text)
	}
}

// No setting gives a user the directory that holds the old homes, not even
// with on_layout_change = "keep".
func TestPlanShared_parentOfOldHomesNeverAHome(t *testing.T) {
	was := sharedConfig("home/{username}", kubespawner.SchemeSafe, "alice")
	now := was
	now.Shared = &SharedHome{Claim: "home-nfs", SubPathTemplate: "{username}"}
	now.OnLayoutChange = OnLayoutChangeKeep
	res := Plan(now, &Prior{Config: was}, sharedLive(claims.RWX))
	if text := findingsText(res.Errors); !strings.Contains(text, `a user can get directory "home"`) {
		t.Fatalf("home/{username} → {username}:\n%s", text)
	}
	// Also for a user whose name is only part of the directory.
	for old, tmpl := range map[string]string{"home/{username}": "h{username}", "homes/{username}": "{username}s", "data/home/{username}": "data/{username}e"} {
		was := sharedConfig(old, kubespawner.SchemeSafe, "alice")
		now := was
		now.Shared = &SharedHome{Claim: "home-nfs", SubPathTemplate: tmpl}
		now.OnLayoutChange = OnLayoutChangeKeep
		if res := Plan(now, &Prior{Config: was}, sharedLive(claims.RWX)); !strings.Contains(findingsText(res.Errors), "holds the homes of the old settings") {
			t.Errorf("%s → %s:\n%s", old, tmpl, findingsText(res.Errors))
		}
	}
	now.Shared = &SharedHome{Claim: "home-nfs", SubPathTemplate: "homes/{username}"}
	if res := Plan(now, &Prior{Config: was}, sharedLive(claims.RWX)); len(res.Errors) != 0 {
		t.Fatalf("home/{username} → homes/{username} (kept): %s", findingsText(res.Errors))
	}
}

func creatingConfig(users ...string) Config {
	cfg := sharedConfig("{username}", kubespawner.SchemeSafe, users...)
	cfg.Shared.Create, cfg.Shared.Capacity = true, "500Gi"
	return cfg
}

func findingAt(fs []claims.Finding, attr, summary string) bool {
	for _, f := range fs {
		if f.Attribute == attr && strings.Contains(f.Summary, summary) {
			return true
		}
	}
	return false
}

// With shared_home.create_claim a missing shared claim is created: the
// plan is safe and says so, and says nothing of directories the hub
// mounts now (a new claim has none). A claim that exists is never
// created over or changed: it is checked as without create_claim.
func TestPlanShared_createClaimWhenMissing(t *testing.T) {
	cfg := creatingConfig("alice")
	res := Plan(cfg, nil, Live{})
	if len(res.Errors) != 0 || !res.CreateShared || res.Class != ClassSafe {
		t.Fatalf("missing, create_claim: create=%v %s\n%s", res.CreateShared, res.Class, findingsText(res.Errors))
	}
	warn := findingsText(res.Warnings)
	for _, want := range []string{"Claim hub/home-nfs does not exist: apply creates it (ReadWriteMany, the cluster's default class, 500Gi", claims.SharedCreatedAnnotation, "never changes or deletes it"} {
		if !strings.Contains(warn, want) {
			t.Errorf("warning lacks %q:\n%s", want, warn)
		}
	}
	if findingAt(res.Warnings, "shared_home.sub_path_template", "cannot see which directories") {
		t.Errorf("a claim the apply creates has no directories to adopt:\n%s", warn)
	}
	// Exists: nothing to create. A new resource is safe all the same, so
	// that a claim made between plan and apply changes nothing planned.
	res = Plan(cfg, nil, sharedLive(claims.RWX))
	if len(res.Errors) != 0 || res.CreateShared || res.Class != ClassSafe || findingAt(res.Warnings, "shared_home.create_claim", "") {
		t.Fatalf("exists, new resource: create=%v %s\n%s%s", res.CreateShared, res.Class, findingsText(res.Errors), findingsText(res.Warnings))
	}
	if res = Plan(cfg, &Prior{Config: cfg}, sharedLive(claims.RWX)); res.CreateShared || res.Class != ClassNone || len(res.Errors)+len(res.Warnings) != 0 {
		t.Fatalf("exists, no change: create=%v %s\n%s%s", res.CreateShared, res.Class, findingsText(res.Errors), findingsText(res.Warnings))
	}
	// Another mode: refused as without create_claim, never created over.
	if res = Plan(cfg, &Prior{Config: cfg}, sharedLive(claims.RWO)); res.CreateShared || !findingAt(res.Errors, "access_mode", "another access mode") {
		t.Fatalf("exists in another mode: create=%v\n%s", res.CreateShared, findingsText(res.Errors))
	}
	// Without create_claim the error says how to have it created.
	cfg.Shared.Create = false
	if res = Plan(cfg, nil, Live{}); res.CreateShared || !strings.Contains(findingsText(res.Errors), "shared_home.create_claim = true") {
		t.Fatalf("missing, no create_claim: create=%v\n%s", res.CreateShared, findingsText(res.Errors))
	}
}

// A shared claim that existed and is gone is never created again: every
// user would start in an empty home. The state's last apply used it, a
// volume was bound to a claim of that name, or a home was moved out of
// it: each alone refuses, naming the claim, what shows it existed and
// what to do.
func TestPlanShared_createClaimNeverRecreatesAClaimThatExisted(t *testing.T) {
	cfg := creatingConfig("alice")
	withoutCreate := cfg
	withoutCreate.Shared = &SharedHome{Claim: "home-nfs", SubPathTemplate: "{username}"}
	moving := cfg
	moving.Shared, moving.SplitFrom = nil, withoutCreate.Shared
	moved := claims.Claim{Namespace: "hub", Name: "claim-bob", UID: "b1", Username: "bob", AccessModes: []string{claims.RWX}, Phase: "Bound",
		Annotations: map[string]string{migration.SplitAnnotation: migration.SplitRecord{User: "bob", Namespace: "hub", Claim: "claim-bob",
			Shared: "home-nfs", SharedUID: "s1", Directory: "bob", Volume: "pv-bob"}.Encode()}}
	for name, tc := range map[string]struct {
		prior *Prior
		live  Live
		want  string
	}{
		"state of the shared layout":       {&Prior{Config: cfg}, Live{}, "the last apply of this resource used it"},
		"state without create_claim":       {&Prior{Config: withoutCreate}, Live{}, "the last apply of this resource used it"},
		"state of a move out of it":        {&Prior{Config: moving}, Live{}, "the last apply of this resource used it"},
		"a volume bound to it, no state":   {nil, Live{FormerSharedVolumes: []string{"pv-home (Released)"}}, "volume pv-home (Released) was bound to a claim of this name"},
		"a home moved out of it, no state": {nil, Live{Claims: []claims.Claim{moved}}, "claim hub/claim-bob was moved out of it (its record names the shared claim, UID s1)"},
	} {
		res := Plan(cfg, tc.prior, tc.live)
		text := findingsText(res.Errors)
		if res.CreateShared || !findingAt(res.Errors, "shared_home.create_claim", "existed and is gone") || !strings.Contains(text, tc.want) ||
			!strings.Contains(text, "Claim hub/home-nfs held every user's home") || !strings.Contains(text, "create the claim bound to it") {
			t.Errorf("%s: create=%v\n%s", name, res.CreateShared, text)
		}
	}
	// Another claim (or namespace) in the state is no sign of this one.
	other := cfg
	other.Shared = &SharedHome{Claim: "home-old", SubPathTemplate: "{username}"}
	other.OnLayoutChange = OnLayoutChangeKeep
	now := cfg
	now.OnLayoutChange = OnLayoutChangeKeep
	if res := Plan(now, &Prior{Config: other}, Live{}); !res.CreateShared || len(res.Errors) != 0 {
		t.Fatalf("a new claim name: create=%v\n%s", res.CreateShared, findingsText(res.Errors))
	}
}

// While homes move out of the shared layout create_claim never creates
// the shared claim: the homes not yet moved are directories of the claim
// that is gone, and a new one holds none of them.
func TestPlanSplit_createClaimRefusedWhileMoving(t *testing.T) {
	cfg := creatingConfig("alice")
	cfg.Shared, cfg.SplitFrom = nil, cfg.Shared
	cfg.OnLayoutChange = OnLayoutChangeMigrate
	res := Plan(cfg, nil, Live{})
	if res.CreateShared || !findingAt(res.Errors, "shared_home.create_claim", "not created while homes move out") ||
		!strings.Contains(findingsText(res.Errors), "Claim hub/home-nfs holds the homes not yet moved") {
		t.Fatalf("create=%v\n%s", res.CreateShared, findingsText(res.Errors))
	}
}
