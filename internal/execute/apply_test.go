package execute

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/claims"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/migration"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/parallel"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/safety"
)

// applyFake is the migrations' modelled cluster with the writes of the
// home changes and the StorageClass.
type applyFake struct {
	*fake
	*fakeClasses
	splits *splitFake // the splits' cluster; WaitBound is the fake's
	dcopy  *dcopyFake // the moves by copy's cluster
	specs  []claims.Spec
	refuse map[string]error // a create's answer, by claim
	// made are claims made since the plan, by name: a create of that name
	// returns them as they are (the API server's AlreadyExists, then Get).
	made map[string]claims.Claim
}

func (f *applyFake) SharedSource(ctx context.Context, ns, claim string) (migration.VolumeSource, string, error) {
	return f.splits.SharedSource(ctx, ns, claim)
}

func (f *applyFake) PrepareDirectory(ctx context.Context, job migration.Split) error {
	if err := f.dcopy.PrepareDirectory(ctx, job); err != nil {
		return err
	}
	return f.splits.PrepareDirectory(ctx, job)
}

func (f *applyFake) SplitVolume(ctx context.Context, name string) (*migration.SplitVolume, error) {
	return f.splits.SplitVolume(ctx, name)
}

func (f *applyFake) CreateSplitVolume(ctx context.Context, rec migration.SplitRecord, src migration.VolumeSource, spec claims.Spec, uid string) error {
	return f.splits.CreateSplitVolume(ctx, rec, src, spec, uid)
}

func (f *applyFake) SplitClaim(ctx context.Context, ns, name string) (*migration.SplitClaim, error) {
	if f.dcopy.claims[name] != nil {
		return f.dcopy.SplitClaim(ctx, ns, name)
	}
	return f.splits.SplitClaim(ctx, ns, name)
}

func (f *applyFake) SharedClaimUID(ctx context.Context, ns, claim string) (string, error) {
	return f.dcopy.SharedClaimUID(ctx, ns, claim)
}

func (f *applyFake) DirectoryUsers(ctx context.Context, ns, shared string, dirs []string, claim string) ([]string, error) {
	return f.dcopy.DirectoryUsers(ctx, ns, shared, dirs, claim)
}

func (f *applyFake) CreateDirectoryCopyClaim(ctx context.Context, rec migration.SplitRecord, spec claims.Spec) error {
	return f.dcopy.CreateDirectoryCopyClaim(ctx, rec, spec)
}

func (f *applyFake) DirectoryCopyJob(ctx context.Context, ns, claim string) (*migration.Job, error) {
	return f.dcopy.DirectoryCopyJob(ctx, ns, claim)
}

func (f *applyFake) StartDirectoryCopyJob(ctx context.Context, job migration.DirectoryCopy, claimUID string) error {
	return f.dcopy.StartDirectoryCopyJob(ctx, job, claimUID)
}

func (f *applyFake) MarkSplitCopied(ctx context.Context, rec migration.SplitRecord, uid string) error {
	return f.dcopy.MarkSplitCopied(ctx, rec, uid)
}

// WaitJob and DeleteJob: a move by copy's Job is the dcopy fake's.
func (f *applyFake) WaitJob(ctx context.Context, ns, name string) error {
	if strings.HasPrefix(name, "home-dcopy-") {
		return f.dcopy.WaitJob(ctx, ns, name)
	}
	return f.fake.WaitJob(ctx, ns, name)
}

func (f *applyFake) DeleteJob(ctx context.Context, ns, name string) error {
	if strings.HasPrefix(name, "home-dcopy-") {
		return f.dcopy.DeleteJob(ctx, ns, name)
	}
	return f.fake.DeleteJob(ctx, ns, name)
}

func (f *applyFake) CreateSplitClaim(ctx context.Context, rec migration.SplitRecord, spec claims.Spec) error {
	return f.splits.CreateSplitClaim(ctx, rec, spec)
}

