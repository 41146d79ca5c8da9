package kube

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// ConnectionConfig mirrors the provider block. Empty strings and nil slices
// mean "not set"; environment fallbacks are applied by ApplyEnv.
type ConnectionConfig struct {
	ConfigPath            string
	ConfigPaths           []string
	ConfigContext         string
	ConfigContextAuthInfo string
	ConfigContextCluster  string
	Host                  string
	Token                 string
	ClusterCACertificate  string
	ClientCertificate     string
	ClientKey             string
	Insecure              *bool
	TLSServerName         string
	ProxyURL              string
	Exec                  *ExecConfig
	QPS                   float32
	Burst                 int
}

// ExecConfig is a client-go credential plugin.
type ExecConfig struct {
	APIVersion string
	Command    string
	Args       []string
	Env        map[string]string
}

// ConfigError is a connection setting that cannot work, with the provider
// attribute it came from and what to do about it.
type ConfigError struct {
	Attribute string
	Summary   string
	Detail    string
}

func (e *ConfigError) Error() string { return e.Attribute + ": " + e.Summary + ": " + e.Detail }

// Environment variables read when the matching attribute is not set, the
// same ones the hashicorp kubernetes provider reads.
var envFallbacks = []struct {
	env string
	set func(c *ConnectionConfig, v string)
	get func(c *ConnectionConfig) bool
}{
	{"KUBE_CONFIG_PATH", func(c *ConnectionConfig, v string) { c.ConfigPath = v }, func(c *ConnectionConfig) bool { return c.ConfigPath != "" }},
	{"KUBE_CONFIG_PATHS", func(c *ConnectionConfig, v string) { c.ConfigPaths = filepath.SplitList(v) }, func(c *ConnectionConfig) bool { return len(c.ConfigPaths) > 0 }},
	{"KUBE_CTX", func(c *ConnectionConfig, v string) { c.ConfigContext = v }, func(c *ConnectionConfig) bool { return c.ConfigContext != "" }},
	{"KUBE_CTX_AUTH_INFO", func(c *ConnectionConfig, v string) { c.ConfigContextAuthInfo = v }, func(c *ConnectionConfig) bool { return c.ConfigContextAuthInfo != "" }},
	{"KUBE_CTX_CLUSTER", func(c *ConnectionConfig, v string) { c.ConfigContextCluster = v }, func(c *ConnectionConfig) bool { return c.ConfigContextCluster != "" }},
	{"KUBE_HOST", func(c *ConnectionConfig, v string) { c.Host = v }, func(c *ConnectionConfig) bool { return c.Host != "" }},
	{"KUBE_TOKEN", func(c *ConnectionConfig, v string) { c.Token = v }, func(c *ConnectionConfig) bool { return c.Token != "" }},
	{"KUBE_CLUSTER_CA_CERT_DATA", func(c *ConnectionConfig, v string) { c.ClusterCACertificate = v }, func(c *ConnectionConfig) bool { return c.ClusterCACertificate != "" }},
	{"KUBE_CLIENT_CERT_DATA", func(c *ConnectionConfig, v string) { c.ClientCertificate = v }, func(c *ConnectionConfig) bool { return c.ClientCertificate != "" }},
	{"KUBE_CLIENT_KEY_DATA", func(c *ConnectionConfig, v string) { c.ClientKey = v }, func(c *ConnectionConfig) bool { return c.ClientKey != "" }},
	{"KUBE_TLS_SERVER_NAME", func(c *ConnectionConfig, v string) { c.TLSServerName = v }, func(c *ConnectionConfig) bool { return c.TLSServerName != "" }},
	{"KUBE_PROXY_URL", func(c *ConnectionConfig, v string) { c.ProxyURL = v }, func(c *ConnectionConfig) bool { return c.ProxyURL != "" }},
	{"KUBE_INSECURE", func(c *ConnectionConfig, v string) { b := v == "true" || v == "1"; c.Insecure = &b }, func(c *ConnectionConfig) bool { return c.Insecure != nil }},
}

// ApplyEnv fills unset settings from KUBE_* variables, using lookup (os.LookupEnv in production).
func (c *ConnectionConfig) ApplyEnv(lookup func(string) (string, bool)) {
	for _, f := range envFallbacks {
		if f.get(c) {
			continue
		}
		if v, ok := lookup(f.env); ok && v != "" {
			f.set(c, v)
		}
	}
}

