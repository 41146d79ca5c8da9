package provider

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/acctest"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/kube"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/migration"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/spawner"
)

const copyImage = "registry.example.org/tools/rsync:3.4"

// fakeJobController stands in for the Job controller and the copy itself
// (the test cluster runs neither pods nor the Job controller): for every
// copy Job it checks the spec, creates the pod the controller would, with
// the termination message the script writes, and marks both finished,
// failed for the users in fail. No data is copied in this test.
type fakeJobController struct {
	mu    sync.Mutex
	seen  map[string]int // Jobs handled, by name
	fail  map[string]bool
	specs []error
	// verified: the verification Jobs run before a source is deleted.
	verified []error
}

func (f *fakeJobController) run(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns string) {
	// A Job runs for a moment, as a real one does, so that the provider
	// sees it running (its wait-copy step) before it finishes.
	first := map[string]time.Time{}
	for ctx.Err() == nil {
		jobs, err := cs.BatchV1().Jobs(ns).List(ctx, metav1.ListOptions{})
		if err == nil {
			for i := range jobs.Items {
				j := &jobs.Items[i]
				f.mu.Lock()
				done := f.seen[string(j.UID)] > 0
				f.mu.Unlock()
				if _, ok := first[string(j.UID)]; !ok {
					first[string(j.UID)] = time.Now()
				}
				if !done && time.Since(first[string(j.UID)]) >= 300*time.Millisecond {
					f.finish(ctx, t, cs, j)
				}
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (f *fakeJobController) finish(ctx context.Context, t *testing.T, cs kubernetes.Interface, j *batchv1.Job) {
	source := j.Annotations[migration.CopyOfAnnotation]
	user := strings.TrimPrefix(source, "claim-")
	verify := j.Labels["app.kubernetes.io/component"] == "home-verify"
	f.mu.Lock()
	f.seen[string(j.UID)]++
	failing := f.fail[user]
	if verify {
		f.verified = append(f.verified, checkVerifyJob(j, source, "home-"+user))
	} else {
		f.specs = append(f.specs, checkCopyJob(j, source, "home-"+user))
	}
	f.mu.Unlock()

	now := metav1.Now()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{GenerateName: j.Name + "-", Namespace: j.Namespace, Labels: map[string]string{kube.JobNameLabel: j.Name}},
		Spec:       j.Spec.Template.Spec,
	}
	p, err := cs.CoreV1().Pods(j.Namespace).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Errorf("fake job controller: %v", err)
		return
	}
	exit, phase, msg := int32(0), corev1.PodSucceeded, `{"files":12,"bytes":3456}`
	if failing {
		exit, phase, msg = 1, corev1.PodFailed, "verification failed"
	}
	p.Status = corev1.PodStatus{Phase: phase, ContainerStatuses: []corev1.ContainerStatus{{Name: "copy",
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: exit, Message: msg, StartedAt: now, FinishedAt: now}}}}}
	if _, err := cs.CoreV1().Pods(j.Namespace).UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Errorf("fake job controller: pod status: %v", err)
		return
	}
	j.Status.StartTime = &now
	if failing {
		j.Status.Failed = 1
		j.Status.Conditions = []batchv1.JobCondition{
			{Type: batchv1.JobFailureTarget, Status: corev1.ConditionTrue, Reason: "BackoffLimitExceeded", LastTransitionTime: now},
			{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: "BackoffLimitExceeded", LastTransitionTime: now},
		}
	} else {
		j.Status.Succeeded, j.Status.CompletionTime = 1, &now
		j.Status.Conditions = []batchv1.JobCondition{
			{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionTrue, LastTransitionTime: now},
			{Type: batchv1.JobComplete, Status: corev1.ConditionTrue, LastTransitionTime: now},
		}
	}
	if _, err := cs.BatchV1().Jobs(j.Namespace).UpdateStatus(ctx, j, metav1.UpdateOptions{}); err != nil {
		t.Errorf("fake job controller: job status: %v", err)
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
	case c.Image != copyImage || !slices.Equal(c.Command, []string{"sh", "-c", migration.CopyScript}):
		return fmt.Errorf("job %s runs %s %v", j.Name, c.Image, c.Command)
	case !strings.Contains(c.Command[2], "rsync -aHS --numeric-ids --delete /src/ /dst/") || !strings.Contains(c.Command[2], "--checksum"):
		return fmt.Errorf("the script does not copy and verify as documented")
	case vols["src"] == nil || vols["src"].ClaimName != source || !vols["src"].ReadOnly || mounts["src"].MountPath != "/src" || !mounts["src"].ReadOnly:
		return fmt.Errorf("job %s: source volume %+v mount %+v", j.Name, vols["src"], mounts["src"])
	case vols["dst"] == nil || vols["dst"].ClaimName != target || vols["dst"].ReadOnly || mounts["dst"].MountPath != "/dst":
		return fmt.Errorf("job %s: target volume %+v mount %+v", j.Name, vols["dst"], mounts["dst"])
	case spec.RestartPolicy != corev1.RestartPolicyNever || j.Spec.BackoffLimit == nil || *j.Spec.BackoffLimit != 2:
		return fmt.Errorf("job %s: restart %s backoff %v", j.Name, spec.RestartPolicy, j.Spec.BackoffLimit)
	case sc == nil || sc.RunAsUser == nil || *sc.RunAsUser != 0 || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
		sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem || sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) ||
		!slices.Equal(sc.Capabilities.Add, []corev1.Capability{"CHOWN", "DAC_OVERRIDE", "DAC_READ_SEARCH", "FOWNER", "FSETID"}):
		return fmt.Errorf("job %s: security context %+v", j.Name, sc)
	case c.TerminationMessagePolicy != corev1.TerminationMessageReadFile:
		return fmt.Errorf("job %s: termination message policy %s", j.Name, c.TerminationMessagePolicy)
	}
	return nil
}

