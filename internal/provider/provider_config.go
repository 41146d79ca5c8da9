package provider

import (
	"context"
	"errors"

	"github.com/hashicorp/terraform-plugin-framework-validators/float64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/listvalidator"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/provider/schema"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/kube"
)

type providerModel struct {
	ConfigPath            types.String  `tfsdk:"config_path"`
	ConfigPaths           types.List    `tfsdk:"config_paths"`
	ConfigContext         types.String  `tfsdk:"config_context"`
	ConfigContextAuthInfo types.String  `tfsdk:"config_context_auth_info"`
	ConfigContextCluster  types.String  `tfsdk:"config_context_cluster"`
	Host                  types.String  `tfsdk:"host"`
	Token                 types.String  `tfsdk:"token"`
	ClusterCACertificate  types.String  `tfsdk:"cluster_ca_certificate"`
	ClientCertificate     types.String  `tfsdk:"client_certificate"`
	ClientKey             types.String  `tfsdk:"client_key"`
	Insecure              types.Bool    `tfsdk:"insecure"`
	TLSServerName         types.String  `tfsdk:"tls_server_name"`
	ProxyURL              types.String  `tfsdk:"proxy_url"`
	QPS                   types.Float64 `tfsdk:"qps"`
	Burst                 types.Int64   `tfsdk:"burst"`
	Exec                  []execModel   `tfsdk:"exec"`
}

type execModel struct {
	APIVersion types.String `tfsdk:"api_version"`
	Command    types.String `tfsdk:"command"`
	Args       types.List   `tfsdk:"args"`
	Env        types.Map    `tfsdk:"env"`
}

func providerSchema() schema.Schema {
	str := func(desc string) schema.StringAttribute {
		return schema.StringAttribute{Optional: true, MarkdownDescription: desc}
	}
	secret := func(desc string) schema.StringAttribute {
		a := str(desc)
		a.Sensitive = true
		return a
	}
	return schema.Schema{
		MarkdownDescription: "Connects to the Kubernetes cluster that runs JupyterHub. The settings are those of the " +
			"`hashicorp/kubernetes` provider, read the same way (client-go's kubeconfig loading rules, then explicit " +
			"overrides, then `KUBE_*` environment variables, then the in-cluster service account).\n\n" +
			"When a setting is unknown at plan time (the cluster is created in the same apply), resources still plan " +
			"and say in a warning that their checks against the live cluster were skipped.",
		Attributes: map[string]schema.Attribute{
			"config_path": str("Path to a kubeconfig file. Env: `KUBE_CONFIG_PATH`."),
			"config_paths": schema.ListAttribute{
				ElementType: types.StringType, Optional: true,
				MarkdownDescription: "Kubeconfig files merged in order, as `KUBECONFIG` does. Env: `KUBE_CONFIG_PATHS` (separated by `:`). Conflicts with `config_path`.",
				Validators:          []validator.List{listvalidator.SizeAtLeast(1)},
			},
			"config_context":           str("Context of the kubeconfig to use instead of its current context. Env: `KUBE_CTX`."),
			"config_context_auth_info": str("User of the kubeconfig to use with the context. Env: `KUBE_CTX_AUTH_INFO`."),
			"config_context_cluster":   str("Cluster of the kubeconfig to use with the context. Env: `KUBE_CTX_CLUSTER`."),
			"host":                     str("API server URL, e.g. `https://10.0.0.1:6443`. Env: `KUBE_HOST`."),
			"token":                    secret("Bearer token. Env: `KUBE_TOKEN`."),
			"cluster_ca_certificate":   str("PEM-encoded CA certificate of the API server. Env: `KUBE_CLUSTER_CA_CERT_DATA`."),
			"client_certificate":       str("PEM-encoded client certificate. Env: `KUBE_CLIENT_CERT_DATA`."),
			"client_key":               secret("PEM-encoded client key. Env: `KUBE_CLIENT_KEY_DATA`."),
			"insecure": schema.BoolAttribute{Optional: true,
				MarkdownDescription: "Skip verification of the server certificate. Only for throwaway clusters. Env: `KUBE_INSECURE`."},
			"tls_server_name": str("Server name to verify the certificate against, when it differs from the host. Env: `KUBE_TLS_SERVER_NAME`."),
			"proxy_url":       str("HTTP(S) or SOCKS5 proxy for API requests. Env: `KUBE_PROXY_URL`."),
			"qps": schema.Float64Attribute{Optional: true, Validators: []validator.Float64{float64validator.AtLeast(1)},
				MarkdownDescription: "Client-side limit on requests per second to the API server. Default 500: with at most 16 writes in flight, the API server (and its priority and fairness limits), not this limiter, bounds an apply."},
			"burst": schema.Int64Attribute{Optional: true, Validators: []validator.Int64{int64validator.AtLeast(1)},
				MarkdownDescription: "Client-side burst above `qps`. Default 1000."},
		},
		Blocks: map[string]schema.Block{
			"exec": schema.ListNestedBlock{
				MarkdownDescription: "A client-go credential plugin that prints an `ExecCredential`, e.g. `aws eks get-token`.",
				Validators:          []validator.List{listvalidator.SizeAtMost(1)},
				NestedObject: schema.NestedBlockObject{Attributes: map[string]schema.Attribute{
					"api_version": schema.StringAttribute{Required: true, MarkdownDescription: "`client.authentication.k8s.io/v1` or `v1beta1`."},
					"command":     schema.StringAttribute{Required: true, MarkdownDescription: "Command to run."},
					"args":        schema.ListAttribute{ElementType: types.StringType, Optional: true, MarkdownDescription: "Arguments."},
					"env":         schema.MapAttribute{ElementType: types.StringType, Optional: true, MarkdownDescription: "Extra environment variables."},
				}},
			},
		},
	}
}

