package provider

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/acctest"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/kube"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/migration"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/testcluster"
)

// A user's files, as a notebook server leaves them: nested directories, an
// empty file, bytes that are not text.
var aliceFiles = map[string]string{
	"notebook.ipynb":        "{\"cells\": [], \"nbformat\": 4}\n",
	"work/data/results.csv": "a,b\n1,2\n3,4\n",
	"work/data/empty":       "",
	"work/raw.bin":          "\x00\x01\x02\xff\xfe\r\n\t end",
	".config/settings.json": "{\"theme\": \"dark\"}",
}

// The copy on a real node: a pod writes alice's files into her RWO home
// (a volume of the host-path provisioner, which cannot be rebound), the
// provider copies it into a new RWX claim with its real Job (the test bed's
// rsync image), and a pod mounting the new home reads every byte back, with
// ownership and permissions kept. Nothing stands in for the Job controller,
// the scheduler, kubelet or the container runtime here.
func TestAccHomeStorage_migrateCopyOnNode(t *testing.T) {
	acctest.Cluster(t) // skips without TF_ACC, like every acceptance test
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	start := time.Now()
	c, err := testcluster.Start(ctx, testcluster.Options{Node: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Stop)
	t.Logf("cluster with a node ready in %s", time.Since(start).Round(time.Millisecond))
	cs := c.Admin()
	const ns = "hub"
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	class := testcluster.HostPathClass
	if err := testcluster.Seed(ctx, cs, ns, testcluster.SeedClaim{Name: "claim-alice", Username: "alice", StorageClass: &class, Size: "2Gi"}); err != nil {
		t.Fatal(err)
	}
	if err := testcluster.WaitClaimPhase(ctx, cs, ns, "claim-alice", corev1.ClaimBound); err != nil {
		t.Fatal(err)
	}
	// The server wrote as jovyan (1000:100); one file is private.
	script := testcluster.WriteFilesScript("/home", aliceFiles) + "chown -R 1000:100 /home\nchmod 600 /home/work/raw.bin\n"
	if _, err := testcluster.RunPod(ctx, cs, testcluster.ClaimPod(ns, "server-alice", "claim-alice", script)); err != nil {
		t.Fatal(err)
	}
	old := uids(t, cs, ns, "claim-alice")

	cfg := acctest.Config(acctest.ProviderBlock(c, c.AdminToken), fmt.Sprintf(`
resource "jupyter_home_storage" "homes" {
  namespace          = %q
  storage_class_name = %q
  capacity           = "2Gi"
  access_mode        = "ReadWriteMany"
  users              = ["alice"]
  on_mode_change     = "migrate"
  migration = {
    copy_image           = %q
    target_name_template = "home-{username}"
  }
}
`, ns, class, testcluster.ToolsImage))
	step := time.Now()
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: factories(Options{Kube: kube.Options{CopyTimeout: 2 * time.Minute}}),
		Steps: []resource.TestStep{
			{
				Config: cfg,
				Check: resource.ComposeAggregateTestCheckFunc(
					func(*terraform.State) error {
						t.Logf("apply with the copy took %s", time.Since(step).Round(time.Millisecond))
						return nil
					},
					checkClaim("alice", "name", "home-alice"),
					checkClaim("alice", "access_mode", "ReadWriteMany"),
					resource.TestCheckResourceAttr(hsAddr, "legacy_users.#", "0"),
					copiedOnNode(ctx, cs, ns, old["claim-alice"]),
				),
			},
			{Config: cfg, PlanOnly: true},
		},
	})
}

// copiedOnNode checks that home-alice holds alice's files: read through a
// pod that mounts it, and on the node's disk with their owner and mode; and
// that claim-alice is unchanged but for its record, which counts the bytes.
func copiedOnNode(ctx context.Context, cs kubernetes.Interface, ns, oldUID string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		msg, err := testcluster.RunPod(ctx, cs, testcluster.ClaimPod(ns, "reader-alice", "home-alice", testcluster.ReadFilesScript("/home")))
		if err != nil {
			return err
		}
		got, err := testcluster.ParseFiles(msg)
		if err != nil {
			return err
		}
		if !maps.Equal(got, aliceFiles) {
			return fmt.Errorf("home-alice holds %q, want %q", got, aliceFiles)
		}
		tgt, err := cs.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "home-alice", metav1.GetOptions{})
		if err != nil {
			return err
		}
		pv, err := cs.CoreV1().PersistentVolumes().Get(ctx, tgt.Spec.VolumeName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if pv.Spec.HostPath == nil {
			return fmt.Errorf("home-alice's volume %s is not a host path", pv.Name)
		}
		for name := range aliceFiles {
			st, err := os.Lstat(filepath.Join(pv.Spec.HostPath.Path, name))
			if err != nil {
				return err
			}
			sys, _ := st.Sys().(*syscall.Stat_t)
			mode := os.FileMode(0o644)
			if name == "work/raw.bin" {
				mode = 0o600
			}
			if sys == nil || sys.Uid != 1000 || sys.Gid != 100 || st.Mode().Perm() != mode {
				return fmt.Errorf("%s in home-alice: mode %s, owner %+v; want %s, 1000:100", name, st.Mode(), sys, mode)
			}
		}
		src, err := cs.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "claim-alice", metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("the source of the copy is gone: %w", err)
		}
		rec, err := migration.DecodeCopyRecord(src.Annotations[migration.CopyAnnotation])
		bytes := 0
		for _, content := range aliceFiles {
			bytes += len(content)
		}
		switch {
		case string(src.UID) != oldUID || src.Spec.AccessModes[0] != corev1.ReadWriteOnce:
			return fmt.Errorf("claim-alice was replaced or changed")
		case err != nil || rec.Step != migration.StepSwitched || rec.Target != "home-alice" || rec.Bytes != int64(bytes):
			return fmt.Errorf("claim-alice's record %+v (%v), want switched to home-alice with %d bytes", rec, err, bytes)
		}
		return nil
	}
}
