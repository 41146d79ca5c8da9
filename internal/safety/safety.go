package safety

import (
	"fmt"
	"iter"
	"maps"
	"slices"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/claims"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/kubespawner"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/migration"
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
	// Shared, when set, keeps every home in a directory of one claim (the
	// shared layout) instead of a claim per user.
	Shared *SharedHome
	// OnLayoutChange says what to do when a change moves users' homes to
	// other directories or claims.
	OnLayoutChange OnLayoutChange
	// SplitFrom, when set, is the per-user layout while homes move out of
	// the shared one: a user without a claim of their own finds their home
	// in their directory of this claim (split.go). Never set with Shared.
	SplitFrom *SharedHome
	// MergeInto, when set, is the per-user layout's hub while homes move
	// into the shared layout (layout = "shared", on_layout_change =
	// "migrate"): a user's claim is mounted until a merge copied it into
	// their directory of this claim (merge.go); a user without a claim, or
	// whose claim was merged, finds their home in that directory. The hub's
	// settings are SplitFrom's (Fallback). Never set with Shared or
	// SplitFrom.
	MergeInto *SharedHome
	// ClassReplaced names the settings of the StorageClass this resource
	// manages that cannot change in place (apply deletes and creates it
	// again); empty when none change.
	ClassReplaced []string
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
	// RebindDrivers are CSI drivers the operator knows to serve an existing
	// volume in ReadWriteMany once an RWX claim uses it
	// (migration.rebind_drivers); rebind considers them besides the
	// provider's built-in list (see migration.Choose).
	RebindDrivers []string
}

// Equal reports whether m and o configure the same migration.
func (m Migration) Equal(o Migration) bool {
	return m.Method == o.Method && m.BatchSize == o.BatchSize && m.SkipRunning == o.SkipRunning && m.CopyImage == o.CopyImage &&
		m.TargetTemplate == o.TargetTemplate && m.DeleteSources == o.DeleteSources && slices.Equal(m.RebindDrivers, o.RebindDrivers)
}

// Prior is what the state recorded at the last apply.
type Prior struct {
	Config  Config
	Managed map[string]string // user -> claim name the provider manages
	// ClassManaged: the state records the StorageClass this resource
	// manages (a refresh forgets it when it was deleted outside Terraform).
	ClassManaged bool
	// HubSwitched: the last apply that gave the hub these settings of a
	// move out of the shared layout finished without an error, so the
	// configuration that passes spawner_settings to the hub ran after it
	// (a failed apply stops it). A move by copy starts only then.
	HubSwitched bool
	// MovedFrom are the earlier places of homes of the shared claim
	// (Result.MovedFrom) the last apply gave the hub: a list the claim no
	// longer has is restored, never dropped.
	MovedFrom []string
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
	Claims []claims.Claim // every claim that matches the home selector
	Class  *StorageClass  // nil when not read
	// Mounted are the claims used by a pod that is not finished.
	Mounted map[claims.Ref]bool
	// Volumes the claims are bound to, by name (read when some claim
	// differs from the configuration).
	Volumes map[string]Volume
	// Migrations in progress, by the claim they migrate (always read):
	// the record on the volume, which outlives the claim.
	InProgress map[claims.Ref]InProgress
	// Shared is the shared layout's claim as read; nil when it does not
	// exist (or the layout is not shared).
	Shared *claims.Claim
	// SharedSource is the source of the volume the shared claim is bound
	// to, while homes move out of it: whether a user's directory can be a
	// volume of its own (migration.SplitSource) or must be copied. Nil when
	// not read: the move is planned zero copy.
	SharedSource *migration.VolumeSource
	// DirectoriesInUse is what running pods mount of the shared claim,
	// while homes move out of it by copy: a directory in use is not copied
	// (migration.skip_running leaves it for a later apply). Nil when not
	// read.
	DirectoriesInUse *migration.DirectoryUse
	// FormerSharedVolumes are volumes once bound to a claim of the shared
	// claim's name (their claimRef has a UID), read only while that claim
	// does not exist and shared_home.create_claim may create it: a claim
	// of that name existed, and its homes may be on them.
	FormerSharedVolumes []string
}

