package nodeacc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
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
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/acctest"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/hubconfig"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/hubtest"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/kube"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/kubespawner"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/migration"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/provider"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/safety"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/testcluster"
)

// Consolidation (homes merged into the shared layout) through OpenTofu,
// on the real node: alice's and bob's homes are claims of their own of
// the host-path provisioner's class (the per-user layout), written by
// their servers' pods; the shared claim is a host path of this machine
// (as for the moves out of it). jupyter_home_storage then goes to layout
// "shared" with on_layout_change = "migrate": the first apply gives the
// hub the merge's settings and copies nothing, each later one merges one
// user (batch_size = 1): the provider's Job (the test bed's rsync image)
// copies the claim, mounted read-only, into the user's directory of the
// shared claim, and the claim is marked merged with its own UID; from
// then on the hub mounts the directory for that user. The
// directory, read on this machine's disk and through a pod that mounts
// it as the shared layout does (subPath), holds every byte, owner, mode,
// hard link, symlink, hole, extended attribute and time of the claim; the
// claim is not changed by a byte, an inode or a time. Nothing stands in
// for the Job controller, the provisioner, kubelet or the container
// runtime.

// mergeHomes is moveHomes (the shared claim on a host path of this
// machine) with each user's claim of the per-user layout: its volume's
// directory on this machine, its UID, and its snapshot as written
// (moveHomes.before holds its listing through a pod).
type mergeHomes struct {
	*moveHomes
	claimDir  map[string]string
	claimUID  map[string]string
	claimDisk map[string]map[string]string
}

func newMergeHomes(t *testing.T, users ...string) *mergeHomes {
	h := &mergeHomes{moveHomes: newMoveHomes(t, users...), claimDir: map[string]string{}, claimUID: map[string]string{}, claimDisk: map[string]map[string]string{}}
	// Copies, their Jobs and a round per step take a while.
	ctx, cancel := context.WithTimeout(context.Background(), 35*time.Minute)
	t.Cleanup(cancel)
	h.ctx = ctx
	return h
}

// mergeConfig is what the merge adds to the per-user layout: the shared
// layout, on_layout_change = "migrate", the copy image, one user per
// apply.
var mergeConfig = fmt.Sprintf(`layout           = "shared"
  on_layout_change = "migrate"
  shared_home = {
    claim_name        = %q
    sub_path_template = "home/{username}"
    init_image        = %q
  }
  migration = {
    copy_image = %q
    batch_size = 1
  }`, movedShared, testcluster.ToolsImage, testcluster.ToolsImage)

// config is the resource in the per-user layout (claims of copyClass),
// with more, and the hub's configuration from it (its Helm values an
// output).
func (h *mergeHomes) config(more string) string {
	var users []string
	for _, u := range h.users {
		users = append(users, u+" = {}")
	}
	return acctest.AdminConfig(h.t, fmt.Sprintf(`
resource "jupyter_home_storage" "homes" {
  namespace          = %q
  access_mode        = "ReadWriteMany"
  capacity           = "1Gi"
  storage_class_name = %q
  users              = jsonencode({ %s })
  %s
}

resource "jupyter_spawner_config" "hub" {
  namespace             = %q
  home_storage_settings = jupyter_home_storage.homes.spawner_settings
}

output "helm_values" {
  value = provider::jupyter::helm_values(jupyter_spawner_config.hub)
}
`, h.ns, copyClass, strings.Join(users, ", "), more, h.ns))
}

// write has each user's server write their home through their claim,
// mounted whole as the per-user layout mounts it, sets the extended
// attribute on notes.txt on this machine's disk (or finds the file system
// keeps none), lists the home through a pod and snapshots the claim's
// volume on this machine's disk.
func (h *mergeHomes) write() error {
	for _, u := range h.users {
		claim := "claim-" + u
		if _, err := testcluster.RunPod(h.ctx, h.cs, testcluster.ClaimPod(h.ns, "server-"+u, claim, movedTreeScript(u))); err != nil {
			return fmt.Errorf("%s's server: %w", u, err)
		}
		dir, err := hostPath(h.ctx, h.cs, h.ns, claim)
		if err != nil {
			return err
		}
		if err := h.setXattr(filepath.Join(dir, "notes.txt"), u); err != nil {
			return err
		}
		list, err := testcluster.RunPod(h.ctx, h.cs, testcluster.ClaimPod(h.ns, "list-"+u, claim, listScript))
		if err != nil {
			return err
		}
		if err := checkMovedTree(u, list); err != nil {
			return fmt.Errorf("the home as written: %w\n%s", err, list)
		}
		pvc, err := h.claimOf(claim)
		if err != nil || pvc == nil {
			return fmt.Errorf("%s: %v %v", claim, pvc, err)
		}
		h.before[u], h.claimDir[u], h.claimUID[u], h.claimDisk[u] = list, dir, string(pvc.UID), diskSnapshot(h.t, dir)
	}
	return nil
}

