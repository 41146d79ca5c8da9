package safety

// Access modes, classes and capacity: how a live claim differs from the
// configuration, and what on_mode_change decides for it.

import (
	"fmt"
	"strings"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/claims"
)

// differs says how a live claim differs from the configuration, or "".
//
// A claim whose mode is less restrictive than the configured one does not
// differ in any way that matters: a ReadWriteMany home under a
// ReadWriteOnce config can still be shared by co-located pods. A more
// restrictive one does: a ReadWriteOnce home under ReadWriteMany breaks once
// co-location is dropped, and a ReadWriteOncePod home breaks co-location.
func (p *planner) differs(c *claims.Claim) string {
	var d []string
	if restrictiveness(c.AccessModes) > restrictiveness([]string{p.cfg.AccessMode}) {
		d = append(d, fmt.Sprintf("access mode %s, config %s", strings.Join(c.AccessModes, ","), p.cfg.AccessMode))
	}
	// A home moved zero copy has no class: its volume is a directory of
	// the shared claim's (split.go).
	if p.cfg.StorageClass != "" && c.StorageClass != p.cfg.StorageClass && !onSharedDirectory(c) {
		d = append(d, fmt.Sprintf("class %q, config %q", c.StorageClass, p.cfg.StorageClass))
	}
	return strings.Join(d, "; ")
}

// Differs reports whether a live claim differs from cfg in a way that
// on_mode_change decides (the rule of Plan, for callers that read more of
// the cluster only when some claim does).
func Differs(cfg Config, c claims.Claim) bool {
	p := planner{cfg: cfg}
	return p.differs(&c) != ""
}

// restrictiveness orders access modes by how many pods on how many nodes
// may use a claim: ReadWriteMany 0, ReadWriteOnce 1, ReadWriteOncePod 2.
// A claim with several modes counts as its least restrictive one.
func restrictiveness(modes []string) int {
	r := 2
	for _, m := range modes {
		switch m {
		case claims.RWX, claims.ROX:
			return 0
		case claims.RWO:
			r = 1
		}
	}
	return r
}

// capacityAction compares a managed claim's size with the configuration.
// Only growing is possible, and only in place when the class allows it.
func (p *planner) capacityAction(c *claims.Claim, user string) (Action, string) {
	want := p.cfg.CapacityBytes
	switch {
	case want == 0 || c.RequestedBytes == want:
		return ActionKeep, "matches the config"
	case onSharedDirectory(c):
		// A moved home's volume is a directory of the shared file system,
		// whose size is that file system's: nothing to grow (a static
		// volume cannot be expanded), nothing shrinks.
		return ActionKeep, "a moved home: its size is the shared file system's"
	case want < c.RequestedBytes:
		p.errorf("capacity", "Home claims cannot shrink",
			"Claim %s of user %q requests %s; capacity = %q is smaller. Kubernetes refuses to shrink a claim. Keep capacity at %s or more.",
			c.Name, user, c.Requested, p.cfg.Capacity, c.Requested)
		return ActionKeep, "cannot shrink"
	case c.Phase != "Bound":
		p.errorf("capacity", "Only bound claims can grow",
			"Claim %s of user %q is %s; the API refuses to resize a claim that is not bound. Wait until it is bound, or keep capacity at %s for now.",
			c.Name, user, orDash(c.Phase), c.Requested)
		return ActionKeep, "not bound"
	case p.live.Class != nil && p.live.Class.Exists && !p.live.Class.AllowExpansion:
		p.errorf("capacity", "The storage class does not allow expansion",
			"Growing claim %s of user %q from %s to %s would be refused by the API: StorageClass %q has no allowVolumeExpansion: true. "+
				"Set allow_volume_expansion on the class (it can be changed in place), or keep capacity at %s.",
			c.Name, user, c.Requested, p.cfg.Capacity, p.live.Class.Name, c.Requested)
		return ActionKeep, "class does not allow expansion"
	}
	return ActionResize, fmt.Sprintf("grow %s to %s in place", c.Requested, p.cfg.Capacity)
}

