package safety

// on_mode_change = "migrate": which claims move, by which method, and
// what a finished or interrupted migration means for its user.

import (
	"fmt"
	"slices"
	"strings"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/claims"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/kubespawner"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/migration"
)

// rebindWaits reports whether a rebind an earlier apply started waits
// rather than resumes: on_mode_change no longer says "migrate" and the old
// claim is still there (it holds the home; finishing would delete it). A
// rebind whose old claim was deleted is always finished, whatever the
// configuration says now: only that gives the user the home back, on the
// same volume (and never a new, empty claim under the old name).
func (p *planner) rebindWaits(up *UserPlan, ip InProgress) bool {
	return p.cfg.OnModeChange != OnModeChangeMigrate && up.Live != nil && !slices.Equal(up.Live.AccessModes, []string{ip.Record.To})
}

// pausedFindings reports rebinds that wait (rebindWaits), and how to finish
// or undo each.
func (p *planner) pausedFindings() {
	if len(p.g.paused) == 0 {
		return
	}
	list := Cut(len(p.g.paused), func(i int) string {
		w := p.g.paused[i]
		return fmt.Sprintf("%s: %s, volume %s (step %s, reclaim policy before it: %s)", w.up.Who(), w.up.Ref(), w.ip.Volume, w.ip.Record.Step, orDash(w.ip.Record.ReclaimPolicy))
	})
	p.warnf("on_mode_change", "Rebinds an earlier apply started are paused",
		"%d home(s) are in the middle of a rebind to %s that an earlier apply started; on_mode_change no longer says \"migrate\", so nothing more is done to them, and each claim still holds its home:\n%s\n"+
			"Their volumes stay retained and carry the record (annotation %s). To finish: set on_mode_change = \"migrate\" and apply. "+
			"To undo: set each volume's reclaim policy back to the one listed (kubectl patch pv VOLUME -p '{\"spec\":{\"persistentVolumeReclaimPolicy\":\"POLICY\"}}') and remove the annotation and the label %s.",
		len(p.g.paused), p.g.paused[0].ip.Record.To, list, migration.RecordAnnotation, migration.NamespaceLabel)
}

// resume plans finishing a rebind an earlier apply started, from the
// record on its volume (the claim may be gone). While a pod mounts the
// claim it waits, like any migration under a running server.
func (p *planner) resume(up *UserPlan, ip InProgress) {
	rec := ip.Record
	if c := up.Live; c != nil && c.VolumeName != ip.Volume {
		// Neither the old claim nor the rebind's new one: someone else
		// (KubeSpawner, at a spawn) created it while the rebind had none.
		up.Action, up.Volume = ActionKeep, ip.Volume
		up.Reason = fmt.Sprintf("created during the rebind of volume %s", ip.Volume)
		p.errorf("users", "A claim was created while its home was being rebound", "%q: %v.", up.Who(),
			migration.CreatedMeanwhile(&rec, ip.Volume, c.UID, c.VolumeName))
		return
	}
	if p.live.Mounted[up.Ref()] {
		up.Action, up.Volume = ActionLegacy, ip.Volume
		up.Reason = fmt.Sprintf("the rebind an earlier apply started (volume %s, step %s) waits: a server is running", ip.Volume, rec.Step)
		p.g.running = append(p.g.running, *up)
		return
	}
	if c := up.Live; c != nil && c.Resizing && !c.Deleting && !slices.Equal(c.AccessModes, []string{rec.To}) {
		// The old claim is still there and being expanded: deleting it
		// would lose the resize (migration.NextRebind refuses it too).
		up.Action, up.Volume = ActionLegacy, ip.Volume
		up.Reason = fmt.Sprintf("the rebind an earlier apply started (volume %s, step %s) waits: an expansion has not finished", ip.Volume, rec.Step)
		p.g.resizing = append(p.g.resizing, *up)
		return
	}
	up.Action, up.Method, up.Volume, up.Resume = ActionMigrate, migration.MethodRebind, ip.Volume, &rec
	up.Reason = fmt.Sprintf("resume the rebind started by an earlier apply (volume %s, step %s)", ip.Volume, rec.Step)
	if p.cfg.OnModeChange != OnModeChangeMigrate {
		up.Reason += `; on_mode_change no longer says "migrate", but the home's claim was already replaced: finishing it is what gives the user the home back, on the same volume`
	}
}

