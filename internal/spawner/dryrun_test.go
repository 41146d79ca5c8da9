package spawner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/acctest"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/testcluster"
)

// With TF_ACC set (make test), the test bed's API server runs for the
// whole package: what the chart and KubeSpawner render is submitted to it
// with a server-side dry run. Without TF_ACC the dry runs skip, as every
// acceptance test here does, and the rest of each test still runs.
//
// The API server allows privileged containers, as clusters that run
// zero-to-jupyterhub do (kubeadm's and the managed ones set
// --allow-privileged): the chart's block-cloud-metadata init container is
// privileged.
func TestMain(m *testing.M) {
	os.Exit(acctest.Run(m, testcluster.Options{APIServerArgs: []string{"--allow-privileged=true"}}))
}

// apiServer submits objects to the test bed's API server, as admin.
type apiServer struct {
	t      *testing.T
	dyn    dynamic.Interface
	mapper meta.RESTMapper
}

// errNotServed is returned for an object of a kind the API server does not serve.
var errNotServed = errors.New("kind not served by the API server")

// testAPIServer is the test bed's API server with a RESTMapper from its
// discovery. It skips the test without TF_ACC (acctest.Cluster).
func testAPIServer(t *testing.T) *apiServer {
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
	return &apiServer{t: t, dyn: dyn, mapper: restmapper.NewDiscoveryRESTMapper(groups)}
}

// namespace creates a fresh namespace, deleted after the test.
func (s *apiServer) namespace() string {
	s.t.Helper()
	return acctest.Namespace(s.t)
}

// create submits obj in namespace ns (namespaced kinds; the object's own
// namespace is replaced) with dryRun set to "All" or not at all, and strict
// field validation, so that an unknown or duplicate field is an error too.
func (s *apiServer) create(ns string, obj map[string]any, dryRun bool) error {
	u := &unstructured.Unstructured{Object: deepCopy(obj)}
	gvk := u.GroupVersionKind()
	if gvk.Kind == "" || gvk.Version == "" {
		return fmt.Errorf("no apiVersion or kind: %v", obj)
	}
	m, err := s.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if meta.IsNoMatchError(err) {
		return fmt.Errorf("%s: %w", gvk, errNotServed)
	}
	if err != nil {
		return err
	}
	opts := metav1.CreateOptions{FieldValidation: metav1.FieldValidationStrict}
	if dryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	var r dynamic.ResourceInterface = s.dyn.Resource(m.Resource)
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		u.SetNamespace(ns)
		r = s.dyn.Resource(m.Resource).Namespace(ns)
	}
	_, err = r.Create(context.Background(), u, opts)
	return err
}

// dryRun submits obj with a server-side dry run: admission and validation
// run in full, nothing is stored.
func (s *apiServer) dryRun(ns string, obj map[string]any) error { return s.create(ns, obj, true) }

// dryRunSpawns submits each claim and pod KubeSpawner rendered to the API
// server with a server-side dry run, in a fresh namespace: admission and
// validation of the object itself. The claims, config maps and secrets a
// pod refers to need not exist for that; a service account it names is
// created first, as a cluster's ServiceAccount admission looks it up (the
// test bed runs without that plugin).
func dryRunSpawns(t *testing.T, s *apiServer, got map[string]hubSpawn) {
	t.Helper()
	ns := s.namespace()
	accounts := map[string]bool{}
	for _, id := range sortedKeys(got) {
		sp := got[id]
		if sa := str(dig(sp.Pod, "spec.serviceAccountName")); sa != "" && !accounts[sa] {
			accounts[sa] = true
			if err := s.create(ns, map[string]any{"apiVersion": "v1", "kind": "ServiceAccount", "metadata": map[string]any{"name": sa}}, false); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.dryRun(ns, withKind(sp.PVC, "PersistentVolumeClaim")); err != nil {
			t.Errorf("%s: the API server rejects the claim: %v", id, err)
		}
		if err := s.dryRun(ns, withKind(sp.Pod, "Pod")); err != nil {
			t.Errorf("%s: the API server rejects the pod: %v", id, err)
		}
	}
	if len(got) == 0 {
		t.Error("nothing to submit")
	}
}

// withKind gives a manifest KubeSpawner renders (without apiVersion and
// kind) its type.
func withKind(m map[string]any, kind string) map[string]any {
	out := deepCopy(m)
	out["apiVersion"], out["kind"] = "v1", kind
	return out
}
