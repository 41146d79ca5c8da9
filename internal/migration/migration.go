package migration

import (
	"encoding/json"

	"fmt"
	"slices"
	"strings"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/claims"
)

// Method is how a claim is migrated.
type Method string

const (
	MethodAuto   Method = "auto"   // rebind where the backend can, else copy
	MethodRebind Method = "rebind" // the same volume, served in the new mode
	MethodCopy   Method = "copy"   // a new claim, the data copied by a Job
	// MethodSplit moves a home from a directory of the shared claim to a
	// claim of its own on a volume on that directory (split.go): zero copy.
	MethodSplit Method = "split"
	// MethodDirectoryCopy moves a home from a directory of the shared claim
	// to a new claim of the configured class by a copy (directory_copy.go),
	// for shared volumes whose directories cannot be volumes of their own.
	MethodDirectoryCopy Method = "directory-copy"
)

// Step is a migration's progress.
type Step string

const (
	StepPending  Step = "pending"
	StepRetained Step = "retained"
	StepReleased Step = "released"
	StepRebound  Step = "rebound"
	StepDone     Step = "done"
)

// Metadata the provider writes while a migration is in progress.
const (
	// RecordAnnotation on a volume holds its Record (JSON).
	RecordAnnotation = "jupyter-infra.github.io/home-migration"
	// NamespaceLabel on a volume names the namespace of the claim being
	// migrated, so that one label-selected List finds every migration in
	// progress, including those whose claim is deleted.
	NamespaceLabel = "jupyter-infra.github.io/home-migration-namespace"
	// MigratedAnnotation on a rebound claim says where it came from; the
	// hub refuses a spawn on such a claim until it is Bound.
	MigratedAnnotation = "jupyter-infra.github.io/migrated"
)

// Record is what a volume carries while its claim is rebound: enough to
// recreate the claim exactly and to restore the volume.
type Record struct {
	Step          Step              `json:"step"`
	User          string            `json:"user"`
	Claim         string            `json:"claim"`
	Namespace     string            `json:"namespace"`
	From          []string          `json:"from"`
	To            string            `json:"to"`
	ReclaimPolicy string            `json:"reclaimPolicy"` // to restore
	StorageClass  *string           `json:"storageClassName"`
	Requested     string            `json:"requested"`
	VolumeMode    string            `json:"volumeMode,omitempty"`
	Labels        map[string]string `json:"labels,omitempty"`
	Annotations   map[string]string `json:"annotations,omitempty"`
}

// Encode is the annotation value.
func (r Record) Encode() string {
	b, _ := json.Marshal(r)
	return string(b)
}

// DecodeRecord parses an annotation value.
func DecodeRecord(s string) (*Record, error) {
	var r Record
	if err := json.Unmarshal([]byte(s), &r); err != nil {
		return nil, fmt.Errorf("annotation %s is not a migration record: %w", RecordAnnotation, err)
	}
	if r.Claim == "" || r.Namespace == "" || r.To == "" {
		return nil, fmt.Errorf("annotation %s lacks the claim or the target mode", RecordAnnotation)
	}
	return &r, nil
}

// Metadata the PV binder and provisioners write on a claim; a recreated
// claim must not carry them over.
var binderAnnotations = []string{
	"pv.kubernetes.io/bind-completed", "pv.kubernetes.io/bound-by-controller",
	"volume.beta.kubernetes.io/storage-provisioner", "volume.kubernetes.io/storage-provisioner",
	"volume.kubernetes.io/selected-node",
}

