package migration

import (
	"strings"
	"testing"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/claims"
)

func TestChoose(t *testing.T) {
	longhorn := Source{Modes: []string{claims.RWO}, StorageClass: "longhorn", Bound: true, CSIDriver: "driver.longhorn.io"}
	ebs := Source{Modes: []string{claims.RWO}, StorageClass: "gp3", Bound: true, CSIDriver: "ebs.csi.aws.com"}
	intree := Source{Modes: []string{claims.RWO}, StorageClass: "old", Bound: true}
	pending := longhorn
	pending.Bound = false
	// The operator lists a driver of theirs (migration.rebind_drivers).
	nfs := Source{Modes: []string{claims.RWO}, StorageClass: "nfs", Bound: true, CSIDriver: "nfs.example.com", RebindDrivers: []string{"file.csi.azure.com", "nfs.example.com"}}
	ebsListedOther := ebs
	ebsListedOther.RebindDrivers = []string{"nfs.example.com"}
	pendingNFS := nfs
	pendingNFS.Bound = false
	longhornWithList := longhorn
	longhornWithList.RebindDrivers = []string{"nfs.example.com"}
	cases := []struct {
		name    string
		asked   Method
		src     Source
		to      string
		class   string
		want    Method
		whyPart string
	}{
		{"longhorn RWX auto", MethodAuto, longhorn, claims.RWX, "", MethodRebind, ""},
		{"longhorn RWX same class named", MethodAuto, longhorn, claims.RWX, "longhorn", MethodRebind, ""},
		{"longhorn RWX explicit rebind", MethodRebind, longhorn, claims.RWX, "", MethodRebind, ""},
		{"longhorn RWX copy asked", MethodCopy, longhorn, claims.RWX, "", MethodCopy, ""},
		{"class change needs copy", MethodAuto, longhorn, claims.RWX, "nfs", MethodCopy, ""},
		{"class change refuses rebind", MethodRebind, longhorn, claims.RWX, "nfs", "", "class changes"},
		{"ebs RWX auto copies", MethodAuto, ebs, claims.RWX, "", MethodCopy, ""},
		{"ebs RWX rebind refused", MethodRebind, ebs, claims.RWX, "", "", "not known to serve"},
		{"ebs RWOP rebinds", MethodAuto, ebs, claims.RWOP, "", MethodRebind, ""},
		{"in-tree RWOP copies", MethodAuto, intree, claims.RWOP, "", MethodCopy, ""},
		{"in-tree rebind refused", MethodRebind, intree, claims.RWOP, "", "", "not a CSI volume"},
		{"pending claim refused", MethodRebind, pending, claims.RWX, "", "", "not bound"},
		{"listed driver RWX auto rebinds", MethodAuto, nfs, claims.RWX, "", MethodRebind, ""},
		{"listed driver RWX explicit rebind", MethodRebind, nfs, claims.RWX, "nfs", MethodRebind, ""},
		{"listed driver, copy asked", MethodCopy, nfs, claims.RWX, "", MethodCopy, ""},
		{"listed driver, class change refuses rebind", MethodRebind, nfs, claims.RWX, "efs", "", "class changes"},
		{"listed driver, pending claim refused", MethodRebind, pendingNFS, claims.RWX, "", "", "not bound"},
		{"listed driver RWOP rebinds", MethodAuto, nfs, claims.RWOP, "", MethodRebind, ""},
		{"the built-in list stays with a list", MethodRebind, longhornWithList, claims.RWX, "", MethodRebind, ""},
		{"an unlisted driver is still refused, naming the attribute", MethodRebind, ebsListedOther, claims.RWX, "", "", "migration.rebind_drivers"},
		{"an unlisted driver auto copies", MethodAuto, ebsListedOther, claims.RWX, "", MethodCopy, ""},
		{"the refusal names the listed drivers", MethodRebind, ebsListedOther, claims.RWX, "", "", "driver.longhorn.io, nfs.csi.k8s.io, efs.csi.aws.com, cephfs.csi.ceph.com, nfs.example.com"},
		{"NFS is built in", MethodAuto, Source{Modes: []string{claims.RWO}, Bound: true, CSIDriver: "nfs.csi.k8s.io"}, claims.RWX, "", MethodRebind, ""},
		{"EFS is built in", MethodRebind, Source{Modes: []string{claims.RWO}, Bound: true, CSIDriver: "efs.csi.aws.com"}, claims.RWX, "", MethodRebind, ""},
		{"CephFS is built in", MethodRebind, Source{Modes: []string{claims.RWO}, Bound: true, CSIDriver: "cephfs.csi.ceph.com"}, claims.RWX, "", MethodRebind, ""},
		{"CephFS under Rook's name", MethodRebind, Source{Modes: []string{claims.RWO}, Bound: true, CSIDriver: "rook-ceph.cephfs.csi.ceph.com"}, claims.RWX, "", MethodRebind, ""},
		{"a suffix without a dot is another driver", MethodRebind, Source{Modes: []string{claims.RWO}, Bound: true, CSIDriver: "xcephfs.csi.ceph.com"}, claims.RWX, "", "", "not known to serve"},
		{"Ceph RBD is a block driver", MethodRebind, Source{Modes: []string{claims.RWO}, Bound: true, CSIDriver: "rook-ceph.rbd.csi.ceph.com"}, claims.RWX, "", "", "not known to serve"},
		{"Azure Files is not built in", MethodAuto, Source{Modes: []string{claims.RWO}, Bound: true, CSIDriver: "file.csi.azure.com"}, claims.RWX, "", MethodCopy, ""},
		{"Filestore is not built in", MethodRebind, Source{Modes: []string{claims.RWO}, Bound: true, CSIDriver: "filestore.csi.storage.gke.io"}, claims.RWX, "", "", "migration.rebind_drivers"},
		{"Azure Files once listed", MethodRebind, Source{Modes: []string{claims.RWO}, Bound: true, CSIDriver: "file.csi.azure.com", RebindDrivers: []string{"file.csi.azure.com"}}, claims.RWX, "", MethodRebind, ""},
		{"RWX to RWO is not a rebind", MethodRebind, Source{Modes: []string{claims.RWX}, Bound: true, CSIDriver: "driver.longhorn.io"}, claims.RWO, "", "", "not a rebind"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, why := Choose(tc.asked, tc.src, tc.to, tc.class)
			if got != tc.want {
				t.Fatalf("Choose = %q (%s), want %q", got, why, tc.want)
			}
			if tc.whyPart != "" && !strings.Contains(why, tc.whyPart) {
				t.Fatalf("why = %q, want it to mention %q", why, tc.whyPart)
			}
			if tc.want != "" && why != "" {
				t.Fatalf("a chosen method comes with no refusal, got %q", why)
			}
		})
	}
}

