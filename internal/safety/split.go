package safety

// Moving homes out of the shared layout (Config.SplitFrom): the per-user
// layout, while the homes not yet moved are still directories of the
// shared claim. The hub decides at each spawn: a user whose claim exists
// mounts it, a user without one mounts their directory, a claim whose move
// has not finished refuses the spawn. So the plan never creates an empty
// claim for a user (the hub would mount it instead of their directory):
// with on_layout_change = "migrate" a listed user's directory becomes a
// claim of its own (migration.NextSplit: a volume on that very directory,
// zero copy), otherwise the plan fails naming them.

import (
	"fmt"
	"slices"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/claims"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/kubespawner"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/migration"
)

// OnLayoutChangeMigrate moves listed users' homes from their directory of
// the shared claim into claims of their own (with layout per_user).
const OnLayoutChangeMigrate OnLayoutChange = "migrate"

// directoryView is cfg with the directories of the homes not yet moved
// (SplitFrom) as its shared layout: where a user without a claim of
// their own finds their home.
func directoryView(cfg Config) Config {
	if fb := Fallback(cfg); fb != nil {
		cfg.Shared, cfg.SplitFrom, cfg.MergeInto = fb, nil, nil
	}
	return cfg
}

// Fallback is the shared claim where the hub of the per-user layout finds
// the homes of users without a claim of their own: the one homes move out
// of (SplitFrom) or into (MergeInto); nil when none. Both give the hub the
// same settings: it decides each spawn from the claims.
func Fallback(cfg Config) *SharedHome {
	if cfg.SplitFrom != nil {
		return cfg.SplitFrom
	}
	return cfg.MergeInto
}

// DirectoryOf is the shared claim where users' homes are directories: the
// shared layout's, or the one homes move out of; nil when none.
func DirectoryOf(cfg Config) *SharedHome {
	if cfg.Shared != nil {
		return cfg.Shared
	}
	return Fallback(cfg)
}

// splitRecord is the record of the move that made c, nil when none (or
// when it cannot be read: then splitClaim reports it).
func splitRecord(c *claims.Claim) (*migration.SplitRecord, error) {
	return annotatedRecord(c, migration.SplitAnnotation, migration.DecodeSplitRecord)
}

// annotatedRecord is the record that c's annotation holds, read by decode;
// nil when c has no such annotation, an error when it cannot be read.
func annotatedRecord[R any](c *claims.Claim, annotation string, decode func(string) (R, error)) (*R, error) {
	v := c.Annotations[annotation]
	if v == "" {
		return nil, nil
	}
	rec, err := decode(v)
	if err != nil {
		return nil, err
	}
	return &rec, nil
}

// onSharedDirectory reports whether c's volume is a directory of the
// shared claim: a home moved zero copy (not by a copy, whose claim is one
// of the configured class), or one whose record cannot be read.
func onSharedDirectory(c *claims.Claim) bool {
	if c.Annotations[migration.SplitAnnotation] == "" {
		return false
	}
	rec, err := splitRecord(c)
	return err != nil || rec.Method != migration.MethodDirectoryCopy
}

// moveMethod is how user's directory moves into a claim of its own: zero
// copy when the shared volume can serve it as a volume of its own
// (migration.SplitSource), by a copy when it cannot or when
// migration.method says "copy"; "" (and an error) for "rebind".
func (p *planner) moveMethod(dir string) migration.Method {
	switch p.cfg.Migration.Method {
	case migration.MethodCopy:
		return migration.MethodDirectoryCopy
	case migration.MethodRebind:
		return ""
	}
	if src := p.live.SharedSource; src != nil {
		if _, err := migration.SplitSource(*src, dir); err != nil {
			return migration.MethodDirectoryCopy
		}
	}
	return migration.MethodSplit
}

// splitDone reports whether c is a moved home the hub mounts: bound to the
// volume its record names, or, moved by a copy, marked copied (its own UID
// in migration.SplitCopiedAnnotation).
func splitDone(c *claims.Claim, rec *migration.SplitRecord) bool {
	if rec.Method == migration.MethodDirectoryCopy {
		return c.Annotations[migration.SplitCopiedAnnotation] == c.UID && c.UID != "" && !c.Deleting
	}
	return c.Phase == "Bound" && c.VolumeName == rec.Volume && !c.Deleting
}

