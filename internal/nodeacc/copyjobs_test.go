package nodeacc

import (
	"context"
	"fmt"
	"path"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/acctest"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/hubconfig"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/kube"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/migration"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/provider"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/testcluster"
)

// Where the assertions of the copy tests are, all on the real node (the
// test cluster without a node has no Job controller and runs no pod, so
// internal/provider has no copy test):
//
//   - a copy read back byte for byte, owners and modes kept; the source
//     unchanged but for its record, which counts the bytes:
//     TestAccHomeStorage_migrateCopy (copy_test.go), and for two users
//     TestAccHomeStorage_migrateCopyFailedJob;
//   - the copy Job's spec (checkCopyJob: name, image, script, read-only
//     source, restart policy and backoff, security context and
//     capabilities, termination message) and the verification Job's
//     (checkVerifyJob): TestAccHomeStorage_migrateCopyFailedJob for every
//     Job it runs, TestAccHomeStorage_killedApplyConverges (killed_test.go)
//     for every copy Job of every case;
//   - a copy Job that fails (rsync cannot create a device node without
//     CAP_MKNOD) stops that user only, the error names the Job and its
//     reason, the source is unchanged, and the apply after the Job is
//     deleted copies again and converges; the new claims' mode, class,
//     size, labels and annotations, the Job gone, the hub config mapping
//     the users, migration_status; delete_copied_sources refused without
//     allow_data_loss: TestAccHomeStorage_migrateCopyFailedJob;
//   - the verification right before delete_copied_sources deletes a source:
//     a file written into the old home after the switch keeps it, while
//     another user's old home, verified, goes in the same apply; once dealt
//     with, it goes too: TestAccHomeStorage_migrateCopyFailedJob (two
//     users), TestAccHomeStorage_migrateCopy (one);
//   - an apply stopped after each step of a copy resumes and converges,
//     the source unchanged: TestAccHomeStorage_killedApplyConverges;
//   - the documented RBAC suffices for a copy, connecting as the limited
//     identity: TestAccHomeStorage_migrateCopyLeastPrivilege.

var bobFiles = map[string]string{
	"notes.txt":          "bob's notes\n",
	"runs/2024/out.json": "{\"loss\": 0.25}\n",
}

// jobRecorder keeps every Job created in a namespace, as first seen: the
// provider deletes them once done.
type jobRecorder struct {
	mu   sync.Mutex
	jobs []batchv1.Job
	uids map[string]bool
}

func recordJobs(t *testing.T, cs kubernetes.Interface, ns string) *jobRecorder {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	w, err := cs.BatchV1().Jobs(ns).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	r := &jobRecorder{uids: map[string]bool{}}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			j, ok := ev.Object.(*batchv1.Job)
			if !ok || ev.Type != watch.Added && ev.Type != watch.Modified {
				continue
			}
			r.mu.Lock()
			if !r.uids[string(j.UID)] {
				r.uids[string(j.UID)] = true
				r.jobs = append(r.jobs, *j.DeepCopy())
			}
			r.mu.Unlock()
		}
	}()
	t.Cleanup(func() { w.Stop(); cancel(); <-done })
	return r
}