func copyConfig(t *testing.T, ns, class string, extra ...string) string {
	top, inMigration := "", ""
	if len(extra) == 2 {
		top, inMigration = extra[0], extra[1]
	}
	return acctest.AdminConfig(t, fmt.Sprintf(`
resource "jupyter_home_storage" "homes" {
  namespace          = %q
  storage_class_name = %q
  capacity           = "2Gi"
  access_mode        = "ReadWriteMany"
  users              = { alice = {} }
  on_mode_change     = "migrate"
  %s
  migration = {
    copy_image           = %q
    target_name_template = "home-{username}"
    %s
  }
}

resource "jupyter_spawner_config" "hub" {
  namespace             = %q
  home_storage_settings = jupyter_home_storage.homes.spawner_settings
  legacy_users          = jupyter_home_storage.homes.legacy_users
}
`, ns, class, top, copyImage, inMigration, ns))
}

// copied checks a finished copy: the new claim in the new mode and class,
// labelled as the user's home and naming its source; the source unchanged
// but for its record, which holds the verification; the Job gone; the hub
// config mapping the user to the new claim.
func copied(cs kubernetes.Interface, ns, class string, old map[string]string, users ...string) resource.TestCheckFunc {
	return func(s *terraform.State) error {
		ctx := context.Background()
		var settings map[string]any
		if err := json.Unmarshal([]byte(s.RootModule().Resources[hsAddr].Primary.Attributes["spawner_settings"]), &settings); err != nil {
			return err
		}
		homeClaims, _ := settings[spawner.HomeClaimsKey].(map[string]any)
		cm, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, "jupyter-spawner", metav1.GetOptions{})
		if err != nil {
			return err
		}
		var doc struct {
			HomeClaims map[string]string `json:"home_claims"`
		}
		if err := json.Unmarshal([]byte(cm.Data[spawner.JSONFile]), &doc); err != nil {
			return err
		}
		for _, u := range users {
			source, target := "claim-"+u, "home-"+u
			tgt, err := cs.CoreV1().PersistentVolumeClaims(ns).Get(ctx, target, metav1.GetOptions{})
			if err != nil {
				return err
			}
			switch {
			case !slices.Equal(tgt.Spec.AccessModes, []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany}) || tgt.Spec.StorageClassName == nil || *tgt.Spec.StorageClassName != class:
				return fmt.Errorf("%s: modes %v class %v", target, tgt.Spec.AccessModes, tgt.Spec.StorageClassName)
			case tgt.Annotations[migration.CopyOfAnnotation] != source || tgt.Annotations["hub.jupyter.org/username"] != u || tgt.Labels["hub.jupyter.org/username"] != u:
				return fmt.Errorf("%s: metadata %v %v", target, tgt.Labels, tgt.Annotations)
			}
			if q := tgt.Spec.Resources.Requests[corev1.ResourceStorage]; q.String() != "2Gi" {
				return fmt.Errorf("%s requests %s, want the configured 2Gi", target, q.String())
			}
			src, err := cs.CoreV1().PersistentVolumeClaims(ns).Get(ctx, source, metav1.GetOptions{})
			if err != nil {
				return fmt.Errorf("the source of a copy is gone: %w", err)
			}
			rec, err := migration.DecodeCopyRecord(src.Annotations[migration.CopyAnnotation])
			switch {
			case string(src.UID) != old[source] || src.Spec.AccessModes[0] != corev1.ReadWriteOnce:
				return fmt.Errorf("%s was replaced or changed", source)
			case err != nil || rec.Step != migration.StepSwitched || rec.Files != 12 || rec.Bytes != 3456 || rec.Target != target:
				return fmt.Errorf("%s record %+v, %v", source, rec, err)
			case homeClaims[u] != target || doc.HomeClaims[u] != target:
				return fmt.Errorf("user %s not switched: spawner_settings %v, hub config %v", u, homeClaims, doc.HomeClaims)
			}
			if _, err := cs.BatchV1().Jobs(ns).Get(ctx, migration.JobName(source), metav1.GetOptions{}); err == nil {
				return fmt.Errorf("the copy Job of %s was left behind", source)
			}
		}
		if len(homeClaims) != len(users) {
			return fmt.Errorf("home_claims %v, want %v", homeClaims, users)
		}
		return nil
	}
}