// Ref is the identity of a claim as the plan reads it: a claim without a
// namespace is the deployment's.
func (c Config) Ref(namespace, name string) claims.Ref {
	if namespace == "" {
		namespace = c.Namespace
	}
	return claims.Ref{Namespace: namespace, Name: name}
}

// ref is the identity of a live claim.
func (c Config) ref(cl *claims.Claim) claims.Ref { return c.Ref(cl.Namespace, cl.Name) }

// Ref is the identity of the user's home claim as the plan names it.
func (up *UserPlan) Ref() claims.Ref { return claims.Ref{Namespace: up.Namespace, Name: up.ClaimName} }

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
	User string
	// Server is the named server whose home this is, where the name
	// template gives each server its own claim ({servername},
	// {user_server}); "" for the default server's home and for other
	// per-user claims.
	Server    string
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

// Result is the outcome of Plan or Destroy.
type Result struct {
	Class Class
	Users []UserPlan // the default servers' homes, sorted by user
	// Servers are named servers' homes where the name template gives each
	// server its own claim, found in the cluster (KubeSpawner creates
	// them; the provider never does), sorted by user and server.
	Servers            []UserPlan
	LegacyUsers        []string   // users kept on a claim that differs from the config
	ColocationRequired bool       // some user's home cannot be shared across nodes
	Extra              []UserPlan // other per-user claims (Config.ExtraVolumes) that differ or migrate
	Errors             []claims.Finding
	Warnings           []claims.Finding
	// MovedFrom are the templates of the places homes had under earlier
	// settings, which the layout's init container renames a missing
	// directory from (migration.MovedFromAnnotation): the shared claim's
	// list, with the place this change moves homes from
	// (on_layout_change = "move"). Apply records it on the shared claim
	// before anything else when it grew.
	MovedFrom []string
	// LeftAt are the templates of the places homes were left at by a keep
	// (migration.LeftAtAnnotation): the shared claim's list, with the place
	// this change leaves homes at. Apply records it with MovedFrom.
	LeftAt []string
	// CreateShared: the shared layout's claim does not exist and apply
	// creates it (shared_home.create_claim).
	CreateShared bool
}

// All is every user plan, the homes' (Users, Servers) then the other
// claims' (Extra), in place: a UserPlan is large, and copying tens of
// thousands of them costs milliseconds per pass. The pointers are into r's
// slices: read through them, never write.
func (r *Result) All() iter.Seq[*UserPlan] {
	return func(yield func(*UserPlan) bool) {
		for _, up := range r.Keyed() {
			if !yield(up) {
				return
			}
		}
	}
}

// Keyed is All with each plan's key in changes, migration_plan and
// migration_status: the username for a default server's home,
// "user/server" for a named server's (ServerKey), "user (claim)" for
// another per-user claim (ExtraKey).
func (r *Result) Keyed() iter.Seq2[string, *UserPlan] {
	return func(yield func(string, *UserPlan) bool) {
		for i := range r.Users {
			if !yield(r.Users[i].User, &r.Users[i]) {
				return
			}
		}
		for i := range r.Servers {
			if up := &r.Servers[i]; !yield(ServerKey(up.User, up.Server), up) {
				return
			}
		}
		for i := range r.Extra {
			if up := &r.Extra[i]; !yield(ExtraKey(up.User, up.ClaimName), up) {
				return
			}
		}
	}
}

// Who names the home in diagnostics as it is keyed: "alice", or
// "alice/gpu" for alice's named server gpu.
func (up *UserPlan) Who() string {
	if up.Server != "" {
		return ServerKey(up.User, up.Server)
	}
	return up.User
}