// migrationRoute is what a claim's kind lets its migration do: a home may
// be copied to the configured class, and grows to the configured capacity
// once rebound; another per-user claim keeps its class and is only
// rebound.
type migrationRoute struct {
	toClass string           // the class of a copy ("": the claim's own)
	asked   migration.Method // the method asked for
	// onlyRebound is added to the reason when no method serves the claim.
	onlyRebound string
	// growHome: a rebound managed home then grows to the configured
	// capacity.
	growHome bool
}

// migrateHome decides how a home that differs is migrated.
func (p *planner) migrateHome(up *UserPlan) {
	p.migrate(up, migrationRoute{toClass: p.cfg.StorageClass, asked: p.cfg.Migration.Method, growHome: true})
}

// migrateExtra decides how another per-user claim that differs is
// migrated: only by a rebind.
func (p *planner) migrateExtra(up *UserPlan) {
	p.migrate(up, migrationRoute{asked: migration.MethodRebind, onlyRebound: " (other per-user claims are only rebound, never copied)"})
}

// migrate decides how one claim that differs is migrated: not while a
// server runs, not beyond the batch, and only by a method that can serve
// it in the new mode, as route allows.
func (p *planner) migrate(up *UserPlan, route migrationRoute) {
	c, m := up.Live, p.cfg.Migration
	up.Action = ActionLegacy
	if p.live.Mounted[p.cfg.ref(c)] {
		up.Reason += "; a server is running: migrated by a later apply"
		p.g.running = append(p.g.running, *up)
		return
	}
	src := migration.Source{Modes: c.AccessModes, StorageClass: c.StorageClass, Bound: c.Phase == "Bound" && c.VolumeName != "", RebindDrivers: m.RebindDrivers}
	if v, ok := p.live.Volumes[c.VolumeName]; ok {
		src.CSIDriver = v.CSIDriver
	}
	method, why := migration.Choose(route.asked, src, p.cfg.AccessMode, route.toClass)
	if method == "" {
		why += route.onlyRebound
	}
	switch {
	case method == "":
		up.Reason += "; " + why
		p.g.refused = append(p.g.refused, *up)
		return
	case method == migration.MethodRebind && Fallback(p.cfg) != nil:
		// While homes move out of the shared layout the hub mounts the
		// user's directory when the claim is missing: in a rebind's window
		// (claim deleted, not yet made again) the user would write there.
		up.Reason += "; homes are moving out of the shared layout, where a spawn in a rebind's window would mount the user's directory: rebind it before or after the move (or copy it: migration.method = \"copy\")"
		p.g.refused = append(p.g.refused, *up)
		return
	case method == migration.MethodRebind && c.Resizing:
		up.Reason += "; an expansion has not finished (the node grows the filesystem when a server next mounts the claim): rebound by a later apply"
		p.g.resizing = append(p.g.resizing, *up)
		return
	case m.BatchSize > 0 && len(p.g.migrating) >= m.BatchSize:
		up.Reason += "; beyond batch_size: migrated by a later apply"
		return
	}
	if method == migration.MethodCopy {
		p.migrateByCopy(up, src)
		return
	}
	p.migrateByRebind(up, route)
}

