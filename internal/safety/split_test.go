package safety

import (
	"strings"
	"testing"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/claims"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/kubespawner"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/migration"
)

// splitConfig is the per-user layout moving out of sharedConfig's.
func splitConfig(users ...string) Config {
	cfg := sharedConfig("{username}", kubespawner.SchemeSafe, users...)
	cfg.SplitFrom, cfg.Shared = cfg.Shared, nil
	cfg.StorageClass = "nfs"
	cfg.OnLayoutChange = OnLayoutChangeMigrate
	return cfg
}

// splitClaimOf is the claim a move made for user, bound or not.
func splitClaimOf(user string, bound bool) claims.Claim {
	rec := migration.SplitRecord{User: user, Namespace: "hub", Claim: "claim-" + user, Shared: "home-nfs", SharedUID: "s1", Directory: user,
		Volume: migration.SplitVolumeName("hub", "claim-"+user)}
	c := claims.Claim{Namespace: "hub", Name: rec.Claim, UID: "u-" + user, Username: user, AccessModes: []string{claims.RWX}, ClassNamed: true,
		Requested: "10Gi", RequestedBytes: 10 << 30, Phase: "Pending", Annotations: map[string]string{migration.SplitAnnotation: rec.Encode()}}
	if bound {
		c.Phase, c.VolumeName, c.Capacity = "Bound", rec.Volume, "10Gi"
	}
	return c
}

func planOf(res Result, user string) *UserPlan {
	for i := range res.Users {
		if res.Users[i].User == user {
			return &res.Users[i]
		}
	}
	return nil
}

// From the shared layout, on_layout_change = "migrate" moves every listed
// user's directory into a claim of their own (zero copy), never creates an
// empty claim, and batch_size leaves the rest in their directories.
func TestPlanSplit_movesListedUsersNeverCreatesEmptyClaims(t *testing.T) {
	cfg := splitConfig("alice", "bob", "carol")
	cfg.Migration.BatchSize = 2
	prior := &Prior{Config: sharedConfig("{username}", kubespawner.SchemeSafe, "alice", "bob", "carol")}
	res := Plan(cfg, prior, sharedLive(claims.RWX))
	if len(res.Errors) != 0 || res.Class != ClassSafe {
		t.Fatalf("%s\n%s", res.Class, findingsText(res.Errors))
	}
	for u, want := range map[string]Action{"alice": ActionMigrate, "bob": ActionMigrate, "carol": ActionKeep} {
		up := planOf(res, u)
		if up == nil || up.Action != want {
			t.Fatalf("%s: %+v, want %s", u, up, want)
		}
		if want == ActionMigrate && (up.Method != migration.MethodSplit || up.Volume != migration.SplitVolumeName("hub", "claim-"+u)) {
			t.Errorf("%s: %+v", u, up)
		}
	}
	for up := range res.All() {
		if up.Action == ActionCreate {
			t.Errorf("%s: an empty claim would be created and mounted instead of the directory", up.User)
		}
	}
	// Without migrate, the plan fails naming the users, and creates nothing.
	cfg.OnLayoutChange = OnLayoutChangeFail
	res = Plan(cfg, prior, sharedLive(claims.RWX))
	text := findingsText(res.Errors)
	if !strings.Contains(text, "Listed users' homes are directories") || !strings.Contains(text, "carol") {
		t.Fatalf("fail:\n%s", text)
	}
	for up := range res.All() {
		if up.Action == ActionCreate || up.Action == ActionMigrate {
			t.Errorf("%s: %s without migrate", up.User, up.Action)
		}
	}
}