// firstUnknown names the first connection setting whose value is not known yet.
func (m providerModel) firstUnknown() string {
	vals := map[string]attr.Value{
		"config_path": m.ConfigPath, "config_paths": m.ConfigPaths, "config_context": m.ConfigContext,
		"config_context_auth_info": m.ConfigContextAuthInfo, "config_context_cluster": m.ConfigContextCluster,
		"host": m.Host, "token": m.Token, "cluster_ca_certificate": m.ClusterCACertificate,
		"client_certificate": m.ClientCertificate, "client_key": m.ClientKey, "insecure": m.Insecure,
		"tls_server_name": m.TLSServerName, "proxy_url": m.ProxyURL, "qps": m.QPS, "burst": m.Burst,
	}
	for _, e := range m.Exec {
		vals["exec.api_version"], vals["exec.command"], vals["exec.args"], vals["exec.env"] = e.APIVersion, e.Command, e.Args, e.Env
	}
	first := ""
	for name, v := range vals {
		if v.IsUnknown() && (first == "" || name < first) {
			first = name
		}
	}
	return first
}

func (m providerModel) connection(ctx context.Context) (kube.ConnectionConfig, diag.Diagnostics) {
	var diags diag.Diagnostics
	cc := kube.ConnectionConfig{
		ConfigPath:            m.ConfigPath.ValueString(),
		ConfigContext:         m.ConfigContext.ValueString(),
		ConfigContextAuthInfo: m.ConfigContextAuthInfo.ValueString(),
		ConfigContextCluster:  m.ConfigContextCluster.ValueString(),
		Host:                  m.Host.ValueString(),
		Token:                 m.Token.ValueString(),
		ClusterCACertificate:  m.ClusterCACertificate.ValueString(),
		ClientCertificate:     m.ClientCertificate.ValueString(),
		ClientKey:             m.ClientKey.ValueString(),
		TLSServerName:         m.TLSServerName.ValueString(),
		ProxyURL:              m.ProxyURL.ValueString(),
		QPS:                   defaultQPS,
		Burst:                 defaultBurst,
	}
	if !m.ConfigPaths.IsNull() {
		diags.Append(m.ConfigPaths.ElementsAs(ctx, &cc.ConfigPaths, false)...)
	}
	if !m.Insecure.IsNull() {
		b := m.Insecure.ValueBool()
		cc.Insecure = &b
	}
	if !m.QPS.IsNull() {
		cc.QPS = float32(m.QPS.ValueFloat64())
	}
	if !m.Burst.IsNull() {
		cc.Burst = int(m.Burst.ValueInt64())
	}
	if len(m.Exec) == 1 {
		e := m.Exec[0]
		ec := &kube.ExecConfig{APIVersion: e.APIVersion.ValueString(), Command: e.Command.ValueString()}
		if !e.Args.IsNull() {
			diags.Append(e.Args.ElementsAs(ctx, &ec.Args, false)...)
		}
		if !e.Env.IsNull() {
			diags.Append(e.Env.ElementsAs(ctx, &ec.Env, false)...)
		}
		cc.Exec = ec
	}
	return cc, diags
}

// addConfigError reports a connection error at the attribute it names.
func addConfigError(diags *diag.Diagnostics, err error) {
	var ce *kube.ConfigError
	if errors.As(err, &ce) {
		p := path.Root(ce.Attribute)
		if ce.Attribute == "exec.command" {
			p = path.Root("exec").AtListIndex(0).AtName("command")
		}
		diags.AddAttributeError(p, "Invalid provider configuration: "+ce.Summary, ce.Detail)
		return
	}
	diags.AddError("Invalid provider configuration", err.Error())
}
