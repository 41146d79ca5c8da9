package tofurun

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
)

// Version is the version the provider is built and mirrored as.
const Version = "0.1.0"

// CLI is OpenTofu or Terraform: the command the test bed builds and the
// registry host the CLI puts in front of a provider source that names none.
type CLI struct {
	Name    string // the command: tofu or terraform
	Product string // what it calls itself: OpenTofu or Terraform
	Host    string
}

// The CLIs the test bed builds (tools/testbed/build.sh).
var (
	OpenTofu  = CLI{Name: "tofu", Product: "OpenTofu", Host: "registry.opentofu.org"}
	Terraform = CLI{Name: "terraform", Product: "Terraform", Host: "registry.terraform.io"}
)

// CLIEnv names the environment variable that chooses the CLI (make's CLI).
const CLIEnv = "TESTBED_CLI"

// Selected is the CLI that TESTBED_CLI names, OpenTofu when it is unset.
func Selected() (CLI, error) {
	switch name := os.Getenv(CLIEnv); name {
	case "", OpenTofu.Name:
		return OpenTofu, nil
	case Terraform.Name:
		return Terraform, nil
	default:
		return CLI{}, fmt.Errorf("%s=%q: want %q or %q", CLIEnv, name, OpenTofu.Name, Terraform.Name)
	}
}

// Path is the CLI's binary in the test bed's directory bin.
func (c CLI) Path(bin string) string { return filepath.Join(bin, c.Name) }

// MirrorDir is where a filesystem mirror rooted at mirror holds version of
// the provider namespace/name for this CLI and platform.
func (c CLI) MirrorDir(mirror, namespace, name, version string) string {
	return filepath.Join(mirror, c.Host, namespace, name, version, runtime.GOOS+"_"+runtime.GOARCH)
}

// MirrorConfig is a CLI configuration that installs the providers sources
// (namespace/name) from the filesystem mirror and nothing else.
func MirrorConfig(mirror string, sources ...string) string {
	return fmt.Sprintf(`provider_installation {
  filesystem_mirror {
    path    = %q
    include = ["%s"]
  }
}
`, mirror, strings.Join(sources, `", "`))
}

// Workspace is a CLI configuration with a mirror holding a fresh build of the provider.
type Workspace struct {
	Dir         string // scratch directory
	CLI         CLI
	Bin         string // path of the CLI's binary
	CLIConfig   string
	ProviderBin string // the built provider
	Env         []string
	Stdout      io.Writer
	Stderr      io.Writer
}

// New builds the provider from root (the repository) into a mirror under
// dir, for cli from the test bed's directory bin.
func New(ctx context.Context, root, dir, bin string, cli CLI) (*Workspace, error) {
	mirror := filepath.Join(dir, "mirror")
	pkg := cli.MirrorDir(mirror, "jupyter-infra", "jupyter", Version)
	provider := filepath.Join(pkg, "terraform-provider-jupyter_v"+Version)
	build := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags", "-X main.version="+Version, "-o", provider, ".")
	build.Dir, build.Stdout, build.Stderr = root, os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return nil, fmt.Errorf("go build: %w", err)
	}
	rc := filepath.Join(dir, cli.Name+".rc")
	if err := os.WriteFile(rc, []byte(MirrorConfig(mirror, "jupyter-infra/jupyter")), 0o600); err != nil {
		return nil, err
	}
	return &Workspace{
		Dir: dir, CLI: cli, Bin: cli.Path(bin), CLIConfig: rc, ProviderBin: provider,
		Env:    append(os.Environ(), "TF_CLI_CONFIG_FILE="+rc, "CHECKPOINT_DISABLE=1", "TF_IN_AUTOMATION=1", "TF_INPUT=0"),
		Stdout: os.Stdout, Stderr: os.Stderr,
	}, nil
}

// Run runs the CLI with args in the configuration directory cfgDir.
func (w *Workspace) Run(ctx context.Context, cfgDir string, args ...string) error {
	cmd := w.Command(ctx, cfgDir, args...)
	cmd.Stdout, cmd.Stderr = w.Stdout, w.Stderr
	return cmd.Run()
}

// Command is the exec.Cmd for the CLI's args in cfgDir.
func (w *Workspace) Command(ctx context.Context, cfgDir string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, w.Bin, args...)
	cmd.Dir, cmd.Env = cfgDir, w.Env
	return cmd
}

// Echo prints a command line as the demo shows it.
func (w *Workspace) Echo(out io.Writer, args ...string) {
	_, _ = fmt.Fprintf(out, "$ %s %s\n", w.CLI.Name, strings.Join(args, " "))
}
