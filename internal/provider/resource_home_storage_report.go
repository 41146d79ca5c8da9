package provider

// One report of what an apply did not do: the StorageClass, the home
// claims' changes and the migrations, each user's failure with what was
// done and what to do.

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/claims"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/execute"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/kubespawner"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/migration"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/parallel"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/safety"
)

// reportOutcome adds one error that lists everything in o that failed,
// nothing when nothing did. A StorageClass that failed is reported on
// storage_class (apply then stopped before any claim).
func reportOutcome(diags *diag.Diagnostics, o execute.Outcome) {
	summary, detail := outcomeReport(o)
	switch {
	case summary == "":
	case o.Class != nil && o.Class.Err != nil:
		diags.AddAttributeError(path.Root("storage_class"), summary, detail)
	case o.Shared != nil && o.Shared.Err != nil:
		diags.AddAttributeError(path.Root("shared_home").AtName("create_claim"), summary, detail)
	default:
		diags.AddError(summary, detail)
	}
}

// outcomeReport is the summary and detail of the one error reportOutcome
// adds; "" when nothing failed. The summary names each part that failed
// (the StorageClass, the home claims' changes, the migrations); the detail
// has a section for each: every user whose change failed, with why, what
// was done, and what to do.
func outcomeReport(o execute.Outcome) (summary, detail string) {
	var heads, sections []string
	add := func(head, body string) {
		heads, sections = append(heads, head), append(sections, head+"\n"+body)
	}
	if c := o.Class; c != nil && c.Err != nil {
		done := "Nothing was changed."
		if len(c.Done) > 0 {
			done = "Done before the failure: the class was " + strings.Join(c.Done, "; ") + "."
		}
		add("Cannot create the StorageClass",
			fmt.Sprintf("StorageClass %s: %v\n%s No claim was changed: apply stops before the claims when the class they use cannot be made. "+
				"Fix the cause and apply again.", c.Name, c.Err, done))
	}
	if sh := o.Shared; sh != nil && sh.Err != nil {
		add("Cannot create the shared home claim",
			fmt.Sprintf("Claim %s/%s: %v\nNo home was changed: apply stops before the homes when the claim that holds them is not there and usable. "+
				"A claim made since the plan is kept as it is, never changed. Fix the cause and apply again.", sh.Namespace, sh.Name, sh.Err))
	}
	if head, body := homesReport(o); head != "" {
		add(head, body)
	}
	if head, body := migrationsReport(o.Migrations); head != "" {
		add(head, body)
	}
	return strings.Join(heads, "; "), strings.Join(sections, "\n\n")
}

// homesReport is the home claims' section of the report.
func homesReport(o execute.Outcome) (head, body string) {
	var lines []string
	failed, notAttempted := 0, 0
	for _, h := range o.Homes {
		switch {
		case h.Err == nil:
			continue
		case errors.Is(h.Err, parallel.ErrNotAttempted):
			notAttempted++
		default:
			lines = append(lines, fmt.Sprintf("%s (%s, %s): %v", h.Plan.Who(), h.Plan.ClaimName, h.Plan.Action, h.Err))
		}
		failed++
	}
	if failed == 0 {
		return "", ""
	}
	sort.Strings(lines)
	list := safety.CutLines(lines)
	if notAttempted > 0 {
		list = strings.TrimLeft(list+fmt.Sprintf("\n  %d more not attempted: the API server could not be reached", notAttempted), "\n")
	}
	head = fmt.Sprintf("%d of %d home claim changes failed", failed, len(o.Homes))
	if o.Unreachable {
		head += ": the API server could not be reached"
	}
	return head, "These users' claims were not changed as planned:\n" + list +
		fmt.Sprintf("\n%d change(s) were made; the state records them. Apply again to converge. No claim was deleted except by on_mode_change = \"recreate\".", len(o.Homes)-failed)
}

// migrationsReport is the migrations' section of the report.
func migrationsReport(ms []execute.MigrationOutcome) (head, body string) {
	var lines []string
	directoryCopies, merges := false, false
	for _, m := range ms {
		if m.Err == nil {
			continue
		}
		up := m.Plan
		where := "volume " + up.Volume
		switch up.Method {
		case migration.MethodCopy:
			where = "copy to " + up.Target
		case migration.MethodDirectoryCopy:
			where, directoryCopies = "copy of the user's directory of the shared claim", true
		case migration.MethodMerge:
			where, merges = "merge into the user's directory of the shared claim", true
		}
		lines = append(lines, fmt.Sprintf("%s (%s, %s, stopped at %s): %v", m.Key, up.ClaimName, where, m.Step, m.Err))
	}
	if len(lines) == 0 {
		return "", ""
	}
	sort.Strings(lines)
	lost := "\nNo data was lost: a rebound volume is retained from the first step on (its record is an annotation on the volume), and a copied home's source claim is never changed but for its record annotation. "
	if directoryCopies {
		lost += "A home copied out of the shared layout stays in its directory, which the copy only reads; the hub refuses the user's spawns until the copy is marked done (deleting the new claim undoes the move). "
	}
	if merges {
		lost += fmt.Sprintf("A home being merged into the shared claim stays on its claim, which the copy only reads; from the merge's record until the claim is marked merged the hub refuses the user's spawns "+
			"(removing annotation %s from the claim undoes a merge not yet marked; the directory keeps a partial copy to remove by hand). ", migration.MergeAnnotation)
	}
	return fmt.Sprintf("%d of %d home migrations did not finish", len(lines), len(ms)),
		"These users' homes were not fully migrated:\n" + safety.CutLines(lines) + lost +
			"Apply again to resume from the step reached; these users stay in legacy_users (co-located) until then."
}

// classOf is the StorageClass storage_class describes, its defaults
// applied. A value not known yet (at plan) is one no class has, so that it
// counts as changed.
func classOf(sc *scModel) claims.StorageClass {
	out := claims.StorageClass{Name: knownString(sc.Name), Provisioner: knownString(sc.Provisioner), ReclaimPolicy: reclaim(sc), BindingMode: binding(sc),
		AllowExpansion: sc.AllowVolumeExpansion.IsNull() || sc.AllowVolumeExpansion.ValueBool(),
		Labels:         map[string]string{kubespawner.LabelAppManagedBy: claims.ManagedBy}}
	if !sc.Parameters.IsNull() && !sc.Parameters.IsUnknown() {
		out.Parameters = map[string]string{}
		for k, v := range sc.Parameters.Elements() {
			s, _ := v.(types.String)
			out.Parameters[k] = knownString(s)
		}
	}
	if !sc.MountOptions.IsNull() && !sc.MountOptions.IsUnknown() {
		out.MountOptions = []string{}
		for _, v := range sc.MountOptions.Elements() {
			s, _ := v.(types.String)
			out.MountOptions = append(out.MountOptions, knownString(s))
		}
	}
	return out
}

// unknownValue stands for a value not known yet: no class has it.
const unknownValue = "\x00(known after apply)"

func knownString(v types.String) string {
	if v.IsUnknown() {
		return unknownValue
	}
	return v.ValueString()
}
