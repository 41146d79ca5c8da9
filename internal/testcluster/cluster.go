package testcluster

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Identities known to the test API server.
const (
	AdminUser   = "jupyter-admin"
	LimitedUser = "jupyter-provider"
)

// BinDirEnv names the directory holding the test bed binaries; `make test`
// and `make demo` set it to the output of tools/testbed/build.sh.
const BinDirEnv = "TESTBED_BIN_DIR"

// Options configure Start.
type Options struct {
	// BinDir holds etcd, kube-apiserver, kube-controller-manager and tofu.
	// Empty means $TESTBED_BIN_DIR.
	BinDir string
	// ControllerManager also starts kube-controller-manager with the
	// PersistentVolume binder and protection controllers, so claims bind.
	ControllerManager bool
	// APIServerArgs are appended to kube-apiserver's flags.
	APIServerArgs []string
	// Node also starts a node where pods run (containerd, kubelet), the
	// scheduler, and with the controller manager the controllers that pods,
	// Jobs and dynamically provisioned volumes need (see node.go). Implies
	// ControllerManager.
	Node bool
}

// Cluster is a running test control plane.
type Cluster struct {
	Dir            string // scratch directory, removed by Stop
	Host           string // https://127.0.0.1:PORT
	CAPEM          []byte // CA that signed the serving certificate
	AdminToken     string
	LimitedToken   string
	ClientCertPEM  []byte // a client certificate for the admin identity
	ClientKeyPEM   []byte
	KubeconfigPath string // contexts "admin" (current) and "limited"

	opts     Options
	bin      string
	launcher *launcher
	etcdURL  string
	apiPort  int

	mu   sync.Mutex
	etcd *process
	api  *process
	kcm  *process
	node *node
}

// BinDir resolves the directory of test bed binaries and checks that every
// binary is there, with an error that says how to build them.
func BinDir(dir string) (string, error) {
	if dir == "" {
		dir = os.Getenv(BinDirEnv)
	}
	if dir == "" {
		// tools/testbed/build.sh's default place.
		if home, err := os.UserHomeDir(); err == nil {
			dir = filepath.Join(home, ".cache", "terraform-provider-jupyter", "testbed")
		}
	}
	if dir == "" {
		return "", fmt.Errorf("%s is not set: run `make test` (it builds the test bed with tools/testbed/build.sh) or export %s=$(tools/testbed/build.sh)", BinDirEnv, BinDirEnv)
	}
	for _, b := range []string{"etcd", "kube-apiserver"} {
		if _, err := os.Stat(filepath.Join(dir, b)); err != nil {
			return "", fmt.Errorf("test bed binary %s missing in %s: run tools/testbed/build.sh", b, dir)
		}
	}
	return dir, nil
}

// Start brings up etcd and kube-apiserver (and kube-controller-manager when
// asked) and waits until the API server is ready. On error nothing is left
// running.
func Start(ctx context.Context, opts Options) (_ *Cluster, err error) {
	bin, err := BinDir(opts.BinDir)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "jupyter-testcluster-")
	if err != nil {
		return nil, err
	}
	c := &Cluster{Dir: dir, opts: opts, bin: bin, launcher: newLauncher()}
	defer func() {
		if err != nil {
			c.Stop()
		}
	}()
	if err := c.writeCredentials(); err != nil {
		return nil, err
	}
	if err := c.startEtcd(ctx); err != nil {
		return nil, err
	}
	if err := c.StartAPIServer(ctx); err != nil {
		return nil, err
	}
	if opts.ControllerManager || opts.Node {
		if err := c.startControllerManager(); err != nil {
			return nil, err
		}
	}
	if opts.Node {
		if err := c.startNode(ctx); err != nil {
			return nil, err
		}
	}
	return c, nil
}

