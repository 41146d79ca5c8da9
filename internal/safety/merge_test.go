package safety

import (
	"slices"
	"strings"
	"testing"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/claims"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/kubespawner"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/migration"
)

// mergeConfig is the merge of per-user claims into sharedConfig's layout.
func mergeConfig(users ...string) Config {
	cfg := sharedConfig("{username}", kubespawner.SchemeSafe, users...)
	cfg.MergeInto, cfg.Shared = cfg.Shared, nil
	cfg.OnLayoutChange = OnLayoutChangeMigrate
	cfg.Migration = Migration{Method: migration.MethodAuto, SkipRunning: true, CopyImage: "rsync:3"}
	return cfg
}

// perUserOf is the per-user layout the merge starts from.
func perUserOf(users ...string) Config {
	return Config{Namespace: "hub", AccessMode: claims.RWO, Capacity: "10Gi", CapacityBytes: 10 << 30, NameTemplate: "claim-{username}",
		Scheme: kubespawner.SchemeSafe, Users: users, OnModeChange: OnModeChangeFail}
}

// homeClaimOf is user's claim of the per-user layout; merged adds the
// merge's record and, when marked, its mark.
func homeClaimOf(user string, recorded, marked bool) claims.Claim {
	c := claims.Claim{Namespace: "hub", Name: "claim-" + user, UID: "u-" + user, Username: user, AccessModes: []string{claims.RWO},
		Requested: "10Gi", RequestedBytes: 10 << 30, Capacity: "10Gi", Phase: "Bound", VolumeName: "pv-" + user, Annotations: map[string]string{}}
	if recorded {
		rec := migration.MergeRecord{User: user, Namespace: "hub", Claim: c.Name, ClaimUID: c.UID, Shared: "home-nfs", SharedUID: "s1", Directory: user}
		c.Annotations[migration.MergeAnnotation] = rec.Encode()
	}
	if marked {
		c.Annotations[migration.MergedAnnotation] = c.UID
	}
	return c
}

func mergeLive(cs ...claims.Claim) Live {
	live := sharedLive(claims.RWX)
	live.Claims = cs
	live.Mounted = map[claims.Ref]bool{}
	live.DirectoriesInUse = &migration.DirectoryUse{}
	return live
}

func wantActions(t *testing.T, res Result, want map[string]Action) {
	t.Helper()
	for u, a := range want {
		up := planOf(res, u)
		if up == nil || up.Action != a {
			t.Errorf("%s: %+v, want %s", u, up, a)
		}
		if up != nil && a == ActionMigrate && up.Method != migration.MethodMerge {
			t.Errorf("%s: method %s", u, up.Method)
		}
	}
	for up := range res.All() {
		if up.Action == ActionCreate || up.Action == ActionRecreate || up.Action == ActionDeleteSource {
			t.Errorf("%s: %s while homes move into the shared layout (the hub would mount a new claim instead of the directory)", up.User, up.Action)
		}
	}
}

// From the per-user layout, the first apply only gives the hub the
// merge's settings: the hub running now mounts a claim whatever it
// carries, so nothing is copied yet; no claim is created for a listed
// user without one (their home is the directory from now on).
func TestPlanMerge_waitsForTheHubOfTheMerge(t *testing.T) {
	cfg := mergeConfig("alice", "bob", "dora")
	prior := &Prior{Config: perUserOf("alice", "bob", "dora"), Managed: map[string]string{"alice": "claim-alice", "bob": "claim-bob"}, HubSwitched: true}
	res := Plan(cfg, prior, mergeLive(homeClaimOf("alice", false, false), homeClaimOf("bob", false, false)))
	if len(res.Errors) != 0 || res.Class != ClassSafe {
		t.Fatalf("%s\n%s", res.Class, findingsText(res.Errors))
	}
	wantActions(t, res, map[string]Action{"alice": ActionKeep, "bob": ActionKeep, "dora": ActionKeep})
	if w := findingsText(res.Warnings); !strings.Contains(w, "Homes are merged from the next apply on") || !strings.Contains(w, "alice") {
		t.Errorf("warnings:\n%s", w)
	}
	if up := planOf(res, "dora"); !strings.Contains(up.Reason, `directory "dora"`) {
		t.Errorf("dora: %s", up.Reason)
	}
	// The same under a hub whose last apply failed, or with no state.
	prior.Config = mergeConfig("alice", "bob", "dora")
	prior.HubSwitched = false
	wantActions(t, Plan(cfg, prior, mergeLive(homeClaimOf("alice", false, false))), map[string]Action{"alice": ActionKeep})
	wantActions(t, Plan(cfg, nil, mergeLive(homeClaimOf("alice", false, false))), map[string]Action{"alice": ActionKeep})
}

