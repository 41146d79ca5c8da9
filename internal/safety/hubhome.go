package safety

// Where the hub puts a user's home at a spawn now, in the shared layout
// and while homes move out of it: the decision hub_config.py's
// pre_spawn_hook takes (split_home, home_of), from the claims the cluster
// has, for the jupyter_home_claims data source. No pod runs: what the
// directories hold is not known, only which one a server would mount.

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/claims"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/migration"
)

// Kinds of a Home.
const (
	HomeDirectory = "directory" // the user's directory of the shared claim
	HomeClaim     = "claim"     // a claim of the user's own (or its copy)
	HomeRefused   = "refused"   // the hub refuses the spawn now, and says why
)

// Home is where a user's default server finds its home at a spawn now.
type Home struct {
	Kind string // HomeDirectory, HomeClaim or HomeRefused
	// Claim is the claim mounted: the shared claim for a directory, the
	// user's claim or the copy it was switched to; for a refused spawn,
	// the claim whose state refuses it.
	Claim string
	// SubPath is the user's directory of the shared claim, KubeSpawner's
	// expansion of the sub-path template: what a directory home mounts,
	// and where a claim's move would come from.
	SubPath string
	// MovedFrom is, for a claim a move out of the shared layout made, the
	// directory its record names, and Method that move's method
	// (migration.MethodSplit for zero copy, MethodDirectoryCopy).
	MovedFrom string
	Method    migration.Method
	// Moved: the claim is a finished move of this user's directory of this
	// shared claim (the record's namespace, shared claim and directory are
	// the user's under these settings).
	Moved  bool
	Reason string // why the spawn is refused
	// EarlierPlaces are, for a directory home, the places the shared claim
	// records the user's home had before a move by rename
	// (migration.MovedFromAnnotation), other than SubPath: until the user's
	// next spawn renames it, the home may still be at one of them. Empty,
	// never nil.
	EarlierPlaces []string
}

// HubHomes is where each of users' default servers finds its home at a
// spawn now, as the hub of cfg decides it: cfg.Shared is the shared layout
// (every home the user's directory; the hub reads no claim), cfg.SplitFrom
// the per-user layout while homes move out of the shared one, or merge
// back into it: hub_config.py's split_home and home_of, whose rules
// DESIGN.md "Spawn-time decisions" describes; each function below names
// the one of the hub it follows. The plain per-user layout has no view
// here. live are the claims of cfg.Namespace; shared is the shared claim,
// nil when it does not exist. The hub's view of a server whose KubeSpawner
// state remembers another claim name (a copy since deleted) is not known
// here: the name is the template's.
func HubHomes(cfg Config, users []string, live []claims.Claim, shared *claims.Claim) map[string]Home {
	h := hubView{cfg: cfg, shared: shared, byName: make(map[string]*claims.Claim, len(live)), copies: map[string][]*claims.Claim{}}
	for i := range live {
		c := &live[i]
		if c.Namespace != "" && c.Namespace != cfg.Namespace {
			continue
		}
		h.byName[c.Name] = c
		// The hub's copies_of: found by the label, confirmed by the annotation.
		if src := c.Annotations[migration.CopyOfAnnotation]; src != "" && c.Labels[migration.CopyOfLabel] == migration.CopyOfLabelValue(src) {
			h.copies[src] = append(h.copies[src], c)
		}
	}
	for _, cs := range h.copies {
		slices.SortFunc(cs, func(a, b *claims.Claim) int { return strings.Compare(a.Name, b.Name) })
	}
	var moved []string
	if shared != nil {
		moved, _ = migration.DecodeMovedFrom(shared.Annotations[migration.MovedFromAnnotation]) // one that cannot be read lists none
	}
	out := make(map[string]Home, len(users))
	for _, u := range users {
		home := h.home(u)
		home.EarlierPlaces = []string{}
		if home.Kind == HomeDirectory {
			for _, d := range MovedDirectories(moved, u) {
				if d != home.SubPath && !slices.Contains(home.EarlierPlaces, d) {
					home.EarlierPlaces = append(home.EarlierPlaces, d)
				}
			}
		}
		out[u] = home
	}
	return out
}

// hubView is what HubHomes decides from.
type hubView struct {
	cfg    Config
	shared *claims.Claim
	byName map[string]*claims.Claim
	copies map[string][]*claims.Claim // by the name of the claim they copy
}

func refused(claim, format string, args ...any) Home {
	return Home{Kind: HomeRefused, Claim: claim, Reason: fmt.Sprintf(format, args...)}
}