// claimIntact checks that user's claim is the one written (its UID,
// Bound, not being deleted) and its volume on this machine's disk exactly
// as written: every entry's kind, mode, owner, links, size, inode, time and
// content, and the extended attribute. It returns the claim.
func (h *mergeHomes) claimIntact(user string) (*corev1.PersistentVolumeClaim, error) {
	name := "claim-" + user
	pvc, err := h.claimOf(name)
	switch {
	case err != nil || pvc == nil:
		return nil, fmt.Errorf("%s: %v %v", name, pvc, err)
	case string(pvc.UID) != h.claimUID[user] || pvc.Status.Phase != corev1.ClaimBound || pvc.DeletionTimestamp != nil:
		return nil, fmt.Errorf("%s: UID %s, %s, deleting %v; want the claim written (UID %s), Bound", name, pvc.UID, pvc.Status.Phase, pvc.DeletionTimestamp != nil, h.claimUID[user])
	}
	if got := diskSnapshot(h.t, h.claimDir[user]); !maps.Equal(got, h.claimDisk[user]) {
		return nil, fmt.Errorf("%s's volume changed:\n%v\nwas\n%v", name, got, h.claimDisk[user])
	}
	return pvc, h.xattrOn(filepath.Join(h.claimDir[user], "notes.txt"), user)
}

// notMerged checks that user's claim is intact and carries neither a
// merge's record nor its mark.
func (h *mergeHomes) notMerged(user string) error {
	pvc, err := h.claimIntact(user)
	if err != nil {
		return err
	}
	if v, w := pvc.Annotations[migration.MergeAnnotation], pvc.Annotations[migration.MergedAnnotation]; v != "" || w != "" {
		return fmt.Errorf("%s carries record %q, mark %q; want neither", pvc.Name, v, w)
	}
	return nil
}

// mergeRecord is the record a merge of user's claim writes.
func (h *mergeHomes) mergeRecord(user string) migration.MergeRecord {
	return migration.MergeRecord{User: user, Namespace: h.ns, Claim: "claim-" + user, ClaimUID: h.claimUID[user], Shared: movedShared,
		SharedUID: string(h.shared.UID), Directory: "home/" + user}
}

// mergedClaim checks user's claim after the merge: intact, carrying
// exactly the merge's record and the merged mark equal to its own UID.
func (h *mergeHomes) mergedClaim(user string) error {
	pvc, err := h.claimIntact(user)
	if err != nil {
		return err
	}
	rec, err := migration.DecodeMergeRecord(pvc.Annotations[migration.MergeAnnotation])
	switch {
	case err != nil:
		return fmt.Errorf("%s: %w", pvc.Name, err)
	case rec != h.mergeRecord(user):
		return fmt.Errorf("%s: record %+v, want %+v", pvc.Name, rec, h.mergeRecord(user))
	case pvc.Annotations[migration.MergedAnnotation] != string(pvc.UID):
		return fmt.Errorf("%s: %s = %q, want its UID %s", pvc.Name, migration.MergedAnnotation, pvc.Annotations[migration.MergedAnnotation], pvc.UID)
	}
	return nil
}

// withoutInode is a diskSnapshot without inodes: a copy has its own.
func withoutInode(snap map[string]string) map[string]string {
	ino := regexp.MustCompile(` i[0-9]+ `)
	out := make(map[string]string, len(snap))
	for k, v := range snap {
		out[k] = ino.ReplaceAllString(v, " ")
	}
	return out
}

