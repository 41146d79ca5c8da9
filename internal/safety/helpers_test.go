package safety

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/claims"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/kubespawner"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/migration"
)

const (
	gi   = int64(1) << 30
	tmpl = "claim-{username}"
	ns   = "jhub"
)

// knownAttributes are the jupyter_home_storage attributes a finding may name.
var knownAttributes = map[string]bool{
	"access_mode": true, "capacity": true, "pvc_name_template": true, "allow_data_loss": true,
	"on_mode_change": true, "users": true, "storage_class_name": true, "deletion_policy": true, "migration": true,
	"extra_user_volumes": true, "user_namespace_template": true, "namespace": true, "storage_class": true,
}

// name is the claim name KubeSpawner gives user under template and scheme.
func name(t testing.TB, template, user string, scheme kubespawner.Scheme) string {
	t.Helper()
	n, err := kubespawner.Expand(template, user, "", scheme)
	if err != nil {
		t.Fatalf("Expand(%q, %q, %s): %v", template, user, scheme, err)
	}
	return n
}

// home is user's claim under the default template and the safe scheme.
func home(t testing.TB, user string) string { return name(t, tmpl, user, kubespawner.SchemeSafe) }

// claimOpt adjusts a test claim.
type claimOpt func(*claims.Claim)

func modes(m ...string) claimOpt { return func(c *claims.Claim) { c.AccessModes = m } }
func class(s string) claimOpt    { return func(c *claims.Claim) { c.StorageClass = s } }

func named(s string) claimOpt  { return func(c *claims.Claim) { c.Name = s } }
func deleting() claimOpt       { return func(c *claims.Claim) { c.Deleting = true } }
func server(s string) claimOpt { return func(c *claims.Claim) { c.Servername = s } }

// pvc is a bound 10Gi ReadWriteOnce gp3 home claim of user, named by the default template.
func pvc(t testing.TB, user string, opts ...claimOpt) claims.Claim {
	c := claims.Claim{
		Name:           home(t, user),
		Username:       user,
		AccessModes:    []string{claims.RWO},
		StorageClass:   "gp3",
		Requested:      "10Gi",
		RequestedBytes: 10 * gi,
		Phase:          "Bound",
	}
	for _, o := range opts {
		o(&c)
	}
	return c
}

func pvcs(t testing.TB, users []string, opts ...claimOpt) []claims.Claim {
	out := make([]claims.Claim, 0, len(users))
	for _, u := range users {
		out = append(out, pvc(t, u, opts...))
	}
	return out
}

// cfgOpt adjusts a test configuration.
type cfgOpt func(*Config)

func mode(m string) cfgOpt           { return func(c *Config) { c.AccessMode = m } }
func sclass(s string) cfgOpt         { return func(c *Config) { c.StorageClass = s } }
func onChange(o OnModeChange) cfgOpt { return func(c *Config) { c.OnModeChange = o } }
func dataLoss() cfgOpt               { return func(c *Config) { c.AllowDataLoss = true } }
func policy(p string) cfgOpt         { return func(c *Config) { c.DeletionPolicy = p } }
func template(s string) cfgOpt       { return func(c *Config) { c.NameTemplate = s } }

func scheme(s kubespawner.Scheme) cfgOpt {
	return func(c *Config) { c.Scheme = s }
}

func capacity(gib int64) cfgOpt {
	return func(c *Config) { c.CapacityBytes, c.Capacity = gib*gi, fmt.Sprintf("%dGi", gib) }
}

// cfg is a 10Gi ReadWriteOnce gp3 configuration for users.
func cfg(users []string, opts ...cfgOpt) Config {
	c := Config{
		Namespace:     ns,
		AccessMode:    claims.RWO,
		StorageClass:  "gp3",
		CapacityBytes: 10 * gi,
		Capacity:      "10Gi",
		NameTemplate:  tmpl,
		Scheme:        kubespawner.SchemeSafe,
		Users:         users,
	}
	for _, o := range opts {
		o(&c)
	}
	return c
}

// prior is the state after applying c: every listed user's claim is managed.
func prior(t testing.TB, c Config) *Prior {
	p := &Prior{Config: c, Managed: map[string]string{}}
	for _, u := range c.Users {
		p.Managed[u] = name(t, c.NameTemplate, u, c.Scheme)
	}
	return p
}

func gp3(expand bool) *StorageClass {
	return &StorageClass{Name: "gp3", Provisioner: "ebs.csi.aws.com", AllowExpansion: expand, Exists: true}
}

func users(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s%02d", prefix, i)
	}
	return out
}