// A moved home bound to its volume is the user's home: kept, whatever the
// configured class (a moved home's claim has none); one not yet bound
// resumes, or fails the plan when on_layout_change no longer says migrate
// or the per-user layout was left: never planned over as an empty home.
func TestPlanSplit_movedAndUnfinishedHomes(t *testing.T) {
	cfg := splitConfig("alice", "bob")
	live := sharedLive(claims.RWX)
	live.Claims = []claims.Claim{splitClaimOf("alice", true), splitClaimOf("bob", false)}
	prior := &Prior{Config: cfg}
	res := Plan(cfg, prior, live)
	if a, b := planOf(res, "alice"), planOf(res, "bob"); len(res.Errors) != 0 || a.Action != ActionKeep && a.Action != ActionResize || b.Action != ActionMigrate || b.Method != migration.MethodSplit {
		t.Fatalf("%+v\n%+v\n%s", a, b, findingsText(res.Errors))
	}
	for _, now := range []Config{
		func() Config { c := cfg; c.OnLayoutChange = OnLayoutChangeKeep; return c }(),
		func() Config { c := cfg; c.SplitFrom = nil; c.OnLayoutChange = OnLayoutChangeKeep; return c }(),
		func() Config { c := cfg; c.Users = []string{"alice"}; return c }(),
	} {
		res := Plan(now, prior, live)
		if b := planOf(res, "bob"); b == nil || b.Action == ActionCreate || b.Action == ActionMigrate || !strings.Contains(findingsText(res.Errors), "has not finished") {
			t.Fatalf("%+v\n%s", b, findingsText(res.Errors))
		}
	}
	// The template changed mid-move: the record's directory is not the user's.
	now := cfg
	now.SplitFrom = &SharedHome{Claim: "home-nfs", SubPathTemplate: "home/{username}"}
	if res := Plan(now, prior, live); !strings.Contains(findingsText(res.Errors), "began from another directory") {
		t.Fatalf("%s", findingsText(res.Errors))
	}
}

// From the shared layout, a per-user claim that no move made (one kept
// from a layout before the shared one) is what the hub would start
// mounting instead of the user's directory: named, listed or not, and the
// plan fails unless on_layout_change = "keep". From the per-user layout
// those claims were the homes already: nothing moves.
func TestPlanSplit_oldPerUserClaimsAreMoves(t *testing.T) {
	cfg := splitConfig("alice")
	live := sharedLive(claims.RWX)
	old := claims.Claim{Namespace: "hub", Name: "claim-dave", UID: "d", Username: "dave", AccessModes: []string{claims.RWO}, Phase: "Bound", VolumeName: "pv-d"}
	live.Claims = []claims.Claim{old}
	shared := &Prior{Config: sharedConfig("{username}", kubespawner.SchemeSafe, "alice")}
	text := findingsText(Plan(cfg, shared, live).Errors)
	if !strings.Contains(text, `dave: directory "dave" of claim hub/home-nfs → claim hub/claim-dave`) {
		t.Fatalf("%s", text)
	}
	if text := findingsText(Plan(cfg, nil, live).Errors); !strings.Contains(text, "dave:") {
		t.Fatalf("no prior: %s", text)
	}
	perUser := cfg
	perUser.SplitFrom = nil
	if text := findingsText(Plan(cfg, &Prior{Config: perUser}, live).Errors); strings.Contains(text, "→ claim hub/claim-dave") {
		t.Fatalf("from per-user: %s", text)
	}
}

// Leaving the move for the plain per-user layout: listed users still in
// their directory, and every unlisted user never moved, would get a new,
// empty claim; the plan fails unless on_layout_change = "keep". Going back
// to the shared layout compares directories only.
func TestPlanSplit_leavingTheMove(t *testing.T) {
	cfg := splitConfig("alice", "bob")
	live := sharedLive(claims.RWX)
	live.Claims = []claims.Claim{splitClaimOf("alice", true)}
	prior := &Prior{Config: cfg}
	now := cfg
	now.SplitFrom = nil
	now.OnLayoutChange = OnLayoutChangeFail
	text := findingsText(Plan(now, prior, live).Errors)
	if !strings.Contains(text, `bob: directory "bob" of claim hub/home-nfs → claim hub/claim-bob`) || strings.Contains(text, "alice:") || !strings.Contains(text, "never moved") {
		t.Fatalf("%s", text)
	}
	back := sharedConfig("{username}", kubespawner.SchemeSafe, "alice", "bob")
	if res := Plan(back, prior, live); len(res.Errors) != 0 {
		t.Fatalf("back to shared: %s", findingsText(res.Errors))
	}
	back.Shared = &SharedHome{Claim: "home-nfs", SubPathTemplate: "home/{username}"}
	if res := Plan(back, prior, live); !strings.Contains(findingsText(res.Errors), "bob:") {
		t.Fatalf("back to shared, other template: %s", findingsText(res.Errors))
	}
}

