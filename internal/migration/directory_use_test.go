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