// check returns the Jobs of component (home-copy or home-verify) recorded
// so far, and the first whose spec is wrong.
func (r *jobRecorder) check(component string) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for i := range r.jobs {
		j := &r.jobs[i]
		if j.Labels["app.kubernetes.io/component"] != component {
			continue
		}
		n++
		source := j.Annotations[migration.CopyOfAnnotation]
		target := "home-" + strings.TrimPrefix(source, "claim-")
		var err error
		if component == "home-verify" {
			err = checkVerifyJob(j, source, target)
		} else {
			err = checkCopyJob(j, source, target)
		}
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

func (r *jobRecorder) want(component string, n int) resource.TestCheckFunc {
	return func(*terraform.State) error {
		got, err := r.check(component)
		if err != nil {
			return err
		}
		if got != n {
			return fmt.Errorf("%d %s Jobs ran, want %d", got, component, n)
		}
		return nil
	}
}

// checkVerifyJob asserts that a verification Job mounts both claims
// read-only and runs the verification script.
func checkVerifyJob(j *batchv1.Job, source, target string) error {
	spec := j.Spec.Template.Spec
	if len(spec.Containers) != 1 || len(spec.Volumes) != 2 {
		return fmt.Errorf("job %s: %d containers, %d volumes", j.Name, len(spec.Containers), len(spec.Volumes))
	}
	c := spec.Containers[0]
	switch {
	case j.Name != migration.VerifyJobName(source):
		return fmt.Errorf("job name %s", j.Name)
	case !slices.Equal(c.Command, []string{"sh", "-c", migration.VerifyScript}):
		return fmt.Errorf("job %s runs %v", j.Name, c.Command)
	}
	for i, v := range spec.Volumes {
		want := []string{source, target}[i]
		if v.PersistentVolumeClaim == nil || v.PersistentVolumeClaim.ClaimName != want || !v.PersistentVolumeClaim.ReadOnly || !c.VolumeMounts[i].ReadOnly {
			return fmt.Errorf("job %s: volume %d is not %s read-only: %+v %+v", j.Name, i, want, v, c.VolumeMounts[i])
		}
	}
	return nil
}

// checkCopyJob asserts what the copy Job mounts and runs, and how.
func checkCopyJob(j *batchv1.Job, source, target string) error {
	spec := j.Spec.Template.Spec
	if len(spec.Containers) != 1 || len(spec.Volumes) != 2 {
		return fmt.Errorf("job %s: %d containers, %d volumes", j.Name, len(spec.Containers), len(spec.Volumes))
	}
	c := spec.Containers[0]
	vols := map[string]*corev1.PersistentVolumeClaimVolumeSource{}
	for _, v := range spec.Volumes {
		vols[v.Name] = v.PersistentVolumeClaim
	}
	mounts := map[string]corev1.VolumeMount{}
	for _, m := range c.VolumeMounts {
		mounts[m.Name] = m
	}
	sc := c.SecurityContext
	switch {
	case j.Name != migration.JobName(source):
		return fmt.Errorf("job name %s", j.Name)
	case c.Image != testcluster.ToolsImage || !slices.Equal(c.Command, []string{"sh", "-c", migration.CopyScript}):
		return fmt.Errorf("job %s runs %s %v", j.Name, c.Image, c.Command)
	case !strings.Contains(c.Command[2], "rsync -aHSAX --numeric-ids --filter='-x system.*' --filter='-x security.selinux' --delete /src/ /dst/") || !strings.Contains(c.Command[2], "--checksum"):
		return fmt.Errorf("the script does not copy and verify as documented")
	case vols["src"] == nil || vols["src"].ClaimName != source || !vols["src"].ReadOnly || mounts["src"].MountPath != "/src" || !mounts["src"].ReadOnly:
		return fmt.Errorf("job %s: source volume %+v mount %+v", j.Name, vols["src"], mounts["src"])
	case vols["dst"] == nil || vols["dst"].ClaimName != target || vols["dst"].ReadOnly || mounts["dst"].MountPath != "/dst":
		return fmt.Errorf("job %s: target volume %+v mount %+v", j.Name, vols["dst"], mounts["dst"])
	case spec.RestartPolicy != corev1.RestartPolicyNever || j.Spec.BackoffLimit == nil || *j.Spec.BackoffLimit != 2:
		return fmt.Errorf("job %s: restart %s backoff %v", j.Name, spec.RestartPolicy, j.Spec.BackoffLimit)
	case sc == nil || sc.RunAsUser == nil || *sc.RunAsUser != 0 || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
		sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem || sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) ||
		!slices.Equal(sc.Capabilities.Add, []corev1.Capability{"CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID"}): // baseline allows each
		return fmt.Errorf("job %s: security context %+v", j.Name, sc)
	case c.TerminationMessagePolicy != corev1.TerminationMessageReadFile:
		return fmt.Errorf("job %s: termination message policy %s", j.Name, c.TerminationMessagePolicy)
	}
	return nil
}