func TestRecordRoundTrip(t *testing.T) {
	class := "longhorn"
	r := Record{Step: StepRetained, User: "alice@example.org", Claim: "claim-alice", Namespace: "jhub", From: []string{claims.RWO}, To: claims.RWX,
		ReclaimPolicy: "Delete", StorageClass: &class, Requested: "10Gi", Labels: map[string]string{"a": "b"}, Annotations: map[string]string{"c": "d"}}
	got, err := DecodeRecord(r.Encode())
	if err != nil {
		t.Fatal(err)
	}
	if got.Encode() != r.Encode() || *got.StorageClass != "longhorn" || got.Labels["a"] != "b" {
		t.Fatalf("round trip changed the record: %+v", got)
	}
	for _, bad := range []string{"", "{", `{"claim":"x"}`, `{"claim":"x","namespace":"y"}`} {
		if _, err := DecodeRecord(bad); err == nil {
			t.Errorf("DecodeRecord(%q) accepted", bad)
		}
	}
}

// TestNextRebind_walk follows a rebind the way the cluster changes under it,
// and checks that at every point the decision is the next step, so that an
// apply stopped anywhere resumes there.
func TestNextRebind_walk(t *testing.T) {
	rec := &Record{Step: StepRetained, Claim: "claim-a", Namespace: "jhub", To: claims.RWX, ReclaimPolicy: "Delete"}
	old := &Claim{UID: "u1", Modes: []string{claims.RWO}, Phase: "Bound", VolumeName: "pv1"}
	steps := []struct {
		name string
		c    *Claim
		v    Volume
		want Op
	}{
		{"bound, not started", old, Volume{Name: "pv1", Phase: "Bound", ReclaimPolicy: "Delete", ClaimRefName: "claim-a", ClaimRefNS: "jhub", ClaimRefUID: "u1", Modes: []string{claims.RWO}}, OpRetain},
		{"retained", old, Volume{Name: "pv1", Phase: "Bound", ReclaimPolicy: "Retain", ClaimRefName: "claim-a", ClaimRefNS: "jhub", ClaimRefUID: "u1", Modes: []string{claims.RWO}, Record: rec}, OpDeleteClaim},
		{"claim being deleted", &Claim{UID: "u1", Modes: []string{claims.RWO}, Phase: "Bound", VolumeName: "pv1", Deleting: true},
			Volume{Name: "pv1", Phase: "Bound", ReclaimPolicy: "Retain", ClaimRefName: "claim-a", ClaimRefNS: "jhub", ClaimRefUID: "u1", Modes: []string{claims.RWO}, Record: rec}, OpDeleteClaim},
		// The new claim is created at once, whether the binder has released the volume or not.
		{"claim gone, binder not yet", nil, Volume{Name: "pv1", Phase: "Bound", ReclaimPolicy: "Retain", ClaimRefName: "claim-a", ClaimRefNS: "jhub", ClaimRefUID: "u1", Modes: []string{claims.RWO}, Record: rec}, OpCreateClaim},
		{"claim gone, released", nil, Volume{Name: "pv1", Phase: "Released", ReclaimPolicy: "Retain", ClaimRefName: "claim-a", ClaimRefNS: "jhub", ClaimRefUID: "u1", Modes: []string{claims.RWO}, Record: rec}, OpCreateClaim},
		{"claim gone after the volume was given to it", nil, Volume{Name: "pv1", Phase: "Bound", ReclaimPolicy: "Retain", ClaimRefName: "claim-a", ClaimRefNS: "jhub", ClaimRefUID: "u2", Modes: []string{claims.RWX}, Record: rec}, OpCreateClaim},
		{"new claim pending, volume still the old claim's", &Claim{UID: "u2", Modes: []string{claims.RWX}, Phase: "Pending", VolumeName: "pv1"},
			Volume{Name: "pv1", Phase: "Bound", ReclaimPolicy: "Retain", ClaimRefName: "claim-a", ClaimRefNS: "jhub", ClaimRefUID: "u1", Modes: []string{claims.RWO}, Record: rec}, OpReserve},
		{"new claim pending, volume released", &Claim{UID: "u2", Modes: []string{claims.RWX}, Phase: "Pending", VolumeName: "pv1"},
			Volume{Name: "pv1", Phase: "Released", ReclaimPolicy: "Retain", ClaimRefName: "claim-a", ClaimRefNS: "jhub", ClaimRefUID: "u1", Modes: []string{claims.RWO}, Record: rec}, OpReserve},
		{"new claim pending, volume given to it", &Claim{UID: "u2", Modes: []string{claims.RWX}, Phase: "Pending", VolumeName: "pv1"},
			Volume{Name: "pv1", Phase: "Bound", ReclaimPolicy: "Retain", ClaimRefName: "claim-a", ClaimRefNS: "jhub", ClaimRefUID: "u2", Modes: []string{claims.RWX}, Record: rec}, OpWaitBound},
		{"new claim bound", &Claim{UID: "u2", Modes: []string{claims.RWX}, Phase: "Bound", VolumeName: "pv1"},
			Volume{Name: "pv1", Phase: "Bound", ReclaimPolicy: "Retain", ClaimRefName: "claim-a", ClaimRefNS: "jhub", ClaimRefUID: "u2", Modes: []string{claims.RWX}, Record: rec}, OpRestore},
		{"restored", &Claim{UID: "u2", Modes: []string{claims.RWX}, Phase: "Bound", VolumeName: "pv1"},
			Volume{Name: "pv1", Phase: "Bound", ReclaimPolicy: "Delete", ClaimRefName: "claim-a", ClaimRefNS: "jhub", ClaimRefUID: "u2", Modes: []string{claims.RWX}}, OpDone},
		{"record but policy lost", old, Volume{Name: "pv1", Phase: "Bound", ReclaimPolicy: "Delete", ClaimRefUID: "u1", Modes: []string{claims.RWO}, Record: rec}, OpRetain},
	}
	seen := map[Step]bool{}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			v := s.v
			got, err := NextRebind(s.c, &v, claims.RWX)
			if err != nil {
				t.Fatal(err)
			}
			if got != s.want {
				t.Fatalf("NextRebind = %s, want %s", got, s.want)
			}
			seen[StepOf(got)] = true
		})
	}
	for _, st := range []Step{StepPending, StepRetained, StepReleased, StepRebound, StepDone} {
		if !seen[st] {
			t.Errorf("the walk never reached step %s", st)
		}
	}
}