// migrateByCopy plans copying a home into a new claim, which needs a copy
// image and a target name other than the home's.
func (p *planner) migrateByCopy(up *UserPlan, src migration.Source) {
	c, m := up.Live, p.cfg.Migration
	why := orDefault(whyNotRebind(src, p.cfg), "method = \"copy\"")
	target, err := kubespawner.Expand(m.TargetTemplate, up.User, up.Server, p.cfg.Scheme)
	switch {
	case m.CopyImage == "" || m.TargetTemplate == "":
		up.Reason += "; needs a copy (" + why + "): set migration.copy_image and migration.target_name_template"
		p.g.refused = append(p.g.refused, *up)
		return
	case err != nil || target == c.Name:
		up.Reason += fmt.Sprintf("; migration.target_name_template gives %q for this user, which cannot be the new claim", target)
		p.g.refused = append(p.g.refused, *up)
		return
	}
	at := claims.Ref{Namespace: up.Namespace, Name: target}
	if other, ok := p.homeNames()[at]; ok && other != up.Who() {
		// KubeSpawner would mount that claim as other's home.
		up.Reason += fmt.Sprintf("; migration.target_name_template gives %s, which is the home claim of user %q: choose a template no username or server name can produce (e.g. a suffix with a character usernames cannot have after slugging)", at, other)
		p.g.refused = append(p.g.refused, *up)
		return
	}
	if other, ok := p.idx.copyTargets[at]; ok {
		// Two homes copied into one claim: the second would be refused at
		// the target's creation, or worse, mounted by both.
		up.Reason += fmt.Sprintf("; migration.target_name_template gives %s, the new claim of %q too: with named servers that have their own claims, the template must name the server ({servername} or {user_server})", at, other)
		p.g.refused = append(p.g.refused, *up)
		return
	}
	if t := p.idx.live[at]; t != nil {
		// Never adopted: it may be someone's data.
		up.Reason += fmt.Sprintf("; the new claim %s exists already and is not a copy of %s: nothing is copied into a claim this copy did not create", at, c.Name)
		p.g.refused = append(p.g.refused, *up)
		return
	}
	p.idx.copyTargets[at] = up.Who()
	up.Action, up.Method, up.Target = ActionMigrate, migration.MethodCopy, target
	up.Reason = fmt.Sprintf("copy to a new %s claim %s (%s); %s is kept", p.cfg.AccessMode, target, why, c.Name)
	p.g.migrating = append(p.g.migrating, *up)
}

// migrateByRebind plans serving a claim's volume in the new mode.
func (p *planner) migrateByRebind(up *UserPlan, route migrationRoute) {
	c := up.Live
	up.Action, up.Method, up.Volume = ActionMigrate, migration.MethodRebind, c.VolumeName
	up.Reason = fmt.Sprintf("rebind volume %s as %s (zero copy)", c.VolumeName, p.cfg.AccessMode)
	if up.Managed && route.growHome && p.cfg.CapacityBytes > 0 && c.RequestedBytes != p.cfg.CapacityBytes {
		// The rebound claim requests what the old one did (its volume's
		// size); a managed home then grows to the configured capacity in the
		// same apply, under the same rules as any other (never shrinks).
		if act, _ := p.capacityAction(c, up.User); act == ActionResize {
			up.Resize = true
			up.Reason += fmt.Sprintf(", then grow %s to %s", c.Requested, p.cfg.Capacity)
		}
	}
	p.g.migrating = append(p.g.migrating, *up)
}

// isExtra reports whether c is one of its user's other per-user claims.
func (p *planner) isExtra(c *claims.Claim) bool {
	for _, t := range p.cfg.ExtraVolumes {
		if n, err := kubespawner.Expand(t, c.Username, "", p.cfg.Scheme); err == nil && n == c.Name {
			return true
		}
	}
	return false
}

// extraVolumes classifies the users' other per-user claims: one more
// restrictive than the configured mode keeps its user co-located
// (keep_existing), is rebound (migrate), or fails the plan.
func (p *planner) extraVolumes(users []string) {
	if len(p.cfg.ExtraVolumes) == 0 {
		return
	}
	var mismatched []UserPlan
	for _, t := range p.cfg.ExtraVolumes {
		for _, u := range users {
			name, err := kubespawner.Expand(t, u, "", p.cfg.Scheme)
			if err != nil {
				continue
			}
			up := UserPlan{User: u, ClaimName: name}
			up.Namespace, _ = p.cfg.NamespaceOf(u) // the home pass reported a user without one
			up.Live = p.idx.live[up.Ref()]
			if ip, ok := p.live.InProgress[up.Ref()]; ok {
				p.resume(&up, ip)
				p.res.Extra = append(p.res.Extra, up)
				continue
			}
			c := up.Live
			if c == nil || c.Deleting || restrictiveness(c.AccessModes) <= restrictiveness([]string{p.cfg.AccessMode}) {
				continue
			}
			up.Reason = fmt.Sprintf("access mode %s, config %s", strings.Join(c.AccessModes, ","), p.cfg.AccessMode)
			switch p.cfg.OnModeChange {
			case OnModeChangeKeepExisting:
				up.Action = ActionLegacy
			case OnModeChangeMigrate:
				p.migrateExtra(&up)
			default:
				up.Action = ActionLegacy
				mismatched = append(mismatched, up)
			}
			p.res.Extra = append(p.res.Extra, up)
		}
	}
	if len(mismatched) > 0 {
		p.errorf("extra_user_volumes", "Other per-user claims are more restrictive than the homes",
			"%d per-user claim(s) named by extra_user_volumes do not allow access_mode = %q:\n%s\n"+
				"A user's pods that share such a claim must stay on one node, whatever the home's mode; without co-location they get Multi-Attach errors. "+
				"Choose with on_mode_change: \"keep_existing\" (these users stay co-located, listed in legacy_users) or \"migrate\" (their claims are rebound in the new mode). "+
				"\"recreate\" never applies to these claims.",
			len(mismatched), p.cfg.AccessMode, describe(mismatched))
	}
}

