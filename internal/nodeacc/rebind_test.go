package nodeacc

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/acctest"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/migration"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/provider"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/testcluster"
)

// The rebind on a real node: a home on a volume of the node's CSI driver
// (kubelet publishes it through the driver for each pod) is served as
// ReadWriteMany by the same volume. The driver is not one the provider knows
// to serve ReadWriteMany, so the plan refuses the rebind until
// migration.rebind_drivers lists it; then the provider retains the volume,
// deletes the claim, reserves the volume, creates the claim in the new mode
// on it and restores the reclaim policy, and a pod mounting the new claim
// finds every file as it was: the same bytes, owners, modes, hard link,
// symlink, sparse file and inodes.
func TestAccHomeStorage_rebindCSI(t *testing.T) {
	h := newRebindHome(t, "alice")
	refused := h.config("")
	invalid := h.config(`rebind_drivers = ["not a driver/name"]`)
	cfg := h.config(fmt.Sprintf("rebind_drivers = [%q]", testcluster.CSIDriverName))
	step := time.Now()
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: factories(provider.Options{}),
		Steps: []resource.TestStep{
			{
				Config:      refused,
				ExpectError: wrapRE(`CSI driver ` + regexp.QuoteMeta(testcluster.CSIDriverName) + ` is not known to serve an existing volume as ReadWriteMany.*migration\.rebind_drivers adds`),
			},
			{Config: invalid, ExpectError: wrapRE(`Invalid migration\.rebind_drivers entry.*"not a driver/name" is not a CSI driver name`)},
			{
				PreConfig: func() {
					h.untouched(t)
					step = time.Now()
				},
				Config: cfg,
				Check: resource.ComposeAggregateTestCheckFunc(
					func(*terraform.State) error {
						t.Logf("apply with the rebind took %s", time.Since(step).Round(time.Millisecond))
						return nil
					},
					checkClaim(h.user, "name", h.claim),
					checkClaim(h.user, "access_mode", "ReadWriteMany"),
					checkLegacyUsers(map[string]string{}),
					resource.TestCheckResourceAttrWith(homesAddr, "migration_status", func(v string) error {
						if !strings.Contains(v, `"method":"rebind"`) || !strings.Contains(v, `"step":"done"`) {
							return fmt.Errorf("migration_status %s, want a finished rebind", v)
						}
						return nil
					}),
					h.rebound(),
				),
			},
			{Config: cfg, PlanOnly: true},
		},
	})
}

// An apply stopped after each step of the rebind, once: the files stay on
// the volume (retained) throughout, and the next apply resumes from what
// the cluster shows until the home is served as ReadWriteMany with every
// file. The waits (for the binder to release or bind) change nothing, so
// stopping after them is stopping after the step before.
func TestAccHomeStorage_rebindCSIStoppedAfterEachStep(t *testing.T) {
	h := newRebindHome(t, "bob")
	cfg := h.config(fmt.Sprintf("rebind_drivers = [%q]", testcluster.CSIDriverName))
	stops := []migration.Op{migration.OpRetain, migration.OpDeleteClaim, migration.OpCreateClaim, migration.OpReserve, migration.OpRestore}
	var stopped, ran []migration.Op
	hook := func(_ string, op migration.Op) error {
		ran = append(ran, op)
		if slices.Contains(stops, op) && !slices.Contains(stopped, op) {
			stopped = append(stopped, op)
			return fmt.Errorf("apply stopped after step %s", op)
		}
		return nil
	}
	stopping := factories(provider.Options{AfterStep: hook})
	var steps []resource.TestStep
	for i, op := range stops {
		steps = append(steps, resource.TestStep{
			PreConfig: func() {
				if i > 0 {
					h.heldWhileStopped(t, stops[i-1])
				}
			},
			Config: cfg,
			ExpectError: wrapRE(fmt.Sprintf(`1 of 1 home migrations did not finish.*%s \(%s, volume %s, stopped at.*apply stopped after step %s.*No data was lost`,
				h.user, h.claim, regexp.QuoteMeta(h.volume), regexp.QuoteMeta(string(op)))),
		})
	}
	steps = append(steps,
		resource.TestStep{
			PreConfig: func() { h.heldWhileStopped(t, stops[len(stops)-1]) },
			Config:    cfg,
			Check: resource.ComposeAggregateTestCheckFunc(
				func(*terraform.State) error {
					if !slices.Equal(stopped, stops) {
						return fmt.Errorf("the applies stopped after %v, want after each of %v (ran %v)", stopped, stops, ran)
					}
					t.Logf("steps run across the applies: %v", ran)
					return nil
				},
				checkClaim(h.user, "access_mode", "ReadWriteMany"),
				checkLegacyUsers(map[string]string{}),
				h.rebound(),
			),
		},
		resource.TestStep{Config: cfg, PlanOnly: true},
	)
	resource.Test(t, resource.TestCase{ProtoV6ProviderFactories: stopping, Steps: steps})
}

