package safety

import (
	"flag"
	"fmt"
	"math/rand/v2"
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
func phase(s string) claimOpt    { return func(c *claims.Claim) { c.Phase = s } }
func named(s string) claimOpt    { return func(c *claims.Claim) { c.Name = s } }
func deleting() claimOpt         { return func(c *claims.Claim) { c.Deleting = true } }
func server(s string) claimOpt   { return func(c *claims.Claim) { c.Servername = s } }
func size(gib int64) claimOpt {
	return func(c *claims.Claim) {
		c.Requested = fmt.Sprintf("%dGi", gib)
		c.RequestedBytes = gib * gi
	}
}

// pvc is a bound 10Gi ReadWriteOnce gp3 home claim of user, named by the default template.
func pvc(t testing.TB, user string, opts ...claimOpt) claims.Claim {
	c := claims.Claim{
		Name:           home(t, user),
		Username:       user,
		AccessModes:    []string{RWO},
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
		AccessMode:    RWO,
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

func sc(provisioner string) *StorageClass {
	return &StorageClass{Name: "shared", Provisioner: provisioner, Exists: true}
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

func TestPlanFirstApply(t *testing.T) {
	runPlanCases(t, []planCase{
		{
			name:       "empty namespace, no users",
			cfg:        cfg(nil),
			live:       Live{Class: gp3(true)},
			class:      ClassNone,
			colocation: true,
		},
		{
			name:       "empty namespace, no users, class not read",
			cfg:        cfg(nil, mode(RWX), sclass("")),
			class:      ClassNone,
			colocation: false,
		},
		{
			name:       "empty namespace with users: one create each",
			cfg:        cfg([]string{"alice", "Alice", "dave.smith"}),
			live:       Live{Class: gp3(true)},
			class:      ClassSafe,
			actions:    map[string]Action{"alice": ActionCreate, "Alice": ActionCreate, "dave.smith": ActionCreate},
			claimNames: map[string]string{"alice": "claim-alice", "Alice": home(t, "Alice"), "dave.smith": home(t, "dave.smith")},
			colocation: true,
		},
		{
			name:       "escape scheme names new claims the legacy way",
			cfg:        cfg([]string{"Alice"}, scheme(kubespawner.SchemeEscape)),
			class:      ClassSafe,
			actions:    map[string]Action{"Alice": ActionCreate},
			claimNames: map[string]string{"Alice": name(t, tmpl, "Alice", kubespawner.SchemeEscape)},
			colocation: true,
		},
		{
			name:       "existing matching claims are adopted",
			cfg:        cfg([]string{"alice", "bob"}),
			live:       Live{Claims: pvcs(t, []string{"alice", "bob"}), Class: gp3(true)},
			class:      ClassSafe,
			actions:    map[string]Action{"alice": ActionKeep, "bob": ActionKeep},
			colocation: true,
		},
		{
			name:       "KubeSpawner claims of unlisted users that match are observed",
			cfg:        cfg([]string{"alice"}),
			live:       Live{Claims: pvcs(t, []string{"alice", "bob", "Carol"}), Class: gp3(true)},
			class:      ClassSafe, // alice is adopted
			actions:    map[string]Action{"alice": ActionKeep, "bob": ActionObserve, "Carol": ActionObserve},
			colocation: true,
			checkResult: func(t *testing.T, r Result) {
				for _, up := range r.Users {
					if up.User != "alice" && (up.Managed || up.Live == nil) {
						t.Errorf("observed user %q: managed %v, live %v", up.User, up.Managed, up.Live)
					}
				}
			},
		},
		{
			name:       "only observed claims: nothing changes",
			cfg:        cfg(nil),
			live:       Live{Claims: pvcs(t, []string{"bob", "Carol"}), Class: gp3(true)},
			class:      ClassNone,
			actions:    map[string]Action{"bob": ActionObserve, "Carol": ActionObserve},
			colocation: true,
		},
		{
			name:       "named-server claims are not homes and not strays",
			cfg:        cfg([]string{"alice"}),
			live:       Live{Claims: []claims.Claim{pvc(t, "alice"), pvc(t, "alice", named("claim-alice--lab"), server("lab"))}},
			class:      ClassSafe,
			actions:    map[string]Action{"alice": ActionKeep},
			colocation: true,
		},
		{
			name:       "claims without a username are ignored",
			cfg:        cfg(nil),
			live:       Live{Claims: []claims.Claim{pvc(t, "x", named("scratch"), func(c *claims.Claim) { c.Username = "" })}},
			class:      ClassNone,
			colocation: true,
		},
	})
}

func TestPlanUnchanged(t *testing.T) {
	c := cfg([]string{"alice", "bob"})
	runPlanCases(t, []planCase{
		{
			name:       "same config, same claims",
			cfg:        c,
			prior:      prior(t, c),
			live:       Live{Claims: pvcs(t, []string{"alice", "bob"}), Class: gp3(true)},
			class:      ClassNone,
			actions:    map[string]Action{"alice": ActionKeep, "bob": ActionKeep},
			colocation: true,
		},
		{
			name:       "capacity 0 means any size",
			cfg:        cfg([]string{"alice"}, func(c *Config) { c.CapacityBytes, c.Capacity = 0, "" }),
			prior:      prior(t, cfg([]string{"alice"}, func(c *Config) { c.CapacityBytes, c.Capacity = 0, "" })),
			live:       Live{Claims: pvcs(t, []string{"alice"}, size(50))},
			class:      ClassNone,
			actions:    map[string]Action{"alice": ActionKeep},
			colocation: true,
		},
		{
			name:       "changing only on_mode_change is a safe state change",
			cfg:        cfg([]string{"alice"}, onChange(OnModeChangeKeepExisting)),
			prior:      prior(t, cfg([]string{"alice"})),
			live:       Live{Claims: pvcs(t, []string{"alice"})},
			class:      ClassSafe,
			actions:    map[string]Action{"alice": ActionKeep},
			colocation: true,
		},
	})
}

func TestPlanModeChange(t *testing.T) {
	ab := []string{"alice", "bob"}
	rwo := Live{Claims: pvcs(t, ab), Class: sc("efs.csi.aws.com")}
	efs := func(opts ...cfgOpt) Config {
		return cfg(ab, append([]cfgOpt{mode(RWX), sclass("efs")}, opts...)...)
	}
	failErr := want{attr: "access_mode", has: []string{
		"2 existing home claim(s)", "namespace jhub", `access_mode = "ReadWriteMany"`, `storage class "efs"`,
		"alice: claim-alice (ReadWriteOnce, class \"gp3\", Bound)", "bob: claim-bob (ReadWriteOnce, class \"gp3\", Bound)",
		`"keep_existing"`, `"recreate" with allow_data_loss = true`, "on_mode_change",
	}}
	runPlanCases(t, []planCase{
		{
			name:       "fail is the default",
			cfg:        efs(),
			prior:      prior(t, cfg(ab)),
			live:       rwo,
			class:      ClassNone,
			actions:    map[string]Action{"alice": ActionLegacy, "bob": ActionLegacy},
			legacy:     ab,
			colocation: true,
			errors:     []want{failErr},
		},
		{
			name:       "fail explicitly",
			cfg:        efs(onChange(OnModeChangeFail)),
			prior:      prior(t, cfg(ab)),
			live:       rwo,
			class:      ClassNone,
			actions:    map[string]Action{"alice": ActionLegacy, "bob": ActionLegacy},
			legacy:     ab,
			colocation: true,
			errors:     []want{failErr},
		},
		{
			name:    "fail on a storage class change alone",
			cfg:     cfg(ab, sclass("gp3-encrypted")),
			live:    Live{Claims: pvcs(t, ab)},
			class:   ClassNone,
			actions: map[string]Action{"alice": ActionLegacy, "bob": ActionLegacy},
			legacy:  ab, colocation: true,
			errors: []want{{attr: "access_mode", has: []string{`storage class "gp3-encrypted"`, "alice: claim-alice", "bob: claim-bob", `class "gp3"`}}},
		},
		{
			name:    "fail also covers KubeSpawner claims of unlisted users",
			cfg:     cfg([]string{"alice"}, mode(RWX), sclass("efs")),
			live:    rwo,
			class:   ClassNone,
			actions: map[string]Action{"alice": ActionLegacy, "bob": ActionLegacy},
			legacy:  ab, colocation: true,
			errors: []want{{attr: "access_mode", has: []string{"alice: claim-alice", "bob: claim-bob"}}},
		},
		{
			name:       "storage_class_name unset compares the mode only",
			cfg:        cfg(ab, sclass("")),
			prior:      prior(t, cfg(ab, sclass(""))),
			live:       Live{Claims: pvcs(t, ab, class("whatever"))},
			class:      ClassNone,
			actions:    map[string]Action{"alice": ActionKeep, "bob": ActionKeep},
			colocation: true,
		},
		{
			name:       "keep_existing: legacy users stay co-located, new users get the new mode",
			cfg:        cfg([]string{"alice", "bob", "carol"}, mode(RWX), sclass("efs"), onChange(OnModeChangeKeepExisting)),
			prior:      prior(t, cfg(ab)),
			live:       rwo,
			class:      ClassSafe,
			actions:    map[string]Action{"alice": ActionLegacy, "bob": ActionLegacy, "carol": ActionCreate},
			legacy:     ab,
			colocation: true,
		},
		{
			name:       "keep_existing with nothing to create is still safe",
			cfg:        efs(onChange(OnModeChangeKeepExisting)),
			prior:      prior(t, cfg(ab)),
			live:       rwo,
			class:      ClassSafe,
			actions:    map[string]Action{"alice": ActionLegacy, "bob": ActionLegacy},
			legacy:     ab,
			colocation: true,
		},
		{
			name:       "keep_existing: ReadWriteMany legacy claims need no co-location",
			cfg:        efs(onChange(OnModeChangeKeepExisting)),
			prior:      prior(t, cfg(ab, mode(RWX), sclass("nfs"))),
			live:       Live{Claims: pvcs(t, ab, modes(RWX), class("nfs")), Class: sc("efs.csi.aws.com")},
			class:      ClassSafe,
			actions:    map[string]Action{"alice": ActionLegacy, "bob": ActionLegacy},
			legacy:     ab,
			colocation: false,
		},
		{
			name:       "keep_existing: one ReadWriteOnce legacy claim is enough for co-location",
			cfg:        efs(onChange(OnModeChangeKeepExisting)),
			live:       Live{Claims: []claims.Claim{pvc(t, "alice", modes(RWX), class("nfs")), pvc(t, "bob")}},
			class:      ClassSafe,
			actions:    map[string]Action{"alice": ActionLegacy, "bob": ActionLegacy},
			legacy:     ab,
			colocation: true,
		},
		{
			name:       "keep_existing: ReadWriteOnce config needs co-location without legacy claims",
			cfg:        cfg(ab, onChange(OnModeChangeKeepExisting)),
			live:       Live{Claims: pvcs(t, ab)},
			class:      ClassSafe,
			actions:    map[string]Action{"alice": ActionKeep, "bob": ActionKeep},
			colocation: true,
		},
		{
			name:    "recreate without allow_data_loss is refused",
			cfg:     efs(onChange(OnModeChangeRecreate)),
			prior:   prior(t, cfg(ab)),
			live:    rwo,
			class:   ClassNone,
			actions: map[string]Action{"alice": ActionLegacy, "bob": ActionLegacy},
			legacy:  ab, colocation: true,
			errors: []want{{attr: "allow_data_loss", has: []string{
				"recreate 2 home claim(s)", "alice: claim-alice (ReadWriteOnce", "bob: claim-bob (ReadWriteOnce",
				"allow_data_loss = true", `"keep_existing"`,
			}}},
		},
		{
			name:    "recreate with allow_data_loss is destructive",
			cfg:     efs(onChange(OnModeChangeRecreate), dataLoss()),
			prior:   prior(t, cfg(ab)),
			live:    rwo,
			class:   ClassDestructive,
			actions: map[string]Action{"alice": ActionRecreate, "bob": ActionRecreate},
			// Named in a warning, also when the plan's values read as the last apply's.
			warnings: []want{{attr: "allow_data_loss", has: []string{"deletes and recreates 2 home claim(s)", "alice: claim-alice", "bob: claim-bob"}}},
		},
		{
			name:     "recreate touches only mismatched claims",
			cfg:      cfg([]string{"alice", "bob", "carol"}, mode(RWX), sclass("efs"), onChange(OnModeChangeRecreate), dataLoss()),
			live:     Live{Claims: []claims.Claim{pvc(t, "alice"), pvc(t, "bob", modes(RWX), class("efs"))}, Class: sc("efs.csi.aws.com")},
			class:    ClassDestructive,
			actions:  map[string]Action{"alice": ActionRecreate, "bob": ActionKeep, "carol": ActionCreate},
			warnings: []want{{attr: "allow_data_loss", has: []string{"alice: claim-alice"}, hasNot: []string{"bob", "carol"}}},
		},
		{
			name:    "recreate under a running server is refused",
			cfg:     efs(onChange(OnModeChangeRecreate), dataLoss()),
			live:    Live{Claims: rwo.Claims, Mounted: map[claims.Ref]bool{at("claim-bob"): true}},
			class:   ClassNone,
			actions: map[string]Action{"alice": ActionRecreate, "bob": ActionRecreate},
			errors:  []want{{attr: "on_mode_change", has: []string{"bob: claim-bob", "Stop these users' servers"}, hasNot: []string{"alice"}}},
		},
		{
			name:    "recreate without allow_data_loss under a running server reports both",
			cfg:     efs(onChange(OnModeChangeRecreate)),
			live:    Live{Claims: rwo.Claims, Mounted: map[claims.Ref]bool{at("claim-alice"): true}},
			class:   ClassNone,
			actions: map[string]Action{"alice": ActionLegacy, "bob": ActionLegacy},
			legacy:  ab, colocation: true,
			errors: []want{
				{attr: "allow_data_loss", has: []string{"alice: claim-alice", "bob: claim-bob"}},
				{attr: "on_mode_change", has: []string{"alice: claim-alice"}, hasNot: []string{"bob"}},
			},
		},
		{
			name:    "recreate may not touch unlisted users",
			cfg:     cfg([]string{"alice"}, mode(RWX), sclass("efs"), onChange(OnModeChangeRecreate), dataLoss()),
			live:    rwo,
			class:   ClassNone,
			actions: map[string]Action{"alice": ActionRecreate, "bob": ActionLegacy},
			legacy:  []string{"bob"}, colocation: true,
			errors: []want{{attr: "on_mode_change", has: []string{"1 claim(s)", "bob: claim-bob", "not in users"}, hasNot: []string{"alice"}}},
		},
		{
			name:    "recreate may not touch users removed from users",
			cfg:     cfg([]string{"alice"}, mode(RWX), sclass("efs"), onChange(OnModeChangeRecreate), dataLoss()),
			prior:   prior(t, cfg(ab)),
			live:    rwo,
			class:   ClassNone,
			actions: map[string]Action{"alice": ActionRecreate, "bob": ActionLegacy},
			legacy:  []string{"bob"}, colocation: true,
			errors: []want{{attr: "on_mode_change", has: []string{"bob: claim-bob"}}},
		},
		{
			name:       "a claim being deleted by someone else is left alone",
			cfg:        cfg(ab),
			prior:      prior(t, cfg(ab)),
			live:       Live{Claims: []claims.Claim{pvc(t, "alice", deleting(), modes(RWX)), pvc(t, "bob")}},
			class:      ClassNone,
			actions:    map[string]Action{"alice": ActionKeep, "bob": ActionKeep},
			colocation: true,
			warnings:   []want{{attr: "users", has: []string{"claim-alice", `"alice"`, "deletion timestamp"}}},
		},
	})
}

func TestPlanTruncatesLists(t *testing.T) {
	many := users("user", 25)
	first, rest := many[:ListLimit], many[ListLimit:]
	var listed, notListed []string
	for _, u := range first {
		listed = append(listed, u+": "+home(t, u))
	}
	for _, u := range rest {
		notListed = append(notListed, u+":")
	}
	live := Live{Claims: pvcs(t, many)}
	runPlanCases(t, []planCase{
		{
			name:    "fail lists the first 20 of 25",
			cfg:     cfg(many, mode(RWX)),
			live:    live,
			class:   ClassNone,
			actions: allAction(many, ActionLegacy),
			legacy:  many, colocation: true,
			errors: []want{{attr: "access_mode",
				has:    append([]string{"25 existing home claim(s)", "... and 5 more (25 in all)"}, listed...),
				hasNot: notListed}},
		},
		{
			name:    "recreate without allow_data_loss lists the first 20 of 25",
			cfg:     cfg(many, mode(RWX), onChange(OnModeChangeRecreate)),
			live:    live,
			class:   ClassNone,
			actions: allAction(many, ActionLegacy),
			legacy:  many, colocation: true,
			errors: []want{{attr: "allow_data_loss",
				has:    append([]string{"recreate 25 home claim(s)", "... and 5 more (25 in all)"}, listed...),
				hasNot: notListed}},
		},
		{
			name:    "mounted claims list the first 20 of 25",
			cfg:     cfg(many, mode(RWX), onChange(OnModeChangeRecreate), dataLoss()),
			live:    Live{Claims: live.Claims, Mounted: mountedAll(t, many)},
			class:   ClassNone,
			actions: allAction(many, ActionRecreate),
			errors: []want{{attr: "on_mode_change",
				has:    append([]string{"... and 5 more (25 in all)"}, listed...),
				hasNot: notListed}},
		},
		{
			name:       "template change lists the first 20 of 25 orphaned homes",
			cfg:        cfg(nil, template("home-{username}")),
			prior:      prior(t, cfg(nil)),
			live:       live,
			class:      ClassNone,
			colocation: true,
			errors: []want{{attr: "pvc_name_template",
				has:    append([]string{"25 home claim(s)", "... and 5 more"}, "user00: has claim-user00, the template gives home-user00", "user19: has claim-user19"),
				hasNot: []string{"user20", "user24"}}},
		},
	})
}

func allAction(us []string, a Action) map[string]Action {
	out := map[string]Action{}
	for _, u := range us {
		out[u] = a
	}
	return out
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

func TestPlanCapacity(t *testing.T) {
	a := []string{"alice"}
	runPlanCases(t, []planCase{
		{
			name:       "growth of a bound claim in an expandable class resizes in place",
			cfg:        cfg(a, capacity(20)),
			prior:      prior(t, cfg(a)),
			live:       Live{Claims: pvcs(t, a), Class: gp3(true)},
			class:      ClassSafe,
			actions:    map[string]Action{"alice": ActionResize},
			colocation: true,
			checkResult: func(t *testing.T, r Result) {
				if got := r.Users[0].Reason; !strings.Contains(got, "10Gi") || !strings.Contains(got, "20Gi") {
					t.Errorf("reason %q does not say from and to", got)
				}
			},
		},
		{
			name:       "growth when the class is not read resizes",
			cfg:        cfg(a, capacity(20)),
			prior:      prior(t, cfg(a)),
			live:       Live{Claims: pvcs(t, a)},
			class:      ClassSafe,
			actions:    map[string]Action{"alice": ActionResize},
			colocation: true,
		},
		{
			name:       "growth when the class does not allow expansion",
			cfg:        cfg(a, capacity(20)),
			prior:      prior(t, cfg(a)),
			live:       Live{Claims: pvcs(t, a), Class: gp3(false)},
			class:      ClassNone,
			actions:    map[string]Action{"alice": ActionKeep},
			colocation: true,
			errors: []want{{attr: "capacity", has: []string{
				"claim-alice", `"alice"`, "from 10Gi to 20Gi", "refused by the API", `StorageClass "gp3"`, "allow_volume_expansion",
			}}},
		},
		{
			name:       "growth of a pending claim",
			cfg:        cfg(a, capacity(20)),
			prior:      prior(t, cfg(a)),
			live:       Live{Claims: pvcs(t, a, phase("Pending")), Class: gp3(true)},
			class:      ClassNone,
			actions:    map[string]Action{"alice": ActionKeep},
			colocation: true,
			errors:     []want{{attr: "capacity", has: []string{"claim-alice", `"alice"`, "Pending", "API refuses", "not bound"}}},
		},
		{
			name:       "growth of a claim without a phase",
			cfg:        cfg(a, capacity(20)),
			live:       Live{Claims: pvcs(t, a, phase(""))},
			class:      ClassNone,
			actions:    map[string]Action{"alice": ActionKeep},
			colocation: true,
			errors:     []want{{attr: "capacity", has: []string{`"alice" is -;`}}},
		},
		{
			name:       "shrinking is an error",
			cfg:        cfg(a, capacity(5)),
			prior:      prior(t, cfg(a)),
			live:       Live{Claims: pvcs(t, a), Class: gp3(true)},
			class:      ClassNone,
			actions:    map[string]Action{"alice": ActionKeep},
			colocation: true,
			errors:     []want{{attr: "capacity", has: []string{"claim-alice", `"alice"`, "requests 10Gi", `capacity = "5Gi"`, "shrink"}}},
		},
		{
			name:       "unlisted users are never resized",
			cfg:        cfg(nil, capacity(20)),
			live:       Live{Claims: pvcs(t, a), Class: gp3(false)},
			class:      ClassNone,
			actions:    map[string]Action{"alice": ActionObserve},
			colocation: true,
		},
		{
			name:       "legacy claims are never resized",
			cfg:        cfg(a, capacity(20), mode(RWX), sclass("efs"), onChange(OnModeChangeKeepExisting)),
			prior:      prior(t, cfg(a)),
			live:       Live{Claims: pvcs(t, a, phase("Pending")), Class: sc("efs.csi.aws.com")},
			class:      ClassSafe,
			actions:    map[string]Action{"alice": ActionLegacy},
			legacy:     a,
			colocation: true,
		},
	})
}

func TestPlanTemplateChange(t *testing.T) {
	ab := []string{"alice", "Bob"}
	old := cfg(ab)
	live := Live{Claims: pvcs(t, ab)}
	newTmpl := "home-{username}"
	orphans := []string{
		"alice: has claim-alice, the template gives home-alice",
		fmt.Sprintf("Bob: has %s, the template gives %s", home(t, "Bob"), name(t, newTmpl, "Bob", kubespawner.SchemeSafe)),
		"remember_pvc_name", `previous template ("claim-{username}", safe)`, `new one ("home-{username}", safe)`, "namespace jhub",
	}
	escName := name(t, tmpl, "Bob", kubespawner.SchemeEscape)
	runPlanCases(t, []planCase{
		{
			name:       "template change orphans existing homes",
			cfg:        cfg(ab, template(newTmpl)),
			prior:      prior(t, old),
			live:       live,
			class:      ClassNone,
			actions:    map[string]Action{"alice": ActionCreate, "Bob": ActionCreate},
			claimNames: map[string]string{"alice": "home-alice"},
			colocation: true,
			errors: []want{{attr: "pvc_name_template", has: append(orphans, `"keep_existing"`),
				hasNot: []string{"deleted outside"}}},
		},
		{
			name:       "template change with keep_existing is a warning",
			cfg:        cfg(ab, template(newTmpl), onChange(OnModeChangeKeepExisting)),
			prior:      prior(t, old),
			live:       live,
			class:      ClassSafe,
			actions:    map[string]Action{"alice": ActionCreate, "Bob": ActionCreate},
			colocation: true,
			// The old claims still exist: no "deleted outside Terraform" warning.
			warnings: []want{{attr: "pvc_name_template", has: orphans}},
		},
		{
			name:       "slug scheme change orphans homes whose names differ",
			cfg:        cfg(ab, scheme(kubespawner.SchemeEscape)),
			prior:      prior(t, old),
			live:       live,
			class:      ClassNone,
			actions:    map[string]Action{"alice": ActionKeep, "Bob": ActionCreate},
			claimNames: map[string]string{"Bob": escName},
			colocation: true,
			errors: []want{{attr: "pvc_name_template", has: []string{
				fmt.Sprintf("Bob: has %s, the template gives %s (matches slug_scheme = \"safe\")", home(t, "Bob"), escName),
				"remember_pvc_name",
			}, hasNot: []string{"alice"}}},
		},
		{
			name:       "homes named otherwise on the first plan",
			cfg:        cfg(nil, template(newTmpl)),
			live:       live,
			class:      ClassNone,
			colocation: true,
			errors: []want{{attr: "pvc_name_template", has: []string{
				"do not have the names that pvc_name_template and slug_scheme give", "alice: has claim-alice", "remember_pvc_name",
			}}},
		},
	})
}

func TestPlanStorageClass(t *testing.T) {
	a := []string{"alice"}
	rwx := func(p string) planCase {
		return planCase{
			name:       p,
			cfg:        cfg(a, mode(RWX), sclass("shared")),
			live:       Live{Class: sc(p)},
			class:      ClassSafe,
			actions:    map[string]Action{"alice": ActionCreate},
			colocation: false,
		}
	}
	var cases []planCase
	for _, p := range []string{"ebs.csi.aws.com", "pd.csi.storage.gke.io", "rancher.io/local-path", "disk.csi.azure.com", "rook-ceph.rbd.csi.ceph.com"} {
		c := rwx(p)
		c.name = "ReadWriteMany on block provisioner " + p
		c.class = ClassNone
		c.errors = []want{{attr: "access_mode", has: []string{p, `StorageClass "shared"`, "never bind", "ReadWriteOnce"}}}
		cases = append(cases, c)
	}
	for _, p := range []string{"efs.csi.aws.com", "driver.longhorn.io", "rook-ceph.cephfs.csi.ceph.com", "nfs.csi.k8s.io"} {
		c := rwx(p)
		c.name = "ReadWriteMany on shared provisioner " + p
		cases = append(cases, c)
	}
	unknown := rwx("example.com/fancy")
	unknown.name = "ReadWriteMany on an unknown provisioner"
	unknown.warnings = []want{{attr: "access_mode", has: []string{"example.com/fancy", `StorageClass "shared"`, "does not know"}}}
	cases = append(cases, unknown)
	cases = append(cases,
		planCase{
			name:       "ReadWriteOnce on a block provisioner is fine",
			cfg:        cfg(a),
			live:       Live{Class: gp3(true)},
			class:      ClassSafe,
			actions:    map[string]Action{"alice": ActionCreate},
			colocation: true,
		},
		planCase{
			name:    "ReadWriteMany with an unnamed provisioner",
			cfg:     cfg(a, mode(RWX), sclass("shared")),
			live:    Live{Class: sc("")},
			class:   ClassSafe,
			actions: map[string]Action{"alice": ActionCreate},
		},
		planCase{
			name:       "ReadWriteOncePod allows one server per user",
			cfg:        cfg(a, mode(RWOP)),
			live:       Live{Class: gp3(true)},
			class:      ClassSafe,
			actions:    map[string]Action{"alice": ActionCreate},
			colocation: true,
			warnings:   []want{{attr: "access_mode", has: []string{"ReadWriteOncePod", "one server per user", "only one pod"}}},
		},
		planCase{
			name:     "missing class",
			cfg:      cfg(a, mode(RWX), sclass("shared")),
			live:     Live{Class: &StorageClass{Name: "shared", Provisioner: "ebs.csi.aws.com"}},
			class:    ClassSafe,
			actions:  map[string]Action{"alice": ActionCreate},
			warnings: []want{{attr: "storage_class_name", has: []string{`StorageClass "shared"`, "Pending"}}},
		},
		planCase{
			name:    "class created by this resource is checked",
			cfg:     cfg(a, mode(RWX), sclass("shared")),
			live:    Live{Class: &StorageClass{Name: "shared", Provisioner: "ebs.csi.aws.com", Created: true}},
			class:   ClassNone,
			actions: map[string]Action{"alice": ActionCreate},
			errors:  []want{{attr: "access_mode", has: []string{"ebs.csi.aws.com"}}},
		},
	)
	runPlanCases(t, cases)
}

func TestPlanUsersChange(t *testing.T) {
	abc := []string{"alice", "bob", "carol"}
	c := cfg(abc)
	runPlanCases(t, []planCase{
		{
			name:       "a user removed from users is released, never deleted",
			cfg:        cfg([]string{"alice", "carol"}),
			prior:      prior(t, c),
			live:       Live{Claims: pvcs(t, abc), Class: gp3(true)},
			class:      ClassSafe,
			actions:    map[string]Action{"alice": ActionKeep, "bob": ActionRelease, "carol": ActionKeep},
			colocation: true,
			checkResult: func(t *testing.T, r Result) {
				for _, up := range r.Users {
					if up.User == "bob" && (up.Managed || up.Live == nil || up.ClaimName != "claim-bob") {
						t.Errorf("released bob: %+v", up)
					}
				}
			},
		},
		{
			name:       "a user removed even with allow_data_loss and recreate is released",
			cfg:        cfg([]string{"alice"}, onChange(OnModeChangeRecreate), dataLoss(), policy(DeletionDelete)),
			prior:      prior(t, c),
			live:       Live{Claims: pvcs(t, abc)},
			class:      ClassSafe,
			actions:    map[string]Action{"alice": ActionKeep, "bob": ActionRelease, "carol": ActionRelease},
			colocation: true,
		},
		{
			name:       "a removed user whose claim is gone drops out",
			cfg:        cfg([]string{"alice", "carol"}),
			prior:      prior(t, c),
			live:       Live{Claims: pvcs(t, []string{"alice", "carol"})},
			class:      ClassNone,
			actions:    map[string]Action{"alice": ActionKeep, "carol": ActionKeep},
			colocation: true,
		},
		{
			name:       "a managed claim deleted out of band is created again, with a warning",
			cfg:        c,
			prior:      prior(t, c),
			live:       Live{Claims: pvcs(t, []string{"alice", "carol"}), Class: gp3(true)},
			class:      ClassSafe,
			actions:    map[string]Action{"alice": ActionKeep, "bob": ActionCreate, "carol": ActionKeep},
			colocation: true,
			warnings:   []want{{attr: "users", has: []string{"claim-bob", `"bob"`, "no longer exists", "gone", "empty"}}},
			checkResult: func(t *testing.T, r Result) {
				if r.Users[1].Reason != "deleted outside Terraform" {
					t.Errorf("bob's reason %q", r.Users[1].Reason)
				}
			},
		},
		{
			name:       "a user added later is created",
			cfg:        cfg([]string{"alice", "bob", "carol", "dave"}),
			prior:      prior(t, c),
			live:       Live{Claims: pvcs(t, abc)},
			class:      ClassSafe,
			actions:    map[string]Action{"alice": ActionKeep, "bob": ActionKeep, "carol": ActionKeep, "dave": ActionCreate},
			colocation: true,
		},
		{
			name:       "a listed KubeSpawner claim is adopted",
			cfg:        cfg([]string{"alice", "bob", "carol", "dave"}),
			prior:      prior(t, c),
			live:       Live{Claims: pvcs(t, []string{"alice", "bob", "carol", "dave"})},
			class:      ClassSafe,
			actions:    map[string]Action{"alice": ActionKeep, "bob": ActionKeep, "carol": ActionKeep, "dave": ActionKeep},
			colocation: true,
		},
		{
			name:       "a username that is not UTF-8",
			cfg:        cfg([]string{"alice", "\xff"}),
			live:       Live{Claims: pvcs(t, []string{"alice"})},
			class:      ClassNone,
			actions:    map[string]Action{"alice": ActionKeep},
			colocation: true,
			errors:     []want{{attr: "users", has: []string{`"\xff"`, "UTF-8"}}},
		},
	})
}

// The result never refers to the caller's slices in a way that lets Plan
// change them, and the caller's inputs are left as they were.
func TestPlanDoesNotModifyInputs(t *testing.T) {
	us := []string{"carol", "alice", "bob"}
	c := cfg(us, mode(RWX), onChange(OnModeChangeKeepExisting))
	live := Live{Claims: pvcs(t, []string{"bob", "alice"}), Mounted: map[claims.Ref]bool{at("claim-bob"): true}}
	c0, live0 := deepCopyConfig(c), deepCopyLive(live)
	Plan(c, nil, live)
	if !reflect.DeepEqual(c, c0) || !reflect.DeepEqual(live, live0) {
		t.Errorf("Plan modified its inputs")
	}
}

type destroyCase struct {
	name     string
	cfg      Config
	prior    Prior
	live     Live
	class    Class
	actions  map[string]Action
	errors   []want
	warnings []want
}

func TestDestroy(t *testing.T) {
	ab := []string{"alice", "bob"}
	pr := *prior(t, cfg(ab))
	live := Live{Claims: pvcs(t, ab)}
	for _, tc := range []destroyCase{
		{
			name:     "retain keeps every claim",
			cfg:      cfg(ab, policy(DeletionRetain)),
			prior:    pr,
			live:     live,
			class:    ClassNone,
			actions:  map[string]Action{"alice": ActionRelease, "bob": ActionRelease},
			warnings: []want{{attr: "deletion_policy", has: []string{`deletion_policy = "retain"`, "2 managed home claim(s)", "namespace jhub", "left in place"}}},
		},
		{
			name:     "retain is the default",
			cfg:      cfg(ab),
			prior:    pr,
			live:     live,
			class:    ClassNone,
			actions:  map[string]Action{"alice": ActionRelease, "bob": ActionRelease},
			warnings: []want{{attr: "deletion_policy", has: []string{`deletion_policy = "retain"`, "left in place"}}},
		},
		{
			name:     "retain with allow_data_loss still keeps every claim",
			cfg:      cfg(ab, policy(DeletionRetain), dataLoss()),
			prior:    pr,
			live:     live,
			class:    ClassNone,
			actions:  map[string]Action{"alice": ActionRelease, "bob": ActionRelease},
			warnings: []want{{attr: "deletion_policy", has: []string{"left in place"}}},
		},
		{
			name:     "delete without allow_data_loss keeps every claim",
			cfg:      cfg(ab, policy(DeletionDelete)),
			prior:    pr,
			live:     live,
			class:    ClassNone,
			actions:  map[string]Action{"alice": ActionRelease, "bob": ActionRelease},
			warnings: []want{{attr: "deletion_policy", has: []string{"left in place"}}},
		},
		{
			name:     "delete with allow_data_loss is destructive",
			cfg:      cfg(ab, policy(DeletionDelete), dataLoss()),
			prior:    pr,
			live:     live,
			class:    ClassDestructive,
			actions:  map[string]Action{"alice": ActionRecreate, "bob": ActionRecreate},
			warnings: []want{{attr: "deletion_policy", has: []string{"deletes 2 home claim(s)", "alice: claim-alice", "bob: claim-bob"}}},
		},
		{
			name:    "delete under a running server is refused",
			cfg:     cfg(ab, policy(DeletionDelete), dataLoss()),
			prior:   pr,
			live:    Live{Claims: live.Claims, Mounted: map[claims.Ref]bool{at("claim-alice"): true}},
			class:   ClassNone,
			actions: map[string]Action{"alice": ActionRecreate, "bob": ActionRecreate},
			errors:  []want{{attr: "deletion_policy", has: []string{"alice: claim-alice", "Stop these users' servers"}, hasNot: []string{"bob"}}},
		},
		{
			name:     "retain under a running server is fine",
			cfg:      cfg(ab),
			prior:    pr,
			live:     Live{Claims: live.Claims, Mounted: map[claims.Ref]bool{at("claim-alice"): true}},
			class:    ClassNone,
			actions:  map[string]Action{"alice": ActionRelease, "bob": ActionRelease},
			warnings: []want{{attr: "deletion_policy"}},
		},
		{
			name:    "only managed claims are deleted",
			cfg:     cfg(ab, policy(DeletionDelete), dataLoss()),
			prior:   Prior{Config: cfg([]string{"alice"}), Managed: map[string]string{"alice": "claim-alice"}},
			live:    live,
			class:   ClassDestructive,
			actions: map[string]Action{"alice": ActionRecreate},
			warnings: []want{{attr: "deletion_policy", has: []string{"deletes 1 home claim(s)", "alice: claim-alice"},
				hasNot: []string{"bob"}}},
		},
		{
			name:    "managed claims already gone",
			cfg:     cfg(ab, policy(DeletionDelete), dataLoss()),
			prior:   pr,
			live:    Live{},
			class:   ClassNone,
			actions: map[string]Action{},
		},
		{
			name:    "nothing managed",
			cfg:     cfg(nil),
			prior:   Prior{},
			live:    live,
			class:   ClassNone,
			actions: map[string]Action{},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := Destroy(tc.cfg, tc.prior, tc.live)
			if r.Class != tc.class {
				t.Errorf("class %q, want %q", r.Class, tc.class)
			}
			if got := actions(r); !reflect.DeepEqual(got, tc.actions) {
				t.Errorf("actions\n got %v\nwant %v", got, tc.actions)
			}
			checkFindings(t, "errors", r.Errors, tc.errors)
			checkFindings(t, "warnings", r.Warnings, tc.warnings)
			checkDestroyInvariants(t, tc.cfg, r)
		})
	}
}

func TestDestroyTruncatesLists(t *testing.T) {
	many := users("user", 25)
	pr := *prior(t, cfg(many))
	live := Live{Claims: pvcs(t, many)}
	r := Destroy(cfg(many, policy(DeletionDelete), dataLoss()), pr, live)
	checkFindings(t, "warnings", r.Warnings, []want{{attr: "deletion_policy",
		has: []string{"deletes 25 home claim(s)", "user00: claim-user00", "user19: claim-user19", "... and 5 more (25 in all)"}, hasNot: []string{"user20:"}}})
	live.Mounted = mountedAll(t, many)
	r = Destroy(cfg(many, policy(DeletionDelete), dataLoss()), pr, live)
	checkFindings(t, "errors", r.Errors, []want{{attr: "deletion_policy",
		has: []string{"user19: claim-user19", "... and 5 more (25 in all)"}, hasNot: []string{"user20:"}}})
}

// checkInvariants holds for every Plan result.
func checkInvariants(t *testing.T, c Config, pr *Prior, live Live, r Result) {
	t.Helper()
	recreate := false
	var legacy []string
	colocation := c.AccessMode != RWX
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
			if up.Live != nil && !slices.Contains(up.Live.AccessModes, RWX) {
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
			if up.Live != nil && !slices.Contains(up.Live.AccessModes, RWX) {
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

var propertySeed = flag.Uint64("safety.seed", 20240611, "seed of TestPlanProperties; each case's own seed is printed on failure")

// TestPlanProperties checks the invariants on a few thousand random
// configurations, priors and clusters. Each case is generated from its own
// seed, printed on failure; rerun one with -safety.seed=SEED -safety.cases=1.
func TestPlanProperties(t *testing.T) {
	n := *propertyCases
	if testing.Short() {
		n = 300
	}
	for i := range n {
		seed := *propertySeed + uint64(i)
		cs := genCase(t, seed)
		ok := t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			r := Plan(cs.cfg, cs.prior, cs.live)
			checkInvariants(t, cs.cfg, cs.prior, cs.live, r)

			// Deterministic, and the inputs are not modified.
			cfg0, live0 := deepCopyConfig(cs.cfg), deepCopyLive(cs.live)
			if r2 := Plan(cs.cfg, cs.prior, cs.live); !reflect.DeepEqual(r, r2) {
				t.Errorf("Plan is not deterministic:\n%+v\n%+v", r, r2)
			}
			if !reflect.DeepEqual(cs.cfg, cfg0) || !reflect.DeepEqual(cs.live, live0) {
				t.Errorf("Plan modified its inputs")
			}

			// The order of users and live claims changes nothing but the
			// order in which orphaned claims are listed.
			rng := rand.New(rand.NewPCG(seed, 1))
			shuffled := cs
			shuffled.cfg.Users = slices.Clone(cs.cfg.Users)
			shuffled.live.Claims = slices.Clone(cs.live.Claims)
			rng.Shuffle(len(shuffled.cfg.Users), reflect.Swapper(shuffled.cfg.Users))
			rng.Shuffle(len(shuffled.live.Claims), reflect.Swapper(shuffled.live.Claims))
			r3 := Plan(shuffled.cfg, shuffled.prior, shuffled.live)
			if r3.Class != r.Class || !reflect.DeepEqual(actions(r3), actions(r)) ||
				!slices.Equal(r3.LegacyUsers, r.LegacyUsers) || r3.ColocationRequired != r.ColocationRequired ||
				len(r3.Errors) != len(r.Errors) || len(r3.Warnings) != len(r.Warnings) {
				t.Errorf("Plan depends on input order")
			}

			if cs.prior != nil {
				d := Destroy(cs.cfg, *cs.prior, cs.live)
				checkDestroyInvariants(t, cs.cfg, d)
				if d2 := Destroy(cs.cfg, *cs.prior, cs.live); !reflect.DeepEqual(d, d2) {
					t.Errorf("Destroy is not deterministic")
				}
			}
			if t.Failed() {
				t.Logf("config: %+v\nprior: %+v\nlive claims:", cs.cfg, cs.prior)
				for _, c := range cs.live.Claims {
					t.Logf("  %+v", c)
				}
				t.Logf("class: %+v, mounted: %v", cs.live.Class, cs.live.Mounted)
			}
		})
		if !ok {
			t.Fatalf("failed for seed %d; rerun: go test ./internal/safety/ -run TestPlanProperties -safety.seed=%d -safety.cases=1", seed, seed)
		}
	}
}

var propertyCases = flag.Int("safety.cases", 3000, "number of random cases TestPlanProperties checks")

type genned struct {
	cfg   Config
	prior *Prior
	live  Live
}

var (
	genUsers     = []string{"alice", "Alice", "bob", "carol", "dave.smith", "jo@example.com", "Müller", "ivan_x", "x", "user-1", "0day", "a--b"}
	genTemplates = []string{tmpl, "home-{username}", "claim-{username}--{servername}", "claim-{user_server}"}
	genModes     = []string{RWO, RWX, RWOP}
	genClasses   = []string{"", "gp3", "efs"}
	genOnChange  = []OnModeChange{"", OnModeChangeFail, OnModeChangeKeepExisting, OnModeChangeRecreate, OnModeChangeMigrate}
	genDrivers   = []string{"", "driver.longhorn.io", "ebs.csi.aws.com", "nfs.csi.k8s.io", "file.csi.azure.com"}
	genPolicies  = []string{"", DeletionRetain, DeletionDelete}
	genSchemes   = []kubespawner.Scheme{kubespawner.SchemeSafe, kubespawner.SchemeEscape}
)

func pick[T any](r *rand.Rand, s []T) T { return s[r.IntN(len(s))] }

func subset(r *rand.Rand, s []string) []string {
	var out []string
	for _, v := range s {
		if r.IntN(2) == 0 {
			out = append(out, v)
		}
	}
	return out
}

func genConfig(r *rand.Rand, users []string) Config {
	c := Config{
		Namespace:      ns,
		AccessMode:     pick(r, genModes),
		StorageClass:   pick(r, genClasses),
		CapacityBytes:  int64(r.IntN(4)) * 5 * gi, // 0, 5, 10 or 15 GiB
		NameTemplate:   pick(r, genTemplates),
		Scheme:         pick(r, genSchemes),
		Users:          users,
		OnModeChange:   pick(r, genOnChange),
		AllowDataLoss:  r.IntN(2) == 0,
		DeletionPolicy: pick(r, genPolicies),
	}
	c.Capacity = fmt.Sprintf("%dGi", c.CapacityBytes/gi)
	if r.IntN(3) == 0 {
		c.ExtraVolumes = []string{"work-{username}"}
	}
	c.Migration = Migration{Method: pick(r, []migration.Method{migration.MethodAuto, migration.MethodRebind, migration.MethodCopy}),
		BatchSize: r.IntN(3), SkipRunning: r.IntN(4) > 0}
	if r.IntN(2) == 0 {
		c.Migration.CopyImage, c.Migration.TargetTemplate = "rsync:3", pick(r, []string{"home-{username}", "home-{user_server}", tmpl})
	}
	c.Migration.DeleteSources = r.IntN(2) == 0
	if r.IntN(3) == 0 {
		c.Migration.RebindDrivers = []string{"file.csi.azure.com"}
	}
	return c
}

func genCase(t testing.TB, seed uint64) genned {
	r := rand.New(rand.NewPCG(seed, 0))
	// side draws what was added to the generator later, so that the cases
	// drawn from r stay the ones they were.
	side := rand.New(rand.NewPCG(seed, 2))
	pool := genUsers
	if r.IntN(10) == 0 {
		pool = append(slices.Clone(pool), "\xff") // a name Expand refuses
	}
	var g genned
	g.cfg = genConfig(r, subset(r, pool))
	if r.IntN(3) == 0 {
		// An unchanged prior, or one that differed in a few attributes.
		pc := g.cfg
		pc.Users = subset(r, pool)
		if r.IntN(2) == 0 {
			pc = genConfig(r, pc.Users)
		}
		g.prior = &Prior{Config: pc, Managed: map[string]string{}}
		for _, u := range pc.Users {
			if n, err := kubespawner.Expand(pc.NameTemplate, u, "", pc.Scheme); err == nil {
				g.prior.Managed[u] = n
			}
		}
	}
	seen := map[string]bool{}
	g.live.Mounted = map[claims.Ref]bool{}
	for _, u := range genUsers {
		if r.IntN(3) == 0 {
			continue
		}
		tm, sch := g.cfg.NameTemplate, g.cfg.Scheme
		if r.IntN(5) == 0 {
			tm, sch = pick(r, genTemplates), pick(r, genSchemes)
		}
		n, err := kubespawner.Expand(tm, u, "", sch)
		if err != nil || seen[n] {
			continue
		}
		seen[n] = true
		c := claims.Claim{
			Name:           n,
			Username:       u,
			AccessModes:    []string{pick(r, genModes)},
			StorageClass:   pick(r, genClasses),
			RequestedBytes: int64(1+r.IntN(3)) * 5 * gi,
			Phase:          pick(r, []string{"Bound", "Bound", "Bound", "Pending", ""}),
			Deleting:       r.IntN(15) == 0,
		}
		if r.IntN(6) == 0 {
			c.AccessModes = []string{RWO, RWX}
		}
		c.Resizing = side.IntN(8) == 0
		if r.IntN(3) > 0 { // mostly as configured, so that plans get through
			c.AccessModes, c.StorageClass = []string{g.cfg.AccessMode}, g.cfg.StorageClass
		}
		c.Requested = fmt.Sprintf("%dGi", c.RequestedBytes/gi)
		if r.IntN(4) == 0 {
			g.live.Mounted[at(n)] = true
		}
		if r.IntN(8) == 0 {
			// An earlier apply copied (or is copying) this home.
			step := pick(r, []migration.Step{migration.StepTargetCreated, migration.StepCopying, migration.StepVerified, migration.StepSwitched})
			c.Annotations = map[string]string{migration.CopyAnnotation: migration.CopyRecord{Step: step, User: u, Target: "home-" + n, To: RWX}.Encode()}
			g.live.Claims = append(g.live.Claims, claims.Claim{Name: "home-" + n, Username: u, AccessModes: []string{RWX}, Phase: "Bound",
				Annotations: map[string]string{migration.CopyOfAnnotation: n}})
			if r.IntN(3) == 0 {
				continue // the source was deleted after the copy: only the target is left
			}
		}
		if r.IntN(3) == 0 {
			// A workspace claim beside the home.
			wn, _ := kubespawner.Expand("work-{username}", u, "", sch)
			w := claims.Claim{Name: wn, Username: u, AccessModes: []string{pick(r, genModes)}, StorageClass: "longhorn", Phase: "Bound", VolumeName: "pv-" + wn}
			if g.live.Volumes == nil {
				g.live.Volumes = map[string]Volume{}
			}
			g.live.Volumes[w.VolumeName] = Volume{CSIDriver: pick(r, genDrivers)}
			if r.IntN(4) == 0 {
				g.live.Mounted[at(wn)] = true
			}
			g.live.Claims = append(g.live.Claims, w)
		}
		if c.Phase == "Bound" {
			c.VolumeName = "pv-" + n
			if g.live.Volumes == nil {
				g.live.Volumes = map[string]Volume{}
			}
			g.live.Volumes[c.VolumeName] = Volume{CSIDriver: pick(r, genDrivers)}
		}
		g.live.Claims = append(g.live.Claims, c)
		genNamedServer(r, &g, u, seen)
	}
	switch r.IntN(5) {
	case 0:
	case 1:
		g.live.Class = &StorageClass{Name: "gp3", Provisioner: "ebs.csi.aws.com", AllowExpansion: r.IntN(2) == 0, Exists: true}
	case 2:
		g.live.Class = &StorageClass{Name: "efs", Provisioner: "efs.csi.aws.com", AllowExpansion: true, Exists: true}
	case 3:
		g.live.Class = &StorageClass{Name: "x", Provisioner: "example.com/x", Exists: r.IntN(2) == 0, Created: r.IntN(2) == 0}
	case 4:
		g.live.Class = &StorageClass{Name: "shared", Provisioner: "rook-ceph.cephfs.csi.ceph.com", AllowExpansion: true, Exists: true}
	}
	return g
}

// genNamedServer adds, now and then, user's named server "gpu": its own
// claim where the configured template gives it one (perhaps copied, its
// source perhaps deleted since), or a rebind of it stopped after the
// claim's deletion.
func genNamedServer(r *rand.Rand, g *genned, u string, seen map[string]bool) {
	n, err := kubespawner.Expand(g.cfg.NameTemplate, u, "gpu", g.cfg.Scheme)
	if err != nil || seen[n] || r.IntN(2) == 0 {
		return
	}
	seen[n] = true
	ann := map[string]string{kubespawner.AnnotationUsername: u, kubespawner.AnnotationServername: "gpu"}
	if r.IntN(5) == 0 {
		if g.live.InProgress == nil {
			g.live.InProgress = map[claims.Ref]InProgress{}
		}
		g.live.InProgress[at(n)] = InProgress{Volume: "pv-" + n, Record: migration.Record{Step: migration.StepReleased, User: u, Claim: n, Namespace: ns,
			From: []string{RWO}, To: g.cfg.AccessMode, Annotations: ann}}
		return
	}
	c := claims.Claim{Name: n, Username: u, Servername: "gpu", AccessModes: []string{pick(r, genModes)}, StorageClass: pick(r, genClasses),
		RequestedBytes: 5 * gi, Requested: "5Gi", Phase: "Bound", VolumeName: "pv-" + n, UID: "uid-" + n, Annotations: ann}
	if g.live.Volumes == nil {
		g.live.Volumes = map[string]Volume{}
	}
	g.live.Volumes[c.VolumeName] = Volume{CSIDriver: pick(r, genDrivers)}
	if r.IntN(4) == 0 {
		g.live.Mounted[at(n)] = true
	}
	if r.IntN(4) == 0 {
		step := pick(r, []migration.Step{migration.StepTargetCreated, migration.StepCopying, migration.StepSwitched})
		c.Annotations = map[string]string{migration.CopyAnnotation: migration.CopyRecord{Step: step, User: u, Target: "home-" + n, To: RWX}.Encode(),
			kubespawner.AnnotationServername: "gpu"}
		g.live.Claims = append(g.live.Claims, claims.Claim{Name: "home-" + n, Username: u, Servername: "gpu", AccessModes: []string{RWX}, Phase: "Bound",
			Annotations: map[string]string{migration.CopyOfAnnotation: n, kubespawner.AnnotationServername: "gpu"}})
		if r.IntN(3) == 0 {
			return // the source was deleted after the copy
		}
	}
	g.live.Claims = append(g.live.Claims, c)
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

// TestPlanPropertiesCoverage makes sure the generator reaches the
// interesting outcomes, so that the invariants are not checked on trivia.
func TestPlanPropertiesCoverage(t *testing.T) {
	seen := map[string]int{}
	for i := range 2000 {
		cs := genCase(t, *propertySeed+uint64(i))
		r := Plan(cs.cfg, cs.prior, cs.live)
		seen["class "+string(r.Class)]++
		for _, up := range r.Users {
			seen["action "+string(up.Action)]++
		}
		for _, up := range r.Extra {
			seen["extra "+string(up.Action)]++
		}
		for _, up := range r.Servers {
			seen["server "+string(up.Action)]++
		}
		if len(r.Errors) > 0 {
			seen["errors"]++
		}
	}
	for _, k := range []string{"class none", "class safe", "class destructive", "errors",
		"action keep", "action create", "action resize", "action legacy", "action recreate", "action release", "action observe", "action migrate", "action copied", "action delete-source", "extra legacy", "extra migrate",
		"server observe", "server legacy", "server migrate", "server copied", "server delete-source"} {
		if seen[k] == 0 {
			t.Errorf("the generator never produced %s: %v", k, seen)
		}
	}
}

func BenchmarkPlan5000(b *testing.B) { benchmarkPlan(b, 5000) }

// BenchmarkPlan500 is the same at a tenth of the size: the time per
// operation should be about a tenth too.
func BenchmarkPlan500(b *testing.B) { benchmarkPlan(b, 500) }

// benchmarkPlan plans n listed users against n live claims: half kept on a
// legacy mode (keep_existing), a quarter grown, a quarter as configured.
func benchmarkPlan(b *testing.B, n int) {
	us := make([]string, n)
	live := Live{Class: &StorageClass{Name: "efs", Provisioner: "efs.csi.aws.com", AllowExpansion: true, Exists: true}, Mounted: map[claims.Ref]bool{}}
	for i := range us {
		us[i] = fmt.Sprintf("user%05d", i)
		c := pvc(b, us[i], modes(RWX), class("efs"))
		switch i % 4 {
		case 0, 1:
			c.AccessModes, c.StorageClass = []string{RWO}, "gp3"
		case 2:
			c.Requested, c.RequestedBytes = "5Gi", 5*gi
		}
		if i%10 == 0 {
			live.Mounted[at(c.Name)] = true
		}
		live.Claims = append(live.Claims, c)
	}
	c := cfg(us, mode(RWX), sclass("efs"), onChange(OnModeChangeKeepExisting))
	pr := prior(b, c)
	for b.Loop() {
		r := Plan(c, pr, live)
		if len(r.Users) != n || len(r.Errors) != 0 || r.Class != ClassSafe {
			b.Fatalf("unexpected plan: %d users, %d errors, class %s", len(r.Users), len(r.Errors), r.Class)
		}
	}
}

// Only a live claim more restrictive than the configured mode matters: a
// ReadWriteMany home under ReadWriteOnce still serves co-located pods, a
// ReadWriteOncePod home under ReadWriteOnce does not.
func TestPlanModeDirection(t *testing.T) {
	ab := []string{"alice", "bob"}
	runPlanCases(t, []planCase{
		{
			name:       "rwx claims under an rwo config are fine",
			cfg:        cfg(nil, sclass("gp3")),
			live:       Live{Claims: pvcs(t, ab, modes(RWX))},
			class:      ClassNone,
			actions:    map[string]Action{"alice": ActionObserve, "bob": ActionObserve},
			colocation: true,
		},
		{
			name:       "rwx claims under an rwop config are fine",
			cfg:        cfg(nil, sclass("gp3"), mode(RWOP)),
			live:       Live{Claims: pvcs(t, ab, modes(RWX))},
			class:      ClassNone,
			actions:    map[string]Action{"alice": ActionObserve, "bob": ActionObserve},
			colocation: true,
			warnings:   []want{{attr: "access_mode", has: []string{"one server per user"}}},
		},
		{
			name:       "rwop claims under an rwo config differ",
			cfg:        cfg(nil, sclass("gp3")),
			live:       Live{Claims: pvcs(t, ab, modes(RWOP))},
			class:      ClassNone,
			actions:    map[string]Action{"alice": ActionLegacy, "bob": ActionLegacy},
			legacy:     ab,
			colocation: true,
			errors:     []want{{attr: "access_mode", has: []string{"alice: claim-alice (ReadWriteOncePod"}}},
		},
	})
}

// longhornRWO is a bound ReadWriteOnce Longhorn home of user on volume pv-<claim>.
func longhornRWO(t testing.TB, user string) claims.Claim {
	c := pvc(t, user, class("longhorn"))
	c.VolumeName = "pv-" + c.Name
	return c
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

func TestPlanMigrate(t *testing.T) {
	rwxLonghorn := []cfgOpt{mode(RWX), sclass("longhorn")}
	with := func(extra ...cfgOpt) []cfgOpt { return append(slices.Clone(rwxLonghorn), extra...) }
	runPlanCases(t, []planCase{
		{
			name: "RWO Longhorn homes rebind to RWX, safe, unlisted users too",
			cfg:  cfg([]string{"alice"}, with(migrate(migration.MethodAuto, 0, true))...),
			live: Live{Claims: []claims.Claim{longhornRWO(t, "alice"), longhornRWO(t, "bob")},
				Volumes: volumes(t, "driver.longhorn.io", "alice", "bob"), Mounted: map[claims.Ref]bool{}},
			class:   ClassSafe,
			actions: map[string]Action{"alice": ActionMigrate, "bob": ActionMigrate},
			checkResult: func(t *testing.T, r Result) {
				for _, up := range r.Users {
					if up.Method != migration.MethodRebind || up.Volume != "pv-"+up.ClaimName || !strings.Contains(up.Reason, "zero copy") {
						t.Errorf("user %s: method %q volume %q reason %q", up.User, up.Method, up.Volume, up.Reason)
					}
				}
			},
		},
		{
			name:    "a driver the provider does not know is copied, or refused when rebind is asked",
			cfg:     cfg([]string{"alice"}, mode(RWX), sclass("longhorn"), migrate(migration.MethodRebind, 0, true)),
			live:    Live{Claims: []claims.Claim{longhornRWO(t, "alice")}, Volumes: volumes(t, "file.csi.azure.com", "alice"), Mounted: map[claims.Ref]bool{}},
			class:   ClassNone,
			actions: map[string]Action{"alice": ActionLegacy},
			legacy:  []string{"alice"}, colocation: true,
			errors: []want{{attr: "migration", has: []string{"alice", "file.csi.azure.com is not known to serve", "migration.rebind_drivers"}}},
		},
		{
			name: "migration.rebind_drivers: homes on a listed driver rebind to RWX",
			cfg: cfg([]string{"alice"}, mode(RWX), sclass("longhorn"), migrate(migration.MethodRebind, 0, true),
				func(c *Config) { c.Migration.RebindDrivers = []string{"file.csi.azure.com"} }),
			live:    Live{Claims: []claims.Claim{longhornRWO(t, "alice")}, Volumes: volumes(t, "file.csi.azure.com", "alice"), Mounted: map[claims.Ref]bool{}},
			class:   ClassSafe,
			actions: map[string]Action{"alice": ActionMigrate},
			checkResult: func(t *testing.T, r Result) {
				for _, up := range r.Users {
					if up.Method != migration.MethodRebind || up.Volume != "pv-"+up.ClaimName {
						t.Errorf("user %s: method %q volume %q reason %q", up.User, up.Method, up.Volume, up.Reason)
					}
				}
			},
		},
		{
			name: "a running server is skipped and reported; the user stays legacy and co-located",
			cfg:  cfg(nil, with(migrate(migration.MethodAuto, 0, true))...),
			live: Live{Claims: []claims.Claim{longhornRWO(t, "alice"), longhornRWO(t, "bob")},
				Volumes: volumes(t, "driver.longhorn.io", "alice", "bob"), Mounted: map[claims.Ref]bool{at(home(t, "bob")): true}},
			class:      ClassSafe,
			actions:    map[string]Action{"alice": ActionMigrate, "bob": ActionLegacy},
			legacy:     []string{"bob"},
			colocation: true,
			warnings:   []want{{attr: "migration", has: []string{"bob", home(t, "bob"), "later apply"}, hasNot: []string{"alice"}}},
		},
		{
			name: "skip_running = false fails naming the running user",
			cfg:  cfg(nil, with(migrate(migration.MethodAuto, 0, false))...),
			live: Live{Claims: []claims.Claim{longhornRWO(t, "alice"), longhornRWO(t, "bob")},
				Volumes: volumes(t, "driver.longhorn.io", "alice", "bob"), Mounted: map[claims.Ref]bool{at(home(t, "bob")): true}},
			class:   ClassNone,
			actions: map[string]Action{"alice": ActionMigrate, "bob": ActionLegacy},
			legacy:  []string{"bob"}, colocation: true,
			errors: []want{{attr: "migration", has: []string{"bob", "skip_running", "Stop these servers"}}},
		},
		{
			name: "batch_size leaves the rest legacy",
			cfg:  cfg(nil, with(migrate(migration.MethodAuto, 2, true))...),
			live: Live{Claims: []claims.Claim{longhornRWO(t, "a"), longhornRWO(t, "b"), longhornRWO(t, "c")},
				Volumes: volumes(t, "driver.longhorn.io", "a", "b", "c")},
			class:   ClassSafe,
			actions: map[string]Action{"a": ActionMigrate, "b": ActionMigrate, "c": ActionLegacy},
			legacy:  []string{"c"}, colocation: true,
			checkResult: func(t *testing.T, r Result) {
				if up := r.Users[2]; !strings.Contains(up.Reason, "batch_size") {
					t.Errorf("reason %q does not say why c waits", up.Reason)
				}
			},
		},
		{
			name: "EBS homes cannot be rebound to RWX: the plan fails naming them",
			cfg:  cfg(nil, mode(RWX), sclass("gp3"), migrate(migration.MethodAuto, 0, true)),
			live: Live{Claims: []claims.Claim{func() claims.Claim { c := pvc(t, "alice"); c.VolumeName = "pv-" + c.Name; return c }()},
				Volumes: volumes(t, "ebs.csi.aws.com", "alice")},
			class:   ClassNone,
			actions: map[string]Action{"alice": ActionLegacy},
			legacy:  []string{"alice"}, colocation: true,
			errors: []want{{attr: "migration", has: []string{"alice", home(t, "alice"), "ebs.csi.aws.com", "keep_existing"}}},
		},
		{
			name:    "rebind asked across classes fails",
			cfg:     cfg(nil, mode(RWX), sclass("nfs"), migrate(migration.MethodRebind, 0, true)),
			live:    Live{Claims: []claims.Claim{longhornRWO(t, "alice")}, Volumes: volumes(t, "driver.longhorn.io", "alice")},
			class:   ClassNone,
			actions: map[string]Action{"alice": ActionLegacy},
			legacy:  []string{"alice"}, colocation: true,
			errors: []want{{attr: "migration", has: []string{"alice", "class changes"}}},
		},
		{
			// A ReadWriteOnce claim is less restrictive than ReadWriteOncePod:
			// it does not differ in a way that matters, so nothing moves.
			name: "RWO homes under RWOP are kept, not migrated",
			cfg:  cfg([]string{"alice"}, mode(RWOP), migrate(migration.MethodAuto, 0, true)),
			live: Live{Claims: []claims.Claim{func() claims.Claim { c := pvc(t, "alice"); c.VolumeName = "pv-" + c.Name; return c }()},
				Volumes: volumes(t, "ebs.csi.aws.com", "alice")},
			class:      ClassSafe, // alice is adopted into management
			actions:    map[string]Action{"alice": ActionKeep},
			colocation: true,
			warnings:   []want{{attr: "access_mode", has: []string{"one pod"}}},
		},
		{
			name: "a migration an earlier apply started resumes, even with the claim gone",
			cfg:  cfg([]string{"alice"}, with(migrate(migration.MethodAuto, 0, true))...),
			live: Live{InProgress: map[claims.Ref]InProgress{at(home(t, "alice")): {Volume: "pv-x", Record: migration.Record{
				Step: migration.StepRetained, User: "alice", Claim: home(t, "alice"), Namespace: ns, To: RWX}}}},
			class:   ClassSafe,
			actions: map[string]Action{"alice": ActionMigrate},
			checkResult: func(t *testing.T, r Result) {
				if up := r.Users[0]; up.Resume == nil || up.Volume != "pv-x" || !strings.Contains(up.Reason, "resume") {
					t.Errorf("resume not planned: %+v", up)
				}
			},
		},
		{
			name:    "nothing differs: nothing to migrate",
			cfg:     cfg(nil, with(migrate(migration.MethodAuto, 0, true))...),
			live:    Live{Claims: []claims.Claim{pvc(t, "alice", class("longhorn"), modes(RWX))}},
			class:   ClassNone,
			actions: map[string]Action{"alice": ActionObserve},
		},
	})
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
		c.Annotations = map[string]string{migration.CopyAnnotation: migration.CopyRecord{Step: step, User: c.Username, Target: target, To: RWX, Files: 3, Bytes: 42}.Encode()}
	}
}

func copyTarget(t testing.TB, user, name string) claims.Claim {
	return claims.Claim{Name: name, Username: user, AccessModes: []string{RWX}, StorageClass: "efs", Phase: "Bound",
		Annotations: map[string]string{migration.CopyOfAnnotation: home(t, user)}}
}

func TestPlanMigrateCopy(t *testing.T) {
	toEFS := []cfgOpt{mode(RWX), sclass("efs")}
	with := func(extra ...cfgOpt) []cfgOpt { return append(slices.Clone(toEFS), extra...) }
	runPlanCases(t, []planCase{
		{
			name:    "EBS homes are copied to new EFS claims; the sources are kept",
			cfg:     cfg([]string{"alice"}, with(migrate(migration.MethodAuto, 0, true), copyTo("rsync:3", "home-{username}"))...),
			live:    Live{Claims: []claims.Claim{ebsRWO(t, "alice"), ebsRWO(t, "bob")}, Volumes: volumes(t, "ebs.csi.aws.com", "alice", "bob")},
			class:   ClassSafe,
			actions: map[string]Action{"alice": ActionMigrate, "bob": ActionMigrate},
			checkResult: func(t *testing.T, r Result) {
				for _, up := range r.Users {
					if up.Method != migration.MethodCopy || up.Target != "home-"+up.User || !strings.Contains(up.Reason, "is kept") || !strings.Contains(up.Reason, "class changes") {
						t.Errorf("user %s: %+v", up.User, up)
					}
				}
			},
		},
		{
			name:    "a copy without an image or a target name fails naming both settings",
			cfg:     cfg(nil, with(migrate(migration.MethodAuto, 0, true))...),
			live:    Live{Claims: []claims.Claim{ebsRWO(t, "alice")}, Volumes: volumes(t, "ebs.csi.aws.com", "alice")},
			class:   ClassNone,
			actions: map[string]Action{"alice": ActionLegacy},
			legacy:  []string{"alice"}, colocation: true,
			errors: []want{{attr: "migration", has: []string{"alice", "migration.copy_image", "migration.target_name_template"}}},
		},
		{
			name:    "a target template that names the source is refused",
			cfg:     cfg(nil, with(migrate(migration.MethodCopy, 0, true), copyTo("rsync:3", tmpl))...),
			live:    Live{Claims: []claims.Claim{ebsRWO(t, "alice")}, Volumes: volumes(t, "ebs.csi.aws.com", "alice")},
			class:   ClassNone,
			actions: map[string]Action{"alice": ActionLegacy},
			legacy:  []string{"alice"}, colocation: true,
			errors: []want{{attr: "migration", has: []string{"alice", "cannot be the new claim"}}},
		},
		{
			name:    "a finished copy: the user's home is the target, which is no stray; nothing to do",
			cfg:     cfg(nil, with(migrate(migration.MethodAuto, 0, true), copyTo("rsync:3", "home-{username}"))...),
			live:    Live{Claims: []claims.Claim{ebsRWO(t, "alice", withCopyRecord(migration.StepSwitched, "home-alice")), copyTarget(t, "alice", "home-alice")}},
			class:   ClassNone,
			actions: map[string]Action{"alice": ActionCopied},
			checkResult: func(t *testing.T, r Result) {
				if copiedTo(r, "alice") != "home-alice" || !strings.Contains(r.Users[0].Reason, "3 files, 42 bytes") {
					t.Errorf("home claim %q, reason %q", copiedTo(r, "alice"), r.Users[0].Reason)
				}
			},
		},
		{
			name:    "an unfinished copy resumes whatever on_mode_change says now",
			cfg:     cfg(nil, with(onChange(OnModeChangeKeepExisting))...),
			live:    Live{Claims: []claims.Claim{ebsRWO(t, "alice", withCopyRecord(migration.StepCopying, "home-alice")), copyTarget(t, "alice", "home-alice")}},
			class:   ClassSafe,
			actions: map[string]Action{"alice": ActionMigrate},
			checkResult: func(t *testing.T, r Result) {
				if up := r.Users[0]; up.Method != migration.MethodCopy || up.CopyResume == nil || up.Target != "home-alice" {
					t.Errorf("resume not planned: %+v", up)
				}
			},
		},
		{
			// Resuming would start a copy Job on a home in use: on another
			// node it cannot mount it, and the user could not be switched.
			name:    "an unfinished copy waits while a server runs on the old home",
			cfg:     cfg(nil, with(migrate(migration.MethodAuto, 0, true), copyTo("rsync:3", "home-{username}"))...),
			live:    Live{Claims: []claims.Claim{ebsRWO(t, "alice", withCopyRecord(migration.StepVerified, "home-alice")), copyTarget(t, "alice", "home-alice")}, Mounted: map[claims.Ref]bool{at("claim-alice"): true}},
			class:   ClassNone,
			actions: map[string]Action{"alice": ActionLegacy},
			legacy:  []string{"alice"}, colocation: true,
			warnings: []want{{attr: "migration", has: []string{"alice", "running"}}},
		},
		{
			name: "an unreadable copy record is an error naming the claim",
			cfg:  cfg(nil, with(migrate(migration.MethodAuto, 0, true))...),
			live: Live{Claims: []claims.Claim{func() claims.Claim {
				c := ebsRWO(t, "alice")
				c.Annotations = map[string]string{migration.CopyAnnotation: "{"}
				return c
			}()}},
			class:   ClassNone,
			actions: map[string]Action{"alice": ActionKeep},
			errors:  []want{{attr: "migration", has: []string{"claim-alice", "alice", "copy record"}}},
		},
	})
}

// workspace is user's RWO Longhorn workspace claim "nebi-workspaces-<user>".
func workspace(t testing.TB, user string) claims.Claim {
	n := name(t, "nebi-workspaces-{username}", user, kubespawner.SchemeSafe)
	return claims.Claim{Name: n, Username: user, AccessModes: []string{RWO}, StorageClass: "longhorn", Phase: "Bound", VolumeName: "pv-" + n}
}

func extras(c *Config) { c.ExtraVolumes = []string{"nebi-workspaces-{username}"} }

func TestPlanExtraUserVolumes(t *testing.T) {
	rwxHome := func(u string) claims.Claim { return pvc(t, u, class("longhorn"), modes(RWX)) }
	ws := map[string]Volume{"pv-" + workspace(t, "alice").Name: {CSIDriver: "driver.longhorn.io"}}
	runPlanCases(t, []planCase{
		{
			name:    "an RWO workspace beside an RWX home keeps its user co-located",
			cfg:     cfg(nil, mode(RWX), sclass("longhorn"), extras, onChange(OnModeChangeKeepExisting)),
			live:    Live{Claims: []claims.Claim{rwxHome("alice"), workspace(t, "alice"), rwxHome("bob")}},
			class:   ClassNone,
			actions: map[string]Action{"alice": ActionObserve, "bob": ActionObserve},
			legacy:  []string{"alice"}, colocation: true,
		},
		{
			name:    "without on_mode_change the plan fails naming the workspace",
			cfg:     cfg(nil, mode(RWX), sclass("longhorn"), extras),
			live:    Live{Claims: []claims.Claim{rwxHome("alice"), workspace(t, "alice")}},
			class:   ClassNone,
			actions: map[string]Action{"alice": ActionObserve},
			legacy:  []string{"alice"}, colocation: true,
			errors: []want{{attr: "extra_user_volumes", has: []string{"nebi-workspaces-alice", "alice", "keep_existing", "migrate", "Multi-Attach"}}},
		},
		{
			name:    "migrate rebinds the workspace; it is no stray of the home template",
			cfg:     cfg(nil, mode(RWX), sclass("longhorn"), extras, migrate(migration.MethodAuto, 0, true)),
			live:    Live{Claims: []claims.Claim{rwxHome("alice"), workspace(t, "alice")}, Volumes: ws},
			class:   ClassSafe,
			actions: map[string]Action{"alice": ActionObserve},
			checkResult: func(t *testing.T, r Result) {
				if len(r.Extra) != 1 || r.Extra[0].Action != ActionMigrate || r.Extra[0].ClaimName != "nebi-workspaces-alice" || r.Extra[0].Volume != "pv-nebi-workspaces-alice" {
					t.Errorf("extra %+v", r.Extra)
				}
			},
		},
		{
			name:    "a workspace in another class is rebound all the same (it keeps its class)",
			cfg:     cfg(nil, mode(RWX), sclass("efs"), extras, migrate(migration.MethodAuto, 0, true)),
			live:    Live{Claims: []claims.Claim{pvc(t, "alice", class("efs"), modes(RWX)), workspace(t, "alice")}, Volumes: ws},
			class:   ClassSafe,
			actions: map[string]Action{"alice": ActionObserve},
		},
		{
			name:    "a workspace on a driver that cannot share it is refused, never copied",
			cfg:     cfg(nil, mode(RWX), sclass("longhorn"), extras, migrate(migration.MethodAuto, 0, true), copyTo("rsync:3", "home-{username}")),
			live:    Live{Claims: []claims.Claim{rwxHome("alice"), workspace(t, "alice")}, Volumes: map[string]Volume{"pv-nebi-workspaces-alice": {CSIDriver: "ebs.csi.aws.com"}}},
			class:   ClassNone,
			actions: map[string]Action{"alice": ActionObserve},
			legacy:  []string{"alice"}, colocation: true,
			errors: []want{{attr: "migration", has: []string{"nebi-workspaces-alice", "only rebound, never copied"}}},
		},
	})
}

func inNS(ns string) claimOpt { return func(c *claims.Claim) { c.Namespace = ns } }

func userNamespaces(t string) cfgOpt { return func(c *Config) { c.UserNamespaceTemplate = t } }

// Under KubeSpawner's per-user namespaces, a user's home is the claim named
// by the template in the user's own namespace; claims elsewhere (another
// hub, another user's namespace) are not this deployment's and are neither
// homes nor strays; new claims go to the user's namespace.
func TestPlanUserNamespaces(t *testing.T) {
	runPlanCases(t, []planCase{
		{
			name: "claims are read per user namespace",
			cfg:  cfg([]string{"carol"}, userNamespaces("{hubnamespace}-{username}")),
			live: Live{Claims: []claims.Claim{
				pvc(t, "alice", inNS("jhub-alice")),
				pvc(t, "alice", inNS("other-hub"), named("claim-alice"), modes(RWOP)),
				pvc(t, "bob", inNS("jhub-alice")),
				{Name: "scratch", Namespace: "jhub-alice", AccessModes: []string{RWO}},
			}},
			class:      ClassSafe,
			actions:    map[string]Action{"alice": ActionObserve, "carol": ActionCreate},
			colocation: true,
			checkResult: func(t *testing.T, r Result) {
				ns := map[string]string{}
				for _, up := range r.Users {
					ns[up.User] = up.Namespace
				}
				if ns["alice"] != "jhub-alice" || ns["carol"] != "jhub-carol" {
					t.Errorf("namespaces %v", ns)
				}
				if r.Users[0].Live.Namespace != "jhub-alice" {
					t.Errorf("alice's home is the claim in %q", r.Users[0].Live.Namespace)
				}
			},
		},
	})
	// dave's claim in his own namespace not named by the template is a stray, as in one namespace.
	r := Plan(cfg(nil, userNamespaces("jupyter-{username}")), nil, Live{Claims: []claims.Claim{pvc(t, "dave", inNS("jupyter-dave"), named("home-dave"))}})
	if len(r.Errors) != 1 || r.Errors[0].Attribute != "pvc_name_template" {
		t.Errorf("stray in a user namespace: %s", dump(r.Errors))
	}
	// A template that cannot name a namespace for a user is an error naming the attribute.
	r = Plan(cfg([]string{"alice"}, userNamespaces("{nope}")), nil, Live{})
	if len(r.Errors) == 0 || r.Errors[0].Attribute != "user_namespace_template" {
		t.Errorf("bad template: %s", dump(r.Errors))
	}
}

func uid(u string) claimOpt { return func(c *claims.Claim) { c.UID = u } }

// Claim names are unique per namespace only: under per-user namespaces a
// template without a user field ("home", legal in KubeSpawner) names every
// user's claim alike. Every lookup is by namespace and name; each case
// failed when claims were looked up by name.
func TestPlanClaimsKnownByNamespace(t *testing.T) {
	perUser := []cfgOpt{userNamespaces("jupyter-{username}"), template("home")}
	with := func(extra ...cfgOpt) []cfgOpt { return append(slices.Clone(perUser), extra...) }
	alice := pvc(t, "alice", inNS("jupyter-alice"), named("home"), uid("uid-alice"))
	bob := pvc(t, "bob", inNS("jupyter-bob"), named("home"), uid("uid-bob"))

	t.Run("destroy deletes the listed user's home, not another's of the same name", func(t *testing.T) {
		c := cfg([]string{"alice"}, with(policy(DeletionDelete), dataLoss())...)
		r := Destroy(c, *prior(t, c), Live{Claims: []claims.Claim{alice, bob}})
		if len(r.Users) != 1 || r.Users[0].Live == nil || r.Users[0].Live.UID != "uid-alice" || r.Users[0].Namespace != "jupyter-alice" {
			t.Fatalf("destroy plans %+v, want only alice's claim (uid-alice)", r.Users)
		}
		r = Destroy(c, *prior(t, c), Live{Claims: []claims.Claim{alice, bob}, Mounted: map[claims.Ref]bool{{Namespace: "jupyter-bob", Name: "home"}: true}})
		if len(r.Errors) > 0 {
			t.Errorf("bob's running server refused the delete of alice's home: %s", dump(r.Errors))
		}
	})
	t.Run("another user's copy is not this user's", func(t *testing.T) {
		c := cfg([]string{"alice", "bob"}, with(mode(RWX), sclass("efs"), onChange(OnModeChangeMigrate), migrate(migration.MethodCopy, 0, true), copyTo("rsync:3", "home-rwx"))...)
		copied := pvc(t, "alice", inNS("jupyter-alice"), named("home"), uid("uid-alice"), withCopyRecord(migration.StepSwitched, "home-rwx"))
		target := claims.Claim{Name: "home-rwx", Namespace: "jupyter-alice", Username: "alice", AccessModes: []string{RWX}, StorageClass: "efs", Phase: "Bound",
			Annotations: map[string]string{migration.CopyOfAnnotation: "home", migration.CopySwitchedAnnotation: "true"}}
		r := Plan(c, nil, Live{Claims: []claims.Claim{copied, target, bob}})
		got := actions(r)
		if got["alice"] != ActionCopied || got["bob"] != ActionMigrate {
			t.Fatalf("actions %v, want alice copied and bob migrated (copied to his own home-rwx)", got)
		}
		for _, up := range r.Users {
			if up.User == "bob" && (up.TargetLive != nil || up.Namespace != "jupyter-bob") {
				t.Errorf("bob's plan points at %+v in %s", up.TargetLive, up.Namespace)
			}
		}
		if copiedTo(r, "bob") != "" {
			t.Errorf("the hub would mount %q as bob's home", copiedTo(r, "bob"))
		}
	})
	t.Run("another user's migration in progress is not this user's", func(t *testing.T) {
		c := cfg([]string{"alice", "bob"}, with(mode(RWX), onChange(OnModeChangeKeepExisting))...)
		rec := migration.Record{Step: migration.StepReleased, User: "bob", Claim: "home", Namespace: "jupyter-bob", From: []string{RWO}, To: RWX}
		r := Plan(c, nil, Live{Claims: []claims.Claim{alice}, InProgress: map[claims.Ref]InProgress{{Namespace: "jupyter-bob", Name: "home"}: {Volume: "pv-bob", Record: rec}}})
		for _, up := range r.Users {
			if up.User == "alice" && (up.Resume != nil || up.Volume != "") {
				t.Errorf("alice resumes bob's rebind: %+v", up)
			}
			if up.User == "bob" && (up.Resume == nil || up.Volume != "pv-bob") {
				t.Errorf("bob's rebind is not resumed: %+v", up)
			}
		}
	})
	t.Run("a server on another user's claim of the same name does not stop this user's change", func(t *testing.T) {
		c := cfg([]string{"alice"}, with(mode(RWX), onChange(OnModeChangeRecreate), dataLoss())...)
		bob := bob
		bob.AccessModes = []string{RWX}
		r := Plan(c, prior(t, c), Live{Claims: []claims.Claim{alice, bob}, Mounted: map[claims.Ref]bool{{Namespace: "jupyter-bob", Name: "home"}: true}})
		if got := actions(r); got["alice"] != ActionRecreate || len(r.Errors) > 0 {
			t.Errorf("actions %v, errors %s", got, dump(r.Errors))
		}
		r = Plan(c, prior(t, c), Live{Claims: []claims.Claim{alice, bob}, Mounted: map[claims.Ref]bool{{Namespace: "jupyter-alice", Name: "home"}: true}})
		if len(r.Errors) == 0 {
			t.Errorf("alice's running server did not stop the recreate of her home")
		}
	})
}

// A rebind an earlier apply started is read whatever on_mode_change says
// now: once its claim was deleted it is finished (the only way to give the
// user the home back); while the old claim is still there it waits, and the
// plan says how to finish or undo it.
func TestPlanRebindInProgressUnderAnotherSetting(t *testing.T) {
	rec := func(step migration.Step) map[claims.Ref]InProgress {
		return map[claims.Ref]InProgress{at(home(t, "alice")): {Volume: "pv-claim-alice", Record: migration.Record{Step: step, User: "alice",
			Claim: home(t, "alice"), Namespace: ns, From: []string{RWO}, To: RWX, ReclaimPolicy: "Delete"}}}
	}
	for _, o := range []OnModeChange{OnModeChangeFail, OnModeChangeKeepExisting, OnModeChangeRecreate} {
		c := cfg([]string{"alice"}, mode(RWX), onChange(o), dataLoss())
		for _, pr := range []*Prior{nil, prior(t, c)} {
			r := Plan(c, pr, Live{InProgress: rec(migration.StepReleased)})
			if got := actions(r); got["alice"] != ActionMigrate || r.Users[0].Resume == nil || r.Users[0].Volume != "pv-claim-alice" || r.Class != ClassSafe {
				t.Errorf("%s, prior %v: claim gone: %v (class %s), want the rebind finished", o, pr != nil, got, r.Class)
			}
			r = Plan(c, pr, Live{Claims: []claims.Claim{longhornRWO(t, "alice")}, InProgress: rec(migration.StepRetained)})
			if r.Users[0].Resume != nil || r.Users[0].Action == ActionMigrate {
				t.Errorf("%s: the old claim is there, yet the rebind resumes: %+v", o, r.Users[0])
			}
			found := false
			for _, w := range r.Warnings {
				found = found || strings.Contains(w.Detail, "pv-claim-alice") && strings.Contains(w.Detail, "To finish") && strings.Contains(w.Detail, "To undo")
			}
			if !found {
				t.Errorf("%s: no warning names the paused rebind: %s", o, dump(r.Warnings))
			}
		}
	}
}

// A claim KubeSpawner created while a rebind had deleted the old one holds
// the user's new files, not the home: the plan stops, naming it and the
// volume, and never advises deleting it unsaved.
func TestPlanClaimCreatedDuringRebind(t *testing.T) {
	c := cfg([]string{"alice"}, mode(RWX), migrate(migration.MethodRebind, 0, true))
	made := pvc(t, "alice", uid("uid-new"))
	made.VolumeName = "pv-new"
	r := Plan(c, prior(t, c), Live{Claims: []claims.Claim{made}, InProgress: map[claims.Ref]InProgress{at(home(t, "alice")): {Volume: "pv-a",
		Record: migration.Record{Step: migration.StepRetained, User: "alice", Claim: home(t, "alice"), Namespace: ns, From: []string{RWO}, To: RWX}}}})
	checkFindings(t, "errors", r.Errors, []want{{attr: "users", has: []string{"uid-new", "pv-a", "save what"}}})
	if strings.Contains(dump(r.Errors), "holds no data") || actions(r)["alice"] == ActionMigrate {
		t.Errorf("plan %v: %s", actions(r), dump(r.Errors))
	}
}

// A copy's new claim is never another user's home, nor a claim that exists
// already: KubeSpawner would mount it as that user's home, or it may hold
// someone's data.
func TestPlanCopyTargetIsNoOnesHome(t *testing.T) {
	toEFS := []cfgOpt{mode(RWX), sclass("efs"), onChange(OnModeChangeMigrate), migrate(migration.MethodCopy, 0, true), copyTo("rsync:3", "claim-{username}-rwx")}
	runPlanCases(t, []planCase{
		{
			name:       "the target is a listed user's home",
			cfg:        cfg([]string{"alice", "alice-rwx"}, toEFS...),
			live:       Live{Claims: []claims.Claim{ebsRWO(t, "alice")}},
			class:      ClassNone,
			actions:    map[string]Action{"alice": ActionLegacy, "alice-rwx": ActionCreate},
			legacy:     []string{"alice"},
			colocation: true,
			errors:     []want{{attr: "migration", has: []string{"claim-alice-rwx", `home claim of user "alice-rwx"`}}},
		},
		{
			name: "the target exists and is no copy",
			cfg:  cfg([]string{"alice"}, toEFS...),
			live: Live{Claims: []claims.Claim{ebsRWO(t, "alice"),
				{Name: "claim-alice-rwx", AccessModes: []string{RWX}, StorageClass: "efs", Phase: "Bound"}}},
			class:      ClassNone,
			actions:    map[string]Action{"alice": ActionLegacy},
			legacy:     []string{"alice"},
			colocation: true,
			errors:     []want{{attr: "migration", has: []string{"claim-alice-rwx", "exists already", "did not create"}}},
		},
	})
}

func deleteSources(c *Config) { c.Migration.DeleteSources = true }

// Deleting the old homes of finished copies is destructive and needs both
// delete_copied_sources and allow_data_loss; once a source is gone, the copy
// stays the user's home (never a new, empty claim under the old name).
func TestPlanDeleteCopiedSources(t *testing.T) {
	toEFS := []cfgOpt{mode(RWX), sclass("efs"), migrate(migration.MethodAuto, 0, true), copyTo("rsync:3", "home-{username}")}
	with := func(extra ...cfgOpt) []cfgOpt { return append(slices.Clone(toEFS), extra...) }
	switched := func() []claims.Claim {
		return []claims.Claim{ebsRWO(t, "alice", withCopyRecord(migration.StepSwitched, "home-alice")), copyTarget(t, "alice", "home-alice")}
	}
	runPlanCases(t, []planCase{
		{
			name:    "without allow_data_loss the source is kept",
			cfg:     cfg([]string{"alice"}, with(deleteSources)...),
			live:    Live{Claims: switched()},
			class:   ClassNone,
			actions: map[string]Action{"alice": ActionCopied},
		},
		{
			name:     "with both, the source is deleted: destructive, and said so",
			cfg:      cfg([]string{"alice"}, with(deleteSources, dataLoss())...),
			live:     Live{Claims: switched()},
			class:    ClassDestructive,
			actions:  map[string]Action{"alice": ActionDeleteSource},
			warnings: []want{{attr: "migration", has: []string{"claim-alice", "home-alice", "3 files, 42 bytes", "old data"}}},
		},
		{
			name:    "not while a pod mounts the old home",
			cfg:     cfg([]string{"alice"}, with(deleteSources, dataLoss())...),
			live:    Live{Claims: switched(), Mounted: map[claims.Ref]bool{at("claim-alice"): true}},
			class:   ClassNone,
			actions: map[string]Action{"alice": ActionDeleteSource},
			errors:  []want{{attr: "migration", has: []string{"claim-alice", "Stop these servers"}}},
		},
		{
			name:    "the source gone, a listed user keeps the copy as home: nothing is created",
			cfg:     cfg([]string{"alice"}, with()...),
			live:    Live{Claims: []claims.Claim{copyTarget(t, "alice", "home-alice")}},
			class:   ClassNone, // nothing changes in the cluster
			actions: map[string]Action{"alice": ActionCopied},
			checkResult: func(t *testing.T, r Result) {
				if copiedTo(r, "alice") != "home-alice" {
					t.Errorf("home claim %q", copiedTo(r, "alice"))
				}
			},
		},
	})
}

// A rebound managed home grows to the configured capacity in the same
// apply; it never shrinks, and a KubeSpawner-made home is never resized.
func TestPlanMigrateCapacity(t *testing.T) {
	base := []cfgOpt{mode(RWX), sclass("longhorn"), migrate(migration.MethodAuto, 0, true)}
	with := func(extra ...cfgOpt) []cfgOpt { return append(slices.Clone(base), extra...) }
	live := func() Live {
		return Live{Claims: []claims.Claim{longhornRWO(t, "alice"), longhornRWO(t, "bob")},
			Volumes: volumes(t, "driver.longhorn.io", "alice", "bob"), Class: &StorageClass{Name: "longhorn", Provisioner: "driver.longhorn.io", AllowExpansion: true, Exists: true}}
	}
	runPlanCases(t, []planCase{
		{
			name:    "grow after the rebind, managed users only",
			cfg:     cfg([]string{"alice"}, with(capacity(20))...),
			live:    live(),
			class:   ClassSafe,
			actions: map[string]Action{"alice": ActionMigrate, "bob": ActionMigrate},
			checkResult: func(t *testing.T, r Result) {
				if !r.Users[0].Resize || r.Users[1].Resize || !strings.Contains(r.Users[0].Reason, "then grow 10Gi to 20Gi") {
					t.Errorf("resize: alice %v (%s), bob %v", r.Users[0].Resize, r.Users[0].Reason, r.Users[1].Resize)
				}
			},
		},
		{
			name:    "a smaller capacity fails as it does without a migration",
			cfg:     cfg([]string{"alice"}, with(capacity(5))...),
			live:    live(),
			class:   ClassNone,
			actions: map[string]Action{"alice": ActionMigrate, "bob": ActionMigrate},
			errors:  []want{{attr: "capacity", has: []string{"claim-alice", "shrink"}}},
		},
	})
}

// Result.All gives the homes' plans, then the other claims', in place, and
// stops when the loop does.
func TestResultAll(t *testing.T) {
	r := Result{Users: []UserPlan{{User: "a"}, {User: "b"}}, Extra: []UserPlan{{User: "c"}}}
	var got []string
	for up := range r.All() {
		got = append(got, up.User)
	}
	if want := []string{"a", "b", "c"}; !slices.Equal(got, want) {
		t.Errorf("All gave %v, want %v", got, want)
	}
	for _, stop := range []string{"a", "b", "c"} {
		var seen []string
		for up := range r.All() {
			seen = append(seen, up.User)
			if up.User == stop {
				break // All must not call yield again: that panics
			}
		}
		if seen[len(seen)-1] != stop {
			t.Errorf("a loop that stopped at %s went on to %v", stop, seen)
		}
	}
	for up := range r.All() {
		if up != &r.Users[0] {
			t.Error("All gave a copy, not the plan in place")
		}
		break
	}
}

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
