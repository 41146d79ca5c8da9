package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/claims"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/kube"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/kube/clientset"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/kubespawner"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/testcluster"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/tofurun"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/userset"
)

type row struct {
	N                                int
	PlanNoop, PlanFlip, Apply, Bare  time.Duration
	PlanListed                       time.Duration // no-change plan with the N users listed in users
	PlanFile                         time.Duration // the same, users = file("users.json")
	PlanList                         time.Duration // the same, var.users typed list(string) instead of set(string)
	MemList                          int64         // KiB, provider peak in the plan with the list(string) variable
	ReadData                         time.Duration // the provider's ReadDataSource of jupyter_home_claims, median of traced runs
	PlanData                         time.Duration // plan of a configuration that only reads the claims with jupyter_home_claims
	MemListed, MemFile               int64         // KiB, provider peak in the plans with the users listed
	StateBare, StateListed           int64         // bytes of terraform.tfstate, without and with the users listed
	Applied                          bool          // the apply of N new users was timed (N <= -apply-max)
	BreakdownData                    breakdown     // of one traced plan of the data source
	BarePB                           time.Duration // bare, in protobuf (the provider's content type)
	BareMeta                         time.Duration // bare in protobuf, the claims with KubeSpawner's labels and annotations
	List, ListPB                     time.Duration // one paginated List of the N claims with client-go: JSON, protobuf
	ListCold                         time.Duration // the same List (JSON) as the first request of a new process (-list-once)
	ReqPlan, ReqApply                int
	MemPlan, MemApply                int64         // KiB
	Breakdown, BreakdownListed       breakdown     // of one traced no-change plan, without and with users listed
	BreakdownApply                   breakdown     // of one traced apply of N new users
	ProfProvider, ProfTofu           string        // top of the CPU profiles of one no-change plan with the users listed
	StateStrings, StateStringsListed int           // bytes of the per-user strings in the state: claims; claims and users
	TofuStrings, TofuStringsListed   time.Duration // OpenTofu alone: a plan of those strings in a terraform_data, less one of empty strings
	TofuStringsFlip                  time.Duration // the same for the flip: the claims kept, the strings it changes shown changing
	FlipStrings                      int           // bytes of the strings the flip changes, as planned
	Hub                              hubSizes      // the Secrets Helm makes of the hub with the N users' configuration
}

// bench is the test bed the measurements run on, and how often each runs.
type bench struct {
	ws       *tofurun.Workspace
	cluster  *testcluster.Cluster
	cs       kubernetes.Interface // the cluster's admin
	work     string               // where the configurations are written
	auditLog string               // the API server's audit log: the provider's requests
	runs     int                  // runs per measurement (the median is reported)
}

// measure measures the plans over n seeded claims: a List with client-go,
// the no-change plan, the RWX flip, the same plans with the users listed,
// the data source's read, and the hub's configuration at n users.
func (b *bench) measure(ctx context.Context, n int) (row, error) {
	r := row{N: n}
	ns := fmt.Sprintf("bench-plan-%d", n)
	if err := seedClaims(ctx, b.cs, ns, n); err != nil {
		return r, err
	}
	dir, err := b.planConfig(ctx, ns)
	if err != nil {
		return r, err
	}
	r.StateBare = fileSize(filepath.Join(dir, "terraform.tfstate"))
	claimsJSON, err := stateAttribute(dir, "claims")
	if err != nil {
		return r, err
	}
	r.StateStrings = len(claimsJSON)
	if r.TofuStrings, err = b.tofuStringCost(ctx, fmt.Sprintf("strings-%d", n), []string{claimsJSON}, nil); err != nil {
		return r, err
	}
	if err := b.measureLists(ctx, ns, &r); err != nil {
		return r, err
	}
	if err := b.measureUnlistedPlans(ctx, dir, claimsJSON, &r); err != nil {
		return r, err
	}
	if err := b.measureListedPlans(ctx, dir, ns, claimsJSON, &r); err != nil {
		return r, err
	}
	if err := b.measureDataSource(ctx, ns, &r); err != nil {
		return r, err
	}
	if r.Hub, err = b.measureHub(ctx, ns, n); err != nil {
		return r, fmt.Errorf("hub: %w", err)
	}
	return r, nil
}

