// Package safety decides, for jupyter_home_storage, what a plan does to
// every user's home claim and whether that is safe or destructive.
//
// It is pure: given the configuration, the prior state and the live claims
// (read once by the caller), Plan returns one action per user, the
// diagnostics a person reading the plan needs, and the change class.
// "Why is this change destructive?" is answered in this file: only
// ActionRecreate (Plan) and deleting managed claims on destroy (Destroy)
// lose data, and both require AllowDataLoss. ActionMigrate (on_mode_change =
// "migrate") deletes a claim object too, but only after its volume is
// retained, and binds the same volume to the new claim: no data is lost, so
// it is safe (the steps are in internal/migration). After a copy, deleting
// the source claim (ActionDeleteSource) loses the old data: destructive,
// and only with migration.delete_copied_sources and AllowDataLoss.
//
// A plan only proposes: changes.go is what it shows and apply compares
// (Changes, Reconcile), and gate.go decides, right before each step, whether
// a step that deletes a claim or copies into one may run (Gate).
package safety

import (
	"fmt"
	"slices"
	"sort"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/claims"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/kubespawner"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/migration"
)

// Access modes.
const (
	RWO  = claims.RWO
	RWX  = claims.RWX
	RWOP = claims.RWOP
)

// Class is the change class shown in every plan.
type Class string

const (
	ClassNone        Class = "none"        // nothing in the cluster changes
	ClassSafe        Class = "safe"        // objects are created, grown or relabelled; no data can be lost
	ClassDestructive Class = "destructive" // a claim (and with it a home directory) is deleted
)

// OnModeChange says what to do with live claims whose mode or class differs.
type OnModeChange string

const (
	OnModeChangeFail         OnModeChange = "fail"
	OnModeChangeKeepExisting OnModeChange = "keep_existing"
	OnModeChangeRecreate     OnModeChange = "recreate"
	OnModeChangeMigrate      OnModeChange = "migrate"
)

// Deletion policies for destroy.
const (
	DeletionRetain = "retain"
	DeletionDelete = "delete"
)

// Config is the part of jupyter_home_storage's configuration that decides safety.
type Config struct {
	Namespace      string
	AccessMode     string
	StorageClass   string // the class claims use; "" for the cluster default
	CapacityBytes  int64
	Capacity       string // as written, for messages
	NameTemplate   string
	Scheme         kubespawner.Scheme
	Users          []string
	OnModeChange   OnModeChange
	AllowDataLoss  bool
	DeletionPolicy string
	Migration      Migration // used with OnModeChangeMigrate
	// ExtraVolumes are name templates of other per-user claims, such as a
	// workspace "nebi-workspaces-{username}". Their access mode counts for
	// co-location (an RWO workspace pins its user as an RWO home does) and
	// on_mode_change applies to them (never recreate: they are only kept or
	// rebound). They are never created or deleted.
	ExtraVolumes []string
	// UserNamespaceTemplate is KubeSpawner's user_namespace_template when
	// every user's server and claims live in the user's own namespace
	// (enable_user_namespaces); "" when they live in Namespace.
	UserNamespaceTemplate string
}

// NamespaceOf is the namespace of user's claims: Namespace, or the user's
// own under UserNamespaceTemplate ({hubnamespace} is Namespace).
func (c Config) NamespaceOf(user string) (string, error) {
	if c.UserNamespaceTemplate == "" {
		return c.Namespace, nil
	}
	hub := c.Namespace
	return kubespawner.ExpandValues(c.UserNamespaceTemplate, kubespawner.Values{Username: user, HubNamespace: &hub}, c.Scheme)
}

// Migration is how on_mode_change = "migrate" moves users.
type Migration struct {
	Method      migration.Method
	BatchSize   int  // users migrated per apply; 0 for all
	SkipRunning bool // users with a running server are left for a later apply (else the plan fails)
	CopyImage   string
	// TargetTemplate names the new claim of a copied home, e.g. "home-{username}".
	TargetTemplate string
	// DeleteSources deletes the source claims of finished copies (with
	// AllowDataLoss only): the old homes, whose data the copy verified.
	DeleteSources bool
}

// Prior is what the state recorded at the last apply.
type Prior struct {
	Config  Config
	Managed map[string]string // user -> claim name the provider manages
}

// StorageClass is what is known of the class claims use.
type StorageClass struct {
	Name           string
	Provisioner    string
	AllowExpansion bool
	Exists         bool // false when the class does not exist (yet)
	Created        bool // this resource creates it
}