// checkSplitFrom: the claim homes move out of must be there, since every
// user without a claim of their own mounts it.
func (p *planner) checkSplitFrom() {
	cfg := p.cfg
	switch c := p.live.Shared; {
	case c == nil && cfg.SplitFrom.Create:
		p.errorf("shared_home.create_claim", "The shared home claim is not created while homes move out of it",
			"Claim %s/%s holds the homes not yet moved into claims of their own, and was not found. shared_home.create_claim never creates it while homes move out of it (layout = \"per_user\"): "+
				"a new claim would be empty, and every user not yet moved would start in an empty directory of it. Name the claim that holds the homes, or restore it.", cfg.Namespace, cfg.SplitFrom.Claim)
	case c == nil:
		p.errorf("shared_home.claim_name", "The shared home claim does not exist",
			"Claim %s/%s holds the homes not yet moved into claims of their own, and was not found. Name the claim that holds them.", cfg.Namespace, cfg.SplitFrom.Claim)
	case c.Deleting:
		p.errorf("shared_home.claim_name", "The shared home claim is being deleted",
			"Claim %s/%s holds the homes not yet moved into claims of their own, and is being deleted. Homes move out of it before it goes, never after.", cfg.Namespace, cfg.SplitFrom.Claim)
	}
	// A named server whose directory is its own must not get the default
	// server's claim: once that is moved, the server would mount it.
	if h, ok := namedServerHomes(cfg, func(h serverHomes) bool { return h.dir != h.serverDir && h.claim == h.serverClaim }); ok {
		p.errorf("pvc_name_template", "Named servers would mount the default server's home",
			"shared_home.sub_path_template gives a named server a directory of its own (%q's server %q: %q; the default server: %q), and pvc_name_template gives it the default server's claim %s. "+
				"Once a user's home is moved into that claim, their named servers would mount it instead of their own directories. "+
				"Use a pvc_name_template with the server's name (e.g. \"claim-{user_server}\"): a named server then keeps its directory until it has a claim of its own.",
			h.user, probeServer, h.serverDir, h.dir, h.claim)
	}
}

// serverHomes are where a user's default server and a named server find
// their homes while homes move out of the shared layout: their
// directories, and the claims the per-user template gives them.
type serverHomes struct {
	user               string
	dir, serverDir     string
	claim, serverClaim claims.Ref
}

// namedServerHomes returns the first homes, of the first listed user or a
// probe name, for which bad holds; false when none does.
func namedServerHomes(cfg Config, bad func(serverHomes) bool) (serverHomes, bool) {
	view := directoryView(cfg)
	for _, u := range append(slices.Clone(cfg.Users[:min(len(cfg.Users), 1)]), probeUsers...) {
		dir, err1 := view.homeFor(u, "")
		serverDir, err2 := view.homeFor(u, probeServer)
		claim, err3 := cfg.homeFor(u, "")
		serverClaim, err4 := cfg.homeFor(u, probeServer)
		h := serverHomes{user: u, dir: dir.dir, serverDir: serverDir.dir, claim: claim.claim, serverClaim: serverClaim.claim}
		if err1 == nil && err2 == nil && err3 == nil && err4 == nil && bad(h) {
			return h, true
		}
	}
	return serverHomes{}, false
}

// splitHome plans a listed user's home that has no claim while homes move
// out of the shared layout: the user's directory of the shared claim.
func (p *planner) splitHome(up *UserPlan) {
	cfg := p.cfg
	dir, err := directoryView(cfg).SharedDirectory(up.User)
	if err != nil {
		p.errorf("users", "Username cannot be turned into a directory", "%q: %v", up.User, err)
		up.Action, up.Reason = ActionKeep, "its directory cannot be named"
		return
	}
	from := fmt.Sprintf("directory %q of claim %s/%s", dir, cfg.Namespace, cfg.SplitFrom.Claim)
	up.Action, up.Reason = ActionKeep, from+"; moved by a later apply"
	switch {
	case cfg.OnLayoutChange != OnLayoutChangeMigrate:
		up.Reason = from
		p.g.inDirectories = append(p.g.inDirectories, *up)
	case cfg.Migration.BatchSize > 0 && len(p.g.migrating) >= cfg.Migration.BatchSize:
		up.Reason += " (batch_size)"
	default:
		switch up.Method = p.moveMethod(dir); up.Method {
		case migration.MethodSplit:
			up.Volume = migration.SplitVolumeName(up.Namespace, up.ClaimName)
			up.Reason = fmt.Sprintf("%s becomes claim %s on volume %s (zero copy)", from, up.ClaimName, up.Volume)
		case migration.MethodDirectoryCopy:
			up.Reason = fmt.Sprintf("%s is copied into a new claim %s (class %q); the directory stays as it is", from, up.ClaimName, p.cfg.StorageClass)
			if !p.copyCanStart(up, from) {
				return
			}
		default:
			up.Reason = from
			p.g.rebindDirs = append(p.g.rebindDirs, *up)
			return
		}
		up.Action = ActionMigrate
		p.g.migrating = append(p.g.migrating, *up)
	}
}