// TestNextRebind_refuses: what no step of the provider produces stops the
// migration of that user, naming where the data is.
func TestNextRebind_refuses(t *testing.T) {
	rec := &Record{Claim: "claim-a", Namespace: "jhub", To: claims.RWX}
	cases := []struct {
		name string
		c    *Claim
		v    Volume
		want string
	}{
		{"no record, no claim", nil, Volume{Name: "pv1", Phase: "Released"}, "no migration record"},
		{"claim bound elsewhere", &Claim{UID: "u1", Modes: []string{claims.RWO}, Phase: "Bound", VolumeName: "pv9"},
			Volume{Name: "pv1", Phase: "Bound", ClaimRefUID: "u1"}, "not bound to volume pv1"},
		{"claim recreated by the hub meanwhile", &Claim{UID: "u3", Modes: []string{claims.RWO}, Phase: "Bound", VolumeName: "pv7"},
			Volume{Name: "pv1", Phase: "Released", ReclaimPolicy: "Retain", ClaimRefName: "claim-a", ClaimRefNS: "jhub", ClaimRefUID: "u1", Modes: []string{claims.RWO}, Record: rec}, "created by someone else"},
		{"volume taken by another claim", nil,
			Volume{Name: "pv1", Phase: "Bound", ReclaimPolicy: "Retain", ClaimRefName: "other", ClaimRefNS: "x", ClaimRefUID: "u9", Modes: []string{claims.RWX}, Record: rec}, "names claim x/other"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v := tc.v
			op, err := NextRebind(tc.c, &v, claims.RWX)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("NextRebind = %s, %v; want error mentioning %q", op, err, tc.want)
			}
		})
	}
}