// A moved home's claim is never resized: its volume is a directory of the
// shared file system (a static volume the API would refuse to expand).
func TestPlanSplit_movedHomeKeepsItsSize(t *testing.T) {
	cfg := splitConfig("alice")
	cfg.Capacity, cfg.CapacityBytes = "20Gi", 20<<30
	live := sharedLive(claims.RWX)
	live.Claims = []claims.Claim{splitClaimOf("alice", true)}
	res := Plan(cfg, &Prior{Config: splitConfig("alice")}, live)
	if a := planOf(res, "alice"); len(res.Errors) != 0 || a == nil || a.Action != ActionKeep {
		t.Fatalf("%+v\n%s", a, findingsText(res.Errors))
	}
}

// Starting the move with no user to move yet changes the hub's settings:
// the plan is safe, not none.
func TestPlanSplit_startingTheMoveIsAChange(t *testing.T) {
	shared := directoryView(splitConfig()) // the same settings, in the shared layout
	res := Plan(splitConfig(), &Prior{Config: shared}, sharedLive(claims.RWX))
	if len(res.Errors) != 0 || res.Class != ClassSafe {
		t.Fatalf("%s %s", res.Class, findingsText(res.Errors))
	}
	if res := Plan(splitConfig(), &Prior{Config: splitConfig()}, sharedLive(claims.RWX)); res.Class != ClassNone {
		t.Fatalf("no change: %s", res.Class)
	}
}

// No rebind while homes move out of the shared layout: in its window (the
// claim deleted, not yet made again) the hub would mount the user's
// directory, and what the user wrote there would not be in the rebound home.
func TestPlanSplit_noRebindWhileMoving(t *testing.T) {
	cfg := splitConfig("dave")
	cfg.StorageClass = ""
	cfg.OnModeChange = OnModeChangeMigrate
	cfg.Migration.Method = migration.MethodRebind
	live := sharedLive(claims.RWX)
	live.Claims = []claims.Claim{{Namespace: "hub", Name: "claim-dave", UID: "d", Username: "dave", AccessModes: []string{claims.RWO}, Phase: "Bound", VolumeName: "pv-d"}}
	live.Volumes = map[string]Volume{"pv-d": {CSIDriver: "driver.longhorn.io"}}
	res := Plan(cfg, &Prior{Config: cfg}, live)
	if d := planOf(res, "dave"); d == nil || d.Action == ActionMigrate || !strings.Contains(findingsText(res.Errors), "moving out of the shared layout") {
		t.Fatalf("%+v\n%s", d, findingsText(res.Errors))
	}
	cfg.SplitFrom = nil
	if d := planOf(Plan(cfg, &Prior{Config: cfg}, live), "dave"); d == nil || d.Action != ActionMigrate || d.Method != migration.MethodRebind {
		t.Fatalf("per-user layout: %+v", d)
	}
}

// Back to the shared layout from the move: a moved home whose directory
// is the user's holds the same files, but a claim no move made (or one
// moved from another directory) is a home the hub stops mounting: named,
// listed or not, and the plan fails unless on_layout_change = "keep".
func TestPlanSplit_backToSharedNamesClaimsNoMoveMade(t *testing.T) {
	move := splitConfig("alice", "bob")
	live := sharedLive(claims.RWX)
	dave := claims.Claim{Namespace: "hub", Name: "claim-dave", UID: "d", Username: "dave", AccessModes: []string{claims.RWX}, Phase: "Bound", VolumeName: "pv-d"}
	live.Claims = []claims.Claim{splitClaimOf("alice", true), dave}
	back := sharedConfig("{username}", kubespawner.SchemeSafe, "alice", "bob")
	res := Plan(back, &Prior{Config: move}, live)
	text := findingsText(res.Errors)
	if !strings.Contains(text, `dave: claim hub/claim-dave → directory "dave" of claim hub/home-nfs (a claim no move made`) || strings.Contains(text, "alice:") {
		t.Fatalf("%s", text)
	}
	back.OnLayoutChange = OnLayoutChangeKeep
	if res := Plan(back, &Prior{Config: move}, live); len(res.Errors) != 0 || !strings.Contains(findingsText(res.Warnings), "dave: claim hub/claim-dave") {
		t.Fatalf("keep: %s\n%s", findingsText(res.Errors), findingsText(res.Warnings))
	}
}