// copyCanStart reports whether a move by copy of up's directory (from)
// can run in this apply: it needs migration.copy_image, and a hub that
// refuses the user's spawns while the copy runs, one with the move's
// settings, which the last apply gave it (until then the hub mounts the
// directory whatever claim exists, and what the user writes there would
// be missing from the copy). Otherwise up is kept, in a group a finding
// names.
func (p *planner) copyCanStart(up *UserPlan, from string) bool {
	switch {
	case p.cfg.Migration.CopyImage == "":
		up.Action, up.Reason = ActionKeep, from+"; needs a copy: set migration.copy_image"
		p.g.noCopyImage = append(p.g.noCopyImage, *up)
		return false
	case !p.hubRefusesCopy(up):
		up.Action, up.Reason = ActionKeep, from+"; copied by a later apply, once the hub has the move's settings"
		p.g.hubFirst = append(p.g.hubFirst, *up)
		return false
	case p.live.DirectoriesInUse != nil && p.homeInUse(up):
		// The copy would wait for the pod at apply; not counted in batch_size.
		up.Action, up.Reason = ActionKeep, from+"; a running pod uses it: copied by a later apply"
		switch {
		case !p.cfg.Migration.SkipRunning:
			p.g.dirsInUse = append(p.g.dirsInUse, *up)
		case up.Live != nil:
			p.g.refusedMeanwhile = append(p.g.refusedMeanwhile, *up) // its claim exists: the hub refuses the user meanwhile
		}
		return false
	}
	return true
}

// hubRefusesCopy reports whether the hub refuses up's spawns once a move
// by copy has made up's claim: the hub runs the configuration the last
// apply recorded (the prior state's) until this apply is done, and only a
// hub whose template names that very claim for the user refuses a claim
// being copied (check_split). A hub in the shared layout mounts the
// directory, one of another template another home (a per-user one may
// have KubeSpawner create an empty claim first): what the user writes
// there during the copy would be missing from the copy. So a move by copy
// starts in the apply after one that gave the hub this layout and finished
// without an error (Prior.HubSwitched; with no state, the hub's layout is
// not known).
func (p *planner) hubRefusesCopy(up *UserPlan) bool {
	if p.prior == nil || Fallback(p.prior.Config) == nil || !p.prior.HubSwitched {
		return false
	}
	h, err := p.prior.Config.homeFor(up.User, "")
	return err == nil && h.claim == up.Ref()
}

// dirOf is up's directory of the shared claim ("" when it cannot be named:
// reported where it is named).
func (p *planner) dirOf(up *UserPlan) string {
	h, _ := directoryView(p.cfg).homeFor(up.User, up.Server)
	return h.dir
}

// homeInUse reports whether a running pod uses up's directory, or a place
// it had under earlier settings that the directory Job renames it from
// (a pod started before the rename uses the same files).
func (p *planner) homeInUse(up *UserPlan) bool {
	if p.live.DirectoriesInUse.Uses(p.dirOf(up)) {
		return true
	}
	for _, d := range MovedDirectories(p.places, up.User) {
		if p.live.DirectoriesInUse.Uses(d) {
			return true
		}
	}
	return false
}

// splitClaim plans a claim that a move out of the shared layout made:
// bound to its volume, it is the user's home like any other claim (its
// storage class "" is not a difference: splitDiffers); not yet, the move
// resumes (on_layout_change = "migrate" with shared_home) or the plan fails,
// saying how to finish it. It reports whether the claim was planned here.
func (p *planner) splitClaim(up *UserPlan) bool {
	c := up.Live
	rec, err := splitRecord(c)
	switch {
	case err != nil:
		up.Action, up.Reason = ActionKeep, "its move's record cannot be read"
		p.errorf("users", "A moved home's record cannot be read", "Claim %s of user %q: %v. Nothing is done with it; fix or remove the annotation %s.",
			up.Ref(), up.User, err, migration.SplitAnnotation)
		return true
	case rec == nil || splitDone(c, rec):
		return false
	}
	from := fmt.Sprintf("directory %q of claim %s/%s", rec.Directory, rec.Namespace, rec.Shared)
	if rec.Method == migration.MethodDirectoryCopy && p.copyClaimNotOurs(up, rec) {
		return true
	}
	if p.splitStopped(up, rec, from) {
		return true
	}
	up.Action, up.Method, up.Volume = ActionMigrate, migration.MethodSplit, rec.Volume
	up.Reason = fmt.Sprintf("resume moving %s into claim %s (volume %s)", from, up.ClaimName, rec.Volume)
	if rec.Method == migration.MethodDirectoryCopy {
		up.Method, up.Volume = migration.MethodDirectoryCopy, ""
		up.Reason = fmt.Sprintf("resume copying %s into claim %s", from, up.ClaimName)
		if !p.copyCanStart(up, from) {
			return true
		}
	}
	p.g.migrating = append(p.g.migrating, *up)
	return true
}

