package execute

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/claims"
)

func testClass() claims.StorageClass {
	return claims.StorageClass{Name: "homes", Provisioner: "driver.longhorn.io", Parameters: map[string]string{"numberOfReplicas": "3"},
		ReclaimPolicy: "Retain", BindingMode: "Immediate", AllowExpansion: true, Labels: map[string]string{"app.kubernetes.io/managed-by": "x"}}
}

func TestDecideClass(t *testing.T) {
	want := testClass()
	with := func(f func(*claims.StorageClass)) *claims.StorageClass { c := testClass(); f(&c); return &c }
	for _, tc := range []struct {
		name   string
		prior  *claims.StorageClass
		exists bool
		out    ClassChange
	}{
		{"first apply", nil, false, ClassChange{Create: true}},
		{"first apply over a class of that name", nil, true, ClassChange{Update: true}},
		{"unchanged", with(func(*claims.StorageClass) {}), true, ClassChange{Update: true}},
		{"a mutable field changed", with(func(c *claims.StorageClass) { c.AllowExpansion, c.MountOptions = false, []string{"noatime"} }), true, ClassChange{Update: true}},
		{"deleted outside", with(func(*claims.StorageClass) {}), false, ClassChange{Create: true}},
		{"provisioner changed", with(func(c *claims.StorageClass) { c.Provisioner = "other" }), true,
			ClassChange{Replaced: []string{"provisioner"}, Delete: true, Create: true}},
		{"parameters and reclaim policy changed", with(func(c *claims.StorageClass) { c.Parameters = nil; c.ReclaimPolicy = "Delete" }), true,
			ClassChange{Replaced: []string{"parameters", "reclaim_policy"}, Delete: true, Create: true}},
		{"binding mode changed, the class gone", with(func(c *claims.StorageClass) { c.BindingMode = "WaitForFirstConsumer" }), false,
			ClassChange{Replaced: []string{"volume_binding_mode"}, Create: true}},
		{"renamed", with(func(c *claims.StorageClass) { c.Name = "old" }), false,
			ClassChange{Replaced: []string{"name"}, DeleteOld: "old", Create: true}},
		{"renamed onto a class that exists", with(func(c *claims.StorageClass) { c.Name = "old" }), true,
			ClassChange{Replaced: []string{"name"}, Delete: true, DeleteOld: "old", Create: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var existing *claims.StorageClass // the class of want's name now
			if tc.exists {
				existing = &want
			}
			got := DecideClass(want, tc.prior, existing)
			if !slices.Equal(got.Replaced, tc.out.Replaced) || got.Update != tc.out.Update || got.Delete != tc.out.Delete ||
				got.DeleteOld != tc.out.DeleteOld || got.Create != tc.out.Create {
				t.Fatalf("DecideClass = %+v, want %+v", got, tc.out)
			}
		})
	}
	// Empty and absent parameters are the same.
	a, b := testClass(), testClass()
	a.Parameters, b.Parameters = nil, map[string]string{}
	if c := ImmutableClassChanges(a, b); len(c) != 0 {
		t.Fatalf("nil and empty parameters differ: %v", c)
	}
}

// fakeClasses records the class calls, in order.
type fakeClasses struct {
	classes map[string]*claims.StorageClass
	fail    map[string]error // by call, "create homes"
	calls   []string
}

func (f *fakeClasses) call(c string) error {
	f.calls = append(f.calls, c)
	return f.fail[c]
}

func (f *fakeClasses) GetClass(_ context.Context, name string) (*claims.StorageClass, error) {
	if err := f.call("get " + name); err != nil {
		return nil, err
	}
	return f.classes[name], nil
}

func (f *fakeClasses) CreateClass(_ context.Context, sc claims.StorageClass) error {
	if err := f.call("create " + sc.Name); err != nil {
		return err
	}
	if f.classes[sc.Name] != nil {
		return claims.ErrExists
	}
	f.classes[sc.Name] = &sc
	return nil
}

func (f *fakeClasses) UpdateClass(_ context.Context, sc claims.StorageClass) error {
	return f.call("update " + sc.Name)
}

func (f *fakeClasses) DeleteClass(_ context.Context, name string) error {
	if err := f.call("delete " + name); err != nil {
		return err
	}
	delete(f.classes, name)
	return nil
}

func TestClass(t *testing.T) {
	want := testClass()
	old := testClass()
	old.Name = "old"
	changed := testClass()
	changed.Provisioner = "other"
	broke := errors.New("broke")
	for _, tc := range []struct {
		name     string
		prior    *claims.StorageClass
		existing []string
		fail     map[string]error
		calls    string
		done     string
		err      error
	}{
		{"create", nil, nil, nil, "get homes, create homes", "created", nil},
		{"update in place", &want, []string{"homes"}, nil, "get homes, update homes", "updated in place", nil},
		{"replace", &changed, []string{"homes"}, nil, "get homes, delete homes, create homes",
			"deleted (to be created again: provisioner changed); created", nil},
		{"rename: the old class's delete may fail", &old, []string{"old"}, map[string]error{"delete old": broke},
			"get homes, delete old, create homes", "created", nil},
		{"rename", &old, []string{"old"}, nil, "get homes, delete old, create homes", "deleted the class of the old name, old; created", nil},
		{"a failed delete stops before the create", &changed, []string{"homes"}, map[string]error{"delete homes": broke},
			"get homes, delete homes", "", broke},
		{"a failed get changes nothing", &changed, []string{"homes"}, map[string]error{"get homes": broke}, "get homes", "", broke},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeClasses{classes: map[string]*claims.StorageClass{}, fail: tc.fail}
			for _, n := range tc.existing {
				c := testClass()
				c.Name = n
				f.classes[n] = &c
			}
			out := Class(context.Background(), f, want, tc.prior)
			if got := strings.Join(f.calls, ", "); got != tc.calls {
				t.Errorf("calls %s, want %s", got, tc.calls)
			}
			if got := strings.Join(out.Done, "; "); got != tc.done {
				t.Errorf("done %q, want %q", got, tc.done)
			}
			if !errors.Is(out.Err, tc.err) || (tc.err == nil) != (out.Err == nil) {
				t.Errorf("error %v, want %v", out.Err, tc.err)
			}
		})
	}
}
