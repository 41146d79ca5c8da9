package nodeacc

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/acctest"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/kube"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/migration"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/provider"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/safety"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/testcluster"
)

// Moving homes out of the shared layout by copy, through OpenTofu, on the
// real node: the same shared layout as the zero-copy move (a host path of
// this machine, homes written by servers' pods through their directories),
// but migration.method = "copy": each directory is copied by the
// provider's Job (the test bed's rsync image) into a new claim of the
// host-path provisioner's class, one user per apply (batch_size = 1).
// Pods mounting the new claims read back every byte, owner, mode, hard
// link, symlink, hole and time; the extended attribute is read on the new
// volume's disk; the directories on the shared claim are not changed by a
// byte, an inode or a time. Nothing stands in for the Job controller, the
// provisioner, kubelet or the container runtime.

// copyClass is the class of the users' new claims: dynamically
// provisioned, a directory of this machine per claim.
const copyClass = testcluster.HostPathClass

// copyMigrate is the move by copy, one user per apply.
var copyMigrate = fmt.Sprintf(`layout = "per_user"
  on_layout_change = "migrate"
  storage_class_name = %q
  migration = {
    method     = "copy"
    copy_image = %q
    batch_size = 1
  }`, copyClass, testcluster.ToolsImage)

// copyMove is moveHomes with, for each user, their directory on this
// machine's disk as written (diskSnapshot: inodes and times included).
type copyMove struct {
	*moveHomes
	disk map[string]map[string]string
}

func newCopyMove(t *testing.T, users ...string) *copyMove {
	h := &copyMove{moveHomes: newMoveHomes(t, users...), disk: map[string]map[string]string{}}
	// Copies, their Jobs and a round per step take longer than moves.
	ctx, cancel := context.WithTimeout(context.Background(), 35*time.Minute)
	t.Cleanup(cancel)
	h.ctx = ctx
	return h
}

// write is moveHomes.write, then the directories' snapshots.
func (h *copyMove) write() error {
	if err := h.moveHomes.write(); err != nil {
		return err
	}
	for _, u := range h.users {
		h.disk[u] = diskSnapshot(h.t, h.dir(u))
	}
	return nil
}

// directoryIntact checks that user's directory of the shared claim is as
// written: on this machine's disk (every entry's kind, mode, owner, links,
// size, inode, modification time and content), through the shared claim
// as the shared layout mounts it (the listing), and its extended
// attribute.
func (h *copyMove) directoryIntact(user string) error {
	if got := diskSnapshot(h.t, h.dir(user)); !maps.Equal(got, h.disk[user]) {
		return fmt.Errorf("%s's directory of the shared claim changed:\n%v\nwas\n%v", user, got, h.disk[user])
	}
	list, err := testcluster.RunPod(h.ctx, h.cs, subPathPod(h.ns, "relist-"+user, movedShared, "home/"+user, listScript))
	if err != nil {
		return err
	}
	if list != h.before[user] {
		return fmt.Errorf("%s's directory of the shared claim lists\n%s\nwas\n%s", user, list, h.before[user])
	}
	return h.xattrOn(filepath.Join(h.dir(user), "notes.txt"), user)
}

// xattrOn checks the extended attribute of user's notes.txt at file: the
// value set, or ENOTSUP as when it was set.
func (h *moveHomes) xattrOn(file, user string) error {
	buf := make([]byte, 64)
	n, err := syscall.Getxattr(file, movedXattr, buf)
	switch {
	case h.xattrs && (err != nil || string(buf[:max(n, 0)]) != "of "+user):
		return fmt.Errorf("%s: %s = %q (%v), want %q", file, movedXattr, buf[:max(n, 0)], err, "of "+user)
	case !h.xattrs && !errors.Is(err, syscall.ENOTSUP):
		return fmt.Errorf("%s: %s: %v, want ENOTSUP as when it was set", file, movedXattr, err)
	}
	return nil
}

