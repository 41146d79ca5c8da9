package safety

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/claims"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/kubespawner"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/migration"
)

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
	genModes     = []string{claims.RWO, claims.RWX, claims.RWOP}
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
			c.AccessModes = []string{claims.RWO, claims.RWX}
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
			c.Annotations = map[string]string{migration.CopyAnnotation: migration.CopyRecord{Step: step, User: u, Target: "home-" + n, To: claims.RWX}.Encode()}
			g.live.Claims = append(g.live.Claims, claims.Claim{Name: "home-" + n, Username: u, AccessModes: []string{claims.RWX}, Phase: "Bound",
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
			From: []string{claims.RWO}, To: g.cfg.AccessMode, Annotations: ann}}
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
		c.Annotations = map[string]string{migration.CopyAnnotation: migration.CopyRecord{Step: step, User: u, Target: "home-" + n, To: claims.RWX}.Encode(),
			kubespawner.AnnotationServername: "gpu"}
		g.live.Claims = append(g.live.Claims, claims.Claim{Name: "home-" + n, Username: u, Servername: "gpu", AccessModes: []string{claims.RWX}, Phase: "Bound",
			Annotations: map[string]string{migration.CopyOfAnnotation: n, kubespawner.AnnotationServername: "gpu"}})
		if r.IntN(3) == 0 {
			return // the source was deleted after the copy
		}
	}
	g.live.Claims = append(g.live.Claims, c)
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
		c := pvc(b, us[i], modes(claims.RWX), class("efs"))
		switch i % 4 {
		case 0, 1:
			c.AccessModes, c.StorageClass = []string{claims.RWO}, "gp3"
		case 2:
			c.Requested, c.RequestedBytes = "5Gi", 5*gi
		}
		if i%10 == 0 {
			live.Mounted[at(c.Name)] = true
		}
		live.Claims = append(live.Claims, c)
	}
	c := cfg(us, mode(claims.RWX), sclass("efs"), onChange(OnModeChangeKeepExisting))
	pr := prior(b, c)
	for b.Loop() {
		r := Plan(c, pr, live)
		if len(r.Users) != n || len(r.Errors) != 0 || r.Class != ClassSafe {
			b.Fatalf("unexpected plan: %d users, %d errors, class %s", len(r.Users), len(r.Errors), r.Class)
		}
	}
}