// modeFindings turns mode/class differences into the decision the
// configuration asked for: fail (error), keep_existing (safe) or recreate
// (destructive, only with allow_data_loss and never under a running server).
func (p *planner) modeFindings() {
	mismatched, recreate, unlisted, mounted := p.g.mismatched, p.g.recreate, p.g.unlisted, p.g.mounted
	if len(mismatched) == 0 {
		return
	}
	cfg := p.cfg
	switch cfg.OnModeChange {
	case OnModeChangeKeepExisting, OnModeChangeMigrate:
		return
	case OnModeChangeRecreate:
		if kept := p.g.serversKept; len(kept) > 0 {
			p.warnf("on_mode_change", "Named servers' homes are not recreated",
				"%d named server home(s) differ from the config; KubeSpawner creates these claims and the provider never deletes them, so they stay as they are (their users' pods that mount a ReadWriteOnce claim stay on one node):\n%s\n"+
					"Use on_mode_change = \"migrate\" to move them keeping their data.", len(kept), describe(kept))
		}
		if len(unlisted) > 0 {
			p.errorf("on_mode_change", "recreate only touches users listed in users",
				"%d claim(s) that KubeSpawner created differ from the config, but their users are not in users, so this resource may not touch them:\n%s\n"+
					"Add these users to users to recreate their claims too, or use on_mode_change = \"keep_existing\" to keep them as they are.",
				len(unlisted), describe(unlisted))
		}
		if !cfg.AllowDataLoss {
			p.errorf("allow_data_loss", "Recreating home claims deletes their data",
				"on_mode_change = \"recreate\" would delete and recreate %d home claim(s), losing every file in them:\n%s\n"+
					"Set allow_data_loss = true if that is intended, or use on_mode_change = \"keep_existing\" to leave them as they are.",
				len(recreate), describe(recreate))
		}
		if len(mounted) > 0 {
			p.errorf("on_mode_change", "A running server uses a claim that would be recreated",
				"These claims are mounted by a pod that is still running; Kubernetes keeps such a claim (kubernetes.io/pvc-protection) and the delete would hang:\n%s\n"+
					"Stop these users' servers first, then plan again.", describe(mounted))
		}
		if cfg.AllowDataLoss && len(recreate) > 0 && len(mounted) == 0 && len(unlisted) == 0 {
			// Every plan that deletes homes names them, also when its values
			// read the same as the last apply's (a retried recreate).
			p.warnf("allow_data_loss", "Recreating home claims deletes their data",
				"on_mode_change = \"recreate\" and allow_data_loss = true: apply deletes and recreates %d home claim(s), empty, losing every file in them:\n%s",
				len(recreate), describe(recreate))
		}
		return
	}
	p.errorf("access_mode", "Live home claims differ from the configuration",
		"%d existing home claim(s) in namespace %s do not match access_mode = %q%s. Claim access modes and classes are immutable, so they would stay as they are:\n%s\n"+
			"If the spawner config drops the co-location affinity, users with ReadWriteOnce claims get Multi-Attach errors when their servers land on different nodes.\n"+
			"Choose with on_mode_change:\n"+
			"  \"keep_existing\": keep these claims (their users stay co-located, reported in legacy_users); new claims use the new settings. Safe.\n"+
			"  \"migrate\": move them to the new mode keeping every byte (rebind the same volume where the driver can serve it, else copy into a new claim with migration.copy_image and migration.target_name_template); users with a running server wait for a later apply. Their co-location ends once moved. Safe.\n"+
			"  \"recreate\" with allow_data_loss = true: delete and recreate them empty. Destructive.",
		len(mismatched), cfg.Namespace, cfg.AccessMode, classSuffix(cfg.StorageClass), describe(mismatched))
}

// checkStorage reports what the class and mode imply, from configuration and live class alone.
func (p *planner) checkStorage() {
	cfg := p.cfg
	if cfg.AccessMode == claims.RWOP {
		p.warnf("access_mode", "ReadWriteOncePod allows one server per user",
			"With ReadWriteOncePod only one pod in the cluster may use a user's home claim: a named server or an app started beside the lab fails to schedule until the other stops. "+
				"Co-location cannot help. Use ReadWriteMany for several servers per user.")
	}
	sc := p.live.Class
	if sc == nil {
		return
	}
	p.checkManagedClass(sc)
	if !sc.Exists && !sc.Created {
		p.warnf("storage_class_name", "The storage class does not exist",
			"StorageClass %q was not found; new claims will stay Pending until it exists. Create it, or use storage_class so this resource creates it.", sc.Name)
		return
	}
	if cfg.AccessMode != claims.RWX || sc.Provisioner == "" {
		return
	}
	switch ProvisionerRWX(sc.Provisioner) {
	case RWXUnsupported:
		p.errorf("access_mode", "The storage class cannot provide ReadWriteMany",
			"StorageClass %q uses the provisioner %s, which provisions block volumes that attach to one node at a time; ReadWriteMany claims would never bind. "+
				"Use a class backed by a shared file system (NFS, EFS, CephFS, Azure Files, Filestore, Longhorn RWX, ...), or keep access_mode = \"ReadWriteOnce\".",
			sc.Name, sc.Provisioner)
	case RWXUnknown:
		p.warnf("access_mode", "ReadWriteMany support of the storage class is unknown",
			"The provider does not know whether provisioner %s (StorageClass %q) serves ReadWriteMany volumes. If it does not, new claims stay Pending. Check the driver's documentation.",
			sc.Provisioner, sc.Name)
	}
}

// checkManagedClass reports what apply does to the StorageClass this
// resource manages: create it when it is missing, replace it when a setting
// that cannot change in place changes. Existing claims and volumes keep
// working either way.
func (p *planner) checkManagedClass(sc *StorageClass) {
	if !sc.Created {
		return
	}
	if !sc.Exists {
		p.classChange = true
		if p.prior != nil && !p.prior.ClassManaged {
			p.warnf("storage_class", "The StorageClass is missing",
				"StorageClass %q does not exist (deleted outside Terraform?). Apply creates it again; existing claims and volumes are not affected.", sc.Name)
		}
	}
	if len(p.cfg.ClassReplaced) > 0 {
		p.classChange = true
		p.warnf("storage_class", "The StorageClass will be replaced",
			"%s cannot be changed on an existing StorageClass, so apply deletes %q and creates it again. Existing claims and volumes keep working with the settings they were provisioned with; only new claims use the new ones.",
			strings.Join(p.cfg.ClassReplaced, ", "), sc.Name)
	}
}
