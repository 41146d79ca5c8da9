package migration

import "testing"

// A directory is in use when a pod mounts it, a directory above it or one
// below it, or the whole claim; not a sibling whose name it begins.
func TestDirectoryUse_uses(t *testing.T) {
	u := NewDirectoryUse([]string{"home/alice", "home/bob/notebooks", "carol/", "home/dave-2"})
	for dir, want := range map[string]bool{
		"home/alice": true, "home/alice/x": true, "home/bob": true, "home/bob/notebooks": true, "carol": true,
		"home": true, "home/dave": false, "home/al": false, "alice": false, "home/bobby": false, "carolyn": false,
	} {
		if got := u.Uses(dir); got != want {
			t.Errorf("%s: %v, want %v", dir, got, want)
		}
	}
	for _, whole := range []string{"", ".", "..", "../x", "/abs", "$(USER)"} {
		if !NewDirectoryUse([]string{whole}).Uses("anyone") {
			t.Errorf("%q: not the whole claim", whole)
		}
	}
	if NewDirectoryUse(nil).Uses("alice") {
		t.Error("no pod: in use")
	}
}

// Which sub-paths of the shared claim show directory home/alice: the
// directory, above it, in it, the root, paths that climb or are absolute,
// expressions; not its siblings, after cleaning.
func TestDirectoryUse_subPaths(t *testing.T) {
	for sub, want := range map[string]bool{
		"home/alice": true, "home/alice/": true, "./home/alice": true, "home": true, "home/alice/work": true,
		"": true, ".": true, "/": true, "..": true, "../x": true, "home/alice/../bob": false, "home/x/../alice": true, "$(X)": true,
		"home/alicia": false, "home/bob": false, "homes": false, "home/alice2": false,
	} {
		if got := NewDirectoryUse([]string{sub}).Uses("home/alice"); got != want {
			t.Errorf("%q: %v, want %v", sub, got, want)
		}
	}
}
