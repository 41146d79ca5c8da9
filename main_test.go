package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestQuietUnlessLogged(t *testing.T) {
	cases := []struct {
		name string
		env  map[string]string
		want map[string]string // variables expected afterwards ("" = unset)
	}{
		{"no log kept", map[string]string{},
			map[string]string{"TF_LOG_SDK": "OFF", "TF_LOG_SDK_PROTO": "OFF", "TF_LOG_SDK_FRAMEWORK": "OFF", "TF_LOG_PROVIDER": "OFF", "TF_LOG_PROVIDER_JUPYTER": "OFF"}},
		{"TF_LOG set", map[string]string{"TF_LOG": "debug"},
			map[string]string{"TF_LOG_SDK": "", "TF_LOG_SDK_FRAMEWORK": "", "TF_LOG_PROVIDER": ""}},
		{"TF_LOG_PROVIDER set", map[string]string{"TF_LOG_PROVIDER": "trace"},
			map[string]string{"TF_LOG_SDK": "", "TF_LOG_PROVIDER": "trace"}},
		{"explicit level kept", map[string]string{"TF_LOG_SDK_PROTO": "debug"},
			map[string]string{"TF_LOG_SDK_PROTO": "debug", "TF_LOG_SDK": "OFF"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			env := map[string]string{}
			for k, v := range c.env {
				env[k] = v
			}
			quietUnlessLogged(func(k string) string { return env[k] }, func(k, v string) error { env[k] = v; return nil })
			for k, v := range c.want {
				if env[k] != v {
					t.Errorf("%s = %q, want %q", k, env[k], v)
				}
			}
		})
	}
}

// The provider binary must not link client-go's full clientset: it registers
// every Kubernetes API group at start, and OpenTofu starts the provider three
// or four times per command (kube.NewAPI knows only the groups it uses).
func TestBinaryLinksOnlyItsAPIGroups(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var groups []string
	for _, pkg := range strings.Fields(string(out)) {
		if pkg == "k8s.io/client-go/kubernetes" || strings.HasPrefix(pkg, "k8s.io/client-go/kubernetes/") {
			t.Errorf("the provider links %s", pkg)
		}
		if strings.HasPrefix(pkg, "k8s.io/api/") {
			groups = append(groups, pkg)
		}
	}
	// core/v1, storage/v1 and batch/v1, and what they import themselves
	// (the full clientset links about sixty).
	if len(groups) > 6 {
		t.Errorf("the provider links %d API group packages, want the few it uses: %v", len(groups), groups)
	}
	if len(groups) == 0 {
		t.Fatalf("go list found no k8s.io/api package: the check does not see the dependencies:\n%s", out)
	}
}

// cpuProfile writes nothing without a directory, and a CPU profile that
// pprof reads into provider-<pid>.pprof with one.
func TestCPUProfile(t *testing.T) {
	stop, err := cpuProfile("", 1)
	if err != nil {
		t.Fatal(err)
	}
	stop()
	dir := t.TempDir()
	if stop, err = cpuProfile(dir, 4242); err != nil {
		t.Fatal(err)
	}
	stop()
	out, err := exec.Command("go", "tool", "pprof", "-raw", filepath.Join(dir, "provider-4242.pprof")).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "PeriodType: cpu") {
		t.Fatalf("go tool pprof: %v\n%s", err, out)
	}
	if _, err := cpuProfile(filepath.Join(dir, "missing"), 1); err == nil || !strings.Contains(err.Error(), cpuProfileVar) {
		t.Fatalf("a directory that does not exist: %v, want an error naming %s", err, cpuProfileVar)
	}
}