// Under the hub of the merge (or of a move out: the same settings),
// listed users' claims are copied, batch_size per apply; a claim not
// listed, and a named server's, stays mounted.
func TestPlanMerge_copiesUnderTheHubOfTheMerge(t *testing.T) {
	cfg := mergeConfig("alice", "bob", "carol")
	cfg.Migration.BatchSize = 2
	live := mergeLive(homeClaimOf("alice", false, false), homeClaimOf("bob", false, false), homeClaimOf("carol", false, false), homeClaimOf("zed", false, false))
	for name, was := range map[string]Config{"merge": mergeConfig("alice", "bob", "carol"), "move out": splitConfig("alice", "bob", "carol")} {
		res := Plan(cfg, &Prior{Config: was, HubSwitched: true}, live)
		if len(res.Errors) != 0 {
			t.Fatalf("%s: %s", name, findingsText(res.Errors))
		}
		wantActions(t, res, map[string]Action{"alice": ActionMigrate, "bob": ActionMigrate, "carol": ActionKeep, "zed": ActionObserve})
		if up := planOf(res, "carol"); !strings.Contains(up.Reason, "batch_size") {
			t.Errorf("%s: carol: %s", name, up.Reason)
		}
	}
	// A hub whose template names another claim for the user would not
	// refuse the user during the copy.
	was := mergeConfig("alice", "bob", "carol")
	was.NameTemplate = "home-{username}"
	wantActions(t, Plan(cfg, &Prior{Config: was, HubSwitched: true}, live), map[string]Action{"alice": ActionKeep, "bob": ActionKeep})
}

// A merge waits while a pod uses the claim or the directory: left for a
// later apply with skip_running, else the plan fails naming the user; it
// needs a copy image.
func TestPlanMerge_waitsForPodsAndNeedsAnImage(t *testing.T) {
	prior := &Prior{Config: mergeConfig("alice", "bob"), HubSwitched: true}
	live := mergeLive(homeClaimOf("alice", false, false), homeClaimOf("bob", false, false))
	live.Mounted[claims.Ref{Namespace: "hub", Name: "claim-alice"}] = true
	use := migration.NewDirectoryUse([]string{"bob"})
	live.DirectoriesInUse = &use
	cfg := mergeConfig("alice", "bob")
	res := Plan(cfg, prior, live)
	if len(res.Errors) != 0 {
		t.Fatal(findingsText(res.Errors))
	}
	wantActions(t, res, map[string]Action{"alice": ActionKeep, "bob": ActionKeep})
	cfg.Migration.SkipRunning = false
	res = Plan(cfg, prior, live)
	if e := findingsText(res.Errors); !strings.Contains(e, "Homes in use cannot be merged") || !strings.Contains(e, "alice") || !strings.Contains(e, "bob") {
		t.Errorf("errors:\n%s", e)
	}
	cfg = mergeConfig("alice")
	cfg.Migration.CopyImage = ""
	res = Plan(cfg, prior, mergeLive(homeClaimOf("alice", false, false)))
	if e := findingsText(res.Errors); !strings.Contains(e, "Merging homes needs a copy image") {
		t.Errorf("errors:\n%s", e)
	}
}

