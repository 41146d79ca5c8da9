package migration

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"strings"
)

// Copy, for backends that cannot serve a volume in the new mode (EBS, PD,
// Azure Disk, Hetzner, ... to EFS, NFS, CephFS, Longhorn RWX):
//
//	pending         the source claim is as KubeSpawner made it
//	target-created  a new claim (migration.target_name_template) exists in
//	                the new mode and class
//	copying         a Job mounts both and copies with rsync, keeping
//	                ownership, permissions, hard links, sparse files, ACLs and
//	                extended attributes, then compares both sides (rsync
//	                --checksum dry run must be empty)
//	verified        the Job succeeded; its file count and bytes are recorded
//	switched        the hub mounts the target at the user's next spawn claim
//
// The record is an annotation on the source claim, which is never deleted
// by a migration; the target carries the name of its source.
const (
	StepTargetCreated Step = "target-created"
	StepCopying       Step = "copying"
	StepVerified      Step = "verified"
	StepSwitched      Step = "switched"
)

// Annotations of a copy.
const (
	CopyAnnotation   = "jupyter-infra.github.io/home-copy" // on the source: its CopyRecord
	CopyOfAnnotation = "jupyter-infra.github.io/copy-of"   // on the target: the source claim's name
	// CopyIDAnnotation on the target is the ID of the copy that created it,
	// as the source's record holds it: a copy writes only into the target
	// its own record names.
	CopyIDAnnotation = "jupyter-infra.github.io/copy-id"
	// CopySwitchedAnnotation on the target says that its copy was verified
	// and the user switched to it: it is the user's home.
	CopySwitchedAnnotation = "jupyter-infra.github.io/copy-switched"
	// CopyOfUIDAnnotation on the target is the UID of the source claim the
	// copy started from: a claim of the source's name with another UID was
	// created after the copy.
	CopyOfUIDAnnotation = "jupyter-infra.github.io/copy-of-uid"
	// CopyOfLabel on the target is CopyOfLabelValue of its source's name,
	// so that the hub finds the copy of a deleted source with one request.
	CopyOfLabel = "jupyter-infra.github.io/copy-of-claim"
)

// CopyOfLabelValue is a claim name as a label value (names are longer than
// label values may be): the first 40 hex digits of its SHA-256.
func CopyOfLabelValue(claim string) string {
	sum := sha256.Sum256([]byte(claim))
	return hex.EncodeToString(sum[:])[:40]
}

// CopyRecord is what the source claim carries during and after a copy.
type CopyRecord struct {
	Step   Step   `json:"step"`
	User   string `json:"user"`
	Target string `json:"target"`
	To     string `json:"to"`
	Job    string `json:"job,omitempty"`
	// ID is written before the target is created and put on the target;
	// TargetUID is the target this copy created, empty.
	ID        string `json:"id,omitempty"`
	TargetUID string `json:"targetUID,omitempty"`
	Files     int64  `json:"files,omitempty"` // as the Job counted them on the target
	Bytes     int64  `json:"bytes,omitempty"`
}

// Encode is the annotation value.
func (r CopyRecord) Encode() string {
	b, _ := json.Marshal(r)
	return string(b)
}

// DecodeCopyRecord parses an annotation value.
func DecodeCopyRecord(s string) (*CopyRecord, error) {
	var r CopyRecord
	if err := json.Unmarshal([]byte(s), &r); err != nil {
		return nil, fmt.Errorf("annotation %s is not a copy record: %w", CopyAnnotation, err)
	}
	if r.Target == "" || r.Step == "" {
		return nil, fmt.Errorf("annotation %s lacks the target or the step", CopyAnnotation)
	}
	return &r, nil
}

// IsMigrationJob reports whether a Job of that name is one of this
// provider's copy or verification Jobs, or the copy Job of a move by copy
// out of the shared layout (its pods are not users' servers).
func IsMigrationJob(name string) bool {
	return strings.HasPrefix(name, "home-copy-") || strings.HasPrefix(name, "home-verify-") || strings.HasPrefix(name, directoryCopyJobPrefix) || strings.HasPrefix(name, mergeJobPrefix)
}

