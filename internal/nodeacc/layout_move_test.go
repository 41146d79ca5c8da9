package nodeacc

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
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
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/acctest"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/migration"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/provider"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/safety"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/testcluster"
)

// Moving homes out of the shared layout through OpenTofu, on the real
// node: the shared claim is a host path of this machine; servers' pods
// (mounting their user's directory of it, as the shared layout mounts a
// home) write alice's and bob's homes (bob's is then left at the place an
// earlier template gave it, recorded on the shared claim, as a move by
// rename leaves a user who has not spawned since); jupyter_home_storage then goes from
// layout "shared" to "per_user" with on_layout_change = "migrate" and
// moves them, one per apply (batch_size = 1), into claims of their own.
// Pods mounting those claims (whole, as the per-user layout mounts a home)
// read back every byte, owner, mode, link, inode and time; what one writes
// through alice's claim is in her directory of the shared claim (the same
// files: nothing was copied). Nothing stands in for the directory Job's
// controller, the PV binder, kubelet or the container runtime.

const movedShared = "home-shared"

// movedUIDs are the owners of the users' homes.
var movedUIDs = map[string]int64{"alice": 1000, "bob": 1001}

// movedFiles are a user's regular files (relative path: content) and modes.
func movedFiles(user string) map[string]string {
	return map[string]string{
		"notes.txt":             "notes of " + user + "\n",
		"work/data/results.csv": "user,score\n" + user + ",42\n",
		"work/raw.bin":          "\x00\x01\x02\xff\xfe\r\n\t " + user,
	}
}

var movedModes = map[string]uint64{"notes.txt": 0o640, "work/data/results.csv": 0o644, "work/raw.bin": 0o600}

// movedTreeScript writes a user's home into /home (the user's directory
// of the shared claim) as their server leaves it: the files with their
// owner and mode, a hard link, a relative symlink, a sparse file (4 MiB of
// hole, then three bytes) and an empty group-shared (setgid) directory.
func movedTreeScript(user string) string {
	uid := movedUIDs[user]
	s := testcluster.WriteFilesScript("/home", movedFiles(user)) + fmt.Sprintf("chown -R %d:100 /home\nchmod 0700 /home\n", uid)
	for _, name := range slices.Sorted(maps.Keys(movedModes)) {
		s += fmt.Sprintf("chmod %o '/home/%s'\n", movedModes[name], name)
	}
	return s + strings.ReplaceAll(`ln /home/work/data/results.csv /home/work/results-link.csv
ln -s data/results.csv /home/work/latest.csv
chown -h UID:100 /home/work/latest.csv
printf end | dd of=/home/work/sparse.img bs=4194304 seek=1 2>/dev/null
chown UID:100 /home/work/sparse.img
mkdir /home/empty
chown UID:2000 /home/empty
chmod 2770 /home/empty
`, "UID", strconv.FormatInt(uid, 10))
}

// listEntry is one line of listScript's listing.
type listEntry struct {
	mode               uint64
	owner, inode, rest string
	links, size        int64
	blocks             int64
	sum, content       string
}

func parseListing(listing string) (map[string]listEntry, error) {
	entries := map[string]listEntry{}
	for _, line := range strings.Split(strings.TrimSpace(listing), "\n") {
		f := strings.Fields(line)
		if len(f) < 7 {
			return nil, fmt.Errorf("listing line %q", line)
		}
		var e listEntry
		var err error
		if e.mode, err = strconv.ParseUint(f[1], 16, 32); err != nil {
			return nil, fmt.Errorf("listing line %q: %w", line, err)
		}
		e.owner, e.inode = f[2], f[5]
		e.links, _ = strconv.ParseInt(f[3], 10, 64)
		e.size, _ = strconv.ParseInt(f[4], 10, 64)
		e.rest = strings.Join(f[7:], " ")
		for _, r := range f[7:] {
			switch {
			case strings.HasPrefix(r, "sha256:"):
				e.sum = strings.TrimPrefix(r, "sha256:")
			case strings.HasPrefix(r, "blocks:"):
				e.blocks, _ = strconv.ParseInt(strings.TrimPrefix(r, "blocks:"), 10, 64)
			default:
				e.content = r
			}
		}
		entries[strings.TrimPrefix(f[0], "./")] = e
	}
	return entries, nil
}