// want describes one expected finding: its attribute, and strings its
// summary or detail must contain (has) or must not contain (hasNot).
type want struct {
	attr   string
	has    []string
	hasNot []string
}

func checkFindings(t *testing.T, kind string, got []claims.Finding, wants []want) {
	t.Helper()
	for _, f := range got {
		if !knownAttributes[f.Attribute] {
			t.Errorf("%s %q names unknown attribute %q", kind, f.Summary, f.Attribute)
		}
		if f.Summary == "" || f.Detail == "" {
			t.Errorf("%s without summary or detail: %+v", kind, f)
		}
	}
	if len(got) != len(wants) {
		t.Errorf("got %d %s, want %d:\n%s", len(got), kind, len(wants), dump(got))
		return
	}
	for i, w := range wants {
		f := got[i]
		if f.Attribute != w.attr {
			t.Errorf("%s %d: attribute %q, want %q (%s)", kind, i, f.Attribute, w.attr, f.Summary)
		}
		text := f.Summary + "\n" + f.Detail
		for _, s := range w.has {
			if !strings.Contains(text, s) {
				t.Errorf("%s %d (%s) does not mention %q:\n%s", kind, i, f.Attribute, s, text)
			}
		}
		for _, s := range w.hasNot {
			if strings.Contains(text, s) {
				t.Errorf("%s %d (%s) mentions %q:\n%s", kind, i, f.Attribute, s, text)
			}
		}
	}
}

func dump(fs []claims.Finding) string {
	var b strings.Builder
	for _, f := range fs {
		fmt.Fprintf(&b, "  [%s] %s: %s\n", f.Attribute, f.Summary, f.Detail)
	}
	return b.String()
}

// actions are the homes' actions by key: the user for a default server's
// home, "user/server" for a named server's.
func actions(r Result) map[string]Action {
	out := map[string]Action{}
	for k, up := range r.Keyed() {
		if up.Server != "" || up.User == k {
			out[k] = up.Action
		}
	}
	return out
}

type planCase struct {
	name        string
	cfg         Config
	prior       *Prior
	live        Live
	class       Class
	actions     map[string]Action // every user in the result, exactly
	claimNames  map[string]string // user -> expected ClaimName (subset)
	legacy      []string
	colocation  bool
	errors      []want
	warnings    []want
	checkResult func(t *testing.T, r Result)
}

func runPlanCases(t *testing.T, cases []planCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := Plan(tc.cfg, tc.prior, tc.live)
			if r.Class != tc.class {
				t.Errorf("class %q, want %q\nerrors:\n%swarnings:\n%s", r.Class, tc.class, dump(r.Errors), dump(r.Warnings))
			}
			wantActions := tc.actions
			if wantActions == nil {
				wantActions = map[string]Action{}
			}
			if got := actions(r); !reflect.DeepEqual(got, wantActions) {
				t.Errorf("actions\n got %v\nwant %v", got, wantActions)
			}
			for _, up := range r.Users {
				if want, ok := tc.claimNames[up.User]; ok && up.ClaimName != want {
					t.Errorf("user %q: claim name %q, want %q", up.User, up.ClaimName, want)
				}
			}
			if !slices.Equal(r.LegacyUsers, tc.legacy) {
				t.Errorf("legacy users %v, want %v", r.LegacyUsers, tc.legacy)
			}
			if r.ColocationRequired != tc.colocation {
				t.Errorf("colocation required %v, want %v", r.ColocationRequired, tc.colocation)
			}
			checkFindings(t, "errors", r.Errors, tc.errors)
			checkFindings(t, "warnings", r.Warnings, tc.warnings)
			if tc.checkResult != nil {
				tc.checkResult(t, r)
			}
			checkInvariants(t, tc.cfg, tc.prior, tc.live, r)
		})
	}
}

// at is a claim of the deployment's namespace.
func at(name string) claims.Ref { return claims.Ref{Namespace: ns, Name: name} }

func mountedAll(t testing.TB, us []string) map[claims.Ref]bool {
	out := map[claims.Ref]bool{}
	for _, u := range us {
		out[at(home(t, u))] = true
	}
	return out
}