func randomToken() string {
	b := make([]byte, 24)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func (c *Cluster) path(name string) string { return filepath.Join(c.Dir, name) }

func (c *Cluster) writeCredentials() error {
	p, err := newPKI()
	if err != nil {
		return err
	}
	c.CAPEM = p.caPEM
	srvCert, srvKey, err := p.issueServer("kube-apiserver")
	if err != nil {
		return err
	}
	c.ClientCertPEM, c.ClientKeyPEM, err = p.issueClient(AdminUser, []string{"system:masters"})
	if err != nil {
		return err
	}
	c.AdminToken, c.LimitedToken = randomToken(), randomToken()
	kcmToken, schedulerToken, kubeletToken := randomToken(), randomToken(), randomToken()
	tokens := strings.Join([]string{
		fmt.Sprintf("%s,%s,1,\"system:masters\"", c.AdminToken, AdminUser),
		fmt.Sprintf("%s,%s,2", c.LimitedToken, LimitedUser),
		// The controllers run with the manager's own identity (no per-controller
		// service accounts here), so it needs more than its bootstrap role.
		fmt.Sprintf("%s,system:kube-controller-manager,3,\"system:masters\"", kcmToken),
		// The node's components, likewise (no Node authorizer here).
		fmt.Sprintf("%s,system:kube-scheduler,4,\"system:masters\"", schedulerToken),
		fmt.Sprintf("%s,system:node:%s,5,\"system:nodes,system:masters\"", kubeletToken, NodeName),
	}, "\n") + "\n"
	if err := writeFiles(c.Dir, map[string][]byte{
		"ca.crt": p.caPEM, "apiserver.crt": srvCert, "apiserver.key": srvKey, "tokens.csv": []byte(tokens),
	}); err != nil {
		return err
	}
	if _, err := serviceAccountKey(c.Dir); err != nil {
		return err
	}
	if c.apiPort, err = freePort(); err != nil {
		return err
	}
	c.Host = "https://127.0.0.1:" + strconv.Itoa(c.apiPort)
	c.KubeconfigPath = c.path("kubeconfig")
	if err := c.writeKubeconfig(c.KubeconfigPath, map[string]string{"admin": c.AdminToken, "limited": c.LimitedToken}, "admin"); err != nil {
		return err
	}
	if err := c.writeKubeconfig(c.path("scheduler.kubeconfig"), map[string]string{"scheduler": schedulerToken}, "scheduler"); err != nil {
		return err
	}
	if err := c.writeKubeconfig(c.path("kubelet.kubeconfig"), map[string]string{"kubelet": kubeletToken}, "kubelet"); err != nil {
		return err
	}
	return c.writeKubeconfig(c.path("kcm.kubeconfig"), map[string]string{"kcm": kcmToken}, "kcm")
}

func (c *Cluster) writeKubeconfig(path string, tokens map[string]string, current string) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["test"] = &clientcmdapi.Cluster{Server: c.Host, CertificateAuthorityData: c.CAPEM}
	for name, tok := range tokens {
		cfg.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: tok}
		cfg.Contexts[name] = &clientcmdapi.Context{Cluster: "test", AuthInfo: name, Namespace: "default"}
	}
	cfg.CurrentContext = current
	return clientcmd.WriteToFile(*cfg, path)
}

func (c *Cluster) startEtcd(ctx context.Context) error {
	clientPort, err := freePort()
	if err != nil {
		return err
	}
	peerPort, err := freePort()
	if err != nil {
		return err
	}
	c.etcdURL = "http://127.0.0.1:" + strconv.Itoa(clientPort)
	peer := "http://127.0.0.1:" + strconv.Itoa(peerPort)
	args := []string{
		"--name=test", "--data-dir=" + c.path("etcd"),
		"--listen-client-urls=" + c.etcdURL, "--advertise-client-urls=" + c.etcdURL,
		"--listen-peer-urls=" + peer, "--initial-advertise-peer-urls=" + peer,
		"--initial-cluster=test=" + peer,
		"--unsafe-no-fsync", "--log-level=warn",
	}
	c.etcd, err = c.launcher.run("etcd", filepath.Join(c.bin, "etcd"), args, c.path("etcd.log"))
	if err != nil {
		return err
	}
	return waitFor(ctx, 30*time.Second, c.etcd, c.path("etcd.log"), func() bool {
		conn, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(clientPort), time.Second)
		if err == nil {
			_ = conn.Close()
		}
		return err == nil
	})
}

