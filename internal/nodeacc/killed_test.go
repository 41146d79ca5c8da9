package nodeacc

import (
	"context"
	"fmt"
	"maps"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
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
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/kube"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/migration"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/provider"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/testcluster"
)

// An apply killed after each step of a copy, with the user's server
// starting and stopping in between, converges without losing a file. For
// each operation of the copy, on the real node and through OpenTofu:
//
//   - a pod writes the user's files into the RWO home;
//   - an apply stops right after that operation;
//   - the user's server starts on the user's current home (the hub follows
//     the copy record: the old home until the switch, the new one after),
//     writes a file there and runs through the next apply: the plan leaves
//     the user on the old home (legacy_users) and nothing is copied or
//     switched;
//   - it stops; the next apply copies, and the server starts again on the
//     old home while the copy runs (or once it ran) and writes another file:
//     the apply refuses to switch and names the server;
//   - it stops, and the next apply converges (an empty plan after);
//   - a pod reading the new home finds every file written, byte for byte.
//
// Stopped after the switch, the servers run on the new home and stop
// nothing. The cases run at the same time, each in its own namespace with
// its own user.
func TestAccHomeStorage_killedApplyConverges(t *testing.T) {
	cs := acctest.Cluster(t).Admin()
	t.Parallel()
	start := time.Now()
	t.Cleanup(func() { t.Logf("all cases took %s", time.Since(start).Round(time.Second)) })
	users := map[migration.Op]string{
		migration.OpCreateTarget: "ada", migration.OpStartCopy: "bea", migration.OpWaitCopy: "cyd",
		migration.OpVerify: "dan", migration.OpSwitch: "eve",
	}
	// All at once: they wait on pods and OpenTofu most of the time, more
	// than -parallel (the number of cores) would let run.
	var wg sync.WaitGroup
	for _, stop := range []migration.Op{migration.OpCreateTarget, migration.OpStartCopy, migration.OpWaitCopy, migration.OpVerify, migration.OpSwitch} {
		wg.Go(func() {
			t.Run(string(stop), func(t *testing.T) { killedApply(t, cs, stop, users[stop]) })
		})
	}
	wg.Wait()
}