// checkInvariants holds for every Plan result.
func checkInvariants(t *testing.T, c Config, pr *Prior, live Live, r Result) {
	t.Helper()
	recreate := false
	var legacy []string
	colocation := c.AccessMode != claims.RWX
	targets := map[claims.Ref]string{} // new claims of copies, by home
	homes := map[claims.Ref]string{}
	for k, up := range r.Keyed() {
		if up.Server != "" || up.User == k {
			homes[up.Ref()] = k
		}
	}
	for i, up := range r.Servers {
		// A named server's home: found in the cluster, never created,
		// resized, recreated or released by the provider.
		if i > 0 && (r.Servers[i-1].User > up.User || r.Servers[i-1].User == up.User && r.Servers[i-1].Server >= up.Server) {
			t.Errorf("servers not sorted and unique: %q before %q", r.Servers[i-1].Who(), up.Who())
		}
		if up.Server == "" || up.Managed || slices.Contains([]Action{ActionCreate, ActionResize, ActionRecreate, ActionRelease}, up.Action) {
			t.Errorf("named server's home %q: %s, managed %v", up.Who(), up.Action, up.Managed)
		}
	}
	for _, list := range [2][]UserPlan{r.Users, r.Servers} {
		checkHomes(t, c, pr, live, r, list, &recreate, &legacy, &colocation, targets, homes)
	}
	checkRest(t, c, live, r, recreate, legacy, colocation)
}

// checkHomes checks the invariants of every home's plan in list.
func checkHomes(t *testing.T, c Config, pr *Prior, live Live, r Result, list []UserPlan, recreate *bool, legacy *[]string, colocation *bool,
	targets, homes map[claims.Ref]string) {
	t.Helper()
	for i, up := range list {
		if up.Server == "" && i > 0 && list[i-1].User >= up.User {
			t.Errorf("users not sorted and unique: %q before %q", list[i-1].User, up.User)
		}
		if up.Method == migration.MethodCopy && up.Action == ActionMigrate && up.CopyResume == nil {
			// Two homes are never copied into one claim, nor into a home.
			at := claims.Ref{Namespace: up.Namespace, Name: up.Target}
			if other, dup := targets[at]; dup {
				t.Errorf("%q and %q are both copied into %s", other, up.Who(), at)
			}
			if other, ok := homes[at]; ok {
				t.Errorf("%q is copied into %s, the home of %q", up.Who(), at, other)
			}
			targets[at] = up.Who()
		}
		switch up.Action {
		case ActionRecreate:
			*recreate = true
			if !c.AllowDataLoss {
				t.Errorf("user %q is recreated without allow_data_loss", up.User)
			}
			if c.OnModeChange != OnModeChangeRecreate || !up.Managed || up.Live == nil {
				t.Errorf("user %q recreated: on_mode_change %q, managed %v, live %v", up.User, c.OnModeChange, up.Managed, up.Live != nil)
			}
		case ActionRelease, ActionObserve:
			if up.Managed || up.Live == nil {
				t.Errorf("user %q: %s but managed %v, live %v", up.User, up.Action, up.Managed, up.Live != nil)
			}
			if up.Action == ActionRelease && (pr == nil || pr.Managed[up.User] == "") {
				t.Errorf("user %q released but was not managed", up.User)
			}
		case ActionCreate:
			if !up.Managed || up.Live != nil {
				t.Errorf("user %q created: managed %v, live %v", up.User, up.Managed, up.Live != nil)
			}
		case ActionResize:
			if !up.Managed || up.Live == nil || up.Live.RequestedBytes >= c.CapacityBytes {
				t.Errorf("user %q resized: %+v", up.User, up)
			}
		case ActionLegacy:
			*legacy = append(*legacy, up.User)
			if up.Live != nil && !slices.Contains(up.Live.AccessModes, claims.RWX) {
				*colocation = true
			}
		case ActionMigrate:
			// Moving a home keeps its data: only asked for, only by rebind,
			// never under a running server.
			if up.Resume == nil && up.CopyResume == nil && (c.OnModeChange != OnModeChangeMigrate || up.Live == nil || live.Mounted[c.Ref(up.Live.Namespace, up.Live.Name)]) {
				t.Errorf("user %q migrated: on_mode_change %q, live %v", up.User, c.OnModeChange, up.Live != nil)
			}
			if up.Resize && (!up.Managed || up.Method != migration.MethodRebind || up.Live == nil || up.Live.RequestedBytes >= c.CapacityBytes) {
				t.Errorf("user %q grown after a migration: %+v", up.User, up)
			}
			switch up.Method {
			case migration.MethodRebind:
				if up.Volume == "" {
					t.Errorf("user %q rebound without a volume", up.User)
				}
				if up.Resume == nil && up.Live != nil && up.Live.Resizing {
					t.Errorf("user %q: a claim being expanded is rebound", up.Who())
				}
			case migration.MethodCopy:
				// A copy never touches the source: it needs a new claim of another name.
				if up.Target == "" || up.Target == up.ClaimName || up.CopyResume == nil && c.Migration.CopyImage == "" {
					t.Errorf("user %q copied to %q (image %q)", up.User, up.Target, c.Migration.CopyImage)
				}
			default:
				t.Errorf("user %q migrated by %q", up.User, up.Method)
			}
		case ActionCopied, ActionDeleteSource:
			// The user's home is the copy, from the source's record or, once
			// the source is gone, from the target itself: never a new empty claim.
			fromSource := up.Live != nil && up.CopyResume != nil
			orphan := up.Live == nil && up.TargetLive != nil
			// The old name created again after a finished copy: the switched copy stays the home.
			recreated := up.Live != nil && up.CopyResume == nil && up.TargetLive != nil && up.Action == ActionCopied &&
				(up.TargetLive.Annotations[migration.CopySwitchedAnnotation] != "" || up.TargetLive.Annotations[migration.CopyOfUIDAnnotation] != up.Live.UID)
			if !fromSource && !orphan && !recreated || copiedTo(r, up.Who()) != up.Target || up.Target == "" {
				t.Errorf("user %q copied: %+v", up.User, up)
			}
			if up.Action == ActionDeleteSource {
				*recreate = true // loses the old data
				if !c.AllowDataLoss || !c.Migration.DeleteSources || c.OnModeChange != OnModeChangeMigrate || !fromSource || up.TargetLive == nil {
					t.Errorf("user %q: source deleted without delete_copied_sources and allow_data_loss, or without a copy: %+v", up.User, up)
				}
			}
		case ActionKeep:
		default:
			t.Errorf("user %q: unknown action %q", up.User, up.Action)
		}
		if up.Reason == "deleted outside Terraform" && up.Server == "" {
			// Only a claim the state recorded and the cluster no longer has.
			if pr == nil || pr.Managed[up.User] == "" || slices.ContainsFunc(live.Claims, func(c claims.Claim) bool { return c.Name == pr.Managed[up.User] }) {
				t.Errorf("user %q: reported deleted outside Terraform, but its claim %q is live", up.User, pr.Managed[up.User])
			}
		}
		if up.Live != nil && up.Live.Name != up.ClaimName {
			t.Errorf("user %q: claim name %q, live claim %q", up.User, up.ClaimName, up.Live.Name)
		}
	}
}

