package main

import (
	"context"
	"flag"
	"log"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/provider"
)

// version is set by the release build (goreleaser) with -ldflags "-X main.version=...".
var version = "dev"

func main() {
	var debug bool
	flag.BoolVar(&debug, "debug", false, "run the provider with support for debuggers such as delve")
	flag.Parse()

	err := providerserver.Serve(context.Background(), provider.New(version), providerserver.ServeOpts{
		Address: "registry.terraform.io/jupyter-infra/jupyter",
		Debug:   debug,
	})
	if err != nil {
		log.Fatal(err.Error())
	}
}
