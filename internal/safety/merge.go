package safety

// Moving homes into the shared layout (Config.MergeInto; layout =
// "shared" with on_layout_change = "migrate"): consolidation. The hub runs
// the per-user layout with the shared claim as fallback, as while homes
// move out of it: a user's claim is mounted until a merge copied it into
// the user's directory of the shared claim and marked it (its own UID in
// migration.MergedAnnotation); then, and for a user without a claim, the
// directory is the home. A claim whose merge is under way refuses the
// spawn. So a batch can stop anywhere: merged users get their directory,
// the others their claim. Nothing is deleted: the claims stay, stale once
// merged.

import (
	"fmt"
	"slices"
	"strings"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/claims"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/kubespawner"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/migration"
)

// mergeRecord is the record of the merge that copied c, nil when none;
// an error when it cannot be read.
func mergeRecord(c *claims.Claim) (*migration.MergeRecord, error) {
	return annotatedRecord(c, migration.MergeAnnotation, migration.DecodeMergeRecord)
}

// merged reports whether c is a finished merge: the hub of the fallback
// mounts the user's directory instead, the hub of the per-user layout
// refuses the user.
func merged(c *claims.Claim) bool {
	return migration.Merged(c.Annotations, c.UID)
}

// mergeClaim plans a claim that carries a merge record, in any layout but
// the shared one: finished, it is the stale source of the user's
// directory (kept); under way, the merge resumes (MergeInto, the same
// directory, the user listed) or the plan fails saying how to finish or
// undo it. It reports whether the claim was planned here.
func (p *planner) mergeClaim(up *UserPlan) bool {
	c := up.Live
	rec, err := mergeRecord(c)
	if rec == nil && err == nil && c.Annotations[migration.MergedAnnotation] == "" {
		return false
	}
	up.Action = ActionKeep
	undo := fmt.Sprintf("remove annotation %s from claim %s (the claim is the home again; the directory keeps a partial copy to remove by hand)", migration.MergeAnnotation, up.Ref())
	switch {
	case err != nil:
		up.Reason = "its merge record cannot be read"
		p.errorf("users", "A merge record cannot be read", "Claim %s of user %q: %v. The hub refuses the user's spawns while it carries it. Fix or remove the annotation %s.",
			up.Ref(), up.User, err, migration.MergeAnnotation)
		return true
	case merged(c):
		up.Reason = fmt.Sprintf("merged into directory %q of claim %s/%s; the claim is kept as it was", rec.Directory, rec.Namespace, rec.Shared)
		if Fallback(p.cfg) == nil {
			up.Reason += "; the hub of this layout refuses the user's spawns"
			p.g.mergedAway = append(p.g.mergedAway, *up)
		} else if dir := p.dirOf(up); dir != rec.Directory || Fallback(p.cfg).Claim != rec.Shared || rec.Namespace != p.cfg.Namespace {
			up.Reason += fmt.Sprintf("; the hub now mounts directory %q of claim %s/%s instead", dir, p.cfg.Namespace, Fallback(p.cfg).Claim)
			p.g.mergedElsewhere = append(p.g.mergedElsewhere, *up)
		}
		return true
	case c.Annotations[migration.MergedAnnotation] != "" || rec == nil || rec.ClaimUID != c.UID:
		up.Reason = "a merged home made again"
		p.errorf("users", "A merged claim was made again",
			"Claim %s of user %q carries a merge's record or mark for another claim (its UID is %s): it was deleted and made again, by a restore for instance. "+
				"The hub refuses the user's spawns while it does. Find where the user's files are: if this claim is the home, remove annotations %s and %s; "+
				"if the directory is, set %s to the claim's UID.",
			up.Ref(), up.User, orDash(c.UID), migration.MergeAnnotation, migration.MergedAnnotation, migration.MergedAnnotation)
		return true
	}
	into := fmt.Sprintf("directory %q of claim %s/%s", rec.Directory, rec.Namespace, rec.Shared)
	mi := p.cfg.MergeInto
	switch {
	case mi == nil || mi.Claim != rec.Shared || rec.Namespace != p.cfg.Namespace || rec.User != up.User || p.dirOf(up) != rec.Directory || !up.Managed:
		up.Reason = "its merge into " + into + " has not finished"
		p.errorf("on_layout_change", "A merge into the shared layout has not finished",
			"An earlier apply began copying %q's claim %s into %s, and it has not finished; the hub refuses the user's spawns while homes move (and mounts the claim in the per-user layout). "+
				"Finish it: apply with layout = \"shared\", shared_home naming claim %s with the same sub_path_template and slug_scheme, on_layout_change = \"migrate\" and the user listed in users. Or undo it: %s.",
			up.User, up.Ref(), into, rec.Shared, undo)
		return true
	case p.live.Shared != nil && p.live.Shared.UID != rec.SharedUID:
		up.Reason = "its merge began into another claim of that name"
		p.errorf("shared_home.claim_name", "The shared claim was made again since a merge began",
			"An earlier apply began copying %q's claim %s into %s when the shared claim had UID %s; it now has UID %s. Nothing is copied into another claim. "+
				"Find out what the directory holds; to start again, %s.", up.User, up.Ref(), into, rec.SharedUID, p.live.Shared.UID, undo)
		return true
	}
	up.Reason = fmt.Sprintf("resume copying claim %s into %s", up.Ref(), into)
	if p.mergeCanStart(up) {
		up.Action, up.Method = ActionMigrate, migration.MethodMerge
		p.g.migrating = append(p.g.migrating, *up)
	}
	return true
}