func killedApply(t *testing.T, cs kubernetes.Interface, stop migration.Op, user string) {
	began := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	ns := acctest.Namespace(t)
	class := testcluster.HostPathClass
	source, target, server := "claim-"+user, "home-"+user, "server-"+user
	if err := testcluster.Seed(ctx, cs, ns, testcluster.SeedClaim{Name: source, Username: user, StorageClass: &class, Size: "1Gi"}); err != nil {
		t.Fatal(err)
	}
	if err := testcluster.WaitClaimPhase(ctx, cs, ns, source, corev1.ClaimBound); err != nil {
		t.Fatal(err)
	}
	want := maps.Clone(aliceFiles)
	if _, err := testcluster.RunPod(ctx, cs, testcluster.ClaimPod(ns, "before-"+user, source, testcluster.WriteFilesScript("/home", want))); err != nil {
		t.Fatal(err)
	}
	src, err := cs.CoreV1().PersistentVolumeClaims(ns).Get(ctx, source, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	jobs := recordJobs(t, cs, ns)

	var stopped atomic.Bool
	factories := func(hook func(string, migration.Op) error) map[string]func() (tfprotov6.ProviderServer, error) {
		return map[string]func() (tfprotov6.ProviderServer, error){
			"jupyter": providerserver.NewProtocol6WithError(provider.NewWithOptions("test", provider.Options{
				Kube: kube.Options{CopyTimeout: 3 * time.Minute}, AfterStep: hook})()),
		}
	}
	stopping := factories(func(_ string, op migration.Op) error {
		t.Logf("the first apply did %s", op)
		if op == stop && stopped.CompareAndSwap(false, true) {
			return fmt.Errorf("apply stopped after step %s", op)
		}
		return nil
	})
	plain := factories(nil)
	cfg := acctest.AdminConfig(t, fmt.Sprintf(`
resource "jupyter_home_storage" "homes" {
  namespace          = %q
  storage_class_name = %q
  capacity           = "1Gi"
  access_mode        = "ReadWriteMany"
  users              = jsonencode({ %q = {} })
  on_mode_change     = "migrate"
  migration = {
    copy_image           = %q
    target_name_template = "home-{username}"
  }
}
`, ns, class, user, testcluster.ToolsImage))

	// The user's server writes a file into the home the copy record gives
	// the user now, and keeps running.
	var mu sync.Mutex // want: the hook below runs in the provider's goroutines
	startServer := func(when string) error {
		if !stopped.Load() {
			return fmt.Errorf("the apply never reached step %s", stop)
		}
		home, err := currentHome(ctx, cs, ns, source)
		if err != nil {
			return err
		}
		file := map[string]string{"server/" + when + ".txt": "written by the server " + when + ", after the apply stopped at " + string(stop) + "\n"}
		if err := testcluster.StartPod(ctx, cs, testcluster.ServerPod(ns, server, home, testcluster.WriteFilesScript("/home", file))); err != nil {
			return err
		}
		mu.Lock()
		maps.Copy(want, file)
		mu.Unlock()
		t.Logf("the server started %s runs on %s", when, home)
		return nil
	}
	stopServer := func() {
		if err := testcluster.DeletePod(ctx, cs, ns, server); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { _ = testcluster.DeletePod(context.Background(), cs, ns, server) })
	switched := stop == migration.OpSwitch

	// A server that runs at the plan: the user is left on the old home
	// (legacy_users; the plan says why), nothing is copied or switched, the
	// server keeps running. After the switch it runs on the new home and stops nothing.
	planned := resource.TestStep{
		PreConfig:                func() { must(t, startServer("before-the-plan")) },
		ProtoV6ProviderFactories: plain, Config: cfg,
		Check: resource.ComposeAggregateTestCheckFunc(
			checkLegacyUsers(map[string]string{user: source}),
			resource.TestMatchResourceAttr(homesAddr, "migration_plan", regexp.MustCompile(fmt.Sprintf(
				`"reason":"the copy to %s an earlier apply started \(step [a-z-]+\) waits: a server is running"`, target))),
			checkClaim(user, "name", source),
			stillOn(ctx, cs, ns, source, source, server),
		),
	}
	if switched {
		planned.Check = resource.ComposeAggregateTestCheckFunc(
			checkLegacyUsers(map[string]string{}),
			checkClaim(user, "name", target),
			stillOn(ctx, cs, ns, source, target, server),
		)
	}
	// A server that starts while the copy runs (right after this apply
	// started the copy Job, or found one running): the apply refuses to
	// switch and names it.
	var started atomic.Bool
	during := factories(func(_ string, op migration.Op) error {
		t.Logf("the apply did %s", op)
		if (op == migration.OpStartCopy || op == migration.OpWaitCopy) && started.CompareAndSwap(false, true) {
			if err := startServer("during-the-copy"); err != nil {
				t.Errorf("starting the server during the apply: %v", err)
			}
		}
		return nil
	})
	applied := resource.TestStep{
		PreConfig:                stopServer,
		ProtoV6ProviderFactories: during, Config: cfg,
		ExpectError: wrapped(fmt.Sprintf(`1 of 1 home migrations did not finish.*not switched: pod\(s\) %s use the old home %s`, server, source)),
	}
	if switched {
		// Nothing is left to do: the server on the new home runs on.
		applied.PreConfig = func() { stopServer(); must(t, startServer("after-the-switch")) }
		applied.ProtoV6ProviderFactories, applied.ExpectError = plain, nil
		applied.Check = resource.ComposeAggregateTestCheckFunc(checkClaim(user, "name", target), stillOn(ctx, cs, ns, source, target, server))
	}
	resource.Test(t, resource.TestCase{
		Steps: []resource.TestStep{
			{ProtoV6ProviderFactories: stopping, Config: cfg,
				ExpectError: wrapped(fmt.Sprintf(`1 of 1 home migrations did not finish.*apply stopped after step %s`, stop))},
			planned,
			applied,
			{
				PreConfig: func() {
					if !switched && !started.Load() {
						t.Fatal("the apply before never started the copy")
					}
					stopServer()
				},
				ProtoV6ProviderFactories: plain, Config: cfg,
				Check: resource.ComposeAggregateTestCheckFunc(
					checkLegacyUsers(map[string]string{}),
					checkClaim(user, "name", target),
					// The source unchanged but for its record, the target the
					// user's, the Job gone, every copy Job as documented.
					copiedTo(ctx, cs, ns, class, "1Gi", user, string(src.UID), nil),
					func(*terraform.State) error {
						if n, err := jobs.check("home-copy"); err != nil || n == 0 {
							return fmt.Errorf("%d copy Jobs ran: %v", n, err)
						}
						return nil
					},
					func(*terraform.State) error {
						if h, err := currentHome(ctx, cs, ns, source); err != nil || h != target {
							return fmt.Errorf("the record gives %s the home %s (%v), want %s", user, h, err, target)
						}
						mu.Lock()
						defer mu.Unlock()
						if len(want) != len(aliceFiles)+2 {
							return fmt.Errorf("the servers wrote %d files, want 2", len(want)-len(aliceFiles))
						}
						return holds(ctx, cs, ns, target, want)
					},
				),
			},
			{ProtoV6ProviderFactories: plain, Config: cfg, PlanOnly: true},
		},
	})
	t.Logf("stopped after %s: converged in %s", stop, time.Since(began).Round(time.Second))
}

// stillOn checks that the copy record gives the user of source the home
// want, and that the server pod runs.
func stillOn(ctx context.Context, cs kubernetes.Interface, ns, source, want, server string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		if h, err := currentHome(ctx, cs, ns, source); err != nil || h != want {
			return fmt.Errorf("the record gives the home %s (%v), want %s", h, err, want)
		}
		p, err := cs.CoreV1().Pods(ns).Get(ctx, server, metav1.GetOptions{})
		if err != nil || p.Status.Phase != corev1.PodRunning || p.DeletionTimestamp != nil {
			return fmt.Errorf("the server %s does not run: %v", server, err)
		}
		return nil
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// currentHome is the claim the hub mounts for the user of source: the
// target once the copy record says switched, the source until then.
func currentHome(ctx context.Context, cs kubernetes.Interface, ns, source string) (string, error) {
	src, err := cs.CoreV1().PersistentVolumeClaims(ns).Get(ctx, source, metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	s, ok := src.Annotations[migration.CopyAnnotation]
	if !ok {
		return source, nil
	}
	rec, err := migration.DecodeCopyRecord(s)
	if err != nil {
		return "", err
	}
	if rec.Step == migration.StepSwitched {
		return rec.Target, nil
	}
	return source, nil
}

// holds checks through a pod that claim holds exactly files.
func holds(ctx context.Context, cs kubernetes.Interface, ns, claim string, files map[string]string) error {
	msg, err := testcluster.RunPod(ctx, cs, testcluster.ClaimPod(ns, "reader-"+claim, claim, testcluster.ReadFilesScript("/home")))
	if err != nil {
		return err
	}
	got, err := testcluster.ParseFiles(msg)
	if err != nil {
		return err
	}
	if !maps.Equal(got, files) {
		return fmt.Errorf("%s holds %q, want %q", claim, got, files)
	}
	return nil
}

// wrapped is pattern with each space matching any run of white space:
// OpenTofu wraps long lines of an error.
func wrapped(pattern string) *regexp.Regexp {
	return regexp.MustCompile("(?s)" + strings.ReplaceAll(pattern, " ", `\s+`))
}