func (f *applyFake) CreateHome(_ context.Context, spec claims.Spec) (claims.Claim, error) {
	f.specs = append(f.specs, spec)
	if err := f.refuse[spec.Name]; err != nil {
		return claims.Claim{}, err
	}
	if c, ok := f.made[spec.Name]; ok {
		return c, nil
	}
	c := claims.Claim{Name: spec.Name, Namespace: spec.Namespace, UID: f.newUID(), Username: spec.User, AccessModes: []string{spec.Mode},
		Requested: spec.Size, Labels: spec.Labels, Annotations: spec.Annotations}
	f.claims[spec.Name] = &c
	return c, nil
}

func newApplyFake() *applyFake {
	return &applyFake{fake: newFake(), fakeClasses: &fakeClasses{classes: map[string]*claims.StorageClass{}}, splits: newSplitFake(), dcopy: newDcopyFake(), refuse: map[string]error{}}
}

func creates(users ...string) Selection {
	sel := Selection{Planned: safety.Changes{}}
	for _, u := range users {
		sel.Homes = append(sel.Homes, safety.UserPlan{User: u, ClaimName: "claim-" + u, Namespace: ns, Managed: true, Action: safety.ActionCreate})
	}
	return sel
}

// One outcome gathers the claims.StorageClass, each home change and each
// migration: what was done and what failed.
func TestApply_oneOutcome(t *testing.T) {
	f := newApplyFake()
	f.home("dana", "claim-dana", map[string]string{"a": "a"})
	f.refuse["claim-bob"] = errors.New("exceeded quota")
	a := &Apply{Cluster: f, Parallel: 1, AfterStep: func(user string, op migration.Op) error {
		if op == migration.OpDeleteClaim {
			return fmt.Errorf("stopped after %s", op)
		}
		return nil
	}}
	ctx := context.Background()
	if !a.Class(ctx, testClass(), nil) {
		t.Fatalf("class: %v", a.Outcome.Class.Err)
	}
	spec := claims.Spec{Mode: claims.RWX, Class: "homes", Size: "10Gi", Labels: map[string]string{"team": "a"}}
	a.Homes(ctx, creates("alice", "bob"), spec, "")
	a.Migrate(ctx, []Migration{{Key: "dana", Rebind: &Rebind{User: "dana", Namespace: ns, Claim: "claim-dana", Volume: "pv-claim-dana",
		To: claims.RWX, UID: f.claims["claim-dana"].UID}}}, 1)

	o := a.Outcome
	switch {
	case !o.Failed():
		t.Fatal("the outcome shows no failure")
	case o.Class == nil || o.Class.Err != nil || strings.Join(o.Class.Done, ";") != "created":
		t.Fatalf("class outcome %+v", o.Class)
	case len(o.Homes) != 2 || o.Homes[0].Err != nil || o.Homes[0].Created == nil || o.Homes[0].Created.Name != "claim-alice":
		t.Fatalf("alice's outcome %+v", o.Homes)
	case o.Homes[1].Err == nil || o.Homes[1].Created != nil || o.Homes[1].Plan.User != "bob":
		t.Fatalf("bob's outcome %+v", o.Homes[1])
	case o.Unreachable:
		t.Fatal("unreachable, though the API server answered")
	case len(o.Migrations) != 1 || o.Migrations[0].Key != "dana" || o.Migrations[0].Step != migration.StepRetained ||
		!strings.Contains(fmt.Sprint(o.Migrations[0].Err), "stopped after delete-claim"):
		t.Fatalf("dana's outcome %+v", o.Migrations)
	}
	// Each create is the spec for its own claim and user.
	if len(f.specs) != 2 || f.specs[0].Name != "claim-alice" || f.specs[0].User != "alice" || f.specs[0].Namespace != ns ||
		f.specs[0].Size != "10Gi" || f.specs[0].Mode != claims.RWX || f.specs[0].Labels["team"] != "a" || f.specs[1].User != "bob" {
		t.Fatalf("specs %+v", f.specs)
	}
}

