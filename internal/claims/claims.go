package claims

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// Access modes of a claim (Kubernetes' names), defined once for every package.
const (
	RWO  = "ReadWriteOnce"
	RWX  = "ReadWriteMany"
	RWOP = "ReadWriteOncePod"
	ROX  = "ReadOnlyMany"
)

// ManagedBy is the app.kubernetes.io/managed-by value of every object this
// provider creates.
const ManagedBy = "terraform-provider-jupyter"

// SharedCreatedAnnotation marks the shared layout's claim that a
// jupyter_home_storage created (shared_home.create_claim), with the value
// SharedCreatedBy. It records who made the claim; nothing deletes or
// changes the claim because of it.
const (
	SharedCreatedAnnotation = "jupyter-infra.github.io/created-by"
	SharedCreatedBy         = "jupyter_home_storage.shared_home.create_claim"
)

// Claim is what the provider knows about one PersistentVolumeClaim.
type Claim struct {
	Name           string
	Namespace      string
	UID            string
	Username       string // raw JupyterHub username, from the annotation, else the label
	UsernameLabel  string // value of the hub.jupyter.org/username label
	Servername     string
	AccessModes    []string
	StorageClass   string // "" when the claim names no class
	ClassNamed     bool   // spec.storageClassName is set (perhaps to "")
	VolumeMode     string // spec.volumeMode; "" when unset
	Requested      string // spec.resources.requests.storage, a quantity string
	RequestedBytes int64
	Capacity       string // status.capacity.storage; "" until bound
	Phase          string // Pending, Bound or Lost
	VolumeName     string
	Labels         map[string]string
	Annotations    map[string]string
	Deleting       bool // deletionTimestamp is set
	// Resizing: an expansion has not finished (the claim requests more
	// than its status capacity, or carries a Resizing or
	// FileSystemResizePending condition); the node grows the filesystem
	// at the next mount.
	Resizing bool
}

// Ref identifies a claim: its namespace and its name. Names are unique
// only within a namespace (a template without a user field, such as
// "home", names every user's claim alike under per-user namespaces), so a
// claim is never looked up, keyed or named by its name alone.
type Ref struct{ Namespace, Name string }

func (r Ref) String() string { return r.Namespace + "/" + r.Name }

// Ref is the claim's identity short of its UID.
func (c Claim) Ref() Ref { return Ref{c.Namespace, c.Name} }

// Key is how a claim is addressed in a map of claims: the raw username, with
// "/servername" for a named server's claim. A claim without any username is
// keyed by its own name.
func (c Claim) Key() string {
	switch {
	case c.Username == "":
		return c.Name
	case c.Servername != "":
		return c.Username + "/" + c.Servername
	}
	return c.Username
}

// ByKey maps claims by Key. When two claims share a key (say a user whose
// claim was renamed by a template change still has the old one), the first
// by name keeps the key and the others are keyed "key (claim name)"; each
// such collision is described in the returned notes.
func ByKey(cs []Claim) (map[string]Claim, []string) {
	sorted := slices.Clone(cs)
	slices.SortFunc(sorted, func(a, b Claim) int {
		return cmp.Or(strings.Compare(a.Name, b.Name), strings.Compare(a.Namespace, b.Namespace))
	})
	out := make(map[string]Claim, len(sorted))
	var notes []string
	for _, c := range sorted {
		k := c.Key()
		if prev, dup := out[k]; dup {
			nk := fmt.Sprintf("%s (%s)", k, c.Name)
			notes = append(notes, fmt.Sprintf("claims %s and %s both belong to %q; the second is listed as %q", prev.Name, c.Name, k, nk))
			k = nk
		}
		out[k] = c
	}
	return out, notes
}

// ModeCounts counts claims per access mode; a claim with several modes counts once for each.
func ModeCounts(cs []Claim) map[string]int {
	out := map[string]int{}
	for _, c := range cs {
		for _, m := range c.AccessModes {
			out[m]++
		}
	}
	return out
}