// copied plans a user whose home claim carries a copy record: a finished
// copy is the user's home from now on; an unfinished one is resumed.
func (p *planner) copied(up *UserPlan) {
	c := up.Live
	rec, err := migration.DecodeCopyRecord(c.Annotations[migration.CopyAnnotation])
	if err != nil {
		up.Action, up.Reason = ActionKeep, err.Error()
		p.errorf("migration", "A home's copy record cannot be read", "Claim %s of user %q: %v. Fix or remove the annotation.", c.Name, up.User, err)
		return
	}
	up.Target, up.CopyResume = rec.Target, rec
	if rec.Step == migration.StepSwitched {
		up.Action = ActionCopied
		up.Reason = fmt.Sprintf("copied to %s (%d files, %d bytes); %s is kept with the old data", rec.Target, rec.Files, rec.Bytes, c.Name)
		if up.TargetLive == nil {
			p.g.lostCopies = append(p.g.lostCopies, *up)
		}
		// While homes move out of the shared layout the hub mounts the
		// user's directory when this claim is missing: it stays.
		if m := p.cfg.Migration; m.DeleteSources && p.cfg.AllowDataLoss && p.cfg.OnModeChange == OnModeChangeMigrate && up.TargetLive != nil && Fallback(p.cfg) == nil {
			up.Action = ActionDeleteSource
			up.Reason = fmt.Sprintf("delete %s, the old home: the user's home is %s, a verified copy (%d files, %d bytes)", c.Name, rec.Target, rec.Files, rec.Bytes)
			p.g.deleteSources = append(p.g.deleteSources, *up)
		}
		return
	}
	if p.live.Mounted[p.cfg.ref(c)] {
		up.Action = ActionLegacy
		up.Reason = fmt.Sprintf("the copy to %s an earlier apply started (step %s) waits: a server is running", rec.Target, rec.Step)
		p.g.running = append(p.g.running, *up)
		return
	}
	up.Action, up.Method = ActionMigrate, migration.MethodCopy
	up.Reason = fmt.Sprintf("resume the copy to %s started by an earlier apply (step %s)", rec.Target, rec.Step)
}

// homeNames are the home claims the template names for every user the plan
// knows of (listed, with a home, or managed by the last apply) and the
// named servers' homes, by claim; built once, on the first copy planned.
func (p *planner) homeNames() map[claims.Ref]string {
	if p.idx.homes != nil {
		return p.idx.homes
	}
	p.idx.homes = map[claims.Ref]string{}
	add := func(u string) {
		name, err := kubespawner.Expand(p.cfg.NameTemplate, u, "", p.cfg.Scheme)
		ns, nerr := p.cfg.NamespaceOf(u)
		if err == nil && nerr == nil {
			p.idx.homes[claims.Ref{Namespace: ns, Name: name}] = u
		}
	}
	for u := range p.idx.managed {
		add(u)
	}
	for u := range p.idx.byUser {
		add(u)
	}
	for i := range p.live.Claims {
		if c := &p.live.Claims[i]; c.Username != "" && c.Servername == "" {
			add(c.Username)
		}
	}
	for _, c := range p.idx.servers {
		p.idx.homes[p.cfg.ref(c)] = ServerKey(c.Username, c.Servername)
	}
	return p.idx.homes
}

