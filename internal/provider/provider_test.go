package provider

import (
	"os"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/acctest"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/migration"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/testcluster"
)

// The API server allows privileged containers, as clusters that run
// zero-to-jupyterhub do (kubeadm's and the managed ones set
// --allow-privileged): the user pods of the examples (provider_examples_test.go)
// carry the chart's privileged block-cloud-metadata init container.
func TestMain(m *testing.M) {
	os.Exit(acctest.Run(m, testcluster.Options{ControllerManager: true, APIServerArgs: []string{"--allow-privileged=true"}}))
}

// protoV6ProviderFactories serve the provider in-process to OpenTofu.
var protoV6ProviderFactories = factories(Options{})

// factories serve the provider with what a test injects.
func factories(opts Options) map[string]func() (tfprotov6.ProviderServer, error) {
	return map[string]func() (tfprotov6.ProviderServer, error){
		"jupyter": providerserver.NewProtocol6WithError(NewWithOptions("test", opts)()),
	}
}

// afterStep serves the provider with a hook after every migration step.
func afterStep(hook func(user string, op migration.Op) error) map[string]func() (tfprotov6.ProviderServer, error) {
	return factories(Options{AfterStep: hook})
}