// While moving, a claim no move made (created by hand since the move
// began, say) is what the hub mounts instead of the user's directory: the
// plan names it. It is a warning, since a claim kept when the move began
// is expected there.
func TestPlanSplit_claimNoMoveMadeIsNamedWhileMoving(t *testing.T) {
	cfg := splitConfig("alice", "bob")
	live := sharedLive(claims.RWX)
	alice := claims.Claim{Namespace: "hub", Name: "claim-alice", UID: "a", Username: "alice", AccessModes: []string{claims.RWX}, StorageClass: "nfs", ClassNamed: true,
		Requested: "10Gi", RequestedBytes: 10 << 30, Capacity: "10Gi", Phase: "Bound", VolumeName: "pv-a"}
	live.Claims = []claims.Claim{alice, splitClaimOf("bob", true)}
	res := Plan(cfg, &Prior{Config: cfg}, live)
	if len(res.Errors) != 0 {
		t.Fatalf("%s", findingsText(res.Errors))
	}
	text := findingsText(res.Warnings)
	if !strings.Contains(text, "Claims no move made are mounted") || !strings.Contains(text, `alice: directory "alice" of claim hub/home-nfs → claim hub/claim-alice`) || strings.Contains(text, "bob:") {
		t.Fatalf("%s", text)
	}
}

// From the shared layout, a claim labelled with the user under another
// name (KubeSpawner remembers the name it mounted: an older scheme's) is
// one the hub would mount instead of the directory: named as a move.
func TestPlanSplit_rememberedClaimIsAMove(t *testing.T) {
	cfg := splitConfig("alice")
	live := sharedLive(claims.RWX)
	live.Claims = []claims.Claim{{Namespace: "hub", Name: "claim-alice-old", UID: "a", Username: "alice", AccessModes: []string{claims.RWO}, Phase: "Bound", VolumeName: "pv-a"}}
	text := findingsText(Plan(cfg, &Prior{Config: directoryView(cfg)}, live).Errors)
	if !strings.Contains(text, `alice: directory "alice" of claim hub/home-nfs → claim hub/claim-alice-old`) {
		t.Fatalf("%s", text)
	}
}

// A sub-path template that gives named servers directories of their own,
// with a claim template that gives them the default server's claim: once
// the default home is moved, named servers would mount it.
func TestPlanSplit_namedServersKeepTheirDirectories(t *testing.T) {
	cfg := splitConfig("alice")
	cfg.SplitFrom.SubPathTemplate = "{user_server}"
	prior := &Prior{Config: directoryView(cfg)}
	if text := findingsText(Plan(cfg, prior, sharedLive(claims.RWX)).Errors); !strings.Contains(text, "Named servers would mount the default server's home") {
		t.Fatalf("%s", text)
	}
	cfg.NameTemplate = "claim-{user_server}"
	prior = &Prior{Config: directoryView(cfg)}
	if text := findingsText(Plan(cfg, prior, sharedLive(claims.RWX)).Errors); strings.Contains(text, "Named servers") {
		t.Fatalf("claim-{user_server}: %s", text)
	}
	cfg.NameTemplate, cfg.SplitFrom.SubPathTemplate = "claim-{username}", "home/{username}"
	prior = &Prior{Config: directoryView(cfg)}
	if text := findingsText(Plan(cfg, prior, sharedLive(claims.RWX)).Errors); strings.Contains(text, "Named servers") {
		t.Fatalf("home/{username}: %s", text)
	}
}

// A rebind an earlier apply started, found while homes move: not
// continued while its old claim is there (its window would give the user
// the directory), finished with a warning once the claim is gone.
func TestPlanSplit_rebindInProgressWhileMoving(t *testing.T) {
	cfg := splitConfig("dave")
	cfg.StorageClass = ""
	ref := claims.Ref{Namespace: "hub", Name: "claim-dave"}
	live := sharedLive(claims.RWX)
	live.Claims = []claims.Claim{{Namespace: "hub", Name: "claim-dave", UID: "d", Username: "dave", AccessModes: []string{claims.RWO}, Phase: "Bound", VolumeName: "pv-d"}}
	live.InProgress = map[claims.Ref]InProgress{ref: {Volume: "pv-d", Record: migration.Record{Step: migration.StepRetained, User: "dave", Claim: "claim-dave", Namespace: "hub",
		From: []string{claims.RWO}, To: claims.RWX, ReclaimPolicy: "Delete", Requested: "10Gi"}}}
	res := Plan(cfg, &Prior{Config: cfg}, live)
	if d := planOf(res, "dave"); d == nil || d.Action == ActionMigrate || !strings.Contains(findingsText(res.Errors), "A rebind is in progress while homes move") {
		t.Fatalf("%+v\n%s", d, findingsText(res.Errors))
	}
	live.Claims = nil
	res = Plan(cfg, &Prior{Config: cfg}, live)
	if d := planOf(res, "dave"); d == nil || d.Action != ActionMigrate || d.Method != migration.MethodRebind || !strings.Contains(findingsText(res.Warnings), `directory "dave" of claim hub/home-nfs`) {
		t.Fatalf("%+v\n%s\n%s", d, findingsText(res.Errors), findingsText(res.Warnings))
	}
}

