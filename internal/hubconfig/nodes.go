package hubconfig

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/claims"
)

// Node is what the checks need of a live Node: its labels, taints and
// allocatable resources.
type Node struct {
	Name          string
	Labels        map[string]string
	Taints        []Taint
	CPUMillis     int64
	MemBytes      int64
	Extended      map[string]int64 // extended resources, e.g. nvidia.com/gpu
	Unschedulable bool             // cordoned
}

// Taint is a node taint.
type Taint struct {
	Key, Value, Effect string
}

// Demand is what one server of a profile needs from a node.
type Demand struct {
	NodeSelector map[string]string
	Tolerations  []Toleration
	CPUMillis    int64
	MemBytes     int64
	Extended     map[string]int64
}

// Demand returns the profile's scheduling needs.
func (p Profile) Demand() Demand {
	d := Demand{NodeSelector: p.NodeSelector, Tolerations: p.Tolerations}
	d.CPUMillis, d.MemBytes = p.Guarantees()
	if p.GPU != nil && p.GPU.Count > 0 {
		d.Extended = map[string]int64{p.GPU.Resource(): p.GPU.Count}
	}
	return d
}

// Tolerates reports whether t tolerates the taint (the scheduler's rule).
func (t Toleration) Tolerates(taint Taint) bool {
	if t.Effect != "" && t.Effect != taint.Effect {
		return false
	}
	if t.Operator == "Exists" {
		return t.Key == "" || t.Key == taint.Key
	}
	return t.Key == taint.Key && t.Value == taint.Value
}

// Why returns the reasons the node cannot run a server with demand d; none
// means it can.
func (n Node) Why(d Demand) []string {
	var out []string
	if n.Unschedulable {
		out = append(out, "cordoned")
	}
	for _, k := range sortedKeys(d.NodeSelector) {
		if v, ok := n.Labels[k]; !ok || v != d.NodeSelector[k] {
			out = append(out, fmt.Sprintf("no label %s=%s", k, d.NodeSelector[k]))
		}
	}
	for _, t := range n.Taints {
		if t.Effect == "PreferNoSchedule" {
			continue
		}
		if !slices.ContainsFunc(d.Tolerations, func(tol Toleration) bool { return tol.Tolerates(t) }) {
			out = append(out, fmt.Sprintf("untolerated taint %s", taintString(t)))
		}
	}
	out = append(out, n.short(d)...)
	return out
}

// short lists the resources the node's allocatable cannot give.
func (n Node) short(d Demand) []string {
	var out []string
	if d.CPUMillis > n.CPUMillis {
		out = append(out, fmt.Sprintf("allocatable CPU %s < %s", Cores(n.CPUMillis), Cores(d.CPUMillis)))
	}
	if d.MemBytes > n.MemBytes {
		out = append(out, fmt.Sprintf("allocatable memory %s < %s", Bytes(n.MemBytes), Bytes(d.MemBytes)))
	}
	for _, r := range sortedKeys(d.Extended) {
		if d.Extended[r] > n.Extended[r] {
			out = append(out, fmt.Sprintf("allocatable %s %d < %d", r, n.Extended[r], d.Extended[r]))
		}
	}
	return out
}

// ProfileCheck is how CheckProfile judges a profile.
type ProfileCheck struct {
	// RequireSchedulable makes guarantees that exceed every node's
	// allocatable an error (jupyter_spawner_profile's require_schedulable);
	// without it they are a warning like any other misfit.
	RequireSchedulable bool
}

// CheckProfile checks a profile against the live nodes. It warns when no
// node can run it now (an autoscaler may still add one), and with
// check.RequireSchedulable it is an error that the guarantees exceed every
// node's allocatable.
func CheckProfile(name string, d Demand, nodes []Node, check ProfileCheck) (errs, warns []claims.Finding) {
	if len(nodes) == 0 {
		warns = append(warns, claims.Finding{Attribute: "node_selector", Summary: "No nodes to check the profile against", Detail: fmt.Sprintf("The cluster lists no nodes, so whether profile %q can be scheduled is not known. A cluster autoscaler may add nodes when a server starts.", name)})
		return nil, warns
	}
	var reasons []string
	for _, n := range nodes {
		why := n.Why(d)
		if len(why) == 0 {
			return nil, nil
		}
		reasons = append(reasons, fmt.Sprintf("  %s: %s", n.Name, strings.Join(why, "; ")))
	}
	bigEnough := slices.ContainsFunc(nodes, func(n Node) bool { return len(n.short(d)) == 0 })
	if !bigEnough && check.RequireSchedulable {
		errs = append(errs, claims.Finding{Attribute: "require_schedulable", Summary: "No node is large enough for the profile's guarantees", Detail: fmt.Sprintf("Profile %q guarantees %s, which is more than the allocatable resources of every node:\n%s\n"+
			"Lower cpu_guarantee, mem_guarantee or gpu.count, add larger nodes, or set require_schedulable = false if an autoscaler adds larger nodes on demand.",
			name, d.String(), strings.Join(reasons, "\n"))})
		return errs, nil
	}
	warns = append(warns, claims.Finding{Attribute: "node_selector", Summary: "No current node can run this profile", Detail: fmt.Sprintf("No node satisfies profile %q (node selector, tolerations against taints, %s):\n%s\n"+
		"A server with this profile stays Pending until a node fits; a cluster autoscaler may add one. "+
		"Otherwise fix the node_selector or tolerations, or lower the guarantees.",
		name, d.String(), strings.Join(reasons, "\n"))})
	return nil, warns
}

// String describes the resources of a demand.
func (d Demand) String() string {
	parts := []string{"CPU " + Cores(d.CPUMillis), "memory " + Bytes(d.MemBytes)}
	for _, r := range sortedKeys(d.Extended) {
		parts = append(parts, fmt.Sprintf("%s %d", r, d.Extended[r]))
	}
	return strings.Join(parts, ", ")
}

// Cores writes millicores as cores.
func Cores(m int64) string {
	if m%1000 == 0 {
		return fmt.Sprintf("%d", m/1000)
	}
	return strings.TrimRight(strings.TrimRight(fmt.Sprintf("%.3f", float64(m)/1000), "0"), ".")
}

// Bytes writes a size in binary units.
func Bytes(b int64) string {
	for _, u := range []struct {
		s string
		n int64
	}{{"Ti", 1 << 40}, {"Gi", 1 << 30}, {"Mi", 1 << 20}, {"Ki", 1 << 10}} {
		if b >= u.n {
			v := float64(b) / float64(u.n)
			if b%u.n == 0 {
				return fmt.Sprintf("%d%s", b/u.n, u.s)
			}
			return fmt.Sprintf("%.1f%s", v, u.s)
		}
	}
	return fmt.Sprintf("%d", b)
}

func taintString(t Taint) string {
	if t.Value == "" {
		return t.Key + ":" + t.Effect
	}
	return t.Key + "=" + t.Value + ":" + t.Effect
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
