package safety

// Pod Security admission: whether the API server will admit the pods of the
// Jobs a plan's copies run (the copy, and the verification before an old
// home's delete), decided before apply from the namespaces' labels.

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/claims"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/migration"
)

// The labels of Kubernetes' Pod Security admission on a namespace: the
// level (privileged, baseline, restricted) it enforces (a pod that violates
// it is refused), warns of (the client that creates a pod or a Job is
// warned) and audits (the audit log records it).
const (
	PodSecurityEnforceLabel = "pod-security.kubernetes.io/enforce"
	PodSecurityWarnLabel    = "pod-security.kubernetes.io/warn"
	PodSecurityAuditLabel   = "pod-security.kubernetes.io/audit"
)

// Pod Security levels.
const (
	PodSecurityPrivileged = "privileged"
	PodSecurityBaseline   = "baseline"
	PodSecurityRestricted = "restricted"
)

// PodSecurity is what a namespace's labels say of Pod Security admission:
// each label's value, "" when the label is not set (the cluster's default
// applies, which the API does not show; it is privileged unless the API
// server's admission configuration says otherwise).
type PodSecurity struct {
	Enforce, Warn, Audit string
}

// PodSecurityOf reads a namespace's labels.
func PodSecurityOf(labels map[string]string) PodSecurity {
	return PodSecurity{Enforce: labels[PodSecurityEnforceLabel], Warn: labels[PodSecurityWarnLabel], Audit: labels[PodSecurityAuditLabel]}
}

// refusesJobs reports whether a level refuses the copy Jobs' pods: they run
// as root with capabilities baseline allows (kube.JobCapabilities), so
// privileged and baseline admit them and restricted does not. A value that
// is no level counts as restricted, as the admission plugin reads it for
// enforce.
func refusesJobs(level string) bool {
	switch level {
	case "", PodSecurityPrivileged, PodSecurityBaseline:
		return false
	}
	return true
}

// JobNamespaces are the namespaces in which applying res runs a pod: a
// copy's Job (a copy planned or resumed) or a verification Job (before an
// old home's delete), sorted. Their labels are what CheckPodSecurity needs.
func JobNamespaces(res *Result) []string {
	seen := map[string]bool{}
	for up := range res.All() {
		if runsJob(up) {
			seen[up.Namespace] = true
		}
	}
	return slices.Sorted(maps.Keys(seen))
}

func runsJob(up *UserPlan) bool {
	return up.Action == ActionMigrate && (up.Method == migration.MethodCopy || up.Method == migration.MethodSplit || up.Method == migration.MethodDirectoryCopy || up.Method == migration.MethodMerge) || up.Action == ActionDeleteSource
}

// CheckPodSecurity says before apply what Pod Security admission will do
// to the Jobs applying res runs, from the labels of their namespaces
// (levels, by namespace; JobNamespaces lists them). A namespace that
// enforces restricted (or a value that is no level) would refuse their pods:
// the Job would be created and never run, so the plan fails, naming the
// namespace, the label, the users and the choices. One that only warns or
// audits at restricted admits them: a warning says what the API server
// will report. Nothing is said where baseline or privileged is enforced, or
// nothing is labelled.
func CheckPodSecurity(res *Result, levels map[string]PodSecurity) {
	refused, reported := jobUsers(res, levels)
	if len(refused) > 0 {
		res.Errors = append(res.Errors, refusedJobs(refused, levels))
		res.Class = ClassNone
	}
	if len(reported) > 0 {
		res.Warnings = append(res.Warnings, reportedJobs(reported, levels))
	}
}

// namespaceJobs are the users whose Jobs run in one namespace: copies, and
// verifications before an old home's delete.
type namespaceJobs struct{ copies, verifies []string }