// readBackMerge checks user's merge: the claim marked and intact, and
// their directory of the shared claim the claim's copy. On this machine's
// disk: every entry's kind, mode, owner, links, size, time (to the
// nanosecond) and content, and the extended attribute on the directory's
// own file. Through a pod mounting the shared claim at the user's
// directory, as the shared layout mounts a home: the claim's listing
// (bytes, owners, modes, link counts, sizes, blocks, times, symlink
// targets), inodes aside, with the hard link and the hole.
func (h *mergeHomes) readBackMerge(user string) error {
	if err := h.mergedClaim(user); err != nil {
		return err
	}
	dir := h.dir(user)
	if got, want := withoutInode(diskSnapshot(h.t, dir)), withoutInode(h.claimDisk[user]); !maps.Equal(got, want) {
		return fmt.Errorf("%s's directory of the shared claim on this machine:\n%v\nthe claim's volume:\n%v", user, got, want)
	}
	var st, src syscall.Stat_t
	if err := errors.Join(syscall.Stat(filepath.Join(dir, "notes.txt"), &st), syscall.Stat(filepath.Join(h.claimDir[user], "notes.txt"), &src)); err != nil {
		return err
	}
	if st.Ino == src.Ino && st.Dev == src.Dev {
		return fmt.Errorf("%s's notes.txt in the directory is the claim's own file (inode %d): not a copy", user, st.Ino)
	}
	if err := h.xattrOn(filepath.Join(dir, "notes.txt"), user); err != nil {
		return err
	}
	list, err := testcluster.RunPod(h.ctx, h.cs, subPathPod(h.ns, "read-"+user, movedShared, "home/"+user, listScript))
	if err != nil {
		return err
	}
	return h.readsClaim(user, list, user+"'s directory of the shared claim")
}

// readsClaim checks a listing of user's home (what reads it: who) against
// the claim's as written, inodes aside, and the tree it holds.
func (h *mergeHomes) readsClaim(user, list, who string) error {
	if withoutInodes(list) != withoutInodes(h.before[user]) {
		return fmt.Errorf("%s lists\n%s\nthe claim listed\n%s", who, list, h.before[user])
	}
	if err := checkMovedTree(user, list); err != nil {
		return fmt.Errorf("%s: %w", who, err)
	}
	return nil
}

// mergedAll checks everything once user's home was merged: what the
// directory reads back, no Job of the merge left, the other users'
// claims intact and the shared claim as it was.
func (h *mergeHomes) mergedAll(user string) error {
	claim := "claim-" + user
	if err := errors.Join(h.readBackMerge(user), h.jobsGone(migration.MergeJobName(claim), kube.DirectoryJobName(claim))); err != nil {
		return err
	}
	for _, u := range h.users {
		if _, err := h.claimIntact(u); err != nil {
			return err
		}
	}
	return h.sharedIntact()
}

// planMerges checks a plan that merges user's claim (and no one else's),
// the claim written (its UID), leaving the users in later to later
// applies (batch_size); safe.
func (h *mergeHomes) planMerges(user string, later ...string) planOf {
	return planMigrates(user, string(migration.MethodMerge), later, func(c safety.Change, _ planEntry) error {
		if c.UID != h.claimUID[user] {
			return fmt.Errorf("changes[%s] = %+v, want the claim written (UID %s)", user, c, h.claimUID[user])
		}
		return nil
	})
}

// enterMerge is the apply that gives the hub the merge's settings: it
// copies no one (a merge needs a hub that refuses the user while it
// copies): no claim is marked, no directory made, and migration_plan says
// each user is merged by a later apply.
func (h *mergeHomes) enterMerge(merge string) resource.TestStep {
	return enterFirst(merge, "merge", h.users, func(u string) error {
		if _, err := os.Lstat(h.dir(u)); !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("%s's directory of the shared claim exists (%v) before any merge", u, err)
		}
		return h.notMerged(u)
	})
}

// mergeDone checks migration_status after an apply that merged user.
func mergeDone(user string) resource.TestCheckFunc {
	return migrationDone(user, statusEntry{Method: string(migration.MethodMerge), Step: string(migration.StepDone)})
}