// A claim being expanded is never rebound: before the volume grew, the new
// claim would ask for more than the volume holds and never bind; after, its
// filesystem would never be grown (the node grows it at the next mount of
// the claim that asked). Nothing is done before the retain; after it, the
// claim is not deleted (unless it is already going).
func TestNextRebind_resizing(t *testing.T) {
	rec := &Record{Step: StepRetained, Claim: "claim-a", Namespace: "jhub", To: claims.RWX, ReclaimPolicy: "Delete"}
	resizing := &Claim{UID: "u1", Modes: []string{claims.RWO}, Phase: "Bound", VolumeName: "pv1", Resizing: true}
	bound := Volume{Name: "pv1", Phase: "Bound", ReclaimPolicy: "Delete", ClaimRefName: "claim-a", ClaimRefNS: "jhub", ClaimRefUID: "u1", Modes: []string{claims.RWO}}
	retained := bound
	retained.ReclaimPolicy, retained.Record = "Retain", rec
	for name, v := range map[string]Volume{"not started": bound, "retained": retained} {
		op, err := NextRebind(resizing, &v, claims.RWX)
		if err == nil || !strings.Contains(err.Error(), "being expanded") || !strings.Contains(err.Error(), "pv1") {
			t.Errorf("%s: NextRebind = %s, %v; want the rebind refused", name, op, err)
		}
	}
	going := *resizing
	going.Deleting = true
	if op, err := NextRebind(&going, &retained, claims.RWX); err != nil || op != OpDeleteClaim {
		t.Errorf("a claim already being deleted: %s, %v; want its deletion waited for", op, err)
	}
}
