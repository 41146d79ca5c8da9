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
	"strings"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/claims"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/kubespawner"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/migration"
)

// SharedHome is the shared layout: the claim that holds every home, in the
// deployment's namespace, and the template of a user's directory in it.
type SharedHome struct {
	Claim           string
	SubPathTemplate string
	// Create: the resource creates the claim when it does not exist
	// (shared_home.create_claim), of Capacity (shared_home.capacity), and
	// never one that existed (sharedExisted) or while homes move out of it.
	// A claim that exists is never changed.
	Create   bool
	Capacity string
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

// homeOf is where a server finds its home under cfg: the claim, and the
// directory in it ("" for a claim of its own).
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

// homeFor is the home of user's server (the default server for "") under
// cfg.
func (cfg Config) homeFor(user, server string) (homeOf, error) {
	if cfg.Shared != nil {
		dir, err := kubespawner.Expand(cfg.Shared.SubPathTemplate, user, server, cfg.Scheme)
		return homeOf{claim: claims.Ref{Namespace: cfg.Namespace, Name: cfg.Shared.Claim}, dir: dir}, err
	}
	ns, err := cfg.NamespaceOf(user)
	if err != nil {
		return homeOf{}, err
	}
	name, err := kubespawner.Expand(cfg.NameTemplate, user, server, cfg.Scheme)
	return homeOf{claim: claims.Ref{Namespace: ns, Name: name}}, err
}

// SharedDirectory is the directory of user's home on the shared claim.
func (cfg Config) SharedDirectory(user string) (string, error) {
	if cfg.Shared == nil {
		return "", fmt.Errorf("not the shared layout")
	}
	h, err := cfg.homeFor(user, "")
	return h.dir, err
}

// probeUsers are names whose slugs differ between KubeSpawner's schemes
// and between templates on the raw and escaped name; probeServer is a
// named server's name for the same purpose.
var probeUsers = []string{"jovyan", "j", "Ada.Lovelace@Example.org", "user_1", "élodie", "a-very-long-user-name-that-kubespawner-must-shorten-with-a-hash-suffix"}

const probeServer = "gpu"

// moves is what a change does to homes where either side is the shared
// layout.
type moves struct {
	listed []string // "user: old → new" for listed users' default servers
	// example is such a line for a user not listed or a named server, when
	// the change moves such homes: the plan cannot see unlisted users'
	// directories, so it must not pass because no listed user happens to move.
	example string
	// relayout: the layout or the shared claim changes, so every home moves.
	relayout bool
	// parent names an old home's parent directory that the new settings
	// give to a user: that user's server would mount every old home.
	parent string
	// mounted are claims no move made that the hub mounts instead of the
	// users' directories while homes move out of the shared layout.
	mounted []string
}

// layoutMoves compares where homes are under the prior configuration and
// under cfg, when either is the shared layout. With no prior (the resource
// is new, or its state was removed) the homes found are compared: a listed
// user's claim of the per-user layout is a home the shared layout leaves.
func layoutMoves(cfg Config, prior *Prior, live Live) moves {
	if Fallback(cfg) != nil {
		return splitMoves(cfg, prior, live)
	}
	if prior != nil && Fallback(prior.Config) != nil {
		if cfg.Shared == nil {
			return unsplitMoves(cfg, prior.Config, live)
		}
		// Back to the shared layout: the directories are compared, and
		// the claims the move's hub mounted.
		was := *prior
		was.Config = directoryView(was.Config)
		m := layoutMoves(cfg, &was, live)
		m.listed = append(m.listed, backFromSplit(cfg, prior.Config, live)...)
		return m
	}
	if prior == nil {
		return foundHomeMoves(cfg, live)
	}
	return settingMoves(cfg, prior.Config)
}

// foundHomeMoves are the moves of a resource with no prior: a listed
// user's claim of the per-user layout is a home the shared layout leaves.
func foundHomeMoves(cfg Config, live Live) moves {
	var m moves
	if cfg.Shared == nil {
		return m
	}
	for _, u := range cfg.Users {
		now, err := cfg.homeFor(u, "")
		if err != nil {
			continue
		}
		for i := range live.Claims {
			if c := &live.Claims[i]; perUserHomeOf(cfg, c, u) {
				m.listed = append(m.listed, fmt.Sprintf("%s: %s → %s", u, homeOf{claim: cfg.ref(c)}, now))
			}
		}
	}
	m.relayout = len(m.listed) > 0
	return m
}

// settingMoves are the moves from the settings was to cfg, when either is
// the shared layout: the listed users' homes that move, an example of an
// unlisted user's or a named server's, and an old home's parent that a user
// is given.
func settingMoves(cfg, was Config) moves {
	var m moves
	if cfg.Shared == nil && was.Shared == nil {
		return m
	}
	m.relayout = cfg.Shared == nil || was.Shared == nil || cfg.Shared.Claim != was.Shared.Claim || cfg.Namespace != was.Namespace
	move := func(u, server string) string {
		from, err1 := was.homeFor(u, server)
		to, err2 := cfg.homeFor(u, server)
		if err1 != nil || err2 != nil || from == to {
			return "" // a name that does not expand is reported where it is expanded
		}
		if server != "" {
			u += "'s server " + server
		}
		return fmt.Sprintf("%s: %s → %s", u, from, to)
	}
	for _, u := range cfg.Users {
		if l := move(u, ""); l != "" {
			m.listed = append(m.listed, l)
		}
	}
	for _, u := range append(slices.Clone(cfg.Users), probeUsers...) {
		for _, server := range []string{"", probeServer} {
			if l := move(u, server); l != "" && (server != "" || !slices.Contains(cfg.Users, u)) && m.example == "" {
				m.example = l
			}
		}
	}
	if m.example == "" && len(m.listed) == 0 && !m.relayout && cfg.Shared.SubPathTemplate != was.Shared.SubPathTemplate {
		m.example = fmt.Sprintf("the template changed from %q to %q; no name the plan tried moves, but it cannot tell for every name", was.Shared.SubPathTemplate, cfg.Shared.SubPathTemplate)
	}
	if !m.relayout {
		m.parent = parentGiven(was, cfg)
	}
	return m
}

// perUserHomeOf reports whether c is a home claim of user u's default
// server in the deployment's namespace: the one pvc_name_template names
// under slug_scheme, or any claim labelled with u, since the hub may have
// named it under the other scheme (KubeSpawner before version 7) or it may
// be a copy's new claim. Named servers' claims and other per-user claims
// (extra_user_volumes) are not.
func perUserHomeOf(cfg Config, c *claims.Claim, u string) bool {
	ref := cfg.ref(c)
	if ref.Namespace != cfg.Namespace || ref.Name == cfg.Shared.Claim || c.Username == "" {
		return false
	}
	if name, err := kubespawner.Expand(cfg.NameTemplate, u, "", cfg.Scheme); err == nil && name == c.Name {
		return true
	}
	if c.Username != u || c.Servername != "" {
		return false
	}
	for _, t := range cfg.ExtraVolumes {
		if n, err := kubespawner.Expand(t, u, "", cfg.Scheme); err == nil && n == c.Name {
			return false
		}
	}
	return true
}

// parentGiven returns a directory that holds old homes (an ancestor of
// an old home, such as "home" of "home/{username}") and that the new
// settings give some user as their home; "" when none.
func parentGiven(was, now Config) string {
	for _, u := range append(slices.Clone(now.Users), probeUsers...) {
		old, err := was.homeFor(u, "")
		if err != nil {
			continue
		}
		parts := strings.Split(old.dir, "/")
		for i := 1; i < len(parts); i++ {
			if parent := strings.Join(parts[:i], "/"); someUserGets(now, parent) {
				return parent
			}
		}
	}
	return ""
}

// someUserGets reports whether the default server of some user gets
// directory dir under cfg: a user named like dir, or like what is left of
// dir between the template's text around the user's name ("home" is what
// "h{username}" gives user "ome").
func someUserGets(cfg Config, dir string) bool {
	names := []string{dir}
	const marker = "qzx"
	if h, err := cfg.homeFor(marker, ""); err == nil && strings.Count(h.dir, marker) == 1 {
		pre, suf, _ := strings.Cut(h.dir, marker)
		if len(dir) > len(pre)+len(suf) && strings.HasPrefix(dir, pre) && strings.HasSuffix(dir, suf) {
			names = append(names, dir[len(pre):len(dir)-len(suf)])
		}
	}
	for _, u := range names {
		if h, err := cfg.homeFor(u, ""); err == nil && h.dir == dir {
			return true
		}
	}
	return false
}

// checkLayoutMoves fails the plan for a change that moves users' homes,
// unless on_layout_change = "keep" (then a warning names them); a change
// that would give a user a directory holding the old homes fails even then.
func checkLayoutMoves(cfg Config, prior *Prior, live Live, res *Result) {
	m := layoutMoves(cfg, prior, live)
	if m.parent != "" {
		res.Errors = append(res.Errors, claims.Finding{Attribute: "shared_home.sub_path_template", Summary: "A user would get the directory that holds the old homes", Detail: fmt.Sprintf("Under the new settings a user can get directory %q of the shared claim, which holds the homes of the old settings: that user's server would mount all of them. "+
			"Choose a sub_path_template that keeps the old homes out of every user's directory (e.g. keep the \"%s/\" prefix). on_layout_change cannot allow this.", m.parent, m.parent)})
	}
	if len(m.mounted) > 0 {
		res.Warnings = append(res.Warnings, claims.Finding{Attribute: "layout", Summary: "Claims no move made are mounted instead of directories", Detail: fmt.Sprintf("While homes move out of the shared layout the hub mounts a server's claim wherever one exists. %d claim(s) were not made by a move: "+
			"their servers mount them, not their directories of the shared claim, and whatever is in those directories is not what they see:\n%s\n"+
			"A claim kept from an earlier layout is expected here. One created since the move began (by hand, or by another tool) hides the user's directory: "+
			"save what it holds, delete it, and the user's next spawn mounts the directory again (and the next apply moves it).",
			len(m.mounted), CutLines(m.mounted))})
	}
	if len(m.listed) == 0 && m.example == "" {
		return
	}
	what := "The layout of the homes changed"
	if !m.relayout {
		what = "Users' home directories change"
	}
	list := CutLines(m.listed)
	if len(m.listed) == 0 {
		list = "  (no listed user)"
	}
	switch {
	case m.relayout && prior != nil:
		list += "\nEvery user's home moves, listed or not."
	case m.example != "":
		list += "\nHomes of users not listed in users, and of named servers, move too when their names differ under the two settings, for example\n  " + m.example
	}
	if cfg.OnLayoutChange == OnLayoutChangeMove {
		checkRenames(cfg, prior, m, list, res)
		return
	}
	if cfg.OnLayoutChange == OnLayoutChangeKeep {
		leftBy(cfg, prior, m, res)
		res.Warnings = append(res.Warnings, claims.Finding{Attribute: "on_layout_change", Summary: what, Detail: fmt.Sprintf("With on_layout_change = \"keep\", %d listed user(s) start in another home (new and empty unless it exists); their old ones stay where they are, untouched, and no longer mounted:\n%s",
			len(m.listed), list)})
		return
	}
	fix := "Keep the settings that name their homes (namespace, shared_home.claim_name, shared_home.sub_path_template, slug_scheme, pvc_name_template; a template on " +
		"{escaped_username} keeps KubeSpawner's names from before version 7), or set on_layout_change = \"keep\" to apply the change and leave the old homes where they are."
	switch {
	case cfg.MergeInto != nil && prior == nil:
		fix = "This resource is new (or its state was removed), so nothing says whether the hub mounts these claims now. If it does (the per-user layout), " +
			"apply the per-user layout first (layout = \"per_user\", no shared_home: it adopts the claims), then the merge. If the hub mounts the directories (the shared layout), " +
			"apply that layout first; where a user's directory is their home, save what their claim holds and delete the claim before the merge."
	case cfg.MergeInto != nil:
		fix = "The merge's hub mounts a user's claim until it is merged: where the directory is the user's home now, save what the claim holds and delete it before the merge (the merge then leaves the directory as it is); " +
			"where the claim is, apply the per-user layout first, then the merge."
	}
	res.Errors = append(res.Errors, claims.Finding{Attribute: "on_layout_change", Summary: what, Detail: fmt.Sprintf("After this change %d listed user(s) would find their home somewhere else (a new, empty one unless it exists); what they had stays where it was, no longer mounted:\n%s\n%s",
		len(m.listed), list, fix)})
}

// planShared plans the shared layout: no per-user claim is created,
// changed or deleted. The shared claim must exist; per-user homes that
// the change leaves behind, and migrations in flight, are named.
func planShared(cfg Config, prior *Prior, live Live) Result {
	res := Result{Class: ClassNone}
	checkSharedClaim(cfg, prior, live, &res)
	res.MovedFrom = placesOf(cfg, prior, live, &res)
	res.LeftAt = liveLeftAt(live, &res)
	checkLayoutMoves(cfg, prior, live, &res)
	checkPlaces(cfg, res.MovedFrom, res.LeftAt, &res)
	checkPerUserClaims(cfg, live, &res)
	switch sh := cfg.Shared; {
	case prior == nil && sh.Create:
		// A new resource that may create the claim is safe whether or not
		// it does: so that a claim someone makes between plan and apply
		// does not make the apply's plan differ from the plan.
		res.Class = ClassSafe
		if !res.CreateShared {
			res.Warnings = append(res.Warnings, adoptionWarnings(cfg)...)
		}
	case prior == nil:
		res.Warnings = append(res.Warnings, adoptionWarnings(cfg)...)
	case !sameConfig(prior.Config, cfg) || prior.Config.Shared == nil || *prior.Config.Shared != *sh:
		res.Class = ClassSafe // the hub's settings change; no claim does
	}
	return res
}

// checkSharedClaim decides the shared claim: created when it is missing
// and create_claim says so (unless it existed before: then it was lost),
// else it must exist and be able to hold the homes.
func checkSharedClaim(cfg Config, prior *Prior, live Live, res *Result) {
	sh := cfg.Shared
	switch c := live.Shared; {
	case c == nil && sh.Create:
		if existed := sharedExisted(cfg, sh, prior, live); len(existed) > 0 {
			res.Errors = append(res.Errors, sharedGone(cfg, sh, existed))
			break
		}
		res.CreateShared, res.Class = true, ClassSafe
		class := cfg.StorageClass
		if class == "" {
			class = "the cluster's default class"
		}
		res.Warnings = append(res.Warnings, claims.Finding{Attribute: "shared_home.create_claim", Summary: "The shared home claim is created", Detail: fmt.Sprintf("Claim %s/%s does not exist: apply creates it (%s, %s, %s, with the resource's labels and annotations and %s: %s). "+
			"It starts empty; the init container makes each user's directory at their first spawn. "+
			"The provider never changes or deletes it: not on destroy (whatever deletion_policy says), not on replacement, not when create_claim is turned off or shared_home removed.",
			cfg.Namespace, sh.Claim, cfg.AccessMode, class, sh.Capacity, claims.SharedCreatedAnnotation, claims.SharedCreatedBy)})
	case c == nil:
		res.Errors = append(res.Errors, claims.Finding{Attribute: "shared_home.claim_name", Summary: "The shared home claim does not exist", Detail: fmt.Sprintf("Claim %s/%s holds every user's home in this layout and was not found. Create it (a ReadWriteMany claim on a shared file system), name the existing one, "+
			"or set shared_home.create_claim = true (with shared_home.capacity) to have this resource create it.",
			cfg.Namespace, sh.Claim)})
	default:
		if f := SharedClaimProblem(cfg.Namespace, cfg.AccessMode, c); f != nil {
			res.Errors = append(res.Errors, *f)
		} else if cfg.AccessMode != claims.RWX {
			res.Warnings = append(res.Warnings, claims.Finding{Attribute: "shared_home.claim_name", Summary: "The shared home claim is not ReadWriteMany", Detail: fmt.Sprintf("Claim %s/%s is %v: every user's server mounts it, so all servers must run on the node it is attached to. That works on a one-node cluster; "+
				"elsewhere servers on other nodes fail with Multi-Attach errors. Use a ReadWriteMany claim on a shared file system.", cfg.Namespace, sh.Claim, c.AccessModes)})
		}
	}
}

// checkPerUserClaims names the per-user homes the template names, which
// the layout does not mount: those a migration is moving fail the plan,
// the others stay as they are.
func checkPerUserClaims(cfg Config, live Live, res *Result) {
	sh := cfg.Shared
	var kept, moving []string
	for i := range live.Claims {
		c := &live.Claims[i]
		if c.Username == "" || c.Name == sh.Claim && c.Namespace == cfg.Namespace {
			continue
		}
		if copyInFlight(c) || mergeInFlight(c) {
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
		res.Errors = append(res.Errors, claims.Finding{Attribute: "shared_home", Summary: "A migration of per-user homes is in progress", Detail: fmt.Sprintf("These homes are being migrated by an earlier apply; the shared layout would leave them half-way:\n%s\nFinish the migration (apply with the per-user layout until migration_status says done) first.",
			CutLines(moving))})
	}
	if len(kept) > 0 {
		res.Warnings = append(res.Warnings, claims.Finding{Attribute: "shared_home", Summary: "Per-user home claims are not mounted in the shared layout", Detail: fmt.Sprintf("%d per-user home claim(s) exist; servers mount their directory of %s/%s instead, and these claims stay as they are:\n%s",
			len(kept), cfg.Namespace, sh.Claim, CutLines(kept))})
	}
}

// SharedClaimProblem is why claim c cannot hold the homes of a deployment
// in namespace whose access_mode is mode: it is being deleted, or it has
// another access mode; nil when it can. The plan and the apply (a claim
// made between them, which apply keeps as it is) ask the same.
func SharedClaimProblem(namespace, mode string, c *claims.Claim) *claims.Finding {
	switch {
	case c.Deleting:
		return &claims.Finding{Attribute: "shared_home.claim_name", Summary: "The shared home claim is being deleted", Detail: fmt.Sprintf("Claim %s/%s is being deleted; no server could mount it. It goes once the pods using it stop.", namespace, c.Name)}
	case !slices.Contains(c.AccessModes, mode):
		return &claims.Finding{Attribute: "access_mode", Summary: "The shared home claim has another access mode", Detail: fmt.Sprintf("Claim %s/%s is %v, and access_mode says %s. In the shared layout access_mode is the shared claim's: the hub pins users' servers to one node by it. Set access_mode to the claim's mode.",
			namespace, c.Name, c.AccessModes, mode)}
	}
	return nil
}

// sharedExisted says why the shared claim sh, which does not exist, is
// known to have existed; nil when nothing says so. Creating it again would
// give every user an empty home in place of the one they had: the last
// apply used it (every apply of the shared layout, or of a move out of it,
// found it or created it), a volume was bound to a claim of that name, or
// a home was moved out of it.
func sharedExisted(cfg Config, sh *SharedHome, prior *Prior, live Live) []string {
	var out []string
	if prior != nil && prior.Config.Namespace == cfg.Namespace {
		for _, was := range []*SharedHome{prior.Config.Shared, prior.Config.SplitFrom, prior.Config.MergeInto} {
			if was != nil && was.Claim == sh.Claim {
				out = append(out, "the last apply of this resource used it (the state's shared_home.claim_name)")
				break
			}
		}
	}
	for _, v := range live.FormerSharedVolumes {
		out = append(out, fmt.Sprintf("volume %s was bound to a claim of this name", v))
	}
	for i := range live.Claims {
		c := &live.Claims[i]
		if rec, err := splitRecord(c); err == nil && rec != nil && rec.Namespace == cfg.Namespace && rec.Shared == sh.Claim {
			out = append(out, fmt.Sprintf("claim %s was moved out of it (its record names the shared claim, UID %s)", c.Ref(), orDash(rec.SharedUID)))
		}
	}
	return out
}

// sharedGone is the finding of a shared claim that existed and is gone,
// which create_claim never makes again.
func sharedGone(cfg Config, sh *SharedHome, existed []string) claims.Finding {
	return claims.Finding{Attribute: "shared_home.create_claim", Summary: "The shared home claim existed and is gone", Detail: fmt.Sprintf("Claim %s/%s held every user's home and does not exist any more:\n%s\n"+
		"A new claim of that name would be empty, and every user's server would start in an empty home; shared_home.create_claim never creates a claim that existed. "+
		"Restore it: if its volume is kept (reclaim policy Retain, phase Released), create the claim bound to it (spec.volumeName, after clearing the volume's spec.claimRef), "+
		"or restore it from a backup. If the homes are lost for good and users are to start empty, create the empty claim yourself; the plan then finds it.",
		cfg.Namespace, sh.Claim, CutLines(existed))}
}

// adoptionWarnings are what a plan without a state says of the directories
// of cfg's shared layout (the shared layout's, or the one homes move out
// of): it cannot see which the hub mounts now, and names the listed users
// whose directory older KubeSpawners named otherwise.
func adoptionWarnings(cfg Config) []claims.Finding {
	sh := cfg.Shared
	out := []claims.Finding{{Attribute: "shared_home.sub_path_template", Summary: "The plan cannot see which directories the hub mounts now", Detail: fmt.Sprintf("This resource is new (or its state was removed), so nothing says where servers find their homes today. shared_home.claim_name, sub_path_template (%q) and slug_scheme (%q) "+
		"must be what the hub uses now (zero-to-jupyterhub: singleuser.storage.static.pvcName and .subPath; Nebari classic: home/{username}); otherwise users start in new, empty directories.",
		sh.SubPathTemplate, cfg.Scheme)}}
	return append(out, adoptionWarning(cfg)...)
}

// adoptionWarning names the listed users whose directory under the slug
// scheme differs from KubeSpawner's names before version 7, when the
// layout is adopted (no prior state): a hub that ran an older KubeSpawner
// kept their homes under the other name.
func adoptionWarning(cfg Config) []claims.Finding {
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
	return []claims.Finding{{Attribute: "slug_scheme", Summary: "Some users' directories are named differently than older KubeSpawner named them", Detail: fmt.Sprintf("Under slug_scheme %q these listed users' directories differ from the names KubeSpawner gave them before version 7 (scheme \"escape\"):\n%s\n"+
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