// checkMovedTree checks a listing of user's home against what
// movedTreeScript wrote, and that it holds nothing else (extra: further
// entries expected, such as a file written since).
func checkMovedTree(user, listing string, extra ...string) error {
	const (
		typeMask = 0o170000
		regular  = 0o100000
		dir      = 0o040000
		symlink  = 0o120000
	)
	entries, err := parseListing(listing)
	if err != nil {
		return err
	}
	owner := fmt.Sprintf("%d:100", movedUIDs[user])
	want := append([]string{".", "empty", "work", "work/data", "work/results-link.csv", "work/latest.csv", "work/sparse.img"}, extra...)
	for name := range movedFiles(user) {
		want = append(want, name)
	}
	if got := slices.Sorted(maps.Keys(entries)); !slices.Equal(got, slices.Sorted(slices.Values(want))) {
		return fmt.Errorf("%s's home holds %v, want %v", user, got, slices.Sorted(slices.Values(want)))
	}
	if h := entries["."]; h.mode != dir|0o700 || h.owner != owner {
		return fmt.Errorf("%s's home: mode %o owner %s, want %o %s", user, h.mode, h.owner, dir|0o700, owner)
	}
	for name, content := range movedFiles(user) {
		e := entries[name]
		switch {
		case e.content != hex.EncodeToString([]byte(content)):
			return fmt.Errorf("%s's %s holds %s, want %x", user, name, e.rest, content)
		case e.mode != regular|movedModes[name] || e.owner != owner:
			return fmt.Errorf("%s's %s: mode %o owner %s, want %o %s", user, name, e.mode, e.owner, regular|movedModes[name], owner)
		}
	}
	link, orig := entries["work/results-link.csv"], entries["work/data/results.csv"]
	if link.inode != orig.inode || link.links != 2 || orig.links != 2 || link.content != orig.content {
		return fmt.Errorf("%s's work/results-link.csv is not a hard link of work/data/results.csv: %+v %+v", user, link, orig)
	}
	if sl := entries["work/latest.csv"]; sl.mode&typeMask != symlink || sl.rest != "-> data/results.csv" || sl.owner != owner {
		return fmt.Errorf("%s's work/latest.csv is not the symlink to data/results.csv: %+v", user, sl)
	}
	if e := entries["empty"]; e.mode != dir|0o2770 || e.owner != fmt.Sprintf("%d:2000", movedUIDs[user]) || e.links != 2 {
		return fmt.Errorf("%s's empty: %+v, want an empty directory, mode %o, owner %d:2000", user, e, dir|0o2770, movedUIDs[user])
	}
	sparse := make([]byte, sparseSize)
	copy(sparse[sparseSize-3:], "end")
	sum := sha256.Sum256(sparse)
	if sp := entries["work/sparse.img"]; sp.size != sparseSize || sp.sum != hex.EncodeToString(sum[:]) || sp.blocks*512 >= 1<<20 || sp.owner != owner {
		return fmt.Errorf("%s's work/sparse.img: %+v, want %d bytes (sha256 %x) in less than 1 MiB of blocks", user, sp, sparseSize, sum)
	}
	return nil
}

// movedXattr is the extended attribute set on each user's notes.txt.
const movedXattr = "user.project"

// moveHomes is the shared claim on a host path of this machine and the
// homes written into it.
type moveHomes struct {
	t      *testing.T
	ctx    context.Context
	cs     kubernetes.Interface
	ns     string
	root   string // the shared volume's host path
	shared *corev1.PersistentVolumeClaim
	users  []string
	before map[string]string // each home's listing through the shared claim
	xattrs bool              // the host's file system keeps user xattrs
}

func newMoveHomes(t *testing.T, users ...string) *moveHomes {
	c := acctest.Cluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Minute)
	t.Cleanup(cancel)
	h := &moveHomes{t: t, ctx: ctx, cs: c.Admin(), ns: acctest.Namespace(t), root: t.TempDir(), users: users, before: map[string]string{}}
	if err := os.Chmod(h.root, 0o755); err != nil {
		t.Fatal(err)
	}
	// home/ holds the homes (sub_path_template home/{username}); each
	// user's directory is made by kubelet for the first pod mounting it.
	if err := os.Mkdir(filepath.Join(h.root, "home"), 0o755); err != nil {
		t.Fatal(err)
	}
	h.shared = sharedHostPathClaim(t, ctx, h.cs, h.ns, movedShared, h.root)
	for _, u := range users {
		t.Cleanup(func() {
			_ = h.cs.CoreV1().PersistentVolumes().Delete(context.Background(), migration.SplitVolumeName(h.ns, "claim-"+u), metav1.DeleteOptions{})
		})
	}
	return h
}

func (h *moveHomes) dir(user string) string { return filepath.Join(h.root, "home", user) }

// atEarlierPlace leaves user's home where an earlier template put it,
// dir/user (renamed on this machine's disk: the same inodes), as a hub
// leaves the homes of users who have not spawned since a move by rename,
// and records that place on the shared claim: the move out of the shared
// layout must rename it back before it moves it.
func (h *moveHomes) atEarlierPlace(user, dir string) {
	h.t.Helper()
	to := filepath.Join(h.root, dir, user)
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		h.t.Fatal(err)
	}
	if err := os.Rename(h.dir(user), to); err != nil {
		h.t.Fatal(err)
	}
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{
		migration.MovedFromAnnotation: migration.EncodeMovedFrom([]string{dir + "/{safe_username}"})}}})
	if _, err := h.cs.CoreV1().PersistentVolumeClaims(h.ns).Patch(h.ctx, movedShared, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		h.t.Fatal(err)
	}
}