// copiedClaim checks user's claim after the move by copy: KubeSpawner's
// name and username, Bound, of copyClass, carrying exactly the move's
// record (method directory-copy, no volume, the user's directory of the
// shared claim) and the copied mark equal to its own UID.
func (h *copyMove) copiedClaim(user string) (*corev1.PersistentVolumeClaim, error) {
	name := "claim-" + user
	pvc, err := h.claimOf(name)
	if err != nil || pvc == nil {
		return nil, fmt.Errorf("%s: no claim %s: %v", user, name, err)
	}
	rec, err := migration.DecodeSplitRecord(pvc.Annotations[migration.SplitAnnotation])
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	want := migration.SplitRecord{User: user, Namespace: h.ns, Claim: name, Shared: movedShared, SharedUID: string(h.shared.UID),
		Directory: "home/" + user, Method: migration.MethodDirectoryCopy}
	switch {
	case pvc.Status.Phase != corev1.ClaimBound:
		return nil, fmt.Errorf("%s: %s, want Bound", name, pvc.Status.Phase)
	case pvc.Spec.StorageClassName == nil || *pvc.Spec.StorageClassName != copyClass:
		return nil, fmt.Errorf("%s: storage class %v, want %s", name, pvc.Spec.StorageClassName, copyClass)
	case rec != want:
		return nil, fmt.Errorf("%s: record %+v, want %+v", name, rec, want)
	case pvc.Annotations[migration.SplitCopiedAnnotation] != string(pvc.UID):
		return nil, fmt.Errorf("%s: %s = %q, want its UID %s", name, migration.SplitCopiedAnnotation, pvc.Annotations[migration.SplitCopiedAnnotation], pvc.UID)
	case pvc.Annotations["hub.jupyter.org/username"] != user:
		return nil, fmt.Errorf("%s: annotations %v, want KubeSpawner's username", name, pvc.Annotations)
	case pvc.DeletionTimestamp != nil:
		return nil, fmt.Errorf("%s is being deleted", name)
	}
	return pvc, nil
}

// withoutInodes is a listing without its inode column: a copy has inodes
// of its own (hard links are checked by checkMovedTree).
func withoutInodes(listing string) string {
	var out []string
	for _, line := range strings.Split(strings.TrimSpace(listing), "\n") {
		f := strings.Fields(line)
		if len(f) > 5 {
			f = append(f[:5:5], f[6:]...)
		}
		out = append(out, strings.Join(f, " "))
	}
	return strings.Join(out, "\n")
}

// readBackCopy checks user's copied claim, then reads their home through it,
// mounted whole as the per-user layout mounts a home: the listing their
// directory of the shared claim gave (bytes, owners, modes, link counts,
// sizes, blocks, times, symlink targets), inodes aside; a hard link, a
// sparse file; the extended attribute on the very file the claim serves,
// which is not the directory's.
func (h *copyMove) readBackCopy(user string) error {
	pvc, err := h.copiedClaim(user)
	if err != nil {
		return err
	}
	after, err := testcluster.RunPod(h.ctx, h.cs, testcluster.ClaimPod(h.ns, "reader-"+user, pvc.Name, listScript))
	if err != nil {
		return err
	}
	if withoutInodes(after) != withoutInodes(h.before[user]) {
		return fmt.Errorf("%s lists\n%s\nthe directory of the shared claim listed\n%s", pvc.Name, after, h.before[user])
	}
	if err := checkMovedTree(user, after); err != nil {
		return fmt.Errorf("%s: %w", pvc.Name, err)
	}
	dir, err := hostPath(h.ctx, h.cs, h.ns, pvc.Name)
	if err != nil {
		return err
	}
	if strings.HasPrefix(dir, h.root+"/") || dir == h.root {
		return fmt.Errorf("%s's volume is %s, in the shared volume %s: not a copy", pvc.Name, dir, h.root)
	}
	entries, _ := parseListing(after)
	notes := filepath.Join(dir, "notes.txt")
	var st, src syscall.Stat_t
	if err := errors.Join(syscall.Stat(notes, &st), syscall.Stat(filepath.Join(h.dir(user), "notes.txt"), &src)); err != nil {
		return err
	}
	if ino := strconv.FormatUint(st.Ino, 10); ino != entries["notes.txt"].inode || st.Ino == src.Ino && st.Dev == src.Dev {
		return fmt.Errorf("the volume's notes.txt is inode %d (device %d), the claim's %s, the directory's %d (device %d)", st.Ino, st.Dev, entries["notes.txt"].inode, src.Ino, src.Dev)
	}
	return h.xattrOn(notes, user)
}

