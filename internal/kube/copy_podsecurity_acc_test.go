package kube

import (
	"context"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/acctest"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/claims"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/migration"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/safety"
)

// warnings collects the warnings the API server sends a client.
type warnings struct{ collected }

func (w *warnings) HandleWarningHeader(_ int, _ string, text string) { w.add(text) }

// The copy and verification Jobs exactly as the provider makes them
// (CopyJob, VerifyJob), against the test bed's API server and its
// PodSecurity admission plugin, in a namespace labelled with each level
// (enforce and warn): the Job is created with a server-side dry run (Pod
// Security only warns of a Job) and so is the pod its controller would
// create from its template (which enforce admits or refuses). Under
// privileged and baseline the pods are admitted without a warning; under
// restricted they are refused, which is why a plan refuses copies there
// (safety.CheckPodSecurity). The namespace's labels as the provider reads
// them (NamespaceLabels) give the level the plan decides from.
func TestAccCopyJobsUnderPodSecurity(t *testing.T) {
	c := acctest.Cluster(t)
	ctx := context.Background()
	var warned warnings
	rc := c.RESTConfig(c.AdminToken)
	rc.WarningHandler = &warned
	cs := kubernetes.NewForConfigOrDie(rc)
	provider := client(t)
	dryRun := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
	for _, level := range []string{safety.PodSecurityPrivileged, safety.PodSecurityBaseline, safety.PodSecurityRestricted} {
		t.Run(level, func(t *testing.T) {
			ns := acctest.Namespace(t)
			nsObj, err := cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			nsObj.Labels[safety.PodSecurityEnforceLabel], nsObj.Labels[safety.PodSecurityWarnLabel] = level, level
			if _, err := cs.CoreV1().Namespaces().Update(ctx, nsObj, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
			labels, err := provider.NamespaceLabels(ctx, ns)
			if err != nil {
				t.Fatal(err)
			}
			if ps := safety.PodSecurityOf(labels); ps.Enforce != level || ps.Warn != level {
				t.Fatalf("the provider reads %+v from namespace %s labelled %s", ps, ns, level)
			}
			jobs := []*batchv1.Job{
				CopyJob(Copy{Namespace: ns, Source: "claim-alice", Target: "home-alice", Image: "registry.example.org/tools/rsync:3"}),
				VerifyJob(ns, "claim-alice", "home-alice", "registry.example.org/tools/rsync:3", time.Hour),
				DirectoryCopyJobObject(migration.DirectoryCopy{User: "bob", Shared: "home-shared", Directory: "home/bob", CopyImage: "registry.example.org/tools/rsync:3",
					Spec: claims.Spec{Namespace: ns, Name: "claim-bob"}}, "uid-1"),
			}
			for _, j := range jobs {
				warned.take()
				if _, err := cs.BatchV1().Jobs(ns).Create(ctx, j, dryRun); err != nil {
					t.Fatalf("Job %s: %v", j.Name, err)
				}
				jobWarnings := warned.take()
				pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{GenerateName: j.Name + "-", Namespace: ns, Labels: j.Spec.Template.Labels},
					Spec: j.Spec.Template.Spec}
				_, err := cs.CoreV1().Pods(ns).Create(ctx, pod, dryRun)
				switch {
				case level != safety.PodSecurityRestricted && (err != nil || len(jobWarnings) > 0):
					t.Errorf("Job %s under %s: its pod %v, warnings at its creation %q", j.Name, level, err, jobWarnings)
				case level == safety.PodSecurityRestricted && (err == nil || !strings.Contains(err.Error(), `violates PodSecurity "restricted:latest"`)):
					t.Errorf("Job %s's pod under restricted: %v; want it refused (else the plan's refusal is wrong)", j.Name, err)
				case level == safety.PodSecurityRestricted && (len(jobWarnings) == 0 || !strings.Contains(strings.Join(jobWarnings, "\n"), "restricted")):
					t.Errorf("Job %s under warn=restricted: warnings %q", j.Name, jobWarnings)
				}
			}
		})
	}
}