// checkRest checks the other claims' plans and the result as a whole.
func checkRest(t *testing.T, c Config, live Live, r Result, recreate bool, legacy []string, colocation bool) {
	t.Helper()
	for _, up := range r.Extra {
		// Other per-user claims are kept (legacy) or rebound, nothing else.
		switch {
		case up.Action == ActionLegacy:
			if !slices.Contains(legacy, up.User) {
				legacy = append(legacy, up.User)
			}
			if up.Live != nil && !slices.Contains(up.Live.AccessModes, claims.RWX) {
				colocation = true
			}
		case up.Action == ActionMigrate && up.Method == migration.MethodRebind && (up.Resume != nil || c.OnModeChange == OnModeChangeMigrate && !live.Mounted[up.Ref()]):
		default:
			t.Errorf("extra claim %s of %q: %s by %q", up.ClaimName, up.User, up.Action, up.Method)
		}
	}
	slices.Sort(legacy)
	legacy = slices.Compact(legacy)
	// Destructive exactly when a plan that can be applied recreates a claim.
	if (r.Class == ClassDestructive) != (recreate && len(r.Errors) == 0) {
		t.Errorf("class %q, recreate %v, %d errors", r.Class, recreate, len(r.Errors))
	}
	if r.Class == ClassDestructive && !c.AllowDataLoss {
		t.Errorf("destructive without allow_data_loss")
	}
	if len(r.Errors) > 0 && r.Class != ClassNone {
		t.Errorf("class %q with errors", r.Class)
	}
	if c.OnModeChange == OnModeChangeKeepExisting && recreate {
		t.Errorf("keep_existing recreates")
	}
	if !slices.Equal(r.LegacyUsers, legacy) {
		t.Errorf("legacy users %v, users with the legacy action %v", r.LegacyUsers, legacy)
	}
	if r.ColocationRequired != colocation {
		t.Errorf("colocation required %v, want %v", r.ColocationRequired, colocation)
	}
	for _, fs := range [][]claims.Finding{r.Errors, r.Warnings} {
		for _, f := range fs {
			if !knownAttributes[f.Attribute] {
				t.Errorf("finding %q names unknown attribute %q", f.Summary, f.Attribute)
			}
		}
	}
}