// StartAPIServer starts kube-apiserver (again, after StopAPIServer) on the
// same port and etcd, and waits for /readyz.
func (c *Cluster) StartAPIServer(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.api != nil && c.api.running() {
		return errors.New("kube-apiserver is already running")
	}
	args := []string{
		"--etcd-servers=" + c.etcdURL,
		"--bind-address=127.0.0.1", "--advertise-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(c.apiPort),
		"--tls-cert-file=" + c.path("apiserver.crt"), "--tls-private-key-file=" + c.path("apiserver.key"),
		"--client-ca-file=" + c.path("ca.crt"),
		"--token-auth-file=" + c.path("tokens.csv"),
		"--authorization-mode=RBAC",
		"--service-account-issuer=https://kubernetes.default.svc",
		"--service-account-key-file=" + c.path("sa.key"),
		"--service-account-signing-key-file=" + c.path("sa.key"),
		"--service-cluster-ip-range=10.96.0.0/24",
		// A loopback advertise address is refused by the endpoint reconciler.
		"--endpoint-reconciler-type=none",
		// No kubelets or service account controller here: pods are API objects only.
		"--disable-admission-plugins=ServiceAccount",
		"--cert-dir=" + c.path("certs"),
	}
	args = append(args, c.opts.APIServerArgs...)
	p, err := c.launcher.run("kube-apiserver", filepath.Join(c.bin, "kube-apiserver"), args, c.path("kube-apiserver.log"))
	if err != nil {
		return err
	}
	c.api = p
	rc := c.RESTConfig(c.AdminToken)
	rc.Timeout = 2 * time.Second
	cs := kubernetes.NewForConfigOrDie(rc)
	return waitFor(ctx, 90*time.Second, p, c.path("kube-apiserver.log"), func() bool {
		body, err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		return err == nil && strings.TrimSpace(string(body)) == "ok"
	})
}

// StopAPIServer stops kube-apiserver and leaves etcd running, for fault tests.
func (c *Cluster) StopAPIServer() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.api.stop(10 * time.Second)
}

func (c *Cluster) startControllerManager() error {
	if _, err := os.Stat(filepath.Join(c.bin, "kube-controller-manager")); err != nil {
		return fmt.Errorf("kube-controller-manager missing in %s: run tools/testbed/build.sh", c.bin)
	}
	port, err := freePort()
	if err != nil {
		return err
	}
	controllers := []string{"persistentvolume-binder-controller", "persistentvolume-protection-controller", "persistentvolumeclaim-protection-controller"}
	var extra []string
	if c.opts.Node {
		controllers, extra = append(controllers, nodeControllers...), nodeControllerArgs
	}
	args := []string{
		"--kubeconfig=" + c.path("kcm.kubeconfig"),
		"--authentication-kubeconfig=" + c.path("kcm.kubeconfig"),
		"--authorization-kubeconfig=" + c.path("kcm.kubeconfig"),
		"--bind-address=127.0.0.1", "--secure-port=" + strconv.Itoa(port),
		"--cert-dir=" + c.path("kcm-certs"),
		"--controllers=" + strings.Join(controllers, ","),
		"--leader-elect=false",
	}
	args = append(args, extra...)
	c.kcm, err = c.launcher.run("kube-controller-manager", filepath.Join(c.bin, "kube-controller-manager"), args, c.path("kcm.log"))
	return err
}

// waitFor polls ready until it holds, the process dies or the time is up.
func waitFor(ctx context.Context, limit time.Duration, p *process, logPath string, ready func() bool) error {
	deadline := time.Now().Add(limit)
	for {
		if ready() {
			return nil
		}
		if !p.running() {
			return fmt.Errorf("%s exited during start-up (%v); last log lines:\n%s", p.name, p.err, tail(logPath, 4000))
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not ready after %s; last log lines:\n%s", p.name, limit, tail(logPath, 4000))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// RESTConfig returns a client configuration for the given bearer token that
// verifies the cluster's CA.
func (c *Cluster) RESTConfig(token string) *rest.Config {
	return ClientConfig(c.Host, token, c.CAPEM)
}

// ClientConfig is the client configuration of the test bed's clients: the
// API server at host, token, its CA, and the client limits they share.
func ClientConfig(host, token string, caPEM []byte) *rest.Config {
	return &rest.Config{
		Host:            host,
		BearerToken:     token,
		TLSClientConfig: rest.TLSClientConfig{CAData: caPEM},
		QPS:             200,
		Burst:           400,
	}
}

// Admin returns a clientset with the admin identity.
func (c *Cluster) Admin() kubernetes.Interface {
	return kubernetes.NewForConfigOrDie(c.RESTConfig(c.AdminToken))
}

// Stop ends every process it started and removes the scratch directory.
// It is safe to call more than once.
func (c *Cluster) Stop() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stopNode()
	c.kcm.stop(10 * time.Second)
	c.api.stop(15 * time.Second)
	c.etcd.stop(10 * time.Second)
	c.kcm, c.api, c.etcd = nil, nil, nil
	if c.launcher != nil {
		c.launcher.close()
		c.launcher = nil
	}
	if c.Dir != "" && os.Getenv("TESTCLUSTER_KEEP") == "" {
		_ = os.RemoveAll(c.Dir)
	}
}