// JobName is the copy Job of a source claim: the same name every time, so
// that a resumed apply finds the Job an earlier one started.
func JobName(source string) string {
	h := fnv.New32a()
	h.Write([]byte(source))
	prefix := source
	if len(prefix) > 40 {
		prefix = prefix[:40]
	}
	return fmt.Sprintf("home-copy-%s-%08x", trimDash(prefix), h.Sum32())
}

func trimDash(s string) string {
	for len(s) > 0 && (s[len(s)-1] == '-' || s[len(s)-1] == '.') {
		s = s[:len(s)-1]
	}
	return s
}

// Job is the observed copy Job.
type Job struct {
	Succeeded bool
	Failed    bool
	Reason    string // of the failure
	// ClaimUID is the UID of the claim a move by copy's Job was made for
	// (DirectoryCopyJobName); "" for other Jobs.
	ClaimUID string
}

// Target is the observed target claim.
type Target struct {
	Exists bool
	CopyOf string // its CopyOfAnnotation
	CopyID string // its CopyIDAnnotation
	UID    string
	// Switched: it carries CopySwitchedAnnotation (the user's home).
	Switched bool
}

// Copy operations.
const (
	OpCreateTarget Op = "create-target" // the target claim, then the record (step target-created)
	OpStartCopy    Op = "start-copy"    // the Job, then the record (step copying)
	OpWaitCopy     Op = "wait-copy"     // until the Job succeeds or fails
	OpVerify       Op = "verify"        // record the Job's counts (step verified), delete the Job
	OpSwitch       Op = "switch"        // record step switched: the hub mounts the target from the next spawn
	OpRestartCopy  Op = "restart-copy"  // a check made before this apply: delete its Job, copy again
)

// CopyStepOf is the step a copy has reached before op.
func CopyStepOf(op Op) Step {
	switch op {
	case OpCreateTarget:
		return StepPending
	case OpStartCopy:
		return StepTargetCreated
	case OpWaitCopy, OpVerify, OpRestartCopy:
		return StepCopying
	case OpSwitch:
		return StepVerified
	}
	return StepSwitched
}

// CopyState is what a copy of a source claim decides its next operation
// from: what the cluster shows now, and what this run did.
type CopyState struct {
	Record *CopyRecord // the source's record; nil before the first step
	Target Target
	Job    *Job // the copy Job; nil when there is none
	// Watched says the copy's check is this apply's own: this apply
	// started the Job or saw it unfinished. A check made before this apply
	// (a Job seen finished at its first look, a record verified by an
	// earlier apply) says nothing of what the user wrote since: the copy
	// runs again (rsync sends only what changed) before the user is
	// switched.
	Watched bool
}

// NextCopy decides the next operation of a copy of source from s. A copy
// writes only into the target it created itself: one that exists without
// this copy's ID on it is refused (it may be the user's home after an
// earlier copy whose record is gone).
func NextCopy(source string, s CopyState) (Op, error) {
	rec, target := s.Record, s.Target
	if err := checkTarget(rec, source, target); err != nil {
		return "", err
	}
	if rec == nil || rec.Step == StepPending || !target.Exists && rec.Step == StepTargetCreated {
		return OpCreateTarget, nil
	}
	if !target.Exists {
		return "", fmt.Errorf("target claim %s of %s (step %s) was deleted outside Terraform; the source keeps the data. Remove annotation %s from %s to start the copy again",
			rec.Target, source, rec.Step, CopyAnnotation, source)
	}
	switch rec.Step {
	case StepTargetCreated:
		return OpStartCopy, nil
	case StepCopying:
		return copying(source, s)
	case StepVerified:
		if !s.Watched {
			return OpRestartCopy, nil
		}
		return OpSwitch, nil
	case StepSwitched:
		if !target.Switched {
			return OpSwitch, nil // the record says switched; the target's annotation follows
		}
		return OpDone, nil
	}
	return "", fmt.Errorf("%s has unknown copy step %q", source, rec.Step)
}