// noLeftovers checks that user has one claim (labelled with them: no
// second claim) and that no copy Job of theirs, nor its pods, is left;
// the Job's deletion is in the background: waited for a while.
func (h *copyMove) noLeftovers(user string) error {
	claimsOf, err := h.cs.CoreV1().PersistentVolumeClaims(h.ns).List(h.ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	var theirs []string
	for _, c := range claimsOf.Items {
		if c.Labels["hub.jupyter.org/username"] == user || c.Annotations["hub.jupyter.org/username"] == user || strings.Contains(c.Name, user) {
			theirs = append(theirs, c.Name)
		}
	}
	if !slices.Equal(theirs, []string{"claim-" + user}) {
		return fmt.Errorf("%s's claims: %v, want only claim-%s", user, theirs, user)
	}
	return h.jobsGone(migration.DirectoryCopyJobName("claim-" + user))
}

// jobsGone checks that the Jobs named, and their pods, are gone; a Job's
// deletion is in the background: waited for a while.
func (h *moveHomes) jobsGone(names ...string) error {
	deadline := time.Now().Add(time.Minute)
	for _, job := range names {
		for {
			_, err := h.cs.BatchV1().Jobs(h.ns).Get(h.ctx, job, metav1.GetOptions{})
			if err != nil && !apierrors.IsNotFound(err) {
				return err
			}
			pods, perr := h.cs.CoreV1().Pods(h.ns).List(h.ctx, metav1.ListOptions{LabelSelector: kube.JobNameLabel + "=" + job})
			if perr != nil {
				return perr
			}
			if apierrors.IsNotFound(err) && len(pods.Items) == 0 {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("Job %s (%v) or %d of its pods left", job, err == nil, len(pods.Items))
			}
			time.Sleep(time.Second)
		}
	}
	return nil
}

// copiedAll checks everything once user's home was copied: the claim, what it
// reads back, nothing left over, and every user's directory as written.
func (h *copyMove) copiedAll(user string) error {
	if err := errors.Join(h.readBackCopy(user), h.noLeftovers(user)); err != nil {
		return err
	}
	for _, u := range h.users {
		if err := h.directoryIntact(u); err != nil {
			return err
		}
	}
	return h.sharedIntact()
}

// planCopies checks a plan that copies user's home (and no one else's),
// leaving the users in later to later applies (batch_size); safe.
func (h *copyMove) planCopies(user string, later ...string) planOf {
	return planMigrates(user, string(migration.MethodDirectoryCopy), later, func(_ safety.Change, e planEntry) error {
		if e.Volume != "" {
			return fmt.Errorf("migration_plan[%s] = %+v, want no volume", user, e)
		}
		return nil
	})
}

// enterMove is the apply that gives the hub the move's settings: it copies
// no one (a copy needs a hub that refuses the user while it runs), and
// migration_plan says each user is copied by a later apply.
func (h *copyMove) enterMove(migrate string, users ...string) resource.TestStep {
	return enterFirst(migrate, "move", users, h.notMoved)
}

// enterFirst is the apply of config that gives the hub the settings of a
// migration (what: "move", "merge") that needs the hub first: it migrates
// none of users (untouched checks each), and migration_plan leaves each
// of them, and no one else, to a later apply, once the hub has those
// settings.
func enterFirst(config, what string, users []string, untouched func(user string) error) resource.TestStep {
	return resource.TestStep{
		Config:             config,
		ExpectNonEmptyPlan: true, // the next plan migrates
		Check: func(s *terraform.State) error {
			mplan, err := stateMigrationPlan(s)
			if err != nil {
				return err
			}
			for _, u := range users {
				if err := untouched(u); err != nil {
					return err
				}
				if e := mplan[u]; e.Method != "none" || e.Claim != "claim-"+u || !strings.Contains(e.Reason, "once the hub has the "+what+"'s settings") {
					return fmt.Errorf("migration_plan[%s] = %+v, want left for a later apply, once the hub has the %s's settings", u, e, what)
				}
			}
			if len(mplan) != len(users) {
				return fmt.Errorf("migration_plan %v, want %v left for a later apply", mplan, users)
			}
			return nil
		},
	}
}

// copyDone checks migration_status after an apply that copied user's home.
func copyDone(user string) resource.TestCheckFunc {
	return migrationDone(user, statusEntry{Method: string(migration.MethodDirectoryCopy), Step: string(migration.StepDone)})
}

// TestAccHomeStorage_moveOutOfSharedLayoutByCopy: alice's and bob's
// homes, written by their servers through their directories of the shared
// claim, are copied out of the shared layout one apply each (batch_size =
// 1, method directory-copy) into claims of the host-path class, and read
// back whole through them; their directories stay exactly as written.
func TestAccHomeStorage_moveOutOfSharedLayoutByCopy(t *testing.T) {
	acctest.Cluster(t)
	t.Parallel()
	start := time.Now()
	h := newCopyMove(t, "alice", "bob")
	shared, migrate := h.config(""), h.config(copyMigrate)
	const first, second = "alice", "bob" // users move in order
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: factories(provider.Options{}),
		Steps: []resource.TestStep{
			{
				Config: shared,
				Check: func(*terraform.State) error {
					t.Logf("shared layout applied after %s", time.Since(start).Round(time.Second))
					return h.write()
				},
			},
			h.enterMove(migrate, first, second),
			{
				// The next apply copies alice's home (users in order); the
				// plan after it copies bob's, and only his.
				Config: migrate,
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply:             []plancheck.PlanCheck{h.planCopies(first, second)},
					PostApplyPostRefresh: []plancheck.PlanCheck{h.planCopies(second)},
				},
				ExpectNonEmptyPlan: true,
				Check: resource.ComposeAggregateTestCheckFunc(
					copyDone(first),
					resource.TestCheckResourceAttr(homesAddr, "change_class", string(safety.ClassSafe)),
					func(*terraform.State) error {
						t.Logf("%s copied after %s", first, time.Since(start).Round(time.Second))
						if err := h.notMoved(second); err != nil {
							return err
						}
						return h.copiedAll(first)
					},
					checkClaim(first, "name", "claim-"+first),
				),
			},
			{
				Config:           migrate,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{h.planCopies(second)}},
				Check: resource.ComposeAggregateTestCheckFunc(
					copyDone(second),
					resource.TestCheckResourceAttr(homesAddr, "change_class", string(safety.ClassSafe)),
					checkClaim(first, "name", "claim-"+first),
					checkClaim(second, "name", "claim-"+second),
					checkLegacyUsers(map[string]string{}),
					func(*terraform.State) error {
						t.Logf("%s copied after %s", second, time.Since(start).Round(time.Second))
						if err := h.copiedAll(second); err != nil {
							return err
						}
						return h.readBackCopy(first)
					},
				),
			},
			{
				// Nothing left to do.
				Config:           migrate,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
			{Config: migrate, PlanOnly: true},
		},
	})
	t.Logf("took %s", time.Since(start).Round(time.Second))
}

