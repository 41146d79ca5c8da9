package migration

import "github.com/jupyter-infra/terraform-provider-jupyter/internal/claims"

// Copy is one user's copy.
type Copy struct {
	User         string
	Namespace    string
	Source       string // the home claim, never changed but for its record annotation
	Target       string // the new claim
	To           string // its access mode
	StorageClass string // its class; "" for the cluster default
	Capacity     string // at least; the source's request when larger
	Image        string // with rsync
	ExtraLabels  map[string]string
}

// Split is one user's move from a directory of the shared claim to a
// claim of their own, zero copy.
type Split struct {
	User      string
	Shared    string // the shared claim, in Spec.Namespace
	Directory string // the user's directory in it
	// MovedFrom are the places the directory had under earlier settings
	// (kubespawner.Directory): a missing directory is the one of them that
	// exists, renamed, and a pod using one of them uses the home.
	MovedFrom []string
	Spec      claims.Spec // the user's new claim: name, mode, size, labels
	// The owner and mode of a directory the move creates, and the image
	// that creates it (sh, mkdir, chown, chmod).
	UID, GID int64
	Mode     string
	Image    string
}

// DirectoryCopy is one user's move from a directory of the shared claim to
// a new claim of the configured class, by a copy.
type DirectoryCopy struct {
	User      string
	Shared    string      // the shared claim, in Spec.Namespace
	Directory string      // the user's directory in it
	MovedFrom []string    // as Split.MovedFrom
	Spec      claims.Spec // the user's new claim: name, class, mode, size, labels
	// The owner and mode of a directory the move creates, and the image
	// that creates it (sh, mkdir, chown, chmod).
	UID, GID int64
	Mode     string
	Image    string
	// CopyImage is the copy Job's image (rsync): migration.copy_image.
	CopyImage string
}

// Merge is one user's move from a claim of their own into their directory
// of the shared claim, by a copy.
type Merge struct {
	User      string
	Namespace string
	Claim     string // the user's claim
	ClaimUID  string // its UID when the plan read it
	Shared    string // the shared claim
	Directory string // the user's directory in it
	// Earlier are the places the home had under earlier settings of the
	// shared layout, expanded for the user: one that holds files refuses
	// the merge (the hub would find the home at two places).
	Earlier []string
	// The owner and mode of a directory the merge creates, and the image
	// that creates it (sh, ls, mkdir, chown, chmod).
	UID, GID int64
	Mode     string
	Image    string
	// CopyImage is the copy Job's image (rsync): migration.copy_image.
	CopyImage string
}
