package hubtest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/acctest"
)

// APIServer submits objects to the test bed's API server, as admin.
type APIServer struct {
	t      testing.TB
	Dyn    dynamic.Interface
	mapper meta.RESTMapper
}

// ErrNotServed is returned for an object of a kind the API server does not serve.
var ErrNotServed = errors.New("kind not served by the API server")

// TestAPIServer is the test bed's API server with a RESTMapper from its
// discovery. It skips the test without TF_ACC (acctest.Cluster).
func TestAPIServer(t testing.TB) *APIServer {
	t.Helper()
	c := acctest.Cluster(t)
	rc := c.RESTConfig(c.AdminToken)
	// KubeSpawner still writes the beta storage-class annotation on claims;
	// the API server's deprecation warning is not a rejection.
	rc.WarningHandler = rest.NoWarnings{}
	dc, err := discovery.NewDiscoveryClientForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	groups, err := restmapper.GetAPIGroupResources(dc)
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	return &APIServer{t: t, Dyn: dyn, mapper: restmapper.NewDiscoveryRESTMapper(groups)}
}

// Namespace creates a fresh namespace, deleted after the test.
func (s *APIServer) Namespace() string {
	s.t.Helper()
	return acctest.Namespace(s.t)
}

// Create creates obj in namespace ns (namespaced kinds; the object's own
// namespace is replaced) with strict field validation, so that an unknown
// or duplicate field is an error too.
func (s *APIServer) Create(ns string, obj map[string]any) error {
	return s.create(ns, obj, metav1.CreateOptions{FieldValidation: metav1.FieldValidationStrict})
}

// create submits obj in namespace ns as Create says, with opts.
func (s *APIServer) create(ns string, obj map[string]any, opts metav1.CreateOptions) error {
	u, r, err := s.resource(ns, obj)
	if err != nil {
		return err
	}
	_, err = r.Create(context.Background(), u, opts)
	return err
}

// resource is obj as an object to submit and the API resource it goes to:
// in namespace ns for namespaced kinds (the object's own is replaced).
func (s *APIServer) resource(ns string, obj map[string]any) (*unstructured.Unstructured, dynamic.ResourceInterface, error) {
	u := &unstructured.Unstructured{Object: deepCopy(obj)}
	gvk := u.GroupVersionKind()
	if gvk.Kind == "" || gvk.Version == "" {
		return nil, nil, fmt.Errorf("no apiVersion or kind: %v", obj)
	}
	m, err := s.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if meta.IsNoMatchError(err) {
		return nil, nil, fmt.Errorf("%s: %w", gvk, ErrNotServed)
	}
	if err != nil {
		return nil, nil, err
	}
	var r dynamic.ResourceInterface = s.Dyn.Resource(m.Resource)
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		u.SetNamespace(ns)
		r = s.Dyn.Resource(m.Resource).Namespace(ns)
	}
	return u, r, nil
}

// DryRun submits obj as Create does with a server-side dry run (DryRun
// "All"): admission and validation run in full, nothing is stored.
func (s *APIServer) DryRun(ns string, obj map[string]any) error {
	return s.create(ns, obj, metav1.CreateOptions{FieldValidation: metav1.FieldValidationStrict, DryRun: []string{metav1.DryRunAll}})
}

// DryRunApply submits obj as a server-side apply in namespace ns
// (namespaced kinds; the object's own namespace is replaced) with a
// server-side dry run and strict field validation: an object that exists
// (such as a cluster-scoped one a release installed) is checked as its
// update, any other as its creation.
func (s *APIServer) DryRunApply(ns string, obj map[string]any) error {
	u, r, err := s.resource(ns, obj)
	if err != nil {
		return err
	}
	body, err := u.MarshalJSON()
	if err != nil {
		return err
	}
	force := true
	_, err = r.Patch(context.Background(), u.GetName(), types.ApplyPatchType, body, metav1.PatchOptions{
		FieldManager: "hubtest", Force: &force, DryRun: []string{metav1.DryRunAll}, FieldValidation: metav1.FieldValidationStrict,
	})
	return err
}

// DryRunRendered submits every object a chart rendered (DryRunApply) in a
// fresh namespace and fails the test for each one the API server rejects
// or does not serve. It returns how many it accepted.
func (s *APIServer) DryRunRendered(t testing.TB, rendered map[string]map[string]any) int {
	t.Helper()
	ns := s.Namespace()
	accepted := 0
	for _, key := range SortedKeys(rendered) {
		err := s.DryRunApply(ns, rendered[key])
		switch {
		case errors.Is(err, ErrNotServed):
			t.Errorf("the chart renders %s, a kind the API server does not serve", key)
		case err != nil:
			t.Errorf("the API server rejects %s: %v", key, err)
		default:
			accepted++
		}
	}
	if len(rendered) == 0 {
		t.Error("nothing rendered to submit")
	}
	return accepted
}

