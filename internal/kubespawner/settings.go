package kubespawner

import (
	"fmt"
	"regexp"
	"strings"
)

// HomeStorage describes a deployment's home storage, as jupyter_home_storage configures it.
type HomeStorage struct {
	AccessMode   string
	StorageClass string // "" leaves the cluster default
	Capacity     string
	NameTemplate string
	Scheme       Scheme
	MountPath    string // default /home/jovyan
	ExtraLabels  map[string]string
	// UserNamespaceTemplate turns on KubeSpawner's per-user namespaces.
	UserNamespaceTemplate string
	// Shared, when set, keeps every home in a directory of one claim
	// instead of a claim per user.
	Shared *SharedHome
	// SplitFrom, when set, is the per-user layout while homes move out of
	// the shared layout it describes, one user at a time: a server whose
	// claim exists mounts it, one whose claim does not exist yet mounts
	// the user's directory of the shared claim, as in the shared layout
	// (the hub decides at each spawn). Never set together with Shared.
	SplitFrom *SharedHome
}

// SharedHome is the layout where every user's home is a directory of one
// shared claim (zero-to-jupyterhub's storage type "static", Nebari's
// classic deployments).
type SharedHome struct {
	Claim string // the shared claim, in the hub's namespace
	// SubPathTemplate names the user's directory in it, a KubeSpawner
	// template such as "{username}" or "home/{username}".
	SubPathTemplate string
	// The owner and mode a missing directory is created with (kubelet
	// creates a missing subPath directory owned by root, which the user's
	// server cannot write into).
	UID, GID int64
	Mode     string // octal, e.g. "0700"
	Image    string // the init container's image: sh, mkdir, chown, chmod, mv -T
	// MovedFrom are the templates of the directories the homes had under
	// earlier settings, scheme-free (SchemeFree): a user's missing
	// directory is the one of them that exists, renamed
	// (SharedDirectoryCommand).
	MovedFrom []string
}

// SharedInitContainer is the name of the init container that creates a
// user's missing directory on the shared claim.
const SharedInitContainer = "home-directory"

// SharedRoot is where the init container, and any other pod that makes a
// user's directory (SharedDirectoryCommand), mounts the shared claim.
const SharedRoot = "/mnt/homes"

// SharedDirectoryCapabilities are the only capabilities of the root that
// makes a user's directory (all others dropped, no privilege escalation):
// CHOWN gives it its owner, FOWNER its mode, and DAC_OVERRIDE lets root
// walk and write directories it does not own.
var SharedDirectoryCapabilities = []string{"CHOWN", "FOWNER", "DAC_OVERRIDE"}

// EnvVar is one variable of a container's environment.
type EnvVar struct{ Name, Value string }

// Directory is a user's home directory on the shared claim as the layout's
// init container, and any other pod that makes it, sees it.
type Directory struct {
	// Path is relative to the claim's root; it may be a KubeSpawner
	// template, which KubeSpawner expands in the environment.
	Path string
	// MovedFrom are the places the home had under earlier settings
	// (on_layout_change = "move"), relative paths or scheme-free templates
	// (SchemeFree): a missing Path is the one of them that exists, renamed.
	// A place that does not name the server (no NamesServer field) was the
	// home of all the user's servers: only the default server takes it.
	MovedFrom []string
	// Server is the server's name, "" for the default server: the
	// template "{servername}" in the layout's init container.
	Server string
	// The owner and mode a missing directory is made with.
	UID, GID int64
	Mode     string // octal, e.g. "0700"
}