// Live is the cluster as read at plan time.
type Live struct {
	Claims  []claims.Claim  // every claim that matches the home selector
	Class   *StorageClass   // nil when not read
	Mounted map[string]bool // claim names used by a pod that is not finished
	// Volumes the claims are bound to, by name (read when migrating).
	Volumes map[string]Volume
	// Migrations in progress, by claim name (read when migrating): the
	// record on the volume, which outlives the claim.
	InProgress map[string]InProgress
}

// Volume is what the method choice needs of a claim's volume.
type Volume struct {
	CSIDriver string // "" when not a CSI volume
}

// InProgress is a migration an earlier apply started.
type InProgress struct {
	Volume string
	Record migration.Record
}

// Action is what apply does with one user's home claim.
type Action string

const (
	ActionKeep     Action = "keep"     // exists as configured; nothing to do
	ActionCreate   Action = "create"   // no claim yet; create it
	ActionResize   Action = "resize"   // grow spec.resources.requests.storage in place
	ActionLegacy   Action = "legacy"   // differs from the config and is kept as it is (keep_existing)
	ActionRecreate Action = "recreate" // delete and create in the new mode: the home's data is lost
	ActionRelease  Action = "release"  // no longer listed in users: left in place, no longer managed
	ActionObserve  Action = "observe"  // made by KubeSpawner for an unlisted user and matches the config
	ActionMigrate  Action = "migrate"  // moved to the new mode keeping its data (rebind or copy); see internal/migration
	ActionCopied   Action = "copied"   // an earlier apply copied the home to a new claim; the source is kept
	// ActionDeleteSource deletes the source claim of a finished copy: the
	// old home, whose data the copy verified. Destructive; only with
	// migration.delete_copied_sources and allow_data_loss.
	ActionDeleteSource Action = "delete-source"
)

// UserPlan is the plan for one user's home claim.
type UserPlan struct {
	User      string
	ClaimName string
	Managed   bool // listed in users
	Action    Action
	Live      *claims.Claim // nil when no claim exists
	Reason    string        // why the action, for the plan summary
	Namespace string        // of the claim: the deployment's, or the user's own (UserNamespaceTemplate)
	// With ActionMigrate: the method, the volume and, when an earlier apply
	// started it, the record it left.
	Method migration.Method
	Volume string
	Resume *migration.Record
	Resize bool // after the rebind, grow the claim to the configured capacity
	// With a copy: the new claim, and the record an earlier apply left.
	Target     string
	CopyResume *migration.CopyRecord
	TargetLive *claims.Claim // the new claim, when it exists
}

// Finding is a diagnostic: the attribute it is about (a path such as
// "migration" or "profile_options[0].choices[\"gpu\"]"), a summary and a
// detail that says what, who, why and how to proceed.
type Finding struct {
	Attribute string
	Summary   string
	Detail    string
}

// Result is the outcome of Plan or Destroy.
type Result struct {
	Class              Class
	Users              []UserPlan        // sorted by user
	LegacyUsers        []string          // users kept on a claim that differs from the config
	ColocationRequired bool              // some user's home cannot be shared across nodes
	HomeClaims         map[string]string // user -> claim, for homes copied to a new claim (the hub config switches them)
	Extra              []UserPlan        // other per-user claims (Config.ExtraVolumes) that differ or migrate
	Errors             []Finding
	Warnings           []Finding
}

// Plan classifies the change from prior (nil on create) to cfg against the live claims.
func Plan(cfg Config, prior *Prior, live Live) Result {
	left := leftBehind(cfg, prior, live.Claims)
	live.Claims = ownClaims(cfg, live.Claims)
	p := planner{cfg: cfg, prior: prior, live: live, left: map[string]bool{}}
	for _, l := range left {
		p.left[l.claim.Username] = true
	}
	p.checkLeftBehind(left)
	return p.run()
}

type planner struct {
	cfg           Config
	prior         *Prior
	live          Live
	res           Result
	deleteSources []UserPlan
	left          map[string]bool // users whose home is left where the configuration no longer looks
}

func (p *planner) errorf(attr, summary, format string, a ...any) {
	p.res.Errors = append(p.res.Errors, Finding{attr, summary, fmt.Sprintf(format, a...)})
}

func (p *planner) warnf(attr, summary, format string, a ...any) {
	p.res.Warnings = append(p.res.Warnings, Finding{attr, summary, fmt.Sprintf(format, a...)})
}