// mergeHome plans a listed user's claim, with no merge record, while
// homes move into the shared layout: copied into the user's directory
// (up to batch_size per apply), once the hub refuses the user meanwhile
// and no pod uses the claim or the directory.
func (p *planner) mergeHome(up *UserPlan) {
	dir := p.dirOf(up)
	up.Action = ActionKeep
	if rec, err := splitRecord(up.Live); err == nil && rec != nil && rec.Method == migration.MethodDirectoryCopy && rec.Namespace == p.cfg.Namespace &&
		rec.Shared == p.cfg.MergeInto.Claim && rec.Directory == dir {
		// Copied out of that directory, which still holds the files as they
		// were then: the merge refuses a directory that holds anything.
		p.g.staleDirectories = append(p.g.staleDirectories, *up)
	}
	up.Reason = fmt.Sprintf("claim %s is copied into directory %q of claim %s/%s by a later apply", up.Ref(), dir, p.cfg.Namespace, p.cfg.MergeInto.Claim)
	switch {
	case dir == "":
		up.Reason = "its directory cannot be named"
		_, err := directoryView(p.cfg).SharedDirectory(up.User)
		p.errorf("users", "Username cannot be turned into a directory", "%q: %v", up.User, err)
		return
	case p.live.Shared != nil && InMergeDirectory(p.cfg, up.User, up.Live, p.live.Shared.UID):
		up.Reason = fmt.Sprintf("claim %s is a volume on directory %q of claim %s/%s (a move out of the shared layout made it, zero copy): the home is in the directory already; nothing is copied",
			up.Ref(), dir, p.cfg.Namespace, p.cfg.MergeInto.Claim)
		return
	case p.cfg.Migration.BatchSize > 0 && len(p.g.migrating) >= p.cfg.Migration.BatchSize:
		up.Reason += " (batch_size)"
		return
	case !p.mergeCanStart(up):
		return
	}
	up.Action, up.Method = ActionMigrate, migration.MethodMerge
	up.Reason = fmt.Sprintf("claim %s is copied into directory %q of claim %s/%s; the claim stays as it is", up.Ref(), dir, p.cfg.Namespace, p.cfg.MergeInto.Claim)
	p.g.migrating = append(p.g.migrating, *up)
}

// InMergeDirectory reports whether claim c, user's home, is the user's
// directory of the shared claim homes move into (cfg.MergeInto) already: a
// move out of the shared layout made it, zero copy, a volume on that very
// directory (its record names the directory, and it is bound to its
// volume), of the shared claim of UID sharedUID ("": not compared). Its
// files are the directory's: a merge has nothing to copy, and its
// directory Job would refuse the directory, which holds them (moving them
// away, as that error says, would empty the user's home). The hub mounts
// the same files whether it mounts the claim or the directory.
func InMergeDirectory(cfg Config, user string, c *claims.Claim, sharedUID string) bool {
	if cfg.MergeInto == nil || c == nil {
		return false
	}
	rec, err := splitRecord(c)
	if err != nil || rec == nil || rec.Method == migration.MethodDirectoryCopy || !splitDone(c, rec) {
		return false
	}
	h, err := directoryView(cfg).homeFor(user, "")
	return err == nil && rec.Namespace == cfg.Namespace && rec.Shared == cfg.MergeInto.Claim && rec.Directory == h.dir && rec.User == user &&
		(sharedUID == "" || rec.SharedUID == sharedUID)
}