// TestAccHomeStorage_mergeIntoSharedLayout: alice's and bob's claims,
// written by their servers, are merged into their directories of the
// shared claim, one apply each after the one that gives the hub the
// merge's settings, and read back whole through the directories; the
// claims stay exactly as written. Between the two, a hub with the merge's
// settings (real KubeSpawner and the provider's hub file) spawns both:
// alice's server mounts her directory and reads there what she wrote
// before the merge, bob's mounts his claim. A directory that holds a file
// already refuses bob's merge (nothing recorded on his claim, the file
// untouched) until the file is gone.
func TestAccHomeStorage_mergeIntoSharedLayout(t *testing.T) {
	acctest.Cluster(t)
	t.Parallel()
	start := time.Now()
	h := newMergeHomes(t, "alice", "bob")
	perUser, merge := h.config(""), h.config(mergeConfig)
	const first, second = "alice", "bob" // users merge in order
	stray := filepath.Join(h.dir(second), "stray.txt")
	var strayDir map[string]string
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: factories(provider.Options{}),
		Steps: []resource.TestStep{
			{
				Config: perUser,
				Check: resource.ComposeAggregateTestCheckFunc(
					checkClaim(first, "name", "claim-"+first),
					checkClaim(second, "name", "claim-"+second),
					func(*terraform.State) error {
						t.Logf("per-user layout applied after %s", time.Since(start).Round(time.Second))
						return h.write()
					},
				),
			},
			h.enterMerge(merge),
			{
				// alice's merge; the plan after it merges bob's, and only his.
				Config: merge,
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply:             []plancheck.PlanCheck{h.planMerges(first, second)},
					PostApplyPostRefresh: []plancheck.PlanCheck{h.planMerges(second)},
				},
				ExpectNonEmptyPlan: true,
				Check: resource.ComposeAggregateTestCheckFunc(
					mergeDone(first),
					resource.TestCheckResourceAttr(homesAddr, "change_class", string(safety.ClassSafe)),
					func(*terraform.State) error {
						t.Logf("%s merged after %s", first, time.Since(start).Round(time.Second))
						return errors.Join(h.mergedAll(first), h.notMerged(second))
					},
					// The hub with the merge's settings: alice's server
					// mounts her directory, bob's his claim.
					func(s *terraform.State) error { return h.spawnBoth(s, first, second) },
				),
			},
			{
				// bob's directory holds a file: his merge is refused, the
				// error names the directory, nothing is recorded.
				PreConfig: func() {
					if err := errors.Join(os.MkdirAll(h.dir(second), 0o755), os.WriteFile(stray, []byte("not bob's home\n"), 0o644)); err != nil {
						t.Fatal(err)
					}
					strayDir = diskSnapshot(t, h.dir(second))
				},
				Config:           merge,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{h.planMerges(second)}},
				ExpectError: wrapRE(`1 of 1 home migrations did not finish.*bob \(claim-bob, merge into the user's directory of the shared claim, stopped at pending\): ` +
					`prepare-merge-directory: .*directory "home/bob" of home-shared failed.*` +
					`refusing to merge into /mnt/homes/home/bob: it holds files already.*nothing was recorded on claim [^ ]*/claim-bob`),
			},
			{
				PreConfig: func() {
					if got := diskSnapshot(t, h.dir(second)); !maps.Equal(got, strayDir) {
						t.Fatalf("after the refused merge, bob's directory:\n%v\nwas\n%v", got, strayDir)
					}
					if err := errors.Join(h.notMerged(second), h.readBackMerge(first)); err != nil {
						t.Fatalf("after the refused merge: %v", err)
					}
					if err := os.Remove(stray); err != nil { // an empty directory is merged into
						t.Fatal(err)
					}
				},
				Config:           merge,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{h.planMerges(second)}},
				Check: resource.ComposeAggregateTestCheckFunc(
					mergeDone(second),
					resource.TestCheckResourceAttr(homesAddr, "change_class", string(safety.ClassSafe)),
					func(*terraform.State) error {
						t.Logf("%s merged after %s", second, time.Since(start).Round(time.Second))
						return errors.Join(h.mergedAll(second), h.readBackMerge(first))
					},
				),
			},
			{Config: merge, PlanOnly: true},
		},
	})
	t.Logf("took %s", time.Since(start).Round(time.Second))
}

