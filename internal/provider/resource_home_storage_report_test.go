package provider

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/claims"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/execute"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/migration"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/parallel"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/safety"
)

// An apply whose home changes and migrations failed gives one error that
// names each user, what was done and what to do.
func TestReportOutcome_oneError(t *testing.T) {
	home := func(user string, action safety.Action, err error) execute.HomeOutcome {
		return execute.HomeOutcome{Plan: safety.UserPlan{User: user, ClaimName: "claim-" + user, Action: action}, Err: err}
	}
	notAttempted := fmt.Errorf("%w: the API server could not be reached: refused", parallel.ErrNotAttempted)
	o := execute.Outcome{
		Class: &execute.ClassOutcome{Name: "homes", Done: []string{"updated in place"}},
		Homes: []execute.HomeOutcome{home("alice", safety.ActionCreate, nil), home("bob", safety.ActionResize, errors.New("connection refused")),
			home("carol", safety.ActionCreate, notAttempted)},
		Unreachable: true,
		Migrations: []execute.MigrationOutcome{
			{Migration: execute.Migration{Key: "dana", Plan: safety.UserPlan{User: "dana", ClaimName: "claim-dana", Method: migration.MethodRebind, Volume: "pv-1"}},
				Step: migration.StepRetained, Err: errors.New("delete-claim: pod(s) jupyter-dana use it")},
			{Migration: execute.Migration{Key: "erin", Plan: safety.UserPlan{User: "erin", ClaimName: "claim-erin", Method: migration.MethodRebind, Volume: "pv-2"}},
				Step: migration.StepDone},
		},
	}
	var diags diag.Diagnostics
	reportOutcome(&diags, o)
	if len(diags) != 1 || diags.ErrorsCount() != 1 {
		t.Fatalf("%d diagnostics, want one error: %v", len(diags), diags)
	}
	d := diags[0]
	if want := "2 of 3 home claim changes failed: the API server could not be reached; 1 of 2 home migrations did not finish"; d.Summary() != want {
		t.Errorf("summary %q, want %q", d.Summary(), want)
	}
	for _, want := range []string{
		"bob (claim-bob, resize): connection refused",
		"1 more not attempted: the API server could not be reached",
		"1 change(s) were made; the state records them. Apply again to converge.",
		`No claim was deleted except by on_mode_change = "recreate".`,
		"dana (claim-dana, volume pv-1, stopped at retained): delete-claim: pod(s) jupyter-dana use it",
		"No data was lost",
		"Apply again to resume from the step reached",
	} {
		if !strings.Contains(d.Detail(), want) {
			t.Errorf("the detail does not say %q:\n%s", want, d.Detail())
		}
	}
	if strings.Contains(d.Detail(), "alice") || strings.Contains(d.Detail(), "erin") || strings.Contains(d.Detail(), "StorageClass") {
		t.Errorf("the detail names a change that did not fail:\n%s", d.Detail())
	}

	diags = nil
	reportOutcome(&diags, execute.Outcome{Class: o.Class, Homes: o.Homes[:1]})
	if len(diags) != 0 {
		t.Fatalf("nothing failed, yet: %v", diags)
	}
}

// A move by copy out of the shared layout, and a merge into it, that
// stopped are reported by what they do (neither has a volume), saying
// where the home is meanwhile (the directory; the claim, and how to undo
// the merge), and nothing of the other.
func TestReportOutcome_directoryMoves(t *testing.T) {
	for _, tc := range []struct {
		method  migration.Method
		step    migration.Step
		err     string
		want    []string
		wantNot string
	}{
		{migration.MethodDirectoryCopy, migration.StepCopying, "wait-directory-copy: copy Job failed", []string{
			"alice (claim-alice, copy of the user's directory of the shared claim, stopped at copying): wait-directory-copy: copy Job failed",
			"A home copied out of the shared layout stays in its directory",
		}, "merged into the shared claim"},
		{migration.MethodMerge, migration.StepRecorded, "start-merge: forbidden", []string{
			"alice (claim-alice, merge into the user's directory of the shared claim, stopped at recorded): start-merge: forbidden",
			"A home being merged into the shared claim stays on its claim",
			"removing annotation " + migration.MergeAnnotation,
		}, "copied out of the shared layout"},
	} {
		var diags diag.Diagnostics
		reportOutcome(&diags, execute.Outcome{Migrations: []execute.MigrationOutcome{
			{Migration: execute.Migration{Key: "alice", Plan: safety.UserPlan{User: "alice", ClaimName: "claim-alice", Method: tc.method}},
				Step: tc.step, Err: errors.New(tc.err)},
		}})
		if len(diags) != 1 || diags.ErrorsCount() != 1 {
			t.Fatalf("%s: %d diagnostics, want one error: %v", tc.method, len(diags), diags)
		}
		d := diags[0].Detail()
		for _, want := range tc.want {
			if !strings.Contains(d, want) {
				t.Errorf("%s: the detail does not say %q:\n%s", tc.method, want, d)
			}
		}
		if strings.Contains(d, "volume ,") || strings.Contains(d, tc.wantNot) {
			t.Errorf("%s: the detail names an empty volume or says %q:\n%s", tc.method, tc.wantNot, d)
		}
	}
}