// checkDestroyInvariants holds for every Destroy result.
func checkDestroyInvariants(t *testing.T, c Config, r Result) {
	t.Helper()
	deleted := false
	for _, up := range r.Users {
		switch up.Action {
		case ActionRecreate:
			deleted = true
			if !c.AllowDataLoss || c.DeletionPolicy != DeletionDelete {
				t.Errorf("user %q deleted with allow_data_loss %v, deletion_policy %q", up.User, c.AllowDataLoss, c.DeletionPolicy)
			}
		case ActionRelease:
		default:
			t.Errorf("destroy: user %q: action %q", up.User, up.Action)
		}
	}
	if (r.Class == ClassDestructive) != (deleted && len(r.Errors) == 0) {
		t.Errorf("destroy: class %q, deleted %v, %d errors", r.Class, deleted, len(r.Errors))
	}
	if r.Class == ClassSafe {
		t.Errorf("destroy is never merely safe")
	}
	for _, fs := range [][]claims.Finding{r.Errors, r.Warnings} {
		for _, f := range fs {
			if !knownAttributes[f.Attribute] {
				t.Errorf("destroy finding %q names unknown attribute %q", f.Summary, f.Attribute)
			}
		}
	}
}

func deepCopyConfig(c Config) Config {
	c.Users = slices.Clone(c.Users)
	return c
}

func deepCopyLive(l Live) Live {
	out := Live{Class: l.Class, Volumes: l.Volumes, InProgress: l.InProgress}
	for _, c := range l.Claims {
		c.AccessModes = slices.Clone(c.AccessModes)
		out.Claims = append(out.Claims, c)
	}
	if l.Mounted != nil {
		out.Mounted = map[claims.Ref]bool{}
		for k, v := range l.Mounted {
			out.Mounted[k] = v
		}
	}
	return out
}

func volumes(t testing.TB, driver string, us ...string) map[string]Volume {
	out := map[string]Volume{}
	for _, u := range us {
		out["pv-"+home(t, u)] = Volume{CSIDriver: driver}
	}
	return out
}

func migrate(method migration.Method, batch int, skipRunning bool) cfgOpt {
	return func(c *Config) {
		c.OnModeChange = OnModeChangeMigrate
		c.Migration = Migration{Method: method, BatchSize: batch, SkipRunning: skipRunning}
	}
}

func copyTo(image, target string) cfgOpt {
	return func(c *Config) { c.Migration.CopyImage, c.Migration.TargetTemplate = image, target }
}

// ebsRWO is a bound ReadWriteOnce gp3 home on an EBS volume.
func ebsRWO(t testing.TB, user string, opts ...claimOpt) claims.Claim {
	c := pvc(t, user, opts...)
	c.VolumeName = "pv-" + c.Name
	return c
}

func withCopyRecord(step migration.Step, target string) claimOpt {
	return func(c *claims.Claim) {
		c.Annotations = map[string]string{migration.CopyAnnotation: migration.CopyRecord{Step: step, User: c.Username, Target: target, To: claims.RWX, Files: 3, Bytes: 42}.Encode()}
	}
}

func copyTarget(t testing.TB, user, name string) claims.Claim {
	return claims.Claim{Name: name, Username: user, AccessModes: []string{claims.RWX}, StorageClass: "efs", Phase: "Bound",
		Annotations: map[string]string{migration.CopyOfAnnotation: home(t, user)}}
}

// workspace is user's RWO Longhorn workspace claim "nebi-workspaces-<user>".
func workspace(t testing.TB, user string) claims.Claim {
	n := name(t, "nebi-workspaces-{username}", user, kubespawner.SchemeSafe)
	return claims.Claim{Name: n, Username: user, AccessModes: []string{claims.RWO}, StorageClass: "longhorn", Phase: "Bound", VolumeName: "pv-" + n}
}

func inNS(ns string) claimOpt        { return func(c *claims.Claim) { c.Namespace = ns } }
func userNamespaces(t string) cfgOpt { return func(c *Config) { c.UserNamespaceTemplate = t } }

func uid(u string) claimOpt { return func(c *claims.Claim) { c.UID = u } }

func deleteSources(c *Config) { c.Migration.DeleteSources = true }

// copiedTo is the claim that is the home of key (a user's default server,
// or "user/server") after a copy (what the hub's spawn-time lookup
// mounts), "" when not copied.
func copiedTo(r Result, key string) string {
	for k, up := range r.Keyed() {
		if k == key && (up.Action == ActionCopied || up.Action == ActionDeleteSource) {
			return up.Target
		}
	}
	return ""
}