// write has each user's server write their home through their directory
// of the shared claim (subPath), then sets an extended attribute on their
// notes.txt on this machine's disk (the node's image has no setfattr), when
// the file system keeps user xattrs: if it does not, the error must say so
// (ENOTSUP), and the homes are checked without. It lists each home as the
// shared layout's server sees it.
func (h *moveHomes) write() error {
	for _, u := range h.users {
		w := subPathPod(h.ns, "server-"+u, movedShared, "home/"+u, movedTreeScript(u))
		if _, err := testcluster.RunPod(h.ctx, h.cs, w); err != nil {
			return fmt.Errorf("%s's server: %w", u, err)
		}
		if err := h.setXattr(filepath.Join(h.dir(u), "notes.txt"), u); err != nil {
			return err
		}
		list, err := testcluster.RunPod(h.ctx, h.cs, subPathPod(h.ns, "list-"+u, movedShared, "home/"+u, listScript))
		if err != nil {
			return err
		}
		if err := checkMovedTree(u, list); err != nil {
			return fmt.Errorf("the home as written: %w\n%s", err, list)
		}
		h.before[u] = list
	}
	return nil
}

// setXattr sets the extended attribute on user's notes.txt at file, when
// the file system keeps user xattrs: if it does not, the error must say so
// (ENOTSUP), and the homes are checked without.
func (h *moveHomes) setXattr(file, user string) error {
	err := syscall.Setxattr(file, movedXattr, []byte("of "+user), 0)
	switch {
	case err == nil:
		h.xattrs = true
	case errors.Is(err, syscall.ENOTSUP):
		h.t.Logf("the file system of %s keeps no user xattrs (%v): homes are checked without", file, err)
	default:
		return fmt.Errorf("setting %s on %s's notes.txt: %w", movedXattr, user, err)
	}
	return nil
}

// config is the resource with users, shared_home and more.
func (h *moveHomes) config(more string) string {
	var users []string
	for _, u := range h.users {
		users = append(users, u+" = {}")
	}
	return acctest.AdminConfig(h.t, fmt.Sprintf(`
resource "jupyter_home_storage" "homes" {
  namespace   = %q
  access_mode = "ReadWriteMany"
  capacity    = "1Gi"
  users       = jsonencode({ %s })
  shared_home = {
    claim_name        = %q
    sub_path_template = "home/{username}"
    init_image        = %q
  }
  %s
}
`, h.ns, strings.Join(users, ", "), movedShared, testcluster.ToolsImage, more))
}

const moveMigrate = `layout = "per_user"
  on_layout_change = "migrate"
  migration = { batch_size = 1 }`

