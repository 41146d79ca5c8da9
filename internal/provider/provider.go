package provider

import (
	"context"
	"os"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/function"
	"github.com/hashicorp/terraform-plugin-framework/provider"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-log/tflog"
	"k8s.io/client-go/rest"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/kube"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/migration"
)

// Default client-side rate limits: high enough that creating claims is
// bounded by the API server, not by the client's limiter.
const (
	defaultQPS   = 500
	defaultBurst = 1000
)

// ClientFactory turns a REST configuration into the Kubernetes API the
// provider uses. Tests inject one that counts requests, the way
// terraform-provider-time injects a clock.
type ClientFactory func(*rest.Config) (kube.API, error)

// Options are what tests inject into the provider (as
// terraform-provider-time injects its clock); the zero value is the
// provider as served.
type Options struct {
	// ClientFactory builds the API from the connection (default kube.NewAPI).
	ClientFactory ClientFactory
	// LookupEnv reads the environment (default os.LookupEnv).
	LookupEnv func(string) (string, bool)
	// AfterStep, when set, is called after each step of a migration
	// (execute.Runner); an error stops that migration there. Tests use it
	// to stop an apply after any step.
	AfterStep func(user string, op migration.Op) error
	// Kube are the client's options: the limits of its waits.
	Kube kube.Options
}

// JupyterProvider is the provider implementation.
type JupyterProvider struct {
	version string
	opts    Options
}

// New returns the provider constructor served by main.
func New(version string) func() provider.Provider {
	return NewWithOptions(version, Options{})
}

// NewWithOptions is New with what tests inject.
func NewWithOptions(version string, opts Options) func() provider.Provider {
	if opts.ClientFactory == nil {
		opts.ClientFactory = kube.NewAPI
	}
	if opts.LookupEnv == nil {
		opts.LookupEnv = os.LookupEnv
	}
	return func() provider.Provider {
		return &JupyterProvider{version: version, opts: opts}
	}
}

func (p *JupyterProvider) Metadata(_ context.Context, _ provider.MetadataRequest, resp *provider.MetadataResponse) {
	resp.TypeName = "jupyter"
	resp.Version = p.version
}

func (p *JupyterProvider) Schema(_ context.Context, _ provider.SchemaRequest, resp *provider.SchemaResponse) {
	resp.Schema = providerSchema()
}

// providerData is handed to every resource and data source. Client is nil
// when the connection settings were unknown at plan time (the cluster is
// created in the same apply); Unknown then says which setting it was.
type providerData struct {
	Client    *kube.Client
	Unknown   string
	AfterStep func(user string, op migration.Op) error // Options.AfterStep
}

// client is the configured client; nil before Configure, or when the
// connection is not known until apply.
func (d *providerData) client() *kube.Client {
	if d == nil {
		return nil
	}
	return d.Client
}

func (p *JupyterProvider) Configure(ctx context.Context, req provider.ConfigureRequest, resp *provider.ConfigureResponse) {
	var m providerModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if attr := m.firstUnknown(); attr != "" {
		tflog.Info(ctx, "provider connection is not known yet; live checks are skipped", map[string]any{"attribute": attr})
		pd := &providerData{Unknown: attr}
		resp.DataSourceData, resp.ResourceData = pd, pd
		return
	}
	cc, diags := m.connection(ctx)
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	cc.ApplyEnv(p.opts.LookupEnv)
	rc, err := kube.RESTConfig(cc)
	if err != nil {
		addConfigError(&resp.Diagnostics, err)
		return
	}
	cs, err := p.opts.ClientFactory(rc)
	if err != nil {
		resp.Diagnostics.AddError("Cannot create a Kubernetes client", err.Error())
		return
	}
	pd := &providerData{Client: kube.NewClient(cs, p.opts.Kube), AfterStep: p.opts.AfterStep}
	resp.DataSourceData, resp.ResourceData = pd, pd
}

func (p *JupyterProvider) Resources(context.Context) []func() resource.Resource {
	return []func() resource.Resource{NewHomeStorageResource, NewSpawnerProfileResource, NewSpawnerConfigResource}
}

func (p *JupyterProvider) DataSources(context.Context) []func() datasource.DataSource {
	return []func() datasource.DataSource{NewHomeClaimsDataSource}
}

func (p *JupyterProvider) Functions(context.Context) []func() function.Function {
	return []func() function.Function{
		NewSafeSlugFunction,
		NewLabelSlugFunction,
		NewEscapeSlugFunction,
		NewExpandTemplateFunction,
		NewHelmValuesFunction,
	}
}