// RetainRecord is the record written when a rebind of claim c (of user,
// to mode to) starts on volume v: the claim as it is (to recreate it) and
// the volume's reclaim policy (to restore it). A volume that carries a
// record already keeps it, its original policy among it; c may then be nil.
func RetainRecord(c *claims.Claim, v Volume, user, to string) Record {
	if v.Record != nil {
		rec := *v.Record
		rec.Step = StepRetained
		return rec
	}
	rec := Record{Step: StepRetained, User: user, Claim: c.Name, Namespace: c.Namespace, To: to,
		ReclaimPolicy: v.ReclaimPolicy, Requested: c.Requested, VolumeMode: c.VolumeMode,
		From: slices.Clone(c.AccessModes), Labels: c.Labels, Annotations: map[string]string{}}
	if c.ClassNamed {
		class := c.StorageClass
		rec.StorageClass = &class
	}
	for k, v := range c.Annotations {
		rec.Annotations[k] = v
	}
	for _, k := range binderAnnotations {
		delete(rec.Annotations, k)
	}
	return rec
}

// rebindDrivers serve an existing volume in ReadWriteMany once an RWX claim
// uses it. Each was checked for exactly that: nothing in the driver ties a
// volume to the mode it was created in, and its node plugin publishes any of
// its volumes for MULTI_NODE_MULTI_WRITER.
//
//   - driver.longhorn.io: Longhorn documents that "the volume access mode
//     will be changed to RWX" when an RWX claim uses a volume.
//   - nfs.csi.k8s.io: the driver enables MULTI_NODE_MULTI_WRITER for the
//     driver as a whole (kubernetes-csi/csi-driver-nfs pkg/nfs/nfs.go), and
//     NodePublishVolume mounts server:share/subDir from the volume context
//     whatever mode the volume was made in (pkg/nfs/nodeserver.go); its
//     static-provisioning example serves an existing share as RWX
//     (deploy/example/README.md).
//   - efs.csi.aws.com: NodePublishVolume accepts SINGLE_NODE_WRITER and
//     MULTI_NODE_MULTI_WRITER for every volume and mounts what the handle
//     names (file system, path, access point), nothing else
//     (kubernetes-sigs/aws-efs-csi-driver pkg/driver/node.go).
//   - cephfs.csi.ceph.com: "Volumes support ReadWriteMany access, so
//     multiple pods on multiple nodes can mount the same volume
//     simultaneously. Each PersistentVolume (PV) is a CephFS subvolume"
//     (docs.ceph.com/en/latest/csi/cephfs/); the driver's access modes,
//     MULTI_NODE_MULTI_WRITER among them, are the driver's, not a volume's
//     (ceph/ceph-csi internal/cephfs/driver.go). Rook names it
//     NAMESPACE.cephfs.csi.ceph.com, which matches too.
//
// Not listed, for want of such a check (migration.rebind_drivers adds them
// where the operator knows better): file.csi.azure.com (a share can also
// hold a VHD disk formatted by the node, a single-node file system) and
// filestore.csi.storage.gke.io.
var rebindDrivers = []string{"driver.longhorn.io", "nfs.csi.k8s.io", "efs.csi.aws.com", "cephfs.csi.ceph.com"}

// prefixedRebindDrivers also match as NAMESPACE.DRIVER (an operator's
// naming: rook-ceph.cephfs.csi.ceph.com).
var prefixedRebindDrivers = []string{"cephfs.csi.ceph.com"}

// knownRebindDriver reports whether the provider knows driver to serve an
// existing volume as ReadWriteMany.
func knownRebindDriver(driver string) bool {
	if slices.Contains(rebindDrivers, driver) {
		return true
	}
	for _, d := range prefixedRebindDrivers {
		if prefix, ok := strings.CutSuffix(driver, "."+d); ok && prefix != "" && !strings.Contains(prefix, ".") {
			return true
		}
	}
	return false
}

// Source is what the method choice needs to know about a claim and its volume.
type Source struct {
	Modes        []string // the claim's access modes
	StorageClass string   // the claim's class
	Bound        bool     // the claim is Bound to a volume
	CSIDriver    string   // the volume's CSI driver; "" if it is not a CSI volume or unknown
	// RebindDrivers are CSI drivers the operator knows to serve an existing
	// volume in ReadWriteMany once an RWX claim uses it (migration.rebind_drivers),
	// besides the built-in ones.
	RebindDrivers []string
}

