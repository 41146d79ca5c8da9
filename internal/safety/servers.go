package safety

// Named servers' homes: where the name template gives each server its own
// claim ({servername}, {user_server}), a named server's claim is a home
// like the default server's: read, classified, migrated and reported, but
// never created by the provider (KubeSpawner creates it at the server's
// first spawn) and never recreated.

import (
	"cmp"
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
	n, err := kubespawner.Expand(p.cfg.NameTemplate, c.Username, c.Servername, p.cfg.Scheme)
	return err == nil && n == c.Name
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
		if p.idx.live[src] == nil && t.Servername != "" && t.Username != "" {
			add(t.Username, t.Servername, src.Namespace, src.Name, nil)
		}
	}
	for ref, ip := range p.live.InProgress {
		server := ip.Record.Annotations[kubespawner.AnnotationServername]
		if server != "" && ip.Record.User != "" && p.idx.live[ref] == nil {
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

// homeKey is the key of a home: the username, "user/server" for a named
// server's.
func homeKey(user, server string) string {
	if server != "" {
		return ServerKey(user, server)
	}
	return user
}
