package migration

// Split, zero copy: one user's home moves from a directory of the shared
// claim (the shared layout) to a claim of its own, by a new volume on that
// very directory. Nothing is copied or deleted; the directory stays on the
// shared claim, and both mount the same files.
//
//	prepare       a Job makes the directory if it is missing (a volume on
//	              a missing directory would not mount), as the layout's init
//	              container does
//	claim         the user's claim, naming the volume to come, with
//	              KubeSpawner's labels and the record (Pending)
//	volume        a PersistentVolume on the directory: reclaim policy
//	              Retain (deleting it must never delete the directory), a
//	              volume handle of its own (kubernetes/kubernetes#91556), and
//	              a claimRef to the user's claim by namespace, name and UID,
//	              so that the binder gives it to no other claim of that name
//	bound         the binder bound them: the hub mounts the claim from the
//	              user's next spawn
//
// The record is an annotation on both objects; the volume's name is
// derived from the claim's, so an apply stopped anywhere finds them again.
// Neither is ever taken over when its record is not this split's.

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"path"
	"strings"
)

// SplitAnnotation holds a SplitRecord on the split's volume and claim.
const SplitAnnotation = "jupyter-infra.github.io/home-split"

// SplitRecord says which directory of which shared claim a split volume
// serves, and for which user's claim.
type SplitRecord struct {
	User      string `json:"user"`
	Namespace string `json:"namespace"`
	Claim     string `json:"claim"`      // the user's new claim
	Shared    string `json:"shared"`     // the shared claim
	SharedUID string `json:"shared_uid"` // its UID when the split began
	Directory string `json:"directory"`  // the user's directory in it
	Volume    string `json:"volume"`     // the split's volume; "" for a copy
	// Method is MethodDirectoryCopy for a move by copy (the claim is a
	// new one of the configured class, not bound to a volume on the
	// directory); "" for the zero-copy split.
	Method Method `json:"method,omitempty"`
}

// SplitCopiedAnnotation on the claim of a move by copy is the claim's UID,
// written once the copy was verified: from then on the claim is the
// user's home and the hub mounts it (before, the hub refuses the spawn).
const SplitCopiedAnnotation = "jupyter-infra.github.io/home-split-copied"

// Encode is the record as its annotation holds it.
func (r SplitRecord) Encode() string {
	b, _ := json.Marshal(r)
	return string(b)
}

// DecodeSplitRecord reads a record; an error when it is not one.
func DecodeSplitRecord(s string) (SplitRecord, error) {
	var r SplitRecord
	if err := json.Unmarshal([]byte(s), &r); err != nil {
		return r, fmt.Errorf("the split record %q cannot be read: %w", s, err)
	}
	return r, nil
}

// SplitVolumeName is the name of the volume of namespace/claim's split.
func SplitVolumeName(namespace, claim string) string {
	sum := sha256.Sum256([]byte(namespace + "/" + claim))
	return "jupyter-home-" + hex.EncodeToString(sum[:])[:20]
}

// VolumeSource is what a volume's data is, as much as a split needs of it.
type VolumeSource struct {
	HostPath string // hostPath.path
	NFS      *NFSSource
	CSI      *CSISource
}

// NFSSource is an in-tree NFS volume.
type NFSSource struct{ Server, Path string }

// CSISource is a CSI volume.
type CSISource struct {
	Driver     string
	Handle     string
	Attributes map[string]string
}

// Drivers whose volumes can be a directory of another of their volumes.
const (
	driverNFS = "nfs.csi.k8s.io"
	driverEFS = "efs.csi.aws.com"
)

