package migration

// Move by copy out of the shared layout (MethodDirectoryCopy): one user's
// home moves from a directory of the shared claim to a new claim of the
// configured class, by a copy, for shared volumes whose directories cannot
// be volumes of their own (SplitSource refuses them) or when the homes go
// to another storage class. Nothing is deleted but the provider's own
// Jobs; the directory is never changed (the copy mounts it read-only).
//
//	pending          nothing made yet; no pod may use the directory
//	directory-ready  a Job made sure the directory exists (made with the
//	                 owner and mode when missing) and is reached by no
//	                 symbolic link
//	claim-created    the user's claim exists, of the configured class,
//	                 with the record (Method MethodDirectoryCopy, Volume
//	                 ""): from now on the hub refuses the user's spawns
//	copying          a Job copies the directory (read-only) into the claim
//	                 with rsync and compares both (CopyScript)
//	done             the claim carries SplitCopiedAnnotation = its own UID:
//	                 the hub mounts it from the user's next spawn
//
// Each step is decided from what the cluster shows (NextDirectoryCopy), so
// an apply stopped anywhere resumes. A claim of the user's claim name that
// does not carry exactly this move's record is never taken over.

import (
	"fmt"
	"hash/fnv"
	"path"
	"strings"
)

// DirectoryCopyJobName is the copy Job of the move by copy to claim: the
// same name every time (a resumed apply finds it), a prefix of its own (no
// per-user copy's JobName or VerifyJobName is ever this name) that
// IsMigrationJob knows (its pods are not users' servers).
func DirectoryCopyJobName(claim string) string {
	h := fnv.New32a()
	h.Write([]byte("directory-copy/" + claim))
	prefix := claim
	if len(prefix) > 40 {
		prefix = prefix[:40]
	}
	return fmt.Sprintf("%s%s-%08x", directoryCopyJobPrefix, trimDash(prefix), h.Sum32())
}

const directoryCopyJobPrefix = "home-dcopy-"

// DirectoryCopyState is what a move by copy decides its next operation
// from: what the cluster shows now, and what this run did.
type DirectoryCopyState struct {
	Claim *SplitClaim // the user's claim; nil when none
	Job   *Job        // the copy Job (DirectoryCopyJobName); nil when none
	// Busy are the pods (not the provider's own Jobs') that use the
	// user's directory of the shared claim, or the user's claim.
	Busy []string
	// Prepared: this run made sure the directory exists and is reached by
	// no symbolic link (the directory Job), and restarted no copy since.
	Prepared bool
	// Watched: this run started the Job, or saw it unfinished. A Job that
	// finished before this run looked says nothing of what was written
	// since: it is run again (rsync sends only what changed).
	Watched bool
}

// Operations of a move by copy.
const (
	// OpPrepareDirectory (split.go) makes a missing directory before the claim.
	OpCreateDirectoryCopyClaim Op = "create-directory-copy-claim" // the claim, with the record
	OpRecheckDirectory         Op = "recheck-directory"           // the directory Job again before a copy of a claim made earlier
	OpStartDirectoryCopy       Op = "start-directory-copy"        // the copy Job
	OpWaitDirectoryCopy        Op = "wait-directory-copy"         // until it succeeds or fails
	OpRestartDirectoryCopy     Op = "restart-directory-copy"      // delete a Job this run cannot trust; the copy runs again
	OpMarkSplitCopied          Op = "mark-split-copied"           // SplitCopiedAnnotation = the claim's UID, then delete the Job
	OpDeleteDirectoryCopyJob   Op = "delete-directory-copy-job"   // the Job left by a run stopped after the mark
)

// NextDirectoryCopy decides the next operation of the move by copy rec
// (rec.Method MethodDirectoryCopy, rec.Volume "") from s. It refuses a
// claim of rec's name that does not carry exactly rec, one being deleted,
// and one marked copied under another UID (made again from a moved home:
// it may hold what the user wrote since); while a pod uses the directory
// or the claim, the move waits (an error naming the pods). A failed copy
// Job stops the move (an error saying how to retry or undo it).
func NextDirectoryCopy(rec SplitRecord, s DirectoryCopyState) (Op, error) {
	c := s.Claim
	where := fmt.Sprintf("directory %q of %s/%s", rec.Directory, rec.Namespace, rec.Shared)
	if err := refuseDirectoryCopy(rec, c, where); err != nil {
		return "", err
	}
	switch {
	case c != nil && c.Copied != "":
		if s.Job != nil {
			return OpDeleteDirectoryCopyJob, nil
		}
		return OpDone, nil
	case len(s.Busy) > 0 && c == nil:
		return "", busyError(rec, where, s.Busy, "no claim was made")
	case len(s.Busy) > 0:
		return "", busyError(rec, where, s.Busy, fmt.Sprintf("claim %s/%s stays: the running server keeps working in the directory, and the hub refuses the user's new spawns until an apply finishes the move", rec.Namespace, rec.Claim))
	case c == nil && !s.Prepared:
		return OpPrepareDirectory, nil
	case c == nil:
		return OpCreateDirectoryCopyClaim, nil
	}
	run := jobRun{job: s.Job, claimUID: c.UID, prepared: s.Prepared, watched: s.Watched}
	return directoryCopyOps.next(run, func(job *Job) error {
		name := DirectoryCopyJobName(rec.Claim)
		return fmt.Errorf("copy Job %s/%s failed (%s); %s is unchanged (the Job mounts it read-only). See `kubectl logs -n %s job/%s`, fix the cause, "+
			"delete the Job (kubectl delete job -n %s %s) and apply again. Until then the hub refuses %s's spawns (the home is being moved); "+
			"to undo the move instead, delete claim %s/%s: the directory still holds everything, and the hub mounts it again",
			rec.Namespace, name, orDash(job.Reason), where, rec.Namespace, name, rec.Namespace, name, rec.User, rec.Namespace, rec.Claim)
	})
}

