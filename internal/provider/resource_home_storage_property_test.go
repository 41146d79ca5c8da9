package provider

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	kresource "k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/acctest"
)

var (
	propertySeed  = flag.Int64("property.seed", 0, "seed of TestAccHomeStorage_noDataLossProperty (0: from the clock)")
	propertySteps = flag.Int("property.steps", 25, "configuration changes TestAccHomeStorage_noDataLossProperty applies")
)

// propConfig is one generated configuration of jupyter_home_storage.
type propConfig struct {
	mode, class, capacity string
	users                 []string
	onModeChange          string
	allowDataLoss         bool
	deletionPolicy        string
}

func (c propConfig) hcl(ns string) string {
	q := make([]string, len(c.users))
	for i, u := range c.users {
		q[i] = fmt.Sprintf("%q", u)
	}
	return fmt.Sprintf(`
resource "jupyter_home_storage" "homes" {
  namespace          = %q
  access_mode        = %q
  storage_class_name = %q
  capacity           = %q
  users              = jsonencode({ for u in [%s] : u => {} })
  on_mode_change     = %q
  allow_data_loss    = %t
  deletion_policy    = %q
}`, ns, c.mode, c.class, c.capacity, strings.Join(q, ", "), c.onModeChange, c.allowDataLoss, c.deletionPolicy)
}

func (c propConfig) String() string {
	return fmt.Sprintf("mode=%s class=%s capacity=%s users=%v on_mode_change=%s allow_data_loss=%t deletion_policy=%s",
		c.mode, c.class, c.capacity, c.users, c.onModeChange, c.allowDataLoss, c.deletionPolicy)
}

// propClaim is the model of one live home claim.
type propClaim struct {
	mode, class string
	bytes       int64
	bound       bool
}

// propModel predicts what the provider does; it is written from the
// documented rules, not from the provider's code.
type propModel struct {
	deployed bool
	state    propConfig           // the applied configuration, when deployed
	live     map[string]propClaim // by user
	volumes  map[string]int       // by user: reserved volumes not used yet
}

type propPrediction struct {
	err        string // a fragment of the expected error, "" when the step succeeds
	class      string // planned change_class
	deleted    []string
	mayDelete  bool // the configuration allows data loss
	next       propModel
	boundAfter []string // users whose claims must become Bound
}

func quantityBytes(s string) int64 { q := kresource.MustParse(s); return q.Value() }

func restrictive(mode string) int {
	if mode == "ReadWriteMany" {
		return 0
	}
	return 1
}

func (m propModel) clone() propModel {
	n := m
	n.live = map[string]propClaim{}
	for k, v := range m.live {
		n.live[k] = v
	}
	n.volumes = map[string]int{}
	for k, v := range m.volumes {
		n.volumes[k] = v
	}
	n.state.users = slices.Clone(m.state.users)
	return n
}