// splitStopped fails the plan for an unfinished move of up's home from
// from that this plan cannot resume: one begun from another directory than
// the user's under the settings now, one the settings do not ask to finish
// (on_layout_change = "migrate" with shared_home naming its claim, the
// user managed), or one begun on a shared claim since made again. Each
// error says how to finish or undo it. It reports whether it did.
func (p *planner) splitStopped(up *UserPlan, rec *migration.SplitRecord, from string) bool {
	// What the move made and how to undo it: a move by copy made a claim
	// and no volume (deleting the claim deletes a copy only).
	into := fmt.Sprintf("claim %s (volume %s)", up.Ref(), rec.Volume)
	undo := fmt.Sprintf("delete claim %s and volume %s (its reclaim policy is Retain: the directory and its files stay)", up.Ref(), rec.Volume)
	if rec.Method == migration.MethodDirectoryCopy {
		into = fmt.Sprintf("claim %s (by a copy)", up.Ref())
		undo = fmt.Sprintf("delete claim %s (it holds a copy, not yet the home: the directory and its files stay as they are)", up.Ref())
	}
	if dir, err := directoryView(p.cfg).SharedDirectory(up.User); p.cfg.SplitFrom != nil && (err != nil || dir != rec.Directory || rec.User != up.User || rec.Namespace != up.Namespace) {
		up.Action, up.Reason = ActionKeep, "its move from "+from+" has not finished"
		p.errorf("shared_home", "A move out of the shared layout began from another directory",
			"An earlier apply began moving %q's home from %s into %s, and it has not finished; under the settings now the user's directory is %q. "+
				"Restore the settings it began with (shared_home.sub_path_template, slug_scheme) and apply to finish it, or undo it: %s.",
			up.User, from, into, dir, undo)
		return true
	}
	sf := p.cfg.SplitFrom
	if sf == nil || sf.Claim != rec.Shared || p.cfg.OnLayoutChange != OnLayoutChangeMigrate || !up.Managed {
		up.Action, up.Reason = ActionKeep, "its move from "+from+" has not finished"
		p.errorf("on_layout_change", "A move out of the shared layout has not finished",
			"An earlier apply began moving %q's home from %s into %s, and it has not finished; the hub refuses the user's spawns until it has. "+
				"Finish it: apply with layout = \"per_user\", shared_home naming claim %s, on_layout_change = \"migrate\" and the user listed in users. "+
				"Or undo it: %s; the user's next spawn mounts the directory again.",
			up.User, from, into, rec.Shared, undo)
		return true
	}
	if shared := p.live.Shared; shared != nil && rec.SharedUID != "" && shared.UID != rec.SharedUID {
		up.Action, up.Reason = ActionKeep, "its move from "+from+" began on another claim of that name"
		p.errorf("shared_home.claim_name", "The shared claim was made again since a move began",
			"An earlier apply began moving %q's home from %s into claim %s, when the shared claim had UID %s; claim %s/%s now has UID %s: it was deleted and made again. "+
				"The move does not go on from another claim. Find out where the user's files are; delete claim %s (and volume %s, if any: its reclaim policy is Retain) and apply again to move them from the claim as it is now.",
			up.User, from, up.Ref(), rec.SharedUID, rec.Namespace, rec.Shared, shared.UID, up.Ref(), orDash(rec.Volume))
		return true
	}
	return false
}

// copyClaimNotOurs fails the plan for a claim of a move by copy that the
// copy cannot go on with, whatever the settings: one marked copied for
// another UID (made again, a restore: it may hold the user's home, never
// to be deleted on the plan's word) or one being deleted. It reports
// whether it did.
func (p *planner) copyClaimNotOurs(up *UserPlan, rec *migration.SplitRecord) bool {
	c := up.Live
	mark := c.Annotations[migration.SplitCopiedAnnotation]
	switch {
	case mark != "":
		up.Action, up.Reason = ActionKeep, "a copied home made again"
		p.errorf("users", "A copied home was made again",
			"Claim %s of user %q carries the mark of a finished copy of directory %q for another claim (UID %s; this one is %s): it was deleted and made again, by a restore for instance. "+
				"It may hold the user's home: nothing is copied over it and the hub does not mount it. If it holds the user's files, set annotation %s to %s (the claim's UID) by hand; "+
				"do not delete it unless you know it holds nothing of value.",
			up.Ref(), up.User, rec.Directory, mark, c.UID, migration.SplitCopiedAnnotation, c.UID)
		return true
	case c.Deleting:
		up.Action, up.Reason = ActionKeep, "a claim of a move by copy being deleted"
		p.errorf("users", "A claim of a move by copy is being deleted",
			"Claim %s of user %q, the new claim of an unfinished copy of directory %q, is being deleted (a running copy Job may hold it). Nothing is copied into it; the directory holds everything. "+
				"Once it is gone, apply again to copy the directory afresh.",
			up.Ref(), up.User, rec.Directory)
		return true
	}
	return false
}