// A StorageClass that cannot be made is one error on storage_class, which
// says that no claim was changed and what was done.
func TestReportOutcome_class(t *testing.T) {
	var diags diag.Diagnostics
	reportOutcome(&diags, execute.Outcome{Class: &execute.ClassOutcome{Name: "homes", Err: errors.New("forbidden"),
		Done: []string{"deleted (to be created again: provisioner changed)"}}})
	if len(diags) != 1 || diags.ErrorsCount() != 1 {
		t.Fatalf("%d diagnostics, want one error: %v", len(diags), diags)
	}
	d, ok := diags[0].(diag.DiagnosticWithPath)
	if !ok || d.Path().String() != "storage_class" {
		t.Fatalf("the error is not on storage_class: %v", diags[0])
	}
	for _, want := range []string{"StorageClass homes: forbidden", "deleted (to be created again: provisioner changed)", "No claim was changed"} {
		if !strings.Contains(d.Detail(), want) {
			t.Errorf("the detail does not say %q:\n%s", want, d.Detail())
		}
	}
}

// The fields the plan shows as replacing the class are the ones apply
// replaces it for (execute.ImmutableClassChanges); a value not known yet
// counts as changed, an empty map as none.
func TestImmutableClassChanges(t *testing.T) {
	base := func() *scModel {
		return &scModel{Name: types.StringValue("homes"), Provisioner: types.StringValue("driver.longhorn.io"),
			Parameters: types.MapNull(types.StringType), ReclaimPolicy: types.StringNull(), VolumeBindingMode: types.StringNull(),
			AllowVolumeExpansion: types.BoolNull(), MountOptions: types.ListNull(types.StringType)}
	}
	params := func(kv map[string]string) types.Map {
		v, _ := types.MapValueFrom(t.Context(), types.StringType, kv)
		return v
	}
	for _, tc := range []struct {
		name string
		now  func(*scModel)
		want []string
	}{
		{"none", func(*scModel) {}, nil},
		{"defaults spelled out", func(m *scModel) {
			m.ReclaimPolicy, m.VolumeBindingMode = types.StringValue("Retain"), types.StringValue("Immediate")
			m.Parameters = params(map[string]string{})
		}, nil},
		{"mutable fields only", func(m *scModel) { m.AllowVolumeExpansion = types.BoolValue(false) }, nil},
		{"provisioner unknown", func(m *scModel) { m.Provisioner = types.StringUnknown() }, []string{"provisioner"}},
		{"parameters", func(m *scModel) { m.Parameters = params(map[string]string{"a": "b"}) }, []string{"parameters"}},
		{"a parameter unknown", func(m *scModel) {
			m.Parameters = types.MapValueMust(types.StringType, map[string]attr.Value{"a": types.StringUnknown()})
		}, []string{"parameters"}},
		{"name and binding", func(m *scModel) {
			m.Name, m.VolumeBindingMode = types.StringValue("other"), types.StringValue("WaitForFirstConsumer")
		}, []string{"volume_binding_mode", "name"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			now := base()
			tc.now(now)
			if got := immutableClassChanges(base(), now); !slices.Equal(got, tc.want) {
				t.Fatalf("immutableClassChanges = %v, want %v", got, tc.want)
			}
		})
	}
	// The class apply writes carries the provider's label.
	if c := classOf(base()); c.Labels["app.kubernetes.io/managed-by"] != claims.ManagedBy || c.ReclaimPolicy != "Retain" || !c.AllowExpansion || c.MountOptions != nil {
		t.Fatalf("classOf = %+v", c)
	}
}