// A merged claim is kept (the directory is the home); one under way
// resumes while merging, and fails every other plan saying how to finish
// or undo it: the plain per-user layout (the hub would mount it), the
// shared layout (the hub would mount a partial copy), other settings of
// the directory, another shared claim of that name, a claim made again.
func TestPlanMerge_mergedAndUnfinishedClaims(t *testing.T) {
	prior := &Prior{Config: mergeConfig("alice", "bob"), HubSwitched: true}
	live := mergeLive(homeClaimOf("alice", true, true), homeClaimOf("bob", true, false))
	cfg := mergeConfig("alice", "bob")
	cfg.Migration.BatchSize = 1
	res := Plan(cfg, prior, live)
	if len(res.Errors) != 0 {
		t.Fatal(findingsText(res.Errors))
	}
	wantActions(t, res, map[string]Action{"alice": ActionKeep, "bob": ActionMigrate})
	if up := planOf(res, "alice"); !strings.Contains(up.Reason, "merged into directory") {
		t.Errorf("alice: %s", up.Reason)
	}
	fails := func(name string, cfg Config, live Live, want ...string) {
		t.Helper()
		res := Plan(cfg, prior, live)
		e := findingsText(res.Errors)
		for _, w := range want {
			if !strings.Contains(e, w) {
				t.Errorf("%s: want %q in:\n%s", name, w, e)
			}
		}
		for up := range res.All() {
			if up.User == "bob" && up.Action == ActionMigrate {
				t.Errorf("%s: bob's merge goes on", name)
			}
		}
	}
	fails("per-user layout", perUserOf("alice", "bob"), live, "A merge into the shared layout has not finished", "claim-bob", migration.MergeAnnotation)
	shared := sharedConfig("{username}", kubespawner.SchemeSafe, "alice", "bob")
	fails("shared layout", shared, live, "claim hub/claim-bob", "its merge has not finished")
	if e := findingsText(Plan(shared, nil, live).Errors); !strings.Contains(e, "A migration of per-user homes is in progress") || !strings.Contains(e, "claim-bob") {
		t.Errorf("shared layout, no state:\n%s", e)
	}
	moved := mergeConfig("alice", "bob")
	moved.MergeInto = &SharedHome{Claim: "home-nfs", SubPathTemplate: "homes/{username}"}
	fails("another directory", moved, live, "A merge into the shared layout has not finished")
	again := live
	again.Shared = &claims.Claim{Namespace: "hub", Name: "home-nfs", UID: "s2", AccessModes: []string{claims.RWX}, Phase: "Bound"}
	fails("shared claim made again", cfg, again, "The shared claim was made again since a merge began")
	restored := homeClaimOf("bob", true, true)
	restored.UID = "u-bob-2"
	fails("claim made again", cfg, mergeLive(restored), "A merged claim was made again")
	unreadable := homeClaimOf("bob", false, false)
	unreadable.Annotations[migration.MergeAnnotation] = "{"
	fails("unreadable", cfg, mergeLive(unreadable), "A merge record cannot be read")
}

// Leaving the merge: for the shared layout, a claim not merged is a home
// the hub stops mounting (named; only "keep" applies it), a merged one is
// not; for the per-user layout, merged users' homes are directories its
// hub refuses to replace by the stale claim (named; "keep" applies it).
func TestPlanMerge_leavingTheMerge(t *testing.T) {
	prior := &Prior{Config: mergeConfig("alice", "bob"), HubSwitched: true}
	live := mergeLive(homeClaimOf("alice", true, true), homeClaimOf("bob", false, false))
	shared := sharedConfig("{username}", kubespawner.SchemeSafe, "alice", "bob")
	res := Plan(shared, prior, live)
	e := findingsText(res.Errors)
	if !strings.Contains(e, "claim hub/claim-bob") || strings.Contains(e, "claim-alice") {
		t.Errorf("to the shared layout:\n%s", e)
	}
	shared.OnLayoutChange = OnLayoutChangeKeep
	if res := Plan(shared, prior, live); len(res.Errors) != 0 {
		t.Errorf("keep: %s", findingsText(res.Errors))
	}
	// Every claim merged: the shared layout is safe.
	shared.OnLayoutChange = OnLayoutChangeFail
	if res := Plan(shared, prior, mergeLive(homeClaimOf("alice", true, true), homeClaimOf("bob", true, true))); len(res.Errors) != 0 {
		t.Errorf("all merged: %s", findingsText(res.Errors))
	}
	perUser := perUserOf("alice", "bob")
	res = Plan(perUser, prior, live)
	if e := findingsText(res.Errors); !strings.Contains(e, "Merged homes are directories of the shared claim") ||
		!strings.Contains(e, `alice: directory "alice" of claim hub/home-nfs → claim hub/claim-alice`) {
		t.Errorf("to the per-user layout:\n%s", e)
	}
	perUser.OnLayoutChange = OnLayoutChangeKeep
	if res := Plan(perUser, prior, live); len(res.Errors) != 0 {
		t.Errorf("keep: %s", findingsText(res.Errors))
	}
}