// entries is what rsync counts in a tree of files: the files, the
// directories holding them and the root.
func entries(files map[string]string) int {
	dirs := map[string]bool{".": true}
	for name := range files {
		for d := path.Dir(name); d != "."; d = path.Dir(d) {
			dirs[d] = true
		}
	}
	return len(files) + len(dirs)
}

// copiedTo checks a finished copy of user's home: the new claim home-user
// in ReadWriteMany and class, of the configured size, labelled as the
// user's home and naming its source, holding files; the source unchanged
// (oldUID, ReadWriteOnce) but for its record, switched, which counts the
// files and bytes; the copy Job gone. With files nil, what the home holds
// and the counts are left to the caller.
func copiedTo(ctx context.Context, cs kubernetes.Interface, ns, class, size, user, oldUID string, files map[string]string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		source, target := "claim-"+user, "home-"+user
		tgt, err := cs.CoreV1().PersistentVolumeClaims(ns).Get(ctx, target, metav1.GetOptions{})
		if err != nil {
			return err
		}
		switch {
		case !slices.Equal(tgt.Spec.AccessModes, []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany}) || tgt.Spec.StorageClassName == nil || *tgt.Spec.StorageClassName != class:
			return fmt.Errorf("%s: modes %v class %v", target, tgt.Spec.AccessModes, tgt.Spec.StorageClassName)
		case tgt.Annotations[migration.CopyOfAnnotation] != source || tgt.Annotations["hub.jupyter.org/username"] != user || tgt.Labels["hub.jupyter.org/username"] != user:
			return fmt.Errorf("%s: metadata %v %v", target, tgt.Labels, tgt.Annotations)
		}
		if q := tgt.Spec.Resources.Requests[corev1.ResourceStorage]; q.String() != size {
			return fmt.Errorf("%s requests %s, want the configured %s", target, q.String(), size)
		}
		src, err := cs.CoreV1().PersistentVolumeClaims(ns).Get(ctx, source, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("the source of a copy is gone: %w", err)
		}
		rec, err := migration.DecodeCopyRecord(src.Annotations[migration.CopyAnnotation])
		bytes := 0
		for _, content := range files {
			bytes += len(content)
		}
		switch {
		case string(src.UID) != oldUID || src.Spec.AccessModes[0] != corev1.ReadWriteOnce:
			return fmt.Errorf("%s was replaced or changed", source)
		case err != nil || rec.Step != migration.StepSwitched || rec.Target != target:
			return fmt.Errorf("%s's record %+v (%v), want switched to %s", source, rec, err, target)
		case files != nil && (rec.Files != int64(entries(files)) || rec.Bytes != int64(bytes)):
			return fmt.Errorf("%s's record %+v (%v), want switched to %s with %d files, %d bytes", source, rec, err, target, entries(files), bytes)
		}
		if _, err := cs.BatchV1().Jobs(ns).Get(ctx, migration.JobName(source), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("the copy Job of %s was left behind (%v)", source, err)
		}
		if files == nil {
			return nil
		}
		return holds(ctx, cs, ns, target, files)
	}
}

// hubNamesNoUser checks the hub config the spawner config resource writes:
// settings only, no user (the hub finds copied homes at spawn), however
// many were copied.
func hubNamesNoUser(ctx context.Context, cs kubernetes.Interface, ns string, users ...string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		cm, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, "jupyter-spawner", metav1.GetOptions{})
		if err != nil {
			return err
		}
		var doc map[string]any
		if err := hubconfig.DecodeDocumentFile(cm.BinaryData[hubconfig.DocumentFile], &doc); err != nil {
			return err
		}
		text := hubconfig.JSON(doc)
		if len(doc) != 2 || doc["KubeSpawner"] == nil || doc["colocation"] == nil {
			return fmt.Errorf("hub config holds %s, want the settings and the co-location label only", text)
		}
		for _, u := range users {
			if strings.Contains(text, `"`+u+`"`) || strings.Contains(text, "home-"+u) {
				return fmt.Errorf("hub config names user %s: %s", u, text)
			}
		}
		return nil
	}
}