// copyFixture is two EBS-like RWO homes, alice's and bob's, volumes
// reserved for their EFS-like copies, and the stand-in Job controller
// (failing the copies of the users in fail); the provider waits a minute at
// most for a Job: one the stand-in does not finish fails the test, not the clock.
func copyFixture(t *testing.T, fail map[string]bool) (kubernetes.Interface, string, string, map[string]func() (tfprotov6.ProviderServer, error), *fakeJobController) {
	cs := acctest.Cluster(t).Admin()
	ns := acctest.Namespace(t)
	ebs, efs := "gp3-"+ns, "efs-"+ns
	var seeds []acctest.SeedClaim
	for _, u := range []string{"alice", "bob"} {
		seeds = append(seeds, acctest.SeedClaim{Name: "claim-" + u, Username: u, StorageClass: &ebs, Bound: true, Driver: "ebs.csi.aws.com"})
		reserveVolume(t, cs, ns, "home-"+u, efs)
	}
	acctest.Seed(t, cs, ns, seeds...)
	jobs := &fakeJobController{seen: map[string]int{}, fail: fail}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); jobs.run(ctx, t, cs, ns) }()
	t.Cleanup(func() { cancel(); wg.Wait() })
	return cs, ns, efs, factories(Options{Kube: kube.Options{CopyTimeout: time.Minute}}), jobs
}

