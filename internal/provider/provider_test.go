package provider

import (
	"os"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/acctest"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/testcluster"
)

func TestMain(m *testing.M) {
	os.Exit(acctest.Run(m, testcluster.Options{ControllerManager: true}))
}

// protoV6ProviderFactories serve the provider in-process to OpenTofu.
var protoV6ProviderFactories = map[string]func() (tfprotov6.ProviderServer, error){
	"jupyter": providerserver.NewProtocol6WithError(New("test")()),
}
