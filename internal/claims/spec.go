package claims

import "errors"

// Spec is a home claim to create. The cluster's client builds the
// claim as KubeSpawner would (its labels and annotations for User and
// Server, then Labels and Annotations), so that KubeSpawner adopts it at
// spawn.
type Spec struct {
	Namespace string
	Name      string
	User      string
	Server    string // "" for the default server's home
	Mode      string // its one access mode
	Class     string // its storage class; "" for the cluster's default
	Size      string // the requested storage, a quantity
	// Labels and Annotations are the configuration's, added to KubeSpawner's.
	Labels      map[string]string
	Annotations map[string]string
	// Shared: the shared layout's claim (shared_home.create_claim), no
	// user's: built without KubeSpawner's labels, marked as this
	// resource's (SharedCreatedAnnotation). User and Server are "".
	Shared bool
}

// StorageClass is the StorageClass an apply manages (storage_class), as it
// is written: every field set, defaults applied.
type StorageClass struct {
	Name          string
	Provisioner   string
	Parameters    map[string]string
	ReclaimPolicy string // Retain, Delete
	BindingMode   string // Immediate, WaitForFirstConsumer
	// AllowExpansion and MountOptions are the fields an update changes in
	// place. MountOptions nil clears them.
	AllowExpansion bool
	MountOptions   []string
	Labels         map[string]string
}

// ErrExists is a create's answer when an object of that name exists.
var ErrExists = errors.New("exists already")

// ErrChanged is a step's answer when the object it read changed before its
// write (another apply, a controller): nothing was written; the step is
// decided again from what the cluster shows now.
var ErrChanged = errors.New("changed since this step read it")
