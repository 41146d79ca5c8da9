package migration

// Merge (consolidation): one user's home moves from a claim of its own (the
// per-user layout) into their directory of the shared claim, by a copy.
// Nothing is deleted but the provider's own Jobs: the claim stays as it is
// (the copy mounts it read-only), and is the user's home until the copy is
// verified and marked.
//
//	pending          nothing written yet; no pod may use the claim or the
//	                 directory
//	directory-ready  a Job made the directory (owner and mode) and found it
//	                 empty, reached by no symbolic link, and no earlier
//	                 place of the user's home holding files
//	recorded         the claim carries the record (MergeAnnotation): from
//	                 now on the hub refuses the user's spawns
//	copying          a Job copies the claim (read-only) into the directory
//	                 with rsync and compares both (CopyScript)
//	done             the claim carries MergedAnnotation = its own UID: the
//	                 hub mounts the directory from the user's next spawn
//
// Each step is decided from what the cluster shows (NextMerge), so an
// apply stopped anywhere resumes. The hub that reads the records is the
// one of the per-user layout with the shared claim as fallback (the
// settings of kubespawner.HomeStorage.SplitFrom): a claim with a merge
// record refuses the spawn until it is marked with its own UID, then the
// server mounts the user's directory of the shared claim instead. The hub
// of the plain per-user layout mounts a claim whose record is not marked
// (it is still the home) and refuses one that is (the home is the
// directory now).

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"strings"
)

// MethodMerge moves a home from a claim of its own into the user's
// directory of the shared claim by a copy (merge.go).
const MethodMerge Method = "merge"

// MergeAnnotation holds a MergeRecord on the user's claim: the claim's home
// is being, or was, copied into Directory of Shared.
const MergeAnnotation = "jupyter-infra.github.io/home-merge"

// MergedAnnotation on a claim with a merge record is the claim's UID,
// written once the copy into the directory was verified: from then on the
// directory is the user's home and the claim a stale copy of it.
const MergedAnnotation = "jupyter-infra.github.io/home-merged"

// MergeRecord says which claim's home is copied into which directory of
// which shared claim.
type MergeRecord struct {
	User      string `json:"user"`
	Namespace string `json:"namespace"`
	Claim     string `json:"claim"`      // the user's claim, copied from
	ClaimUID  string `json:"claim_uid"`  // its UID when the merge began
	Shared    string `json:"shared"`     // the shared claim, copied into
	SharedUID string `json:"shared_uid"` // its UID when the merge began
	Directory string `json:"directory"`  // the user's directory in it
}

// Encode is the record as its annotation holds it.
func (r MergeRecord) Encode() string {
	b, _ := json.Marshal(r)
	return string(b)
}

// DecodeMergeRecord reads a record; an error when it is not one.
func DecodeMergeRecord(s string) (MergeRecord, error) {
	var r MergeRecord
	if err := json.Unmarshal([]byte(s), &r); err != nil {
		return r, fmt.Errorf("the merge record %q cannot be read: %w", s, err)
	}
	return r, nil
}

// Merged reports whether a claim whose annotations are ann and UID uid is
// a finished merge: its record is readable and names the claim's UID, and
// it carries MergedAnnotation = uid. The hub mounts the directory then.
func Merged(ann map[string]string, uid string) bool {
	rec, err := DecodeMergeRecord(ann[MergeAnnotation])
	return err == nil && uid != "" && rec.ClaimUID == uid && ann[MergedAnnotation] == uid
}

// MergeJobName is the copy Job of the merge of claim: the same name every
// time (a resumed apply finds it), a prefix of its own that IsMigrationJob
// knows (its pods are not users' servers).
func MergeJobName(claim string) string {
	h := fnv.New32a()
	h.Write([]byte("merge/" + claim))
	prefix := claim
	if len(prefix) > 40 {
		prefix = prefix[:40]
	}
	return fmt.Sprintf("%s%s-%08x", mergeJobPrefix, trimDash(prefix), h.Sum32())
}