// SharedDirectoryCommand is the command that makes directory d of the
// shared claim mounted at SharedRoot when it is missing, and its
// environment.
//
// An existing directory is left as it is. No component of a path may be a
// symbolic link (a user could point one of their own directories at
// another user's home). When the directory is missing and the home had
// another place under earlier settings (d.MovedFrom) that exists, that
// directory is renamed to it (one rename on the same file system: nothing
// is copied); a rename never replaces a directory that holds anything
// (rename(2) with mv -T: an empty one is replaced, one with files is
// refused). A home found at two places (the directory and an earlier one
// that is not empty, or two earlier ones) is refused: which holds the
// user's files is for a person to say, and one of them may be another
// user's (KubeSpawner's schemes can give one user's new name to another's
// old one). Otherwise the directory is made by one mkdir, which fails
// when another of the user's servers made it at the same moment: that one
// is kept, never replaced (a rename over it could leave a server that
// started on it writing into an unlinked directory). It is then given its
// owner and mode; when that fails (a root-squashed NFS) it is removed
// again, so that no root-owned home is left for the next spawn to take as
// made. KubeSpawner formats the script with str.format, so it holds no
// braces. The layout's init container runs it, and so does the Job that
// makes a user's directory before their home moves to a claim of its own.
func SharedDirectoryCommand(d Directory) ([]string, []EnvVar) {
	return directoryCommand(strings.Replace(directoryScript, mergeCheckMarker, "", 1), d)
}

// MergeDirectoryCommand is the command of the Job that makes directory
// d.Path of the shared claim before a merge copies a user's claim into it,
// and its environment: SharedDirectoryCommand's, refusing first a
// directory that holds anything (or is no directory) and an earlier place
// of the home (earlier, expanded for the user) that does; d.MovedFrom is
// not used (nothing is renamed into a directory a merge fills).
func MergeDirectoryCommand(d Directory, earlier []string) ([]string, []EnvVar) {
	d.MovedFrom = nil
	cmd, env := directoryCommand(strings.Replace(directoryScript, mergeCheckMarker, mergeCheck, 1), d)
	for i, e := range earlier {
		env = append(env, EnvVar{fmt.Sprintf("HOME_EARLIER_%d", i+1), e})
	}
	return cmd, env
}

// mergeCheck refuses a directory a merge would copy into when it, or an
// earlier place of the home, holds anything.
const mergeCheck = `if [ -e "$d" ]; then
  if [ ! -d "$d" ] || holds_files "$d"; then
    echo "refusing to merge into $d: it holds files already; a merge copies into an empty directory only. Move them away (or remove them if they are not needed) and apply again" >&2; exit 1
  fi
fi
i=1
while :; do
  set +u
  eval "o=\$HOME_EARLIER_$i"
  set -u
  if [ -z "$o" ]; then break; fi
  i=$((i + 1))
  s=$(path_of "$o")
  if [ "$s" = "$d" ] || [ ! -e "$s" ]; then continue; fi
  if [ ! -d "$s" ] || holds_files "$s"; then
    echo "refusing to merge into $d: an earlier place of the home, $s, holds files (the hub would find the home at two places). Move what is needed and remove it, then apply again" >&2; exit 1
  fi
done
`

const mergeCheckMarker = "#merge-check\n"