// mergeCanStart reports whether up's merge can run in this apply: it needs
// migration.copy_image, a hub that refuses the user's spawns once the
// record is on the claim (one with the fallback, which the last apply gave
// it: the per-user layout's hub would mount the claim during the copy),
// and no running pod on the claim or the directory. Otherwise up is kept,
// in a group a finding names.
func (p *planner) mergeCanStart(up *UserPlan) bool {
	from := up.Reason
	switch {
	case p.cfg.Migration.CopyImage == "":
		up.Reason = from + "; needs a copy: set migration.copy_image"
		p.g.noCopyImage = append(p.g.noCopyImage, *up)
		return false
	case !p.hubRefusesMerge(up):
		up.Reason = from + "; copied by a later apply, once the hub has the merge's settings"
		p.g.hubFirst = append(p.g.hubFirst, *up)
		return false
	case p.live.Mounted[up.Ref()] || p.live.DirectoriesInUse != nil && (p.homeInUse(up) || p.volumeDirectoryInUse(up.Live)):
		up.Reason = from + "; a running pod uses the claim or the directory: copied by a later apply"
		if !p.cfg.Migration.SkipRunning {
			p.g.mergesInUse = append(p.g.mergesInUse, *up)
		}
		return false
	}
	return true
}

// volumeDirectoryInUse reports whether a running pod mounts the
// directory of the shared claim homes move into that claim c's volume is
// (a move out of the shared layout made it zero copy from there): such a
// pod (a server started before that move) writes into the claim's files,
// and the copy waits for it too.
func (p *planner) volumeDirectoryInUse(c *claims.Claim) bool {
	if c == nil {
		return false
	}
	rec, err := splitRecord(c)
	if err != nil || rec == nil || rec.Method == migration.MethodDirectoryCopy {
		return false
	}
	if rec.Namespace != p.cfg.Namespace || rec.Shared != p.cfg.MergeInto.Claim {
		// A directory of another shared claim: what pods mount of it is
		// not read; any pod on that claim may write into the volume.
		return p.live.Mounted[claims.Ref{Namespace: rec.Namespace, Name: rec.Shared}]
	}
	return p.live.DirectoriesInUse.Uses(rec.Directory)
}

// hubRefusesMerge reports whether the hub refuses up's spawns once a
// merge's record is on up's claim: only the hub with the fallback does,
// and it runs the configuration the last apply recorded until this apply
// is done. So a merge starts in the apply after one that gave the hub the
// fallback, with a template that names that very claim for the user, and
// finished without an error (Prior.HubSwitched).
func (p *planner) hubRefusesMerge(up *UserPlan) bool {
	if p.prior == nil || Fallback(p.prior.Config) == nil || !p.prior.HubSwitched {
		return false
	}
	h, err := p.prior.Config.homeFor(up.User, "")
	return err == nil && h.claim == up.Ref()
}