// Into the merge straight from the shared layout: every claim of a home
// that exists is one the hub starts mounting instead of the directory.
func TestPlanMerge_fromTheSharedLayoutNamesClaims(t *testing.T) {
	prior := &Prior{Config: sharedConfig("{username}", kubespawner.SchemeSafe, "alice"), HubSwitched: true}
	res := Plan(mergeConfig("alice"), prior, mergeLive(homeClaimOf("alice", false, false)))
	if e := findingsText(res.Errors); !strings.Contains(e, "claim hub/claim-alice") {
		t.Errorf("errors:\n%s", e)
	}
}

// The shared claim must exist; named servers must keep the home they
// share with the default server.
func TestPlanMerge_sharedClaimAndNamedServers(t *testing.T) {
	prior := &Prior{Config: perUserOf("alice")}
	live := mergeLive(homeClaimOf("alice", false, false))
	live.Shared = nil
	if e := findingsText(Plan(mergeConfig("alice"), prior, live).Errors); !strings.Contains(e, "The shared home claim does not exist") {
		t.Errorf("no shared claim:\n%s", e)
	}
	cfg := mergeConfig("alice")
	cfg.MergeInto.SubPathTemplate = "{username}/{servername}"
	if e := findingsText(Plan(cfg, prior, mergeLive(homeClaimOf("alice", false, false))).Errors); !strings.Contains(e, "Named servers would lose the default server's home") {
		t.Errorf("named servers:\n%s", e)
	}
}

// A home that went through the copy migration (its claim carries a copy
// record; the switched copy is the home) is not merged: neither the
// source nor the copy is copied into the directory, and nothing is
// created.
func TestPlanMerge_copiedHomesAreNotMerged(t *testing.T) {
	prior := &Prior{Config: mergeConfig("alice"), HubSwitched: true}
	src := homeClaimOf("alice", false, false)
	src.Annotations[migration.CopyAnnotation] = migration.CopyRecord{Step: migration.StepSwitched, User: "alice", Target: "home-alice", To: claims.RWX}.Encode()
	res := Plan(mergeConfig("alice"), prior, mergeLive(src))
	for up := range res.All() {
		if up.Action == ActionMigrate || up.Action == ActionCreate {
			t.Errorf("%s: %s %s", up.User, up.Action, up.Reason)
		}
	}
}

// Homes moved out of the shared layout and merged back: a claim on the
// very directory (zero copy) holds the same files and is not copied; a
// claim copied out of it is, with a warning that the directory still
// holds the old files (the merge's Job refuses it until someone moves
// them away).
func TestPlanMerge_homesMovedOutBefore(t *testing.T) {
	prior := &Prior{Config: splitConfig("alice", "bob"), HubSwitched: true}
	zero := splitClaimOf("alice", true)
	copied := copyClaimOf("bob", true)
	res := Plan(mergeConfig("alice", "bob"), prior, mergeLive(zero, copied))
	if len(res.Errors) != 0 {
		t.Fatal(findingsText(res.Errors))
	}
	wantActions(t, res, map[string]Action{"alice": ActionKeep, "bob": ActionMigrate})
	if up := planOf(res, "alice"); !strings.Contains(up.Reason, "nothing is copied") {
		t.Errorf("alice: %s", up.Reason)
	}
	if w := findingsText(res.Warnings); !strings.Contains(w, "Directories copied out of still hold the old files") || !strings.Contains(w, "bob") {
		t.Errorf("warnings:\n%s", w)
	}
}