// Once a change finds the API server unreachable, the changes not started
// are not attempted, and the outcome says so.
func TestApply_unreachable(t *testing.T) {
	f := newApplyFake()
	down := errors.New("connection refused")
	f.refuse["claim-alice"] = down
	a := &Apply{Cluster: f, Parallel: 1, Unreachable: func(err error) bool { return errors.Is(err, down) }}
	a.Homes(context.Background(), creates("alice", "bob", "carol"), claims.Spec{Size: "1Gi"}, "")
	o := a.Outcome
	if !o.Unreachable || !errors.Is(o.Homes[0].Err, down) || errors.Is(o.Homes[0].Err, parallel.ErrNotAttempted) {
		t.Fatalf("alice: %+v", o)
	}
	for _, h := range o.Homes[1:] {
		if !errors.Is(h.Err, parallel.ErrNotAttempted) {
			t.Fatalf("%s attempted after the API server was found unreachable: %v", h.Plan.User, h.Err)
		}
	}
	if len(f.specs) != 1 {
		t.Fatalf("%d creates, want 1", len(f.specs))
	}
}

// A claims.StorageClass that cannot be made is in the outcome; Class says no claim
// may be changed.
func TestApply_classFails(t *testing.T) {
	f := newApplyFake()
	f.fakeClasses.fail = map[string]error{"create homes": errors.New("forbidden")}
	a := &Apply{Cluster: f}
	if a.Class(context.Background(), testClass(), nil) || !a.Outcome.Failed() || a.Outcome.Class.Name != "homes" {
		t.Fatalf("outcome %+v", a.Outcome.Class)
	}
}

// A move by copy out of the shared layout is run as its own migration,
// and its step reported.
func TestApply_directoryCopy(t *testing.T) {
	f := newApplyFake()
	a := &Apply{Cluster: f, Parallel: 1}
	job := aliceDirectoryCopy()
	a.Migrate(context.Background(), []Migration{{Key: "alice", DirectoryCopy: &job}}, 1)
	if len(a.Outcome.Migrations) != 1 || a.Outcome.Migrations[0].Err != nil || a.Outcome.Migrations[0].Step != migration.StepDone {
		t.Fatalf("%+v", a.Outcome.Migrations)
	}
	if c := f.dcopy.claims["claim-alice"]; c == nil || c.Copied != c.UID || f.dcopy.job != nil {
		t.Fatalf("claim %+v, job %+v", c, f.dcopy.job)
	}
}

// The shared claim is created from its spec (no user's); one made since the
// plan is kept as it is and must be usable: in the configured mode, not
// being deleted. An unusable one fails the apply before any home.
func TestApply_sharedClaim(t *testing.T) {
	spec := claims.Spec{Namespace: ns, Name: "home-nfs", Mode: claims.RWX, Size: "500Gi", Shared: true, Labels: map[string]string{"team": "a"}}
	f := newApplyFake()
	a := &Apply{Cluster: f}
	if !a.SharedClaim(context.Background(), spec) || a.Outcome.Failed() || len(f.specs) != 1 || !f.specs[0].Shared || f.specs[0].Size != "500Gi" {
		t.Fatalf("create: %+v %+v", a.Outcome.Shared, f.specs)
	}
	for name, made := range map[string]claims.Claim{
		"usable":        {Namespace: ns, Name: "home-nfs", UID: "x1", AccessModes: []string{claims.RWX}},
		"another mode":  {Namespace: ns, Name: "home-nfs", UID: "x1", AccessModes: []string{claims.RWO}},
		"being deleted": {Namespace: ns, Name: "home-nfs", UID: "x1", AccessModes: []string{claims.RWX}, Deleting: true},
	} {
		f := newApplyFake()
		f.made = map[string]claims.Claim{"home-nfs": made}
		a := &Apply{Cluster: f}
		ok := a.SharedClaim(context.Background(), spec)
		if want := name == "usable"; ok != want || a.Outcome.Failed() == want || a.Outcome.Shared.Claim == nil || a.Outcome.Shared.Claim.UID != "x1" {
			t.Errorf("%s: ok=%v %+v", name, ok, a.Outcome.Shared)
		}
		if name != "usable" && !strings.Contains(fmt.Sprint(a.Outcome.Shared.Err), "home-nfs") {
			t.Errorf("%s: %v", name, a.Outcome.Shared.Err)
		}
	}
}