// DryRunSpawns submits each claim and pod KubeSpawner rendered to the API
// server with a server-side dry run, in a fresh namespace: admission and
// validation of the object itself. The claims, config maps and secrets a
// pod refers to need not exist for that; a service account it names is
// created first, as a cluster's ServiceAccount admission looks it up (the
// test bed runs without that plugin).
func DryRunSpawns(t testing.TB, s *APIServer, got map[string]HubSpawn) {
	t.Helper()
	ns := s.Namespace()
	accounts := map[string]bool{}
	for _, id := range SortedKeys(got) {
		sp := got[id]
		if sa := Str(Dig(sp.Pod, "spec.serviceAccountName")); sa != "" && !accounts[sa] {
			accounts[sa] = true
			if err := s.Create(ns, map[string]any{"apiVersion": "v1", "kind": "ServiceAccount", "metadata": map[string]any{"name": sa}}); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.DryRun(ns, WithKind(sp.PVC, "PersistentVolumeClaim")); err != nil {
			t.Errorf("%s: the API server rejects the claim: %v", id, err)
		}
		if err := s.DryRun(ns, WithKind(sp.Pod, "Pod")); err != nil {
			t.Errorf("%s: the API server rejects the pod: %v", id, err)
		}
	}
	if len(got) == 0 {
		t.Error("nothing to submit")
	}
}

// WithKind gives a manifest KubeSpawner renders (without apiVersion and
// kind) its type.
func WithKind(m map[string]any, kind string) map[string]any {
	out := deepCopy(m)
	out["apiVersion"], out["kind"] = "v1", kind
	return out
}

// PodFacts are what assertions read from a pod manifest.
type PodFacts struct {
	Volumes  map[string]map[string]any
	Mounts   map[string]string // mountPath -> volume name, main container
	Inits    []string
	Labels   map[string]string
	Affinity []map[string]any // required pod affinity terms
}

// FactsOf reads a pod manifest, failing the test on volumes or mounts the
// API server would reject.
func FactsOf(t testing.TB, pod map[string]any) PodFacts {
	t.Helper()
	f := PodFacts{Volumes: map[string]map[string]any{}, Mounts: map[string]string{}, Labels: map[string]string{}}
	spec, _ := pod["spec"].(map[string]any)
	for _, v := range List(spec["volumes"]) {
		name := Str(v["name"])
		if _, dup := f.Volumes[name]; dup {
			t.Errorf("volume %q twice: the API server rejects the pod", name)
		}
		f.Volumes[name] = v
	}
	containers := List(spec["containers"])
	for i, c := range append(slices.Clone(containers), List(spec["initContainers"])...) {
		seen := map[string]bool{}
		for _, m := range List(c["volumeMounts"]) {
			if _, ok := f.Volumes[Str(m["name"])]; !ok {
				t.Errorf("container %s mounts volume %q, which the pod lacks: the API server rejects the pod", Str(c["name"]), Str(m["name"]))
			}
			if seen[Str(m["mountPath"])] {
				t.Errorf("container %s mounts %s twice: the API server rejects the pod", Str(c["name"]), Str(m["mountPath"]))
			}
			seen[Str(m["mountPath"])] = true
			if i == 0 {
				f.Mounts[Str(m["mountPath"])] = Str(m["name"])
			}
		}
		if i >= len(containers) {
			f.Inits = append(f.Inits, Str(c["name"]))
		}
	}
	meta, _ := pod["metadata"].(map[string]any)
	labels, _ := meta["labels"].(map[string]any)
	for k, v := range labels {
		f.Labels[k] = Str(v)
	}
	f.Affinity = List(Dig(spec, "affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution"))
	return f
}

// ColocationTerms are the required pod affinity terms selecting on label.
func (f PodFacts) ColocationTerms(label string) []string {
	var out []string
	for _, term := range f.Affinity {
		for _, e := range List(Dig(term, "labelSelector.matchExpressions")) {
			if Str(e["key"]) == label {
				out = append(out, jsonText(e["values"]))
			}
		}
		if labels, ok := Dig(term, "labelSelector.matchLabels").(map[string]any); ok {
			if v, ok := labels[label]; ok {
				out = append(out, jsonText(v))
			}
		}
	}
	return out
}