// TestAccHomeStorage_mergeIntoSharedLayoutStoppedAfterEachStep: alice's
// merge, stopped right after each of its steps in turn
// (Options.AfterStep), from the start each time; after a stop the next
// apply is stopped once more at the step only a resumed merge takes
// (the directory made again after the record; a copy Job this run did not
// watch run again). After each stop her claim is intact, the merge as far
// as it got, the plan shows it going on with her claim (its UID), and a
// plain apply finishes it: the directory reads back her whole home. Then
// the merge is undone as the design says (the annotations removed, the
// copy removed by hand) for the next round.
func TestAccHomeStorage_mergeIntoSharedLayoutStoppedAfterEachStep(t *testing.T) {
	acctest.Cluster(t)
	t.Parallel()
	start := time.Now()
	h := newMergeHomes(t, "alice")
	const user, claim = "alice", "claim-alice"
	perUser, merge := h.config(""), h.config(mergeConfig)

	// Each round: the ops a merge is stopped after, in turn.
	rounds := [][]migration.Op{
		{migration.OpPrepareMergeDirectory},
		{migration.OpRecordMerge, migration.OpRecheckMergeDirectory},
		{migration.OpStartMerge},
		{migration.OpWaitMerge, migration.OpRestartMerge},
		{migration.OpMarkMerged},
	}
	stop := &stopper{t: t, user: user}
	steps := []resource.TestStep{{
		Config: perUser,
		Check:  func(*terraform.State) error { return h.write() },
	}, h.enterMerge(merge)}
	for i, ops := range rounds {
		for j, op := range ops {
			steps = append(steps, resource.TestStep{
				PreConfig: func() {
					switch {
					case j > 0:
						stop.set("")
						h.stoppedAfterMerge(ops[j-1])
					case i > 0:
						h.undoMerge(user)
					}
					stop.set(op)
				},
				Config: merge,
				ExpectError: wrapRE(fmt.Sprintf(`1 of 1 home migrations did not finish.*%s \(%s, merge into the user's directory of the shared claim, stopped at .*apply stopped after step %s`,
					user, claim, regexp.QuoteMeta(string(op)))),
			})
		}
		last := ops[len(ops)-1]
		steps = append(steps, resource.TestStep{
			PreConfig: func() {
				stop.set("")
				h.stoppedAfterMerge(last)
			},
			Config:           merge,
			ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: h.planAfterMergeStop(last)},
			Check: func(s *terraform.State) error {
				t.Logf("stopped after %v, then converged: steps so far %v", ops, stop.ran())
				if rs := s.RootModule().Resources[homesAddr]; rs != nil {
					t.Logf("migration_status %s", rs.Primary.Attributes["migration_status"])
				}
				return h.mergedAll(user)
			},
		})
	}
	steps = append(steps, resource.TestStep{Config: merge, PlanOnly: true})
	resource.Test(t, resource.TestCase{ProtoV6ProviderFactories: factories(provider.Options{AfterStep: stop.hook}), Steps: steps})
	t.Logf("took %s", time.Since(start).Round(time.Second))
}

