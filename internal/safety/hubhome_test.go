package safety

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/claims"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/kubespawner"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/migration"
)

// hubHomesLive is a deployment moving out of home-nfs ("home/{username}"),
// with a claim for every state the hub distinguishes. The comment on each
// says what the hub does at a spawn now.
func hubHomesLive() []claims.Claim {
	split := func(user string, bound bool) claims.Claim {
		c := splitClaimOf(user, bound)
		rec, _ := migration.DecodeSplitRecord(c.Annotations[migration.SplitAnnotation])
		rec.Directory = "home/" + user
		c.Annotations = map[string]string{migration.SplitAnnotation: rec.Encode()}
		return c
	}
	plain := func(name string, ann map[string]string) claims.Claim {
		return claims.Claim{Namespace: "hub", Name: name, UID: "u-" + name, AccessModes: []string{claims.RWO}, Phase: "Bound", VolumeName: "pv-" + name, Annotations: ann}
	}
	copyOf := func(name, source string, switched bool) claims.Claim {
		c := plain(name, map[string]string{migration.CopyOfAnnotation: source, migration.CopyOfUIDAnnotation: "u-" + source})
		c.Labels = map[string]string{migration.CopyOfLabel: migration.CopyOfLabelValue(source)}
		if switched {
			c.Annotations[migration.CopySwitchedAnnotation] = "true"
		}
		return c
	}
	copyRecord := func(step migration.Step, target string) map[string]string {
		return map[string]string{migration.CopyAnnotation: `{"step":"` + string(step) + `","user":"x","target":"` + target + `","to":"ReadWriteMany"}`}
	}
	alice := split("alice", true)  // moved, zero copy: mounted
	carol := split("carol", false) // being moved: not Bound
	dave := split("dave", true)    // Bound to another volume
	dave.VolumeName = "pv-other"
	frank := split("frank", true) // being deleted
	frank.Deleting = true
	ivy := split("ivy", true) // moved from another directory: mounted, not a move of her directory
	rec, _ := migration.DecodeSplitRecord(ivy.Annotations[migration.SplitAnnotation])
	rec.Directory = "ivy-old"
	ivy.Annotations[migration.SplitAnnotation] = rec.Encode()
	byCopy := func(user string, marked bool) claims.Claim {
		rec := migration.SplitRecord{User: user, Namespace: "hub", Claim: "claim-" + user, Shared: "home-nfs", SharedUID: "s1",
			Directory: "home/" + user, Method: migration.MethodDirectoryCopy}
		c := plain("claim-"+user, map[string]string{migration.SplitAnnotation: rec.Encode()})
		if marked {
			c.Annotations[migration.SplitCopiedAnnotation] = c.UID
		}
		return c
	}
	// Merges back into the shared claim: a record naming recordUID, and
	// the mark when not "".
	merge := func(c claims.Claim, recordUID, mark string) claims.Claim {
		if c.Annotations == nil {
			c.Annotations = map[string]string{}
		}
		rec := migration.MergeRecord{User: "x", Namespace: "hub", Claim: c.Name, ClaimUID: recordUID, Shared: "home-nfs", SharedUID: "s1", Directory: "home/x"}
		c.Annotations[migration.MergeAnnotation] = rec.Encode()
		if mark != "" {
			c.Annotations[migration.MergedAnnotation] = mark
		}
		return c
	}
	merged := func(c claims.Claim) claims.Claim { return merge(c, c.UID, c.UID) }
	yuri := merged(plain("claim-yuri", nil)) // merged, being deleted: stale, the directory
	yuri.Deleting = true
	walt := merged(plain("claim-walt", nil)) // a record that cannot be read
	walt.Annotations[migration.MergeAnnotation] = "{"
	// A mark without record.
	xena := plain("claim-xena", map[string]string{migration.MergedAnnotation: "u-claim-xena"})
	// Merged before its split was Bound: the merge is checked first.
	bea := merged(split("bea", false))
	// A finished split, its merge not marked.
	cy := split("cy", true)
	cy = merge(cy, cy.UID, "")
	gina := byCopy("gina", false) // being copied from her directory
	hank := byCopy("hank", true)  // copied and marked: mounted
	olga := byCopy("olga", true)  // marked with another UID: a claim made again under the name
	olga.UID = "u-other"
	return []claims.Claim{
		{Namespace: "hub", Name: "home-nfs", UID: "s1", AccessModes: []string{claims.RWX}, Phase: "Bound"},
		alice, carol, dave, frank, ivy, gina, hank, olga,
		plain("claim-erin", nil), // a claim no move made: mounted
		// jack's claim is gone; its switched copy is the home.
		copyOf("home-jack", "claim-jack", true),
		// kate's claim is gone; its copy was never switched to.
		copyOf("home-kate", "claim-kate", false),
		// leo's claim was switched to its copy.
		plain("claim-leo", copyRecord(migration.StepSwitched, "home-leo")), copyOf("home-leo", "claim-leo", false),
		// mia's claim is being copied.
		plain("claim-mia", copyRecord(migration.StepCopying, "home-mia")),
		// nina's claim is being rebound.
		func() claims.Claim {
			c := plain("claim-nina", map[string]string{migration.MigratedAnnotation: "rebind from ReadWriteOnce"})
			c.Phase = "Pending"
			return c
		}(),
		// pat's claim carries a record that cannot be read.
		plain("claim-pat", map[string]string{migration.SplitAnnotation: "{"}),
		// quinn's copy has the annotation but not the label the hub looks
		// for: not a copy the hub finds, so the directory.
		func() claims.Claim { c := copyOf("home-quinn", "claim-quinn", true); c.Labels = nil; return c }(),
		merged(plain("claim-sue", nil)),                        // merged: the directory
		merge(plain("claim-tad", nil), "u-claim-tad", ""),      // a merge not marked: the copy may run
		merge(plain("claim-uli", nil), "u-claim-uli", "u-x"),   // a mark of another UID
		merge(plain("claim-vera", nil), "u-x", "u-claim-vera"), // the record names another claim
		yuri, walt, xena, bea, cy,
		// zach's claim was switched to its copy, merged since: the directory.
		plain("claim-zach", copyRecord(migration.StepSwitched, "home-zach")), merged(copyOf("home-zach", "claim-zach", false)),
		// abe's claim is gone; its switched copy was merged: the directory.
		merged(copyOf("home-abe", "claim-abe", true)),
		// A claim of another namespace is not the hub's to read.
		{Namespace: "elsewhere", Name: "claim-rob", Phase: "Bound"},
	}
}

