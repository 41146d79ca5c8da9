package safety

// Moves by rename (on_layout_change = "move"): a change of the shared
// layout's sub_path_template or slug_scheme on the same claim renames each
// user's directory to the new name at the user's next spawn. No pod runs at
// plan time and no rename runs at apply: the layout's init container
// renames the directory from the place the earlier settings gave it
// (kubespawner.SharedDirectoryCommand), so users are switched one by one,
// whenever they next start a server, and one who never does keeps their
// home where it was until then. The earlier places are recorded on the
// shared claim itself (migration.MovedFromAnnotation), the one source the
// plan and every hub read, and the list only grows: a home is found at an
// earlier place however many changes later, and a revert is one more move.

import (
	"fmt"
	"slices"
	"strings"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/claims"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/kubespawner"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/migration"
)

// OnLayoutChangeMove renames listed and unlisted users' directories within
// the shared claim to their new names, each at the user's next spawn.
const OnLayoutChangeMove OnLayoutChange = "move"

// liveMovedFrom is the shared claim's list of earlier places
// (migration.MovedFromAnnotation); nil when the claim was not read.
func liveMovedFrom(live Live, res *Result) []string {
	return livePlaces(live, migration.MovedFromAnnotation, res)
}

// liveLeftAt is the shared claim's list of places homes were left at by a
// keep (migration.LeftAtAnnotation); nil when the claim was not read.
func liveLeftAt(live Live, res *Result) []string {
	return livePlaces(live, migration.LeftAtAnnotation, res)
}

// livePlaces reads a list of places of the shared claim, annotation key.
func livePlaces(live Live, key string, res *Result) []string {
	if live.Shared == nil {
		return nil
	}
	list, err := migration.DecodeMovedFrom(live.Shared.Annotations[key])
	for _, t := range list {
		if err == nil {
			if err = kubespawner.CheckSubPathTemplate(t); err != nil {
				err = fmt.Errorf("place %q: %w", t, err)
			}
		}
	}
	if err != nil {
		res.Errors = append(res.Errors, claims.Finding{Attribute: "shared_home.claim_name", Summary: "The shared claim's list of earlier home directories cannot be read", Detail: fmt.Sprintf("Claim %s/%s, annotation %s: %v. It lists where homes were before a change of sub_path_template or slug_scheme (renamed from there at spawn, or left there); without it users could start in new, empty directories, or in another user's old one. "+
			"Restore it, as a JSON array of templates such as [\"{escaped_username}\"].", live.Shared.Namespace, live.Shared.Name, key, err)})
	}
	return list
}

// placesOf is the list of earlier places the hub is given: the shared
// claim's, with those the last apply gave the hub for the same claim that
// the claim lacks (edited by hand, or the claim made again from a backup):
// a place dropped would leave the homes still there unfound, their users
// in new, empty directories. Apply writes the list back (a warning says so).
func placesOf(cfg Config, prior *Prior, live Live, res *Result) []string {
	list := liveMovedFrom(live, res)
	if prior == nil || live.Shared == nil || len(prior.MovedFrom) == 0 {
		return list
	}
	was, now := DirectoryOf(prior.Config), DirectoryOf(cfg)
	if was == nil || now == nil || was.Claim != now.Claim || prior.Config.Namespace != cfg.Namespace {
		return list
	}
	full := migration.WithMovedFrom(list, prior.MovedFrom...)
	if len(full) > len(list) {
		res.Warnings = append(res.Warnings, claims.Finding{Attribute: "shared_home.claim_name", Summary: "The shared claim lost earlier places of homes", Detail: fmt.Sprintf("Claim %s/%s lacks places the last apply recorded (annotation %s): %q. Users whose home is still there would start in new, empty directories; apply records them again.",
			cfg.Namespace, now.Claim, migration.MovedFromAnnotation, full[len(list):])})
	}
	return full
}