// copyClaimOf is the claim a move by copy made for user, marked copied or not.
func copyClaimOf(user string, copied bool) claims.Claim {
	rec := migration.SplitRecord{User: user, Namespace: "hub", Claim: "claim-" + user, Shared: "home-nfs", SharedUID: "s1", Directory: user, Method: migration.MethodDirectoryCopy}
	c := claims.Claim{Namespace: "hub", Name: rec.Claim, UID: "u-" + user, Username: user, AccessModes: []string{claims.RWX}, StorageClass: "nfs", ClassNamed: true,
		Requested: "10Gi", RequestedBytes: 10 << 30, Capacity: "10Gi", Phase: "Bound", VolumeName: "pvc-" + user,
		Annotations: map[string]string{migration.SplitAnnotation: rec.Encode()}}
	if copied {
		c.Annotations[migration.SplitCopiedAnnotation] = c.UID
	}
	return c
}

// A directory moves zero copy where the shared volume can serve it as a
// volume of its own, by a copy where it cannot or where migration.method
// says "copy"; a rebind cannot move a directory.
func TestPlanSplit_directoryCopyWhereNoSplit(t *testing.T) {
	cfg := splitConfig("alice")
	cfg.Migration.CopyImage = "rsync:3"
	prior := &Prior{Config: directoryView(cfg)}
	method := func(cfg Config, src migration.VolumeSource) (migration.Method, string) {
		live := sharedLive(claims.RWX)
		live.SharedSource = &src
		res := Plan(cfg, prior, live)
		a := planOf(res, "alice")
		if a == nil {
			t.Fatalf("no plan for alice: %s", findingsText(res.Errors))
		}
		return a.Method, findingsText(res.Errors)
	}
	longhorn := migration.VolumeSource{CSI: &migration.CSISource{Driver: "driver.longhorn.io", Handle: "pvc-1"}}
	host := migration.VolumeSource{HostPath: "/srv/homes"}
	if m, errs := method(cfg, longhorn); m != migration.MethodDirectoryCopy || errs != "" {
		t.Fatalf("longhorn: %s %s", m, errs)
	}
	if m, errs := method(cfg, host); m != migration.MethodSplit || errs != "" {
		t.Fatalf("host path: %s %s", m, errs)
	}
	cfg.Migration.Method = migration.MethodCopy
	if m, _ := method(cfg, host); m != migration.MethodDirectoryCopy {
		t.Fatalf("method copy: %s", m)
	}
	cfg.Migration.CopyImage = ""
	if m, errs := method(cfg, host); m != migration.MethodDirectoryCopy || !strings.Contains(errs, "Homes in directories need a copy image") {
		t.Fatalf("no copy image: %s %s", m, errs)
	}
	if a := planOf(Plan(cfg, prior, sharedLive(claims.RWX)), "alice"); a.Action == ActionMigrate {
		t.Fatalf("no copy image: %+v", a)
	}
	cfg.Migration.Method = migration.MethodRebind
	if m, errs := method(cfg, host); m == migration.MethodSplit || m == migration.MethodDirectoryCopy || !strings.Contains(errs, "A rebind cannot move a directory") {
		t.Fatalf("method rebind: %s %s", m, errs)
	}
}