// Plan classifies the change from prior (nil on create) to cfg against the live claims.
func Plan(cfg Config, prior *Prior, live Live) Result {
	if cfg.Shared != nil {
		return planShared(cfg, prior, live)
	}
	shared := live // the claims as read: the layout check looks at every one
	left := leftBehind(cfg, prior, live.Claims)
	live.Claims = ownClaims(cfg, live.Claims)
	p := planner{cfg: cfg, prior: prior, live: live, left: map[string]bool{}}
	var places Result // the earlier places of homes, and what is found of them
	if Fallback(cfg) != nil {
		p.places = placesOf(cfg, prior, live, &places)
		places.LeftAt = liveLeftAt(live, &places)
		checkPlaces(cfg, p.places, places.LeftAt, &places)
	}
	for _, l := range left {
		p.left[l.claim.Username] = true
	}
	p.checkLeftBehind(left)
	switch {
	case cfg.SplitFrom != nil:
		p.checkSplitFrom()
	case cfg.MergeInto != nil:
		p.checkMergeInto()
	}
	res := p.run()
	res.MovedFrom, res.LeftAt = p.places, places.LeftAt
	res.Errors = append(res.Errors, places.Errors...)
	res.Warnings = append(res.Warnings, places.Warnings...)
	checkLayoutMoves(cfg, prior, shared, &res)
	if Fallback(cfg) != nil && prior == nil {
		// Homes not yet moved are directories the plan cannot see, and a
		// move takes the directory the settings name (as a new resource
		// in the shared layout).
		res.Warnings = append(res.Warnings, adoptionWarnings(directoryView(cfg))...)
	}
	return res
}

type planner struct {
	cfg   Config
	prior *Prior
	live  Live
	res   Result
	left  map[string]bool // users whose home is left where the configuration no longer looks
	idx   index
	g     groups
	// classChange: apply creates or replaces the StorageClass, a change to
	// the cluster even when no claim is touched.
	classChange bool
	// places are the earlier places of homes of the shared claim homes move
	// out of (placesOf): a pod on one uses the home.
	places []string
}

// index is the live claims by what the plan asks of them.
type index struct {
	managed map[string]bool          // listed in users
	byUser  map[string]*claims.Claim // each user's home under the configured template
	servers []*claims.Claim          // named servers' homes under the configured template
	live    map[claims.Ref]*claims.Claim
	targets map[claims.Ref]*claims.Claim // copies' new claims, by source claim (the target's namespace)
	orphans map[string]*claims.Claim     // copies whose source claim is gone, by the home's key (Who)
	// homes are the claims the template names for the users the plan
	// knows of (listed, or with a claim) and their named servers, by the
	// home's key (Who): a copy's new claim must not be one of them.
	homes map[claims.Ref]string
	// copyTargets are the new claims of the copies this plan starts, by
	// the home's key: two homes are never copied into one claim.
	copyTargets map[claims.Ref]string
}

// groups are the users the plan's findings speak of, gathered while the
// users are planned; the findings are made from them at the end.
type groups struct {
	mismatched, recreate, unlisted, mounted, gone []UserPlan
	serversKept                                   []UserPlan // named servers' homes, which recreate never touches
	migrating, running, refused                   []UserPlan
	resizing                                      []UserPlan // rebinds that wait for an expansion to finish
	lostCopies                                    []UserPlan // switched copies whose new claim is gone
	deleteSources                                 []UserPlan
	// inDirectories are listed users whose home is a directory of the
	// shared claim that on_layout_change does not say to move.
	inDirectories []UserPlan
	// rebindDirs are listed users whose directory migration.method =
	// "rebind" cannot move.
	rebindDirs []UserPlan
	// noCopyImage are listed users whose directory moves by a copy
	// while migration.copy_image is not set.
	noCopyImage []UserPlan
	// hubFirst are listed users whose directory moves by a copy from the
	// next apply, once the hub has the move's settings.
	hubFirst []UserPlan
	// dirsInUse are listed users whose directory a pod uses while it
	// should be copied and migration.skip_running is off.
	dirsInUse []UserPlan
	// refusedMeanwhile are users whose copy is under way (the hub refuses
	// them) and waits for a pod using the directory.
	refusedMeanwhile []UserPlan
	// mergedAway are users whose claim was merged into the shared claim
	// while the settings have no fallback: the hub refuses them.
	mergedAway []UserPlan
	// mergedElsewhere are users merged into a directory the settings no
	// longer name.
	mergedElsewhere []UserPlan
	// staleDirectories are listed users merged into the directory a move
	// by copy made their claim from (it still holds the old files).
	staleDirectories []UserPlan
	// mergesInUse are listed users whose merge waits for a pod while
	// migration.skip_running is off.
	mergesInUse []UserPlan
	// paused are rebinds an earlier apply started whose old claim is still
	// there, while on_mode_change no longer says "migrate".
	paused []pausedRebind
}

