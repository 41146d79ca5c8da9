package kube

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/client-go/rest"
)

const kubeconfig = `apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: "https://127.0.0.1:6443"}
users:
- name: u
  user: {token: "t0"}
contexts:
- name: ctx
  context: {cluster: c, user: u}
current-context: ctx
`

func writeKubeconfig(t *testing.T) string {
	p := filepath.Join(t.TempDir(), "config")
	if err := os.WriteFile(p, []byte(kubeconfig), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestRESTConfig_errorsNameTheAttribute(t *testing.T) {
	t.Setenv("KUBERNETES_SERVICE_HOST", "") // not in a pod
	kc := writeKubeconfig(t)
	yes := true
	cases := []struct {
		name string
		cfg  ConnectionConfig
		attr string
		want string
	}{
		{"missing file", ConnectionConfig{ConfigPath: "/does/not/exist"}, "config_path", "Point config_path at an existing kubeconfig"},
		{"missing file in paths", ConnectionConfig{ConfigPaths: []string{kc, "/nope"}}, "config_paths", "cannot be read"},
		{"both path forms", ConnectionConfig{ConfigPath: kc, ConfigPaths: []string{kc}}, "config_path", "Set one of them"},
		{"unknown context", ConnectionConfig{ConfigPath: kc, ConfigContext: "other"}, "config_context", `context "other" is not in the kubeconfig`},
		{"host without credentials", ConnectionConfig{Host: "https://10.0.0.1:6443"}, "host", "without credentials"},
		{"bad host", ConnectionConfig{Host: "::::", Token: "x"}, "host", "not a valid API server address"},
		{"cert without key", ConnectionConfig{Host: "https://h", ClientCertificate: "pem"}, "client_key", "must be set together"},
		{"bad proxy", ConnectionConfig{Host: "https://h", Token: "x", ProxyURL: "proxy"}, "proxy_url", "not a valid proxy URL"},
		{"exec without command", ConnectionConfig{Host: "https://h", Exec: &ExecConfig{APIVersion: "v1"}}, "exec.command", "needs a command"},
		{"insecure with CA", ConnectionConfig{Host: "https://h", Token: "x", Insecure: &yes, ClusterCACertificate: "pem"}, "insecure", "both set"},
		{"nothing at all", ConnectionConfig{}, "host", "no cluster connection configured"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := RESTConfig(tc.cfg)
			var ce *ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("want a ConfigError, got %v", err)
			}
			if ce.Attribute != tc.attr {
				t.Errorf("attribute = %q, want %q (%v)", ce.Attribute, tc.attr, err)
			}
			if !strings.Contains(ce.Error(), tc.want) {
				t.Errorf("error %q does not contain %q", ce.Error(), tc.want)
			}
		})
	}
}

func TestRESTConfig_overridesAndEnv(t *testing.T) {
	kc := writeKubeconfig(t)
	rc, err := RESTConfig(ConnectionConfig{ConfigPath: kc, Token: "override", QPS: 7, Burst: 9})
	if err != nil {
		t.Fatal(err)
	}
	if rc.Host != "https://127.0.0.1:6443" || rc.BearerToken != "override" || rc.QPS != 7 || rc.Burst != 9 {
		t.Fatalf("unexpected config: host=%s token=%s qps=%v burst=%v", rc.Host, rc.BearerToken, rc.QPS, rc.Burst)
	}
	// Protobuf, with JSON accepted for anything served without it.
	if rc.ContentType != "application/vnd.kubernetes.protobuf" || rc.AcceptContentTypes != "application/vnd.kubernetes.protobuf,application/json" {
		t.Fatalf("content types: %q, accept %q", rc.ContentType, rc.AcceptContentTypes)
	}

	env := map[string]string{"KUBE_HOST": "https://10.1.2.3", "KUBE_TOKEN": "from-env", "KUBE_CONFIG_PATHS": kc + ":" + kc}
	cc := ConnectionConfig{Token: "explicit"}
	cc.ApplyEnv(func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	if cc.Host != "https://10.1.2.3" || cc.Token != "explicit" || len(cc.ConfigPaths) != 2 {
		t.Fatalf("env fallback wrong: %+v", cc)
	}
	rc, err = RESTConfig(cc)
	if err != nil {
		t.Fatal(err)
	}
	if rc.Host != "https://10.1.2.3" || rc.BearerToken != "explicit" {
		t.Fatalf("host/token override lost: %s %s", rc.Host, rc.BearerToken)
	}
}

func TestRESTConfig_exec(t *testing.T) {
	rc, err := RESTConfig(ConnectionConfig{Host: "https://h", Exec: &ExecConfig{
		APIVersion: "client.authentication.k8s.io/v1", Command: "aws", Args: []string{"eks", "get-token"},
		Env: map[string]string{"AWS_PROFILE": "p"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if rc.ExecProvider == nil || rc.ExecProvider.Command != "aws" || len(rc.ExecProvider.Env) != 1 {
		t.Fatalf("exec provider not set: %+v", rc.ExecProvider)
	}
}

// The three group clients share one rate limiter, which needs a burst; a
// configuration without one is refused, not silently given one.
func TestNewAPI_burst(t *testing.T) {
	if _, err := NewAPI(&rest.Config{Host: "https://127.0.0.1:1", QPS: 5}); err == nil || !strings.Contains(err.Error(), "burst must be at least 1") {
		t.Errorf("NewAPI without burst: %v, want an error naming burst", err)
	}
	api, err := NewAPI(&rest.Config{Host: "https://127.0.0.1:1", QPS: 5, Burst: 10})
	if err != nil || api.CoreV1().PersistentVolumeClaims("x") == nil || api.StorageV1().StorageClasses() == nil || api.BatchV1().Jobs("x") == nil {
		t.Errorf("NewAPI with qps and burst: %v", err)
	}
}