// seedHome creates user's RWO home in the host-path class and writes files
// into it, as user jovyan; script runs after, as root.
func seedHome(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns, user string, files map[string]string, script string) string {
	t.Helper()
	class := testcluster.HostPathClass
	source := "claim-" + user
	if err := testcluster.Seed(ctx, cs, ns, testcluster.SeedClaim{Name: source, Username: user, StorageClass: &class, Size: "2Gi"}); err != nil {
		t.Fatal(err)
	}
	if err := testcluster.WaitClaimPhase(ctx, cs, ns, source, corev1.ClaimBound); err != nil {
		t.Fatal(err)
	}
	write := testcluster.WriteFilesScript("/home", files) + "chown -R 1000:100 /home\n" + script
	if _, err := testcluster.RunPod(ctx, cs, testcluster.ClaimPod(ns, "server-"+user, source, write)); err != nil {
		t.Fatal(err)
	}
	src, err := cs.CoreV1().PersistentVolumeClaims(ns).Get(ctx, source, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return string(src.UID)
}

// Two RWO homes copied by real Jobs into new RWX claims, and their users
// switched in the hub config; the sources stay. Bob's home holds a device
// node, which the copy Job cannot create (it has no CAP_MKNOD): his Job
// fails for real, which stops him only, and the error names the Job; his
// home is untouched. Once he removes the node and the failed Job is deleted
// (as the error says), the next apply copies again and converges. Then
// delete_copied_sources, refused without allow_data_loss, deletes an old
// home only after a verification Job made right before passes: alice wrote
// into hers after the switch, so hers is kept and the apply says why, while
// bob's goes in the same apply; once her late file is dealt with, hers goes
// too. Every copy and verification Job's spec is checked as it was created.
func TestAccHomeStorage_migrateCopyFailedJob(t *testing.T) {
	c := acctest.Cluster(t)
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	cs := c.Admin()
	ns := acctest.Namespace(t)
	class := testcluster.HostPathClass
	jobs := recordJobs(t, cs, ns)
	old := map[string]string{
		"alice": seedHome(ctx, t, cs, ns, "alice", aliceFiles, ""),
		"bob":   seedHome(ctx, t, cs, ns, "bob", bobFiles, "mknod /home/console c 5 1\n"),
	}
	config := func(top, inMigration string) string {
		return acctest.AdminConfig(t, copyHomes(ns, class, top, inMigration)+fmt.Sprintf(`
resource "jupyter_spawner_config" "hub" {
  namespace             = %q
  home_storage_settings = jupyter_home_storage.homes.spawner_settings
}
`, ns))
	}
	exists := func(name string) bool {
		_, err := cs.CoreV1().PersistentVolumeClaims(ns).Get(ctx, name, metav1.GetOptions{})
		return err == nil
	}
	cfg := config("", "")
	del := config("allow_data_loss = true", "delete_copied_sources = true")
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: factories(provider.Options{Kube: kube.Options{CopyTimeout: 3 * time.Minute}}),
		Steps: []resource.TestStep{
			{
				Config: cfg,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectKnownValue(homesAddr, tfjsonpath.New("change_class"), knownvalue.StringExact("safe")),
					// Known at plan: the settings name no user, so a copy
					// does not change them (the hub reads the switch at spawn).
					plancheck.ExpectKnownValue(homesAddr, tfjsonpath.New("spawner_settings"), knownvalue.StringExact(
						`{"pvc_name_template":"claim-{username}","slug_scheme":"safe","storage_access_modes":["ReadWriteMany"],"storage_capacity":"2Gi",`+
							`"storage_class":"testbed-hostpath","storage_pvc_ensure":true,"volume_mounts":[{"mountPath":"/home/jovyan","name":"home"}],`+
							`"volumes":[{"name":"home","persistentVolumeClaim":{"claimName":"{pvc_name}"}}]}`)),
					plancheck.ExpectKnownValue(homesAddr, tfjsonpath.New("migration_plan"), knownvalue.StringExact(
						`{"alice":{"method":"copy","claim":"claim-alice","target":"home-alice","from":"ReadWriteOnce","to":"ReadWriteMany"},`+
							`"bob":{"method":"copy","claim":"claim-bob","target":"home-bob","from":"ReadWriteOnce","to":"ReadWriteMany"}}`)),
				}},
				ExpectError: wrapRE(fmt.Sprintf(`1 of 2 home migrations did not finish.*bob \(claim-bob, copy to home-bob, stopped at copying\).*copy Job %s failed \(BackoffLimitExceeded\).*No data was lost`,
					migration.JobName("claim-bob"))),
			},
			{
				PreConfig: func() {
					if n, err := jobs.check("home-copy"); err != nil || n != 2 {
						t.Fatalf("%d copy Jobs ran (want 2): %v", n, err)
					}
					// Alice is switched already; bob's home is as he left it.
					if h, err := currentHome(ctx, cs, ns, "claim-alice"); err != nil || h != "home-alice" {
						t.Fatalf("alice's home %s (%v), want home-alice", h, err)
					}
					if h, err := currentHome(ctx, cs, ns, "claim-bob"); err != nil || h != "claim-bob" {
						t.Fatalf("bob's home %s (%v), want claim-bob", h, err)
					}
					// Bob removes what cannot be copied, and the failed Job is deleted.
					if _, err := testcluster.RunPod(ctx, cs, testcluster.ClaimPod(ns, "fix-bob", "claim-bob", "test -c /home/console && rm /home/console")); err != nil {
						t.Fatal(err)
					}
					bg := metav1.DeletePropagationBackground
					if err := cs.BatchV1().Jobs(ns).Delete(ctx, migration.JobName("claim-bob"), metav1.DeleteOptions{PropagationPolicy: &bg}); err != nil {
						t.Fatal(err)
					}
				},
				Config: cfg,
				Check: resource.ComposeAggregateTestCheckFunc(
					copiedTo(ctx, cs, ns, class, "2Gi", "alice", old["alice"], aliceFiles),
					copiedTo(ctx, cs, ns, class, "2Gi", "bob", old["bob"], bobFiles),
					hubNamesNoUser(ctx, cs, ns, "alice", "bob"),
					jobs.want("home-copy", 3),
					checkClaim("alice", "name", "home-alice"),
					checkClaim("bob", "access_mode", "ReadWriteMany"),
					checkLegacyUsers(map[string]string{}),
					resource.TestCheckResourceAttr(homesAddr, "colocation_required", "false"),
					resource.TestCheckResourceAttr(homesAddr, "migration_status", `{"bob":{"method":"copy","target":"home-bob","step":"switched"}}`),
				),
			},
			{Config: cfg, PlanOnly: true},
			{
				// Deleting the old homes is asked for, but not allowed.
				Config:      config("", "delete_copied_sources = true"),
				ExpectError: wrapRE(`delete_copied_sources needs allow_data_loss = true`),
			},
			{
				// Alice wrote into her old home after the switch.
				PreConfig: func() {
					if _, err := testcluster.RunPod(ctx, cs, testcluster.ClaimPod(ns, "late-write", "claim-alice",
						testcluster.WriteFilesScript("/home", map[string]string{"late.txt": "written after the switch\n"}))); err != nil {
						t.Fatal(err)
					}
				},
				Config:           del,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectKnownValue(homesAddr, tfjsonpath.New("change_class"), knownvalue.StringExact("destructive"))}},
				ExpectError:      wrapRE(`alice \(claim-alice, delete-source\).*verifying it again right before the delete.*late\.txt.*It is kept`),
			},
			{
				PreConfig: func() {
					if !exists("claim-alice") || exists("claim-bob") || !exists("home-alice") || !exists("home-bob") {
						t.Fatalf("after the failed verification: claim-alice %v (want kept), claim-bob %v (want deleted), home-alice %v, home-bob %v",
							exists("claim-alice"), exists("claim-bob"), exists("home-alice"), exists("home-bob"))
					}
					if n, err := jobs.check("home-verify"); err != nil || n != 2 {
						t.Fatalf("%d verification Jobs ran (want 2): %v", n, err)
					}
					if _, err := testcluster.RunPod(ctx, cs, testcluster.ClaimPod(ns, "late-remove", "claim-alice", "rm /home/late.txt")); err != nil {
						t.Fatal(err)
					}
				},
				Config: del,
				Check: resource.ComposeAggregateTestCheckFunc(
					// The old homes are gone; the copies are the homes, and alice,
					// listed in users, gets no new empty claim-alice.
					func(*terraform.State) error {
						for _, u := range []string{"alice", "bob"} {
							if exists("claim-"+u) || !exists("home-"+u) {
								return fmt.Errorf("claim-%s %v (want deleted), home-%s %v", u, exists("claim-"+u), u, exists("home-"+u))
							}
						}
						return nil
					},
					jobs.want("home-verify", 3),
					jobs.want("home-copy", 3),
					func(*terraform.State) error { return holds(ctx, cs, ns, "home-alice", aliceFiles) },
					func(*terraform.State) error { return holds(ctx, cs, ns, "home-bob", bobFiles) },
					checkClaim("alice", "name", "home-alice"),
					resource.TestCheckResourceAttr(homesAddr, "change_class", "destructive"),
					// With the old claims gone, the hub finds each user's copy
					// by its label and its switch (internal/hubconfig's
					// spawn_test.go spawns on copies marked so).
					func(*terraform.State) error {
						for _, u := range []string{"alice", "bob"} {
							c, err := cs.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "home-"+u, metav1.GetOptions{})
							if err != nil {
								return err
							}
							if c.Labels[migration.CopyOfLabel] != migration.CopyOfLabelValue("claim-"+u) || c.Annotations[migration.CopyOfAnnotation] != "claim-"+u ||
								c.Annotations[migration.CopySwitchedAnnotation] == "" {
								return fmt.Errorf("home-%s: labels %v, annotations %v: the hub would not find it as claim-%s's switched copy", u, c.Labels, c.Annotations, u)
							}
						}
						return nil
					},
				),
			},
			{Config: del, PlanOnly: true},
		},
	})
}