// wrapRE matches pattern in OpenTofu's output, which wraps long messages:
// a space matches any run of white space, and . matches newlines.
func wrapRE(pattern string) *regexp.Regexp {
	return regexp.MustCompile("(?s)" + strings.ReplaceAll(pattern, " ", `\s+`))
}

func factories(opts provider.Options) map[string]func() (tfprotov6.ProviderServer, error) {
	return map[string]func() (tfprotov6.ProviderServer, error){
		"jupyter": providerserver.NewProtocol6WithError(provider.NewWithOptions("test", opts)()),
	}
}

// A user's home as a notebook server leaves it, beyond aliceFiles: a
// private file, a group-shared directory (setgid), a hard link, a relative
// symlink and a sparse file (4 MiB of hole, then three bytes).
const treeScript = `
chown -R 1000:100 /home
chmod 600 /home/work/raw.bin
mkdir /home/shared
chown 1000:2000 /home/shared
chmod 2770 /home/shared
ln /home/work/data/results.csv /home/work/results-link.csv
ln -s data/results.csv /home/work/latest.csv
chown -h 1000:100 /home/work/latest.csv
printf end | dd of=/home/work/sparse.img bs=4194304 seek=1 2>/dev/null
chown 1000:100 /home/work/sparse.img
`

const sparseSize = 4194304 + 3

// listScript writes to the termination log one line per entry under /home:
// "PATH MODE(hex, with type) UID:GID LINKS SIZE INODE MTIME", then for a
// symlink "-> TARGET", for a small file its bytes in hex, for a larger one
// its SHA-256 and allocated blocks.
const listScript = `set -eu
cd /home
find . | sort | while read -r f; do
  printf '%s %s' "$f" "$(stat -c '%f %u:%g %h %s %i %Y' "$f")"
  if [ -L "$f" ]; then
    printf ' -> %s' "$(readlink "$f")"
  elif [ -f "$f" ]; then
    if [ "$(stat -c %s "$f")" -le 256 ]; then
      printf ' %s' "$(od -An -v -tx1 "$f" | tr -d ' \n')"
    else
      printf ' sha256:%s blocks:%s' "$(sha256sum "$f" | cut -d' ' -f1)" "$(stat -c %b "$f")"
    fi
  fi
  echo
done > /dev/termination-log
`

type rebindHome struct {
	ctx              context.Context
	cs               kubernetes.Interface
	c                *testcluster.Cluster
	t                *testing.T
	ns, user, claim  string
	volume, handle   string
	oldUID           string
	before           string // the listing before the rebind
	beforeOnDisk     map[string]string
	reclaimPolicy    corev1.PersistentVolumeReclaimPolicy
	beforeVolumeUID  string
	beforeVolumeMode []corev1.PersistentVolumeAccessMode
}

