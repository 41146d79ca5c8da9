package provider

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/acctest"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/migration"
)

// killProvider sends SIGKILL to every running process of the provider binary bin.
func killProvider(t *testing.T, bin string) int {
	t.Helper()
	entries, _ := os.ReadDir("/proc")
	n := 0
	for _, e := range entries {
		var pid int
		if _, err := fmt.Sscan(e.Name(), &pid); err != nil {
			continue
		}
		if exe, err := os.Readlink(filepath.Join("/proc", e.Name(), "exe")); err == nil && exe == bin {
			if syscall.Kill(pid, syscall.SIGKILL) == nil {
				n++
			}
		}
	}
	return n
}

// A real kill: the provider runs as its own process under `tofu apply`, as
// for a user, and is sent SIGKILL while it migrates homes one at a time.
// Nothing records that it died; the next apply resumes from what the cluster
// shows. Whatever step it died at, every volume still exists, no home is
// without its data, and the re-apply rebinds every home to its own volume.
func TestAccHomeStorage_migrateSurvivesKill(t *testing.T) {
	cs := acctest.Cluster(t).Admin()
	ns := acctest.Namespace(t)
	class := "longhorn-" + ns
	var users []string
	for i := range 12 {
		users = append(users, fmt.Sprintf("user%02d", i))
	}
	vols := migratingHomes(t, cs, ns, class, users...)
	var claimNames []string
	for _, u := range users {
		claimNames = append(claimNames, "claim-"+u)
	}
	old := uids(t, cs, ns, claimNames...)

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	work := t.TempDir()
	ws := acctest.Workspace(ctx, t, work)
	var out bytes.Buffer
	ws.Stdout, ws.Stderr = &out, &out
	cfgDir := filepath.Join(work, "cfg")
	if err := os.MkdirAll(cfgDir, 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := acctest.AdminConfig(t, fmt.Sprintf(`
resource "jupyter_home_storage" "homes" {
  namespace          = %q
  storage_class_name = %q
  capacity           = "1Gi"
  access_mode        = "ReadWriteMany"
  on_mode_change     = "migrate"
  migration = {
    max_parallel = 1
  }
}
`, ns, class))
	if err := os.WriteFile(filepath.Join(cfgDir, "main.tf"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := ws.Run(ctx, cfgDir, "init", "-no-color"); err != nil {
		t.Fatalf("tofu init: %v\n%s", err, out.String())
	}

	// Kill the provider at a random point once a home or two are done and
	// another is under way (the log says at which step).
	after, jitter := 1+rand.IntN(2), time.Duration(rand.IntN(400))*time.Millisecond
	t.Logf("killing after %d homes and %s", after, jitter)
	apply := ws.Command(ctx, cfgDir, "apply", "-auto-approve", "-no-color")
	apply.Stdout, apply.Stderr = &out, &out
	if err := apply.Start(); err != nil {
		t.Fatal(err)
	}
	killed, steps := 0, map[string]string{}
	deadline := time.Now().Add(2 * time.Minute)
	for killed == 0 && time.Now().Before(deadline) {
		done := 0
		for _, name := range claimNames {
			pvc, err := cs.CoreV1().PersistentVolumeClaims(ns).Get(ctx, name, metav1.GetOptions{})
			if err == nil && pvc.Spec.AccessModes[0] == corev1.ReadWriteMany {
				done++
			}
		}
		pvs, err := cs.CoreV1().PersistentVolumes().List(ctx, metav1.ListOptions{LabelSelector: migration.NamespaceLabel + "=" + ns})
		if done >= after && err == nil && len(pvs.Items) > 0 {
			time.Sleep(jitter)
			killed = killProvider(t, ws.ProviderBin)
			pvs, _ = cs.CoreV1().PersistentVolumes().List(ctx, metav1.ListOptions{LabelSelector: migration.NamespaceLabel + "=" + ns})
			for _, pv := range pvs.Items {
				if rec, err := migration.DecodeRecord(pv.Annotations[migration.RecordAnnotation]); err == nil {
					steps[rec.Claim] = string(rec.Step)
				}
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	if killed == 0 {
		t.Fatalf("the provider was never caught mid-migration\n%s", out.String())
	}
	if err := apply.Wait(); err == nil {
		t.Fatalf("tofu apply succeeded although its provider was killed\n%s", out.String())
	}
	t.Logf("killed %d provider process(es) with migrations in progress at %v", killed, steps)

	// At the kill: every volume exists; a home without its claim has its
	// volume retained and carrying the record.
	for _, name := range claimNames {
		pv, err := cs.CoreV1().PersistentVolumes().Get(ctx, vols[name][0], metav1.GetOptions{})
		if err != nil {
			t.Fatalf("volume of %s: %v", name, err)
		}
		if _, err := cs.CoreV1().PersistentVolumeClaims(ns).Get(ctx, name, metav1.GetOptions{}); err != nil &&
			(pv.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimRetain || pv.Annotations[migration.RecordAnnotation] == "") {
			t.Fatalf("%s has no claim and its volume is not retained with a record: %s, %q", name, pv.Spec.PersistentVolumeReclaimPolicy, pv.Annotations[migration.RecordAnnotation])
		}
	}

	// The next apply resumes and converges; then nothing is left to do.
	out.Reset()
	if err := ws.Run(ctx, cfgDir, "apply", "-auto-approve", "-no-color"); err != nil {
		t.Fatalf("re-apply: %v\n%s", err, out.String())
	}
	if err := rebound(cs, ns, vols, old, claimNames...)(nil); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	out.Reset()
	if err := ws.Run(ctx, cfgDir, "plan", "-no-color", "-detailed-exitcode"); err != nil {
		t.Fatalf("plan after the re-apply is not empty: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "No changes") {
		t.Fatalf("plan after the re-apply:\n%s", out.String())
	}
}