// TestAccHomeStorage_moveOutOfSharedLayoutByCopyStoppedAfterEachStep:
// alice's move by copy, stopped right after each of its steps in turn
// (Options.AfterStep), from the start each time. After each stop her
// directory is as written, the claim as far as the move got, the plan
// shows the move going on with the claim made (never a new one), and a
// plain apply finishes it: the claim reads back her whole home, no second
// claim and no copy Job are left. Then the move is undone (the claim
// deleted: the directory holds everything) for the next round.
func TestAccHomeStorage_moveOutOfSharedLayoutByCopyStoppedAfterEachStep(t *testing.T) {
	acctest.Cluster(t)
	t.Parallel()
	start := time.Now()
	h := newCopyMove(t, "alice")
	const user, claim = "alice", "claim-alice"
	shared, migrate := h.config(""), h.config(copyMigrate)

	stops := []migration.Op{migration.OpPrepareDirectory, migration.OpCreateDirectoryCopyClaim, migration.OpStartDirectoryCopy,
		migration.OpWaitDirectoryCopy, migration.OpMarkSplitCopied}
	stop := &stopper{t: t, user: user}
	var stoppedUID string // the claim a stopped apply made, if any
	steps := []resource.TestStep{{
		Config: shared,
		Check:  func(*terraform.State) error { return h.write() },
	}, h.enterMove(migrate, user)}
	for i, op := range stops {
		steps = append(steps,
			resource.TestStep{
				PreConfig: func() {
					if i > 0 {
						h.undoCopy(user)
					}
					stop.set(op)
				},
				Config: migrate,
				ExpectError: wrapRE(fmt.Sprintf(`1 of 1 home migrations did not finish.*%s \(%s, copy of the user's directory of the shared claim, stopped at .*apply stopped after step %s`,
					user, claim, regexp.QuoteMeta(string(op)))),
			},
			resource.TestStep{
				PreConfig: func() {
					stop.set("")
					stoppedUID = h.stoppedAfterCopy(op)
				},
				Config:           migrate,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: h.planAfterStop(op, &stoppedUID)},
				Check: func(s *terraform.State) error {
					pvc, err := h.copiedClaim(user)
					if err != nil {
						return err
					}
					if stoppedUID != "" && string(pvc.UID) != stoppedUID {
						return fmt.Errorf("after stopping at %s, %s is a new claim (UID %s), not the one the stopped apply made (%s)", op, claim, pvc.UID, stoppedUID)
					}
					t.Logf("stopped after %s, then converged: steps so far %v", op, stop.ran())
					if rs := s.RootModule().Resources[homesAddr]; rs != nil {
						t.Logf("migration_status %s", rs.Primary.Attributes["migration_status"])
					}
					return h.copiedAll(user)
				},
			},
			resource.TestStep{Config: migrate, PlanOnly: true},
		)
	}
	resource.Test(t, resource.TestCase{ProtoV6ProviderFactories: factories(provider.Options{AfterStep: stop.hook}), Steps: steps})
	t.Logf("took %s", time.Since(start).Round(time.Second))
}