// rebindWhileMoving plans a rebind an earlier apply started, found while
// homes move out of the shared layout, where the hub mounts a server's
// directory whenever its claim is missing. Before the rebind deletes the
// old claim it is not continued: in its window the user would write where
// the rebound home does not look. Once the claim is gone that window is
// open already, and finishing the rebind is what closes it: it is
// finished, and the directory the user may have written to is named.
func (p *planner) rebindWhileMoving(up *UserPlan, ip InProgress) {
	rec := ip.Record
	dir, err := directoryView(p.cfg).homeFor(up.User, up.Server)
	if err != nil {
		up.Action, up.Volume, up.Reason = ActionKeep, ip.Volume, "its directory cannot be named"
		p.errorf("users", "Username cannot be turned into a directory", "%q: %v", up.User, err)
		return
	}
	if c := up.Live; c != nil && !slices.Equal(c.AccessModes, []string{rec.To}) {
		up.Action, up.Volume = ActionKeep, ip.Volume
		up.Reason = fmt.Sprintf("the rebind an earlier apply started (volume %s, step %s) is not continued while homes move out of the shared layout", ip.Volume, rec.Step)
		p.errorf("layout", "A rebind is in progress while homes move out of the shared layout",
			"An earlier apply began rebinding %q's claim %s onto volume %s (step %s) and has not deleted the claim yet. While homes move out of the shared layout the hub mounts "+
				"a server's directory whenever its claim is missing: between the deletion and the new claim the user would write in %s, which the rebound home does not show. "+
				"Finish the rebind first: apply without shared_home (layout = \"per_user\", on_mode_change = \"migrate\") until migration_status says done, then start the move. "+
				"Or undo it: set the volume's reclaim policy back to %s and remove its annotation %s and label %s.",
			up.Who(), up.Ref(), ip.Volume, rec.Step, dir, orDash(rec.ReclaimPolicy), migration.RecordAnnotation, migration.NamespaceLabel)
		return
	}
	p.resume(up, ip)
	if up.Live == nil && up.Action == ActionMigrate {
		p.warnf("layout", "A rebind's claim is missing while homes move out of the shared layout",
			"An earlier apply began rebinding %q's claim %s onto volume %s and deleted the claim; until apply makes it again the hub mounts %s instead. "+
				"Apply finishes the rebind now. Whatever the user wrote in that directory meanwhile stays there and is not in the rebound home: look before the user spawns again.",
			up.Who(), up.Ref(), ip.Volume, dir)
	}
}

// checkNamedServersOfCopies: a named server that shares the default
// server's directory but not its claim would keep mounting the directory
// after the default server's home was copied out of it: the user's servers
// would see two homes. A move by copy needs the named servers on the
// default server's claim then (zero copy, both are the same files).
func (p *planner) checkNamedServersOfCopies() {
	if p.cfg.SplitFrom == nil {
		return // named servers mount their own claims: no directory is left to them
	}
	copying := len(p.g.hubFirst) > 0 || slices.ContainsFunc(p.g.migrating, func(up UserPlan) bool { return up.Method == migration.MethodDirectoryCopy }) ||
		slices.ContainsFunc(p.live.Claims, func(c claims.Claim) bool {
			return c.Annotations[migration.SplitAnnotation] != "" && !onSharedDirectory(&c)
		})
	if !copying {
		return
	}
	if h, ok := namedServerHomes(p.cfg, func(h serverHomes) bool { return h.dir == h.serverDir && h.claim != h.serverClaim }); ok {
		p.errorf("pvc_name_template", "Named servers would keep the directory a copy leaves behind",
			"Homes move by a copy, and a named server shares the default server's directory (%q for %q's server %q) but not its claim (%s, not %s): "+
				"after the copy it would keep mounting the directory, while the default server mounts the copy, and the user's servers would see two different homes. "+
				"Use pvc_name_template = \"claim-{username}\" (named servers mount the default server's claim), or a storage the move can split zero copy.",
			h.dir, h.user, probeServer, h.serverClaim, h.claim)
	}
}

