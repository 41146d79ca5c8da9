package kubespawner

import (
	"fmt"
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
	Image    string // the init container's image: sh, mkdir, chown, chmod
}

// SharedInitContainer is the name of the init container that creates a
// user's missing directory on the shared claim.
const SharedInitContainer = "home-directory"

// sharedRoot is where the init container mounts the shared claim.
const sharedRoot = "/mnt/homes"

// initContainer creates the user's directory when it is missing, with the
// owner and mode configured; an existing directory is left as it is. The
// path comes in through the environment (KubeSpawner expands the
// template there as in the mount), so no user name is ever shell text.
func (s SharedHome) initContainer() map[string]any {
	script := `set -eu
case "$HOME_DIRECTORY" in ""|/*|..|../*|*/..|*/../*) echo "refusing home directory '$HOME_DIRECTORY'" >&2; exit 1;; esac
d="` + sharedRoot + `/$HOME_DIRECTORY"
if [ ! -e "$d" ]; then
  mkdir -p "$d"
  chown "$HOME_UID:$HOME_GID" "$d"
  chmod "$HOME_MODE" "$d"
fi`
	return map[string]any{
		"name":    SharedInitContainer,
		"image":   s.Image,
		"command": []string{"sh", "-c", script},
		"env": []map[string]any{
			{"name": "HOME_DIRECTORY", "value": s.SubPathTemplate},
			{"name": "HOME_UID", "value": fmt.Sprint(s.UID)},
			{"name": "HOME_GID", "value": fmt.Sprint(s.GID)},
			{"name": "HOME_MODE", "value": s.Mode},
		},
		"securityContext": map[string]any{
			"runAsUser": 0, "runAsGroup": 0, "runAsNonRoot": false, "allowPrivilegeEscalation": false,
			"capabilities": map[string]any{"drop": []string{"ALL"}, "add": []string{"CHOWN", "FOWNER", "DAC_OVERRIDE"}},
		},
		"volumeMounts": []map[string]any{{"name": HomeVolumeName, "mountPath": sharedRoot}},
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

// sharedSettings mounts the user's directory of the shared claim as the
// home. KubeSpawner creates no claim for the user (storage_pvc_ensure) and
// never deletes one when a user or a named server is deleted (delete_pvc:
// with a template that names the shared claim it would delete everyone's
// homes). pvc_name_template stays the per-user claims' template, which a
// move to per-user claims creates.
func (h HomeStorage) sharedSettings(mount string) map[string]any {
	s := map[string]any{
		"storage_pvc_ensure":   false,
		"delete_pvc":           false,
		"storage_access_modes": []string{h.AccessMode},
		"storage_capacity":     h.Capacity,
		"pvc_name_template":    h.NameTemplate,
		"slug_scheme":          string(h.Scheme),
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
// claim's root (relative, without "." or ".." components).
func CheckSubPathTemplate(t string) error {
	if err := ValidateTemplate(t); err != nil {
		return err
	}
	var dirs []string
	for _, u := range []string{"jovyan", "Ada.Lovelace@example.org"} {
		for _, scheme := range []Scheme{SchemeSafe, SchemeEscape} {
			d, err := Expand(t, u, "", scheme)
			if err != nil {
				return err
			}
			if err := checkRelative(d); err != nil {
				return fmt.Errorf("%q gives %q for user %s: %w", t, d, u, err)
			}
			dirs = append(dirs, d)
		}
	}
	if dirs[0] == dirs[2] {
		return fmt.Errorf("%q gives every user the same directory %q: it must name the user ({username}, {escaped_username}, ...)", t, dirs[0])
	}
	return nil
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