// stoppedAfterCopy checks alice's move by copy stopped after op: her directory
// as written, the claim and the copy Job as far as the move got. It
// returns the UID of the claim the stopped apply made ("" when none).
func (h *copyMove) stoppedAfterCopy(op migration.Op) string {
	t := h.t
	const user = "alice"
	if err := h.directoryIntact(user); err != nil {
		t.Fatalf("stopped after %s: %v", op, err)
	}
	pvc, err := h.claimOf("claim-" + user)
	if err != nil {
		t.Fatal(err)
	}
	job, err := h.cs.BatchV1().Jobs(h.ns).Get(h.ctx, migration.DirectoryCopyJobName("claim-"+user), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		job, err = nil, nil
	}
	if err != nil {
		t.Fatal(err)
	}
	marked := pvc != nil && pvc.Annotations[migration.SplitCopiedAnnotation] != ""
	switch op {
	case migration.OpPrepareDirectory:
		if pvc != nil || job != nil {
			t.Fatalf("stopped after %s: claim %v, Job %v; want neither", op, pvc, job)
		}
	case migration.OpCreateDirectoryCopyClaim:
		if pvc == nil || marked || job != nil || pvc.Annotations[migration.SplitAnnotation] == "" {
			t.Fatalf("stopped after %s: claim %+v, Job %v; want the claim with the record, not marked, and no Job", op, pvc, job)
		}
	case migration.OpStartDirectoryCopy, migration.OpWaitDirectoryCopy:
		if pvc == nil || marked || job == nil || job.Annotations[kube.DirectoryCopyClaimUIDAnnotation] != string(pvc.UID) {
			t.Fatalf("stopped after %s: claim %+v, Job %+v; want the claim, not marked, and its copy Job", op, pvc, job)
		}
		if op == migration.OpWaitDirectoryCopy && job.Status.Succeeded == 0 {
			t.Fatalf("stopped after %s: Job %s status %+v, want succeeded", op, job.Name, job.Status)
		}
	case migration.OpMarkSplitCopied:
		if pvc == nil || pvc.Annotations[migration.SplitCopiedAnnotation] != string(pvc.UID) || job != nil && job.DeletionTimestamp == nil {
			t.Fatalf("stopped after %s: claim %+v, Job %+v; want the claim marked with its UID, the Job deleted", op, pvc, job)
		}
	}
	t.Logf("stopped after %s: claim %s, marked %v, Job %v", op, phaseOf(pvc), marked, job != nil)
	if pvc == nil {
		return ""
	}
	return string(pvc.UID)
}

// planAfterStop checks the plan after alice's move by copy stopped after
// op. Once the claim is marked copied nothing is left to do: the plan is
// empty (it keeps the stopped apply's values, as every empty plan keeps
// the last apply's). Before, her move by copy resumes, on the claim the
// stopped apply made (its UID), never a new one.
func (h *copyMove) planAfterStop(op migration.Op, uid *string) []plancheck.PlanCheck {
	if op == migration.OpMarkSplitCopied {
		return []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}
	}
	return []plancheck.PlanCheck{planOf(func(after map[string]any) error {
		return h.planResumesCopy(op, *uid, after)
	})}
}