// splitFindings: listed users whose home is still a directory while
// on_layout_change does not say to move them, or migration.method says
// rebind, which cannot move a directory.
func (p *planner) splitFindings() {
	if h := p.g.hubFirst; len(h) > 0 {
		p.warnf("layout", "Homes are copied from the next apply on",
			"%d listed user(s) move by a copy, which starts once the hub has the move's settings (this apply gives them, through spawner_settings): "+
				"from the creation of a user's claim until the copy is verified the hub must refuse the user's spawns, and the hub of the shared layout mounts the directory whatever claim exists, "+
				"so what the user wrote there meanwhile would be missing from the copy:\n%s\nApply again once the hub runs with the new settings (jupyter_spawner_config, and Helm when the hub's files come from there).",
			len(h), describeReasons(h))
	}
	if r := p.g.refusedMeanwhile; len(r) > 0 {
		p.warnf("migration.skip_running", "Copies under way wait for pods using the directories",
			"%d listed user(s) have a copy under way (their claim exists, so the hub refuses their spawns until it is done), and a running pod mounts their directory of the shared claim, a directory above it, or all of it:\n%s\n"+
				"Find the pods mounting claim %s/%s (a server started before the copy, a backup or admin pod) and stop them; the next apply then copies.",
			len(r), describeReasons(r), p.cfg.Namespace, p.cfg.SplitFrom.Claim)
	}
	if u := p.g.dirsInUse; len(u) > 0 {
		p.errorf("migration.skip_running", "Homes in use cannot be copied",
			"%d listed user(s) have a running pod that mounts their directory of the shared claim (or all of it), and their home moves by a copy, which waits while it is in use:\n%s\n"+
				"Stop those servers and plan again, or set migration.skip_running = true to copy the others now and these by a later apply.",
			len(u), describeReasons(u))
	}
	if n := p.g.noCopyImage; len(n) > 0 {
		p.errorf("migration.copy_image", "Homes in directories need a copy image",
			"%d listed user(s) have their home in a directory of the shared claim that moves by a copy (the shared volume cannot serve a directory as a volume of its own, or migration.method = \"copy\"):\n%s\n"+
				"Set migration.copy_image to an image with sh and rsync 3: a Job copies each directory into the user's new claim and compares both.",
			len(n), describeReasons(n))
	}
	p.checkNamedServersOfCopies()
	if r := p.g.rebindDirs; len(r) > 0 {
		p.errorf("migration.method", "A rebind cannot move a directory",
			"migration.method = \"rebind\", and %d listed user(s) have their home in a directory of the shared claim:\n%s\n"+
				"A directory moves into a claim of its own zero copy (a volume on that directory, where the shared volume allows it) or by a copy. "+
				"Set migration.method = \"auto\" (zero copy where it can, else a copy) or \"copy\".",
			len(r), describeReasons(r))
	}
	in := p.g.inDirectories
	if len(in) == 0 {
		return
	}
	p.errorf("on_layout_change", "Listed users' homes are directories of the shared claim",
		"layout = \"per_user\", and %d listed user(s) have no claim of their own: their home is their directory of the shared claim, where the hub keeps mounting it:\n%s\n"+
			"Set on_layout_change = \"migrate\" to move each into a claim of its own (a volume on that very directory: nothing is copied), or leave them out of users for now. "+
			"A claim is never created empty for them: the hub would mount it instead of their directory.",
		len(in), describeReasons(in))
}

// splitMoves is what a change to the layout of moving homes out of the
// shared one (cfg.SplitFrom) does to homes. Homes that are directories stay
// where the shared layout had them unless the shared claim, the sub-path
// template or the slug scheme change (compared as between two shared
// layouts). From the shared layout (or with no prior state, when the hub's
// layout is unknown), a home claim that a move did not make is one the hub
// starts mounting instead of the user's directory: named, as a move. While
// moving, such a claim (made by someone since, or kept when the move began)
// is named in a warning: the hub mounts it, not the directory. From the
// per-user layout nothing moves: every claim stays its user's home.
func splitMoves(cfg Config, prior *Prior, live Live) moves {
	s := splitMover{cfg: cfg, now: directoryView(cfg), prior: prior, live: live}
	// Without a state, merge records on this shared claim say the hub has
	// the merge's settings (a state removed mid-merge): its claims are
	// mounted as they are now.
	s.moving = prior != nil && Fallback(prior.Config) != nil || prior == nil && cfg.MergeInto != nil && mergesInto(live, cfg.Namespace, cfg.MergeInto.Claim)
	switch {
	case prior != nil && prior.Config.Shared == nil && !s.moving:
		return s.m
	case prior != nil:
		s.m = s.directoryMoves()
	}
	for i := range live.Claims {
		s.claim(&live.Claims[i])
	}
	if s.moving {
		slices.Sort(s.m.mounted)
		return s.m // rebinds in progress: planner.rebindWhileMoving
	}
	s.rebinds()
	slices.Sort(s.m.listed)
	return s.m
}