// Found by the adversarial review of merges.

// Named servers with claims of their own (pvc_name_template
// "claim-{user_server}", or z2jh's "claim-{username}{servername}") and one
// directory for all of a user's servers (sub_path_template "{username}",
// z2jh's static subPath default): under the merge's hub a named server with
// no claim (a new one: KubeSpawner creates none) mounts the default
// server's directory, the very directory the merge copies the default
// server's claim into with rsync --delete. The hub refuses only spawns
// whose own claim carries the record, so such a server starts during the
// copy (or after an apply stopped after the record, or between the Job's
// end and the mark), and what it writes there is deleted by the next copy
// Job's --delete. The move out by copy refuses the same templates
// (checkNamedServersOfCopies); the merge must too, before any merge runs.
func TestPlanMerge_namedServersWithOwnClaimsShareTheMergedDirectory(t *testing.T) {
	for _, tmpl := range []string{"claim-{user_server}", "claim-{username}{servername}"} {
		cfg := mergeConfig("alice")
		cfg.NameTemplate = tmpl
		prior := &Prior{Config: cfg, HubSwitched: true}
		res := Plan(cfg, prior, mergeLive(homeClaimOf("alice", false, false)))
		if a := planOf(res, "alice"); len(res.Errors) == 0 && a != nil && a.Action == ActionMigrate {
			t.Errorf("%s: alice %+v merged with no error: alice's named servers without a claim mount directory %q, which the merge fills with rsync --delete",
				tmpl, a, "alice")
		}
	}
}

// A merge runs two Jobs as root (the directory Job and the copy Job), as
// a move out by copy does: a namespace that enforces Pod Security's
// restricted level refuses their pods, and the plan is to say so before
// apply (DESIGN: "A copy's Job is admitted, or the plan says it would not
// be"). JobNamespaces leaves merges out, so CheckPodSecurity never sees
// them: the plan says safe and the apply waits for a Job that never runs.
func TestPlanMerge_podSecurityCoversMergeJobs(t *testing.T) {
	cfg := mergeConfig("alice")
	res := Plan(cfg, &Prior{Config: cfg, HubSwitched: true}, mergeLive(homeClaimOf("alice", false, false)))
	if a := planOf(res, "alice"); a == nil || a.Action != ActionMigrate || a.Method != migration.MethodMerge {
		t.Fatalf("alice: %+v\n%s", a, findingsText(res.Errors))
	}
	if ns := JobNamespaces(&res); !slices.Contains(ns, "hub") {
		t.Errorf("JobNamespaces = %v: the merge's Jobs run in namespace hub", ns)
	}
	CheckPodSecurity(&res, map[string]PodSecurity{"hub": {Enforce: PodSecurityRestricted}})
	if !strings.Contains(findingsText(res.Errors), "hub") {
		t.Errorf("restricted namespace hub: no error\n%s", findingsText(res.Errors))
	}
}