// measureLists times one paginated List of the claims of ns: plain
// client-go (JSON) and client-go with the provider's protobuf content type,
// as the provider's identity (the API server audits their requests as it
// audits the provider's), and the same List by a new process.
func (b *bench) measureLists(ctx context.Context, ns string, r *row) error {
	cluster := b.cluster
	client := kubernetes.NewForConfigOrDie(cluster.RESTConfig(cluster.LimitedToken))
	pbConfig := cluster.RESTConfig(cluster.LimitedToken)
	kube.UseProtobuf(pbConfig)
	pbClient := kubernetes.NewForConfigOrDie(pbConfig)
	var lists, listsPB []time.Duration
	for i := 0; i < b.runs; i++ {
		for _, c := range []struct {
			client kubernetes.Interface
			out    *[]time.Duration
		}{{client, &lists}, {pbClient, &listsPB}} {
			start := time.Now()
			if err := listClaims(ctx, c.client, ns); err != nil {
				return err
			}
			*c.out = append(*c.out, time.Since(start))
		}
	}
	r.List, r.ListPB = median(lists), median(listsPB)
	var err error
	r.ListCold, err = b.coldList(ctx, ns)
	return err
}

// measureUnlistedPlans times the no-change plan over the claims, none of
// the users listed, traces one, and times the RWX flip under keep_existing
// with what OpenTofu alone spends on the strings it changes.
func (b *bench) measureUnlistedPlans(ctx context.Context, dir, claimsJSON string, r *row) error {
	var err error
	if r.PlanNoop, r.ReqPlan, r.MemPlan, err = timeTofu(ctx, b.ws, dir, b.auditLog, b.runs, "plan", "-no-color", "-lock=false", "-detailed-exitcode"); err != nil {
		return fmt.Errorf("no-change plan: %w", err)
	}
	if r.Breakdown, err = traceTofu(ctx, b.ws, dir, "plan", "-no-color", "-lock=false"); err != nil {
		return fmt.Errorf("traced plan: %w", err)
	}
	if r.PlanFlip, _, _, err = timeTofu(ctx, b.ws, dir, b.auditLog, b.runs, "plan", "-no-color", "-lock=false",
		"-var", "access_mode=ReadWriteMany", "-var", "on_mode_change=keep_existing"); err != nil {
		return fmt.Errorf("flip plan: %w", err)
	}
	// What OpenTofu alone spends on the strings the flip changes (every
	// user becomes legacy: legacy_users lists them all, and the plan shows
	// each), beside the claims it keeps.
	before, after, err := plannedStrings(ctx, b.ws, dir, "-var", "access_mode=ReadWriteMany", "-var", "on_mode_change=keep_existing")
	if err != nil {
		return fmt.Errorf("flip plan's changes: %w", err)
	}
	for _, v := range after {
		r.FlipStrings += len(v)
	}
	r.TofuStringsFlip, err = b.tofuStringCost(ctx, fmt.Sprintf("strings-flip-%d", r.N),
		append([]string{claimsJSON}, before...), append([]string{claimsJSON}, after...))
	return err
}

