package safety

// Destroying the resource: which claims deletion_policy deletes.

import (
	"fmt"
	"sort"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/claims"
)

// Destroy classifies destroying the resource: claims stay unless the
// configuration says both deletion_policy = "delete" and allow_data_loss,
// and the shared layout's claim always stays.
func Destroy(cfg Config, prior Prior, live Live) Result {
	d := destroyer{cfg: cfg, live: live}
	d.res.Class = ClassNone
	if sh := DirectoryOf(cfg); sh != nil && cfg.DeletionPolicy == DeletionDelete {
		d.res.Warnings = append(d.res.Warnings, claims.Finding{Attribute: "deletion_policy", Summary: "The shared home claim stays", Detail: fmt.Sprintf("deletion_policy = \"delete\" never deletes claim %s/%s, which holds the homes of the shared layout (also when this resource created it, shared_home.create_claim): "+
			"destroy leaves it with its data.", cfg.Namespace, sh.Claim)})
	}
	if cfg.Shared != nil {
		return d.res // the shared layout manages no per-user claim, and never deletes the shared one
	}
	own := ownClaims(cfg, live.Claims)
	byRef := make(map[claims.Ref]*claims.Claim, len(own))
	for i := range own {
		byRef[cfg.ref(&own[i])] = &own[i]
	}
	users := make([]string, 0, len(prior.Managed))
	for u := range prior.Managed {
		users = append(users, u)
	}
	sort.Strings(users)
	for _, u := range users {
		// The user's claim is in the user's namespace: a claim of that name
		// elsewhere (a template without a user field under per-user
		// namespaces names every user's claim alike) is another user's.
		ns, err := cfg.NamespaceOf(u)
		if err != nil {
			continue
		}
		up := UserPlan{User: u, ClaimName: prior.Managed[u], Namespace: ns, Managed: true, Action: ActionRelease, Reason: "retained"}
		if c := byRef[up.Ref()]; c != nil {
			d.home(up, c)
		}
	}
	d.findings()
	return d.res
}

// destroyer classifies the managed homes a destroy finds.
type destroyer struct {
	cfg          Config
	live         Live
	res          Result
	del, mounted []UserPlan // the claims deleted, and those of them a pod mounts
}

// home classifies user up.User's managed home c: someone else's claim of
// its name and an unfinished move out of the shared layout stay; else it
// is deleted when the configuration says so.
func (d *destroyer) home(up UserPlan, c *claims.Claim) {
	u := up.User
	if c.Username != "" && c.Username != u || serverHomeUnder(d.cfg.NameTemplate, d.cfg.Scheme, c.Username, c.Servername, c.Name) {
		// Not the home this resource made for u (a template that names
		// another user's or a named server's claim alike): never deleted.
		d.res.Warnings = append(d.res.Warnings, claims.Finding{Attribute: "deletion_policy", Summary: "A claim of a managed home's name belongs to someone else", Detail: fmt.Sprintf("Claim %s has the name of user %q's home but belongs to %s: destroy leaves it as it is.", up.Ref(), u, ownerOf(c))})
		return
	}
	up.Live = c
	if rec, err := splitRecord(c); err != nil || rec != nil && !splitDone(c, rec) {
		// An unfinished move out of the shared layout: its claim stays,
		// so that the next plan finishes or undoes it and never creates
		// a claim over the volume reserved for this one.
		up.Reason = "its move out of the shared layout has not finished"
		d.res.Users = append(d.res.Users, up)
		return
	}
	if d.cfg.DeletionPolicy == DeletionDelete && d.cfg.AllowDataLoss {
		up.Action, up.Reason = ActionRecreate, "deleted"
		d.del = append(d.del, up)
		if d.live.Mounted[up.Ref()] {
			d.mounted = append(d.mounted, up)
		}
	}
	d.res.Users = append(d.res.Users, up)
}

// findings says what the destroy does to the homes: a delete a running
// server blocks fails it; else the deletes or the claims that stay are
// named.
func (d *destroyer) findings() {
	cfg, res := d.cfg, &d.res
	switch {
	case len(d.mounted) > 0:
		res.Errors = append(res.Errors, claims.Finding{Attribute: "deletion_policy", Summary: "A running server uses a claim that would be deleted", Detail: fmt.Sprintf("These claims are mounted by a running pod; the delete would hang on kubernetes.io/pvc-protection:\n%s\nStop these users' servers first.", describe(d.mounted))})
	case len(d.del) > 0:
		res.Class = ClassDestructive
		res.Warnings = append(res.Warnings, claims.Finding{Attribute: "deletion_policy", Summary: "Destroying deletes home claims", Detail: fmt.Sprintf("deletion_policy = \"delete\" and allow_data_loss = true: destroy deletes %d home claim(s) and the data in them:\n%s", len(d.del), describe(d.del))})
	case len(res.Users) > 0:
		res.Warnings = append(res.Warnings, claims.Finding{Attribute: "deletion_policy", Summary: "Home claims stay after destroy", Detail: fmt.Sprintf("deletion_policy = %q: the %d managed home claim(s) in namespace %s are left in place with their data; Terraform only forgets them.",
			orDefault(cfg.DeletionPolicy, DeletionRetain), len(res.Users), cfg.Namespace)})
	}
}