// splitMover gathers splitMoves' moves.
type splitMover struct {
	cfg   Config
	now   Config // cfg's directories (directoryView)
	prior *Prior
	live  Live
	// moving: the hub already moves homes out of the shared layout (or
	// has the merge's settings): claims it mounts are named, not moves.
	moving bool
	m      moves
}

// directoryMoves compares the directories of the listed users without a
// claim of their own (as between two shared layouts).
func (s *splitMover) directoryMoves() moves {
	was := *s.prior
	was.Config = directoryView(was.Config)
	// Listed users with a claim of their own are not in a directory.
	inDirs := s.now
	inDirs.Users = nil
	for _, u := range s.cfg.Users {
		if !hasOwnClaim(s.cfg, s.live, u) {
			inDirs.Users = append(inDirs.Users, u)
		}
	}
	return layoutMoves(inDirs, &was, s.live)
}

// claim names claim c when the hub mounts it instead of its user's
// directory: a move, or while moving a claim the hub mounts.
func (s *splitMover) claim(c *claims.Claim) {
	cfg, prior, moving := s.cfg, s.prior, s.moving
	server, ok := claimMounted(cfg, c)
	if !ok {
		return
	}
	dir, err := s.now.homeFor(c.Username, server)
	if err != nil {
		return
	}
	who := c.Username
	if server != "" {
		who += "'s server " + server
	}
	if !hasMergeRecord(c) && prior == nil && moving && c.Annotations[migration.SplitAnnotation] == "" && s.live.DirectoriesInUse != nil && s.live.DirectoriesInUse.Uses(dir.dir) {
		// Adopted as the merge's hub (merge records, no state), but a
		// pod mounts this user's directory, which the merge's hub never
		// gives a user whose claim is not merged: the hub may be the
		// shared layout's, and the claim would replace the directory.
		s.m.listed = append(s.m.listed, fmt.Sprintf("%s: %s → claim %s (a claim no merge copied, while a pod mounts the directory: the hub may mount directories now)", who, dir, cfg.ref(c)))
		return
	}
	if hasMergeRecord(c) || moving && cfg.MergeInto != nil && c.Annotations[migration.SplitAnnotation] == "" {
		// Merged: the hub mounts the directory (compared above); under
		// way, or a claim a merge is yet to copy: planned as a home.
		return
	}
	if c.Annotations[migration.SplitAnnotation] != "" {
		s.movedHome(c, who, dir, server)
		return
	}
	line := fmt.Sprintf("%s: %s → claim %s (a claim of the per-user layout, not a moved home)", who, dir, cfg.ref(c))
	if moving {
		s.m.mounted = append(s.m.mounted, line)
	} else {
		s.m.listed = append(s.m.listed, line)
	}
}

// movedHome names moved home c of who (server's home) when it is a move: a
// moved home is the directory its record names, a move only when the
// shared layout mounted another one.
func (s *splitMover) movedHome(c *claims.Claim, who string, dir homeOf, server string) {
	rec, err := splitRecord(c)
	if err != nil || rec == nil || s.prior == nil || s.moving {
		return
	}
	if rec.Method == migration.MethodDirectoryCopy && splitDone(c, rec) {
		// A copy an earlier move made: what was written in the
		// directory since is not in it.
		s.m.listed = append(s.m.listed, fmt.Sprintf("%s: %s → claim %s (a copy of directory %q an earlier move made, without what was written there since)", who, dir, s.cfg.ref(c), rec.Directory))
		return
	}
	from, err := s.prior.Config.homeFor(c.Username, server)
	if err == nil && (from.dir != rec.Directory || from.claim != (claims.Ref{Namespace: rec.Namespace, Name: rec.Shared})) {
		s.m.listed = append(s.m.listed, fmt.Sprintf("%s: %s → claim %s (moved from directory %q)", who, from, s.cfg.ref(c), rec.Directory))
	}
}