// copying is the next step while the copy Job runs or has run.
func copying(source string, s CopyState) (Op, error) {
	job := s.Job
	switch {
	case job == nil:
		return OpStartCopy, nil // deleted meanwhile: copy again (rsync only sends what differs)
	case job.Failed:
		return "", fmt.Errorf("copy Job %s failed (%s); the source %s is unchanged. See `kubectl logs job/%s`, fix the cause, delete the Job, and apply again. "+
			"Until then the hub refuses the user's spawns (the home is being copied); to give the user the old home back instead, remove annotation %s from %s",
			JobName(source), orDash(job.Reason), source, JobName(source), CopyAnnotation, source)
	case job.Succeeded && !s.Watched:
		return OpRestartCopy, nil
	case job.Succeeded:
		return OpVerify, nil
	}
	return OpWaitCopy, nil
}

// checkTarget refuses a target this copy did not create: another claim of
// that name, a copy this record does not name (it may be the user's home),
// or one created again since.
func checkTarget(rec *CopyRecord, source string, target Target) error {
	name := "the target claim"
	if rec != nil {
		name = rec.Target
	}
	switch {
	case target.Exists && target.CopyOf != source:
		return fmt.Errorf("%s already exists and is not a copy of %s; choose another migration.target_name_template", name, source)
	case target.Exists && (rec == nil || rec.ID == "" || target.CopyID != rec.ID):
		return fmt.Errorf("%s already exists: a copy of %s that the record on %s does not name (the record was removed, or %s was created again after an earlier copy). "+
			"It may hold the user's home; nothing is copied over it. If %s is the user's home, keep it (the next plan shows it as copied); if it holds nothing of value, delete it and apply again",
			name, source, source, source, name)
	case target.Exists && rec.TargetUID != "" && target.UID != rec.TargetUID:
		return fmt.Errorf("%s was deleted and created again since this copy created it; nothing is copied into it. Delete it if it holds nothing of value, and apply again", name)
	case target.Switched && rec.Step != StepSwitched:
		// The record is written switched before the annotation: this is
		// not a state a copy leaves.
		return fmt.Errorf("%s carries annotation %s, but the copy record on %s says step %s: the user was never switched to it (the hub follows the record). Nothing is copied over it. "+
			"Remove the annotation from %s and apply again to bring the copy up to date and switch", name, CopySwitchedAnnotation, source, rec.Step, name)
	}
	return nil
}

// Verification is what the copy Job reports in its termination message.
type Verification struct {
	Files int64 `json:"files"`
	Bytes int64 `json:"bytes"`
}

// VerifyJobName is the Job that checks a finished copy again before its
// source is deleted.
func VerifyJobName(source string) string {
	return "home-verify-" + JobName(source)[len("home-copy-"):]
}

// rsyncOptions are the options of every rsync of a copy and of its checks:
// ownership by numeric id, permissions, times, hard links, sparse files,
// POSIX ACLs (-A) and extended attributes (-X). An xattr filter replaces
// rsync's own choice of names, so the first rule keeps its default for root
// (no system.* names: ACLs are -A's, and NFSv4's system.nfs4_acl is the
// server's); the second leaves out security.selinux, the label a volume's
// files get from its own mount, not from the source.
const rsyncOptions = `-aHSAX --numeric-ids --filter='-x system.*' --filter='-x security.selinux'`

