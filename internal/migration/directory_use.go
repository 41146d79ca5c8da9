package migration

import (
	"path"
	"slices"
	"strings"
)

// DirectoryUse is what running pods mount of the shared claim, as a plan
// needs it to tell which users' directories are in use (a move by copy
// waits for them): the sub-paths mounted, and whether some pod mounts all
// of it (no sub-path, a sub-path expression, or one that climbs out).
type DirectoryUse struct {
	whole    bool
	subPaths []string // cleaned, sorted
}

// NewDirectoryUse is the use of the shared claim by mounts of subs ("" for
// a mount of the whole claim or of a sub-path expression).
func NewDirectoryUse(subs []string) DirectoryUse {
	var u DirectoryUse
	for _, sub := range subs {
		s := path.Clean(sub)
		if sub == "" || s == "." || path.IsAbs(s) || s == ".." || strings.HasPrefix(s, "../") || strings.Contains(s, "$") {
			u.whole = true
			continue
		}
		u.subPaths = append(u.subPaths, s)
	}
	slices.Sort(u.subPaths)
	u.subPaths = slices.Compact(u.subPaths)
	return u
}

// Uses reports whether some pod mounts dir, a directory above it or one
// below it.
func (u DirectoryUse) Uses(dir string) bool {
	if u.whole {
		return true
	}
	for p := dir; ; {
		if _, ok := slices.BinarySearch(u.subPaths, p); ok {
			return true
		}
		i := strings.LastIndex(p, "/")
		if i < 0 {
			break
		}
		p = p[:i]
	}
	i, _ := slices.BinarySearch(u.subPaths, dir+"/")
	return i < len(u.subPaths) && strings.HasPrefix(u.subPaths[i], dir+"/")
}
