package safety

import (
	"strings"
	"testing"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/claims"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/kubespawner"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/migration"
)

// serverTmpl gives each named server its own claim: claim-alice for
// alice's default server, claim-alice--gpu for her server "gpu".
const serverTmpl = "claim-{user_server}"

// serverHome is the claim of user's named server under serverTmpl, bound
// to a volume of its own on an EBS volume (ReadWriteOnce, gp3).
func serverHome(t testing.TB, user, srv string, opts ...claimOpt) claims.Claim {
	t.Helper()
	n, err := kubespawner.Expand(serverTmpl, user, srv, kubespawner.SchemeSafe)
	if err != nil {
		t.Fatal(err)
	}
	c := pvc(t, user, append([]claimOpt{named(n), server(srv)}, opts...)...)
	c.VolumeName = "pv-" + n
	c.UID = "uid-" + n
	return c
}

// defaultHome is user's default server's claim under serverTmpl.
func defaultHome(t testing.TB, user string, opts ...claimOpt) claims.Claim {
	c := pvc(t, user, opts...)
	c.VolumeName = "pv-" + c.Name
	c.UID = "uid-" + c.Name
	return c
}

func serversCfg(users []string, opts ...cfgOpt) Config {
	return cfg(users, append([]cfgOpt{template(serverTmpl)}, opts...)...)
}

func vols(driver string, cs ...claims.Claim) map[string]Volume {
	out := map[string]Volume{}
	for _, c := range cs {
		out[c.VolumeName] = Volume{CSIDriver: driver}
	}
	return out
}