type pausedRebind struct {
	up UserPlan
	ip InProgress
}

func (p *planner) errorf(attr, summary, format string, a ...any) {
	p.res.Errors = append(p.res.Errors, claims.Finding{Attribute: attr, Summary: summary, Detail: fmt.Sprintf(format, a...)})
}

func (p *planner) warnf(attr, summary, format string, a ...any) {
	p.res.Warnings = append(p.res.Warnings, claims.Finding{Attribute: attr, Summary: summary, Detail: fmt.Sprintf(format, a...)})
}

// run plans every user, then the findings, the co-location and the class.
func (p *planner) run() Result {
	p.checkStorage()
	p.checkStrays(p.indexClaims())
	names := p.userNames()
	p.res.Users = make([]UserPlan, 0, len(names)) // grown once: a UserPlan is large
	for _, u := range names {
		if up, ok := p.planUser(u); ok {
			p.res.Users = append(p.res.Users, up)
		}
	}
	p.namedServers()
	p.extraVolumes(names)
	p.modeFindings()
	p.migrationFindings()
	p.pausedFindings()
	p.deleteSourceFindings()
	if p.cfg.MergeInto == nil {
		p.splitFindings()
	}
	p.mergeFindings()
	for _, up := range p.g.gone {
		p.warnf("users", "A managed home claim was deleted outside Terraform",
			"Claim %s of user %q no longer exists; whatever was in that home directory is gone. Apply will create the claim again, empty.", up.ClaimName, up.User)
	}
	p.colocation()
	p.res.Class = p.class()
	return p.res
}

// indexClaims indexes the live claims and returns the strays: claims
// labelled as homes that the template does not name.
func (p *planner) indexClaims() []claims.Claim {
	cfg := p.cfg
	// Sized once: at tens of thousands of users, growing these maps cost
	// more than filling them.
	p.idx = index{managed: make(map[string]bool, len(cfg.Users)), byUser: make(map[string]*claims.Claim, len(p.live.Claims)),
		live: make(map[claims.Ref]*claims.Claim, len(p.live.Claims)), targets: map[claims.Ref]*claims.Claim{}, orphans: map[string]*claims.Claim{},
		copyTargets: map[claims.Ref]string{}}
	for _, u := range cfg.Users {
		p.idx.managed[u] = true
	}
	var strays []claims.Claim
	for i := range p.live.Claims {
		c := &p.live.Claims[i]
		p.idx.live[cfg.ref(c)] = c
		if src := c.Annotations[migration.CopyOfAnnotation]; src != "" {
			p.idx.targets[cfg.Ref(c.Namespace, src)] = c // a copy's target is its user's home through the source's record
			continue
		}
		if c.Username == "" {
			continue
		}
		want, err := kubespawner.Expand(cfg.NameTemplate, c.Username, "", cfg.Scheme)
		switch {
		case err == nil && want == c.Name:
			p.idx.byUser[c.Username] = c
		case p.isServerHome(c):
			p.idx.servers = append(p.idx.servers, c)
		case c.Servername == "" && !p.isExtra(c), p.wasServerHome(c):
			strays = append(strays, *c)
		}
	}
	// The new claims of copies in progress: no other home is copied there.
	for i := range p.live.Claims {
		c := &p.live.Claims[i]
		if v := c.Annotations[migration.CopyAnnotation]; v != "" {
			if rec, err := migration.DecodeCopyRecord(v); err == nil && rec.Target != "" {
				p.idx.copyTargets[cfg.Ref(c.Namespace, rec.Target)] = p.keyOf(c.Username, c.Servername, c.Name)
			}
		}
	}
	// A copy whose source claim was deleted: the target is the user's home.
	for src, t := range p.idx.targets {
		if p.idx.live[src] == nil && t.Username != "" {
			p.idx.orphans[p.keyOf(t.Username, t.Servername, src.Name)] = t
		}
	}
	return strays
}