// Choose picks the method for migrating src to mode `to` in class `toClass`
// ("" keeps the claim's class). It returns the method and, when the method
// asked for cannot be used, why.
func Choose(asked Method, src Source, to, toClass string) (Method, string) {
	rebind, why := canRebind(src, to, toClass)
	switch asked {
	case MethodRebind:
		if !rebind {
			return "", why
		}
		return MethodRebind, ""
	case MethodCopy:
		return MethodCopy, ""
	}
	if rebind {
		return MethodRebind, ""
	}
	return MethodCopy, ""
}

func canRebind(src Source, to, toClass string) (bool, string) {
	switch {
	case !src.Bound:
		return false, "the claim is not bound to a volume"
	case toClass != "" && toClass != src.StorageClass:
		return false, fmt.Sprintf("the class changes (%q to %q); a volume keeps its class", src.StorageClass, toClass)
	case src.CSIDriver == "":
		return false, "its volume is not a CSI volume"
	case to == claims.RWOP && slices.Contains(src.Modes, claims.RWO):
		return true, "" // Kubernetes' documented ReadWriteOncePod migration works on any CSI volume
	case to == claims.RWX && (knownRebindDriver(src.CSIDriver) || slices.Contains(src.RebindDrivers, src.CSIDriver)):
		return true, ""
	case to == claims.RWX:
		known := append(slices.Clone(rebindDrivers), src.RebindDrivers...)
		return false, fmt.Sprintf("CSI driver %s is not known to serve an existing volume as ReadWriteMany (rebind works with %s; "+
			"migration.rebind_drivers adds drivers you know to serve it)", src.CSIDriver, strings.Join(known, ", "))
	}
	return false, fmt.Sprintf("%s to %s is not a rebind the provider knows", strings.Join(src.Modes, ","), to)
}

// Claim is the observed state of the claim being migrated.
type Claim struct {
	UID         string
	Modes       []string
	Phase       string
	VolumeName  string
	Deleting    bool
	Resizing    bool // an expansion has not finished (claims.Claim.Resizing)
	Annotations map[string]string
}

// Volume is the observed state of the volume.
type Volume struct {
	Name            string
	Phase           string // Available, Bound, Released, Failed
	ReclaimPolicy   string
	ClaimRefName    string
	ClaimRefNS      string
	ClaimRefUID     string
	Modes           []string
	Capacity        string  // spec.capacity.storage, a quantity
	ResourceVersion string  // as read: a change is made only over this version
	StorageClass    string  // spec.storageClassName
	Record          *Record // nil when the volume carries none
}

// Op is the next operation of a rebind.
type Op string

const (
	OpRetain      Op = "retain"       // patch reclaim policy Retain + write the record
	OpDeleteClaim Op = "delete-claim" // delete the old claim (UID precondition) and wait until it is gone
	OpCreateClaim Op = "create-claim" // the new claim with volumeName, right after
	OpReserve     Op = "reserve"      // claimRef = the new claim (namespace, name, UID), modes = [to]
	OpWaitBound   Op = "wait-bound"   // the binder binds them
	OpRestore     Op = "restore"      // reclaim policy back, record and label removed
	OpDone        Op = "done"
)

// StepOf is the step a migration has reached, as shown to people.
func StepOf(op Op) Step {
	switch op {
	case OpRetain:
		return StepPending
	case OpDeleteClaim:
		return StepRetained
	case OpCreateClaim, OpReserve:
		return StepReleased
	case OpWaitBound, OpRestore:
		return StepRebound
	}
	return StepDone
}