// directoryCopyOps are the copy Job's operations of a move by copy.
var directoryCopyOps = copyJobOps{restart: OpRestartDirectoryCopy, mark: OpMarkSplitCopied, wait: OpWaitDirectoryCopy,
	recheck: OpRecheckDirectory, start: OpStartDirectoryCopy}

// refuseDirectoryCopy is the error of a move by copy that must not go on:
// rec is not a move by copy of a plain directory, or the claim c (nil when
// none) was not made by it, is being deleted, or is marked copied under
// another UID.
func refuseDirectoryCopy(rec SplitRecord, c *SplitClaim, where string) error {
	switch {
	case rec.Method != MethodDirectoryCopy || rec.Volume != "":
		return fmt.Errorf("the move of %s/%s is not a move by copy (method %q, volume %q)", rec.Namespace, rec.Claim, rec.Method, rec.Volume)
	case !plainDirectory(rec.Directory):
		return fmt.Errorf("the move of %s/%s: directory %q is not a plain relative path", rec.Namespace, rec.Claim, rec.Directory)
	case c == nil:
		return nil
	case c.Record == nil || *c.Record != rec:
		return fmt.Errorf("claim %s/%s exists and was not made by this move by copy from %s: it is never taken over. "+
			"If it is an empty claim made by mistake, delete it and apply again; if it holds the user's files, it is their home: leave the user out of the move",
			rec.Namespace, rec.Claim, where)
	case c.Deleting:
		return fmt.Errorf("claim %s/%s of the move by copy from %s is being deleted (it goes once no pod uses it, the copy Job %s included); "+
			"the directory still holds the user's files. Apply again once it is gone: the move starts again",
			rec.Namespace, rec.Claim, where, DirectoryCopyJobName(rec.Claim))
	case c.Copied != "" && c.Copied != c.UID:
		return fmt.Errorf("claim %s/%s carries annotation %s of another claim (UID %s, its own is %s): it was made again from a moved home (a restore?). "+
			"It may hold what the user wrote since the move; nothing is copied over it. If it is the user's home, set the annotation to its UID; if it holds nothing of value, delete it and apply again",
			rec.Namespace, rec.Claim, SplitCopiedAnnotation, c.Copied, c.UID)
	}
	return nil
}

// busyError is the move's wait while pods use the directory or the claim;
// then says what stays meanwhile.
func busyError(rec SplitRecord, where string, pods []string, then string) error {
	return fmt.Errorf("the move of %s's home by copy to %s/%s waits: pod(s) %s use %s or the claim (%s). Stop the server and apply again; the user keeps the directory meanwhile",
		rec.User, rec.Namespace, rec.Claim, strings.Join(pods, ", "), where, then)
}

// jobRun is what a copy Job's next step is decided from once its claim is
// made (a move by copy) or recorded (a merge).
type jobRun struct {
	job      *Job   // nil when none
	claimUID string // the UID of the claim the Job must be made for
	// prepared: this run's directory Job checked the directory and no
	// copy was restarted since.
	prepared bool
	// watched: this run started the Job, or saw it unfinished.
	watched bool
}

// copyJobOps name a copy Job's operations in one kind of move.
type copyJobOps struct {
	restart Op // delete a Job this run cannot trust; the copy runs again
	mark    Op // mark the move done, then delete the Job
	wait    Op // until the Job succeeds or fails
	recheck Op // the directory Job again before a copy
	start   Op // the copy Job
}

// next is the copy Job's next operation: a Job made for an earlier claim
// of that name, or one that finished before this run looked, is run again;
// a failed Job stops the move with failed's error.
func (ops copyJobOps) next(r jobRun, failed func(*Job) error) (Op, error) {
	job := r.job
	switch {
	case job != nil && job.ClaimUID != r.claimUID:
		return ops.restart, nil // made for an earlier claim of that name
	case job != nil && job.Failed:
		return "", failed(job)
	case job != nil && job.Succeeded && !r.watched:
		return ops.restart, nil
	case job != nil && job.Succeeded:
		return ops.mark, nil
	case job != nil:
		return ops.wait, nil
	case !r.prepared:
		return ops.recheck, nil
	}
	return ops.start, nil
}

// plainDirectory: dir is a relative path with no empty, "." or ".."
// component (a subPath kubelet mounts as it is named).
func plainDirectory(dir string) bool {
	return dir != "" && !path.IsAbs(dir) && path.Clean(dir) == dir && dir != "." && dir != ".." && !strings.HasPrefix(dir, "../")
}

// DirectoryCopyStepOf is the step a move by copy has reached when op is next.
func DirectoryCopyStepOf(op Op) Step {
	switch op {
	case OpCreateDirectoryCopyClaim:
		return StepDirectoryReady
	case OpRecheckDirectory, OpStartDirectoryCopy:
		return StepClaimCreated
	case OpWaitDirectoryCopy, OpRestartDirectoryCopy, OpMarkSplitCopied:
		return StepCopying
	case OpDeleteDirectoryCopyJob, OpDone:
		return StepDone
	}
	return StepPending
}
