package execute

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/claims"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/migration"
)

// splitFake is the cluster a split sees, in memory: the shared claim's
// volume, the directories made, the split's volume and claim, and a binder
// that binds a claim to the volume reserved for it.
type splitFake struct {
	shared    migration.VolumeSource
	sharedUID string
	dirs      map[string]bool
	vols      map[string]*migration.SplitVolume
	sources   map[string]migration.VolumeSource
	claims    map[string]*migration.SplitClaim
	calls     []string
}

func newSplitFake() *splitFake {
	return &splitFake{shared: migration.VolumeSource{HostPath: "/srv/homes"}, sharedUID: "s1", dirs: map[string]bool{},
		vols: map[string]*migration.SplitVolume{}, sources: map[string]migration.VolumeSource{}, claims: map[string]*migration.SplitClaim{}}
}

func (f *splitFake) SharedSource(context.Context, string, string) (migration.VolumeSource, string, error) {
	return f.shared, f.sharedUID, nil
}

func (f *splitFake) PrepareDirectory(_ context.Context, job migration.Split) error {
	f.calls = append(f.calls, "prepare "+job.Directory)
	f.dirs[job.Directory] = true
	return nil
}

func (f *splitFake) SplitVolume(_ context.Context, name string) (*migration.SplitVolume, error) {
	if v := f.vols[name]; v != nil {
		c := *v
		return &c, nil
	}
	return nil, nil
}

func (f *splitFake) CreateSplitVolume(_ context.Context, rec migration.SplitRecord, src migration.VolumeSource, _ claims.Spec, claimUID string) error {
	f.calls = append(f.calls, "volume "+rec.Volume)
	if f.vols[rec.Volume] != nil {
		return claims.ErrExists
	}
	r := rec
	f.vols[rec.Volume] = &migration.SplitVolume{Record: &r, ClaimRefName: rec.Claim, ClaimRefUID: claimUID, Phase: "Available"}
	f.sources[rec.Volume] = src
	return nil
}

func (f *splitFake) SplitClaim(_ context.Context, _, name string) (*migration.SplitClaim, error) {
	if c := f.claims[name]; c != nil {
		cc := *c
		return &cc, nil
	}
	return nil, nil
}

func (f *splitFake) CreateSplitClaim(_ context.Context, rec migration.SplitRecord, spec claims.Spec) error {
	f.calls = append(f.calls, "claim "+spec.Name)
	if f.claims[spec.Name] != nil {
		return claims.ErrExists
	}
	r := rec
	f.claims[spec.Name] = &migration.SplitClaim{UID: "c-" + spec.Name, Record: &r, Phase: "Pending", VolumeName: rec.Volume}
	return nil
}

func (f *splitFake) WaitBound(_ context.Context, _, name string) error {
	c := f.claims[name]
	for vname, v := range f.vols {
		if v.ClaimRefName == name && c != nil && v.ClaimRefUID == c.UID {
			v.Phase = "Bound"
			c.Phase, c.VolumeName = "Bound", vname
			return nil
		}
	}
	return errors.New("timed out")
}

func aliceSplit() migration.Split {
	return migration.Split{User: "alice", Shared: "home-nfs", Directory: "home/alice", UID: 1000, GID: 100, Mode: "0700", Image: "busybox",
		Spec: claims.Spec{Namespace: "hub", Name: "claim-alice", User: "alice", Mode: "ReadWriteMany", Size: "10Gi"}}
}

// A split makes the directory, a volume on it and the claim, and ends
// bound; stopped after any step, the next run goes on from there and
// never makes anything twice.
func TestSplit_runsAndResumes(t *testing.T) {
	for stop := 0; stop <= 4; stop++ {
		f := newSplitFake()
		n := 0
		r := SplitRunner{Cluster: f, AfterStep: func(string, migration.Op) error {
			n++
			if n == stop {
				return errors.New("stopped")
			}
			return nil
		}}
		if _, err := r.Split(context.Background(), aliceSplit()); stop > 0 && stop < 4 && err == nil {
			t.Fatalf("stop %d: not stopped", stop)
		}
		r.AfterStep = nil
		step, err := r.Split(context.Background(), aliceSplit())
		if err != nil || step != migration.StepDone {
			t.Fatalf("stop %d: %s %v", stop, step, err)
		}
		v := f.vols[migration.SplitVolumeName("hub", "claim-alice")]
		if v == nil || f.claims["claim-alice"].VolumeName == "" || f.sources[f.claims["claim-alice"].VolumeName].HostPath != "/srv/homes/home/alice" {
			t.Fatalf("stop %d: volume %+v, claim %+v", stop, v, f.claims["claim-alice"])
		}
		seen := map[string]bool{}
		for _, c := range f.calls {
			if !strings.HasPrefix(c, "prepare") && seen[c] {
				t.Errorf("stop %d: %s twice: %v", stop, c, f.calls)
			}
			seen[c] = true
		}
	}
}

// A claim of the user's claim name made by someone else (KubeSpawner, an
// operator) is never taken over; nor is a volume of the split's name that
// is not this split's (the shared claim was made again: another UID).
func TestSplit_neverTakesOver(t *testing.T) {
	f := newSplitFake()
	f.claims["claim-alice"] = &migration.SplitClaim{UID: "k1", Phase: "Bound", VolumeName: "pv-empty"}
	if _, err := (SplitRunner{Cluster: f}).Split(context.Background(), aliceSplit()); err == nil || !strings.Contains(err.Error(), "never taken over") {
		t.Fatalf("a claim made meanwhile: %v", err)
	}
	if len(f.vols) != 0 {
		t.Fatalf("a volume was made for a claim that is not the move's")
	}
	f = newSplitFake()
	if _, err := (SplitRunner{Cluster: f, AfterStep: func(_ string, op migration.Op) error {
		if op == migration.OpCreateSplitClaim {
			return errors.New("stopped")
		}
		return nil
	}}).Split(context.Background(), aliceSplit()); err == nil {
		t.Fatal("not stopped")
	}
	f.sharedUID = "s2" // the shared claim was deleted and made again
	if _, err := (SplitRunner{Cluster: f}).Split(context.Background(), aliceSplit()); err == nil || !strings.Contains(err.Error(), "never taken over") {
		t.Fatalf("a volume of an earlier shared claim: %v", err)
	}
	if len(f.vols) != 0 {
		t.Fatalf("a volume was made for a claim of another shared claim's move")
	}
}

// A shared claim whose volume cannot be split fails before anything is made.
func TestSplit_refusesWhatCannotBeSplit(t *testing.T) {
	f := newSplitFake()
	f.shared = migration.VolumeSource{CSI: &migration.CSISource{Driver: "ebs.csi.aws.com", Handle: "vol-1"}}
	if _, err := (SplitRunner{Cluster: f}).Split(context.Background(), aliceSplit()); err == nil || !strings.Contains(err.Error(), "without a copy") || len(f.calls) != 0 {
		t.Fatalf("%v, calls %v", err, f.calls)
	}
}