// RESTConfig builds a client configuration with client-go's clientcmd
// loading rules and overrides, the way kubectl does, and falls back to the
// in-cluster service account when nothing else is configured.
func RESTConfig(c ConnectionConfig) (*rest.Config, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	rules, err := c.loadingRules()
	if err != nil {
		return nil, err
	}
	rc, err := c.clientConfig(rules)
	if err != nil {
		return nil, err
	}
	if rc.Host == "" {
		return nil, &ConfigError{"host", "no API server address", "Set host, or a config_context whose cluster has a server."}
	}
	if len(rules.Precedence) == 0 && rc.BearerToken == "" && len(rc.CertData) == 0 && rc.ExecProvider == nil && rc.BearerTokenFile == "" {
		return nil, &ConfigError{"host", "host is set without credentials",
			"Set token, client_certificate and client_key, or an exec block, or use config_path with a kubeconfig that has a user."}
	}
	rc.QPS, rc.Burst = c.QPS, c.Burst
	rc.UserAgent = "terraform-provider-jupyter"
	UseProtobuf(rc)
	return rc, nil
}

// loadingRules are the kubeconfig files to read, each checked to exist.
func (c ConnectionConfig) loadingRules() (*clientcmd.ClientConfigLoadingRules, error) {
	rules := &clientcmd.ClientConfigLoadingRules{}
	paths, attr := c.kubeconfigPaths()
	for _, p := range paths {
		expanded, err := expandHome(p)
		if err != nil {
			return nil, &ConfigError{attr, "cannot expand the kubeconfig path", err.Error()}
		}
		if _, err := os.Stat(expanded); err != nil {
			return nil, &ConfigError{attr, "kubeconfig file cannot be read",
				fmt.Sprintf("%v. Point %s at an existing kubeconfig file, or remove it and set host with token or client certificates.", err, attr)}
		}
		rules.Precedence = append(rules.Precedence, expanded)
	}
	return rules, nil
}

// clientConfig is the configuration from the kubeconfig files and the
// provider block's overrides or, when neither names a cluster, the
// in-cluster service account (as a hub's own pod would use).
func (c ConnectionConfig) clientConfig(rules *clientcmd.ClientConfigLoadingRules) (*rest.Config, error) {
	if len(rules.Precedence) == 0 && c.Host == "" {
		rc, err := rest.InClusterConfig()
		if err != nil {
			return nil, &ConfigError{"host", "no cluster connection configured",
				"Set config_path (or KUBE_CONFIG_PATH) to a kubeconfig, or host with token or client_certificate/client_key. " +
					"The in-cluster service account is not available here: " + err.Error()}
		}
		return rc, nil
	}
	rc, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, c.overrides()).ClientConfig()
	if err != nil {
		return nil, translateClientcmdError(err, c)
	}
	return rc, nil
}

// overrides are the provider block's settings over the kubeconfig's.
func (c ConnectionConfig) overrides() *clientcmd.ConfigOverrides {
	o := &clientcmd.ConfigOverrides{CurrentContext: c.ConfigContext}
	o.Context.AuthInfo, o.Context.Cluster = c.ConfigContextAuthInfo, c.ConfigContextCluster
	o.ClusterInfo.Server = c.Host
	o.ClusterInfo.CertificateAuthorityData = pemOrNil(c.ClusterCACertificate)
	if c.Insecure != nil {
		o.ClusterInfo.InsecureSkipTLSVerify = *c.Insecure
	}
	o.ClusterInfo.TLSServerName, o.ClusterInfo.ProxyURL = c.TLSServerName, c.ProxyURL
	o.AuthInfo.Token = c.Token
	o.AuthInfo.ClientCertificateData, o.AuthInfo.ClientKeyData = pemOrNil(c.ClientCertificate), pemOrNil(c.ClientKey)
	if c.Exec != nil {
		e := &clientcmdapi.ExecConfig{APIVersion: c.Exec.APIVersion, Command: c.Exec.Command, Args: c.Exec.Args,
			InteractiveMode: clientcmdapi.NeverExecInteractiveMode}
		for k, v := range c.Exec.Env {
			e.Env = append(e.Env, clientcmdapi.ExecEnvVar{Name: k, Value: v})
		}
		o.AuthInfo.Exec = e
	}
	return o
}

// Content types the provider speaks to the API server. Every type it uses
// is built in (claims, pods, nodes, config maps, storage classes) and has a
// protobuf encoding, which is smaller than JSON and cheaper to encode and
// decode, for the API server and for the provider; JSON stays acceptable
// for anything served without it.
const (
	ContentTypeProtobuf = "application/vnd.kubernetes.protobuf"
	AcceptContentTypes  = ContentTypeProtobuf + ",application/json"
)

