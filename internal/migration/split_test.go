package migration

import (
	"strings"
	"testing"
)

func TestSplitSource(t *testing.T) {
	for name, c := range map[string]struct {
		shared VolumeSource
		want   VolumeSource
	}{
		"host path": {VolumeSource{HostPath: "/tmp/hostpath_pv/abc"}, VolumeSource{HostPath: "/tmp/hostpath_pv/abc/home/alice"}},
		"nfs":       {VolumeSource{NFS: &NFSSource{Server: "10.0.0.5", Path: "/export"}}, VolumeSource{NFS: &NFSSource{Server: "10.0.0.5", Path: "/export/home/alice"}}},
		"nfs csi, dynamic volume (subdir lower case)": {
			VolumeSource{CSI: &CSISource{Driver: "nfs.csi.k8s.io", Handle: "nfs.example#/export#pvc-1##", Attributes: map[string]string{"server": "nfs.example", "share": "/export", "subdir": "pvc-1", "csi.storage.k8s.io/pvc/name": "home-nfs"}}},
			VolumeSource{CSI: &CSISource{Driver: "nfs.csi.k8s.io", Handle: "nfs.example#/export#pvc-1###home/home/alice", Attributes: map[string]string{"server": "nfs.example", "share": "/export", "subDir": "pvc-1/home/alice", "mountPermissions": "0"}}},
		},
		"efs": {
			VolumeSource{CSI: &CSISource{Driver: "efs.csi.aws.com", Handle: "fs-0123:/homes"}},
			VolumeSource{CSI: &CSISource{Driver: "efs.csi.aws.com", Handle: "fs-0123:/homes/home/alice", Attributes: map[string]string{}}},
		},
		"efs, whole file system": {
			VolumeSource{CSI: &CSISource{Driver: "efs.csi.aws.com", Handle: "fs-0123"}},
			VolumeSource{CSI: &CSISource{Driver: "efs.csi.aws.com", Handle: "fs-0123:/home/alice", Attributes: map[string]string{}}},
		},
	} {
		got, err := SplitSource(c.shared, "home/alice")
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if g, w := describeSource(got), describeSource(c.want); g != w {
			t.Errorf("%s:\n got %s\nwant %s", name, g, w)
		}
	}
	for name, c := range map[string]struct {
		shared VolumeSource
		dir    string
		why    string
	}{
		"efs access point": {VolumeSource{CSI: &CSISource{Driver: "efs.csi.aws.com", Handle: "fs-0123::fsap-9"}}, "alice", "access point"},
		"block volumes":    {VolumeSource{CSI: &CSISource{Driver: "ebs.csi.aws.com", Handle: "vol-1"}}, "alice", "cannot be a directory"},
		"templated subdir": {VolumeSource{CSI: &CSISource{Driver: "nfs.csi.k8s.io", Handle: "h", Attributes: map[string]string{"server": "s", "share": "/", "subDir": "${pvc.metadata.name}"}}}, "alice", "templated"},
		"up and out":       {VolumeSource{HostPath: "/srv"}, "../etc", "plain relative"},
		"absolute":         {VolumeSource{HostPath: "/srv"}, "/etc", "plain relative"},
		"not clean":        {VolumeSource{HostPath: "/srv"}, "home//alice", "plain relative"},
	} {
		if _, err := SplitSource(c.shared, c.dir); err == nil || !strings.Contains(err.Error(), c.why) {
			t.Errorf("%s: %v, want an error about %q", name, err, c.why)
		}
	}
	// Every split volume's handle is its own (kubernetes/kubernetes#91556).
	shared := VolumeSource{CSI: &CSISource{Driver: "nfs.csi.k8s.io", Handle: "h", Attributes: map[string]string{"server": "s", "share": "/"}}}
	a, _ := SplitSource(shared, "alice")
	b, _ := SplitSource(shared, "bob")
	if a.CSI.Handle == b.CSI.Handle || a.CSI.Handle == "h" {
		t.Errorf("handles %q and %q", a.CSI.Handle, b.CSI.Handle)
	}
}

func describeSource(s VolumeSource) string {
	var b strings.Builder
	b.WriteString("hostPath=" + s.HostPath)
	if s.NFS != nil {
		b.WriteString(" nfs=" + s.NFS.Server + ":" + s.NFS.Path)
	}
	if s.CSI != nil {
		b.WriteString(" csi=" + s.CSI.Driver + " handle=" + s.CSI.Handle)
		for _, k := range []string{"server", "share", "subDir", "subdir", "mountPermissions"} {
			if v, ok := s.CSI.Attributes[k]; ok {
				b.WriteString(" " + k + "=" + v)
			}
		}
	}
	return b.String()
}

func TestNextSplit(t *testing.T) {
	rec := SplitRecord{User: "alice", Namespace: "hub", Claim: "claim-alice", Shared: "home-nfs", SharedUID: "s1", Directory: "alice", Volume: SplitVolumeName("hub", "claim-alice")}
	other := rec
	other.Directory = "bob"
	mine := &SplitVolume{Record: &rec, ClaimRefName: "claim-alice", ClaimRefUID: "c1"}
	pending := &SplitClaim{UID: "c1", Record: &rec, Phase: "Pending", VolumeName: rec.Volume}
	for name, c := range map[string]struct {
		v        *SplitVolume
		c        *SplitClaim
		prepared bool
		want     Op
		err      string
	}{
		"nothing yet":    {nil, nil, false, OpPrepareDirectory, ""},
		"directory made": {nil, nil, true, OpCreateSplitClaim, ""},
		"claim made":     {nil, pending, true, OpCreateVolume, ""},
		"claim made, a run stopped before the volume": {nil, pending, false, OpPrepareDirectory, ""},
		"volume made":                          {mine, pending, false, OpWaitSplitBound, ""},
		"bound":                                {mine, &SplitClaim{UID: "c1", Record: &rec, Phase: "Bound", VolumeName: rec.Volume}, false, OpDone, ""},
		"a claim made meanwhile":               {nil, &SplitClaim{UID: "k1", Phase: "Pending"}, true, "", "never taken over"},
		"a claim made meanwhile, volume there": {mine, &SplitClaim{UID: "k1", Phase: "Bound"}, true, "", "never taken over"},
		"a volume of another split":            {&SplitVolume{Record: &other}, pending, true, "", "never taken over"},
		"a volume of no split":                 {&SplitVolume{}, nil, true, "", "never taken over"},
		"the volume reserved for another UID":  {&SplitVolume{Record: &rec, ClaimRefName: "claim-alice", ClaimRefUID: "old"}, pending, false, "", "made again"},
		"the volume left, its claim gone":      {mine, nil, true, "", "is gone"},
		"the volume for another name":          {&SplitVolume{Record: &rec, ClaimRefName: "claim-bob", ClaimRefUID: "c1"}, pending, false, "", "reserved for claim claim-bob"},
	} {
		op, err := NextSplit(rec, SplitState{Volume: c.v, Claim: c.c, Prepared: c.prepared})
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: %s, %v; want an error about %q", name, op, err, c.err)
			}
			continue
		}
		if err != nil || op != c.want {
			t.Errorf("%s: %s, %v; want %s", name, op, err, c.want)
		}
	}
	r, err := DecodeSplitRecord(rec.Encode())
	if err != nil || r != rec {
		t.Errorf("record round trip: %+v %v", r, err)
	}
}