// checkPlaces fails the plan when the directory template and the earlier
// places homes are renamed from can meet or nest for two users
// (kubespawner.SeparateTemplates): a user whose directory is missing would
// rename another user's home into their own, or mount it; or a user would
// get the directory holding others' homes. Slugs of the two schemes
// overlap ("bob-" escaped is "bob-2d", the safe name of user "bob-2d"), so
// the same template under another scheme is such a place; a literal
// directory or a character no name has ("homes_v2/") sets them apart.
func checkPlaces(cfg Config, places, left []string, res *Result) {
	sh := DirectoryOf(cfg)
	if sh == nil || len(places)+len(left) == 0 {
		return
	}
	current := sh.SubPathTemplate
	if free, err := kubespawner.SchemeFree(current, cfg.Scheme); err == nil {
		current = free
	}
	all := append(append([]string{current}, places...), left...)
	var bad []string
	if !kubespawner.NamesServer(current) {
		for _, p := range places {
			if kubespawner.NamesServer(p) {
				bad = append(bad, fmt.Sprintf("%q gives each server a directory of its own, %q one for all of a user's servers: a named server's old home would be renamed into the user's", p, sh.SubPathTemplate))
			}
		}
	}
	for i, a := range all {
		for _, b := range all[i+1:] {
			if a == b {
				continue // one template: each user their own directory
			}
			if err := kubespawner.SeparateTemplates(a, b); err != nil {
				bad = append(bad, err.Error())
			}
		}
	}
	if len(bad) == 0 {
		return
	}
	var where []string
	if len(places) > 0 {
		where = append(where, fmt.Sprintf("homes not renamed yet are at %q (renamed from there at each user's next spawn)", places))
	}
	if len(left) > 0 {
		where = append(where, fmt.Sprintf("a keep left old homes at %q", left))
	}
	res.Errors = append(res.Errors, claims.Finding{Attribute: "shared_home.sub_path_template", Summary: "Homes renamed at spawn could be taken by another home", Detail: fmt.Sprintf("On claim %s/%s %s (recorded on the claim). With sub_path_template %q and slug_scheme %q, some of those directories can be another user's or another server's for some names:\n%s\n"+
		"A user whose directory is missing would rename another user's home into their own, or mount another user's old home. Choose a sub_path_template whose directories none of those places can give, "+
		"for any name: a directory of its own with a character no name has (e.g. \"homes_v2/{username}\"), or keep the old names ({escaped_username} keeps KubeSpawner's names from before version 7).",
		cfg.Namespace, sh.Claim, strings.Join(where, ", and "), sh.SubPathTemplate, cfg.Scheme, CutLines(bad))})
}

// leftBy adds to res.LeftAt the place a change with on_layout_change =
// "keep" leaves homes at, when it changes the directories of the same
// shared claim: the old homes stay there, unmounted, and no later template
// may give a user one of them. It fails the plan when the old template
// cannot be written independently of the scheme.
func leftBy(cfg Config, prior *Prior, m moves, res *Result) {
	if m.relayout || prior == nil || prior.Config.Shared == nil || cfg.Shared == nil ||
		prior.Config.Shared.SubPathTemplate == cfg.Shared.SubPathTemplate && prior.Config.Scheme == cfg.Scheme {
		return
	}
	was := prior.Config
	entry, err := kubespawner.SchemeFree(was.Shared.SubPathTemplate, was.Scheme)
	if err != nil {
		res.Errors = append(res.Errors, claims.Finding{Attribute: "on_layout_change", Summary: "The old directories cannot be recorded", Detail: fmt.Sprintf("Homes left by a keep are recorded on the shared claim as a template any scheme expands alike, so that no later template gives a user one of them: %v. Change the template and the scheme in separate applies.", err)})
		return
	}
	res.LeftAt = migration.WithMovedFrom(res.LeftAt, entry)
}

// MovedDirectories are the places user's default server's home had under
// earlier settings: the templates of movedFrom, expanded.
func MovedDirectories(movedFrom []string, user string) []string {
	var out []string
	for _, t := range movedFrom {
		// Scheme-free: any scheme expands it alike.
		if d, err := kubespawner.Expand(t, user, "", kubespawner.SchemeSafe); err == nil {
			out = append(out, d)
		}
	}
	return out
}