// UseProtobuf makes rc send protobuf and accept protobuf or JSON. Patches
// keep their own content types (merge patch is JSON).
func UseProtobuf(rc *rest.Config) {
	rc.ContentType = ContentTypeProtobuf
	rc.AcceptContentTypes = AcceptContentTypes
}

func (c ConnectionConfig) kubeconfigPaths() ([]string, string) {
	if c.ConfigPath != "" {
		return []string{c.ConfigPath}, "config_path"
	}
	return c.ConfigPaths, "config_paths"
}

// pemOrNil is PEM text as bytes; nil when unset, so that the kubeconfig's
// own value stays.
func pemOrNil(s string) []byte {
	if s == "" {
		return nil
	}
	return []byte(s)
}

// check refuses settings that cannot work together, naming the attribute.
func (c ConnectionConfig) check() error {
	for _, chk := range []func() *ConfigError{c.checkSources, c.checkHost, c.checkProxy, c.checkCredentials} {
		if err := chk(); err != nil {
			return err
		}
	}
	return nil
}

func (c ConnectionConfig) checkSources() *ConfigError {
	if c.ConfigPath != "" && len(c.ConfigPaths) > 0 {
		return &ConfigError{"config_path", "config_path and config_paths are both set", "Set one of them."}
	}
	if c.QPS < 0 || c.Burst < 0 {
		return &ConfigError{"qps", "qps and burst must be positive", "Leave them unset for the defaults."}
	}
	return nil
}

func (c ConnectionConfig) checkHost() *ConfigError {
	if c.Host == "" {
		return nil
	}
	if u, err := url.Parse(c.Host); err != nil || u.Host == "" && !strings.Contains(c.Host, ":") {
		return &ConfigError{"host", "not a valid API server address", fmt.Sprintf("%q: use a URL such as https://10.0.0.1:6443.", c.Host)}
	}
	return nil
}

func (c ConnectionConfig) checkProxy() *ConfigError {
	if c.ProxyURL == "" {
		return nil
	}
	if u, err := url.Parse(c.ProxyURL); err != nil || u.Scheme == "" || u.Host == "" {
		return &ConfigError{"proxy_url", "not a valid proxy URL", fmt.Sprintf("%q: use a URL such as http://proxy:3128 or socks5://proxy:1080.", c.ProxyURL)}
	}
	return nil
}

func (c ConnectionConfig) checkCredentials() *ConfigError {
	switch {
	case (c.ClientCertificate == "") != (c.ClientKey == ""):
		return &ConfigError{"client_key", "client_certificate and client_key must be set together", "Set both, as PEM text, or neither."}
	case c.Exec != nil && c.Exec.Command == "":
		return &ConfigError{"exec.command", "exec needs a command", "Name the credential plugin to run, e.g. aws or gke-gcloud-auth-plugin."}
	case c.Insecure != nil && *c.Insecure && c.ClusterCACertificate != "":
		return &ConfigError{"insecure", "insecure and cluster_ca_certificate are both set", "Remove insecure to verify the server with the CA, or remove the CA."}
	}
	return nil
}

func translateClientcmdError(err error, c ConnectionConfig) error {
	msg := err.Error()
	switch {
	case c.ConfigContext != "" && strings.Contains(msg, "context") && (strings.Contains(msg, "not found") || strings.Contains(msg, "does not exist")):
		return &ConfigError{"config_context", fmt.Sprintf("context %q is not in the kubeconfig", c.ConfigContext), msg + ". Use a context that `kubectl config get-contexts` lists for this file."}
	case c.ConfigContextAuthInfo != "" && strings.Contains(msg, "user"):
		return &ConfigError{"config_context_auth_info", "unknown user", msg}
	case c.ConfigContextCluster != "" && strings.Contains(msg, "cluster"):
		return &ConfigError{"config_context_cluster", "unknown cluster", msg}
	case clientcmd.IsEmptyConfig(err):
		attr := "config_path"
		if len(c.ConfigPaths) > 0 {
			attr = "config_paths"
		}
		return &ConfigError{attr, "the kubeconfig has no usable context", msg + ". Set config_context, or use a kubeconfig with a current-context."}
	}
	var ce *ConfigError
	if errors.As(err, &ce) {
		return ce
	}
	return &ConfigError{"config_path", "invalid connection configuration", msg}
}

func expandHome(p string) (string, error) {
	if p == "~" || strings.HasPrefix(p, "~/") {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", err
		}
		return filepath.Join(home, strings.TrimPrefix(p, "~")), nil
	}
	return p, nil
}