// claimOf is a claim; nil when it does not exist.
func (h *moveHomes) claimOf(name string) (*corev1.PersistentVolumeClaim, error) {
	pvc, err := h.cs.CoreV1().PersistentVolumeClaims(h.ns).Get(h.ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return pvc, err
}

// volumeOf is the volume of user's move; nil when it does not exist.
func (h *moveHomes) volumeOf(user string) (*corev1.PersistentVolume, error) {
	pv, err := h.cs.CoreV1().PersistentVolumes().Get(h.ctx, migration.SplitVolumeName(h.ns, "claim-"+user), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return pv, err
}

// notMoved checks that user has neither a claim nor a volume of a move.
func (h *moveHomes) notMoved(user string) error {
	pvc, err := h.claimOf("claim-" + user)
	if err != nil || pvc != nil {
		return fmt.Errorf("%s has claim %v (%v); the home was not to move yet", user, pvc, err)
	}
	pv, err := h.volumeOf(user)
	if err != nil || pv != nil {
		return fmt.Errorf("%s has volume %v (%v); the home was not to move yet", user, pv, err)
	}
	return nil
}

// moved checks user's claim and volume after the move: the claim Bound to
// the move's volume, KubeSpawner's, with no storage class and the record;
// the volume a host path on the user's very directory, reclaim policy
// Retain, reserved for the claim by UID. It returns the volume.
func (h *moveHomes) moved(user string) (*corev1.PersistentVolume, error) {
	name := "claim-" + user
	pvc, err := h.claimOf(name)
	if err != nil || pvc == nil {
		return nil, fmt.Errorf("%s: no claim %s: %v", user, name, err)
	}
	vol := migration.SplitVolumeName(h.ns, name)
	switch {
	case pvc.Status.Phase != corev1.ClaimBound || pvc.Spec.VolumeName != vol:
		return nil, fmt.Errorf("%s: %s on %q, want Bound on %s", name, pvc.Status.Phase, pvc.Spec.VolumeName, vol)
	case pvc.Spec.StorageClassName == nil || *pvc.Spec.StorageClassName != "":
		return nil, fmt.Errorf("%s: storage class %v, want none", name, pvc.Spec.StorageClassName)
	case pvc.Annotations[migration.SplitAnnotation] == "" || pvc.Annotations["hub.jupyter.org/username"] != user:
		return nil, fmt.Errorf("%s: annotations %v, want the move's record and KubeSpawner's username", name, pvc.Annotations)
	}
	pv, err := h.volumeOf(user)
	if err != nil || pv == nil {
		return nil, fmt.Errorf("%s: no volume %s: %v", user, vol, err)
	}
	switch {
	case pv.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimRetain:
		return nil, fmt.Errorf("volume %s: reclaim policy %s, want Retain", vol, pv.Spec.PersistentVolumeReclaimPolicy)
	case pv.Spec.HostPath == nil || pv.Spec.HostPath.Path != h.dir(user):
		return nil, fmt.Errorf("volume %s: %+v, want host path %s", vol, pv.Spec.PersistentVolumeSource, h.dir(user))
	case pv.Spec.ClaimRef == nil || pv.Spec.ClaimRef.UID != pvc.UID || pv.Status.Phase != corev1.VolumeBound:
		return nil, fmt.Errorf("volume %s: %s, claimRef %+v, want Bound to %s (UID %s)", vol, pv.Status.Phase, pv.Spec.ClaimRef, name, pvc.UID)
	case pv.Annotations[migration.SplitAnnotation] != pvc.Annotations[migration.SplitAnnotation]:
		return nil, fmt.Errorf("volume %s carries record %q, its claim %q", vol, pv.Annotations[migration.SplitAnnotation], pvc.Annotations[migration.SplitAnnotation])
	}
	return pv, nil
}

// readBack reads user's home through their claim, mounted whole as the
// per-user layout mounts a home: exactly the listing their directory of
// the shared claim gave (bytes, owners, modes, links, inodes, times), and
// the extended attribute, on the very file the claim serves (its inode).
func (h *moveHomes) readBack(user string) error {
	pv, err := h.moved(user)
	if err != nil {
		return err
	}
	after, err := testcluster.RunPod(h.ctx, h.cs, testcluster.ClaimPod(h.ns, "reader-"+user, "claim-"+user, listScript))
	if err != nil {
		return err
	}
	if after != h.before[user] {
		return fmt.Errorf("claim-%s lists\n%s\nthe directory of the shared claim listed\n%s", user, after, h.before[user])
	}
	if err := checkMovedTree(user, after); err != nil {
		return fmt.Errorf("claim-%s: %w", user, err)
	}
	entries, _ := parseListing(after)
	notes := filepath.Join(pv.Spec.HostPath.Path, "notes.txt")
	var st syscall.Stat_t
	if err := syscall.Stat(notes, &st); err != nil {
		return err
	}
	if ino := strconv.FormatUint(st.Ino, 10); ino != entries["notes.txt"].inode {
		return fmt.Errorf("the volume's notes.txt is inode %s, the claim's %s", ino, entries["notes.txt"].inode)
	}
	buf := make([]byte, 64)
	n, err := syscall.Getxattr(notes, movedXattr, buf)
	switch {
	case h.xattrs && (err != nil || string(buf[:max(n, 0)]) != "of "+user):
		return fmt.Errorf("claim-%s's notes.txt: %s = %q (%v), want %q", user, movedXattr, buf[:max(n, 0)], err, "of "+user)
	case !h.xattrs && !errors.Is(err, syscall.ENOTSUP):
		return fmt.Errorf("claim-%s's notes.txt: %s: %v, want ENOTSUP as when it was set", user, movedXattr, err)
	}
	return nil
}

// sharedIntact checks that the shared claim and its volume are the same
// objects, Bound to each other.
func (h *moveHomes) sharedIntact() error {
	pvc, err := h.claimOf(movedShared)
	if err != nil || pvc == nil || pvc.UID != h.shared.UID || pvc.Status.Phase != corev1.ClaimBound || pvc.Spec.VolumeName != h.shared.Spec.VolumeName {
		return fmt.Errorf("the shared claim: %+v %v", pvc, err)
	}
	pv, err := h.cs.CoreV1().PersistentVolumes().Get(h.ctx, pvc.Spec.VolumeName, metav1.GetOptions{})
	if err != nil || pv.Status.Phase != corev1.VolumeBound || pv.Spec.ClaimRef == nil || pv.Spec.ClaimRef.UID != pvc.UID {
		return fmt.Errorf("the shared claim's volume %s: %+v %v", pvc.Spec.VolumeName, pv, err)
	}
	return nil
}

// planOf runs f on the planned values of the resource.
type planOf func(after map[string]any) error

func (p planOf) CheckPlan(_ context.Context, req plancheck.CheckPlanRequest, resp *plancheck.CheckPlanResponse) {
	for _, rc := range req.Plan.ResourceChanges {
		if rc.Address == homesAddr && rc.Change != nil {
			after, _ := rc.Change.After.(map[string]any)
			resp.Error = p(after)
			return
		}
	}
	resp.Error = fmt.Errorf("the plan has no %s", homesAddr)
}

// jsonAttr decodes the JSON string attribute name of values into out.
func jsonAttr(values map[string]any, name string, out any) error {
	s, ok := values[name].(string)
	if !ok {
		return fmt.Errorf("%s is %v, not known", name, values[name])
	}
	if err := json.Unmarshal([]byte(s), out); err != nil {
		return fmt.Errorf("%s = %q: %w", name, s, err)
	}
	return nil
}

type planEntry struct {
	Method string `json:"method"`
	Claim  string `json:"claim"`
	Volume string `json:"volume"`
	Reason string `json:"reason"`
}

type statusEntry struct {
	Method string `json:"method"`
	Volume string `json:"volume"`
	Step   string `json:"step"`
	Error  string `json:"error"`
}

// planMigrates checks a plan that migrates user's home (and no one
// else's) by method, from or into claim-user, leaving the users in later
// to later applies (batch_size); safe. more checks user's change and
// migration_plan entry further.
func planMigrates(user, method string, later []string, more func(safety.Change, planEntry) error) planOf {
	return func(after map[string]any) error {
		var changes safety.Changes
		var mplan map[string]planEntry
		if err := errors.Join(jsonAttr(after, "changes", &changes), jsonAttr(after, "migration_plan", &mplan)); err != nil {
			return err
		}
		c, e := changes[user], mplan[user]
		if len(changes) != 1 || c.Action != safety.ActionMigrate || c.Method != method || c.Claim != "claim-"+user {
			return fmt.Errorf("changes %v, want only %s's migration (migrate, %s)", changes, user, method)
		}
		if e.Method != method || e.Claim != "claim-"+user {
			return fmt.Errorf("migration_plan[%s] = %+v, want %s of claim-%s", user, e, method, user)
		}
		if err := more(c, e); err != nil {
			return err
		}
		for _, u := range later {
			if e := mplan[u]; e.Method != "none" || e.Claim != "claim-"+u || !strings.Contains(e.Reason, "batch_size") {
				return fmt.Errorf("migration_plan[%s] = %+v, want left for a later apply (batch_size)", u, e)
			}
		}
		if len(mplan) != 1+len(later) {
			return fmt.Errorf("migration_plan %v, want %s migrated and %v left for later", mplan, user, later)
		}
		if cc := after["change_class"]; cc != string(safety.ClassSafe) {
			return fmt.Errorf("change_class %v, want safe", cc)
		}
		return nil
	}
}

// planMoves checks a plan that moves user (and no one else) by a split,
// onto the move's volume, leaving later (batch_size) the users in later;
// safe.
func (h *moveHomes) planMoves(user string, later ...string) planOf {
	vol := migration.SplitVolumeName(h.ns, "claim-"+user)
	return planMigrates(user, string(migration.MethodSplit), later, func(_ safety.Change, e planEntry) error {
		if e.Volume != vol {
			return fmt.Errorf("migration_plan[%s] = %+v, want volume %s", user, e, vol)
		}
		return nil
	})
}

// migrationDone checks migration_status after an apply that migrated
// user's home, and no one else's: want.
func migrationDone(user string, want statusEntry) resource.TestCheckFunc {
	return resource.TestCheckResourceAttrWith(homesAddr, "migration_status", func(v string) error {
		var st map[string]statusEntry
		if err := json.Unmarshal([]byte(v), &st); err != nil {
			return err
		}
		if len(st) != 1 || st[user] != want {
			return fmt.Errorf("migration_status %s, want %s: %+v", v, user, want)
		}
		return nil
	})
}

// statusDone checks migration_status after an apply that moved user.
func (h *moveHomes) statusDone(user string) resource.TestCheckFunc {
	return migrationDone(user, statusEntry{Method: string(migration.MethodSplit), Volume: migration.SplitVolumeName(h.ns, "claim-"+user), Step: string(migration.StepDone)})
}

// stateMigrationPlan is migration_plan as the state records it.
func stateMigrationPlan(s *terraform.State) (map[string]planEntry, error) {
	rs := s.RootModule().Resources[homesAddr]
	if rs == nil {
		return nil, fmt.Errorf("no %s", homesAddr)
	}
	var mplan map[string]planEntry
	err := json.Unmarshal([]byte(rs.Primary.Attributes["migration_plan"]), &mplan)
	return mplan, err
}

// helmValues is the output helm_values: the hub's Helm values.
func helmValues(s *terraform.State) (map[string]any, error) {
	out, ok := s.RootModule().Outputs["helm_values"]
	if !ok {
		return nil, fmt.Errorf("no output helm_values")
	}
	var own map[string]any
	if err := yaml.Unmarshal([]byte(fmt.Sprint(out.Value)), &own); err != nil {
		return nil, fmt.Errorf("helm_values: %w", err)
	}
	return own, nil
}

// TestAccHomeStorage_moveOutOfSharedLayout: alice's and bob's homes,
// written by their servers through their directories of the shared claim,
// move out of the shared layout one apply each (batch_size = 1), and read
// back whole through claims of their own; before that, the per-user layout
// without on_layout_change = "migrate" fails the plan naming both, and
// on_layout_change = "migrate" without it fails validation.
func TestAccHomeStorage_moveOutOfSharedLayout(t *testing.T) {
	acctest.Cluster(t)
	t.Parallel()
	start := time.Now()
	h := newMoveHomes(t, "alice", "bob")
	shared, migrate := h.config(""), h.config(moveMigrate)
	const first, second = "alice", "bob" // users move in order
	var emptyClass string
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
			{
				// The per-user layout, homes not moved: the plan fails naming
				// both, and changes nothing. bob's home is still where an
				// earlier template put it (a move by rename he has not
				// spawned since): his move renames it back first.
				PreConfig:   func() { h.atEarlierPlace(second, "home_v1") },
				Config:      h.config(`layout = "per_user"`),
				PlanOnly:    true,
				ExpectError: wrapRE(`Listed users' homes are directories of the shared claim.*2 listed user\(s\).*alice.*bob`),
			},
			{
				// The first apply moves one user: alice (users in order).
				PreConfig: func() {
					for _, u := range h.users {
						if err := h.notMoved(u); err != nil {
							t.Fatalf("after the refused plans: %v", err)
						}
					}
				},
				// batch_size = 1: the plan after this apply moves bob, and
				// only him.
				Config: migrate,
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply:             []plancheck.PlanCheck{h.planMoves(first, second)},
					PostApplyPostRefresh: []plancheck.PlanCheck{h.planMoves(second)},
				},
				ExpectNonEmptyPlan: true,
				Check: resource.ComposeAggregateTestCheckFunc(
					h.statusDone(first),
					resource.TestCheckResourceAttr(homesAddr, "change_class", string(safety.ClassSafe)),
					func(*terraform.State) error {
						if _, err := h.moved(first); err != nil {
							return err
						}
						return h.notMoved(second)
					},
					checkClaim(first, "name", "claim-"+first),
				),
			},
			{
				Config:           migrate,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{h.planMoves(second)}},
				Check: resource.ComposeAggregateTestCheckFunc(
					h.statusDone(second),
					resource.TestCheckResourceAttr(homesAddr, "change_class", string(safety.ClassSafe)),
					checkClaim("alice", "name", "claim-alice"),
					checkClaim("bob", "name", "claim-bob"),
					checkLegacyUsers(map[string]string{}),
				),
			},
			{
				// Nothing left to do: an empty plan, which keeps the last
				// apply's change_class (safe: homes moved, nothing deleted).
				Config: migrate,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectEmptyPlan(),
					planOf(func(after map[string]any) error {
						emptyClass, _ = after["change_class"].(string)
						if emptyClass != string(safety.ClassSafe) {
							return fmt.Errorf("the empty plan's change_class %q, want safe (the last apply's)", emptyClass)
						}
						return nil
					}),
				}},
				Check: func(*terraform.State) error {
					for _, u := range h.users {
						if err := h.readBack(u); err != nil {
							return err
						}
					}
					if err := h.zeroCopy("alice"); err != nil {
						return err
					}
					return h.sharedIntact()
				},
			},
			{Config: migrate, PlanOnly: true},
		},
	})
	t.Logf("took %s (empty plan's change_class %s)", time.Since(start).Round(time.Second), emptyClass)
}

