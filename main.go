package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"runtime/pprof"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/provider"
)

// version is set by the release build (goreleaser) with -ldflags "-X main.version=...".
var version = "dev"

func main() {
	var debug bool
	flag.BoolVar(&debug, "debug", false, "run the provider with support for debuggers such as delve")
	flag.Parse()

	if !debug {
		// Under -debug the provider runs on its own and its log is printed.
		quietUnlessLogged(os.Getenv, os.Setenv)
	}
	stop, err := cpuProfile(os.Getenv(cpuProfileVar), os.Getpid())
	if err != nil {
		log.Fatal(err.Error())
	}
	defer stop()
	err = providerserver.Serve(context.Background(), provider.New(version), providerserver.ServeOpts{
		Address: "registry.terraform.io/jupyter-infra/jupyter",
		Debug:   debug,
	})
	if err != nil {
		stop()
		log.Fatal(err.Error())
	}
}

// cpuProfileVar names a directory into which every provider process writes
// a CPU profile of its whole life, provider-<pid>.pprof: `make bench` uses it
// to show where a plan's time goes (OpenTofu starts the provider several
// times per plan; `go tool pprof` reads the files together).
const cpuProfileVar = "JUPYTER_PROVIDER_CPU_PROFILE"

// cpuProfile starts profiling into dir (nothing when dir is empty) and
// returns the function that ends it.
func cpuProfile(dir string, pid int) (func(), error) {
	if dir == "" {
		return func() {}, nil
	}
	f, err := os.Create(filepath.Join(dir, fmt.Sprintf("provider-%d.pprof", pid)))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", cpuProfileVar, err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("%s: %w", cpuProfileVar, err)
	}
	return func() {
		pprof.StopCPUProfile()
		_ = f.Close()
	}, nil
}

// logLevelVars are the variables the plugin SDK reads its log levels from.
var logLevelVars = []string{"TF_LOG_SDK", "TF_LOG_SDK_PROTO", "TF_LOG_SDK_FRAMEWORK", "TF_LOG_PROVIDER", "TF_LOG_PROVIDER_JUPYTER"}

// quietUnlessLogged turns the SDK's logging off when no log is being kept.
// The SDK logs at TRACE unless told otherwise, and formats every line as
// JSON for OpenTofu or Terraform, which drop them all when neither TF_LOG
// nor TF_LOG_PROVIDER is set: at thousands of users that formatting costs
// more than a tenth of a plan. A level set explicitly is left alone.
func quietUnlessLogged(getenv func(string) string, setenv func(string, string) error) {
	if getenv("TF_LOG") != "" || getenv("TF_LOG_PROVIDER") != "" {
		return
	}
	for _, v := range logLevelVars {
		if getenv(v) == "" {
			_ = setenv(v, "OFF")
		}
	}
}