// apply predicts an apply of cfg.
func (m propModel) apply(cfg propConfig) propPrediction {
	if cfg.deletionPolicy == "delete" && !cfg.allowDataLoss {
		return propPrediction{err: `deletion_policy = "delete" needs allow_data_loss = true`, next: m}
	}
	managed := map[string]bool{}
	for _, u := range cfg.users {
		managed[u] = true
	}
	prior := map[string]bool{}
	if m.deployed {
		for _, u := range m.state.users {
			prior[u] = true
		}
	}
	all := map[string]bool{}
	for u := range m.live {
		all[u] = true
	}
	for u := range managed {
		all[u] = true
	}
	for u := range prior {
		all[u] = true
	}
	want := quantityBytes(cfg.capacity)
	var errs []string
	actions := map[string]string{}
	for u := range all {
		c, ok := m.live[u]
		switch {
		case !ok && !managed[u]:
			continue
		case !ok:
			actions[u] = "create"
		case restrictive(c.mode) > restrictive(cfg.mode) || c.class != cfg.class:
			switch {
			case cfg.onModeChange == "keep_existing":
				actions[u] = "legacy"
			case cfg.onModeChange == "migrate" && (c.class != cfg.class || !c.bound):
				// A volume keeps its class, and only a bound claim has one.
				errs = append(errs, "Some homes cannot be migrated without data loss")
			case cfg.onModeChange == "migrate" && managed[u] && want < c.bytes:
				errs = append(errs, "Home claims cannot shrink")
			case cfg.onModeChange == "migrate":
				actions[u] = "migrate" // rebind: same volume, new mode (a managed home then grows)
			case cfg.onModeChange == "recreate" && !managed[u]:
				errs = append(errs, "recreate only touches users listed in users")
			case cfg.onModeChange == "recreate" && !cfg.allowDataLoss:
				errs = append(errs, "Recreating home claims deletes their data")
			case cfg.onModeChange == "recreate":
				actions[u] = "recreate"
			default:
				errs = append(errs, "Live home claims differ from the configuration")
			}
		case !managed[u]:
			actions[u] = "observe"
			if prior[u] {
				actions[u] = "release"
			}
		case want == c.bytes:
			actions[u] = "keep"
		case want < c.bytes:
			errs = append(errs, "Home claims cannot shrink")
		case !c.bound:
			errs = append(errs, "Only bound claims can grow")
		default:
			actions[u] = "resize"
		}
	}
	if len(errs) > 0 {
		sort.Strings(errs)
		return propPrediction{err: errs[0], next: m}
	}
	p := propPrediction{class: "none", next: m.clone(), mayDelete: cfg.onModeChange == "recreate" && cfg.allowDataLoss}
	for u, a := range actions {
		switch a {
		case "recreate":
			p.class = "destructive"
			p.deleted = append(p.deleted, u)
		case "create", "resize", "release", "migrate":
			if p.class == "none" {
				p.class = "safe"
			}
		case "keep", "legacy":
			if managed[u] && !prior[u] && p.class == "none" {
				p.class = "safe" // adopted
			}
		}
		switch a {
		case "create", "recreate":
			bound := p.next.volumes[u] > 0
			if bound {
				p.next.volumes[u]--
			}
			p.next.live[u] = propClaim{mode: cfg.mode, class: cfg.class, bytes: want, bound: bound}
			if bound {
				p.boundAfter = append(p.boundAfter, u)
			}
		case "resize":
			c := p.next.live[u]
			c.bytes = want
			p.next.live[u] = c
		case "migrate":
			c := p.next.live[u]
			c.mode = cfg.mode
			if managed[u] && want > c.bytes {
				c.bytes = want
			}
			p.next.live[u] = c
		}
	}
	if m.deployed && p.class == "none" && (m.state.mode != cfg.mode || m.state.class != cfg.class ||
		quantityBytes(m.state.capacity) != want || m.state.onModeChange != cfg.onModeChange) {
		p.class = "safe"
	}
	sort.Strings(p.deleted)
	p.next.deployed, p.next.state = true, cfg
	return p
}

// destroy predicts destroying the deployment.
func (m propModel) destroy() propPrediction {
	p := propPrediction{next: m.clone(), mayDelete: m.state.deletionPolicy == "delete" && m.state.allowDataLoss}
	if p.mayDelete {
		for _, u := range m.state.users {
			if _, ok := p.next.live[u]; ok {
				delete(p.next.live, u)
				p.deleted = append(p.deleted, u)
			}
		}
	}
	sort.Strings(p.deleted)
	p.next.deployed = false
	return p
}

// mutate returns cfg with one or two random changes.
func mutate(r *rand.Rand, cfg propConfig, pool []string) propConfig {
	cfg.users = slices.Clone(cfg.users)
	// Weighted towards the changes that matter to claims: mode, class,
	// capacity and users, and recreate with allow_data_loss now and then.
	for n := 1 + r.IntN(2); n > 0; n-- {
		switch []int{0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 5, 5, 6, 6, 7}[r.IntN(15)] {
		case 0:
			cfg.mode = map[string]string{"ReadWriteOnce": "ReadWriteMany", "ReadWriteMany": "ReadWriteOnce"}[cfg.mode]
		case 1:
			cfg.class = []string{"a", "b"}[r.IntN(2)]
		case 2:
			cfg.capacity = []string{"1Gi", "2Gi", "3Gi"}[r.IntN(3)]
		case 3:
			if u := pool[r.IntN(len(pool))]; !slices.Contains(cfg.users, u) {
				cfg.users = append(cfg.users, u)
			}
		case 4:
			if len(cfg.users) > 0 {
				i := r.IntN(len(cfg.users))
				cfg.users = append(cfg.users[:i], cfg.users[i+1:]...)
			}
		case 5:
			cfg.onModeChange = []string{"fail", "keep_existing", "recreate", "recreate", "migrate", "migrate"}[r.IntN(6)]
		case 6:
			cfg.allowDataLoss = !cfg.allowDataLoss
		case 7:
			cfg.deletionPolicy = map[string]string{"retain": "delete", "delete": "retain"}[cfg.deletionPolicy]
		}
	}
	return cfg
}

