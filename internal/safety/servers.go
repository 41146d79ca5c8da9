package safety

// Named servers' homes: where the name template gives each server its own
// claim ({servername}, {user_server}), a named server's claim is a home
// like the default server's: read, classified, migrated and reported, but
// never created by the provider (KubeSpawner creates it at the server's
// first spawn) and never recreated.

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/claims"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/kubespawner"
)

// isServerHome reports whether c is the home of a named server: the
// name template gives the server its own claim ({servername},
// {user_server}, ...), and c has that name.
func (p *planner) isServerHome(c *claims.Claim) bool {
	return serverHomeUnder(p.cfg.NameTemplate, p.cfg.Scheme, c.Username, c.Servername, c.Name)
}

// serverHomeUnder reports whether name is the home of user's named server
// under template and scheme: a claim of its own, not the default server's.
// KubeSpawner annotates every claim with the server it was made for, also
// a shared home (claim-{username}) a named server spawned first: the
// annotation alone never makes a claim a named server's home.
func serverHomeUnder(template string, scheme kubespawner.Scheme, user, server, name string) bool {
	if server == "" {
		return false
	}
	n, err := kubespawner.Expand(template, user, server, scheme)
	if err != nil || n != name {
		return false
	}
	d, err := kubespawner.Expand(template, user, "", scheme)
	return err == nil && d != name
}

// keyOf is the key of the home whose claim is name (user and the server
// its annotations name): "user/server" when the template gives that server
// its own claim of that name, else the user's.
func (p *planner) keyOf(user, server, name string) string {
	if serverHomeUnder(p.cfg.NameTemplate, p.cfg.Scheme, user, server, name) {
		return ServerKey(user, server)
	}
	return user
}

// wasServerHome reports whether c was a named server's home under the
// template of the last apply (and is not under this one): a stray.
func (p *planner) wasServerHome(c *claims.Claim) bool {
	return p.prior != nil && serverHomeUnder(p.prior.Config.NameTemplate, p.prior.Config.Scheme, c.Username, c.Servername, c.Name)
}

// namedServers plans the named servers' homes: those in the cluster, the
// copies whose source claim is gone and the rebinds in progress whose
// claim is gone (the record names the server). Each is planned as a home
// (planHome) that the provider never creates: KubeSpawner does, at the
// server's first spawn.
func (p *planner) namedServers() {
	found := map[claims.Ref]UserPlan{}
	add := func(user, server, namespace, name string, live *claims.Claim) {
		up := UserPlan{User: user, Server: server, Namespace: p.cfg.Ref(namespace, "").Namespace, ClaimName: name, Live: live}
		if _, dup := found[up.Ref()]; !dup {
			found[up.Ref()] = up
		}
	}
	for _, c := range p.idx.servers {
		add(c.Username, c.Servername, c.Namespace, c.Name, c)
	}
	for src, t := range p.idx.targets {
		if p.idx.live[src] == nil && t.Username != "" && p.keyOf(t.Username, t.Servername, src.Name) != t.Username {
			add(t.Username, t.Servername, src.Namespace, src.Name, nil)
		}
	}
	for ref, ip := range p.live.InProgress {
		server := ip.Record.Annotations[kubespawner.AnnotationServername]
		if ip.Record.User != "" && p.idx.live[ref] == nil && p.keyOf(ip.Record.User, server, ref.Name) != ip.Record.User {
			add(ip.Record.User, server, ref.Namespace, ref.Name, nil)
		}
	}
	ups := slices.Collect(maps.Values(found))
	slices.SortFunc(ups, func(a, b UserPlan) int {
		return cmp.Or(strings.Compare(a.User, b.User), strings.Compare(a.Server, b.Server), strings.Compare(a.Namespace, b.Namespace))
	})
	for _, up := range ups {
		if up, ok := p.planHome(up); ok {
			p.res.Servers = append(p.res.Servers, up)
		}
	}
}

// ownerOf says whose claim c is, for messages.
func ownerOf(c *claims.Claim) string {
	switch {
	case c.Username == "":
		return "no user (it has no hub.jupyter.org/username)"
	case c.Servername != "":
		return fmt.Sprintf("user %q, server %q", c.Username, c.Servername)
	}
	return fmt.Sprintf("user %q", c.Username)
}

// labelledFor reports whether c carries no username annotation and the
// username label KubeSpawner gives user (older KubeSpawner labelled claims
// only, with the escaped name): it may be user's own home, read without
// its raw name, and is not taken for someone else's.
func (p *planner) labelledFor(c *claims.Claim, user string) bool {
	if c.Annotations[kubespawner.AnnotationUsername] != "" || c.UsernameLabel == "" {
		return false
	}
	if l, err := kubespawner.UsernameLabel(user); err == nil && l == c.UsernameLabel {
		return true
	}
	escaped, err := kubespawner.Expand("{username}", user, "", kubespawner.SchemeEscape)
	return err == nil && escaped == c.UsernameLabel
}