// While homes move out of the shared layout, each user's default server
// finds the home the hub's split_home gives it: the claim when it exists
// and is finished, its switched copy, the directory when there is none or
// when it (or its switched copy) was merged into the directory; the spawn
// refused while a move, a copy, a merge or a rebind is under way.
func TestHubHomes_movingOutOfTheSharedLayout(t *testing.T) {
	cfg := splitConfig()
	cfg.SplitFrom.SubPathTemplate = "home/{username}"
	live := hubHomesLive()
	shared := &live[0]
	ada := "Ada.Lovelace@Example.org"
	users := []string{"alice", "bob", ada, "carol", "dave", "erin", "frank", "gina", "hank", "ivy", "jack", "kate", "leo", "mia", "nina", "olga", "pat", "quinn", "rob",
		"sue", "tad", "uli", "vera", "walt", "xena", "yuri", "zach", "abe", "bea", "cy"}
	got := HubHomes(cfg, users, live, shared)
	adaDir, err := kubespawner.Expand("home/{username}", ada, "", kubespawner.SchemeSafe)
	if err != nil {
		t.Fatal(err)
	}
	if adaDir != "home/ada-lovelace-example-org---ff43bfa1" { // KubeSpawner 7's safe slug
		t.Fatalf("KubeSpawner's safe slug of %q: %q", ada, adaDir)
	}
	dir := func(sub string) Home { return Home{Kind: HomeDirectory, Claim: "home-nfs", SubPath: sub} }
	claim := func(name, user string) Home { return Home{Kind: HomeClaim, Claim: name, SubPath: "home/" + user} }
	moved := func(user string, method migration.Method, from string) Home {
		h := claim("claim-"+user, user)
		h.Method, h.MovedFrom, h.Moved = method, from, from == "home/"+user
		return h
	}
	want := map[string]Home{
		"alice": moved("alice", migration.MethodSplit, "home/alice"),
		"bob":   dir("home/bob"),
		ada:     dir(adaDir),
		"erin":  claim("claim-erin", "erin"),
		"hank":  moved("hank", migration.MethodDirectoryCopy, "home/hank"),
		"ivy":   moved("ivy", migration.MethodSplit, "ivy-old"),
		"jack":  claim("home-jack", "jack"),
		"leo":   claim("home-leo", "leo"),
		"quinn": dir("home/quinn"),
		"rob":   dir("home/rob"),
		"sue":   dir("home/sue"),
		"yuri":  dir("home/yuri"),
		"zach":  dir("home/zach"),
		"abe":   dir("home/abe"),
		"bea":   dir("home/bea"),
	}
	refusedWhy := map[string]string{
		"carol": "claim claim-carol is being moved out of the shared claim (Pending, not Bound)",
		"dave":  "claim claim-dave is bound to volume pv-other, not to its move's volume " + migration.SplitVolumeName("hub", "claim-dave"),
		"frank": "claim claim-frank is being deleted",
		"gina":  "claim claim-gina is being copied from its directory of the shared claim",
		"kate":  "claim claim-kate is gone and its copy home-kate was not switched to",
		"mia":   "claim claim-mia is being copied to home-mia (step copying)",
		"nina":  "claim claim-nina is being rebound (rebind from ReadWriteOnce)",
		"olga":  "claim claim-olga is being copied from its directory of the shared claim",
		"pat":   "claim claim-pat: its move's record cannot be read",
	}
	for _, u := range []string{"tad", "uli", "vera", "walt", "xena", "cy"} {
		refusedWhy[u] = "claim claim-" + u + " is being merged into its directory of shared claim home-nfs"
	}
	for u, w := range refusedWhy {
		want[u] = Home{Kind: HomeRefused, Claim: "claim-" + u, SubPath: "home/" + u, Reason: w}
	}
	if len(got) != len(users) {
		t.Errorf("%d homes for %d users", len(got), len(users))
	}
	for _, u := range users {
		g, w := got[u], want[u]
		if w.Kind == HomeRefused && g.Kind == HomeRefused && strings.HasPrefix(g.Reason, w.Reason) {
			g.Reason = w.Reason
		}
		if !sameHome(g, w) {
			t.Errorf("%s: %+v\n\twant %+v", u, got[u], w)
		}
	}

	// Without the shared claim, users still in their directory, or merged
	// into it, are refused; moved users keep their claims.
	got = HubHomes(cfg, []string{"alice", "bob", "sue"}, live[1:], nil)
	if !sameHome(got["alice"], want["alice"]) || got["bob"].Kind != HomeRefused || !strings.Contains(got["bob"].Reason, "shared claim home-nfs") ||
		got["sue"].Kind != HomeRefused || !strings.Contains(got["sue"].Reason, "was merged into it and shared claim home-nfs") {
		t.Errorf("no shared claim: %+v", got)
	}
}

