package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha512"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/tofurun"
)

// keepProfiles is -profiles: where the raw profiles go ("": removed).
var keepProfiles string

// profilePlan runs a tofu command once with the CPU profiles of every
// provider process (JUPYTER_PROVIDER_CPU_PROFILE, main.go) and of OpenTofu
// (TOFU_CPU_PROFILE) on, and returns the top of each by cumulative time.
func profilePlan(ctx context.Context, ws *tofurun.Workspace, dir string, args ...string) (provider, tofu string, err error) {
	base := keepProfiles
	if base == "" {
		base = dir
	}
	pdir, err := os.MkdirTemp(base, filepath.Base(dir)+"-profile-")
	if err != nil {
		return "", "", err
	}
	if keepProfiles == "" {
		defer func() { _ = os.RemoveAll(pdir) }()
	}
	cmd := ws.Command(ctx, dir, args...)
	cmd.Env = append(cmd.Env, "JUPYTER_PROVIDER_CPU_PROFILE="+pdir, "TOFU_CPU_PROFILE="+filepath.Join(pdir, "tofu.pprof"))
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", "", fmt.Errorf("tofu %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	providers, _ := filepath.Glob(filepath.Join(pdir, "provider-*.pprof"))
	if len(providers) == 0 {
		return "", "", fmt.Errorf("no provider profile in %s", pdir)
	}
	if provider, err = pprofTop(providers...); err != nil {
		return "", "", err
	}
	tofu, err = pprofTop(filepath.Join(pdir, "tofu.pprof"))
	return provider, tofu, err
}

// pprofTop is `go tool pprof -top -cum` of the profiles, its table only.
func pprofTop(files ...string) (string, error) {
	out, err := exec.Command("go", append([]string{"tool", "pprof", "-top", "-cum", "-nodecount=25"}, files...)...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go tool pprof: %v\n%s", err, out)
	}
	var keep []string
	for _, line := range strings.Split(string(out), "\n") {
		switch {
		case line == "", strings.HasPrefix(line, "File:"), strings.HasPrefix(line, "Build ID:"), strings.HasPrefix(line, "Type:"), strings.HasPrefix(line, "Time:"):
		default:
			keep = append(keep, line)
		}
	}
	return strings.Join(keep, "\n"), nil
}

// profileMTLS runs a tofu command n times with the CPU profiles of the
// provider processes and of OpenTofu on, and reads from all of them
// together how much CPU time went to go-plugin's automatic mTLS.
func profileMTLS(ctx context.Context, ws *tofurun.Workspace, dir string, n int, args ...string) (mtlsShare, error) {
	m := mtlsShare{Plans: n}
	pdir, err := os.MkdirTemp(dir, "mtls-profile-")
	if err != nil {
		return m, err
	}
	defer func() { _ = os.RemoveAll(pdir) }()
	var tofus []string
	for i := range n {
		tp := filepath.Join(pdir, fmt.Sprintf("tofu-%d.pprof", i))
		cmd := ws.Command(ctx, dir, args...)
		cmd.Env = append(cmd.Env, "JUPYTER_PROVIDER_CPU_PROFILE="+pdir, "TOFU_CPU_PROFILE="+tp)
		if out, err := cmd.CombinedOutput(); err != nil {
			return m, fmt.Errorf("tofu %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		tofus = append(tofus, tp)
	}
	providers, _ := filepath.Glob(filepath.Join(pdir, "provider-*.pprof"))
	if m.Provider, m.ProviderAll, err = pprofFocus(mtlsFocus, providers...); err != nil {
		return m, err
	}
	if m.Tofu, m.TofuAll, err = pprofFocus(mtlsFocus, tofus...); err != nil {
		return m, err
	}
	m.Sign, m.Verify, err = p521()
	return m, err
}

// pprofFocus is the CPU time of the profiles' samples whose stack matches
// focus, and of all their samples, as `go tool pprof -top -focus` counts them.
func pprofFocus(focus string, files ...string) (matched, total time.Duration, err error) {
	if len(files) == 0 {
		return 0, 0, errors.New("no profiles")
	}
	out, err := exec.Command("go", append([]string{"tool", "pprof", "-top", "-nodefraction=0", "-focus=" + focus}, files...)...).CombinedOutput()
	if err != nil {
		return 0, 0, fmt.Errorf("go tool pprof: %v\n%s", err, out)
	}
	return parseFocus(string(out))
}

// parseFocus reads the matched and the total CPU time from the output of
// `go tool pprof -top -focus`.
func parseFocus(out string) (matched, total time.Duration, err error) {
	m := regexp.MustCompile(`Showing nodes accounting for (\S+), \S+ of (\S+) total`).FindStringSubmatch(out)
	if m == nil {
		return 0, 0, fmt.Errorf("go tool pprof: no totals in\n%s", out)
	}
	if matched, err = time.ParseDuration(m[1]); err != nil {
		return 0, 0, err
	}
	total, err = time.ParseDuration(m[2])
	return matched, total, err
}

// mtlsShare is the CPU time that profiled plans spent in go-plugin's
// automatic mTLS (a P-521 key and a self-signed certificate made at every
// plugin start, on both sides, and the TLS handshake of every connection),
// in the provider processes and in OpenTofu, next to their total CPU time.
type mtlsShare struct {
	Plans                                int
	Provider, ProviderAll, Tofu, TofuAll time.Duration
	Sign, Verify                         time.Duration // one P-521 ECDSA signature and its check on this machine
}

// p521 times one P-521 ECDSA signature and one check of it (the median of 21).
func p521() (sign, verify time.Duration, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P521(), rand.Reader)
	if err != nil {
		return 0, 0, err
	}
	digest := sha512.Sum512([]byte("bench"))
	var signs, verifies []time.Duration
	for range 21 {
		start := time.Now()
		sig, err := ecdsa.SignASN1(rand.Reader, key, digest[:])
		if err != nil {
			return 0, 0, err
		}
		signs = append(signs, time.Since(start))
		start = time.Now()
		if !ecdsa.VerifyASN1(&key.PublicKey, digest[:], sig) {
			return 0, 0, errors.New("a P-521 signature did not verify")
		}
		verifies = append(verifies, time.Since(start))
	}
	return median(signs), median(verifies), nil
}

// mtlsFocus is what pprof counts as go-plugin's automatic mTLS: its
// certificate (generateCert) and the TLS handshakes.
const mtlsFocus = `go-plugin\.generateCert|crypto/tls\.\(\*Conn\)\.[hH]andshake`