// planResumesCopy checks the plan after alice's move by copy stopped after
// op, before the mark: her move by copy resumed on the claim made (uid,
// "" when none was made), safe.
func (h *copyMove) planResumesCopy(op migration.Op, uid string, after map[string]any) error {
	const user = "alice"
	var changes safety.Changes
	var mplan map[string]planEntry
	if err := errors.Join(jsonAttr(after, "changes", &changes), jsonAttr(after, "migration_plan", &mplan)); err != nil {
		return err
	}
	method := string(migration.MethodDirectoryCopy)
	c, changing := changes[user]
	switch {
	case !changing || len(changes) != 1 || c.Action != safety.ActionMigrate || c.Method != method || mplan[user].Method != method || mplan[user].Claim != "claim-"+user:
		return fmt.Errorf("after stopping at %s the plan shows changes %v, migration_plan %v; want alice's move by copy resumed", op, changes, mplan)
	case c.UID != uid:
		return fmt.Errorf("after stopping at %s the plan shows %+v; want the claim made (UID %q) resumed", op, c, uid)
	}
	if cc := after["change_class"]; cc != string(safety.ClassSafe) {
		return fmt.Errorf("after stopping at %s: change_class %v, want safe", op, cc)
	}
	h.t.Logf("after stopping at %s: changes %v, migration_plan %v", op, changes, mplan)
	return nil
}

// undoCopy undoes user's move by copy as the design says: delete the
// claim (the directory holds everything), and waits until it is gone.
func (h *copyMove) undoCopy(user string) {
	t := h.t
	if err := h.cs.CoreV1().PersistentVolumeClaims(h.ns).Delete(h.ctx, "claim-"+user, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	for {
		pvc, err := h.claimOf("claim-" + user)
		if err != nil {
			t.Fatal(err)
		}
		if pvc == nil {
			return
		}
		select {
		case <-h.ctx.Done():
			t.Fatalf("undoing %s's move: claim still there", user)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// TestAccHomeStorage_moveOutOfSharedLayoutByCopyBusy: while a pod (a
// server of alice's, as the shared layout mounts it) uses her directory of
// the shared claim, the plan leaves her for a later apply (skip_running)
// or fails naming her, and nothing is copied; once the pod is gone, the
// next apply copies.
func TestAccHomeStorage_moveOutOfSharedLayoutByCopyBusy(t *testing.T) {
	acctest.Cluster(t)
	t.Parallel()
	start := time.Now()
	h := newCopyMove(t, "alice")
	const user, server = "alice", "jupyter-alice"
	shared, migrate := h.config(""), h.config(copyMigrate)
	enterWhileBusy := h.enterMove(migrate, user)
	enterWhileBusy.ExpectNonEmptyPlan = false // the next plan leaves her too: the pod still runs
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: factories(provider.Options{}),
		Steps: []resource.TestStep{
			{
				Config: shared,
				Check: func(*terraform.State) error {
					if err := h.write(); err != nil {
						return err
					}
					p := testcluster.ServerPod(h.ns, server, movedShared, "")
					p.Spec.Containers[0].VolumeMounts[0].SubPath = "home/" + user
					asUser(p, movedUIDs[user], 100)
					return testcluster.StartPod(h.ctx, h.cs, p)
				},
			},
			enterWhileBusy,
			{
				// The plan sees the pod: alice is left for a later apply
				// (skip_running), nothing is copied.
				Config: migrate,
				Check:  func(*terraform.State) error { return h.notMoved(user) },
			},
			{
				// Without skip_running the plan fails, naming her.
				Config:      h.config(strings.Replace(copyMigrate, "batch_size = 1", "batch_size = 1\n    skip_running = false", 1)),
				ExpectError: wrapRE(`Homes in use cannot be copied.*alice`),
			},
			{
				PreConfig: func() {
					if err := errors.Join(h.notMoved(user), h.directoryIntact(user)); err != nil {
						t.Fatalf("after the plans that left %s's home while %s runs: %v", user, server, err)
					}
					if err := testcluster.DeletePod(h.ctx, h.cs, h.ns, server); err != nil {
						t.Fatal(err)
					}
				},
				Config:           migrate,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{h.planCopies(user)}},
				Check: resource.ComposeAggregateTestCheckFunc(
					copyDone(user),
					func(*terraform.State) error { return h.copiedAll(user) },
				),
			},
			{Config: migrate, PlanOnly: true},
		},
	})
	t.Logf("took %s", time.Since(start).Round(time.Second))
}