// userNames are the users the plan speaks of, sorted: those listed, those
// with a home or a copy, those the last apply managed, and those whose
// migration an earlier apply started (its record is the truth: the claim
// may be gone).
func (p *planner) userNames() []string {
	users := make(map[string]bool, max(len(p.idx.byUser), len(p.idx.managed)))
	for u := range p.idx.byUser {
		users[u] = true
	}
	for k, t := range p.idx.orphans {
		if k == t.Username {
			users[k] = true
		}
	}
	for u := range p.idx.managed {
		users[u] = true
	}
	if p.prior != nil {
		for u := range p.prior.Managed {
			users[u] = true
		}
	}
	for _, ip := range p.live.InProgress {
		if u := ip.Record.User; u != "" && p.keyOf(u, ip.Record.Annotations[kubespawner.AnnotationServername], ip.Record.Claim) == u {
			users[ip.Record.User] = true
		}
	}
	return slices.Sorted(maps.Keys(users))
}

// planUser plans one user's home; false when there is nothing to say of
// the user (or the user cannot be planned: an error says why).
func (p *planner) planUser(u string) (UserPlan, bool) {
	up, ok := p.newUserPlan(u)
	if !ok {
		return up, false
	}
	return p.planHome(up)
}

// planHome plans one home claim, a default server's or a named server's:
// a copy, a migration in progress, or the claim as it is.
func (p *planner) planHome(up UserPlan) (UserPlan, bool) {
	c, t := up.Live, p.idx.targets[up.Ref()]
	ip, resuming := p.live.InProgress[up.Ref()]
	switch {
	case c != nil && p.mergeClaim(&up):
	case c != nil && p.splitClaim(&up):
	case c != nil && c.Annotations[migration.CopyAnnotation] != "":
		up.TargetLive = t
		p.copied(&up)
	case resuming && Fallback(p.cfg) != nil:
		p.rebindWhileMoving(&up, ip)
	case resuming && p.rebindWaits(&up, ip):
		p.g.paused = append(p.g.paused, pausedRebind{up, ip})
		return p.planClaim(up)
	case resuming:
		p.resume(&up, ip)
	case c != nil && t != nil:
		p.copyWithoutRecord(&up, t)
	case c == nil && p.idx.orphans[up.Who()] != nil:
		// Never a new, empty home under the old name: the copy is the home.
		t = p.idx.orphans[up.Who()]
		up.Action, up.Target, up.TargetLive = ActionCopied, t.Name, t
		up.Reason = fmt.Sprintf("copied to %s; the source claim %s was deleted", t.Name, up.ClaimName)
	default:
		return p.planClaim(up)
	}
	return up, true
}

// newUserPlan is a user's plan before its action: the home claim's name
// and namespace.
func (p *planner) newUserPlan(u string) (UserPlan, bool) {
	cfg := p.cfg
	up := UserPlan{User: u, Managed: p.idx.managed[u], Live: p.idx.byUser[u]}
	if up.Live != nil {
		up.ClaimName = up.Live.Name // the template's name for u: that is how it was found
	} else {
		name, err := kubespawner.Expand(cfg.NameTemplate, u, "", cfg.Scheme)
		if err != nil {
			p.errorf("users", "Username cannot be turned into a claim name", "%q: %v", u, err)
			return up, false
		}
		up.ClaimName = name
	}
	var err error
	if up.Namespace, err = cfg.NamespaceOf(u); err != nil {
		p.errorf("user_namespace_template", "Username cannot be turned into a namespace", "%q: %v", u, err)
		return up, false
	}
	return up, true
}