// zeroCopy writes a file as user through their claim; their directory of
// the shared claim, mounted as the shared layout mounts it, then lists
// exactly what the claim lists (the same inodes): one directory.
func (h *moveHomes) zeroCopy(user string) error {
	const content = "written through the claim\n"
	w := testcluster.ClaimPod(h.ns, "write-"+user, "claim-"+user, "printf '"+strings.TrimSuffix(content, "\n")+"\\n' > /home/after-move.txt")
	asUser(w, movedUIDs[user], 100)
	if _, err := testcluster.RunPod(h.ctx, h.cs, w); err != nil {
		return err
	}
	viaClaim, err := testcluster.RunPod(h.ctx, h.cs, testcluster.ClaimPod(h.ns, "list-claim-"+user, "claim-"+user, listScript))
	if err != nil {
		return err
	}
	viaShared, err := testcluster.RunPod(h.ctx, h.cs, subPathPod(h.ns, "list-shared-"+user, movedShared, "home/"+user, listScript))
	if err != nil {
		return err
	}
	if viaClaim != viaShared {
		return fmt.Errorf("claim-%s lists\n%s\nits directory of the shared claim\n%s", user, viaClaim, viaShared)
	}
	if err := checkMovedTree(user, viaShared, "after-move.txt"); err != nil {
		return err
	}
	entries, _ := parseListing(viaShared)
	if e, want := entries["after-move.txt"], fmt.Sprintf("%d:100", movedUIDs[user]); e.content != hex.EncodeToString([]byte(content)) || e.owner != want {
		return fmt.Errorf("after-move.txt through the shared claim: %+v, want %q owned by %s", e, content, want)
	}
	return nil
}