// newRebindHome seeds user's RWO home on a volume of the node's CSI driver
// (reclaim policy Delete, to be restored), writes the tree into it through a
// pod and lists it through another.
func newRebindHome(t *testing.T, user string) *rebindHome {
	c := acctest.Cluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	t.Cleanup(cancel)
	h := &rebindHome{ctx: ctx, cs: c.Admin(), c: c, t: t, ns: acctest.Namespace(t), user: user, claim: "claim-" + user}
	class := testcluster.CSIClass
	if err := testcluster.Seed(ctx, h.cs, h.ns, testcluster.SeedClaim{Name: h.claim, Username: user, StorageClass: &class, Size: "1Gi",
		Bound: true, Driver: testcluster.CSIDriverName, ReclaimPolicy: corev1.PersistentVolumeReclaimDelete}); err != nil {
		t.Fatal(err)
	}
	pvc, err := h.cs.CoreV1().PersistentVolumeClaims(h.ns).Get(ctx, h.claim, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pv, err := h.cs.CoreV1().PersistentVolumes().Get(ctx, pvc.Spec.VolumeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	h.oldUID, h.volume, h.handle = string(pvc.UID), pv.Name, pv.Spec.CSI.VolumeHandle
	h.reclaimPolicy, h.beforeVolumeUID, h.beforeVolumeMode = pv.Spec.PersistentVolumeReclaimPolicy, string(pv.UID), pv.Spec.AccessModes
	if _, err := testcluster.RunPod(ctx, h.cs, testcluster.ClaimPod(h.ns, "server-"+user, h.claim, testcluster.WriteFilesScript("/home", aliceFiles)+treeScript)); err != nil {
		t.Fatal(err)
	}
	h.before, err = testcluster.RunPod(ctx, h.cs, testcluster.ClaimPod(h.ns, "list-"+user, h.claim, listScript))
	if err != nil {
		t.Fatal(err)
	}
	if err := checkTree(h.before); err != nil {
		t.Fatalf("the tree as written: %v\n%s", err, h.before)
	}
	h.beforeOnDisk = h.onDisk(t)
	return h
}

func (h *rebindHome) config(inMigration string) string {
	return acctest.AdminConfig(h.t, fmt.Sprintf(`
resource "jupyter_home_storage" "homes" {
  namespace          = %q
  storage_class_name = %q
  capacity           = "1Gi"
  access_mode        = "ReadWriteMany"
  users              = jsonencode({ %q = {} })
  on_mode_change     = "migrate"
  migration = {
    method = "rebind"
    %s
  }
}
`, h.ns, testcluster.CSIClass, h.user, inMigration))
}

// onDisk reads the volume's files in the driver's directory on this machine.
func (h *rebindHome) onDisk(t *testing.T) map[string]string {
	t.Helper()
	dir := h.c.CSIVolumeDir(h.handle)
	out := map[string]string{}
	for name := range aliceFiles {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatalf("%s of the volume's directory: %v", name, err)
		}
		out[name] = string(b)
	}
	return out
}

// untouched checks that a refused plan changed nothing.
func (h *rebindHome) untouched(t *testing.T) {
	pvc, err := h.cs.CoreV1().PersistentVolumeClaims(h.ns).Get(h.ctx, h.claim, metav1.GetOptions{})
	if err != nil || string(pvc.UID) != h.oldUID || pvc.Spec.AccessModes[0] != corev1.ReadWriteOnce {
		t.Fatalf("%s after a refused plan: %v %+v", h.claim, err, pvc)
	}
	pv, err := h.cs.CoreV1().PersistentVolumes().Get(h.ctx, h.volume, metav1.GetOptions{})
	if err != nil || pv.Spec.PersistentVolumeReclaimPolicy != h.reclaimPolicy || pv.Annotations[migration.RecordAnnotation] != "" {
		t.Fatalf("volume %s after a refused plan: %v %+v", h.volume, err, pv)
	}
}

// heldWhileStopped checks the home between two stopped applies: the volume
// exists (the same object), is retained unless the apply stopped after the
// restore, and its directory holds every file.
func (h *rebindHome) heldWhileStopped(t *testing.T, after migration.Op) {
	pv, err := h.cs.CoreV1().PersistentVolumes().Get(h.ctx, h.volume, metav1.GetOptions{})
	if err != nil || string(pv.UID) != h.beforeVolumeUID {
		t.Fatalf("volume %s after stopping at %s: %v", h.volume, after, err)
	}
	if after != migration.OpRestore && pv.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimRetain {
		t.Fatalf("stopped after %s with reclaim policy %s", after, pv.Spec.PersistentVolumeReclaimPolicy)
	}
	if got := h.onDisk(t); !maps.Equal(got, h.beforeOnDisk) {
		t.Fatalf("stopped after %s, the volume's directory holds %q, want %q", after, got, h.beforeOnDisk)
	}
}

// rebound checks the home after the rebind: the claim (a new object, same
// name) is ReadWriteMany and Bound to the same volume, which is ReadWriteMany,
// has its reclaim policy back and no migration record; a pod mounting the
// claim lists exactly the tree as it was.
func (h *rebindHome) rebound() resource.TestCheckFunc {
	return func(*terraform.State) error {
		pvc, err := h.cs.CoreV1().PersistentVolumeClaims(h.ns).Get(h.ctx, h.claim, metav1.GetOptions{})
		if err != nil {
			return err
		}
		switch {
		case !slices.Equal(pvc.Spec.AccessModes, []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany}):
			return fmt.Errorf("%s: modes %v, want ReadWriteMany", h.claim, pvc.Spec.AccessModes)
		case pvc.Status.Phase != corev1.ClaimBound || pvc.Spec.VolumeName != h.volume:
			return fmt.Errorf("%s: %s on volume %q, want Bound on %s", h.claim, pvc.Status.Phase, pvc.Spec.VolumeName, h.volume)
		case string(pvc.UID) == h.oldUID:
			return fmt.Errorf("%s has its old UID: it was not rebound", h.claim)
		case pvc.Annotations["hub.jupyter.org/username"] != h.user || pvc.Labels["component"] != "singleuser-storage":
			return fmt.Errorf("%s lost KubeSpawner's labels or annotations: %v %v", h.claim, pvc.Labels, pvc.Annotations)
		case pvc.Annotations[migration.MigratedAnnotation] == "":
			return fmt.Errorf("%s: no %s annotation", h.claim, migration.MigratedAnnotation)
		}
		pv, err := h.cs.CoreV1().PersistentVolumes().Get(h.ctx, h.volume, metav1.GetOptions{})
		if err != nil {
			return err
		}
		switch {
		case string(pv.UID) != h.beforeVolumeUID || pv.Spec.CSI == nil || pv.Spec.CSI.Driver != testcluster.CSIDriverName || pv.Spec.CSI.VolumeHandle != h.handle:
			return fmt.Errorf("volume %s is not the home's old volume: %+v", h.volume, pv.Spec.PersistentVolumeSource)
		case !slices.Equal(pv.Spec.AccessModes, []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany}):
			return fmt.Errorf("volume %s: modes %v, want ReadWriteMany (was %v)", h.volume, pv.Spec.AccessModes, h.beforeVolumeMode)
		case pv.Spec.PersistentVolumeReclaimPolicy != h.reclaimPolicy:
			return fmt.Errorf("volume %s: reclaim policy %s, want %s restored", h.volume, pv.Spec.PersistentVolumeReclaimPolicy, h.reclaimPolicy)
		case pv.Annotations[migration.RecordAnnotation] != "" || pv.Labels[migration.NamespaceLabel] != "":
			return fmt.Errorf("volume %s still carries the migration record", h.volume)
		case pv.Spec.ClaimRef == nil || pv.Spec.ClaimRef.UID != pvc.UID:
			return fmt.Errorf("volume %s: claimRef %+v, want the new claim", h.volume, pv.Spec.ClaimRef)
		}
		// Read through the ReadWriteMany claim: kubelet publishes the volume
		// through the driver again.
		after, err := testcluster.RunPod(h.ctx, h.cs, testcluster.ClaimPod(h.ns, "reader-"+h.user, h.claim, listScript))
		if err != nil {
			return err
		}
		if after != h.before {
			return fmt.Errorf("the home after the rebind lists\n%s\nbefore it listed\n%s", after, h.before)
		}
		return checkTree(after)
	}
}