// measureListedPlans lists the same claims' users in users (Terraform
// manages them: applied once, nothing in the cluster changes), then times,
// traces and profiles the no-change plan, and times it with the users from
// a file and from a list(string) variable.
func (b *bench) measureListedPlans(ctx context.Context, dir, ns, claimsJSON string, r *row) error {
	listed, _ := json.Marshal(map[string][]string{"users": users("user", r.N)})
	if err := os.WriteFile(filepath.Join(dir, "listed.tfvars.json"), listed, 0o644); err != nil {
		return err
	}
	if err := b.ws.Run(ctx, dir, "apply", "-auto-approve", "-no-color", "-var-file=listed.tfvars.json"); err != nil {
		return fmt.Errorf("listing the users: %w", err)
	}
	r.StateListed = fileSize(filepath.Join(dir, "terraform.tfstate"))
	usersJSON, err := stateAttribute(dir, "users")
	if err != nil {
		return err
	}
	r.StateStringsListed = len(claimsJSON) + len(usersJSON)
	if r.TofuStringsListed, err = b.tofuStringCost(ctx, fmt.Sprintf("strings-listed-%d", r.N), []string{claimsJSON, usersJSON}, nil); err != nil {
		return err
	}
	if r.PlanListed, _, r.MemListed, err = timeTofu(ctx, b.ws, dir, b.auditLog, b.runs, "plan", "-no-color", "-lock=false", "-detailed-exitcode", "-var-file=listed.tfvars.json"); err != nil {
		return fmt.Errorf("plan with users listed: %w", err)
	}
	if r.BreakdownListed, err = traceTofu(ctx, b.ws, dir, "plan", "-no-color", "-lock=false", "-var-file=listed.tfvars.json"); err != nil {
		return fmt.Errorf("traced plan with users listed: %w", err)
	}
	if r.ProfProvider, r.ProfTofu, err = profilePlan(ctx, b.ws, dir, "plan", "-no-color", "-lock=false", "-var-file=listed.tfvars.json"); err != nil {
		return fmt.Errorf("profiled plan with users listed: %w", err)
	}
	// The same state, users read from a file written in jsonencode's form:
	// OpenTofu then evaluates no expression over the N names.
	if r.PlanFile, r.MemFile, err = b.planFromFile(ctx, dir, ns, r.N); err != nil {
		return err
	}
	// The same state, users from the same .tfvars.json file into a variable
	// typed list(string), the form most configurations write: OpenTofu
	// converts the file's tuple with go-cty's type unification.
	r.PlanList, r.MemList, err = b.planListVariable(ctx, dir, ns, r.N)
	return err
}

// measureDataSource times a plan that only reads the claims of ns with the
// jupyter_home_claims data source, and the provider's ReadDataSource in as
// many traced runs.
func (b *bench) measureDataSource(ctx context.Context, ns string, r *row) error {
	ddir, err := writeConfig(b.work, ns+"-data", fmt.Sprintf(`
data "jupyter_home_claims" "all" {
  namespace = %q
}
output "claims" {
  value = data.jupyter_home_claims.all.claim_count
}
`, ns))
	if err != nil {
		return err
	}
	if err := b.ws.Run(ctx, ddir, "init", "-no-color"); err != nil {
		return err
	}
	if r.PlanData, _, _, err = timeTofu(ctx, b.ws, ddir, b.auditLog, b.runs, "plan", "-no-color", "-lock=false"); err != nil {
		return fmt.Errorf("data source plan: %w", err)
	}
	var reads []time.Duration
	for i := 0; i < b.runs; i++ {
		if r.BreakdownData, err = traceTofu(ctx, b.ws, ddir, "plan", "-no-color", "-lock=false"); err != nil {
			return fmt.Errorf("traced data source plan: %w", err)
		}
		reads = append(reads, r.BreakdownData.RPCs["ReadDataSource"])
	}
	r.ReadData = median(reads)
	return nil
}

// bareLoop is one way of running the bare client-go loop.
type bareLoop struct {
	name     string
	protobuf bool // protobuf, as the provider speaks; else client-go's default JSON
	meta     bool // the claims carry KubeSpawner's labels and annotations; else only a name
}

// bareLoops are the bare loop three ways: JSON, protobuf, and protobuf with
// KubeSpawner's metadata on every claim.
var bareLoops = []bareLoop{{name: "bare"}, {name: "bare-pb", protobuf: true}, {name: "bare-meta", protobuf: true, meta: true}}