// Named servers with claims of their own are homes: read, classified,
// migrated (rebind or copy, each to its own claim) and reported under
// "user/server", never created or recreated by the provider.
func TestPlanNamedServers(t *testing.T) {
	alice, gpu := defaultHome(t, "alice"), serverHome(t, "alice", "gpu")
	lh := func(c claims.Claim) claims.Claim { c.StorageClass = "longhorn"; return c }
	toEFS := []cfgOpt{mode(claims.RWX), sclass("efs")}
	switched := func(c claims.Claim, target string) claims.Claim {
		c.Annotations = map[string]string{migration.CopyAnnotation: migration.CopyRecord{Step: migration.StepSwitched, User: "alice", Target: target, To: claims.RWX, Files: 3, Bytes: 42}.Encode()}
		return c
	}
	target := func(of claims.Claim, name string) claims.Claim {
		return claims.Claim{Name: name, Namespace: ns, Username: "alice", Servername: of.Servername, AccessModes: []string{claims.RWX}, StorageClass: "efs", Phase: "Bound",
			Annotations: map[string]string{migration.CopyOfAnnotation: of.Name, migration.CopyOfUIDAnnotation: of.UID, migration.CopySwitchedAnnotation: "x"}}
	}
	runPlanCases(t, []planCase{
		{
			name:       "a named server's claim as configured is observed, never created",
			cfg:        serversCfg([]string{"alice", "bob"}),
			live:       Live{Claims: []claims.Claim{alice, gpu}},
			class:      ClassSafe, // bob's home is created; no named server's claim ever is
			actions:    map[string]Action{"alice": ActionKeep, "alice/gpu": ActionObserve, "bob": ActionCreate},
			colocation: true,
			checkResult: func(t *testing.T, r Result) {
				if len(r.Servers) != 1 || r.Servers[0].ClaimName != "claim-alice--gpu" || r.Servers[0].Managed {
					t.Errorf("servers %+v", r.Servers)
				}
			},
		},
		{
			name:    "keep_existing: an RWO named server's claim keeps its user listed in legacy_users",
			cfg:     serversCfg(nil, mode(claims.RWX), onChange(OnModeChangeKeepExisting)),
			live:    Live{Claims: []claims.Claim{defaultHome(t, "alice", modes(claims.RWX)), gpu}},
			class:   ClassNone,
			actions: map[string]Action{"alice": ActionObserve, "alice/gpu": ActionLegacy},
			legacy:  []string{"alice"}, colocation: true,
		},
		{
			name:    "fail: the plan names the named server's claim",
			cfg:     serversCfg(nil, mode(claims.RWX)),
			live:    Live{Claims: []claims.Claim{defaultHome(t, "alice", modes(claims.RWX)), gpu}},
			class:   ClassNone,
			actions: map[string]Action{"alice": ActionObserve, "alice/gpu": ActionLegacy},
			legacy:  []string{"alice"}, colocation: true,
			errors: []want{{attr: "access_mode", has: []string{"alice/gpu: claim-alice--gpu"}}},
		},
		{
			name:    "recreate never deletes a named server's claim: kept, with a warning",
			cfg:     serversCfg([]string{"alice"}, mode(claims.RWX), onChange(OnModeChangeRecreate), dataLoss()),
			live:    Live{Claims: []claims.Claim{defaultHome(t, "alice", modes(claims.RWX)), gpu}},
			class:   ClassSafe,
			actions: map[string]Action{"alice": ActionKeep, "alice/gpu": ActionLegacy},
			legacy:  []string{"alice"}, colocation: true,
			warnings: []want{{attr: "on_mode_change", has: []string{"alice/gpu: claim-alice--gpu", "never deletes"}}},
		},
		{
			name:    "migrate rebinds each server's own claim on its own volume",
			cfg:     serversCfg(nil, mode(claims.RWX), sclass("longhorn"), migrate(migration.MethodAuto, 0, true)),
			live:    Live{Claims: []claims.Claim{lh(alice), lh(gpu)}, Volumes: vols("driver.longhorn.io", alice, gpu)},
			class:   ClassSafe,
			actions: map[string]Action{"alice": ActionMigrate, "alice/gpu": ActionMigrate},
			checkResult: func(t *testing.T, r Result) {
				if up := r.Servers[0]; up.Method != migration.MethodRebind || up.Volume != "pv-claim-alice--gpu" {
					t.Errorf("named server %+v", up)
				}
				if ch := ChangesOf(r); ch["alice/gpu"].Claim != "claim-alice--gpu" || ch["alice/gpu"].UID != gpu.UID || ch["alice"].Claim != "claim-alice" {
					t.Errorf("changes %v", ch)
				}
			},
		},
		{
			name:    "a running named server waits; the default server's home moves",
			cfg:     serversCfg(nil, mode(claims.RWX), sclass("longhorn"), migrate(migration.MethodAuto, 0, true)),
			live:    Live{Claims: []claims.Claim{lh(alice), lh(gpu)}, Volumes: vols("driver.longhorn.io", alice, gpu), Mounted: map[claims.Ref]bool{at(gpu.Name): true}},
			class:   ClassSafe,
			actions: map[string]Action{"alice": ActionMigrate, "alice/gpu": ActionLegacy},
			legacy:  []string{"alice"}, colocation: true,
			warnings: []want{{attr: "migration", has: []string{"alice/gpu: claim-alice--gpu"}}},
		},
		{
			name:    "copies: each server's home to its own new claim",
			cfg:     serversCfg(nil, append(toEFS, migrate(migration.MethodAuto, 0, true), copyTo("rsync:3", "home-{user_server}"))...),
			live:    Live{Claims: []claims.Claim{alice, gpu}, Volumes: vols("ebs.csi.aws.com", alice, gpu)},
			class:   ClassSafe,
			actions: map[string]Action{"alice": ActionMigrate, "alice/gpu": ActionMigrate},
			checkResult: func(t *testing.T, r Result) {
				if r.Users[0].Target != "home-alice" || r.Servers[0].Target != "home-alice--gpu" || r.Servers[0].Method != migration.MethodCopy {
					t.Errorf("targets %q and %q", r.Users[0].Target, r.Servers[0].Target)
				}
			},
		},
		{
			name:    "a target template without the server would copy two homes into one claim: refused",
			cfg:     serversCfg(nil, append(toEFS, migrate(migration.MethodAuto, 0, true), copyTo("rsync:3", "home-{username}"))...),
			live:    Live{Claims: []claims.Claim{alice, gpu}, Volumes: vols("ebs.csi.aws.com", alice, gpu)},
			class:   ClassNone,
			actions: map[string]Action{"alice": ActionMigrate, "alice/gpu": ActionLegacy},
			legacy:  []string{"alice"}, colocation: true,
			errors: []want{{attr: "migration", has: []string{"alice/gpu: claim-alice--gpu", "home-alice", "{servername}"}}},
		},
		{
			name:    "a target template that names another server's home is refused",
			cfg:     serversCfg(nil, append(toEFS, migrate(migration.MethodAuto, 0, true), copyTo("rsync:3", "claim-{username}--gpu"))...),
			live:    Live{Claims: []claims.Claim{alice, serverHome(t, "alice", "gpu", modes(claims.RWX), class("efs"))}, Volumes: vols("ebs.csi.aws.com", alice)},
			class:   ClassNone,
			actions: map[string]Action{"alice": ActionLegacy, "alice/gpu": ActionObserve},
			legacy:  []string{"alice"}, colocation: true,
			errors: []want{{attr: "migration", has: []string{"claim-alice--gpu", `home claim of user "alice/gpu"`}}},
		},
		{
			name:     "a switched copy of a named server's home is that server's home; its source is deleted only as configured",
			cfg:      serversCfg(nil, append(toEFS, migrate(migration.MethodAuto, 0, true), copyTo("rsync:3", "home-{user_server}"), deleteSources, dataLoss())...),
			live:     Live{Claims: []claims.Claim{defaultHome(t, "alice", modes(claims.RWX), class("efs")), switched(gpu, "home-alice--gpu"), target(gpu, "home-alice--gpu")}},
			class:    ClassDestructive,
			actions:  map[string]Action{"alice": ActionObserve, "alice/gpu": ActionDeleteSource},
			warnings: []want{{attr: "migration", has: []string{"alice/gpu: claim-alice--gpu", "home-alice--gpu"}}},
			checkResult: func(t *testing.T, r Result) {
				if ch := ChangesOf(r)["alice/gpu"]; ch.Action != ActionDeleteSource || ch.UID != gpu.UID || ch.Claim != gpu.Name {
					t.Errorf("change %+v", ch)
				}
			},
		},
		{
			// Keyed by user alone, the copy of alice's gpu server whose
			// source is gone was taken for her default server's home: no
			// home was created for it.
			name:    "the copy of a named server's deleted claim stays that server's home, not the default server's",
			cfg:     serversCfg([]string{"alice"}, toEFS...),
			live:    Live{Claims: []claims.Claim{target(gpu, "home-alice--gpu")}},
			class:   ClassSafe,
			actions: map[string]Action{"alice": ActionCreate, "alice/gpu": ActionCopied},
			checkResult: func(t *testing.T, r Result) {
				if r.Users[0].ClaimName != "claim-alice" || r.Servers[0].Target != "home-alice--gpu" {
					t.Errorf("users %+v servers %+v", r.Users, r.Servers)
				}
			},
		},
	})
}