// stoppedAfterMerge checks alice's merge stopped after op: her claim
// intact, with the record and mark, the directory and the copy Job as far
// as the merge got.
func (h *mergeHomes) stoppedAfterMerge(op migration.Op) {
	t := h.t
	const user = "alice"
	pvc, err := h.claimIntact(user)
	if err != nil {
		t.Fatalf("stopped after %s: %v", op, err)
	}
	job, err := h.cs.BatchV1().Jobs(h.ns).Get(h.ctx, migration.MergeJobName("claim-"+user), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		job, err = nil, nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var dirEntries []os.DirEntry
	dir, derr := os.Stat(h.dir(user))
	if derr == nil {
		dirEntries, derr = os.ReadDir(h.dir(user))
	}
	recorded := pvc.Annotations[migration.MergeAnnotation] == h.mergeRecord(user).Encode()
	marked := pvc.Annotations[migration.MergedAnnotation]
	live := job != nil && job.DeletionTimestamp == nil
	switch op {
	case migration.OpPrepareMergeDirectory, migration.OpRecordMerge, migration.OpRecheckMergeDirectory:
		// The directory made, owned by directory_uid (1000) with mode
		// 0700, and empty; no copy Job.
		var st *syscall.Stat_t
		if derr == nil {
			st, _ = dir.Sys().(*syscall.Stat_t)
		}
		if derr != nil || st == nil || st.Uid != 1000 || dir.Mode().Perm() != 0o700 || len(dirEntries) != 0 || live {
			t.Fatalf("stopped after %s: directory %v (%v, %d entries), Job %v; want the directory made, empty, and no Job", op, dir, derr, len(dirEntries), live)
		}
		if wantRecord := op != migration.OpPrepareMergeDirectory; recorded != wantRecord || marked != "" {
			t.Fatalf("stopped after %s: annotations %v; want the record %v, no mark", op, pvc.Annotations, wantRecord)
		}
	case migration.OpStartMerge, migration.OpWaitMerge:
		if !recorded || marked != "" || !live || job.Annotations[kube.MergeClaimUIDAnnotation] != string(pvc.UID) {
			t.Fatalf("stopped after %s: annotations %v, Job %+v; want the record, no mark, and the copy Job of the claim", op, pvc.Annotations, job)
		}
		if op == migration.OpWaitMerge && !jobSucceeded(job) {
			t.Fatalf("stopped after %s: Job %s status %+v, want succeeded", op, job.Name, job.Status)
		}
	case migration.OpRestartMerge:
		if !recorded || marked != "" || live {
			t.Fatalf("stopped after %s: annotations %v, Job %v; want the record, no mark, the Job deleted", op, pvc.Annotations, live)
		}
	case migration.OpMarkMerged:
		if !recorded || marked != string(pvc.UID) || live {
			t.Fatalf("stopped after %s: annotations %v, Job %v; want the record, the mark of its UID, the Job deleted", op, pvc.Annotations, live)
		}
		if err := h.readBackMerge(user); err != nil {
			t.Fatalf("stopped after %s: %v", op, err)
		}
	}
	t.Logf("stopped after %s: recorded %v, marked %v, Job %v, directory entries %d", op, recorded, marked != "", live, len(dirEntries))
}

func jobSucceeded(j *batchv1.Job) bool {
	for _, c := range j.Status.Conditions {
		if c.Type == batchv1.JobComplete && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

// planAfterMergeStop checks the plan after alice's merge stopped after
// op. Once the claim is marked merged nothing is left to do: the plan is
// empty. Before, her merge resumes on her claim (its UID), safe.
func (h *mergeHomes) planAfterMergeStop(op migration.Op) []plancheck.PlanCheck {
	if op == migration.OpMarkMerged {
		return []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}
	}
	return []plancheck.PlanCheck{h.planMerges("alice")}
}

// undoMerge undoes user's merge as the design says: the record and the
// mark removed from the claim (it is the home again), the directory's
// copy removed by hand.
func (h *mergeHomes) undoMerge(user string) {
	t := h.t
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]any{
		migration.MergeAnnotation: nil, migration.MergedAnnotation: nil}}})
	if _, err := h.cs.CoreV1().PersistentVolumeClaims(h.ns).Patch(h.ctx, "claim-"+user, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(h.dir(user)); err != nil {
		t.Fatal(err)
	}
	if err := h.notMerged(user); err != nil {
		t.Fatalf("undoing %s's merge: %v", user, err)
	}
}

// spawnBoth starts a hub with the Helm values the last apply rendered (the
// merge's settings: real KubeSpawner and the provider's hub file, asking
// the API server as the chart's hub ServiceAccount), spawns merged's and
// notYet's servers and runs their pods on the node. merged's server
// mounts the shared claim at merged's directory and reads there the home
// the merge copied (the directory's own inodes, not the claim's); notYet's
// mounts notYet's claim whole and reads the home as written (the claim's
// inodes).
func (h *mergeHomes) spawnBoth(s *terraform.State, merged, notYet string) error {
	own, err := helmValues(s)
	if err != nil {
		return err
	}
	hub := hubtest.StartHub(h.t, hubtest.HubIdentity(h.t, h.ns), hubtest.MergeValues(hubtest.Z2jhValues(h.t), own), h.t.TempDir(), hubconfig.FilesDir)
	got, err := hub.Spawn([]hubtest.HubUser{{Name: merged}, {Name: notYet}})
	if err != nil {
		return err
	}
	list, err := h.spawnedHome(merged, got[merged], movedShared, "home/"+merged)
	if err != nil {
		return err
	}
	if err := h.readsClaim(merged, list, merged+"'s server"); err != nil {
		return err
	}
	var st syscall.Stat_t
	if err := syscall.Stat(filepath.Join(h.dir(merged), "notes.txt"), &st); err != nil {
		return err
	}
	if entries, _ := parseListing(list); entries["notes.txt"].inode != strconv.FormatUint(st.Ino, 10) {
		return fmt.Errorf("%s's server reads notes.txt of inode %s, the directory's is %d", merged, entries["notes.txt"].inode, st.Ino)
	}
	if got[notYet].PVCName != "claim-"+notYet {
		return fmt.Errorf("%s: KubeSpawner's pvc_name is %s, want claim-%s", notYet, got[notYet].PVCName, notYet)
	}
	if list, err = h.spawnedHome(notYet, got[notYet], "claim-"+notYet, ""); err != nil {
		return err
	}
	if list != h.before[notYet] {
		return fmt.Errorf("%s's server reads\n%s\nthe claim listed\n%s", notYet, list, h.before[notYet])
	}
	return nil
}