// A user moved out of the shared layout by a copy under slug_scheme
// "escape" left their old directory in the shared claim ("bob-2d" for
// user "bob-"). Merging back under "safe" copies bob-'s claim into
// "bob--..."; user "bob-2d", listed and without a claim of their own, is
// planned into directory "bob-2d": bob-'s old home. The merge's hub mounts
// it at bob-2d's next spawn (no claim: the directory), a home that is not
// theirs. The plan names the stale directory only when it is the copied
// user's own directory under the new settings (staleDirectories); a
// directory a copy left must never be another user's.
func TestPlanMerge_directoryACopyLeftIsGivenToAnotherUser(t *testing.T) {
	cfg := mergeConfig("bob-", "bob-2d")
	old, err := kubespawner.Expand("{username}", "bob-", "", kubespawner.SchemeEscape)
	if err != nil || old != "bob-2d" {
		t.Fatalf("bob- under escape: %q %v", old, err)
	}
	if d, _ := kubespawner.Expand("{username}", "bob-2d", "", kubespawner.SchemeSafe); d != old {
		t.Fatalf("bob-2d under safe: %q", d)
	}
	name, _ := kubespawner.Expand(cfg.NameTemplate, "bob-", "", cfg.Scheme)
	copied := copyClaimOf("bob-", true)
	copied.Name = name
	rec := migration.SplitRecord{User: "bob-", Namespace: "hub", Claim: name, Shared: "home-nfs", SharedUID: "s1", Directory: old, Method: migration.MethodDirectoryCopy}
	copied.Annotations[migration.SplitAnnotation] = rec.Encode()
	perUser := perUserOf("bob-", "bob-2d")
	for _, prior := range []*Prior{{Config: perUser, HubSwitched: true}, {Config: cfg, HubSwitched: true}} {
		res := Plan(cfg, prior, mergeLive(copied))
		b := planOf(res, "bob-2d")
		all := findingsText(res.Errors) + findingsText(res.Warnings)
		if b != nil && b.Live == nil && !strings.Contains(all, "bob-2d") {
			t.Errorf("prior layout %v: bob-2d is planned into directory %q, which holds bob-'s home as a copy left it, and no finding names it:\n%s",
				prior.Config.MergeInto != nil, old, all)
		}
	}
}

// Without a state: with merge records on the shared claim the hub has the
// merge's settings (the state was removed mid-merge), so its claims are
// homes it mounts now and the merge resumes; with none, the hub may mount
// the directories, so each claim is named, and the plan says which layout
// to adopt first.
func TestPlanMerge_withoutAState(t *testing.T) {
	res := Plan(mergeConfig("alice", "bob"), nil, mergeLive(homeClaimOf("alice", true, true), homeClaimOf("bob", false, false)))
	if len(res.Errors) != 0 {
		t.Fatalf("mid-merge: %s", findingsText(res.Errors))
	}
	wantActions(t, res, map[string]Action{"alice": ActionKeep, "bob": ActionKeep})
	res = Plan(mergeConfig("alice", "bob"), nil, mergeLive(homeClaimOf("bob", false, false)))
	if e := findingsText(res.Errors); !strings.Contains(e, "claim hub/claim-bob") || !strings.Contains(e, "apply the per-user layout first") {
		t.Errorf("no merge record:\n%s", e)
	}
}

// A claim a move out of the shared layout made zero copy is a volume on
// the user's directory: merging it into that very directory copies
// nothing (the directory Job would refuse the directory, which holds the
// claim's files). One on another directory, of another shared claim of
// that name, or made by a copy is merged as any claim.
func TestPlanMerge_aClaimMovedOutZeroCopyIsItsDirectory(t *testing.T) {
	prior := &Prior{Config: splitConfig("alice", "bob", "carol", "dan"), HubSwitched: true}
	moved := splitClaimOf("alice", true)
	elsewhere := splitClaimOf("bob", true)
	rec, _ := migration.DecodeSplitRecord(elsewhere.Annotations[migration.SplitAnnotation])
	rec.Directory = "homes_v1/bob"
	elsewhere.Annotations[migration.SplitAnnotation] = rec.Encode()
	before := splitClaimOf("carol", true)
	rec, _ = migration.DecodeSplitRecord(before.Annotations[migration.SplitAnnotation])
	rec.SharedUID = "s0"
	before.Annotations[migration.SplitAnnotation] = rec.Encode()
	copied := splitClaimOf("dan", false)
	rec, _ = migration.DecodeSplitRecord(copied.Annotations[migration.SplitAnnotation])
	rec.Method, rec.Volume = migration.MethodDirectoryCopy, ""
	copied.Annotations[migration.SplitAnnotation], copied.Annotations[migration.SplitCopiedAnnotation] = rec.Encode(), copied.UID
	copied.Phase, copied.VolumeName = "Bound", "pv-dan"
	res := Plan(mergeConfig("alice", "bob", "carol", "dan"), prior, mergeLive(moved, elsewhere, before, copied))
	if len(res.Errors) != 0 {
		t.Fatal(findingsText(res.Errors))
	}
	wantActions(t, res, map[string]Action{"alice": ActionKeep, "bob": ActionMigrate, "carol": ActionMigrate, "dan": ActionMigrate})
	if up := planOf(res, "alice"); !strings.Contains(up.Reason, "nothing is copied") {
		t.Errorf("alice: %s", up.Reason)
	}
	if !InMergeDirectory(mergeConfig("alice"), "alice", &moved, "") || InMergeDirectory(mergeConfig("alice"), "alice", &moved, "s0") ||
		InMergeDirectory(splitConfig("alice"), "alice", &moved, "") {
		t.Error("InMergeDirectory")
	}
}