// rebinds names the rebinds in progress whose old claim is gone: the
// rebind makes that claim again, and the hub then mounts it instead of the
// user's directory.
func (s *splitMover) rebinds() {
	cfg, live := s.cfg, s.live
	for ref, ip := range live.InProgress {
		u := ip.Record.User
		if u == "" || ip.Record.Annotations[kubespawner.AnnotationServername] != "" || hasOwnClaim(cfg, live, u) {
			continue
		}
		if name, err := cfg.homeFor(u, ""); err != nil || name.claim != ref {
			continue
		}
		if dir, err := s.now.homeFor(u, ""); err == nil {
			s.m.listed = append(s.m.listed, fmt.Sprintf("%s: %s → claim %s (being rebound onto volume %s)", u, dir, ref, ip.Volume))
		}
	}
}

// claimMounted reports whether the hub, moving homes out of the shared
// layout (or back into it from such a move), mounts claim c as a server's
// home instead of its directory, and whose server ("" for the default
// one): the claim the template names for the server; for a default
// server also any claim labelled with the user that is no other claim of
// theirs, since KubeSpawner may remember it under an older name
// (perUserHomeOf).
func claimMounted(cfg Config, c *claims.Claim) (string, bool) {
	if c.Username == "" || cfg.ref(c).Namespace != cfg.Namespace {
		return "", false
	}
	// A named server's claim of the name the template gives the default
	// server (claim-{username}) is the one the hub mounts for it too.
	if h, err := cfg.homeFor(c.Username, ""); err == nil && h.claim == cfg.ref(c) {
		return "", true
	}
	if c.Servername != "" {
		h, err := cfg.homeFor(c.Username, c.Servername)
		return c.Servername, err == nil && h.claim == cfg.ref(c)
	}
	return "", perUserHomeOf(directoryView(cfg), c, c.Username)
}

// backFromSplit is what going back to the shared layout from a move out
// of it does to the claims the move's hub mounted: a moved home whose
// directory is the user's under the new settings holds the same files;
// any other (a claim no move made, or a move from another directory) is
// a home the hub no longer mounts.
func backFromSplit(cfg, was Config, live Live) []string {
	var listed []string
	for i := range live.Claims {
		c := &live.Claims[i]
		server, ok := claimMounted(was, c)
		if !ok {
			continue
		}
		to, err := cfg.homeFor(c.Username, server)
		if err != nil {
			continue
		}
		who := c.Username
		if server != "" {
			who += "'s server " + server
		}
		if hasMergeRecord(c) {
			if line := backFromMerge(c, to); line != "" {
				listed = append(listed, who+": "+line)
			}
			continue
		}
		rec, err := splitRecord(c)
		switch {
		case err != nil:
			listed = append(listed, fmt.Sprintf("%s: claim %s → %s (its move's record cannot be read)", who, c.Ref(), to))
		case rec == nil:
			listed = append(listed, fmt.Sprintf("%s: claim %s → %s (a claim no move made: what it holds is not in the directory)", who, c.Ref(), to))
		case rec.Method == migration.MethodDirectoryCopy && splitDone(c, rec):
			listed = append(listed, fmt.Sprintf("%s: claim %s → %s (copied from directory %q: what was written in the claim since is not in the directory)", who, c.Ref(), to, rec.Directory))
		case rec.Namespace != to.claim.Namespace || rec.Shared != to.claim.Name || rec.Directory != to.dir:
			listed = append(listed, fmt.Sprintf("%s: claim %s → %s (moved from directory %q of claim %s/%s)", who, c.Ref(), to, rec.Directory, rec.Namespace, rec.Shared))
		}
	}
	slices.Sort(listed)
	return listed
}

// unsplitMoves is what leaving the move out of the shared layout for the
// per-user layout does: users whose home is still a directory (no claim of
// their own where the move's settings look) would get a new, empty claim,
// or another claim the new settings name.
func unsplitMoves(cfg, was Config, live Live) moves {
	var m moves
	old := directoryView(was)
	for _, u := range cfg.Users {
		if hasOwnClaim(was, live, u) {
			continue
		}
		if from, err := old.homeFor(u, ""); err == nil {
			to, _ := cfg.homeFor(u, "")
			m.listed = append(m.listed, fmt.Sprintf("%s: %s → %s", u, from, to))
		}
	}
	m.example = fmt.Sprintf("every user not listed who was never moved: their directory of claim %s/%s is no longer mounted, and KubeSpawner gives them a new, empty claim",
		was.Namespace, Fallback(was).Claim)
	return m
}

// hasOwnClaim reports whether user u's default server has a claim of its
// own under cfg's template.
func hasOwnClaim(cfg Config, live Live, u string) bool {
	h, err := cfg.homeFor(u, "")
	if err != nil || h.dir != "" {
		return false
	}
	for i := range live.Claims {
		if c := &live.Claims[i]; cfg.ref(c) == h.claim {
			return !merged(c) // a merged claim's home is the directory
		}
	}
	return false
}