// TestAccHomeStorage_moveOutOfSharedLayoutStoppedAfterEachStep: alice's
// move, stopped right after each of its steps in turn (Options.AfterStep),
// from the start each time. After each stop the home's directory is
// untouched, the plan shows the move going on, never an empty claim being
// created, and a plain apply finishes it; then the move is undone (claim
// and volume deleted: the directory stays) for the next round. At the end
// alice's claim reads back her whole home.
func TestAccHomeStorage_moveOutOfSharedLayoutStoppedAfterEachStep(t *testing.T) {
	acctest.Cluster(t)
	t.Parallel()
	start := time.Now()
	h := newMoveHomes(t, "alice")
	const user, claim = "alice", "claim-alice"
	vol := migration.SplitVolumeName(h.ns, claim)
	shared, migrate := h.config(""), h.config(moveMigrate)

	stops := []migration.Op{migration.OpPrepareDirectory, migration.OpCreateSplitClaim, migration.OpCreateVolume, migration.OpWaitSplitBound}
	stop := &stopper{t: t, user: user}
	var diskBefore map[string]string
	steps := []resource.TestStep{{
		Config: shared,
		Check: func(*terraform.State) error {
			if err := h.write(); err != nil {
				return err
			}
			diskBefore = diskSnapshot(t, h.dir(user))
			return nil
		},
	}}
	for i, op := range stops {
		steps = append(steps,
			resource.TestStep{
				PreConfig: func() {
					if i > 0 {
						h.undo(user)
					}
					stop.set(op)
				},
				Config: migrate,
				ExpectError: wrapRE(fmt.Sprintf(`1 of 1 home migrations did not finish.*%s \(%s, volume %s, stopped at .*apply stopped after step %s`,
					user, claim, vol, regexp.QuoteMeta(string(op)))),
			},
			resource.TestStep{
				PreConfig: func() {
					stop.set("")
					h.stoppedAfter(op, diskBefore)
				},
				Config: migrate,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{planOf(func(after map[string]any) error {
					return h.planResumes(op, after)
				})}},
				Check: func(*terraform.State) error {
					_, err := h.moved(user)
					return err
				},
			},
		)
	}
	steps = append(steps,
		resource.TestStep{
			Config: migrate,
			Check: func(*terraform.State) error {
				t.Logf("steps run across the applies: %v", stop.ran())
				if got := diskSnapshot(t, h.dir(user)); !maps.Equal(got, diskBefore) {
					return fmt.Errorf("alice's directory on this machine changed:\n%v\nwas\n%v", got, diskBefore)
				}
				if err := h.readBack(user); err != nil {
					return err
				}
				return h.sharedIntact()
			},
		},
		resource.TestStep{Config: migrate, PlanOnly: true},
	)
	resource.Test(t, resource.TestCase{ProtoV6ProviderFactories: factories(provider.Options{AfterStep: stop.hook}), Steps: steps})
	t.Logf("took %s", time.Since(start).Round(time.Second))
}

