package testcluster

import (
	"context"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// The test bed is a real control plane: TLS verified against its own CA,
// RBAC enforced, the version it was built as, and nothing left behind.
func TestClusterLifecycle(t *testing.T) {
	if os.Getenv("TF_ACC") == "" {
		t.Skip("needs the test bed binaries: set TF_ACC=1 (make test does)")
	}
	ctx := context.Background()
	start := time.Now()
	c, err := Start(ctx, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("control plane ready in %s", time.Since(start).Round(time.Millisecond))
	stopped := false
	defer func() {
		if !stopped {
			c.Stop()
		}
	}()

	admin := c.Admin()
	v, err := admin.Discovery().ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	if v.GitVersion != "v1.37.2" {
		t.Errorf("server version = %q, want v1.37.2", v.GitVersion)
	}

	// The limited identity authenticates but has no permissions by itself.
	limited := kubernetes.NewForConfigOrDie(c.RESTConfig(c.LimitedToken))
	_, err = limited.CoreV1().PersistentVolumeClaims("default").List(ctx, metav1.ListOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), LimitedUser) {
		t.Errorf("limited identity: want forbidden naming %s, got %v", LimitedUser, err)
	}

	// Without the CA the server certificate is not trusted.
	rc := c.RESTConfig(c.AdminToken)
	rc.CAData = nil
	if _, err := kubernetes.NewForConfigOrDie(rc).Discovery().ServerVersion(); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("want a certificate error without the CA, got %v", err)
	}

	// The kubeconfig it writes works with clientcmd.
	kc, err := clientcmd.BuildConfigFromFlags("", c.KubeconfigPath)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kubernetes.NewForConfigOrDie(kc).CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{}); err != nil {
		t.Errorf("kubeconfig client: %v", err)
	}

	// Restarting the API server keeps the data (etcd keeps running).
	if _, err := admin.CoreV1().Namespaces().Create(ctx, nsObj("survives"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	c.StopAPIServer()
	if err := c.StartAPIServer(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.CoreV1().Namespaces().Get(ctx, "survives", metav1.GetOptions{}); err != nil {
		t.Errorf("after restart: %v", err)
	}

	pids := []int{c.etcd.cmd.Process.Pid, c.api.cmd.Process.Pid}
	dir := c.Dir
	c.Stop()
	stopped = true
	for _, pid := range pids {
		if err := syscall.Kill(pid, 0); err == nil {
			t.Errorf("process %d still running after Stop", pid)
		}
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("scratch directory %s left behind", dir)
	}
}

func nsObj(name string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
}