// changeClassRecorder records the change_class a plan's after-values carry.
type changeClassRecorder struct{ got *string }

func (c changeClassRecorder) CheckPlan(_ context.Context, req plancheck.CheckPlanRequest, resp *plancheck.CheckPlanResponse) {
	*c.got = "(no change)"
	for _, rc := range req.Plan.ResourceChanges {
		if rc.Address != hsAddr || rc.Change == nil {
			continue
		}
		if rc.Change.Actions.Delete() && !rc.Change.Actions.Create() {
			*c.got = "(destroy)"
			return
		}
		if rc.Change.Actions.NoOp() {
			// An empty plan keeps the change_class of the last apply; it changes nothing.
			*c.got = "none"
			return
		}
		after, _ := rc.Change.After.(map[string]any)
		if s, ok := after["change_class"].(string); ok {
			*c.got = s
		} else {
			*c.got = "(unknown)"
		}
	}
}

var _ plancheck.PlanCheck = changeClassRecorder{}

// Random sequences of configuration changes never delete or replace a home
// claim unless that step's configuration allowed data loss explicitly, and
// the plan says "destructive" exactly when a claim is deleted or replaced.
func TestAccHomeStorage_noDataLossProperty(t *testing.T) {
	c := acctest.Cluster(t)
	cs := c.Admin()
	ns := acctest.Namespace(t)
	seed := *propertySeed
	if seed == 0 {
		seed = time.Now().UnixNano()
	}
	t.Logf("property seed %d", seed)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("reproduce with: TF_ACC=1 TESTBED_BIN_DIR=$TESTBED_BIN_DIR go test ./internal/provider/ -run 'TestAccHomeStorage_noDataLossProperty$' -count=1 -v -property.seed=%d -property.steps=%d",
				seed, *propertySteps)
		}
	})
	r := rand.New(rand.NewPCG(uint64(seed), 0x6a75707974657273))

	// Two classes that allow expansion, and for every user two volumes
	// reserved for the user's claim (one per class; the PV binder binds a
	// claim to a volume reserved for it whatever the volume's class). A
	// claim binds while one of them is unused; a recreated claim finds its
	// old volume Released, so the third claim of a user stays Pending.
	pool := []string{"ada", "bo", "cy"}
	classes := map[string]string{"a": "prop-a-" + ns, "b": "prop-b-" + ns}
	for _, name := range classes {
		yes := true
		sc := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Provisioner: "driver.longhorn.io", AllowVolumeExpansion: &yes}
		if _, err := cs.StorageV1().StorageClasses().Create(context.Background(), sc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cs.StorageV1().StorageClasses().Delete(context.Background(), name, metav1.DeleteOptions{}) })
		for _, u := range pool {
			reserveVolume(t, cs, ns, "claim-"+u, name)
		}
	}

	model := propModel{live: map[string]propClaim{}, volumes: map[string]int{}}
	for _, u := range pool {
		model.volumes[u] = len(classes)
	}
	cfg := propConfig{mode: "ReadWriteOnce", class: "a", capacity: "1Gi", users: []string{"ada", "bo"},
		onModeChange: "fail", deletionPolicy: "retain"}
	render := func(p propConfig) string {
		p.class = classes[p.class]
		return acctest.AdminConfig(t, p.hcl(ns))
	}

	var snapshot map[string]claimIdentity // claims when the step started
	var planned string                    // change_class of the step's plan
	var steps []resource.TestStep
	later := map[int]func() error{} // checks of steps without a Check, run when the next starts
	// The last step is an apply that succeeds, so that every step is checked
	// before the harness's own final destroy.
	for i := 0; i < *propertySteps || i < *propertySteps+10 && later[i-1] != nil; i++ {
		destroy := model.deployed && i > 0 && i < *propertySteps && r.IntN(12) == 0
		var pred propPrediction
		if destroy {
			cfg = model.state // destroy as the state says
			pred = model.destroy()
		} else {
			// Mostly steps the provider accepts; a refused one now and then.
			base := cfg
			for try := 0; ; try++ {
				if i > 0 {
					cfg = mutate(r, base, pool)
				}
				pred = model.apply(cfg)
				if i == 0 || try == 8 || pred.err == "" && cfg.String() != base.String() ||
					pred.err != "" && i < *propertySteps && r.IntN(4) == 0 {
					break
				}
			}
		}
		desc := fmt.Sprintf("step %d: %s", i+1, cfg)
		if destroy {
			desc = fmt.Sprintf("step %d: destroy with %s", i+1, cfg)
		}
		t.Logf("%s: predicted error=%q class=%q deleted=%v", desc, pred.err, pred.class, pred.deleted)
		step := resource.TestStep{Config: render(cfg), Destroy: destroy}
		step.PreConfig = func() {
			var err error
			if snapshot, err = claimIdentities(cs, ns); err != nil {
				t.Fatal(err)
			}
			planned = ""
		}
		verify := func() error {
			now, err := claimIdentities(cs, ns)
			if err != nil {
				return err
			}
			// A home is lost when its claim is gone or replaced, unless the
			// new claim is bound to the volume the old one had (a migration).
			var gone []string
			for name, was := range snapshot {
				if is := now[name]; is.uid != was.uid && (was.volume == "" || is.volume != was.volume) {
					gone = append(gone, strings.TrimPrefix(name, "claim-"))
				}
			}
			sort.Strings(gone)
			if len(gone) > 0 && !pred.mayDelete {
				return fmt.Errorf("%s: claims of %v were deleted or replaced although the configuration did not allow data loss", desc, gone)
			}
			if !destroy && pred.err == "" && (planned == "destructive") != (len(gone) > 0) {
				return fmt.Errorf("%s: the plan said change_class = %q, and claims of %v were deleted or replaced", desc, planned, gone)
			}
			if fmt.Sprint(gone) != fmt.Sprint(pred.deleted) && len(gone)+len(pred.deleted) > 0 {
				return fmt.Errorf("%s: claims of %v were deleted or replaced, the model expected %v", desc, gone, pred.deleted)
			}
			return nil
		}
		switch {
		case pred.err != "":
			step.ExpectError = wrapRE(`(?s)` + regexpQuote(pred.err))
			later[i] = verify // nothing may have changed
		case destroy:
			later[i] = func() error {
				if err := verify(); err != nil {
					return err
				}
				return propCompare(cs, ns, classes, pred.next, desc)
			}
		default:
			step.ConfigPlanChecks = resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{changeClassRecorder{&planned}}}
			step.Check = func(*terraform.State) error {
				if err := verify(); err != nil {
					return err
				}
				if planned != pred.class {
					return fmt.Errorf("%s: change_class = %q, the model predicted %q", desc, planned, pred.class)
				}
				for _, u := range pred.boundAfter {
					if err := waitBound(cs, ns, "claim-"+u); err != nil {
						return fmt.Errorf("%s: %w%s", desc, err, volumesOf(cs, ns))
					}
				}
				return propCompare(cs, ns, classes, pred.next, desc)
			}
		}
		steps = append(steps, step)
		model = pred.next
	}
	var lastVerify func() error
	for i, v := range later {
		if i+1 == len(steps) {
			lastVerify = v
			continue
		}
		pre := steps[i+1].PreConfig
		steps[i+1].PreConfig = func() {
			if err := v(); err != nil {
				t.Fatal(err)
			}
			pre()
		}
	}
	final := model
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6ProviderFactories,
		Steps:                    steps,
		CheckDestroy: func(*terraform.State) error {
			if lastVerify != nil {
				if err := lastVerify(); err != nil {
					return err
				}
			}
			// The harness's own final destroy: claims go only with delete + allow_data_loss.
			if !final.deployed || t.Failed() {
				return nil
			}
			now, err := claimUIDsByName(cs, ns)
			if err != nil {
				return err
			}
			for u := range final.live {
				if now["claim-"+u] == "" && (final.state.deletionPolicy != "delete" || !final.state.allowDataLoss) {
					return fmt.Errorf("the final destroy (deletion_policy = %q, allow_data_loss = %t) deleted claim-%s",
						final.state.deletionPolicy, final.state.allowDataLoss, u)
				}
			}
			return nil
		},
	})
}