// planClaim plans a user's home claim that is not part of a copy or of a
// migration in progress.
func (p *planner) planClaim(up UserPlan) (UserPlan, bool) {
	c, u := up.Live, up.User
	if other := p.idx.live[up.Ref()]; c == nil && other != nil && up.Managed && !p.labelledFor(other, u) {
		// A claim of that name that is not this user's home: another
		// user's, a named server's, or one without KubeSpawner's user.
		// Never created over, never adopted.
		up.Action, up.Reason = ActionKeep, "the claim of this name is not the user's home"
		p.errorf("pvc_name_template", "A home's name is taken by another claim",
			"pvc_name_template gives user %q the claim %s, which exists and is not that user's home: it belongs to %s. "+
				"Nothing is created over it or adopted. Choose a template that gives every home its own name (e.g. claim-{user_server} rather than claim-{username}{servername}), or rename the user.",
			u, up.Ref(), ownerOf(other))
		return up, false
	}
	switch {
	case c == nil && !up.Managed:
		return up, false // was managed, is no longer listed and its claim is gone
	case c == nil && p.cfg.SplitFrom != nil:
		p.splitHome(&up) // the home is a directory of the shared claim
	case c == nil && p.cfg.MergeInto != nil:
		// The home is the user's directory: never a claim, which the hub
		// would mount instead.
		up.Action, up.Reason = ActionKeep, fmt.Sprintf("directory %q of claim %s/%s", p.dirOf(&up), p.cfg.Namespace, p.cfg.MergeInto.Claim)
	case c == nil:
		up.Action, up.Reason = ActionCreate, "no claim yet"
		// Only when the claim the state recorded is gone; after a template
		// or scheme change it may still exist under its old name (a stray).
		if p.prior != nil && p.prior.Managed[u] != "" && p.idx.live[claims.Ref{Namespace: up.Namespace, Name: p.prior.Managed[u]}] == nil && !p.left[u] {
			up.Reason = "deleted outside Terraform"
			p.g.gone = append(p.g.gone, up)
		}
	case c.Deleting:
		up.Action, up.Reason = ActionKeep, "being deleted by someone else"
		then := "the next plan will create it again, empty"
		if fb := Fallback(p.cfg); fb != nil {
			then = fmt.Sprintf("the user's server mounts their directory of claim %s/%s (no claim is created while homes move between layouts)", p.cfg.Namespace, fb.Claim)
		}
		p.warnf("users", "A home claim is being deleted",
			"Claim %s of user %q has a deletion timestamp: someone else is deleting it. Once it is gone, %s.", c.Name, u, then)
	case p.cfg.MergeInto != nil && (!up.Managed || up.Server != ""):
		// Mounted until merged; never changed, rebound or copied elsewhere.
		up.Action, up.Reason = ActionObserve, "mounted until merged into the shared claim (only listed users' default servers are merged)"
	case p.cfg.MergeInto != nil:
		p.mergeHome(&up)
	case p.differs(c) != "":
		up.Reason = p.differs(c)
		p.g.mismatched = append(p.g.mismatched, up)
		p.onModeChange(&up)
	case up.Server != "":
		up.Action, up.Reason = ActionObserve, "a named server's home, created by KubeSpawner"
	case !up.Managed:
		up.Action, up.Reason = ActionObserve, "created by KubeSpawner; not listed in users"
		if p.prior != nil && p.prior.Managed[u] != "" {
			up.Action, up.Reason = ActionRelease, "removed from users; the claim stays"
		}
	default:
		up.Action, up.Reason = p.capacityAction(c, u)
	}
	return up, true
}

// onModeChange decides, as on_mode_change says, for a home that differs.
func (p *planner) onModeChange(up *UserPlan) {
	cfg := p.cfg
	switch {
	case cfg.OnModeChange == OnModeChangeMigrate:
		p.migrateHome(up)
	case cfg.OnModeChange == OnModeChangeRecreate && up.Server != "":
		up.Action = ActionLegacy
		p.g.serversKept = append(p.g.serversKept, *up)
	case cfg.OnModeChange == OnModeChangeRecreate && !up.Managed:
		up.Action = ActionLegacy
		p.g.unlisted = append(p.g.unlisted, *up)
	case cfg.OnModeChange == OnModeChangeRecreate:
		up.Action = ActionRecreate
		if !cfg.AllowDataLoss {
			up.Action = ActionLegacy // refused in modeFindings: the claim stays as it is
		}
		p.g.recreate = append(p.g.recreate, *up)
		if p.live.Mounted[cfg.ref(up.Live)] {
			p.g.mounted = append(p.g.mounted, *up)
		}
	default: // keep_existing, or fail (refused in modeFindings)
		up.Action = ActionLegacy
	}
}

