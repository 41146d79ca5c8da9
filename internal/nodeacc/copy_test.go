package nodeacc

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/acctest"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/kube"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/migration"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/provider"
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
// ownership, permissions, an ACL and an extended attribute kept (the Job's
// root, with only its capabilities, sets them on files it does not own).
// With delete_copied_sources the real verification Job compares both again:
// a file written into the old home after the switch, and one rewritten
// there with other content and an older time (as tar x or cp -p do), keep
// it, and both are named; once the old home is as the copy saw it again
// (times aside), the old home goes.
// Nothing stands in for the Job controller, the scheduler, kubelet or the
// container runtime here.
func TestAccHomeStorage_migrateCopy(t *testing.T) {
	c := acctest.Cluster(t)
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cs := c.Admin()
	ns := acctest.Namespace(t)
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
	src, err := cs.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "claim-alice", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// An ACL and an extended attribute, set on the node's disk (the test
	// bed's image has no setfacl).
	if dir, err := hostPath(ctx, cs, ns, "claim-alice"); err != nil {
		t.Fatal(err)
	} else if err := setACLAndXattr(dir); err != nil {
		t.Fatal(err)
	}
	config := func(top, inMigration string) string {
		return acctest.AdminConfig(t, copyHomes(ns, class, top, inMigration))
	}
	cfg := config("", "")
	deleting := config("allow_data_loss = true", "delete_copied_sources = true")
	step := time.Now()
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: map[string]func() (tfprotov6.ProviderServer, error){
			"jupyter": providerserver.NewProtocol6WithError(provider.NewWithOptions("test", provider.Options{Kube: kube.Options{CopyTimeout: 2 * time.Minute}})()),
		},
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
					checkLegacyUsers(map[string]string{}),
					copiedOnNode(ctx, cs, ns, string(src.UID)),
				),
			},
			{Config: cfg, PlanOnly: true},
			{
				// Something wrote into the old home after the switch: a new
				// file, and results.csv rewritten with an older time, as a
				// restore does. The verification Job finds both, whatever the
				// times say, and the old home stays.
				PreConfig: func() {
					if _, err := testcluster.RunPod(ctx, cs, testcluster.ClaimPod(ns, "late-write", "claim-alice",
						testcluster.WriteFilesScript("/home", map[string]string{"late.txt": "written after the switch\n", "work/data/results.csv": "a,b\n5,6\n7,8\n"})+
							"touch -d '2001-01-01 00:00:00' /home/work/data/results.csv\n")); err != nil {
						t.Fatal(err)
					}
				},
				Config:      deleting,
				ExpectError: regexp.MustCompile(`(?s)differ\s+in\s+the\s+new\s+home.*the\s+old\s+home\s+is\s+kept.*late\.txt.*work/data/results\.csv`),
			},
			{
				// The old home is put back as the copy saw it (here: the late
				// file removed, results.csv written back, with a new time).
				PreConfig: func() {
					if _, err := cs.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "claim-alice", metav1.GetOptions{}); err != nil {
						t.Fatalf("claim-alice after a failed verification: %v", err)
					}
					restore := "rm /home/late.txt\n" + testcluster.WriteFilesScript("/home", map[string]string{"work/data/results.csv": aliceFiles["work/data/results.csv"]})
					if _, err := testcluster.RunPod(ctx, cs, testcluster.ClaimPod(ns, "late-remove", "claim-alice", restore)); err != nil {
						t.Fatal(err)
					}
				},
				// The old home goes after a verification Job (both claims
				// read-only) has compared them again; the copy stays whole.
				Config: deleting,
				Check: resource.ComposeAggregateTestCheckFunc(
					func(*terraform.State) error {
						if _, err := cs.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "claim-alice", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
							return fmt.Errorf("claim-alice after delete_copied_sources: %v", err)
						}
						return nil
					},
					checkClaim("alice", "name", "home-alice"),
					homeHolds(ctx, cs, ns, "home-alice"),
				),
			},
			{Config: deleting, PlanOnly: true},
		},
	})
}