func (p *planner) run() Result {
	cfg := p.cfg
	p.checkStorage()

	// Which live claim is whose home under the configured template.
	managed := map[string]bool{}
	for _, u := range cfg.Users {
		managed[u] = true
	}
	byUser := map[string]*claims.Claim{}
	liveNames := make(map[string]bool, len(p.live.Claims))
	var strays []claims.Claim             // labelled as homes, but not named by the template
	targets := map[string]*claims.Claim{} // copies' new claims, by source claim
	for i := range p.live.Claims {
		c := &p.live.Claims[i]
		liveNames[c.Name] = true
		if src := c.Annotations[migration.CopyOfAnnotation]; src != "" {
			targets[src] = c // a copy's target is its user's home through the source's record
			continue
		}
		if c.Username == "" {
			continue
		}
		want, err := kubespawner.Expand(cfg.NameTemplate, c.Username, "", cfg.Scheme)
		switch {
		case err == nil && want == c.Name:
			byUser[c.Username] = c
		case c.Servername == "" && !p.isExtra(c):
			strays = append(strays, *c)
		}
	}
	p.checkStrays(strays)
	// A copy whose source claim was deleted: the target is the user's home.
	orphans := map[string]*claims.Claim{}
	for src, t := range targets {
		if !liveNames[src] && t.Username != "" {
			orphans[t.Username] = t
		}
	}

	users := map[string]bool{}
	for u := range orphans {
		users[u] = true
	}
	for u := range byUser {
		users[u] = true
	}
	for u := range managed {
		users[u] = true
	}
	if p.prior != nil {
		for u := range p.prior.Managed {
			users[u] = true
		}
	}
	// A migration an earlier apply started is finished first, whatever the
	// claim looks like now: its record is the truth (the claim may be gone).
	for _, ip := range p.live.InProgress {
		if ip.Record.User != "" {
			users[ip.Record.User] = true
		}
	}
	names := make([]string, 0, len(users))
	for u := range users {
		names = append(names, u)
	}
	sort.Strings(names)

	var mismatched, recreate, unlistedMismatch, mounted, goneOutOfBand []UserPlan
	var migrating, running, refused []UserPlan
	for _, u := range names {
		up := UserPlan{User: u, Managed: managed[u], Live: byUser[u]}
		if up.Live != nil {
			up.ClaimName = up.Live.Name // the template's name for u: that is how it was found
		} else {
			name, err := kubespawner.Expand(cfg.NameTemplate, u, "", cfg.Scheme)
			if err != nil {
				p.errorf("users", "Username cannot be turned into a claim name", "%q: %v", u, err)
				continue
			}
			up.ClaimName = name
		}
		var err error
		if up.Namespace, err = cfg.NamespaceOf(u); err != nil {
			p.errorf("user_namespace_template", "Username cannot be turned into a namespace", "%q: %v", u, err)
			continue
		}
		c := up.Live
		if c != nil && c.Annotations[migration.CopyAnnotation] != "" {
			up.TargetLive = targets[c.Name]
			p.copied(&up)
			p.res.Users = append(p.res.Users, up)
			continue
		}
		if ip, ok := p.live.InProgress[up.ClaimName]; ok {
			p.resume(&up, ip, &running)
			p.res.Users = append(p.res.Users, up)
			continue
		}
		if t := targets[up.ClaimName]; c != nil && t != nil && t.Annotations[migration.CopySwitchedAnnotation] == "" &&
			c.UID != "" && t.Annotations[migration.CopyOfUIDAnnotation] == c.UID {
			// The very claim the copy started from (same UID), its record
			// removed before the copy finished: the user was never switched.
			up.Action, up.Reason = ActionKeep, "an unfinished copy without a record"
			p.errorf("migration", "An unfinished copy has lost its record",
				"Claim %s (uid %s) of user %q has no copy record, but %s is an unfinished copy of that same claim; the user was never switched to it and keeps %s, which holds the data. "+
					"Nothing is copied over %s. To copy afresh, delete %s (a partial copy) and apply again.", c.Name, c.UID, u, t.Name, c.Name, t.Name, t.Name)
			p.res.Users = append(p.res.Users, up)
			continue
		}
		if t := targets[up.ClaimName]; c != nil && t != nil {
			// A claim without a copy record whose copy exists: KubeSpawner
			// created it again after the copy, or the record was removed.
			// The copy stays the home; nothing is copied over it.
			up.Action, up.Target, up.TargetLive = ActionCopied, t.Name, t
			up.Reason = fmt.Sprintf("%s is the copy of %s, which has no copy record: the copy stays the home", t.Name, c.Name)
			p.homeClaim(u, t.Name)
			p.warnf("migration", "A copied home's old claim has no copy record",
				"Claim %s of user %q has no copy record, but %s is a copy of a claim of that name (KubeSpawner created %s again after the copy, or its record was removed). "+
					"%s stays the user's home and nothing is copied over it; %s is left as it is. Check what %s holds before deleting it: a server started with an older hub configuration may have written to it.",
				c.Name, u, t.Name, c.Name, t.Name, c.Name, c.Name)
			p.res.Users = append(p.res.Users, up)
			continue
		}
		if t := orphans[u]; c == nil && t != nil {
			// Never a new, empty home under the old name: the copy is the home.
			up.Action, up.Target, up.TargetLive = ActionCopied, t.Name, t
			up.Reason = fmt.Sprintf("copied to %s; the source claim %s was deleted", t.Name, up.ClaimName)
			p.homeClaim(u, t.Name)
			p.res.Users = append(p.res.Users, up)
			continue
		}
		switch {
		case c == nil && !up.Managed:
			// Was managed, is no longer listed and its claim is gone: nothing to do.
			continue
		case c == nil:
			up.Action, up.Reason = ActionCreate, "no claim yet"
			// Only when the claim the state recorded is gone; after a template
			// or scheme change it may still exist under its old name (a stray).
			if p.prior != nil && p.prior.Managed[u] != "" && !liveNames[p.prior.Managed[u]] && !p.left[u] {
				up.Reason = "deleted outside Terraform"
				goneOutOfBand = append(goneOutOfBand, up)
			}
		case c.Deleting:
			up.Action, up.Reason = ActionKeep, "being deleted by someone else"
			p.warnf("users", "A home claim is being deleted",
				"Claim %s of user %q has a deletion timestamp: someone else is deleting it. Once it is gone, the next plan will create it again, empty.", c.Name, u)
		case p.differs(c) != "":
			up.Reason = p.differs(c)
			mismatched = append(mismatched, up)
			switch {
			case cfg.OnModeChange == OnModeChangeKeepExisting:
				up.Action = ActionLegacy
			case cfg.OnModeChange == OnModeChangeMigrate:
				p.migrate(&up, false, &migrating, &running, &refused)
			case cfg.OnModeChange == OnModeChangeRecreate && !up.Managed:
				up.Action = ActionLegacy
				unlistedMismatch = append(unlistedMismatch, up)
			case cfg.OnModeChange == OnModeChangeRecreate:
				up.Action = ActionRecreate
				if !cfg.AllowDataLoss {
					up.Action = ActionLegacy // refused in modeFindings: the claim stays as it is
				}
				recreate = append(recreate, up)
				if p.live.Mounted[c.Name] {
					mounted = append(mounted, up)
				}
			default:
				up.Action = ActionLegacy
			}
		case !up.Managed:
			up.Action, up.Reason = ActionObserve, "created by KubeSpawner; not listed in users"
			if p.prior != nil && p.prior.Managed[u] != "" {
				up.Action, up.Reason = ActionRelease, "removed from users; the claim stays"
			}
		default:
			up.Action, up.Reason = p.capacityAction(c, u)
		}
		p.res.Users = append(p.res.Users, up)
	}

	p.extraVolumes(names, &migrating, &running, &refused)
	p.modeFindings(mismatched, recreate, unlistedMismatch, mounted)
	p.migrationFindings(running, refused)
	p.deleteSourceFindings()
	for _, up := range goneOutOfBand {
		p.warnf("users", "A managed home claim was deleted outside Terraform",
			"Claim %s of user %q no longer exists; whatever was in that home directory is gone. Apply will create the claim again, empty.", up.ClaimName, up.User)
	}

	p.res.ColocationRequired = cfg.AccessMode != RWX
	for _, up := range slices.Concat(p.res.Users, p.res.Extra) {
		if up.Action == ActionLegacy {
			p.res.LegacyUsers = append(p.res.LegacyUsers, up.User)
			if up.Live != nil && !slices.Contains(up.Live.AccessModes, RWX) {
				p.res.ColocationRequired = true
			}
		}
	}
	slices.Sort(p.res.LegacyUsers)
	p.res.LegacyUsers = slices.Compact(p.res.LegacyUsers)
	p.res.Class = p.class()
	return p.res
}

func (p *planner) class() Class {
	if len(p.res.Errors) > 0 {
		return ClassNone
	}
	c := ClassNone
	for _, up := range slices.Concat(p.res.Users, p.res.Extra) {
		switch up.Action {
		case ActionRecreate, ActionDeleteSource:
			return ClassDestructive
		case ActionCreate, ActionResize, ActionRelease, ActionMigrate:
			c = ClassSafe
		case ActionKeep, ActionLegacy:
			if up.Managed && (p.prior == nil || p.prior.Managed[up.User] == "") {
				c = ClassSafe // adopted into management
			}
		}
	}
	if p.prior != nil && !sameConfig(p.prior.Config, p.cfg) {
		c = ClassSafe
	}
	return c
}

func sameConfig(a, b Config) bool {
	return a.AccessMode == b.AccessMode && a.StorageClass == b.StorageClass && a.CapacityBytes == b.CapacityBytes &&
		a.NameTemplate == b.NameTemplate && a.Scheme == b.Scheme && a.OnModeChange == b.OnModeChange
}