// measureApplies times the apply of r.N new users next to the bare
// client-go loops creating as many claims, and traces one more apply.
func (b *bench) measureApplies(ctx context.Context, r *row) error {
	n := r.N
	r.Applied = true
	var applies []time.Duration
	bares := make([][]time.Duration, len(bareLoops))
	for i := 0; i < b.runs; i++ {
		adir, err := b.applyConfig(ctx, fmt.Sprintf("bench-apply-%d-%d", n, i), n)
		if err != nil {
			return err
		}
		d, reqs, mem, err := timeTofu(ctx, b.ws, adir, b.auditLog, 1, "apply", "-auto-approve", "-no-color")
		if err != nil {
			return fmt.Errorf("apply: %w", err)
		}
		applies = append(applies, d)
		r.ReqApply, r.MemApply = reqs, max(r.MemApply, mem)
		for j, loop := range bareLoops {
			bns := fmt.Sprintf("bench-%s-%d-%d", loop.name, n, i)
			if err := namespace(ctx, b.cs, bns); err != nil {
				return err
			}
			d, err := bareCreate(ctx, b.cluster, bns, n, loop)
			if err != nil {
				return err
			}
			bares[j] = append(bares[j], d)
		}
	}
	r.Apply, r.Bare, r.BarePB, r.BareMeta = median(applies), median(bares[0]), median(bares[1]), median(bares[2])
	adir, err := b.applyConfig(ctx, fmt.Sprintf("bench-apply-%d-traced", n), n)
	if err != nil {
		return err
	}
	if r.BreakdownApply, err = traceTofu(ctx, b.ws, adir, "apply", "-auto-approve", "-no-color"); err != nil {
		return fmt.Errorf("traced apply: %w", err)
	}
	return nil
}

// listOnceCold is -list-once: one List of the claims of namespace ns as
// the first request of a new process (a new connection, nothing warm), as
// every provider process makes its first; it prints the List's duration.
// The client is the "one List" baseline's (plain client-go, JSON, the test
// bed's client limits), so the two differ only in being new.
func listOnceCold(ns string) error {
	cs, err := kubernetes.NewForConfig(testcluster.ClientConfig(os.Getenv("KUBE_HOST"), os.Getenv("KUBE_TOKEN"), []byte(os.Getenv("KUBE_CLUSTER_CA_CERT_DATA"))))
	if err != nil {
		return err
	}
	start := time.Now()
	if err := listClaims(context.Background(), cs, ns); err != nil {
		return err
	}
	fmt.Println(time.Since(start).Nanoseconds())
	return nil
}

// coldList is the median of runs Lists of ns by new processes (-list-once).
func (b *bench) coldList(ctx context.Context, ns string) (time.Duration, error) {
	exe, err := os.Executable()
	if err != nil {
		return 0, err
	}
	var ds []time.Duration
	for i := 0; i < b.runs; i++ {
		cmd := exec.CommandContext(ctx, exe, "-list-once", ns)
		cmd.Env = append(os.Environ(), connection(b.cluster)...)
		out, err := cmd.Output()
		if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
			return 0, fmt.Errorf("a List by a new process: %w: %s", err, bytes.TrimSpace(ee.Stderr))
		} else if err != nil {
			return 0, fmt.Errorf("a List by a new process: %w", err)
		}
		n, err := strconv.ParseInt(strings.TrimSpace(string(out)), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("a List by a new process printed %q", out)
		}
		ds = append(ds, time.Duration(n))
	}
	return median(ds), nil
}

// listClaims is the "one List" baseline: client-go's own paginated List of
// the claims, in pages of the provider's size, nothing converted or kept.
func listClaims(ctx context.Context, cs kubernetes.Interface, ns string) error {
	opts := metav1.ListOptions{LabelSelector: "component=singleuser-storage", Limit: kube.PageSize}
	for {
		l, err := cs.CoreV1().PersistentVolumeClaims(ns).List(ctx, opts)
		if err != nil {
			return err
		}
		if l.Continue == "" {
			return nil
		}
		opts.Continue = l.Continue
	}
}

// stateAttribute is a string attribute of the one resource in dir's state.
func stateAttribute(dir, name string) (string, error) {
	b, err := os.ReadFile(filepath.Join(dir, "terraform.tfstate"))
	if err != nil {
		return "", err
	}
	var st struct {
		Resources []struct {
			Instances []struct {
				Attributes map[string]any `json:"attributes"`
			} `json:"instances"`
		} `json:"resources"`
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return "", err
	}
	if len(st.Resources) != 1 || len(st.Resources[0].Instances) != 1 {
		return "", fmt.Errorf("%s: not one resource instance", dir)
	}
	v, ok := st.Resources[0].Instances[0].Attributes[name].(string)
	if !ok {
		return "", fmt.Errorf("%s: no string attribute %q", dir, name)
	}
	return v, nil
}