// copyHomes is alice's home storage migrated by copy into home-{username}
// (ReadWriteMany, class), with top and inMigration added to the resource
// and its migration attribute.
func copyHomes(ns, class, top, inMigration string) string {
	return fmt.Sprintf(`
resource "jupyter_home_storage" "homes" {
  namespace          = %q
  storage_class_name = %q
  capacity           = "2Gi"
  access_mode        = "ReadWriteMany"
  users              = jsonencode({ alice = {} })
  on_mode_change     = "migrate"
  %s
  migration = {
    copy_image           = %q
    target_name_template = "home-{username}"
    %s
  }
}
`, ns, class, top, testcluster.ToolsImage, inMigration)
}

// homeHolds checks through a pod that claim holds exactly alice's files.
func homeHolds(ctx context.Context, cs kubernetes.Interface, ns, claim string) resource.TestCheckFunc {
	return func(*terraform.State) error { return holds(ctx, cs, ns, claim, aliceFiles) }
}

// copiedOnNode checks that home-alice holds alice's files: read through a
// pod that mounts it, and on the node's disk with their owner and mode; and
// that claim-alice is unchanged but for its record, which counts the bytes.
func copiedOnNode(ctx context.Context, cs kubernetes.Interface, ns, oldUID string) resource.TestCheckFunc {
	return func(s *terraform.State) error {
		if err := homeHolds(ctx, cs, ns, "home-alice")(s); err != nil {
			return err
		}
		dir, err := hostPath(ctx, cs, ns, "home-alice")
		if err != nil {
			return err
		}
		if err := hasACLAndXattr(dir); err != nil {
			return fmt.Errorf("home-alice: %w", err)
		}
		for name := range aliceFiles {
			st, err := os.Lstat(filepath.Join(dir, name))
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

// hostPath is the directory on the node's disk of claim's volume (of the
// host-path provisioner).
func hostPath(ctx context.Context, cs kubernetes.Interface, ns, claim string) (string, error) {
	pvc, err := cs.CoreV1().PersistentVolumeClaims(ns).Get(ctx, claim, metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	pv, err := cs.CoreV1().PersistentVolumes().Get(ctx, pvc.Spec.VolumeName, metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	if pv.Spec.HostPath == nil {
		return "", fmt.Errorf("%s's volume %s is not a host path", claim, pv.Name)
	}
	return pv.Spec.HostPath.Path, nil
}

// setACLAndXattr gives alice's notebook an ACL (another user may read it;
// its mode stays 644) and her raw.bin an extended attribute, in the home
// at dir; hasACLAndXattr checks that the home at dir has them.
func setACLAndXattr(dir string) error {
	if out, err := exec.Command("setfacl", "-m", "u:1234:r", filepath.Join(dir, "notebook.ipynb")).CombinedOutput(); err != nil {
		return fmt.Errorf("setfacl (Debian package acl; make test installs it): %v: %s", err, out)
	}
	return syscall.Setxattr(filepath.Join(dir, "work", "raw.bin"), "user.origin", []byte("lab"), 0)
}

func hasACLAndXattr(dir string) error {
	out, err := exec.Command("getfacl", "-n", filepath.Join(dir, "notebook.ipynb")).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "user:1234:r--") {
		return fmt.Errorf("notebook.ipynb's ACL was not kept (getfacl: %v):\n%s", err, out)
	}
	buf := make([]byte, 16)
	if n, err := syscall.Getxattr(filepath.Join(dir, "work", "raw.bin"), "user.origin", buf); err != nil || string(buf[:n]) != "lab" {
		return fmt.Errorf("work/raw.bin's extended attribute user.origin was not kept: %q, %v", buf[:max(n, 0)], err)
	}
	return nil
}

const homesAddr = "jupyter_home_storage.homes"

// checkClaim checks a field of a user's claim in the state's claims
// attribute (the default merged with the user's entry).
func checkClaim(user, field, want string) resource.TestCheckFunc {
	return resource.TestCheckResourceAttrWith(homesAddr, "claims", func(v string) error {
		var doc struct {
			Default map[string]any            `json:"default"`
			Users   map[string]map[string]any `json:"users"`
		}
		if err := json.Unmarshal([]byte(v), &doc); err != nil {
			return err
		}
		got, ok := doc.Users[user][field]
		if !ok {
			got, ok = doc.Default[field]
		}
		if _, listed := doc.Users[user]; !listed || !ok || fmt.Sprint(got) != want {
			return fmt.Errorf("claims[%q].%s = %v, want %q: %s", user, field, got, want, v)
		}
		return nil
	})
}