// A directory moves by a copy only once the hub runs the move's layout
// with the claim's name (the prior state's configuration): a hub of the
// shared layout mounts the directory while the copy runs, one of the
// per-user layout the claim being copied, one of another template another
// claim; with no state the hub's layout is not known. The plan leaves the
// copy to a later apply, saying so.
func TestPlanSplit_directoryCopyWaitsForTheHubOfTheMove(t *testing.T) {
	cfg := splitConfig("alice")
	cfg.Migration.Method, cfg.Migration.CopyImage = migration.MethodCopy, "rsync:3"
	per := cfg
	per.SplitFrom = nil
	other := cfg
	other.NameTemplate = "home-{username}"
	for _, tc := range []struct {
		name  string
		prior *Prior
		now   bool
	}{
		{"no state", nil, false},
		{"the shared layout", &Prior{Config: directoryView(cfg)}, false},
		{"the per-user layout", &Prior{Config: per}, false},
		{"the move with another claim template", &Prior{Config: other}, false},
		{"the move", &Prior{Config: cfg, HubSwitched: true}, true},
	} {
		res := Plan(cfg, tc.prior, sharedLive(claims.RWX))
		a := planOf(res, "alice")
		switch {
		case len(res.Errors) > 0:
			t.Errorf("%s: %s", tc.name, findingsText(res.Errors))
		case tc.now && (a.Action != ActionMigrate || a.Method != migration.MethodDirectoryCopy):
			t.Errorf("%s: %+v", tc.name, a)
		case !tc.now && (a.Action != ActionKeep || !strings.Contains(a.Reason, "copied by a later apply")):
			t.Errorf("%s: %+v", tc.name, a)
		}
	}
	// Named servers that would keep the directory are refused before the
	// first apply, not after it.
	cfg.NameTemplate = "claim-{user_server}"
	if text := findingsText(Plan(cfg, &Prior{Config: directoryView(cfg)}, sharedLive(claims.RWX)).Errors); !strings.Contains(text, "Named servers would keep the directory a copy leaves behind") {
		t.Fatalf("named servers: %s", text)
	}
}

// An unfinished move by copy made a claim and no volume: the plan that
// refuses to leave it says to undo it by deleting the claim, and names no
// volume.
func TestPlanSplit_unfinishedCopyUndoNamesTheClaimOnly(t *testing.T) {
	live := sharedLive(claims.RWX)
	live.Claims = []claims.Claim{copyClaimOf("bob", false)}
	cfg := splitConfig("bob")
	cfg.OnLayoutChange = OnLayoutChangeFail
	text := findingsText(Plan(cfg, &Prior{Config: cfg}, live).Errors)
	if !strings.Contains(text, "undo it: delete claim hub/claim-bob (it holds a copy") || strings.Contains(text, "volume )") || strings.Contains(text, "volume  ") {
		t.Fatalf("%s", text)
	}
}

// A copy not yet marked resumes (the hub refuses the user meanwhile); one
// marked copied is the user's home, and its class is the configured one.
// Back to the shared layout, or into the move again from it, a copied
// claim is not the directory: named.
func TestPlanSplit_directoryCopyResumesAndIsNamedWhenLeft(t *testing.T) {
	cfg := splitConfig("alice", "bob")
	cfg.Migration.CopyImage = "rsync:3"
	live := sharedLive(claims.RWX)
	live.Claims = []claims.Claim{copyClaimOf("alice", true), copyClaimOf("bob", false)}
	res := Plan(cfg, &Prior{Config: cfg, HubSwitched: true}, live)
	a, b := planOf(res, "alice"), planOf(res, "bob")
	if len(res.Errors) != 0 || a.Action != ActionKeep || b.Action != ActionMigrate || b.Method != migration.MethodDirectoryCopy {
		t.Fatalf("%+v\n%+v\n%s", a, b, findingsText(res.Errors))
	}
	back := sharedConfig("{username}", kubespawner.SchemeSafe, "alice", "bob")
	text := findingsText(Plan(back, &Prior{Config: cfg, HubSwitched: true}, live).Errors)
	if !strings.Contains(text, "alice: claim hub/claim-alice → directory \"alice\" of claim hub/home-nfs (copied from directory") || strings.Contains(text, "bob:") {
		t.Fatalf("back: %s", text)
	}
	text = findingsText(Plan(cfg, &Prior{Config: back}, live).Errors)
	if !strings.Contains(text, "alice: directory \"alice\" of claim hub/home-nfs → claim hub/claim-alice (a copy of directory") || strings.Contains(text, "bob:") {
		t.Fatalf("from shared: %s", text)
	}
}