// A copy runs with exactly the documented RBAC: the Role, the read-only and
// migrator ClusterRoles and the copier Role, bound to the limited identity
// the provider connects as; the real Job copies every file.
func TestAccHomeStorage_migrateCopyLeastPrivilege(t *testing.T) {
	c := acctest.Cluster(t)
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cs := c.Admin()
	ns := acctest.Namespace(t)
	class := testcluster.HostPathClass
	jobs := recordJobs(t, cs, ns)
	old := seedHome(ctx, t, cs, ns, "alice", aliceFiles, "")
	acctest.GrantMigrator(t, ns)
	cfg := acctest.Config(acctest.ProviderBlock(c, c.LimitedToken), fmt.Sprintf(`
resource "jupyter_home_storage" "homes" {
  namespace          = %q
  storage_class_name = %q
  capacity           = "2Gi"
  access_mode        = "ReadWriteMany"
  on_mode_change     = "migrate"
  migration = {
    copy_image           = %q
    target_name_template = "home-{username}"
  }
}

resource "jupyter_spawner_config" "hub" {
  namespace             = %q
  home_storage_settings = jupyter_home_storage.homes.spawner_settings
}
`, ns, class, testcluster.ToolsImage, ns))
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: factories(provider.Options{Kube: kube.Options{CopyTimeout: 3 * time.Minute}}),
		Steps: []resource.TestStep{
			{Config: cfg, Check: resource.ComposeAggregateTestCheckFunc(
				copiedTo(ctx, cs, ns, class, "2Gi", "alice", old, aliceFiles),
				hubNamesNoUser(ctx, cs, ns, "alice"),
				jobs.want("home-copy", 1),
			)},
			{Config: cfg, PlanOnly: true},
		},
	})
}