// spawnedHome runs KubeSpawner's pod of user's server (the hub's spawn s)
// on the node and returns the listing of its home as the server sees it
// (listScript). The pod must mount one claim, claim, and the notebook
// container must mount it at subPath sub ("" for the whole claim); the
// provider's init container, which makes the directory when missing, must
// be there exactly when sub is set, told sub, and runs as rendered.
// Swapped as runSharedHomePod swaps them: z2jh's privileged init container
// dropped, every image the test bed's, the test bed's scheduler, no
// restart; the notebook container lists the home instead of
// jupyterhub-singleuser, as the home's owner (each home here has its own).
func (h *mergeHomes) spawnedHome(user string, s hubtest.HubSpawn, claim, sub string) (string, error) {
	if s.Refused != "" {
		return "", fmt.Errorf("%s: the hub refused the spawn: %s (%s)", user, s.Refused, s.RefusedLog)
	}
	pod, err := s.PodObject()
	if err != nil {
		return "", fmt.Errorf("%s: %w", user, err)
	}
	var claims []string
	volume := ""
	for _, v := range pod.Spec.Volumes {
		if v.PersistentVolumeClaim != nil {
			claims = append(claims, v.PersistentVolumeClaim.ClaimName)
			volume = v.Name
		}
	}
	if len(claims) != 1 || claims[0] != claim {
		return "", fmt.Errorf("%s: the pod mounts claims %v, want only %s", user, claims, claim)
	}
	pod.Namespace, pod.Spec.SchedulerName, pod.Spec.RestartPolicy = h.ns, "", corev1.RestartPolicyNever
	var inits []string
	for _, ic := range pod.Spec.InitContainers {
		if ic.Name != kubespawner.SharedInitContainer {
			continue
		}
		inits = append(inits, ic.Name)
		for _, e := range ic.Env {
			if e.Name == "HOME_DIRECTORY" && e.Value != sub {
				return "", fmt.Errorf("%s: the init container is told directory %q, want %q", user, e.Value, sub)
			}
		}
	}
	if want := sub != ""; (len(inits) == 1) != want || len(inits) > 1 {
		return "", fmt.Errorf("%s: the provider's init containers %v; want one: %v", user, inits, want)
	}
	pod.Spec.InitContainers = slices.DeleteFunc(pod.Spec.InitContainers, func(ic corev1.Container) bool { return ic.Name != kubespawner.SharedInitContainer })
	uid, gid := movedUIDs[user], int64(100)
	mount, mounted := standInNotebook(pod, volume, func(ct *corev1.Container, mount string) {
		ct.Command = []string{"sh", "-c", strings.Replace(listScript, "cd /home", "cd '"+mount+"'", 1)}
		if ct.SecurityContext == nil {
			ct.SecurityContext = &corev1.SecurityContext{}
		}
		ct.SecurityContext.RunAsUser, ct.SecurityContext.RunAsGroup = &uid, &gid
	})
	if mount == "" {
		return "", fmt.Errorf("%s: the notebook container does not mount the home volume: %+v", user, pod.Spec.Containers)
	}
	if mounted != sub {
		return "", fmt.Errorf("%s: the home is mounted at %s from subPath %q, want %q", user, mount, mounted, sub)
	}
	list, err := testcluster.RunPod(h.ctx, h.cs, pod)
	if err != nil {
		return "", fmt.Errorf("%s: %w", user, err)
	}
	h.t.Logf("%s: pod %s (init containers %v) has home %s = %q of %s", user, pod.Name, inits, mount, sub, claim)
	return list, nil
}
