package safety

// The shared layout: every user's home is a directory of one claim
// (zero-to-jupyterhub's storage type "static", Nebari's classic
// deployments). The plan creates and deletes no per-user claim; what it
// must tell the truth about is which directory each user's server mounts,
// which a change of the claim, the sub-path template, the slug scheme or
// the layout itself moves. No pod runs at plan time: the plan cannot see
// what the directories hold, so every listed user whose directory would
// change is named, old and new path, and the plan fails unless
// on_layout_change says to keep the old directories where they are.

import (
	"fmt"
	"slices"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/claims"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/kubespawner"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/migration"
)

// SharedHome is the shared layout: the claim that holds every home, in the
// deployment's namespace, and the template of a user's directory in it.
type SharedHome struct {
	Claim           string
	SubPathTemplate string
}

// OnLayoutChange says what to do when a change of settings moves users'
// homes to other directories or claims.
type OnLayoutChange string

const (
	// OnLayoutChangeFail fails the plan, naming every user whose home would move.
	OnLayoutChangeFail OnLayoutChange = "fail"
	// OnLayoutChangeKeep applies the change: the old directories and
	// claims stay as they are, and the users named start in the new ones.
	OnLayoutChangeKeep OnLayoutChange = "keep"
)

// homeOf is where a user's default server finds its home under cfg: the
// claim, and the directory in it ("" for a claim of its own).
type homeOf struct {
	claim claims.Ref
	dir   string
}

func (h homeOf) String() string {
	if h.dir == "" {
		return "claim " + h.claim.String()
	}
	return fmt.Sprintf("directory %q of claim %s", h.dir, h.claim)
}

// homeFor is user's home under cfg.
func (cfg Config) homeFor(user string) (homeOf, error) {
	if cfg.Shared != nil {
		dir, err := kubespawner.Expand(cfg.Shared.SubPathTemplate, user, "", cfg.Scheme)
		return homeOf{claim: claims.Ref{Namespace: cfg.Namespace, Name: cfg.Shared.Claim}, dir: dir}, err
	}
	ns, err := cfg.NamespaceOf(user)
	if err != nil {
		return homeOf{}, err
	}
	name, err := kubespawner.Expand(cfg.NameTemplate, user, "", cfg.Scheme)
	return homeOf{claim: claims.Ref{Namespace: ns, Name: name}}, err
}

// SharedDirectory is the directory of user's home on the shared claim.
func (cfg Config) SharedDirectory(user string) (string, error) {
	if cfg.Shared == nil {
		return "", fmt.Errorf("not the shared layout")
	}
	h, err := cfg.homeFor(user)
	return h.dir, err
}

// layoutMoves lists the listed users whose home is elsewhere under cfg than
// under the prior configuration, when either is the shared layout: "user:
// old → new" lines. others is such a line for a user who is not listed
// (a probe name), when the change moves some users' homes: the plan cannot
// see unlisted users' directories, so it must not pass because no listed
// user happens to move.
func layoutMoves(cfg Config, prior *Prior) (moves []string, others string) {
	if prior == nil || (cfg.Shared == nil && prior.Config.Shared == nil) {
		return nil, ""
	}
	move := func(u string) string {
		was, err1 := prior.Config.homeFor(u)
		now, err2 := cfg.homeFor(u)
		if err1 != nil || err2 != nil || was == now {
			return "" // a name that does not expand is reported where it is expanded
		}
		return fmt.Sprintf("%s: %s → %s", u, was, now)
	}
	for _, u := range cfg.Users {
		if m := move(u); m != "" {
			moves = append(moves, m)
		}
	}
	for _, u := range probeUsers {
		if m := move(u); m != "" {
			return moves, m
		}
	}
	return moves, ""
}

// probeUsers are names whose slugs differ between KubeSpawner's schemes
// and between templates on the raw and escaped name.
var probeUsers = []string{"jovyan", "Ada.Lovelace@Example.org", "user_1", "élodie", "a-very-long-user-name-that-kubespawner-must-shorten-with-a-hash-suffix"}

// checkLayoutMoves fails the plan for a change that moves users' homes,
// unless on_layout_change = "keep" (then a warning names them).
func checkLayoutMoves(cfg Config, prior *Prior, res *Result) {
	moves, others := layoutMoves(cfg, prior)
	if len(moves) == 0 && others == "" {
		return
	}
	what := "The layout of the homes changed"
	if cfg.Shared != nil && prior.Config.Shared != nil && cfg.Shared.Claim == prior.Config.Shared.Claim {
		what = "Users' home directories change"
	}
	list := CutLines(moves)
	if len(moves) == 0 {
		list = "  (no listed user)"
	}
	if others != "" {
		list += "\nUsers not listed in users move too when their names differ under the two settings, for example a user\n  " + others
	}
	if cfg.OnLayoutChange == OnLayoutChangeKeep {
		res.Warnings = append(res.Warnings, Finding{"on_layout_change", what,
			fmt.Sprintf("With on_layout_change = \"keep\", %d listed user(s) start in a new home; their old ones stay where they are, untouched, and no longer mounted:\n%s",
				len(moves), list)})
		return
	}
	res.Errors = append(res.Errors, Finding{"on_layout_change", what,
		fmt.Sprintf("After this change %d listed user(s) would find their home somewhere else, and a new, empty one there; what they had stays where it was, no longer mounted:\n%s\n"+
			"Keep the settings that name their homes (shared_home.claim_name, shared_home.sub_path_template, slug_scheme, pvc_name_template; a template on "+
			"{escaped_username} keeps KubeSpawner's names from before version 7), or set on_layout_change = \"keep\" to apply the change and leave the old homes where they are.",
			len(moves), list)})
}