// sameHome compares homes, an empty list of earlier places as none.
func sameHome(a, b Home) bool {
	if len(a.EarlierPlaces) == 0 {
		a.EarlierPlaces = nil
	}
	if len(b.EarlierPlaces) == 0 {
		b.EarlierPlaces = nil
	}
	return reflect.DeepEqual(a, b)
}

// After a move by rename a directory home may still be at a place the
// shared claim records: each user's own, expanded, without the directory
// itself; a claim home has none.
func TestHubHomes_earlierPlaces(t *testing.T) {
	cfg := sharedConfig("home/{username}", kubespawner.SchemeSafe)
	shared := &claims.Claim{Namespace: "hub", Name: "home-nfs", UID: "s1", Annotations: map[string]string{
		migration.MovedFromAnnotation: `["{escaped_username}","home/{safe_username}","{escaped_username}"]`}}
	got := HubHomes(cfg, []string{"Ada.X", "bob"}, nil, shared)
	if w := []string{"-41da-2e-58"}; !slices.Equal(got["Ada.X"].EarlierPlaces, w) {
		t.Errorf("Ada.X: %q, want %q", got["Ada.X"].EarlierPlaces, w)
	}
	if w := []string{"bob"}; !slices.Equal(got["bob"].EarlierPlaces, w) || got["bob"].EarlierPlaces == nil {
		t.Errorf("bob: %q, want %q", got["bob"].EarlierPlaces, w)
	}
	if got := HubHomes(cfg, []string{"bob"}, nil, nil); got["bob"].EarlierPlaces == nil || len(got["bob"].EarlierPlaces) != 0 {
		t.Errorf("no shared claim: %#v", got["bob"].EarlierPlaces)
	}
}