// claimIdentity is what identifies a home's data: the claim and its volume.
type claimIdentity struct{ uid, volume string }

func claimIdentities(cs kubernetes.Interface, ns string) (map[string]claimIdentity, error) {
	l, err := cs.CoreV1().PersistentVolumeClaims(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	out := make(map[string]claimIdentity, len(l.Items))
	for _, p := range l.Items {
		out[p.Name] = claimIdentity{string(p.UID), p.Spec.VolumeName}
	}
	return out, nil
}

func regexpQuote(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`\.+*?()|[]{}^$`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// propCompare checks that the cluster's claims are the ones the model predicts.
func propCompare(cs kubernetes.Interface, ns string, classes map[string]string, m propModel, desc string) error {
	l, err := cs.CoreV1().PersistentVolumeClaims(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		return err
	}
	if len(l.Items) != len(m.live) {
		return fmt.Errorf("%s: %d claims exist, the model has %d", desc, len(l.Items), len(m.live))
	}
	for _, p := range l.Items {
		u := strings.TrimPrefix(p.Name, "claim-")
		want, ok := m.live[u]
		q := p.Spec.Resources.Requests[corev1.ResourceStorage]
		switch {
		case !ok:
			return fmt.Errorf("%s: unexpected claim %s", desc, p.Name)
		case len(p.Spec.AccessModes) != 1 || string(p.Spec.AccessModes[0]) != want.mode:
			return fmt.Errorf("%s: %s has modes %v, the model %s", desc, p.Name, p.Spec.AccessModes, want.mode)
		case p.Spec.StorageClassName == nil || *p.Spec.StorageClassName != classes[want.class]:
			return fmt.Errorf("%s: %s has class %v, the model %s", desc, p.Name, p.Spec.StorageClassName, classes[want.class])
		case q.Value() != want.bytes:
			return fmt.Errorf("%s: %s requests %s, the model %d bytes", desc, p.Name, q.String(), want.bytes)
		}
	}
	return nil
}

// reserveVolume pre-creates a volume of the class reserved for a claim, in
// both access modes and larger than any capacity the test asks for.
func reserveVolume(t *testing.T, cs kubernetes.Interface, ns, claim, class string) {
	t.Helper()
	name := "pv-" + class + "-" + claim
	if len(name) > 63 {
		name = strings.TrimRight(name[:63], "-.")
	}
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: kresource.MustParse("100Gi")},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce, corev1.ReadWriteMany},
			StorageClassName:              class,
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			ClaimRef:                      &corev1.ObjectReference{Namespace: ns, Name: claim},
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{
				Driver: "driver.longhorn.io", VolumeHandle: name,
			}},
		},
	}
	if _, err := cs.CoreV1().PersistentVolumes().Create(context.Background(), pv, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.CoreV1().PersistentVolumes().Delete(context.Background(), name, metav1.DeleteOptions{}) })
}

// volumesOf describes the volumes reserved for ns, for failure messages.
func volumesOf(cs kubernetes.Interface, ns string) string {
	l, err := cs.CoreV1().PersistentVolumes().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		return ""
	}
	var b strings.Builder
	for _, pv := range l.Items {
		if pv.Spec.ClaimRef != nil && pv.Spec.ClaimRef.Namespace == ns {
			fmt.Fprintf(&b, "\n  %s: %s, claim %s (uid %q)", pv.Name, pv.Status.Phase, pv.Spec.ClaimRef.Name, pv.Spec.ClaimRef.UID)
		}
	}
	return b.String()
}
