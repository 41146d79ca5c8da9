package safety

// Homes the configuration would no longer find: claims under another name
// template or slug scheme, or where homes are no longer looked for.

import (
	"fmt"
	"slices"
	"sort"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/claims"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/kubespawner"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/migration"
)

// ownClaims are the live claims of this deployment. Under user namespaces
// the provider reads claims cluster-wide: a claim counts when it is in its
// user's namespace (claims of other hubs, or in another user's namespace,
// are not this deployment's); a claim without a user (a workspace claim
// without KubeSpawner's labels) when it is in some user's namespace.
func ownClaims(cfg Config, cs []claims.Claim) []claims.Claim {
	if cfg.UserNamespaceTemplate == "" {
		// Read cluster-wide after a change of namespace: only the
		// deployment's namespace counts ("" in tests: the deployment's).
		own := func(c *claims.Claim) bool { return c.Namespace == "" || c.Namespace == cfg.Namespace }
		first := 0
		for first < len(cs) && own(&cs[first]) {
			first++
		}
		if first == len(cs) {
			return cs // all of them: no copy
		}
		out := slices.Clone(cs[:first])
		for i := first + 1; i < len(cs); i++ {
			if own(&cs[i]) {
				out = append(out, cs[i])
			}
		}
		return out
	}
	userNS := map[string]bool{}
	for _, u := range cfg.Users {
		if ns, err := cfg.NamespaceOf(u); err == nil {
			userNS[ns] = true
		}
	}
	var out []claims.Claim
	for _, c := range cs {
		if c.Username == "" {
			continue
		}
		if ns, err := cfg.NamespaceOf(c.Username); err == nil && ns == c.Namespace {
			userNS[ns] = true
			out = append(out, c)
		}
	}
	for _, c := range cs {
		if c.Username == "" && userNS[c.Namespace] {
			out = append(out, c)
		}
	}
	return out
}

// leftHome is a home the configuration no longer finds where it looks.
type leftHome struct {
	claim claims.Claim
	want  string // the namespace the configuration looks in for its user
}

// leftBehind lists the homes that are where homes were looked for (the
// previous configuration's namespace for the user, or the hub's namespace)
// but not where this configuration looks for them: after a change of
// namespace or of user namespaces, KubeSpawner would give these users new,
// empty homes.
func leftBehind(cfg Config, prior *Prior, cs []claims.Claim) []leftHome {
	var out []leftHome
	for _, c := range cs {
		// A named server's claim counts when it has the name of the
		// default server's home (wasLookedFor): the hub mounts it for both.
		if c.Username == "" || c.Annotations[migration.CopyOfAnnotation] != "" || c.Namespace == "" {
			continue
		}
		want, err := cfg.NamespaceOf(c.Username)
		if err != nil || c.Namespace == want {
			continue
		}
		if wasLookedFor(cfg, prior, c) {
			out = append(out, leftHome{claim: c, want: want})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		return out[i].claim.Namespace+"/"+out[i].claim.Name < out[j].claim.Namespace+"/"+out[j].claim.Name
	})
	return out
}

// wasLookedFor reports whether c is a home by name (this or the previous
// configuration's template) where homes were looked for: the hub's
// namespace under user namespaces, or the previous configuration's
// namespace for the user.
func wasLookedFor(cfg Config, prior *Prior, c claims.Claim) bool {
	was := cfg.UserNamespaceTemplate != "" && c.Namespace == cfg.Namespace
	names := []string{}
	if n, err := kubespawner.Expand(cfg.NameTemplate, c.Username, "", cfg.Scheme); err == nil {
		names = append(names, n)
	}
	if prior != nil {
		if ns, err := prior.Config.NamespaceOf(c.Username); err == nil && ns == c.Namespace {
			was = true
		}
		if n, err := kubespawner.Expand(prior.Config.NameTemplate, c.Username, "", prior.Config.Scheme); err == nil {
			names = append(names, n)
		}
	}
	return was && slices.Contains(names, c.Name)
}

// checkLeftBehind fails the plan for homes left where the configuration no
// longer looks, unless on_mode_change = "keep_existing" acknowledges them.
func (p *planner) checkLeftBehind(left []leftHome) {
	if len(left) == 0 {
		return
	}
	list := Cut(len(left), func(i int) string {
		l := left[i]
		return fmt.Sprintf("%s: %s/%s (the configuration looks in namespace %s)", l.claim.Username, l.claim.Namespace, l.claim.Name, l.want)
	})
	attr := "namespace"
	if p.prior == nil || p.prior.Config.UserNamespaceTemplate != p.cfg.UserNamespaceTemplate {
		attr = "user_namespace_template"
	}
	detail := fmt.Sprintf("%d home claim(s) are where homes were looked for, but not where this configuration looks:\n%s\n"+
		"KubeSpawner would give these users new, empty homes; their data stays in the old claims.", len(left), list)
	if p.cfg.OnModeChange == OnModeChangeKeepExisting {
		p.warnf(attr, "Homes left where the configuration no longer looks", "%s", detail)
		return
	}
	p.errorf(attr, "Homes left where the configuration no longer looks",
		"%s\nKeep namespace and user_namespace_template as they were, move the homes first, or set on_mode_change = \"keep_existing\" to acknowledge that they are left as they are.", detail)
}

// checkStrays reports home claims whose names the template does not produce:
// KubeSpawner made them with another template or slug scheme, and under this
// configuration their users would get new, empty homes.
func (p *planner) checkStrays(strays []claims.Claim) {
	if len(strays) == 0 {
		return
	}
	cfg := p.cfg
	list := Cut(len(strays), func(i int) string {
		c := strays[i]
		want, _ := kubespawner.Expand(cfg.NameTemplate, c.Username, "", cfg.Scheme)
		hint := ""
		for _, alt := range []kubespawner.Scheme{kubespawner.SchemeSafe, kubespawner.SchemeEscape} {
			if n, err := kubespawner.Expand(cfg.NameTemplate, c.Username, "", alt); err == nil && n == c.Name && alt != cfg.Scheme {
				hint = fmt.Sprintf(" (matches slug_scheme = %q)", alt)
			}
		}
		return fmt.Sprintf("%s: has %s, the template gives %s%s", c.Username, c.Name, want, hint)
	})
	changed := p.prior != nil && (p.prior.Config.NameTemplate != cfg.NameTemplate || p.prior.Config.Scheme != cfg.Scheme)
	what := "do not have the names that pvc_name_template and slug_scheme give"
	if changed {
		what = fmt.Sprintf("were named by the previous template (%q, %s) and not by the new one (%q, %s)",
			p.prior.Config.NameTemplate, p.prior.Config.Scheme, cfg.NameTemplate, cfg.Scheme)
	}
	detail := fmt.Sprintf("%d home claim(s) in namespace %s %s:\n%s\n"+
		"KubeSpawner would give these users new, empty homes under the new names (unless it remembers the old name: KubeSpawner's remember_pvc_name keeps it for users who have started a server before). "+
		"Their data stays in the old claims.", len(strays), cfg.Namespace, what, list)
	if cfg.OnModeChange == OnModeChangeKeepExisting {
		p.warnf("pvc_name_template", "Existing homes do not match the name template", "%s", detail)
		return
	}
	p.errorf("pvc_name_template", "Existing homes do not match the name template",
		"%s\nKeep pvc_name_template and slug_scheme as they were, or set on_mode_change = \"keep_existing\" to acknowledge that these claims are left as they are.", detail)
}