// SplitSource is the source of a volume on directory dir of the shared
// volume, whose source is shared: the same file system, one directory
// further down, with a volume handle of its own. An error says why a
// volume of that kind cannot be split (the home must then be copied).
//
//   - a host path, and in-tree NFS: the path, one directory further;
//   - nfs.csi.k8s.io: the volume attributes server, share and subDir (the
//     driver mounts share/subDir; csi-driver-nfs's static volumes);
//   - efs.csi.aws.com: the handle "fs-ID:PATH" (the driver mounts PATH of the
//     file system; a handle with an access point is refused: its path is
//     relative to the access point's root, not checked here).
func SplitSource(shared VolumeSource, dir string) (VolumeSource, error) {
	if dir == "" || path.IsAbs(dir) || path.Clean(dir) != dir || dir == "." || strings.HasPrefix(dir, "../") || dir == ".." {
		return VolumeSource{}, fmt.Errorf("directory %q is not a plain relative path", dir)
	}
	switch {
	case shared.HostPath != "":
		return VolumeSource{HostPath: path.Join(shared.HostPath, dir)}, nil
	case shared.NFS != nil:
		return VolumeSource{NFS: &NFSSource{Server: shared.NFS.Server, Path: path.Join(cmpOr(shared.NFS.Path, "/"), dir)}}, nil
	case shared.CSI == nil:
		return VolumeSource{}, fmt.Errorf("the shared claim's volume is neither a host path, NFS nor CSI")
	}
	c := shared.CSI
	out := &CSISource{Driver: c.Driver, Handle: c.Handle + "#home/" + dir, Attributes: map[string]string{}}
	switch c.Driver {
	case driverNFS:
		// The driver reads its volume context's keys case-insensitively
		// (csi-driver-nfs, NodePublishVolume): server, share, subdir.
		var server, share, sub string
		for k, v := range c.Attributes {
			switch strings.ToLower(k) {
			case "server":
				server = v
			case "share":
				share = v
			case "subdir":
				sub = v
			case "mountoptions":
				out.Attributes[k] = v
			}
		}
		if server == "" || share == "" || strings.Contains(sub, "${") {
			return VolumeSource{}, fmt.Errorf("the %s volume %s has no server and share, or a templated subdir, in its attributes", c.Driver, c.Handle)
		}
		out.Attributes["server"], out.Attributes["share"], out.Attributes["subDir"] = server, share, path.Join(sub, dir)
		// The driver would chmod the mounted root, here the user's
		// directory, to the shared volume's mountPermissions: never.
		out.Attributes["mountPermissions"] = "0"
	case driverEFS:
		fs, p, ap, err := efsHandle(c.Handle)
		switch {
		case err != nil:
			return VolumeSource{}, err
		case ap != "":
			return VolumeSource{}, fmt.Errorf("the %s volume %s mounts access point %s: a directory of it cannot be its own volume here", c.Driver, c.Handle, ap)
		}
		out.Handle = fs + ":" + path.Join(cmpOr(p, "/"), dir)
		for k, v := range c.Attributes { // how to mount (encryptInTransit, ...)
			out.Attributes[k] = v
		}
	default:
		return VolumeSource{}, fmt.Errorf("volumes of CSI driver %s cannot be a directory of another volume as far as the provider knows (it splits host paths, NFS, %s and %s)", c.Driver, driverNFS, driverEFS)
	}
	return VolumeSource{CSI: out}, nil
}