// VerifyScript is the verification Job's script: both claims mounted
// read-only, an rsync dry run with checksums, without --update, that
// itemizes every file of /src whose content, owner, group, mode, ACL,
// extended attributes, symlink target or hard links differ in /dst, or that
// /dst lacks, whatever the times say: a file of the old home rewritten with
// an older time (tar x, unzip, cp -p, a restore) counts. Only differences in
// times are left out (an itemized line with nothing but t or T, and u, n or
// b, set: a change of times alone, for the file or for a hard link of it),
// and so are files only /dst has. Anything else listed fails the Job and
// is named in its termination log, and so does any failure of rsync itself
// (a missing rsync, an unreadable file) and anything it says on stderr: a
// verification that could not look never passes.
//
// A file the user edited in the new home since the switch differs too: the
// script cannot tell it from a write the new home lacks, so the old home is
// kept and the operator compares both. It writes nothing but its
// termination log (the Job's root file system is read-only).
const VerifyScript = `set -eu
command -v rsync >/dev/null || { echo "rsync is not in the copy image" >/dev/termination-log; exit 1; }
if ! out=$(rsync ` + rsyncOptions + ` --dry-run --checksum --itemize-changes /src/ /dst/ 2>&1); then
  { echo "rsync failed:"; printf '%s\n' "$out" | head -n 20; } >/dev/termination-log
  exit 1
fi
diff=$(printf '%s\n' "$out" | grep -Ev '^[.h][^ ][.][.][.tT][.][.][.][.unb][.][.] ' | grep -v '^$' || true)
if [ -n "$diff" ]; then
  { echo "these files of the old home differ in the new home (content, owner, mode, ACL, xattr, link target, hard links; an edit made in the new home since the switch counts too) or are missing there, so the old home is kept; compare both and delete it by hand if the new home is right:"
    printf '%s\n' "$diff" | head -n 20; } >/dev/termination-log
  exit 1
fi
printf 'verified' > /dev/termination-log
`

// ParseVerification reads the copy Job's termination message.
func ParseVerification(msg string) (Verification, error) {
	var v Verification
	if err := json.Unmarshal([]byte(msg), &v); err != nil || v.Files <= 0 {
		return v, fmt.Errorf("the copy Job's termination message %q is not a verification record", msg)
	}
	return v, nil
}

// CopyScript is the copy Job's shell script (POSIX sh, rsync 3). It copies
// /src to /dst with rsyncOptions (ownership by numeric id, permissions,
// times, hard links, sparse files, ACLs, extended attributes), then compares
// both sides with checksums: any difference fails the Job. A copy that
// cannot keep something (a target file system without ACLs or extended
// attributes while the source has them, which rsync reports as a partial
// transfer) fails the Job too, and its log names the files: nothing is
// dropped silently. It writes the target's file count and bytes to the
// termination log.
const CopyScript = `set -eu
status=0
rsync ` + rsyncOptions + ` --delete /src/ /dst/ || status=$?
diff=$(rsync ` + rsyncOptions + ` --delete --dry-run --checksum --itemize-changes /src/ /dst/)
if [ "$status" != 0 ]; then
  echo "the copy failed (rsync exit status $status); source and copy differ in:" >&2
  printf '%s\n' "$diff" | head -n 50 >&2
  echo "An a or x in the 10th or 11th column: the target's file system cannot keep the file's POSIX ACL or extended attributes. Copy to a storage class that keeps them, or remove them from the old home (setfacl -b, setfattr -x) if they are not needed; then delete the Job and apply again." >&2
  exit 1
fi
if [ -n "$diff" ]; then
  echo "verification failed: source and copy differ:" >&2
  printf '%s\n' "$diff" | head -n 50 >&2
  exit 1
fi
stats=$(rsync -aHS --dry-run --stats /dst/ /tmp/.count/)
files=$(echo "$stats" | sed -n 's/^Number of files: \([0-9,]*\).*/\1/p' | tr -d ,)
bytes=$(echo "$stats" | sed -n 's/^Total file size: \([0-9,]*\) bytes.*/\1/p' | tr -d ,)
printf '{"files":%s,"bytes":%s}' "${files:-0}" "${bytes:-0}" > /dev/termination-log
`