// stopper is the provider's AfterStep hook of the tests that stop an
// apply right after a step of user's migration: the apply after set(op)
// stops after op, once; set fails the test when the last stop set was not
// reached. It records the steps run.
type stopper struct {
	t    *testing.T
	user string
	mu   sync.Mutex
	at   migration.Op
	done []migration.Op
}

func (s *stopper) hook(u string, op migration.Op) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.done = append(s.done, op)
	if u == s.user && op == s.at {
		s.at = ""
		return fmt.Errorf("apply stopped after step %s", op)
	}
	return nil
}

func (s *stopper) set(op migration.Op) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.at != "" {
		s.t.Fatalf("the apply did not stop after %s (ran %v)", s.at, s.done)
	}
	s.at = op
}

// ran are the steps run so far.
func (s *stopper) ran() []migration.Op {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.done)
}

// stoppedAfter checks alice's move stopped after op: her directory as it
// was, and the claim and volume as far as the move got.
func (h *moveHomes) stoppedAfter(op migration.Op, diskBefore map[string]string) {
	t := h.t
	const user = "alice"
	if got := diskSnapshot(t, h.dir(user)); !maps.Equal(got, diskBefore) {
		t.Fatalf("stopped after %s, alice's directory changed:\n%v\nwas\n%v", op, got, diskBefore)
	}
	pvc, err := h.claimOf("claim-" + user)
	if err != nil {
		t.Fatal(err)
	}
	pv, err := h.volumeOf(user)
	if err != nil {
		t.Fatal(err)
	}
	switch op {
	case migration.OpPrepareDirectory:
		if pvc != nil || pv != nil {
			t.Fatalf("stopped after %s: claim %v, volume %v; want neither", op, pvc, pv)
		}
	case migration.OpCreateSplitClaim:
		if pvc == nil || pv != nil || pvc.Status.Phase == corev1.ClaimBound || pvc.Annotations[migration.SplitAnnotation] == "" {
			t.Fatalf("stopped after %s: claim %+v, volume %v; want the claim (with the record), unbound, and no volume", op, pvc, pv)
		}
	default:
		if pvc == nil || pv == nil {
			t.Fatalf("stopped after %s: claim %v, volume %v; want both", op, pvc, pv)
		}
		if pv.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimRetain || pv.Spec.ClaimRef == nil || pv.Spec.ClaimRef.UID != pvc.UID {
			t.Fatalf("stopped after %s: volume %+v", op, pv.Spec)
		}
	}
	t.Logf("stopped after %s: claim %v, volume %v", op, phaseOf(pvc), pv != nil)
}