// directoryScript is SharedDirectoryCommand's script, with
// mergeCheckMarker where MergeDirectoryCommand checks the directory.
const directoryScript = `set -euf
path_of() (
  case "$1" in
  ""|/*|*/|.|./*|*/.|*/./*|..|../*|*/..|*/../*|*//*) echo "refusing home directory '$1'" >&2; exit 1;;
  esac
  p="` + SharedRoot + `"
  IFS=/
  for c in $1; do
    p="$p/$c"
    if [ -L "$p" ]; then echo "refusing home directory: $p is a symbolic link" >&2; exit 1; fi
  done
  echo "$p"
)
holds_files() ( [ -n "$(ls -A "$1")" ] )
d=$(path_of "$HOME_DIRECTORY")
` + mergeCheckMarker + `set +u
server=$HOME_SERVER
set -u
found=""
i=1
while :; do
  set +u
  eval "o=\$HOME_MOVED_FROM_$i"
  eval "users=\$HOME_MOVED_FROM_$i""_USER"
  set -u
  if [ -z "$o" ]; then break; fi
  i=$((i + 1))
  if [ -n "$users" ] && [ -n "$server" ]; then continue; fi
  s=$(path_of "$o")
  if [ "$s" = "$d" ] || [ ! -e "$s" ]; then continue; fi
  if [ ! -d "$s" ]; then echo "refusing home directory: its earlier place $s is not a directory" >&2; exit 1; fi
  if [ -e "$d" ] && ! holds_files "$s"; then continue; fi
  if [ -e "$d" ] || [ -n "$found" ]; then
    echo "refusing home directory: the home is at two places, $s and $([ -n "$found" ] && echo "$found" || echo "$d"); move what the user needs into $d, remove the other, and spawn again" >&2; exit 1
  fi
  found=$s
done
if [ -e "$d" ]; then
  if [ ! -d "$d" ]; then echo "refusing home directory: $d is not a directory" >&2; exit 1; fi
  exit 0
fi
mkdir -p "$(dirname "$d")"
if [ -n "$found" ]; then
  if mv -T "$found" "$d"; then echo "moved the home from $found to $d"; exit 0; fi
  if [ -d "$d" ] && [ ! -L "$d" ] && [ ! -e "$found" ]; then exit 0; fi
  echo "refusing home directory: cannot move $found to $d" >&2; exit 1
fi
if ! mkdir "$d" 2>/dev/null; then
  if [ -d "$d" ] && [ ! -L "$d" ]; then exit 0; fi
  echo "refusing home directory: cannot create $d" >&2; exit 1
fi
if ! chown "$HOME_UID:$HOME_GID" "$d" || ! chmod "$HOME_MODE" "$d"; then
  rmdir "$d"
  echo "cannot give $d its owner and mode; removed it, so that the next spawn tries again" >&2; exit 1
fi`

func directoryCommand(script string, d Directory) ([]string, []EnvVar) {
	env := []EnvVar{{"HOME_DIRECTORY", d.Path}, {"HOME_SERVER", d.Server}}
	for i, o := range d.MovedFrom {
		env = append(env, EnvVar{MovedFromVar(i), o})
		if !NamesServer(o) {
			env = append(env, EnvVar{MovedFromVar(i) + "_USER", "1"})
		}
	}
	return []string{"sh", "-c", script}, append(env,
		EnvVar{"HOME_UID", fmt.Sprint(d.UID)},
		EnvVar{"HOME_GID", fmt.Sprint(d.GID)},
		EnvVar{"HOME_MODE", d.Mode})
}

// MovedFromVar is the variable of the directory script's environment that
// holds Directory.MovedFrom[i]: one variable per place, since KubeSpawner
// expands each value as one template (it strips a trailing "-" only at the
// end of a value).
func MovedFromVar(i int) string { return fmt.Sprintf("HOME_MOVED_FROM_%d", i+1) }

// initContainer creates the user's directory when it is missing, with the
// owner and mode configured, or renames it from where earlier settings put
// it (SharedDirectoryCommand on the sub-path template); an existing
// directory is left as it is.
func (s SharedHome) initContainer() map[string]any {
	cmd, vars := SharedDirectoryCommand(Directory{Path: s.SubPathTemplate, MovedFrom: s.MovedFrom, Server: "{servername}", UID: s.UID, GID: s.GID, Mode: s.Mode})
	env := make([]map[string]any, 0, len(vars))
	for _, v := range vars {
		env = append(env, map[string]any{"name": v.Name, "value": v.Value})
	}
	return map[string]any{
		"name":    SharedInitContainer,
		"image":   s.Image,
		"command": cmd,
		"env":     env,
		"securityContext": map[string]any{
			"runAsUser": 0, "runAsGroup": 0, "runAsNonRoot": false, "allowPrivilegeEscalation": false,
			"capabilities": map[string]any{"drop": []string{"ALL"}, "add": append([]string(nil), SharedDirectoryCapabilities...)},
		},
		"volumeMounts": []map[string]any{{"name": HomeVolumeName, "mountPath": SharedRoot}},
	}
}

// HomeVolumeName is the name of the home volume in the pod spec, as
// zero-to-jupyterhub names it.
const HomeVolumeName = "home"