// In the shared layout the hub reads no claim: every home is the user's
// directory, whatever claims exist; the scheme and the template are
// KubeSpawner's.
func TestHubHomes_sharedLayout(t *testing.T) {
	live := hubHomesLive()
	for _, scheme := range kubespawner.Schemes() {
		cfg := sharedConfig("home/{username}", scheme)
		users := []string{"alice", "carol", "Ada.Lovelace@Example.org", "user_1"}
		got := HubHomes(cfg, users, live, nil)
		for _, u := range users {
			d, err := kubespawner.Expand("home/{username}", u, "", scheme)
			if err != nil {
				t.Fatal(err)
			}
			if w := (Home{Kind: HomeDirectory, Claim: "home-nfs", SubPath: d}); !sameHome(got[u], w) {
				t.Errorf("%s %s: %+v, want %+v", scheme, u, got[u], w)
			}
		}
	}
}

// A copied home that is a copy the hub finds by its own name: switched,
// or its source's record says switched to it; else refused.
func TestHubHomes_copyMountedByItsName(t *testing.T) {
	cfg := splitConfig()
	cfg.NameTemplate = "home-{username}"
	src := claims.Claim{Namespace: "hub", Name: "claim-zoe", UID: "u-src", Phase: "Bound",
		Annotations: map[string]string{migration.CopyAnnotation: `{"step":"switched","user":"zoe","target":"home-zoe","to":"ReadWriteMany","targetUID":"u-copy"}`}}
	cp := claims.Claim{Namespace: "hub", Name: "home-zoe", UID: "u-copy", Phase: "Bound",
		Annotations: map[string]string{migration.CopyOfAnnotation: "claim-zoe", migration.CopyOfUIDAnnotation: "u-src"}}
	shared := &claims.Claim{Namespace: "hub", Name: "home-nfs"}
	if h := HubHomes(cfg, []string{"zoe"}, []claims.Claim{src, cp}, shared)["zoe"]; h.Kind != HomeClaim || h.Claim != "home-zoe" {
		t.Errorf("switched per its source's record: %+v", h)
	}
	cp.UID = "u-again" // made again after the copy: not the record's target
	if h := HubHomes(cfg, []string{"zoe"}, []claims.Claim{src, cp}, shared)["zoe"]; h.Kind != HomeRefused {
		t.Errorf("not the record's copy: %+v", h)
	}
}