// EBS homes cannot be rebound to ReadWriteMany: each is copied by a Job into
// a new claim in the EFS-like class, verified, and its user switched to it
// in the hub config; the source stays. A failed copy stops that user only,
// names the Job, and the next apply (after the Job is deleted, as the error
// says) copies again and converges. The copy itself ran in no test here:
// fakeJobController stands in for it.
func TestAccHomeStorage_migrateCopy(t *testing.T) {
	cs, ns, efs, pf, jobs := copyFixture(t, map[string]bool{"bob": true})
	old := uids(t, cs, ns, "claim-alice", "claim-bob")

	cfg := copyConfig(t, ns, efs)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: pf,
		Steps: []resource.TestStep{
			{
				Config: cfg,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					expectClass("safe"),
					plancheck.ExpectUnknownValue(hsAddr, tfjsonpath.New("spawner_settings")),
					plancheck.ExpectKnownValue(hsAddr, tfjsonpath.New("migration_plan"), knownvalue.StringExact(
						`{"alice":{"method":"copy","claim":"claim-alice","target":"home-alice","from":"ReadWriteOnce","to":"ReadWriteMany"},`+
							`"bob":{"method":"copy","claim":"claim-bob","target":"home-bob","from":"ReadWriteOnce","to":"ReadWriteMany"}}`)),
				}},
				ExpectError: wrapRE(fmt.Sprintf(`(?s)1 of 2 home migrations did not finish.*bob \(claim-bob, copy to home-bob, stopped at copying\).*copy Job %s failed \(BackoffLimitExceeded\).*No data was lost`,
					migration.JobName("claim-bob"))),
			},
			{
				PreConfig: func() {
					for _, err := range jobs.specs {
						if err != nil {
							t.Fatal(err)
						}
					}
					if len(jobs.specs) != 2 {
						t.Fatalf("%d copy Jobs ran, want 2", len(jobs.specs))
					}
					// The user reads the error and deletes the failed Job; the copy now succeeds.
					jobs.mu.Lock()
					jobs.fail["bob"] = false
					jobs.mu.Unlock()
					bg := metav1.DeletePropagationBackground
					if err := cs.BatchV1().Jobs(ns).Delete(context.Background(), migration.JobName("claim-bob"), metav1.DeleteOptions{PropagationPolicy: &bg}); err != nil {
						t.Fatal(err)
					}
				},
				Config: cfg,
				Check: resource.ComposeAggregateTestCheckFunc(
					copied(cs, ns, efs, old, "alice", "bob"),
					checkClaim("alice", "name", "home-alice"),
					checkClaim("bob", "access_mode", "ReadWriteMany"),
					resource.TestCheckResourceAttr(hsAddr, "legacy_users.%", "0"),
					resource.TestCheckResourceAttr(hsAddr, "colocation_required", "false"),
					resource.TestCheckResourceAttr(hsAddr, "migration_status", `{"bob":{"method":"copy","target":"home-bob","step":"switched"}}`),
					legacyInConfigMap(cs, ns),
				),
			},
			{Config: cfg, PlanOnly: true},
			{
				// Deleting the old homes is asked for, but not allowed.
				Config:      copyConfig(t, ns, efs, "", "delete_copied_sources = true"),
				ExpectError: wrapRE(`(?s)delete_copied_sources needs allow_data_loss = true`),
			},
			{
				Config:           copyConfig(t, ns, efs, "allow_data_loss = true", "delete_copied_sources = true"),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{expectClass("destructive")}},
				Check: resource.ComposeAggregateTestCheckFunc(
					func(*terraform.State) error {
						// The old homes are gone; the copies are the homes, and alice,
						// listed in users, gets no new empty claim-alice.
						// Each was verified again, read-only, right before its delete.
						jobs.mu.Lock()
						verified := slices.Clone(jobs.verified)
						jobs.mu.Unlock()
						if len(verified) != 2 {
							return fmt.Errorf("%d verification Jobs ran before the deletes, want 2", len(verified))
						}
						for _, err := range verified {
							if err != nil {
								return err
							}
						}
						for _, u := range []string{"alice", "bob"} {
							if _, err := cs.CoreV1().PersistentVolumeClaims(ns).Get(context.Background(), "claim-"+u, metav1.GetOptions{}); err == nil {
								return fmt.Errorf("claim-%s still exists", u)
							}
							if _, err := cs.CoreV1().PersistentVolumeClaims(ns).Get(context.Background(), "home-"+u, metav1.GetOptions{}); err != nil {
								return fmt.Errorf("home-%s: %v", u, err)
							}
						}
						return nil
					},
					checkClaim("alice", "name", "home-alice"),
					resource.TestCheckResourceAttr(hsAddr, "change_class", "destructive"),
					resource.TestCheckResourceAttrWith(hsAddr, "spawner_settings", func(v string) error {
						if !strings.Contains(v, `"home_claims":{"alice":"home-alice","bob":"home-bob"}`) {
							return fmt.Errorf("spawner_settings lost the switch: %s", v)
						}
						return nil
					}),
				),
			},
			{Config: copyConfig(t, ns, efs, "allow_data_loss = true", "delete_copied_sources = true"), PlanOnly: true},
		},
	})
	for _, err := range jobs.specs {
		if err != nil {
			t.Error(err)
		}
	}
}