// copyWithoutRecord plans a home claim without a copy record whose copy
// exists: KubeSpawner created it again after the copy, or the record was
// removed. Nothing is ever copied over the copy.
func (p *planner) copyWithoutRecord(up *UserPlan, t *claims.Claim) {
	c, u := up.Live, up.Who()
	if t.Annotations[migration.CopySwitchedAnnotation] == "" && c.UID != "" && t.Annotations[migration.CopyOfUIDAnnotation] == c.UID {
		// The very claim the copy started from (same UID), its record
		// removed before the copy finished: the user was never switched.
		up.Action, up.Reason = ActionKeep, "an unfinished copy without a record"
		p.errorf("migration", "An unfinished copy has lost its record",
			"Claim %s (uid %s) of user %q has no copy record, but %s is an unfinished copy of that same claim; the user was never switched to it and keeps %s, which holds the data. "+
				"Nothing is copied over %s. To copy afresh, delete %s (a partial copy) and apply again.", c.Name, c.UID, u, t.Name, c.Name, t.Name, t.Name)
		return
	}
	// The copy stays the home.
	up.Action, up.Target, up.TargetLive = ActionCopied, t.Name, t
	up.Reason = fmt.Sprintf("%s is the copy of %s, which has no copy record: the copy stays the home", t.Name, c.Name)
	p.warnf("migration", "A copied home's old claim has no copy record",
		"Claim %s of user %q has no copy record, but %s is a copy of a claim of that name (KubeSpawner created %s again after the copy, or its record was removed). "+
			"%s stays the user's home and nothing is copied over it; %s is left as it is. Check what %s holds before deleting it: a server started with an older hub configuration may have written to it.",
		c.Name, u, t.Name, c.Name, t.Name, c.Name, c.Name)
}

// colocation is who stays legacy and whether some home needs co-location.
func (p *planner) colocation() {
	p.res.ColocationRequired = p.cfg.AccessMode != claims.RWX
	for up := range p.res.All() {
		if up.Action == ActionLegacy {
			p.res.LegacyUsers = append(p.res.LegacyUsers, up.User)
			if up.Live != nil && !slices.Contains(up.Live.AccessModes, claims.RWX) {
				p.res.ColocationRequired = true
			}
		}
	}
	slices.Sort(p.res.LegacyUsers)
	p.res.LegacyUsers = slices.Compact(p.res.LegacyUsers)
}

func (p *planner) class() Class {
	if len(p.res.Errors) > 0 {
		return ClassNone
	}
	c := ClassNone
	for up := range p.res.All() {
		switch up.Action {
		case ActionRecreate, ActionDeleteSource:
			return ClassDestructive
		case ActionCreate, ActionResize, ActionRelease, ActionMigrate:
			c = ClassSafe
		case ActionKeep, ActionLegacy:
			if up.Managed && up.Live != nil && (p.prior == nil || p.prior.Managed[up.User] == "") {
				c = ClassSafe // adopted into management
			}
		}
	}
	if p.classChange || p.prior != nil && (!sameConfig(p.prior.Config, p.cfg) || !sameDirectories(p.prior.Config, p.cfg)) {
		c = ClassSafe
	}
	return c
}

func sameConfig(a, b Config) bool {
	return a.AccessMode == b.AccessMode && a.StorageClass == b.StorageClass && a.CapacityBytes == b.CapacityBytes &&
		a.NameTemplate == b.NameTemplate && a.Scheme == b.Scheme && a.OnModeChange == b.OnModeChange
}

// sameDirectories reports whether a and b find homes in the same
// directories of a shared claim (the shared layout, or the one homes move
// out of): a change there changes the hub's settings.
func sameDirectories(a, b Config) bool {
	eq := func(x, y *SharedHome) bool { return x == nil && y == nil || x != nil && y != nil && *x == *y }
	return eq(a.Shared, b.Shared) && eq(a.SplitFrom, b.SplitFrom) && eq(a.MergeInto, b.MergeInto)
}