// efsHandle splits an EFS volume handle "fs-ID[:PATH[:ACCESS-POINT]]".
func efsHandle(h string) (fs, p, ap string, err error) {
	parts := strings.Split(h, ":")
	if len(parts) > 3 || !strings.HasPrefix(parts[0], "fs-") {
		return "", "", "", fmt.Errorf("%q is not an EFS volume handle (fs-ID[:PATH[:ACCESS-POINT]])", h)
	}
	fs = parts[0]
	if len(parts) > 1 {
		p = parts[1]
	}
	if len(parts) > 2 {
		ap = parts[2]
	}
	return fs, p, ap, nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// SplitVolume is the split's volume as the cluster shows it.
type SplitVolume struct {
	Record       *SplitRecord // nil when the volume carries none
	ClaimRefName string
	ClaimRefUID  string
	Phase        string
}

// SplitClaim is the user's claim as the cluster shows it.
type SplitClaim struct {
	UID        string
	Record     *SplitRecord // nil when the claim carries none
	Phase      string
	VolumeName string
	// Copied is its SplitCopiedAnnotation ("" when none): a move by copy
	// is done when it is the claim's UID.
	Copied   string
	Deleting bool // it has a deletion timestamp
}

// Operations of a split.
const (
	OpPrepareDirectory Op = "prepare-directory"
	OpCreateVolume     Op = "create-volume"
	OpCreateSplitClaim Op = "create-split-claim"
	OpWaitSplitBound   Op = "wait-split-bound"
)

// SplitState is what a split decides its next operation from: what the
// cluster shows now, and what this run did.
type SplitState struct {
	Volume *SplitVolume // the volume of rec.Volume; nil when none
	Claim  *SplitClaim  // the claim rec.Claim; nil when none
	// Prepared: this run made sure the directory exists (it must before
	// the claim is made).
	Prepared bool
}

// NextSplit decides the next operation of the split rec from s. A volume
// or claim of rec's names whose record is not rec's, or a volume reserved
// for another claim (by name or UID), is never taken over: an error names
// it and what to do.
func NextSplit(rec SplitRecord, s SplitState) (Op, error) {
	v, c := s.Volume, s.Claim
	ours := func(r *SplitRecord) bool { return r != nil && *r == rec }
	switch {
	case c != nil && !ours(c.Record):
		return "", fmt.Errorf("claim %s/%s exists and was not made by this move from directory %q of %s: it is never taken over. "+
			"If it is an empty claim made by mistake, delete it and apply again; if it holds the user's files, it is their home: leave the user out of the move",
			rec.Namespace, rec.Claim, rec.Directory, rec.Shared)
	case v != nil && !ours(v.Record):
		return "", fmt.Errorf("volume %s exists and was not made by this move of %s/%s: it is never taken over. Find out what it is before deleting it", rec.Volume, rec.Namespace, rec.Claim)
	case v != nil && v.ClaimRefName != rec.Claim:
		return "", fmt.Errorf("volume %s is reserved for claim %s, not %s/%s", rec.Volume, v.ClaimRefName, rec.Namespace, rec.Claim)
	case v != nil && (c == nil || v.ClaimRefUID != c.UID):
		return "", fmt.Errorf("volume %s is reserved for another claim of the name %s/%s (UID %s), which is gone or was made again. "+
			"The user's files are in directory %q of %s; delete the volume (its reclaim policy is Retain: the directory stays) and apply again", rec.Volume, rec.Namespace, rec.Claim, v.ClaimRefUID, rec.Directory, rec.Shared)
	case v == nil && !s.Prepared:
		// Also when the claim exists (a run stopped before the volume): the
		// Job checks again that no symbolic link leads elsewhere.
		return OpPrepareDirectory, nil
	case c == nil:
		return OpCreateSplitClaim, nil
	case v == nil:
		return OpCreateVolume, nil
	case c.Phase != "Bound" || c.VolumeName != rec.Volume:
		return OpWaitSplitBound, nil
	}
	return OpDone, nil
}

// Steps of a split, as migration_status shows them: the step reached when
// an apply stopped before the next operation.
const (
	StepDirectoryReady Step = "directory-ready"
	StepVolumeCreated  Step = "volume-created"
	StepClaimCreated   Step = "claim-created"
)

// SplitStepOf is the step a split has reached when op is next.
func SplitStepOf(op Op) Step {
	switch op {
	case OpCreateSplitClaim:
		return StepDirectoryReady
	case OpCreateVolume:
		return StepClaimCreated
	case OpWaitSplitBound:
		return StepVolumeCreated
	case OpDone:
		return StepDone
	}
	return StepPending
}