// A move by copy with named servers on the default server's directory
// but claims of their own: after the copy they would mount the stale
// directory. Refused; zero copy (the same files) is not.
func TestPlanSplit_directoryCopyNamedServersShareTheClaim(t *testing.T) {
	cfg := splitConfig("alice")
	cfg.Migration.CopyImage = "rsync:3"
	cfg.NameTemplate = "claim-{user_server}"
	prior := &Prior{Config: cfg, HubSwitched: true}
	live := sharedLive(claims.RWX)
	live.SharedSource = &migration.VolumeSource{CSI: &migration.CSISource{Driver: "driver.longhorn.io", Handle: "pvc-1"}}
	if text := findingsText(Plan(cfg, prior, live).Errors); !strings.Contains(text, "Named servers would keep the directory a copy leaves behind") {
		t.Fatalf("%s", text)
	}
	live.SharedSource = &migration.VolumeSource{HostPath: "/srv/homes"}
	if text := findingsText(Plan(cfg, prior, live).Errors); text != "" {
		t.Fatalf("zero copy: %s", text)
	}
	cfg.NameTemplate = "claim-{username}"
	live.SharedSource = &migration.VolumeSource{CSI: &migration.CSISource{Driver: "driver.longhorn.io", Handle: "pvc-1"}}
	if text := findingsText(Plan(cfg, &Prior{Config: cfg, HubSwitched: true}, live).Errors); text != "" {
		t.Fatalf("claim-{username}: %s", text)
	}
	// Copies done, then the template changed: the named servers would mount
	// the directory left behind, whether or not this plan copies anyone.
	cfg.NameTemplate = "claim-{user_server}"
	live.Claims = []claims.Claim{copyClaimOf("alice", true)}
	if text := findingsText(Plan(cfg, &Prior{Config: cfg, HubSwitched: true}, live).Errors); !strings.Contains(text, "Named servers would keep the directory a copy leaves behind") {
		t.Fatalf("after the copies: %s", text)
	}
}

// A copy starts only once the hub has the move's settings (the last apply
// gave them): under the shared layout's hub a user would keep writing in
// the directory while it is copied. From the shared layout the plan keeps
// the users and says so; in the move it copies them.
func TestPlanSplit_directoryCopyWaitsForTheHub(t *testing.T) {
	cfg := splitConfig("alice")
	cfg.Migration.CopyImage, cfg.Migration.Method = "rsync:3", migration.MethodCopy
	// No state, the shared layout's, or the move's from an apply that
	// failed (Terraform then applied nothing that passes the settings on).
	for _, prior := range []*Prior{nil, {Config: directoryView(cfg)}, {Config: cfg}} {
		res := Plan(cfg, prior, sharedLive(claims.RWX))
		if a := planOf(res, "alice"); a == nil || a.Action != ActionKeep || !strings.Contains(findingsText(res.Warnings), "Homes are copied from the next apply on") {
			t.Fatalf("prior %v: %+v\n%s", prior, a, findingsText(res.Warnings))
		}
	}
	if a := planOf(Plan(cfg, &Prior{Config: cfg, HubSwitched: true}, sharedLive(claims.RWX)), "alice"); a == nil || a.Action != ActionMigrate || a.Method != migration.MethodDirectoryCopy {
		t.Fatalf("in the move: %+v", a)
	}
}

// A copy claim made again (the mark of another UID) and a shared claim
// made again since the move began are named and never resumed.
func TestPlanSplit_directoryCopyMadeAgain(t *testing.T) {
	cfg := splitConfig("alice", "bob")
	cfg.Migration.CopyImage = "rsync:3"
	live := sharedLive(claims.RWX)
	restored := copyClaimOf("alice", false)
	restored.Annotations[migration.SplitCopiedAnnotation] = "an-older-uid"
	live.Claims = []claims.Claim{restored, copyClaimOf("bob", false)}
	live.Shared.UID = "s2" // the records say s1
	res := Plan(cfg, &Prior{Config: cfg, HubSwitched: true}, live)
	text := findingsText(res.Errors)
	if a, b := planOf(res, "alice"), planOf(res, "bob"); a.Action == ActionMigrate || b.Action == ActionMigrate ||
		!strings.Contains(text, "A copied home was made again") || !strings.Contains(text, "The shared claim was made again") {
		t.Fatalf("%+v\n%+v\n%s", a, b, text)
	}
	live.Shared.UID = "s1"
	res = Plan(cfg, &Prior{Config: cfg, HubSwitched: true}, live)
	if a, b := planOf(res, "alice"), planOf(res, "bob"); a.Action == ActionMigrate || b.Action != ActionMigrate || !strings.Contains(findingsText(res.Errors), "A copied home was made again") {
		t.Fatalf("%+v\n%+v\n%s", a, b, findingsText(res.Errors))
	}
}