// tofuStringCost is what OpenTofu alone spends in a plan on strings held
// in state: a plan of a terraform_data (OpenTofu's built-in provider, no
// provider process) whose triggers_replace holds the strings (input would
// hold them twice: its output repeats it), less the same plan with empty
// strings. The strings are the per-user attributes of
// jupyter_home_storage's state, so this is the part of a plan's time that
// their size costs in OpenTofu itself. With planned (as many strings as
// prior), the state holds prior and the configuration planned: the plan
// shows (and renders) their change, as a plan of the resource does.
func (b *bench) tofuStringCost(ctx context.Context, name string, prior, planned []string) (time.Duration, error) {
	var costs [2]time.Duration
	for i, empty := range []bool{false, true} {
		body := ""
		for j := range prior {
			body += fmt.Sprintf("    s%d = file(\"${path.module}/s%d.json\")\n", j, j)
		}
		dir, err := writeConfig(b.work, fmt.Sprintf("%s-%v", name, empty), "resource \"terraform_data\" \"strings\" {\n  triggers_replace = {\n"+body+"  }\n}\n")
		if err != nil {
			return 0, err
		}
		write := func(strs []string) error {
			for j, v := range strs {
				if empty {
					v = ""
				}
				if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("s%d.json", j)), []byte(v), 0o644); err != nil {
					return err
				}
			}
			return nil
		}
		if err := write(prior); err != nil {
			return 0, err
		}
		for _, args := range [][]string{{"init", "-no-color"}, {"apply", "-auto-approve", "-no-color"}} {
			if err := b.ws.Run(ctx, dir, args...); err != nil {
				return 0, err
			}
		}
		args := []string{"plan", "-no-color", "-lock=false", "-detailed-exitcode"}
		if planned != nil {
			if err := write(planned); err != nil {
				return 0, err
			}
			if !empty {
				args = args[:3] // a plan with changes
			}
		}
		if costs[i], _, _, err = timeTofu(ctx, b.ws, dir, "", b.runs, args...); err != nil {
			return 0, fmt.Errorf("plan of %s: %w", name, err)
		}
	}
	return max(costs[0]-costs[1], 0), nil
}

// plannedStrings are the string attributes of the one resource that a plan
// with args changes, before and after (`tofu plan -out`, `tofu show -json`).
func plannedStrings(ctx context.Context, ws *tofurun.Workspace, dir string, args ...string) (before, after []string, err error) {
	out := filepath.Join(dir, "changes.plan")
	defer func() { _ = os.Remove(out) }()
	if err := ws.Run(ctx, dir, append([]string{"plan", "-no-color", "-lock=false", "-out=" + out}, args...)...); err != nil {
		return nil, nil, err
	}
	cmd := ws.Command(ctx, dir, "show", "-json", out)
	raw, err := cmd.Output()
	if err != nil {
		return nil, nil, fmt.Errorf("tofu show -json: %w", err)
	}
	var p struct {
		ResourceChanges []struct {
			Change struct {
				Before map[string]any `json:"before"`
				After  map[string]any `json:"after"`
			} `json:"change"`
		} `json:"resource_changes"`
	}
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, nil, err
	}
	if len(p.ResourceChanges) != 1 {
		return nil, nil, fmt.Errorf("%s: not one resource change", dir)
	}
	c := p.ResourceChanges[0].Change
	for _, k := range slices.Sorted(maps.Keys(c.After)) {
		b, okB := c.Before[k].(string)
		a, okA := c.After[k].(string)
		if okB && okA && a != b {
			before, after = append(before, b), append(after, a)
		}
	}
	return before, after, nil
}

// planFromFile times a no-change plan of the state in dir (the N users
// listed) with users = file("users.json"), in a directory of its own.
func (b *bench) planFromFile(ctx context.Context, dir, ns string, n int) (time.Duration, int64, error) {
	d, mem, err := b.planSameState(ctx, dir, ns+"-file", "\n"+listedResource(ns, `file("${path.module}/users.json")`),
		map[string][]byte{"users.json": []byte(userset.Encode(users("user", n)))})
	if err != nil {
		return 0, 0, fmt.Errorf("plan with users from a file: %w", err)
	}
	return d, mem, nil
}

