package safety

import (
	"encoding/json"
	"fmt"
	"sort"
)

// Change is what a plan does to one claim, as the plan shows it in the
// `changes` attribute and as apply executes it: the action, the claim and,
// for a claim that exists, its UID (the object the plan saw). A claim is
// named by namespace and name: names are unique per namespace only.
type Change struct {
	Action    Action `json:"action"`
	Namespace string `json:"namespace"`
	Claim     string `json:"claim"`
	UID       string `json:"uid,omitempty"`
	Method    string `json:"method,omitempty"` // migrate: rebind or copy
}

// Changes are a plan's changes by key (Result.Keyed): the username for a
// default server's home, "user/server" for a named server's, "user
// (claim)" for another per-user claim (extra_user_volumes).
type Changes map[string]Change

// Changing reports whether an action changes the cluster.
func Changing(a Action) bool {
	switch a {
	case ActionCreate, ActionResize, ActionRecreate, ActionDeleteSource, ActionMigrate:
		return true
	}
	return false
}

// ExtraKey is the key of another per-user claim in Changes, migration_plan
// and migration_status.
func ExtraKey(user, claim string) string { return fmt.Sprintf("%s (%s)", user, claim) }

// ServerKey is the key of a named server's home in Changes, migration_plan
// and migration_status, as the jupyter_home_claims data source keys its
// claim.
func ServerKey(user, server string) string { return user + "/" + server }

// ChangesOf lists what r changes in the cluster.
func ChangesOf(r Result) Changes {
	out := Changes{}
	add := func(key string, up *UserPlan) {
		if !Changing(up.Action) {
			return
		}
		c := Change{Action: up.Action, Namespace: up.Namespace, Claim: up.ClaimName, Method: string(up.Method)}
		if up.Live != nil {
			c.UID = up.Live.UID
		}
		out[key] = c
	}
	for k, up := range r.Keyed() {
		add(k, up)
	}
	return out
}

// Encode is the attribute's value (keys sorted: stable).
func (c Changes) Encode() string {
	b, _ := json.Marshal(c)
	return string(b)
}

// DecodeChanges reads the attribute's value.
func DecodeChanges(s string) (Changes, error) {
	out := Changes{}
	if s == "" {
		return out, nil
	}
	if err := json.Unmarshal([]byte(s), &out); err != nil {
		return nil, fmt.Errorf("changes is not a JSON object of changes: %w", err)
	}
	return out, nil
}

// Mismatch is a claim whose change at apply is not what the plan showed.
type Mismatch struct {
	Key     string
	Planned *Change // nil: the plan showed no change
	Now     *Change // nil: no change is due now
}

func (m Mismatch) String() string {
	desc := func(c *Change) string {
		if c == nil {
			return "nothing"
		}
		s := fmt.Sprintf("%s %s/%s", c.Action, c.Namespace, c.Claim)
		if c.UID != "" {
			s += " (uid " + c.UID + ")"
		}
		return s
	}
	return fmt.Sprintf("%s: planned %s, now %s", m.Key, desc(m.Planned), desc(m.Now))
}

// Reconcile compares the changes a plan showed with those a fresh read
// gives. It returns the keys to execute (planned, and still the same
// change on the same object), the mismatches whose fresh change would do
// something the plan did not show (errors: that user's change is not made),
// and those where nothing is left to do (the cluster got there by itself).
func Reconcile(planned, now Changes) (run []string, refused, moot []Mismatch) {
	keys := map[string]bool{}
	for k := range planned {
		keys[k] = true
	}
	for k := range now {
		keys[k] = true
	}
	sorted := make([]string, 0, len(keys))
	for k := range keys {
		sorted = append(sorted, k)
	}
	sort.Strings(sorted)
	for _, k := range sorted {
		p, pok := planned[k]
		n, nok := now[k]
		switch {
		case pok && nok && p == n:
			run = append(run, k)
		case !nok:
			moot = append(moot, Mismatch{Key: k, Planned: &p})
		case !pok:
			refused = append(refused, Mismatch{Key: k, Now: &n})
		default:
			refused = append(refused, Mismatch{Key: k, Planned: &p, Now: &n})
		}
	}
	return run, refused, moot
}
