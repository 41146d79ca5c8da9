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
package safety

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/claims"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/kubespawner"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/migration"
)

// Access modes.
const (
	RWO  = "ReadWriteOnce"
	RWX  = "ReadWriteMany"
	RWOP = "ReadWriteOncePod"
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

// ownClaims are the live claims of this deployment. Under user namespaces
// the provider reads claims cluster-wide: a claim counts when it is in its
// user's namespace (claims of other hubs, or in another user's namespace,
// are not this deployment's); a claim without a user (a workspace claim
// without KubeSpawner's labels) when it is in some user's namespace.
func ownClaims(cfg Config, cs []claims.Claim) []claims.Claim {
	if cfg.UserNamespaceTemplate == "" {
		// Read cluster-wide after a change of namespace: only the
		// deployment's namespace counts ("" in tests: the deployment's).
		var out []claims.Claim
		for _, c := range cs {
			if c.Namespace == "" || c.Namespace == cfg.Namespace {
				out = append(out, c)
			}
		}
		if len(out) == len(cs) {
			return cs
		}
		return out
	}
	userNS := map[string]bool{}
	for _, u := range cfg.Users {
		if ns, err := cfg.NamespaceOf(u); err == nil {
			userNS[ns] = true
		}
	}
	var out []claims.Claim
	for _, c := range cs {
		if c.Username == "" {
			continue
		}
		if ns, err := cfg.NamespaceOf(c.Username); err == nil && ns == c.Namespace {
			userNS[ns] = true
			out = append(out, c)
		}
	}
	for _, c := range cs {
		if c.Username == "" && userNS[c.Namespace] {
			out = append(out, c)
		}
	}
	return out
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

// Finding is a diagnostic: the attribute it is about, a summary and a detail
// that says what, who, why and how to proceed.
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

// ListLimit is how many names a diagnostic lists before "and N more".
const ListLimit = 20

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

// leftHome is a home the configuration no longer finds where it looks.
type leftHome struct {
	claim claims.Claim
	want  string // the namespace the configuration looks in for its user
}

// leftBehind lists the homes that are where homes were looked for (the
// previous configuration's namespace for the user, or the hub's namespace)
// but not where this configuration looks for them: after a change of
// namespace or of user namespaces, KubeSpawner would give these users new,
// empty homes.
func leftBehind(cfg Config, prior *Prior, cs []claims.Claim) []leftHome {
	var out []leftHome
	for _, c := range cs {
		if c.Username == "" || c.Servername != "" || c.Annotations[migration.CopyOfAnnotation] != "" || c.Namespace == "" {
			continue
		}
		want, err := cfg.NamespaceOf(c.Username)
		if err != nil || c.Namespace == want {
			continue
		}
		was := cfg.UserNamespaceTemplate != "" && c.Namespace == cfg.Namespace
		names := []string{}
		if n, err := kubespawner.Expand(cfg.NameTemplate, c.Username, "", cfg.Scheme); err == nil {
			names = append(names, n)
		}
		if prior != nil {
			if ns, err := prior.Config.NamespaceOf(c.Username); err == nil && ns == c.Namespace {
				was = true
			}
			if n, err := kubespawner.Expand(prior.Config.NameTemplate, c.Username, "", prior.Config.Scheme); err == nil {
				names = append(names, n)
			}
		}
		if was && slices.Contains(names, c.Name) {
			out = append(out, leftHome{claim: c, want: want})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		return out[i].claim.Namespace+"/"+out[i].claim.Name < out[j].claim.Namespace+"/"+out[j].claim.Name
	})
	return out
}

// checkLeftBehind fails the plan for homes left where the configuration no
// longer looks, unless on_mode_change = "keep_existing" acknowledges them.
func (p *planner) checkLeftBehind(left []leftHome) {
	if len(left) == 0 {
		return
	}
	var lines []string
	for i, l := range left {
		if i == ListLimit {
			lines = append(lines, fmt.Sprintf("  ... and %d more (%d in all)", len(left)-ListLimit, len(left)))
			break
		}
		lines = append(lines, fmt.Sprintf("  %s: %s/%s (the configuration looks in namespace %s)", l.claim.Username, l.claim.Namespace, l.claim.Name, l.want))
	}
	attr := "namespace"
	if p.prior == nil || p.prior.Config.UserNamespaceTemplate != p.cfg.UserNamespaceTemplate {
		attr = "user_namespace_template"
	}
	detail := fmt.Sprintf("%d home claim(s) are where homes were looked for, but not where this configuration looks:\n%s\n"+
		"KubeSpawner would give these users new, empty homes; their data stays in the old claims.", len(left), strings.Join(lines, "\n"))
	if p.cfg.OnModeChange == OnModeChangeKeepExisting {
		p.warnf(attr, "Homes left where the configuration no longer looks", "%s", detail)
		return
	}
	p.errorf(attr, "Homes left where the configuration no longer looks",
		"%s\nKeep namespace and user_namespace_template as they were, move the homes first, or set on_mode_change = \"keep_existing\" to acknowledge that they are left as they are.", detail)
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
	p.checkStrays(strays, managed)
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
	p.migrationFindings(migrating, running, refused)
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
	if p.cfg.StorageClass != "" && c.StorageClass != p.cfg.StorageClass {
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
		case RWX, "ReadOnlyMany":
			return 0
		case RWO:
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

// resume plans finishing a rebind an earlier apply started, from the
// record on its volume (the claim may be gone). While a pod mounts the
// claim it waits, like any migration under a running server.
func (p *planner) resume(up *UserPlan, ip InProgress, running *[]UserPlan) {
	rec := ip.Record
	if p.live.Mounted[up.ClaimName] {
		up.Action, up.Volume = ActionLegacy, ip.Volume
		up.Reason = fmt.Sprintf("the rebind an earlier apply started (volume %s, step %s) waits: a server is running", ip.Volume, rec.Step)
		*running = append(*running, *up)
		return
	}
	up.Action, up.Method, up.Volume, up.Resume = ActionMigrate, migration.MethodRebind, ip.Volume, &rec
	up.Reason = fmt.Sprintf("resume the rebind started by an earlier apply (volume %s, step %s)", ip.Volume, rec.Step)
}

// migrate decides how one claim that differs is migrated: not while a
// server runs, not beyond the batch, and only by a method that can serve
// it in the new mode. A home (extra false) may be copied; another per-user
// claim (extra true) keeps its class and is only rebound.
func (p *planner) migrate(up *UserPlan, extra bool, migrating, running, refused *[]UserPlan) {
	c, m := up.Live, p.cfg.Migration
	up.Action = ActionLegacy
	if p.live.Mounted[c.Name] {
		up.Reason += "; a server is running: migrated by a later apply"
		*running = append(*running, *up)
		return
	}
	src := migration.Source{Modes: c.AccessModes, StorageClass: c.StorageClass, Bound: c.Phase == "Bound" && c.VolumeName != ""}
	if v, ok := p.live.Volumes[c.VolumeName]; ok {
		src.CSIDriver = v.CSIDriver
	}
	toClass, asked := p.cfg.StorageClass, m.Method
	if extra {
		toClass, asked = "", migration.MethodRebind
	}
	method, why := migration.Choose(asked, src, p.cfg.AccessMode, toClass)
	if extra && method == "" {
		why += " (other per-user claims are only rebound, never copied)"
	}
	switch {
	case method == "":
		up.Reason += "; " + why
		*refused = append(*refused, *up)
		return
	case m.BatchSize > 0 && len(*migrating) >= m.BatchSize:
		up.Reason += "; beyond batch_size: migrated by a later apply"
		return
	}
	if method == migration.MethodCopy {
		why := orDefault(whyNotRebind(src, p.cfg), "method = \"copy\"")
		target, err := kubespawner.Expand(m.TargetTemplate, up.User, "", p.cfg.Scheme)
		switch {
		case m.CopyImage == "" || m.TargetTemplate == "":
			up.Reason += "; needs a copy (" + why + "): set migration.copy_image and migration.target_name_template"
			*refused = append(*refused, *up)
			return
		case err != nil || target == c.Name:
			up.Reason += fmt.Sprintf("; migration.target_name_template gives %q for this user, which cannot be the new claim", target)
			*refused = append(*refused, *up)
			return
		}
		up.Action, up.Method, up.Target = ActionMigrate, method, target
		up.Reason = fmt.Sprintf("copy to a new %s claim %s (%s); %s is kept", p.cfg.AccessMode, target, why, c.Name)
		*migrating = append(*migrating, *up)
		return
	}
	up.Action, up.Method, up.Volume = ActionMigrate, method, c.VolumeName
	up.Reason = fmt.Sprintf("rebind volume %s as %s (zero copy)", c.VolumeName, p.cfg.AccessMode)
	if up.Managed && !extra && p.cfg.CapacityBytes > 0 && c.RequestedBytes != p.cfg.CapacityBytes {
		// The rebound claim requests what the old one did (its volume's
		// size); a managed home then grows to the configured capacity in the
		// same apply, under the same rules as any other (never shrinks).
		if act, _ := p.capacityAction(c, up.User); act == ActionResize {
			up.Resize = true
			up.Reason += fmt.Sprintf(", then grow %s to %s", c.Requested, p.cfg.Capacity)
		}
	}
	*migrating = append(*migrating, *up)
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
func (p *planner) extraVolumes(users []string, migrating, running, refused *[]UserPlan) {
	if len(p.cfg.ExtraVolumes) == 0 {
		return
	}
	byName := make(map[string]*claims.Claim, len(p.live.Claims))
	for i := range p.live.Claims {
		byName[p.live.Claims[i].Name] = &p.live.Claims[i]
	}
	var mismatched []UserPlan
	for _, t := range p.cfg.ExtraVolumes {
		for _, u := range users {
			name, err := kubespawner.Expand(t, u, "", p.cfg.Scheme)
			if err != nil {
				continue
			}
			up := UserPlan{User: u, ClaimName: name, Live: byName[name]}
			up.Namespace, _ = p.cfg.NamespaceOf(u) // the home pass reported a user without one
			if ip, ok := p.live.InProgress[name]; ok {
				p.resume(&up, ip, running)
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
				p.migrate(&up, true, migrating, running, refused)
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
		p.homeClaim(up.User, rec.Target)
		up.Action = ActionCopied
		up.Reason = fmt.Sprintf("copied to %s (%d files, %d bytes); %s is kept with the old data", rec.Target, rec.Files, rec.Bytes, c.Name)
		if m := p.cfg.Migration; m.DeleteSources && p.cfg.AllowDataLoss && p.cfg.OnModeChange == OnModeChangeMigrate && up.TargetLive != nil {
			up.Action = ActionDeleteSource
			up.Reason = fmt.Sprintf("delete %s, the old home: the user's home is %s, a verified copy (%d files, %d bytes)", c.Name, rec.Target, rec.Files, rec.Bytes)
			p.deleteSources = append(p.deleteSources, *up)
		}
		return
	}
	up.Action, up.Method = ActionMigrate, migration.MethodCopy
	up.Reason = fmt.Sprintf("resume the copy to %s started by an earlier apply (step %s)", rec.Target, rec.Step)
}

func (p *planner) homeClaim(user, claim string) {
	if p.res.HomeClaims == nil {
		p.res.HomeClaims = map[string]string{}
	}
	p.res.HomeClaims[user] = claim
}

// deleteSourceFindings reports deleting the sources of finished copies:
// destructive, refused while a pod mounts one.
func (p *planner) deleteSourceFindings() {
	if len(p.deleteSources) == 0 {
		return
	}
	var mounted []UserPlan
	for _, up := range p.deleteSources {
		if p.live.Mounted[up.ClaimName] {
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
		len(p.deleteSources), describeReasons(p.deleteSources))
}

func whyNotRebind(src migration.Source, cfg Config) string {
	_, why := migration.Choose(migration.MethodRebind, src, cfg.AccessMode, cfg.StorageClass)
	return why
}

// migrationFindings reports the users a migration leaves for later or cannot move.
func (p *planner) migrationFindings(migrating, running, refused []UserPlan) {
	if len(refused) > 0 {
		p.errorf("migration", "Some homes cannot be migrated without data loss",
			"%d home claim(s) cannot be moved to %s:\n%s\n"+
				"Rebind serves the same volume in the new mode; it needs a bound CSI volume, the same class, and a driver that can serve the new mode "+
				"(ReadWriteOncePod: any CSI driver; ReadWriteMany: Longhorn). Other homes are copied into new claims: that needs migration.copy_image and migration.target_name_template. "+
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

func describeReasons(ups []UserPlan) string {
	var b strings.Builder
	for i, up := range ups {
		if i == ListLimit {
			fmt.Fprintf(&b, "  ... and %d more (%d in all)\n", len(ups)-ListLimit, len(ups))
			break
		}
		fmt.Fprintf(&b, "  %s: %s (%s)\n", up.User, up.ClaimName, up.Reason)
	}
	return strings.TrimRight(b.String(), "\n")
}

// modeFindings turns mode/class differences into the decision the
// configuration asked for: fail (error), keep_existing (safe) or recreate
// (destructive, only with allow_data_loss and never under a running server).
func (p *planner) modeFindings(mismatched, recreate, unlisted, mounted []UserPlan) {
	if len(mismatched) == 0 {
		return
	}
	cfg := p.cfg
	switch cfg.OnModeChange {
	case OnModeChangeKeepExisting, OnModeChangeMigrate:
		return
	case OnModeChangeRecreate:
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

// checkStrays reports home claims whose names the template does not produce:
// KubeSpawner made them with another template or slug scheme, and under this
// configuration their users would get new, empty homes.
func (p *planner) checkStrays(strays []claims.Claim, managed map[string]bool) {
	if len(strays) == 0 {
		return
	}
	cfg := p.cfg
	var lines []string
	for i, c := range strays {
		if i == ListLimit {
			lines = append(lines, fmt.Sprintf("  ... and %d more", len(strays)-ListLimit))
			break
		}
		want, _ := kubespawner.Expand(cfg.NameTemplate, c.Username, "", cfg.Scheme)
		hint := ""
		for _, alt := range []kubespawner.Scheme{kubespawner.SchemeSafe, kubespawner.SchemeEscape} {
			if n, err := kubespawner.Expand(cfg.NameTemplate, c.Username, "", alt); err == nil && n == c.Name && alt != cfg.Scheme {
				hint = fmt.Sprintf(" (matches slug_scheme = %q)", alt)
			}
		}
		lines = append(lines, fmt.Sprintf("  %s: has %s, the template gives %s%s", c.Username, c.Name, want, hint))
	}
	changed := p.prior != nil && (p.prior.Config.NameTemplate != cfg.NameTemplate || p.prior.Config.Scheme != cfg.Scheme)
	what := "do not have the names that pvc_name_template and slug_scheme give"
	if changed {
		what = fmt.Sprintf("were named by the previous template (%q, %s) and not by the new one (%q, %s)",
			p.prior.Config.NameTemplate, p.prior.Config.Scheme, cfg.NameTemplate, cfg.Scheme)
	}
	detail := fmt.Sprintf("%d home claim(s) in namespace %s %s:\n%s\n"+
		"KubeSpawner would give these users new, empty homes under the new names (unless it remembers the old name: KubeSpawner's remember_pvc_name keeps it for users who have started a server before). "+
		"Their data stays in the old claims.", len(strays), cfg.Namespace, what, strings.Join(lines, "\n"))
	if cfg.OnModeChange == OnModeChangeKeepExisting {
		p.warnf("pvc_name_template", "Existing homes do not match the name template", "%s", detail)
		return
	}
	p.errorf("pvc_name_template", "Existing homes do not match the name template",
		"%s\nKeep pvc_name_template and slug_scheme as they were, or set on_mode_change = \"keep_existing\" to acknowledge that these claims are left as they are.", detail)
}

// checkStorage reports what the class and mode imply, from configuration and live class alone.
func (p *planner) checkStorage() {
	cfg := p.cfg
	if cfg.AccessMode == RWOP {
		p.warnf("access_mode", "ReadWriteOncePod allows one server per user",
			"With ReadWriteOncePod only one pod in the cluster may use a user's home claim: a named server or an app started beside the lab fails to schedule until the other stops. "+
				"Co-location cannot help. Use ReadWriteMany for several servers per user.")
	}
	sc := p.live.Class
	if sc == nil {
		return
	}
	if !sc.Exists && !sc.Created {
		p.warnf("storage_class_name", "The storage class does not exist",
			"StorageClass %q was not found; new claims will stay Pending until it exists. Create it, or use a storage_class block so this resource creates it.", sc.Name)
		return
	}
	if cfg.AccessMode != RWX || sc.Provisioner == "" {
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

// Destroy classifies destroying the resource: claims stay unless the
// configuration says both deletion_policy = "delete" and allow_data_loss.
func Destroy(cfg Config, prior Prior, live Live) Result {
	var res Result
	res.Class = ClassNone
	var del, mounted []UserPlan
	live.Claims = ownClaims(cfg, live.Claims)
	liveByName := map[string]*claims.Claim{}
	for i := range live.Claims {
		liveByName[live.Claims[i].Name] = &live.Claims[i]
	}
	users := make([]string, 0, len(prior.Managed))
	for u := range prior.Managed {
		users = append(users, u)
	}
	sort.Strings(users)
	for _, u := range users {
		c := liveByName[prior.Managed[u]]
		if c == nil {
			continue
		}
		up := UserPlan{User: u, ClaimName: c.Name, Managed: true, Live: c, Action: ActionRelease, Reason: "retained", Namespace: c.Namespace}
		if up.Namespace == "" {
			up.Namespace = cfg.Namespace
		}
		if cfg.DeletionPolicy == DeletionDelete && cfg.AllowDataLoss {
			up.Action, up.Reason = ActionRecreate, "deleted"
			del = append(del, up)
			if live.Mounted[c.Name] {
				mounted = append(mounted, up)
			}
		}
		res.Users = append(res.Users, up)
	}
	switch {
	case len(mounted) > 0:
		res.Errors = append(res.Errors, Finding{"deletion_policy", "A running server uses a claim that would be deleted",
			fmt.Sprintf("These claims are mounted by a running pod; the delete would hang on kubernetes.io/pvc-protection:\n%s\nStop these users' servers first.", describe(mounted))})
	case len(del) > 0:
		res.Class = ClassDestructive
		res.Warnings = append(res.Warnings, Finding{"deletion_policy", "Destroying deletes home claims",
			fmt.Sprintf("deletion_policy = \"delete\" and allow_data_loss = true: destroy deletes %d home claim(s) and the data in them:\n%s", len(del), describe(del))})
	case len(res.Users) > 0:
		res.Warnings = append(res.Warnings, Finding{"deletion_policy", "Home claims stay after destroy",
			fmt.Sprintf("deletion_policy = %q: the %d managed home claim(s) in namespace %s are left in place with their data; Terraform only forgets them.",
				orDefault(cfg.DeletionPolicy, DeletionRetain), len(res.Users), cfg.Namespace)})
	}
	return res
}

// describe lists users and claims, the first ListLimit and a count.
func describe(ups []UserPlan) string {
	var b strings.Builder
	for i, up := range ups {
		if i == ListLimit {
			fmt.Fprintf(&b, "  ... and %d more (%d in all)\n", len(ups)-ListLimit, len(ups))
			break
		}
		fmt.Fprintf(&b, "  %s: %s", up.User, up.ClaimName)
		if up.Live != nil {
			fmt.Fprintf(&b, " (%s, class %q, %s)", strings.Join(up.Live.AccessModes, ","), up.Live.StorageClass, orDash(up.Live.Phase))
		}
		b.WriteString("\n")
	}
	return strings.TrimRight(b.String(), "\n")
}

func classSuffix(class string) string {
	if class == "" {
		return ""
	}
	return fmt.Sprintf(" and storage class %q", class)
}

func orDash(s string) string { return orDefault(s, "-") }

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}