// Settings returns the KubeSpawner traitlets this home storage implies,
// keyed by traitlet name, ready to be applied to c.KubeSpawner. The home
// volume mounts "{pvc_name}", which KubeSpawner expands to the claim it
// resolved for the user (remembered names included).
func (h HomeStorage) Settings() map[string]any {
	mount := h.MountPath
	if mount == "" {
		mount = "/home/jovyan"
	}
	if h.Shared != nil {
		return h.sharedSettings(mount)
	}
	if h.SplitFrom != nil {
		return h.splitSettings(mount)
	}
	return h.perUserSettings(mount)
}

// perUserSettings mounts the user's own claim, which KubeSpawner creates.
func (h HomeStorage) perUserSettings(mount string) map[string]any {
	s := map[string]any{
		"storage_pvc_ensure":   true,
		"storage_access_modes": []string{h.AccessMode},
		"storage_capacity":     h.Capacity,
		"pvc_name_template":    h.NameTemplate,
		"slug_scheme":          string(h.Scheme),
		"volumes": []map[string]any{{
			"name":                  HomeVolumeName,
			"persistentVolumeClaim": map[string]any{"claimName": "{pvc_name}"},
		}},
		"volume_mounts": []map[string]any{{"name": HomeVolumeName, "mountPath": mount}},
	}
	if h.StorageClass != "" {
		s["storage_class"] = h.StorageClass
	}
	if h.UserNamespaceTemplate != "" {
		s["enable_user_namespaces"] = true
		s["user_namespace_template"] = h.UserNamespaceTemplate
	}
	if len(h.ExtraLabels) > 0 {
		s["storage_extra_labels"] = h.ExtraLabels
	}
	return s
}

// SplitFromKey is the key of Settings that, while homes move out of the
// shared layout (HomeStorage.SplitFrom), says where a home not moved yet
// is: {"claim": the shared claim, "sub_path": the sub-path template,
// "init_container": the container that makes a missing directory, as the
// shared layout renders it}. It is no KubeSpawner setting: spawner.Build
// takes it out of the settings and into the hub's document.
const SplitFromKey = "jupyter_home_split_from"

// splitSettings are the per-user layout's settings while homes move out
// of the shared layout: each server mounts "{pvc_name}", without subPath.
// KubeSpawner creates no claim (storage_pvc_ensure: a missing claim means
// the home is still the user's directory of the shared claim, which the
// hub mounts instead) and deletes none (delete_pvc); user namespaces are
// off (the shared claim is mountable in its namespace only). SplitFromKey
// tells spawner.Build where the homes not moved yet are.
func (h HomeStorage) splitSettings(mount string) map[string]any {
	s := h.perUserSettings(mount)
	s["storage_pvc_ensure"] = false
	s["delete_pvc"] = false
	s["enable_user_namespaces"] = false
	delete(s, "user_namespace_template")
	s[SplitFromKey] = map[string]any{
		"claim":          h.SplitFrom.Claim,
		"sub_path":       h.SplitFrom.SubPathTemplate,
		"init_container": h.SplitFrom.initContainer(),
	}
	return s
}

// sharedSettings mounts the user's directory of the shared claim as the
// home. KubeSpawner creates no claim for the user (storage_pvc_ensure) and
// deletes none when a user or a named server is deleted (delete_pvc: the
// per-user claims of an earlier layout, kept, are homes too); user
// namespaces are off (the claim is mountable in its namespace only).
// pvc_name_template stays the per-user claims' template.
func (h HomeStorage) sharedSettings(mount string) map[string]any {
	s := map[string]any{
		"storage_pvc_ensure":     false,
		"delete_pvc":             false,
		"enable_user_namespaces": false,
		"storage_access_modes":   []string{h.AccessMode},
		"storage_capacity":       h.Capacity,
		"pvc_name_template":      h.NameTemplate,
		"slug_scheme":            string(h.Scheme),
		"volumes": []map[string]any{{
			"name":                  HomeVolumeName,
			"persistentVolumeClaim": map[string]any{"claimName": h.Shared.Claim},
		}},
		"volume_mounts":   []map[string]any{{"name": HomeVolumeName, "mountPath": mount, "subPath": h.Shared.SubPathTemplate}},
		"init_containers": []map[string]any{h.Shared.initContainer()},
	}
	if h.StorageClass != "" {
		s["storage_class"] = h.StorageClass
	}
	if len(h.ExtraLabels) > 0 {
		s["storage_extra_labels"] = h.ExtraLabels
	}
	return s
}

