package execute

import (
	"context"
	"maps"
	"strings"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/claims"
)

// Classes is what the StorageClass's step reads and changes. internal/kube
// implements it.
type Classes interface {
	// GetClass returns the named class as it is now; nil when it does not exist.
	GetClass(ctx context.Context, name string) (*claims.StorageClass, error)
	// CreateClass creates a class; one that exists already is an error.
	CreateClass(ctx context.Context, sc claims.StorageClass) error
	// UpdateClass sets the fields a class can change in place
	// (AllowExpansion, MountOptions, Labels).
	UpdateClass(ctx context.Context, sc claims.StorageClass) error
	// DeleteClass deletes a class; a missing one is not an error. Claims
	// and volumes provisioned from it keep working.
	DeleteClass(ctx context.Context, name string) error
}

// ImmutableClassChanges lists the fields of a class that cannot change in
// place and differ between was and now (the class is then deleted and
// created again). The plan shows them; apply acts on them (DecideClass).
func ImmutableClassChanges(was, now claims.StorageClass) []string {
	var out []string
	if was.Provisioner != now.Provisioner {
		out = append(out, "provisioner")
	}
	if !maps.Equal(was.Parameters, now.Parameters) {
		out = append(out, "parameters")
	}
	if was.ReclaimPolicy != now.ReclaimPolicy {
		out = append(out, "reclaim_policy")
	}
	if was.BindingMode != now.BindingMode {
		out = append(out, "volume_binding_mode")
	}
	if was.Name != now.Name {
		out = append(out, "name")
	}
	return out
}

// ClassChange is what apply does to the claims.StorageClass it manages, in this
// order: delete the class of the wanted name (Delete), delete the class of
// the last apply's name (DeleteOld; a failure there is not an error: that
// class is no longer this resource's), then create the class (Create) or
// update it in place (Update). The zero value does nothing.
type ClassChange struct {
	Replaced  []string // the immutable fields that changed since the last apply
	Update    bool
	Delete    bool
	DeleteOld string
	Create    bool
}

// DecideClass decides what apply does to the class it manages: want is the
// configured class, prior the one the last apply wrote (nil when none),
// existing the class of want's name as it is now (nil when none). A class
// that exists is updated in place unless a field that cannot change in
// place changed since the last apply: then it is deleted and created again.
// A renamed class is created under its new name, and the class of the old
// name is deleted.
func DecideClass(want claims.StorageClass, prior, existing *claims.StorageClass) ClassChange {
	exists := existing != nil
	var c ClassChange
	if prior != nil {
		c.Replaced = ImmutableClassChanges(*prior, want)
	}
	replace := len(c.Replaced) > 0
	if exists && !replace {
		c.Update = true
		return c
	}
	c.Delete = exists
	if replace && prior.Name != want.Name {
		c.DeleteOld = prior.Name
	}
	c.Create = true
	return c
}

// ClassOutcome is what the StorageClass's step came to.
type ClassOutcome struct {
	Name   string
	Change ClassChange
	// Done lists what was done, in order ("deleted", "deleted the old class
	// x", "created", "updated in place").
	Done []string
	Err  error
}

// Class makes the claims.StorageClass the configuration describes (DecideClass).
func Class(ctx context.Context, cl Classes, want claims.StorageClass, prior *claims.StorageClass) ClassOutcome {
	out := ClassOutcome{Name: want.Name}
	existing, err := cl.GetClass(ctx, want.Name)
	if err != nil {
		out.Err = err
		return out
	}
	c := DecideClass(want, prior, existing)
	out.Change = c
	if c.Update {
		if out.Err = cl.UpdateClass(ctx, want); out.Err == nil {
			out.Done = append(out.Done, "updated in place")
		}
		return out
	}
	if c.Delete {
		if out.Err = cl.DeleteClass(ctx, want.Name); out.Err != nil {
			return out
		}
		out.Done = append(out.Done, "deleted (to be created again: "+strings.Join(c.Replaced, ", ")+" changed)")
	}
	if c.DeleteOld != "" {
		if cl.DeleteClass(ctx, c.DeleteOld) == nil {
			out.Done = append(out.Done, "deleted the class of the old name, "+c.DeleteOld)
		}
	}
	if c.Create {
		if out.Err = cl.CreateClass(ctx, want); out.Err == nil {
			out.Done = append(out.Done, "created")
		}
	}
	return out
}