// checkTree checks a listing against what was written: every byte of
// aliceFiles, owners and modes, the hard link (one inode, two links), the
// symlink and the sparse file (its content by SHA-256, few blocks allocated).
func checkTree(listing string) error {
	type entry struct {
		mode         uint64
		owner        string
		links, size  int64
		inode        string
		rest         string
		blocks       int64
		sum, content string
	}
	entries := map[string]entry{}
	for _, line := range strings.Split(strings.TrimSpace(listing), "\n") {
		f := strings.Fields(line)
		if len(f) < 7 {
			return fmt.Errorf("listing line %q", line)
		}
		var e entry
		var err error
		if e.mode, err = strconv.ParseUint(f[1], 16, 32); err != nil {
			return fmt.Errorf("listing line %q: %w", line, err)
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
	const (
		typeMask = 0o170000
		regular  = 0o100000
		dir      = 0o040000
		symlink  = 0o120000
	)
	for name, content := range aliceFiles {
		e, ok := entries[name]
		perm := uint64(0o644)
		if name == "work/raw.bin" {
			perm = 0o600
		}
		switch {
		case !ok:
			return fmt.Errorf("%s is missing", name)
		case e.content != hex.EncodeToString([]byte(content)):
			return fmt.Errorf("%s holds %s, want %x", name, e.rest, content)
		case e.mode != regular|perm || e.owner != "1000:100":
			return fmt.Errorf("%s: mode %o owner %s, want %o 1000:100", name, e.mode, e.owner, regular|perm)
		}
	}
	link, orig := entries["work/results-link.csv"], entries["work/data/results.csv"]
	if link.inode != orig.inode || link.links != 2 || orig.links != 2 || link.content != orig.content {
		return fmt.Errorf("work/results-link.csv is not a hard link of work/data/results.csv: %+v %+v", link, orig)
	}
	if sl := entries["work/latest.csv"]; sl.mode&typeMask != symlink || sl.rest != "-> data/results.csv" || sl.owner != "1000:100" {
		return fmt.Errorf("work/latest.csv is not the symlink to data/results.csv: %+v", sl)
	}
	if sh := entries["shared"]; sh.mode != dir|0o2770 || sh.owner != "1000:2000" {
		return fmt.Errorf("shared: mode %o owner %s, want %o 1000:2000", sh.mode, sh.owner, dir|0o2770)
	}
	sparse := make([]byte, sparseSize)
	copy(sparse[sparseSize-3:], "end")
	sum := sha256.Sum256(sparse)
	if sp := entries["work/sparse.img"]; sp.size != sparseSize || sp.sum != hex.EncodeToString(sum[:]) || sp.blocks*512 >= 1<<20 {
		return fmt.Errorf("work/sparse.img: %+v, want %d bytes (sha256 %x) in less than 1 MiB of blocks", sp, sparseSize, sum)
	}
	return nil
}