// A rebind of a named server's claim stopped after the claim's deletion is
// finished from the record on its volume, whatever the configuration says:
// it is never forgotten, nor taken for the default server's home.
func TestPlanNamedServerRebindInProgress(t *testing.T) {
	gpu := serverHome(t, "alice", "gpu")
	rec := migration.Record{Step: migration.StepReleased, User: "alice", Claim: gpu.Name, Namespace: ns, From: []string{claims.RWO}, To: claims.RWX, ReclaimPolicy: "Delete",
		Annotations: map[string]string{kubespawner.AnnotationUsername: "alice", kubespawner.AnnotationServername: "gpu"}}
	for _, o := range []OnModeChange{OnModeChangeMigrate, OnModeChangeKeepExisting, OnModeChangeFail} {
		c := serversCfg([]string{"alice"}, mode(claims.RWX), onChange(o))
		r := Plan(c, prior(t, c), Live{Claims: []claims.Claim{defaultHome(t, "alice", modes(claims.RWX))}, InProgress: map[claims.Ref]InProgress{at(gpu.Name): {Volume: gpu.VolumeName, Record: rec}}})
		if got := actions(r); got["alice/gpu"] != ActionMigrate || got["alice"] != ActionKeep || len(r.Servers) != 1 || r.Servers[0].Resume == nil || r.Servers[0].Volume != gpu.VolumeName {
			t.Errorf("%s: %v %+v, want the named server's rebind finished", o, got, r.Servers)
		}
		if r.Class != ClassSafe || len(r.Errors) > 0 {
			t.Errorf("%s: class %s, errors %s", o, r.Class, dump(r.Errors))
		}
	}
}