// checkRenames plans a change that moves homes with on_layout_change =
// "move": only directories of the same shared claim can be renamed, and a
// listed user must not get another listed user's old directory or one
// inside an old home. The homes moved are named; res.MovedFrom gains the
// earlier template.
func checkRenames(cfg Config, prior *Prior, m moves, list string, res *Result) {
	if m.relayout || prior == nil || prior.Config.Shared == nil || cfg.Shared == nil {
		res.Errors = append(res.Errors, claims.Finding{Attribute: "on_layout_change", Summary: "Homes can be renamed only within the shared claim", Detail: fmt.Sprintf("on_layout_change = \"move\" renames users' directories of one shared claim when sub_path_template or slug_scheme changes. This change moves homes to another claim or layout:\n%s\n"+
			"Use on_layout_change = \"migrate\" to move homes out of the shared layout into claims of their own, or \"keep\" to leave the old homes where they are.", list)})
		return
	}
	was := prior.Config
	if kubespawner.NamesServer(was.Shared.SubPathTemplate) && !kubespawner.NamesServer(cfg.Shared.SubPathTemplate) {
		res.Errors = append(res.Errors, claims.Finding{Attribute: "shared_home.sub_path_template", Summary: "Homes of named servers cannot be renamed into one directory", Detail: fmt.Sprintf("%q gives each of a user's servers a directory of its own, %q one for all of them: a rename cannot merge them. Use on_layout_change = \"keep\" and merge them by hand.",
			was.Shared.SubPathTemplate, cfg.Shared.SubPathTemplate)})
		return
	}
	entry, err := kubespawner.SchemeFree(was.Shared.SubPathTemplate, was.Scheme)
	if err != nil {
		res.Errors = append(res.Errors, claims.Finding{Attribute: "on_layout_change", Summary: "The old directories cannot be found at spawn", Detail: fmt.Sprintf("The hub finds a user's old directory by the old template under the new scheme: %v. Change the template and the scheme in separate applies, or use on_layout_change = \"keep\".", err)})
		return
	}
	if bad := renameConflicts(was, cfg); len(bad) > 0 {
		res.Errors = append(res.Errors, claims.Finding{Attribute: "shared_home.sub_path_template", Summary: "A user's new directory is, or is inside, another home", Detail: fmt.Sprintf("Renamed, these listed users' homes would take the place of another home, or move inside one:\n%s\n"+
			"The user would see the other home's files. Choose a sub_path_template and slug_scheme that give no listed user another user's old directory.", CutLines(bad))})
		return
	}
	res.MovedFrom = migration.WithMovedFrom(res.MovedFrom, entry)
	res.Warnings = append(res.Warnings, claims.Finding{Attribute: "on_layout_change", Summary: "Users' home directories are renamed at their next spawn", Detail: fmt.Sprintf("With on_layout_change = \"move\", %d listed user(s) find their home under its new name: the hub renames their directory (one rename on the shared file system, nothing copied) "+
		"when they next start a server, and until then it stays where it is:\n%s\n"+
		"A home found at both places with files in each, or whose new place holds files, is not renamed: that user's spawn fails, naming both, until a person keeps one. "+
		"Claim %s/%s records the old place (annotation %s) for every later spawn.",
		len(m.listed), list, cfg.Namespace, cfg.Shared.Claim, migration.MovedFromAnnotation)})
}

// renameConflicts names the listed users whose new directory under now is
// another listed user's directory under was, or lies inside an old home
// (a rename would move the home into itself, or into another user's).
func renameConflicts(was, now Config) []string {
	old := map[string]string{}
	for _, u := range now.Users {
		if h, err := was.homeFor(u, ""); err == nil {
			old[h.dir] = u
		}
	}
	var bad []string
	for _, u := range now.Users {
		h, err := now.homeFor(u, "")
		if err != nil {
			continue
		}
		if o, ok := old[h.dir]; ok && o != u {
			bad = append(bad, fmt.Sprintf("%s: %q is %s's old home", u, h.dir, o))
			continue
		}
		parts := strings.Split(h.dir, "/")
		for i := 1; i < len(parts); i++ {
			if o, ok := old[strings.Join(parts[:i], "/")]; ok {
				bad = append(bad, fmt.Sprintf("%s: %q is inside %s's old home %q", u, h.dir, o, strings.Join(parts[:i], "/")))
				break
			}
		}
	}
	slices.Sort(bad)
	return bad
}