// deleteSourceFindings reports deleting the sources of finished copies:
// destructive, refused while a pod mounts one.
func (p *planner) deleteSourceFindings() {
	if len(p.g.deleteSources) == 0 {
		return
	}
	var mounted []UserPlan
	for _, up := range p.g.deleteSources {
		if p.live.Mounted[up.Ref()] {
			mounted = append(mounted, up)
		}
	}
	if len(mounted) > 0 {
		p.errorf("migration", "A pod still uses the source claim of a copied home",
			"These old homes are mounted by a pod that is still running (a server started before the switch?); the delete would hang on kubernetes.io/pvc-protection:\n%s\nStop these servers first.", describeReasons(mounted))
		return
	}
	p.warnf("migration", "Deleting the old homes of copied users",
		"migration.delete_copied_sources and allow_data_loss: apply deletes %d source claim(s) of finished copies, and with them the old data (the copies were verified and are the users' homes):\n%s",
		len(p.g.deleteSources), describeReasons(p.g.deleteSources))
}

func whyNotRebind(src migration.Source, cfg Config) string {
	_, why := migration.Choose(migration.MethodRebind, src, cfg.AccessMode, cfg.StorageClass)
	return why
}

// migrationFindings reports the users a migration leaves for later or cannot move.
func (p *planner) migrationFindings() {
	running, refused := p.g.running, p.g.refused
	if lost := p.g.lostCopies; len(lost) > 0 {
		list := Cut(len(lost), func(i int) string {
			return fmt.Sprintf("%s: %s was switched to %s, which does not exist (or is not its copy)", lost[i].Who(), lost[i].ClaimName, lost[i].Target)
		})
		p.warnf("migration", "A copied home's new claim is gone",
			"%d home(s) were copied and switched to a new claim that no longer exists:\n%s\n"+
				"The hub refuses these servers' spawns (it never mounts the old home nor an empty claim in place of a switched copy). "+
				"The old claim still holds the home as it was at the copy. To give it back: remove the annotation %s from the old claim; the next spawn mounts it.",
			len(lost), list, migration.CopyAnnotation)
	}
	if len(p.g.resizing) > 0 {
		p.warnf("migration", "Claims being expanded are rebound later",
			"%d claim(s) request more than their capacity, or wait for their filesystem to be grown: a rebind now would bind the new claim to the volume with the filesystem never grown (or, before the volume grew, never bind). "+
				"They stay as they are (their users listed in legacy_users, still co-located) and are rebound by a later apply, once the expansion has finished; the node grows the filesystem when a server next mounts the claim:\n%s\n"+
				"An expansion that does not finish (no resizer serves the class, or the driver refused the size: see the claim's events and conditions) keeps them waiting: lower the claim's request back to its capacity, or finish the expansion, then apply again.",
			len(p.g.resizing), describe(p.g.resizing))
	}
	if len(refused) > 0 {
		p.errorf("migration", "Some homes cannot be migrated without data loss",
			"%d home claim(s) cannot be moved to %s:\n%s\n"+
				"Rebind serves the same volume in the new mode; it needs a bound CSI volume, the same class, and a driver that can serve the new mode "+
				"(ReadWriteOncePod: any CSI driver; ReadWriteMany: Longhorn, NFS, EFS, CephFS and the drivers listed in migration.rebind_drivers). Other homes are copied into new claims: that needs migration.copy_image and migration.target_name_template. "+
				"Or use on_mode_change = \"keep_existing\" for these users for now.",
			len(refused), p.cfg.AccessMode, describeReasons(refused))
	}
	if len(running) > 0 {
		if p.cfg.Migration.SkipRunning {
			p.warnf("migration", "Users with a running server are not migrated now",
				"%d user(s) have a server running, which mounts the home claim; they keep their claim (listed in legacy_users, still co-located) and are migrated by a later apply once the server is stopped:\n%s",
				len(running), describe(running))
		} else {
			p.errorf("migration", "Users with a running server cannot be migrated",
				"migration.skip_running = false, and %d user(s) have a server running that mounts the home claim:\n%s\n"+
					"Stop these servers, or set skip_running = true to migrate them by a later apply.", len(running), describe(running))
		}
	}
}