// With a template that gives named servers no claim of their own, a named
// server mounts the default server's claim: nothing more is planned.
func TestPlanNamedServersSharingTheHome(t *testing.T) {
	r := Plan(cfg([]string{"alice"}), nil, Live{Claims: []claims.Claim{pvc(t, "alice", server("gpu"))}})
	if got := actions(r); len(got) != 1 || got["alice"] != ActionKeep || len(r.Servers) != 0 {
		t.Errorf("%v %+v", got, r.Servers)
	}
	if strings.Contains(dump(r.Warnings), "stray") {
		t.Errorf("warnings %s", dump(r.Warnings))
	}
}

// Under a template that gives named servers no claim of their own
// (claim-{username}), KubeSpawner still annotates the shared home with the
// server that spawned first, and a copy of it or a rebind record inherits
// the annotation: the home stays the user's, never a named server's.
func TestPlanSharedHomeAnnotatedWithAServer(t *testing.T) {
	src := pvc(t, "alice", server("gpu"))
	src.UID = "uid-src"
	target := func(switched bool) claims.Claim {
		c := claims.Claim{Name: "home-alice", Namespace: ns, Username: "alice", Servername: "gpu", AccessModes: []string{claims.RWX}, StorageClass: "efs", Phase: "Bound",
			Annotations: map[string]string{migration.CopyOfAnnotation: src.Name, migration.CopyOfUIDAnnotation: src.UID}}
		if switched {
			c.Annotations[migration.CopySwitchedAnnotation] = "x"
		}
		return c
	}
	c := cfg([]string{"alice"}, mode(claims.RWX), sclass("efs"), migrate(migration.MethodAuto, 0, true), copyTo("rsync:3", "home-{username}"))
	for _, switched := range []bool{true, false} {
		// The source is gone: the copy is the home, never a new empty claim-alice.
		r := Plan(c, prior(t, c), Live{Claims: []claims.Claim{target(switched)}})
		if got := actions(r); len(got) != 1 || got["alice"] != ActionCopied || len(ChangesOf(r)) != 0 {
			t.Errorf("switched %v: actions %v, changes %v", switched, got, ChangesOf(r))
		}
	}
	// A rebind stopped after the claim's deletion is resumed once, as alice's.
	home := src
	home.VolumeName = "pv-a"
	rec := migration.Record{Step: migration.StepReleased, User: "alice", Claim: home.Name, Namespace: ns, From: []string{claims.RWO}, To: claims.RWX, ReclaimPolicy: "Delete",
		Annotations: map[string]string{kubespawner.AnnotationUsername: "alice", kubespawner.AnnotationServername: "gpu"}}
	c = cfg([]string{"alice"}, mode(claims.RWX), migrate(migration.MethodAuto, 0, true))
	r := Plan(c, prior(t, c), Live{InProgress: map[claims.Ref]InProgress{at(home.Name): {Volume: "pv-a", Record: rec}}})
	if ch := ChangesOf(r); len(ch) != 1 || ch["alice"].Action != ActionMigrate || ch["alice"].Claim != home.Name {
		t.Errorf("changes %v, want alice's rebind resumed once", ch)
	}
}

