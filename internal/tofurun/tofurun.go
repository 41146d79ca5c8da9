// Package tofurun runs the provider the way a user does: built into a local
// filesystem mirror, installed by `tofu init`, driven by `tofu` commands.
// make demo and make bench use it.
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

// Workspace is a CLI configuration with a mirror holding a fresh build of the provider.
type Workspace struct {
	Dir         string // scratch directory
	Tofu        string // path of the tofu binary
	CLIConfig   string
	ProviderBin string // the built provider
	Env         []string
	Stdout      io.Writer
	Stderr      io.Writer
}

// New builds the provider from root (the repository) into a mirror under dir.
func New(ctx context.Context, root, dir, tofu string) (*Workspace, error) {
	mirror := filepath.Join(dir, "mirror")
	pkg := filepath.Join(mirror, "registry.opentofu.org", "jupyter-infra", "jupyter", Version, runtime.GOOS+"_"+runtime.GOARCH)
	bin := filepath.Join(pkg, "terraform-provider-jupyter_v"+Version)
	build := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags", "-X main.version="+Version, "-o", bin, ".")
	build.Dir, build.Stdout, build.Stderr = root, os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return nil, fmt.Errorf("go build: %w", err)
	}
	rc := filepath.Join(dir, "tofu.rc")
	if err := os.WriteFile(rc, []byte(fmt.Sprintf(`provider_installation {
  filesystem_mirror {
    path    = %q
    include = ["jupyter-infra/jupyter"]
  }
}
`, mirror)), 0o600); err != nil {
		return nil, err
	}
	return &Workspace{
		Dir: dir, Tofu: tofu, CLIConfig: rc, ProviderBin: bin,
		Env:    append(os.Environ(), "TF_CLI_CONFIG_FILE="+rc, "CHECKPOINT_DISABLE=1", "TF_IN_AUTOMATION=1", "TF_INPUT=0"),
		Stdout: os.Stdout, Stderr: os.Stderr,
	}, nil
}

// Run runs tofu with args in the configuration directory cfgDir.
func (w *Workspace) Run(ctx context.Context, cfgDir string, args ...string) error {
	cmd := w.Command(ctx, cfgDir, args...)
	cmd.Stdout, cmd.Stderr = w.Stdout, w.Stderr
	return cmd.Run()
}

// Command is the exec.Cmd for tofu args in cfgDir.
func (w *Workspace) Command(ctx context.Context, cfgDir string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, w.Tofu, args...)
	cmd.Dir, cmd.Env = cfgDir, w.Env
	return cmd
}

// Echo prints a command line as the demo shows it.
func Echo(out io.Writer, args ...string) {
	_, _ = fmt.Fprintf(out, "$ tofu %s\n", strings.Join(args, " "))
}