// jobUsers sorts the users whose Jobs applying res runs by namespace: those
// whose namespace refuses the Jobs' pods, and those whose namespace admits
// them and reports them (warn or audit at restricted).
func jobUsers(res *Result, levels map[string]PodSecurity) (refused, reported map[string]*namespaceJobs) {
	refused, reported = map[string]*namespaceJobs{}, map[string]*namespaceJobs{}
	for up := range res.All() {
		if !runsJob(up) {
			continue
		}
		ps := levels[up.Namespace]
		var m map[string]*namespaceJobs
		switch {
		case refusesJobs(ps.Enforce):
			m = refused
		case ps.Warn == PodSecurityRestricted || ps.Audit == PodSecurityRestricted:
			m = reported
		default:
			continue
		}
		u := m[up.Namespace]
		if u == nil {
			u = &namespaceJobs{}
			m[up.Namespace] = u
		}
		if up.Action == ActionDeleteSource {
			u.verifies = append(u.verifies, up.Who())
		} else {
			u.copies = append(u.copies, up.Who())
		}
	}
	return refused, reported
}

// line names namespace ns, its label and the Jobs that run in it.
func (u *namespaceJobs) line(ns string, label string) string {
	var parts []string
	if len(u.copies) > 0 {
		parts = append(parts, "copy of "+CutInline(u.copies))
	}
	if len(u.verifies) > 0 {
		parts = append(parts, "verification before deleting the old home of "+CutInline(u.verifies))
	}
	return fmt.Sprintf("namespace %s (%s): %s", ns, label, strings.Join(parts, "; "))
}

// refusedJobs is the error naming the namespaces that would refuse the
// Jobs' pods, and the choices.
func refusedJobs(refused map[string]*namespaceJobs, levels map[string]PodSecurity) claims.Finding {
	nss := slices.Sorted(maps.Keys(refused))
	list := Cut(len(nss), func(i int) string {
		return refused[nss[i]].line(nss[i], fmt.Sprintf("%s=%s", PodSecurityEnforceLabel, levels[nss[i]].Enforce))
	})
	ns, back := "NAMESPACE", "its value listed above"
	if len(nss) == 1 {
		ns, back = nss[0], levels[nss[0]].Enforce
	}
	return claims.Finding{Attribute: "migration", Summary: "Pod Security admission would refuse the copy Jobs' pods", Detail: fmt.Sprintf("A copy runs a Job in the home's namespace: rsync as root with only the capabilities CHOWN, DAC_OVERRIDE, FOWNER and FSETID, "+
		"which keeping every file's owner, mode, ACLs and extended attributes needs (and so does the verification before an old home's delete). "+
		"Pod Security's restricted level admits no pod that runs as root, and these namespaces enforce it, so apply would create Jobs whose pods are never admitted:\n%s\n"+
		"Nothing was changed. Choose one:\n"+
		"  - label the namespace baseline for the migration, which these pods pass: kubectl label namespace %s %s=%s --overwrite, and set it back to %s once migration_status shows the copies done;\n"+
		"  - use migration.method = \"rebind\" where the backend allows it (Longhorn, NFS, EFS, CephFS, or a driver listed in migration.rebind_drivers): no pod runs;\n"+
		"  - leave these homes as they are for now with on_mode_change = \"keep_existing\" (for a verification: migration.delete_copied_sources = false keeps the old homes).",
		list, ns, PodSecurityEnforceLabel, PodSecurityBaseline, back)}
}

// reportedJobs is the warning naming the namespaces that admit the Jobs'
// pods and report them.
func reportedJobs(reported map[string]*namespaceJobs, levels map[string]PodSecurity) claims.Finding {
	nss := slices.Sorted(maps.Keys(reported))
	list := Cut(len(nss), func(i int) string {
		ps := levels[nss[i]]
		var labels []string
		if ps.Warn == PodSecurityRestricted {
			labels = append(labels, PodSecurityWarnLabel+"="+ps.Warn)
		}
		if ps.Audit == PodSecurityRestricted {
			labels = append(labels, PodSecurityAuditLabel+"="+ps.Audit)
		}
		return reported[nss[i]].line(nss[i], strings.Join(labels, ", "))
	})
	return claims.Finding{Attribute: "migration", Summary: "Pod Security will report the copy Jobs", Detail: fmt.Sprintf("These namespaces enforce a level that admits the copy Jobs' pods, and warn of or audit restricted, which they violate (they run as root with CHOWN, DAC_OVERRIDE, FOWNER and FSETID to keep owners, modes, ACLs and extended attributes):\n%s\n"+
		"The copies run; the API server warns when each Job is created (warn) and records it in the audit log (audit).", list)}
}