// A copy already under way keeps its new claim: no other home is planned
// into it, whichever is planned first.
func TestPlanCopyTargetOfACopyInProgress(t *testing.T) {
	alice, gpu := defaultHome(t, "alice"), serverHome(t, "alice", "gpu")
	alice.Annotations = map[string]string{migration.CopyAnnotation: migration.CopyRecord{Step: migration.StepPending, ID: "x1", User: "alice", Target: "home-alice", To: claims.RWX}.Encode()}
	c := serversCfg(nil, mode(claims.RWX), sclass("efs"), migrate(migration.MethodAuto, 0, true), copyTo("rsync:3", "home-{username}"))
	r := Plan(c, nil, Live{Claims: []claims.Claim{alice, gpu}, Volumes: vols("ebs.csi.aws.com", alice, gpu)})
	if got := actions(r); got["alice"] != ActionMigrate || got["alice/gpu"] != ActionLegacy {
		t.Errorf("actions %v", got)
	}
	checkFindings(t, "errors", r.Errors, []want{{attr: "migration", has: []string{"alice/gpu", "home-alice"}}})
}

// A template change leaves a named server's own claim where the new
// template no longer looks: a stray, like a default server's home.
func TestPlanTemplateChangeLeavesANamedServerHome(t *testing.T) {
	gpu := serverHome(t, "alice", "gpu")
	old := serversCfg(nil, mode(claims.RWX))
	c := old
	c.NameTemplate = tmpl
	r := Plan(c, prior(t, old), Live{Claims: []claims.Claim{defaultHome(t, "alice", modes(claims.RWX)), gpu}})
	checkFindings(t, "errors", r.Errors, []want{{attr: "pvc_name_template", has: []string{"claim-alice--gpu"}}})
}

// Under z2jh's old template claim-{username}{servername}, user "alicegpu"'s
// home has the name of alice's server gpu's: it is never created over,
// adopted, or deleted as alicegpu's.
func TestPlanHomeNameTakenByANamedServer(t *testing.T) {
	z := "claim-{username}{servername}"
	c := cfg([]string{"alicegpu"}, template(z), policy(DeletionDelete), dataLoss())
	gpu := pvc(t, "alice", named("claim-alicegpu"), server("gpu"))
	gpu.UID = "uid-gpu"
	r := Plan(c, nil, Live{Claims: []claims.Claim{gpu}})
	if ch := ChangesOf(r); len(ch) != 0 || r.Class != ClassNone {
		t.Errorf("changes %v, class %s", ch, r.Class)
	}
	checkFindings(t, "errors", r.Errors, []want{{attr: "pvc_name_template", has: []string{"alicegpu", "claim-alicegpu", `server "gpu"`}}})
	d := Destroy(c, *prior(t, c), Live{Claims: []claims.Claim{gpu}})
	for _, up := range d.Users {
		if up.Action == ActionRecreate {
			t.Errorf("destroy deletes %s (alice's server gpu) as %q's home", up.ClaimName, up.User)
		}
	}
	if d.Class == ClassDestructive {
		t.Errorf("destroy is destructive")
	}
}

// A user the last apply managed whose name is now another claim's is not
// listed any more: the plan goes on (the state forgets the user); a claim
// older KubeSpawner labelled with only the user's escaped name is not
// taken for someone else's.
func TestPlanHomeNameTakenNotForUnlistedOrLabelledUsers(t *testing.T) {
	z := "claim-{username}{servername}"
	gpu := pvc(t, "alice", named("claim-alicegpu"), server("gpu"))
	r := Plan(cfg([]string{"alice"}, template(z)), prior(t, cfg([]string{"alice", "alicegpu"}, template(z))), Live{Claims: []claims.Claim{pvc(t, "alice"), gpu}})
	if len(r.Errors) > 0 {
		t.Errorf("errors for a user no longer listed: %s", dump(r.Errors))
	}
	labelled := claims.Claim{Name: "claim-alice-2esmith", Namespace: ns, Username: "alice-2esmith", UsernameLabel: "alice-2esmith", AccessModes: []string{claims.RWO}, StorageClass: "gp3", Phase: "Bound"}
	r = Plan(cfg([]string{"alice.smith"}, scheme(kubespawner.SchemeEscape), onChange(OnModeChangeKeepExisting)), nil, Live{Claims: []claims.Claim{labelled}})
	for _, f := range r.Errors {
		if strings.Contains(f.Summary, "name is taken") {
			t.Errorf("a label-only claim of the user is taken for someone else's: %s", f.Detail)
		}
	}
}