// planListVariable times a no-change plan of the state in dir (the N users
// listed) with the users in a variable typed list(string), set from the
// same .tfvars.json file as the set(string) variable of planConfig, in a
// directory of its own.
func (b *bench) planListVariable(ctx context.Context, dir, ns string, n int) (time.Duration, int64, error) {
	listed, _ := json.Marshal(map[string][]string{"users": users("user", n)})
	d, mem, err := b.planSameState(ctx, dir, ns+"-list", `
variable "users" {
  type = list(string)
}
`+listedResource(ns, "jsonencode({ for u in var.users : u => {} })"), map[string][]byte{"listed.tfvars.json": listed}, "-var-file=listed.tfvars.json")
	if err != nil {
		return 0, 0, fmt.Errorf("plan with users in a list(string) variable: %w", err)
	}
	return d, mem, nil
}

// listedResource is the jupyter_home_storage of planConfig over namespace
// ns, its variables' defaults written out, with the users expression given.
func listedResource(ns, usersExpr string) string {
	return fmt.Sprintf(`resource "jupyter_home_storage" "homes" {
  namespace          = %q
  capacity           = "1Gi"
  storage_class_name = %q
  access_mode        = "ReadWriteOnce"
  on_mode_change     = "fail"
  users              = %s
}
`, ns, class, usersExpr)
}

// planSameState times a no-change plan of config, with files beside it,
// over a copy of the state in dir, in a directory of its own (name).
func (b *bench) planSameState(ctx context.Context, dir, name, config string, files map[string][]byte, args ...string) (time.Duration, int64, error) {
	pdir, err := writeConfig(b.work, name, config)
	if err != nil {
		return 0, 0, err
	}
	for f, b := range files {
		if err := os.WriteFile(filepath.Join(pdir, f), b, 0o644); err != nil {
			return 0, 0, err
		}
	}
	state, err := os.ReadFile(filepath.Join(dir, "terraform.tfstate"))
	if err != nil {
		return 0, 0, err
	}
	if err := os.WriteFile(filepath.Join(pdir, "terraform.tfstate"), state, 0o644); err != nil {
		return 0, 0, err
	}
	if err := b.ws.Run(ctx, pdir, "init", "-no-color"); err != nil {
		return 0, 0, err
	}
	// -detailed-exitcode: a plan that is not a no-change plan fails the bench.
	d, _, mem, err := timeTofu(ctx, b.ws, pdir, b.auditLog, b.runs, append([]string{"plan", "-no-color", "-lock=false", "-detailed-exitcode"}, args...)...)
	return d, mem, err
}

// bareCreate creates n claims with client-go, with the provider's
// concurrency and client rate limits and as its identity (so audited as it
// is): the floor for an apply. It speaks client-go's default JSON, or
// protobuf as the provider does. With meta the claims carry the labels and
// annotations KubeSpawner's claims have, as the provider's do (without,
// only a name).
func bareCreate(ctx context.Context, cluster *testcluster.Cluster, ns string, n int, loop bareLoop) (time.Duration, error) {
	rc := cluster.RESTConfig(cluster.LimitedToken)
	rc.QPS, rc.Burst = 500, 1000 // the provider's defaults
	if loop.protobuf {
		kube.UseProtobuf(rc)
	}
	cs := kubernetes.NewForConfigOrDie(rc)
	client := clientset.NewClient(cs)
	cls := class
	start := time.Now()
	errs := kube.ForEach(ctx, users("bare", n), func(ctx context.Context, u string) error {
		om := metav1.ObjectMeta{Name: "claim-" + u, Namespace: ns}
		if loop.meta {
			m := kubespawner.PVCMetadata{Username: u}
			l, err := kubespawner.PVCLabels(m)
			if err != nil {
				return err
			}
			l[kubespawner.LabelAppManagedBy] = claims.ManagedBy
			om.Labels, om.Annotations = l, kubespawner.PVCAnnotations(m)
		}
		_, err := client.CreateClaim(ctx, &corev1.PersistentVolumeClaim{
			ObjectMeta: om,
			Spec: corev1.PersistentVolumeClaimSpec{
				AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				StorageClassName: &cls,
				Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
			},
		})
		return err
	})
	if len(errs) > 0 {
		return 0, fmt.Errorf("bare create: %d errors", len(errs))
	}
	return time.Since(start), nil
}

func fileSize(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return fi.Size()
}