const mergeJobPrefix = "home-merge-"

// MergeClaim is the user's claim as a merge sees it.
type MergeClaim struct {
	UID      string
	Record   *MergeRecord // nil when the claim carries none
	Merged   string       // its MergedAnnotation; "" when none
	Deleting bool         // it has a deletion timestamp
	// Unreadable: it carries a MergeAnnotation that is not a record.
	Unreadable bool
}

// MergeState is what a merge decides its next operation from: what the
// cluster shows now, and what this run did.
type MergeState struct {
	Claim *MergeClaim // nil when the claim is gone
	Job   *Job        // the copy Job (MergeJobName); nil when none
	// SharedUID is the shared claim's UID now.
	SharedUID string
	// Busy are the pods (not the provider's own Jobs') that use the claim,
	// or the user's directory of the shared claim.
	Busy []string
	// Prepared: this run's directory Job made the directory and, before
	// the record, found it empty (after the record it holds the copy).
	Prepared bool
	// Watched: this run started the Job, or saw it unfinished. A Job that
	// finished before this run looked says nothing of what was written
	// since: it is run again (rsync sends only what changed).
	Watched bool
}

// Operations of a merge.
const (
	OpPrepareMergeDirectory Op = "prepare-merge-directory" // make the directory; refuse one that holds files
	OpRecordMerge           Op = "record-merge"            // the record on the claim (UID precondition)
	OpRecheckMergeDirectory Op = "recheck-merge-directory" // make the directory again before a copy after the record
	OpStartMerge            Op = "start-merge"             // the copy Job
	OpWaitMerge             Op = "wait-merge"              // until it succeeds or fails
	OpRestartMerge          Op = "restart-merge"           // delete a Job this run cannot trust; the copy runs again
	OpMarkMerged            Op = "mark-merged"             // MergedAnnotation = the claim's UID, then delete the Job
	OpDeleteMergeJob        Op = "delete-merge-job"        // the Job left by a run stopped after the mark
)

// StepRecorded: the merge's record is on the claim (the hub refuses the
// user from then on).
const StepRecorded Step = "recorded"

// NextMerge decides the next operation of the merge rec (rec.ClaimUID the
// claim's UID when the plan read it) from s. It refuses a claim that is
// gone, made again (another UID), being deleted, or carries another record
// or a mark of another UID; a shared claim made again since the record; and
// while a pod uses the claim or the directory it waits (an error naming
// the pods). A failed copy Job stops the merge (an error saying how to
// retry or undo it).
func NextMerge(rec MergeRecord, s MergeState) (Op, error) {
	c := s.Claim
	where := fmt.Sprintf("directory %q of %s/%s", rec.Directory, rec.Namespace, rec.Shared)
	from := fmt.Sprintf("claim %s/%s", rec.Namespace, rec.Claim)
	recorded := c.carries(rec)
	if err := refuseMerge(rec, c, from, where); err != nil {
		return "", err
	}
	switch {
	case c.Merged != "":
		if s.Job != nil {
			return OpDeleteMergeJob, nil
		}
		return OpDone, nil
	case c.Deleting:
		return "", fmt.Errorf("%s is being deleted; nothing is merged from it (it holds the user's home until then: restore it from a backup if that was not meant)", from)
	case s.SharedUID != rec.SharedUID:
		return "", fmt.Errorf("the shared claim %s/%s was made again since the merge of %s into it began (UID %s, now %s): nothing is copied into another claim. "+
			"Find out what the directory holds; remove annotation %s from %s to start again", rec.Namespace, rec.Shared, from, rec.SharedUID, orDash(s.SharedUID), MergeAnnotation, from)
	case len(s.Busy) > 0 && !recorded:
		return "", mergeBusyError(rec, from, where, s.Busy, "nothing was written")
	case len(s.Busy) > 0:
		return "", mergeBusyError(rec, from, where, s.Busy, "the record stays: the hub refuses the user's new spawns until an apply finishes the merge")
	case !recorded && !s.Prepared:
		return OpPrepareMergeDirectory, nil
	case !recorded:
		return OpRecordMerge, nil
	}
	run := jobRun{job: s.Job, claimUID: c.UID, prepared: s.Prepared, watched: s.Watched}
	return mergeOps.next(run, func(job *Job) error {
		name := MergeJobName(rec.Claim)
		return fmt.Errorf("merge Job %s/%s failed (%s); %s is unchanged (the Job mounts it read-only). See `kubectl logs -n %s job/%s`, fix the cause, "+
			"delete the Job (kubectl delete job -n %s %s) and apply again. Until then the hub refuses %s's spawns (the home is being moved); "+
			"to undo the merge instead, remove annotation %s from %s: the claim is the home again, and %s holds a partial copy to remove by hand",
			rec.Namespace, name, orDash(job.Reason), from, rec.Namespace, name, rec.Namespace, name, rec.User, MergeAnnotation, from, where)
	})
}