// mergeFindings: merges that wait for the hub or for pods, and merged
// homes the settings no longer mount.
func (p *planner) mergeFindings() {
	if p.cfg.MergeInto != nil {
		if h := p.g.hubFirst; len(h) > 0 {
			p.warnf("layout", "Homes are merged from the next apply on",
				"%d listed user(s) have a claim that is copied into their directory of the shared claim, which starts once the hub has the merge's settings (this apply gives them, through spawner_settings): "+
					"from the merge's record on a claim until the copy is verified the hub must refuse the user's spawns, and the hub running now mounts the claim whatever it carries, "+
					"so what the user wrote meanwhile would be missing from the directory:\n%s\nApply again once the hub runs with the new settings (jupyter_spawner_config, and Helm when the hub's files come from there).",
				len(h), describeReasons(h))
		}
		var copies []UserPlan
		for _, up := range p.res.Users {
			if up.Managed && up.Action == ActionCopied {
				copies = append(copies, up)
			}
		}
		if len(copies) > 0 {
			p.warnf("users", "Homes copied to claims of other names are not merged",
				"%d listed user(s) have a home the copy migration moved to a claim of another name; a merge copies only the claim pvc_name_template names, so these stay on their copies, mounted until a later layout change names them:\n%s\n"+
					"Copy each into the user's directory by hand (with the server stopped), or keep the user out of the shared layout.", len(copies), describeReasons(copies))
		}
		if u := p.g.mergesInUse; len(u) > 0 {
			p.errorf("migration.skip_running", "Homes in use cannot be merged",
				"%d listed user(s) have a running pod that mounts their claim or their directory of the shared claim, and a merge copies the claim, which waits while it is in use:\n%s\n"+
					"Stop those servers and plan again, or set migration.skip_running = true to merge the others now and these by a later apply.",
				len(u), describeReasons(u))
		}
		if n := p.g.noCopyImage; len(n) > 0 {
			p.errorf("migration.copy_image", "Merging homes needs a copy image",
				"%d listed user(s) have a claim of their own that is copied into their directory of the shared claim:\n%s\n"+
					"Set migration.copy_image to an image with sh and rsync 3: a Job copies each claim into the user's directory and compares both.",
				len(n), describeReasons(n))
		}
	}
	if d := p.g.staleDirectories; len(d) > 0 {
		p.warnf("shared_home", "Directories copied out of still hold the old files",
			"%d listed user(s) have a claim a move by copy made from their directory of the shared claim, which still holds the files as they were at that copy:\n%s\n"+
				"A merge copies only into an empty directory (its Job refuses one that holds anything, and changes nothing). Once you have checked that the claim holds everything the user needs, "+
				"move the old directory away (or remove it), then apply.", len(d), describeReasons(d))
	}
	if m := p.g.mergedAway; len(m) > 0 && p.cfg.OnLayoutChange != OnLayoutChangeKeep {
		p.errorf("layout", "Merged homes are directories of the shared claim",
			"%d user(s) had their claim merged into their directory of the shared claim: that directory is their home now, and the hub of this layout refuses their spawns "+
				"(it never mounts the claim, which lacks what they wrote since):\n%s\n"+
				"Use layout = \"shared\" (with on_layout_change = \"migrate\" while other homes are still merged), or set on_layout_change = \"keep\" to apply anyway and leave these users refused until a person decides where their home is.",
			len(m), describeReasons(m))
	}
	if m := p.g.mergedElsewhere; len(m) > 0 && p.cfg.OnLayoutChange != OnLayoutChangeKeep {
		p.errorf("shared_home", "Merged homes are in other directories",
			"%d user(s) had their claim merged into a directory the settings no longer name; the hub would mount another one:\n%s\n"+
				"Restore the settings the merge used (shared_home.claim_name, sub_path_template, slug_scheme). To change them, finish the merge first, then change them in the shared layout (on_layout_change = \"move\" renames each directory).",
			len(m), describeReasons(m))
	}
}

// checkMergeInto: the claim homes move into must be there (every user
// without a claim of their own mounts it), of the configured access mode,
// and named servers must keep the home they had.
func (p *planner) checkMergeInto() {
	cfg := p.cfg
	switch c := p.live.Shared; {
	case c == nil && cfg.MergeInto.Create:
		p.errorf("shared_home.create_claim", "The shared home claim is not created while homes move into it",
			"Claim %s/%s was not found. shared_home.create_claim creates it in the shared layout only (on_layout_change not \"migrate\"), where no user has a claim the hub still mounts. "+
				"Create the claim (a ReadWriteMany claim on a shared file system) before the merge, then apply again.", cfg.Namespace, cfg.MergeInto.Claim)
	case c == nil:
		p.errorf("shared_home.claim_name", "The shared home claim does not exist",
			"Claim %s/%s is where homes move into, and was not found. Create it (a ReadWriteMany claim on a shared file system) or name the existing one.", cfg.Namespace, cfg.MergeInto.Claim)
	default:
		if f := SharedClaimProblem(cfg.Namespace, cfg.AccessMode, c); f != nil {
			p.res.Errors = append(p.res.Errors, *f)
		}
	}
	// A named server whose directory is its own must not share the
	// default server's claim: once that is merged, the named servers
	// would mount their own, empty, directories instead.
	if h, ok := namedServerHomes(cfg, func(h serverHomes) bool { return h.dir != h.serverDir && h.claim == h.serverClaim }); ok {
		p.errorf("shared_home.sub_path_template", "Named servers would lose the default server's home",
			"pvc_name_template gives a named server the default server's claim (%q's server %q: %s), and shared_home.sub_path_template a directory of its own (%q; the default server: %q). "+
				"Once the claim is merged into the default server's directory, the named servers would mount theirs, empty. Use a sub_path_template that names no server (e.g. \"{username}\").",
			h.user, probeServer, h.claim, h.serverDir, h.dir)
	}
	// Nor may a named server with a claim of its own share the default
	// server's directory: a new named server (no claim: KubeSpawner makes
	// none) would mount the very directory a merge fills, and what it
	// wrote there would be overwritten by the copy.
	if h, ok := namedServerHomes(cfg, func(h serverHomes) bool { return h.dir == h.serverDir && h.claim != h.serverClaim }); ok {
		p.errorf("pvc_name_template", "Named servers would write into a directory being merged",
			"pvc_name_template gives a named server a claim of its own (%q's server %q: %s, not %s), and shared_home.sub_path_template the default server's directory (%q). "+
				"During the merge a named server without a claim mounts that directory while the default server's claim is copied into it, and the copy would overwrite what it writes. "+
				"Use pvc_name_template = \"claim-{username}\" (named servers share the default server's claim and are merged with it), or pair \"claim-{user_server}\" with sub_path_template = \"{user_server}\" (each server a directory of its own).",
			h.user, probeServer, h.serverClaim, h.claim, h.dir)
	}
	p.checkMovedOutElsewhere()
}