func (h *hubView) home(u string) Home {
	sh := h.cfg.Shared
	if h.cfg.SplitFrom != nil {
		sh = h.cfg.SplitFrom
	}
	dir, err := directoryView(h.cfg).homeFor(u, "")
	if err != nil {
		return refused(sh.Claim, "the hub cannot expand sub_path_template for %q: %v", u, err)
	}
	home := Home{Kind: HomeDirectory, Claim: sh.Claim}
	if h.cfg.SplitFrom != nil { // else the shared layout: the hub reads no claim
		home = h.splitHome(u, dir.dir)
	}
	home.SubPath = dir.dir
	return home
}

// splitHome is the hub's split_home for user u, whose directory is dir.
func (h *hubView) splitHome(u, dir string) Home {
	sh := h.cfg.SplitFrom
	at, err := h.cfg.homeFor(u, "")
	if err != nil {
		return refused(at.claim.Name, "the hub cannot expand pvc_name_template for %q: %v", u, err)
	}
	name := at.claim.Name
	c := h.byName[name]
	if c == nil {
		// A copy of the missing claim decides; only a claim never copied
		// leaves the home in the directory.
		if home, decided := h.goneClaimCopyHome(name); decided {
			return home
		}
		return h.directory(name, "does not exist")
	}
	// A merge is checked first, then a claim a move made, whatever else
	// it carries.
	if home, decided := h.mergeHome(c); decided {
		return home
	}
	var rec *migration.SplitRecord
	if c.Annotations[migration.SplitAnnotation] != "" {
		var why string
		if rec, why = checkSplit(c); why != "" {
			return refused(name, "%s", why)
		}
	}
	home := h.homeOf(c)
	if rec != nil && home.Kind == HomeClaim && home.Claim == c.Name {
		home.MovedFrom, home.Method = rec.Directory, cmp.Or(rec.Method, migration.MethodSplit)
		home.Moved = rec.Namespace == h.cfg.Namespace && rec.Shared == sh.Claim && rec.Directory == dir
	}
	return home
}

// directory is the hub's directory_home: the user's directory of the
// shared claim stands for claim name, which why (does not exist, was
// merged into it); refused when the shared claim is missing.
func (h *hubView) directory(name, why string) Home {
	sh := h.cfg.SplitFrom
	if h.shared == nil {
		return refused(name, "claim %s %s and shared claim %s, which holds the user's home, is missing", name, why, sh.Claim)
	}
	return Home{Kind: HomeDirectory, Claim: sh.Claim}
}

// mergeHome is the hub's merged_into_shared with the fallback, for a claim
// the hub reads as the home: merged (migration.Merged; also while the
// claim is being deleted, it is stale), the user's directory is the home;
// a merge record or mark that is not a finished merge refuses the spawn
// (the copy may be running). Nothing decided when c carries neither.
func (h *hubView) mergeHome(c *claims.Claim) (Home, bool) {
	_, rec := c.Annotations[migration.MergeAnnotation]
	_, mark := c.Annotations[migration.MergedAnnotation]
	switch {
	case !rec && !mark:
		return Home{}, false
	case migration.Merged(c.Annotations, c.UID):
		return h.directory(c.Name, "was merged into it"), true
	}
	return refused(c.Name, "claim %s is being merged into its directory of shared claim %s (not marked %s with its UID %s)",
		c.Name, h.cfg.SplitFrom.Claim, migration.MergedAnnotation, orDash(c.UID)), true
}

// checkSplit is the hub's check_split: a claim of a move out of the shared
// layout is mounted once finished (zero copy: Bound to its record's
// volume; by a copy: marked copied with its own UID), never while being
// deleted. Its record, or why the spawn is refused.
func checkSplit(c *claims.Claim) (*migration.SplitRecord, string) {
	rec, err := splitRecord(c)
	switch {
	case err != nil:
		return nil, fmt.Sprintf("claim %s: its move's record cannot be read: %v", c.Name, err)
	case c.Deleting:
		return nil, fmt.Sprintf("claim %s is being deleted", c.Name)
	case rec.Method == migration.MethodDirectoryCopy:
		if !splitDone(c, rec) {
			return nil, fmt.Sprintf("claim %s is being copied from its directory of the shared claim", c.Name)
		}
	case rec.Method != "":
		return nil, fmt.Sprintf("claim %s: its move's method %q is not one the hub knows", c.Name, rec.Method)
	case c.Phase != "Bound":
		return nil, fmt.Sprintf("claim %s is being moved out of the shared claim (%s, not Bound)", c.Name, cmp.Or(c.Phase, "no phase"))
	case c.VolumeName != rec.Volume:
		return nil, fmt.Sprintf("claim %s is bound to volume %s, not to its move's volume %s", c.Name, c.VolumeName, rec.Volume)
	}
	return rec, ""
}