// A copy stopped after any of its steps resumes with the next apply and
// converges to the same result; the source is never touched but for its
// record.
func TestAccHomeStorage_migrateCopyResumesAfterEveryStep(t *testing.T) {
	cs := acctest.Cluster(t).Admin()
	for _, stop := range []migration.Op{migration.OpCreateTarget, migration.OpStartCopy, migration.OpWaitCopy, migration.OpVerify, migration.OpSwitch} {
		t.Run(string(stop), func(t *testing.T) {
			ns := acctest.Namespace(t)
			ebs, efs := "gp3-"+ns, "efs-"+ns
			acctest.Seed(t, cs, ns, acctest.SeedClaim{Name: "claim-alice", Username: "alice", StorageClass: &ebs, Bound: true, Driver: "ebs.csi.aws.com"})
			reserveVolume(t, cs, ns, "home-alice", efs)
			old := uids(t, cs, ns, "claim-alice")
			jobs := &fakeJobController{seen: map[string]int{}, fail: map[string]bool{}}
			ctx, cancel := context.WithCancel(context.Background())
			var wg sync.WaitGroup
			wg.Add(1)
			go func() { defer wg.Done(); jobs.run(ctx, t, cs, ns) }()
			t.Cleanup(func() { cancel(); wg.Wait() })

			stopped := false
			stopping := afterStep(func(_ string, op migration.Op) error {
				if op == stop && !stopped {
					stopped = true
					return fmt.Errorf("apply stopped after step %s", op)
				}
				return nil
			})
			cfg := copyConfig(t, ns, efs)
			resource.Test(t, resource.TestCase{
				Steps: []resource.TestStep{
					{ProtoV6ProviderFactories: stopping, Config: cfg,
						ExpectError: wrapRE(fmt.Sprintf(`(?s)1 of 1 home migrations did not finish.*alice \(claim-alice, copy to home-alice.*apply stopped after step %s`, stop))},
					{
						PreConfig: func() {
							if !stopped {
								t.Fatalf("the apply never reached step %s", stop)
							}
						},
						ProtoV6ProviderFactories: protoV6ProviderFactories, Config: cfg,
						Check: copied(cs, ns, efs, old, "alice"),
					},
					{ProtoV6ProviderFactories: protoV6ProviderFactories, Config: cfg, PlanOnly: true},
				},
			})
			jobs.mu.Lock()
			defer jobs.mu.Unlock()
			for _, err := range jobs.specs {
				if err != nil {
					t.Error(err)
				}
			}
		})
	}
}

// A copy runs with exactly the documented RBAC: the Role, the read-only and
// migrator ClusterRoles and the copier Role, bound to a non-admin identity.
func TestAccHomeStorage_migrateCopyLeastPrivilege(t *testing.T) {
	c := acctest.Cluster(t)
	cs := c.Admin()
	ns := acctest.Namespace(t)
	ebs, efs := "gp3-"+ns, "efs-"+ns
	acctest.Seed(t, cs, ns, acctest.SeedClaim{Name: "claim-alice", Username: "alice", StorageClass: &ebs, Bound: true, Driver: "ebs.csi.aws.com"})
	reserveVolume(t, cs, ns, "home-alice", efs)
	old := uids(t, cs, ns, "claim-alice")
	acctest.GrantMigrator(t, ns)
	jobs := &fakeJobController{seen: map[string]int{}, fail: map[string]bool{}}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); jobs.run(ctx, t, cs, ns) }()
	t.Cleanup(func() { cancel(); wg.Wait() })
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
`, ns, efs, copyImage, ns))
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6ProviderFactories,
		Steps: []resource.TestStep{
			{Config: cfg, Check: copied(cs, ns, efs, old, "alice")},
			{Config: cfg, PlanOnly: true},
		},
	})
}

// delete_copied_sources deletes an old home only when a verification made
// right before the delete passes. Here alice's fails (she wrote to her old
// home after the copy, say): her old claim is kept and the apply says why;
// bob's passes and his old claim goes. Once hers passes, it goes too.
func TestAccHomeStorage_deleteSourceVerifiedNow(t *testing.T) {
	cs, ns, efs, pf, jobs := copyFixture(t, map[string]bool{})
	exists := func(name string) bool {
		_, err := cs.CoreV1().PersistentVolumeClaims(ns).Get(context.Background(), name, metav1.GetOptions{})
		return err == nil
	}
	del := copyConfig(t, ns, efs, "allow_data_loss = true", "delete_copied_sources = true")
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: pf,
		Steps: []resource.TestStep{
			{Config: copyConfig(t, ns, efs)},
			{
				PreConfig: func() {
					jobs.mu.Lock()
					jobs.fail["alice"] = true // her verification finds data the copy lacks
					jobs.mu.Unlock()
				},
				Config:           del,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{expectClass("destructive")}},
				ExpectError:      wrapRE(`(?s)alice \(claim-alice, delete-source\).*verifying it again right before the delete.*It is kept`),
			},
			{
				PreConfig: func() {
					if !exists("claim-alice") || exists("claim-bob") || !exists("home-alice") || !exists("home-bob") {
						t.Fatalf("after the failed verification: claim-alice %v (want kept), claim-bob %v (want deleted)", exists("claim-alice"), exists("claim-bob"))
					}
					jobs.mu.Lock()
					jobs.fail["alice"] = false
					jobs.mu.Unlock()
				},
				Config: del,
				Check: func(*terraform.State) error {
					if exists("claim-alice") || !exists("home-alice") {
						return fmt.Errorf("claim-alice %v, home-alice %v", exists("claim-alice"), exists("home-alice"))
					}
					return nil
				},
			},
			{Config: del, PlanOnly: true},
		},
	})
}
