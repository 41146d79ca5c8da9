package kubespawner

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestCheckSubPathTemplate(t *testing.T) {
	for _, ok := range []string{"{username}", "home/{username}", "{escaped_username}", "{user_server}", "homes/{safe_username}"} {
		if err := CheckSubPathTemplate(ok); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	for bad, why := range map[string]string{
		"home":                         "same directory",
		"/home/{username}":             "absolute",
		"../{username}":                `".."`,
		"{username}{servername}":       "two fields",
		"home/{unescaped_username}":    "raw name",
		"{username}/../{username}":     `".."`,
		"home/{username}/{servername}": "empty", // the default server's directory ends in "/"
		"{username:.10}":               "plain fields",
		"{username!r}":                 "plain fields",
		"{username[0]}":                "plain fields",
	} {
		if err := CheckSubPathTemplate(bad); err == nil || !strings.Contains(err.Error(), why) {
			t.Errorf("%s: %v, want an error about %s", bad, err, why)
		}
	}
}

// The init container's script, run by sh on real directories: a missing
// directory is made with the owner and mode (renamed into place), an
// existing one is left as it is, and a path through a symbolic link, a
// file in the way or a "." component is refused. KubeSpawner formats it
// with str.format: it holds no braces.
func TestSharedInitScript(t *testing.T) {
	s := SharedHome{Claim: "home", SubPathTemplate: "{username}", UID: int64(os.Getuid()), GID: int64(os.Getgid()), Mode: "0710", Image: "x"}
	c := s.initContainer()
	script := c["command"].([]string)[2]
	if strings.ContainsAny(script, "{}") {
		t.Fatalf("the script has braces, which KubeSpawner's str.format would expand:\n%s", script)
	}
	root := t.TempDir()
	run := func(dir string) (string, error) {
		cmd := exec.Command("sh", "-c", strings.ReplaceAll(script, SharedRoot, root))
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME_DIRECTORY=" + dir, "HOME_UID=" + fmt.Sprint(s.UID), "HOME_GID=" + fmt.Sprint(s.GID), "HOME_MODE=" + s.Mode}
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := run("home/alice"); err != nil {
		t.Fatalf("alice: %v %s", err, out)
	}
	fi, err := os.Stat(filepath.Join(root, "home/alice"))
	if err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o710 {
		t.Fatalf("alice's directory: %v %v", fi, err)
	}
	if entries, _ := os.ReadDir(filepath.Join(root, "home")); len(entries) != 1 {
		t.Errorf("left behind: %v", entries)
	}
	// An existing directory keeps its mode and content.
	bob := filepath.Join(root, "home/bob")
	if err := os.MkdirAll(bob, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bob, "notes"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := run("home/bob"); err != nil {
		t.Fatalf("bob: %v %s", err, out)
	}
	if fi, _ := os.Stat(bob); fi.Mode().Perm() != 0o755 {
		t.Errorf("bob's existing directory changed mode: %v", fi.Mode())
	}
	// A symbolic link on the way (alice's own directory pointing at bob's).
	if err := os.Symlink(bob, filepath.Join(root, "home/alice/work")); err != nil {
		t.Fatal(err)
	}
	if out, err := run("home/alice/work"); err == nil || !strings.Contains(out, "symbolic link") {
		t.Errorf("through a symbolic link: %v %s", err, out)
	}
	if err := os.WriteFile(filepath.Join(root, "home/file"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{"home/file", "home/.", "./home", "", "/etc", "home//x", "../x"} {
		if out, err := run(dir); err == nil {
			t.Errorf("%q was accepted: %s", dir, out)
		}
	}
}

// A directory that another of the user's servers made at the same moment
// (between the check and the mkdir) is kept as it is, never replaced; a
// chown that fails leaves no directory behind.
func TestSharedInitScript_raceAndFailedChown(t *testing.T) {
	root := t.TempDir()
	run := func(dir, uid string, before string) (string, error) {
		cmd, vars := SharedDirectoryCommand(Directory{Path: dir, Mode: "0700"})
		script := strings.ReplaceAll(cmd[2], SharedRoot, root)
		// The other server's mkdir lands right before this one's.
		script = strings.Replace(script, `if ! mkdir "$d"`, before+`if ! mkdir "$d"`, 1)
		c := exec.Command("sh", "-c", script)
		c.Env = []string{"PATH=" + os.Getenv("PATH")}
		for _, v := range vars {
			if v.Name == "HOME_UID" {
				v.Value = uid
			}
			c.Env = append(c.Env, v.Name+"="+v.Value)
		}
		out, err := c.CombinedOutput()
		return string(out), err
	}
	other := `mkdir "$d"; echo mine > "$d/file"; `
	if out, err := run("alice", fmt.Sprint(os.Getuid()), other); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	if b, err := os.ReadFile(filepath.Join(root, "alice/file")); err != nil || string(b) != "mine\n" {
		t.Fatalf("the other server's directory was replaced: %q %v", b, err)
	}
	if out, err := run("bob", "no-such-user", ""); err == nil || !strings.Contains(out, "removed it") {
		t.Fatalf("a failed chown: %v %s", err, out)
	}
	if _, err := os.Stat(filepath.Join(root, "bob")); !os.IsNotExist(err) {
		t.Fatalf("a failed chown left %s: %v", filepath.Join(root, "bob"), err)
	}
}

// While homes move out of the shared layout, KubeSpawner mounts the
// user's own claim as in the per-user layout but never creates or deletes
// one (a missing claim is a home still on the shared claim), user
// namespaces stay off, and where those homes are travels under
// SplitFromKey, with the init container the shared layout renders.
func TestSettings_splitFrom(t *testing.T) {
	shared := SharedHome{Claim: "home-nfs", SubPathTemplate: "home/{username}", UID: 1000, GID: 100, Mode: "0700", Image: "busybox:1.36"}
	h := HomeStorage{AccessMode: "ReadWriteOnce", StorageClass: "longhorn", Capacity: "10Gi", NameTemplate: "claim-{username}", Scheme: SchemeSafe,
		UserNamespaceTemplate: "{hubnamespace}-{username}", SplitFrom: &shared}
	s := h.Settings()
	if s["storage_pvc_ensure"] != false || s["delete_pvc"] != false || s["enable_user_namespaces"] != false {
		t.Errorf("storage_pvc_ensure %v, delete_pvc %v, enable_user_namespaces %v", s["storage_pvc_ensure"], s["delete_pvc"], s["enable_user_namespaces"])
	}
	if _, ok := s["user_namespace_template"]; ok {
		t.Errorf("user_namespace_template %v", s["user_namespace_template"])
	}
	if _, ok := s["init_containers"]; ok {
		t.Errorf("init_containers in the settings: %v", s["init_containers"])
	}
	vols := s["volumes"].([]map[string]any)
	if len(vols) != 1 || vols[0]["persistentVolumeClaim"].(map[string]any)["claimName"] != "{pvc_name}" {
		t.Errorf("volumes %v", vols)
	}
	mounts := s["volume_mounts"].([]map[string]any)
	if _, sub := mounts[0]["subPath"]; len(mounts) != 1 || sub || mounts[0]["mountPath"] != "/home/jovyan" {
		t.Errorf("volume_mounts %v", mounts)
	}
	if s["pvc_name_template"] != "claim-{username}" || s["storage_class"] != "longhorn" {
		t.Errorf("pvc_name_template %v, storage_class %v", s["pvc_name_template"], s["storage_class"])
	}
	from, _ := s[SplitFromKey].(map[string]any)
	if from["claim"] != "home-nfs" || from["sub_path"] != "home/{username}" {
		t.Errorf("%s: %v", SplitFromKey, from)
	}
	want := (HomeStorage{Shared: &shared}).Settings()["init_containers"].([]map[string]any)[0]
	if fmt.Sprint(from["init_container"]) != fmt.Sprint(want) {
		t.Errorf("init container %v, the shared layout's %v", from["init_container"], want)
	}
	if _, ok := (HomeStorage{AccessMode: "ReadWriteOnce"}).Settings()[SplitFromKey]; ok {
		t.Errorf("the per-user layout has %s", SplitFromKey)
	}
}