// mountable is the hub's check_mountable: "" or why the spawn is refused.
func mountable(c *claims.Claim) string {
	switch {
	case c.Deleting:
		return fmt.Sprintf("claim %s is being deleted", c.Name)
	case c.Annotations[migration.MigratedAnnotation] != "" && c.Phase != "Bound":
		return fmt.Sprintf("claim %s is being rebound (%s)", c.Name, c.Annotations[migration.MigratedAnnotation])
	}
	return ""
}

// claimHome is c as the home, or the spawn refused when c is not
// mountable; after the merge rule (a claim merged: its directory).
func (h *hubView) claimHome(c *claims.Claim) Home {
	if home, decided := h.mergeHome(c); decided {
		return home
	}
	if why := mountable(c); why != "" {
		return refused(c.Name, "%s", why)
	}
	return Home{Kind: HomeClaim, Claim: c.Name}
}

// homeOf is the hub's home_of for the server's claim c, which exists.
func (h *hubView) homeOf(c *claims.Claim) Home {
	if c.Annotations[migration.CopyAnnotation] != "" {
		return h.followCopy(c)
	}
	if src := c.Annotations[migration.CopyOfAnnotation]; src != "" {
		if why := mountable(c); why != "" {
			return refused(c.Name, "%s", why)
		}
		if c.Annotations[migration.CopySwitchedAnnotation] != "" {
			return Home{Kind: HomeClaim, Claim: c.Name}
		}
		if s := h.byName[src]; s != nil && s.Annotations[migration.CopyAnnotation] != "" {
			if rec, err := migration.DecodeCopyRecord(s.Annotations[migration.CopyAnnotation]); err == nil &&
				rec.Step == migration.StepSwitched && rec.Target == c.Name && isCopyOf(c, s, rec.TargetUID) {
				return Home{Kind: HomeClaim, Claim: c.Name}
			}
		}
		return refused(c.Name, "claim %s is a copy of %s not yet switched to", c.Name, src)
	}
	if home, decided := h.switchedCopyHome(c.Name); decided {
		return home
	}
	return h.claimHome(c)
}

// followCopy is the hub's follow_copy: c carries a copy record.
func (h *hubView) followCopy(c *claims.Claim) Home {
	rec, err := migration.DecodeCopyRecord(c.Annotations[migration.CopyAnnotation])
	switch {
	case err != nil:
		return refused(c.Name, "claim %s: %v", c.Name, err)
	case rec.Step == migration.StepPending || rec.Step == migration.StepTargetCreated:
		return h.claimHome(c)
	case rec.Step != migration.StepSwitched:
		return refused(c.Name, "claim %s is being copied to %s (step %s)", c.Name, rec.Target, rec.Step)
	}
	t := h.byName[rec.Target]
	switch {
	case t == nil:
		return refused(c.Name, "claim %s was switched to %s, which does not exist", c.Name, rec.Target)
	case !isCopyOf(t, c, rec.TargetUID):
		return refused(c.Name, "claim %s names copy %s, but that claim is not the copy its record made", c.Name, rec.Target)
	}
	return h.claimHome(t)
}

// isCopyOf is the hub's is_copy_of: copied names source (name and UID)
// and has the UID the record names, when it names one.
func isCopyOf(copied, source *claims.Claim, targetUID string) bool {
	return copied.Annotations[migration.CopyOfAnnotation] == source.Name && copied.Annotations[migration.CopyOfUIDAnnotation] == source.UID &&
		(targetUID == "" || copied.UID == targetUID)
}

// switchedCopyHome is the hub's copy_home for the claim named name: its
// switched copy is the home (several: refused); else nothing is decided.
func (h *hubView) switchedCopyHome(name string) (Home, bool) {
	var switched []string
	var first *claims.Claim
	for _, c := range h.copies[name] {
		if c.Annotations[migration.CopySwitchedAnnotation] != "" {
			if first == nil {
				first = c
			}
			switched = append(switched, c.Name)
		}
	}
	switch {
	case len(switched) > 1:
		return refused(name, "claim %s has several switched copies: %s", name, strings.Join(switched, ", ")), true
	case first != nil:
		return h.claimHome(first), true
	}
	return Home{}, false
}

// goneClaimCopyHome is the hub's copy_home for the claim named name, which
// is gone: its switched copy is the home; a copy not switched to refuses
// the spawn; else nothing is decided.
func (h *hubView) goneClaimCopyHome(name string) (Home, bool) {
	if home, decided := h.switchedCopyHome(name); decided {
		return home, true
	}
	if copies := h.copies[name]; len(copies) > 0 {
		return refused(name, "claim %s is gone and its copy %s was not switched to", name, copies[0].Name), true
	}
	return Home{}, false
}