func phaseOf(pvc *corev1.PersistentVolumeClaim) string {
	if pvc == nil {
		return "none"
	}
	return string(pvc.Status.Phase)
}

// planResumes checks the plan after the move stopped after op: never a
// new claim; alice's move resumed while her claim is not bound to its
// volume (after the directory step, or the claim's; after the volume's
// the binder may have bound them already: then nothing is left to move).
func (h *moveHomes) planResumes(op migration.Op, after map[string]any) error {
	const user = "alice"
	var changes safety.Changes
	var mplan map[string]planEntry
	if err := errors.Join(jsonAttr(after, "changes", &changes), jsonAttr(after, "migration_plan", &mplan)); err != nil {
		return err
	}
	c, changing := changes[user]
	if changing && (c.Action != safety.ActionMigrate || c.Method != string(migration.MethodSplit)) {
		return fmt.Errorf("after stopping at %s the plan does %s (%s) to alice's home, want the move resumed: changes %v", op, c.Action, c.Method, changes)
	}
	bound := false
	if pvc, err := h.claimOf("claim-" + user); err != nil {
		return err
	} else if pvc != nil {
		bound = pvc.Status.Phase == corev1.ClaimBound
	}
	if !bound && (!changing || mplan[user].Method != string(migration.MethodSplit)) {
		return fmt.Errorf("after stopping at %s (claim not bound) the plan shows changes %v, migration_plan %v; want alice's move resumed", op, changes, mplan)
	}
	// The claim the stopped apply made is the one the move goes on with
	// (its UID in the change), on the volume its record names; not a new
	// claim. (migration_plan gives a moving user no reason.)
	if op == migration.OpCreateSplitClaim {
		pvc, err := h.claimOf("claim-" + user)
		if err != nil || pvc == nil {
			return fmt.Errorf("after stopping at %s: claim-%s: %v %v", op, user, pvc, err)
		}
		rec, err := migration.DecodeSplitRecord(pvc.Annotations[migration.SplitAnnotation])
		if err != nil {
			return err
		}
		if c.UID != string(pvc.UID) || mplan[user].Volume != rec.Volume {
			return fmt.Errorf("after stopping at %s the plan shows %+v, %+v; want the claim made (UID %s) resumed on volume %s", op, c, mplan[user], pvc.UID, rec.Volume)
		}
	}
	h.t.Logf("after stopping at %s: changes %v, migration_plan %v", op, changes, mplan)
	return nil
}

// undo undoes user's finished move as the plan's error says to: delete the
// claim and the volume (Retain: the directory stays), and waits until both
// are gone.
func (h *moveHomes) undo(user string) {
	t := h.t
	vol := migration.SplitVolumeName(h.ns, "claim-"+user)
	if err := h.cs.CoreV1().PersistentVolumeClaims(h.ns).Delete(h.ctx, "claim-"+user, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := h.cs.CoreV1().PersistentVolumes().Delete(h.ctx, vol, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	for {
		pvc, err1 := h.claimOf("claim-" + user)
		pv, err2 := h.volumeOf(user)
		if err := errors.Join(err1, err2); err != nil {
			t.Fatal(err)
		}
		if pvc == nil && pv == nil {
			return
		}
		select {
		case <-h.ctx.Done():
			t.Fatalf("undoing %s's move: claim %v, volume %v still there", user, pvc != nil, pv != nil)
		case <-time.After(200 * time.Millisecond):
		}
	}
}