// checkMovedOutElsewhere: a claim a move out of this shared claim made
// (zero copy or by a copy) left its directory on the shared claim, with
// the user's files (a volume on it, or as they were at the copy). Under
// settings that give that user another directory, the old one may be
// another user's under them, or hold or lie in one (KubeSpawner's schemes
// overlap): the merge would hand it to that user. So every such directory
// must be its user's under the merge's settings, or one the template can
// give no one (kubespawner.SeparateTemplates).
func (p *planner) checkMovedOutElsewhere() {
	cfg, view := p.cfg, directoryView(p.cfg)
	current := cfg.MergeInto.SubPathTemplate
	if free, err := kubespawner.SchemeFree(current, cfg.Scheme); err == nil {
		current = free
	}
	var lines []string
	for i := range p.live.Claims {
		c := &p.live.Claims[i]
		rec, err := splitRecord(c)
		if err != nil || rec == nil || rec.Namespace != cfg.Namespace || rec.Shared != cfg.MergeInto.Claim {
			continue
		}
		h, err := view.homeFor(rec.User, c.Servername)
		if err == nil && h.dir == rec.Directory {
			continue
		}
		if strings.ContainsAny(rec.Directory, "{}") || kubespawner.SeparateTemplates(current, rec.Directory) != nil {
			lines = append(lines, fmt.Sprintf("%s: claim %s was moved out of directory %q (the user's is %q under these settings), which can be another user's", rec.User, c.Ref(), rec.Directory, h.dir))
		}
	}
	if len(lines) == 0 {
		return
	}
	slices.Sort(lines)
	p.errorf("shared_home.sub_path_template", "Homes were moved out of other directories",
		"Claims a move out of claim %s/%s made came from directories these settings do not give their users; those directories are still there (a volume on one, or the files as they were at a copy), "+
			"and under these settings they can be other users' (KubeSpawner's slug schemes overlap):\n%s\n"+
			"Merge with the sub_path_template and slug_scheme the move used.", cfg.Namespace, cfg.MergeInto.Claim, CutLines(lines))
}

// hasMergeRecord reports whether c carries a merge's record or mark.
func hasMergeRecord(c *claims.Claim) bool {
	return c.Annotations[migration.MergeAnnotation] != "" || c.Annotations[migration.MergedAnnotation] != ""
}

// mergeInFlight: c carries a merge not finished (the shared layout's hub
// would mount a directory with a partial copy).
func mergeInFlight(c *claims.Claim) bool {
	return hasMergeRecord(c) && !merged(c)
}

// backFromMerge is what going to the shared layout does to claim c, which
// carries a merge's record, when the user's home there is to: "" when c
// was merged into to (the directory holds the home), else the line that
// names the move.
func backFromMerge(c *claims.Claim, to homeOf) string {
	rec, err := mergeRecord(c)
	switch {
	case err != nil || rec == nil || !merged(c):
		return fmt.Sprintf("claim %s → %s (its merge has not finished: the claim holds the home)", c.Ref(), to)
	case rec.Namespace != to.claim.Namespace || rec.Shared != to.claim.Name || rec.Directory != to.dir:
		return fmt.Sprintf("claim %s → %s (merged into directory %q of claim %s/%s)", c.Ref(), to, rec.Directory, rec.Namespace, rec.Shared)
	}
	return ""
}

// mergesInto reports whether a claim of live carries a merge's record
// into claim shared of namespace.
func mergesInto(live Live, namespace, shared string) bool {
	for i := range live.Claims {
		if rec, err := mergeRecord(&live.Claims[i]); err == nil && rec != nil && rec.Namespace == namespace && rec.Shared == shared {
			return true
		}
	}
	return false
}