// A named server with a claim of its own (claim-{user_server}) and the
// default server's directory ({username}) would mount, until it has its
// claim, the directory the default server's claim is merged into.
func TestPlanMerge_namedServersOfTheirOwnClaimInTheMergedDirectory(t *testing.T) {
	prior := &Prior{Config: perUserOf("alice")}
	cfg := mergeConfig("alice")
	cfg.NameTemplate = "claim-{user_server}"
	want := "Named servers would write into a directory being merged"
	if e := findingsText(Plan(cfg, prior, mergeLive(homeClaimOf("alice", false, false))).Errors); !strings.Contains(e, want) || !strings.Contains(e, `"{user_server}"`) {
		t.Errorf("claim-{user_server} with {username}:\n%s", e)
	}
	for _, tmpl := range []string{"{user_server}", "{username}--{servername}"} {
		cfg.MergeInto.SubPathTemplate = tmpl
		if e := findingsText(Plan(cfg, prior, mergeLive(homeClaimOf("alice", false, false))).Errors); strings.Contains(e, want) {
			t.Errorf("claim-{user_server} with %s:\n%s", tmpl, e)
		}
	}
	if e := findingsText(Plan(mergeConfig("alice"), prior, mergeLive(homeClaimOf("alice", false, false))).Errors); strings.Contains(e, want) {
		t.Errorf("claim-{username} with {username}:\n%s", e)
	}
}

// A claim moved out zero copy is a volume on its directory: a pod on that
// directory (a server started before the move) writes into the claim, and
// its merge into another directory waits for it.
func TestPlanMerge_waitsForAPodOnTheClaimsDirectory(t *testing.T) {
	prior := &Prior{Config: mergeConfig("alice"), HubSwitched: true}
	moved := splitClaimOf("alice", true)
	rec, _ := migration.DecodeSplitRecord(moved.Annotations[migration.SplitAnnotation])
	rec.Directory = "homes_v1/alice"
	moved.Annotations[migration.SplitAnnotation] = rec.Encode()
	live := mergeLive(moved)
	wantActions(t, Plan(mergeConfig("alice"), prior, live), map[string]Action{"alice": ActionMigrate})
	use := migration.NewDirectoryUse([]string{"homes_v1/alice"})
	live.DirectoriesInUse = &use
	res := Plan(mergeConfig("alice"), prior, live)
	wantActions(t, res, map[string]Action{"alice": ActionKeep})
	if up := planOf(res, "alice"); !strings.Contains(up.Reason, "a running pod uses") {
		t.Errorf("alice: %s", up.Reason)
	}
}

// A directory a move out left may hold another user's directory under the
// merge's template ("old/bob" lies in user "old"'s "old"): refused; one no
// name can reach ("homes_v1/bob": "_" is in no slug) is not.
func TestPlanMerge_movedOutOfADirectoryAnotherUserCanReach(t *testing.T) {
	prior := &Prior{Config: mergeConfig("bob"), HubSwitched: true}
	for dir, refused := range map[string]bool{"old/bob": true, "homes_v1/bob": false, "bob": false} {
		c := splitClaimOf("bob", true)
		rec, _ := migration.DecodeSplitRecord(c.Annotations[migration.SplitAnnotation])
		rec.Directory = dir
		c.Annotations[migration.SplitAnnotation] = rec.Encode()
		e := findingsText(Plan(mergeConfig("bob"), prior, mergeLive(c)).Errors)
		if got := strings.Contains(e, "Homes were moved out of other directories"); got != refused {
			t.Errorf("%s: refused %v, want %v:\n%s", dir, got, refused, e)
		}
	}
}