// planShared plans the shared layout: no per-user claim is created,
// changed or deleted. The shared claim must exist; per-user homes that
// the change leaves behind, and migrations in flight, are named.
func planShared(cfg Config, prior *Prior, live Live) Result {
	res := Result{Class: ClassNone}
	sh := cfg.Shared
	switch c := live.Shared; {
	case c == nil:
		res.Errors = append(res.Errors, Finding{"shared_home.claim_name", "The shared home claim does not exist",
			fmt.Sprintf("Claim %s/%s holds every user's home in this layout and was not found. Create it (a ReadWriteMany claim on a shared file system), or name the existing one.",
				cfg.Namespace, sh.Claim)})
	case c.Deleting:
		res.Errors = append(res.Errors, Finding{"shared_home.claim_name", "The shared home claim is being deleted",
			fmt.Sprintf("Claim %s/%s is being deleted; no server could mount it. It goes once the pods using it stop.", cfg.Namespace, sh.Claim)})
	case !slices.Contains(c.AccessModes, cfg.AccessMode):
		res.Errors = append(res.Errors, Finding{"access_mode", "The shared home claim has another access mode",
			fmt.Sprintf("Claim %s/%s is %v, and access_mode says %s. In the shared layout access_mode is the shared claim's: the hub pins users' servers to one node by it. Set access_mode to the claim's mode.",
				cfg.Namespace, sh.Claim, c.AccessModes, cfg.AccessMode)})
	case cfg.AccessMode != RWX:
		res.Warnings = append(res.Warnings, Finding{"shared_home.claim_name", "The shared home claim is not ReadWriteMany",
			fmt.Sprintf("Claim %s/%s is %v: every user's server mounts it, so all servers must run on the node it is attached to. That works on a one-node cluster; "+
				"elsewhere servers on other nodes fail with Multi-Attach errors. Use a ReadWriteMany claim on a shared file system.", cfg.Namespace, sh.Claim, c.AccessModes)})
	}
	checkLayoutMoves(cfg, prior, &res)
	// Per-user homes the template names: the layout does not mount them.
	var kept, moving []string
	for i := range live.Claims {
		c := &live.Claims[i]
		if c.Username == "" || c.Name == sh.Claim && c.Namespace == cfg.Namespace {
			continue
		}
		if copyInFlight(c) {
			moving = append(moving, fmt.Sprintf("%s: %s", c.Username, c.Ref()))
			continue
		}
		kept = append(kept, fmt.Sprintf("%s: %s (%v)", c.Username, c.Ref(), c.AccessModes))
	}
	for ref, ip := range live.InProgress {
		moving = append(moving, fmt.Sprintf("%s: %s (volume %s)", ip.Record.User, ref, ip.Volume))
	}
	slices.Sort(moving)
	if len(moving) > 0 {
		res.Errors = append(res.Errors, Finding{"shared_home", "A migration of per-user homes is in progress",
			fmt.Sprintf("These homes are being migrated by an earlier apply; the shared layout would leave them half-way:\n%s\nFinish the migration (apply with the per-user layout until migration_status says done) first.",
				CutLines(moving))})
	}
	if len(kept) > 0 {
		res.Warnings = append(res.Warnings, Finding{"shared_home", "Per-user home claims are not mounted in the shared layout",
			fmt.Sprintf("%d per-user home claim(s) exist; servers mount their directory of %s/%s instead, and these claims stay as they are:\n%s",
				len(kept), cfg.Namespace, sh.Claim, CutLines(kept))})
	}
	switch {
	case prior == nil:
		res.Warnings = append(res.Warnings, adoptionWarning(cfg)...)
	case !sameConfig(prior.Config, cfg) || prior.Config.Shared == nil || *prior.Config.Shared != *sh:
		res.Class = ClassSafe // the hub's settings change; no claim does
	}
	return res
}

// adoptionWarning names the listed users whose directory under the slug
// scheme differs from KubeSpawner's names before version 7, when the
// layout is adopted (no prior state): a hub that ran an older KubeSpawner
// kept their homes under the other name.
func adoptionWarning(cfg Config) []Finding {
	other := kubespawner.SchemeEscape
	if cfg.Scheme == kubespawner.SchemeEscape {
		return nil
	}
	var differ []string
	for _, u := range cfg.Users {
		now, err1 := kubespawner.Expand(cfg.Shared.SubPathTemplate, u, "", cfg.Scheme)
		before, err2 := kubespawner.Expand(cfg.Shared.SubPathTemplate, u, "", other)
		if err1 == nil && err2 == nil && now != before {
			differ = append(differ, fmt.Sprintf("%s: %q (KubeSpawner before 7: %q)", u, now, before))
		}
	}
	if len(differ) == 0 {
		return nil
	}
	return []Finding{{"slug_scheme", "Some users' directories are named differently than older KubeSpawner named them",
		fmt.Sprintf("Under slug_scheme %q these listed users' directories differ from the names KubeSpawner gave them before version 7 (scheme \"escape\"):\n%s\n"+
			"If the hub ran an older KubeSpawner, their homes are under the old names, and they would start in new, empty directories. "+
			"Set slug_scheme = \"escape\", or a sub_path_template on {escaped_username}, to keep them.", cfg.Scheme, CutLines(differ))}}
}

// copyInFlight: the claim is the source of a copy not yet switched to.
func copyInFlight(c *claims.Claim) bool {
	v := c.Annotations[migration.CopyAnnotation]
	if v == "" {
		return false
	}
	rec, err := migration.DecodeCopyRecord(v)
	return err != nil || rec.Step != migration.StepSwitched
}