// After the move, in the plain per-user layout, copied claims and named
// servers' own claims are no concern of the named-server check.
func TestPlanSplit_namedServerCheckOnlyWhileMoving(t *testing.T) {
	cfg := splitConfig("alice")
	cfg.SplitFrom, cfg.NameTemplate = nil, "claim-{user_server}"
	live := sharedLive(claims.RWX)
	live.Claims = []claims.Claim{copyClaimOf("alice", true)}
	if text := findingsText(Plan(cfg, &Prior{Config: cfg}, live).Errors); strings.Contains(text, "Named servers") {
		t.Fatalf("%s", text)
	}
}

// A directory a running pod uses is not copied now: with skip_running it
// waits for a later apply without taking a place in batch_size, without it
// the plan fails naming the user.
func TestPlanSplit_directoryCopySkipsDirectoriesInUse(t *testing.T) {
	cfg := splitConfig("alice", "bob", "carol")
	cfg.Migration.CopyImage, cfg.Migration.Method, cfg.Migration.SkipRunning, cfg.Migration.BatchSize = "rsync:3", migration.MethodCopy, true, 1
	live := sharedLive(claims.RWX)
	use := migration.NewDirectoryUse([]string{"alice/notebooks"})
	live.DirectoriesInUse = &use
	res := Plan(cfg, &Prior{Config: cfg, HubSwitched: true}, live)
	if a, b := planOf(res, "alice"), planOf(res, "bob"); len(res.Errors) != 0 || a.Action != ActionKeep || b.Action != ActionMigrate || planOf(res, "carol").Action != ActionKeep {
		t.Fatalf("%+v\n%+v\n%s", a, b, findingsText(res.Errors))
	}
	// A copy under way (its claim made: the hub refuses her) is named.
	live.Claims = []claims.Claim{copyClaimOf("alice", false)}
	if res := Plan(cfg, &Prior{Config: cfg, HubSwitched: true}, live); planOf(res, "alice").Action == ActionMigrate || !strings.Contains(findingsText(res.Warnings), "Copies under way wait for pods") {
		t.Fatalf("under way: %+v\n%s", planOf(res, "alice"), findingsText(res.Warnings))
	}
	live.Claims = nil
	cfg.Migration.SkipRunning = false
	if text := findingsText(Plan(cfg, &Prior{Config: cfg, HubSwitched: true}, live).Errors); !strings.Contains(text, "Homes in use cannot be copied") || !strings.Contains(text, "alice") {
		t.Fatalf("%s", text)
	}
}

// A restored copied claim is never advised deleted, whatever the settings
// (here the move was left: no shared_home); a copy claim being deleted is
// not resumed; a resumed copy needs copy_image.
func TestPlanSplit_directoryCopyClaimsTheCopyCannotGoOnWith(t *testing.T) {
	cfg := splitConfig("alice", "bob", "carol")
	restored := copyClaimOf("alice", false)
	restored.Annotations[migration.SplitCopiedAnnotation] = "an-older-uid"
	going := copyClaimOf("bob", false)
	going.Deleting = true
	live := sharedLive(claims.RWX)
	live.Claims = []claims.Claim{restored, going, copyClaimOf("carol", false)}
	left := cfg
	left.SplitFrom = nil
	res := Plan(left, &Prior{Config: cfg, HubSwitched: true}, live)
	text := findingsText(res.Errors)
	if !strings.Contains(text, "A copied home was made again") || strings.Contains(text, "Or undo it: delete claim hub/claim-alice") {
		t.Fatalf("left the move: %s", text)
	}
	cfg.Migration.CopyImage = ""
	res = Plan(cfg, &Prior{Config: cfg, HubSwitched: true}, live)
	text = findingsText(res.Errors)
	if b, c := planOf(res, "bob"), planOf(res, "carol"); b.Action == ActionMigrate || c.Action == ActionMigrate ||
		!strings.Contains(text, "A claim of a move by copy is being deleted") || !strings.Contains(text, "Homes in directories need a copy image") {
		t.Fatalf("%+v\n%+v\n%s", b, c, text)
	}
}