// NextRebind decides the next operation from what is observed: the claim
// (nil when it does not exist) and its volume (never nil: the volume is
// found from the claim's volumeName or from the record's label). It returns
// an error when the cluster shows something no step of this provider would
// have produced; nothing is then touched.
func NextRebind(c *Claim, v *Volume, to string) (Op, error) {
	rec := v.Record
	switch {
	case rec == nil:
		return notStarted(c, v, to)
	case v.ReclaimPolicy != "Retain":
		// The record is written together with Retain; a volume that lost it
		// was changed by someone else. Retain it again before anything else.
		return OpRetain, nil
	case c == nil:
		return claimGone(v, rec)
	case c.UID == v.ClaimRefUID && c.VolumeName == v.Name && !slices.Equal(c.Modes, []string{rec.To}) && c.Resizing && !c.Deleting:
		// Expanded since it was retained: deleting it now would lose the
		// pending resize. The volume stays retained with the record.
		return "", errResizing(v.Name)
	case c.UID == v.ClaimRefUID && c.VolumeName == v.Name && !slices.Equal(c.Modes, []string{rec.To}):
		// Retained, the old claim still there (or being deleted: deleting
		// again waits for it to go).
		return OpDeleteClaim, nil
	case c.VolumeName == v.Name && slices.Equal(c.Modes, []string{rec.To}):
		// The new claim exists.
		switch {
		case c.Phase == "Bound" && v.ClaimRefUID == c.UID:
			return OpRestore, nil
		case v.ClaimRefUID == c.UID && slices.Equal(v.Modes, []string{rec.To}):
			return OpWaitBound, nil
		}
		return OpReserve, nil
	}
	return "", CreatedMeanwhile(rec, v.Name, c.UID, c.VolumeName)
}

// CreatedMeanwhile is the error for a claim of the migrated claim's name
// that someone else created while the rebind had deleted the old one
// (KubeSpawner, at a spawn): it may hold what the user wrote since, so it
// is never deleted or reused, and the advice keeps those files.
func CreatedMeanwhile(rec *Record, volume, uid, bound string) error {
	return fmt.Errorf("claim %s/%s (uid %s, volume %q) was created by someone else (KubeSpawner, at a spawn in the moment the rebind had no claim) while its home was being rebound; "+
		"it may hold files the user wrote since, so it is left as it is. The home's data is on volume %s, retained and carrying the rebind's record. "+
		"To finish: stop the user's server; save what %s holds (a pod that mounts it); then delete %s yourself and apply again: the rebind creates %s on volume %s, with the home; put the saved files back into it",
		rec.Namespace, rec.Claim, uid, bound, volume, rec.Claim, rec.Claim, rec.Claim, volume)
}

// notStarted is the first step of a rebind: the claim must be bound to
// this volume.
func notStarted(c *Claim, v *Volume, to string) (Op, error) {
	switch {
	case c == nil:
		return "", fmt.Errorf("volume %s carries no migration record and its claim does not exist", v.Name)
	case c.VolumeName != v.Name || c.Phase != "Bound" || v.ClaimRefUID != c.UID:
		return "", fmt.Errorf("the claim is not bound to volume %s (phase %s)", v.Name, orDash(c.Phase))
	case slices.Equal(c.Modes, []string{to}):
		return OpDone, nil
	case c.Resizing:
		return "", errResizing(v.Name)
	}
	return OpRetain, nil
}

// errResizing refuses to rebind a claim whose expansion has not finished:
// the new claim would be bound to the grown volume with its filesystem
// never grown (the node grows it at the next mount of the claim that asked
// for it), or, before the volume grew, would ask for more than the volume
// holds and never bind.
func errResizing(volume string) error {
	return fmt.Errorf("the claim is being expanded (it requests more than its capacity, or its filesystem resize waits for the next mount): "+
		"a rebind now would lose the resize. Nothing more is done to volume %s now; start and stop the user's server once (the node grows the filesystem), then apply again", volume)
}

// claimGone is the next step once the old claim is deleted: the new claim
// is created at once, whether or not the binder has released the volume
// yet, as long as the volume names no other claim.
func claimGone(v *Volume, rec *Record) (Op, error) {
	if v.ClaimRefName == "" || v.ClaimRefName == rec.Claim && v.ClaimRefNS == rec.Namespace {
		return OpCreateClaim, nil
	}
	return "", fmt.Errorf("volume %s is %s and names claim %s/%s; expected it to name %s/%s, whose home it holds", v.Name, orDash(v.Phase), v.ClaimRefNS, v.ClaimRefName, rec.Namespace, rec.Claim)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
