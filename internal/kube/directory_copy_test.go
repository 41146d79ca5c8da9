package kube

import "testing"

// related: which subPaths of the shared claim show the user's directory.
func TestRelated(t *testing.T) {
	for sub, want := range map[string]bool{
		"home/alice": true, "home/alice/": true, "./home/alice": true, "home": true, "home/alice/work": true,
		"": true, ".": true, "/": true, "..": true, "../x": true, "home/alice/../bob": false, "home/x/../alice": true, "$(X)": true,
		"home/alicia": false, "home/bob": false, "homes": false, "home/alice2": false,
	} {
		if got := related(sub, "home/alice"); got != want {
			t.Errorf("%q: %v, want %v", sub, got, want)
		}
	}
}