// CheckSubPathTemplate checks a shared layout's sub-path template: a valid
// template that gives each user a directory of their own below the
// claim's root (relative, without "." or ".." components), never the
// same directory to two users or to a user and another's named server,
// and not on the raw name (users "bob" and "bob-" would share one, as
// KubeSpawner strips a trailing "-", and a user "." would get the root).
func CheckSubPathTemplate(t string) error {
	if err := ValidateTemplate(t); err != nil {
		return err
	}
	if f := fancyField(t); f != "" {
		return fmt.Errorf("%q has the field %s: a home's directory takes plain fields only ({username}, {escaped_username}, {user_server}, ...), since a format spec, conversion or index (truncating to 10 characters, say) can give two users one directory", t, f)
	}
	if strings.Contains(t, "unescaped_") {
		return fmt.Errorf("%q uses a raw name ({unescaped_...}): two users may get one directory (KubeSpawner strips a trailing \"-\") and a name such as \".\" is no directory of its own; use {username} or {escaped_username}", t)
	}
	if err := fieldsApart(t); err != nil {
		return err
	}
	for _, scheme := range []Scheme{SchemeSafe, SchemeEscape} {
		owner := map[string]subPathProbe{}
		for _, p := range subPathProbes {
			d, err := Expand(t, p.user, p.server, scheme)
			if err != nil {
				return err
			}
			if err := checkRelative(d); err != nil {
				return fmt.Errorf("%q gives %q for user %s: %w", t, d, p.user, err)
			}
			if o, seen := owner[d]; seen && o.user != p.user {
				return fmt.Errorf("%q gives user %q%s and user %q%s the same directory %q: it must name the user ({username}, {escaped_username}, ...), and a server's name must be set apart from the user's ({user_server})",
					t, o.user, serverPart(o.server), p.user, serverPart(p.server), d)
			}
			owner[d] = p
		}
	}
	return nil
}

// subPathProbe is a user's server whose directory a check tries.
type subPathProbe struct{ user, server string }

// subPathProbes are names whose directories differ between templates
// and schemes in the ways that matter: escaping, a named server, a name
// that runs into a server's.
var subPathProbes = []subPathProbe{{"jovyan", ""}, {"Ada.Lovelace@Example.org", ""}, {"alice", "gpu"}, {"alicegpu", ""}, {"alice-gpu", ""}, {"alice", ""},
	{"élodie", "GPU.large"}, {"a-very-long-user-name-that-kubespawner-must-shorten-with-a-hash-suffix", "gpu"}}

func serverPart(s string) string {
	if s == "" {
		return ""
	}
	return "'s server " + s
}

func checkRelative(d string) error {
	if d == "" {
		return fmt.Errorf("the directory is empty")
	}
	if strings.HasPrefix(d, "/") {
		return fmt.Errorf("the directory is absolute; it is relative to the claim's root")
	}
	for _, part := range strings.Split(d, "/") {
		if part == "" || part == "." || part == ".." {
			return fmt.Errorf("the directory has an empty, \".\" or \"..\" component")
		}
	}
	return nil
}

// plainFieldName is a template field without format spec, conversion, index
// or attribute.
var plainFieldName = regexp.MustCompile(`^[a-z_]+$`)

// fancyField returns the first field of t that is not plain, braces
// included; "" when every field is plain.
func fancyField(t string) string {
	t = strings.NewReplacer("{{", "", "}}", "").Replace(t)
	for {
		i := strings.IndexByte(t, '{')
		if i < 0 {
			return ""
		}
		j := strings.IndexByte(t[i:], '}')
		if j < 0 {
			return t[i:]
		}
		if f := t[i+1 : i+j]; !plainFieldName.MatchString(f) {
			return t[i : i+j+1]
		}
		t = t[i+j+1:]
	}
}