// mergeOps are the copy Job's operations of a merge.
var mergeOps = copyJobOps{restart: OpRestartMerge, mark: OpMarkMerged, wait: OpWaitMerge,
	recheck: OpRecheckMergeDirectory, start: OpStartMerge}

// carries reports whether the claim (nil when gone) carries rec.
func (c *MergeClaim) carries(rec MergeRecord) bool {
	return c != nil && c.Record != nil && *c.Record == rec
}

// refuseMerge is the error of a merge that must not go on: rec names no
// plain directory or lacks a UID, or the claim c is gone, made again,
// carries another record, or a mark of another UID.
func refuseMerge(rec MergeRecord, c *MergeClaim, from, where string) error {
	recorded := c.carries(rec)
	switch {
	case !plainDirectory(rec.Directory):
		return fmt.Errorf("the merge of %s: directory %q is not a plain relative path", from, rec.Directory)
	case rec.ClaimUID == "" || rec.SharedUID == "":
		return fmt.Errorf("the merge of %s into %s has no UID of the claim or of the shared claim", from, where)
	case c == nil:
		return fmt.Errorf("%s is gone; nothing is merged from it. Plan again", from)
	case c.UID != rec.ClaimUID:
		return fmt.Errorf("%s was made again (UID %s, the plan read %s); nothing is merged from it. Plan again", from, c.UID, rec.ClaimUID)
	case c.Unreadable || (c.Record != nil && !recorded):
		return fmt.Errorf("%s carries another merge record (annotation %s) than this merge into %s: it is never taken over. "+
			"Finish or undo that merge first (removing the annotation undoes one not yet marked %s)", from, MergeAnnotation, where, MergedAnnotation)
	case c.Merged != "" && (!recorded || c.Merged != c.UID):
		return fmt.Errorf("%s carries annotation %s = %s, not its own UID %s: it was made again from a merged home (a restore?). Nothing is copied from it; "+
			"the hub does not mount it", from, MergedAnnotation, c.Merged, c.UID)
	}
	return nil
}

// mergeBusyError is the merge's wait while pods use the claim or the
// directory; then says what stays meanwhile.
func mergeBusyError(rec MergeRecord, from, where string, pods []string, then string) error {
	return fmt.Errorf("the merge of %s's home from %s into %s waits: pod(s) %s use the claim or the directory (%s). Stop the server and apply again",
		rec.User, from, where, strings.Join(pods, ", "), then)
}

// MergeStepOf is the step a merge has reached when op is next.
func MergeStepOf(op Op) Step {
	switch op {
	case OpRecordMerge:
		return StepDirectoryReady
	case OpRecheckMergeDirectory, OpStartMerge:
		return StepRecorded
	case OpWaitMerge, OpRestartMerge, OpMarkMerged:
		return StepCopying
	case OpDeleteMergeJob, OpDone:
		return StepDone
	}
	return StepPending
}