// Found by the second adversarial review of merges.

// Without a state, a merge record on the shared claim is taken for proof
// that the hub runs the merge's settings (splitMoves: moving), and every
// claim without a record is then skipped as "planned as a home". But the
// same cluster is what the plain shared layout leaves after a merge was
// left with on_layout_change = "keep" (TestPlanMerge_leavingTheMerge
// allows it): alice merged, bob's claim kept unmounted, bob working in his
// directory since. Here a running pod even mounts bob's directory of the
// shared claim, which the merge's hub never gives bob (he has a claim, not
// merged): the hub is the shared layout's. The plan says no error, and
// its only word about bob is that his claim is copied by a later apply;
// the apply gives the hub the fallback, and bob's next spawn mounts his
// stale claim instead of the directory he works in (DESIGN: "with no
// state, a claim that no move made is one the hub would start mounting
// instead of a server's directory ... Each fails unless keep"). The next
// apply's merge then refuses his directory ("holds files already ... Move
// them away (or remove them if they are not needed)"), which holds his
// current work.
func TestPlanMerge_withoutAStateAPodOnADirectory(t *testing.T) {
	live := mergeLive(homeClaimOf("alice", true, true), homeClaimOf("bob", false, false))
	use := migration.NewDirectoryUse([]string{"bob"})
	live.DirectoriesInUse = &use
	res := Plan(mergeConfig("alice", "bob"), nil, live)
	var named []string
	for _, f := range append(append([]claims.Finding{}, res.Errors...), res.Warnings...) {
		if f.Summary != "Homes are merged from the next apply on" && strings.Contains(f.Detail, "claim-bob") {
			named = append(named, f.Summary)
		}
	}
	if len(named) == 0 {
		t.Errorf("no state, bob's claim unmerged and a pod on bob's directory of the shared claim (the hub mounts directories): "+
			"no finding says bob's claim would be mounted instead of his directory; bob: %+v\nerrors:\n%s\nwarnings:\n%s",
			planOf(res, "bob"), findingsText(res.Errors), findingsText(res.Warnings))
	}
}

// 791157d waits for a pod on a zero-copy claim's own directory only when
// that directory is of the shared claim homes merge into. A claim moved
// out zero copy of another shared claim (home-old: the old file system,
// consolidated onto a new one) is a volume on home-old's directory
// "alice"; a server started before that move on home-old at "alice" writes
// into the claim's files. The plan reads which claims running pods mount
// (Live.Mounted holds hub/home-old), yet the merge is planned: the copy
// runs while that server writes on, and what it writes after the copy is
// missing from the merged home (the same loss as seed 22544).
func TestPlanMerge_zeroCopyClaimOfAnotherSharedClaimInUse(t *testing.T) {
	cfg := mergeConfig("alice")
	prior := &Prior{Config: cfg, HubSwitched: true}
	moved := splitClaimOf("alice", true)
	rec, _ := migration.DecodeSplitRecord(moved.Annotations[migration.SplitAnnotation])
	rec.Shared, rec.SharedUID = "home-old", "s0"
	moved.Annotations[migration.SplitAnnotation] = rec.Encode()
	live := mergeLive(moved)
	live.Mounted[claims.Ref{Namespace: "hub", Name: "home-old"}] = true
	res := Plan(cfg, prior, live)
	if up := planOf(res, "alice"); up != nil && up.Action == ActionMigrate {
		t.Errorf("alice's claim is a volume on directory %q of claim hub/home-old, which a running pod mounts; the merge is planned anyway: %s", rec.Directory, up.Reason)
	}
}
