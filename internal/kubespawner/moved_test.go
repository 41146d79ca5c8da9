package kubespawner

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestSchemeFree(t *testing.T) {
	for _, c := range []struct {
		template string
		scheme   Scheme
		want     string // "" when it must fail
	}{
		{"{username}", SchemeEscape, "{escaped_username}"},
		{"{username}", SchemeSafe, "{safe_username}"},
		{"home/{username}", SchemeEscape, "home/{escaped_username}"},
		{"{user_server}", SchemeSafe, "{safe_user_server}"},
		{"{user_server}", SchemeEscape, "{escaped_user_server}"},
		{"homes/{username}/{user_server}", SchemeSafe, "homes/{safe_username}/{safe_user_server}"},
		{"{escaped_username}", SchemeSafe, "{escaped_username}"},
		{"{{x}}/{username}", SchemeEscape, "{{x}}/{escaped_username}"},
		// {escaped_user_server} keeps "--" of the default server before "/x".
		{"{user_server}/x", SchemeEscape, ""},
	} {
		got, err := SchemeFree(c.template, c.scheme)
		if c.want == "" {
			if err == nil {
				t.Errorf("%s (%s): %q, want an error", c.template, c.scheme, got)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%s (%s): %q %v, want %q", c.template, c.scheme, got, err, c.want)
		}
	}
	// Whatever scheme expands it, the scheme-free template gives what the
	// template gave under its own scheme.
	names := []string{"jovyan", "UPPER", "a.b", "a-2eb", "x_y", "élodie", "a", "1abc", "--", strings.Repeat("long", 20)}
	for _, tmpl := range []string{"{username}", "home/{username}", "{user_server}", "h/{username}/{servername}s"} {
		for _, scheme := range []Scheme{SchemeSafe, SchemeEscape} {
			free, err := SchemeFree(tmpl, scheme)
			if err != nil {
				continue // checked above where it must not fail
			}
			for _, u := range names {
				for _, srv := range []string{"", "gpu", "Big.Server"} {
					want, err1 := Expand(tmpl, u, srv, scheme)
					for _, other := range []Scheme{SchemeSafe, SchemeEscape} {
						got, err2 := Expand(free, u, srv, other)
						if err1 != nil || err2 != nil || got != want {
							t.Errorf("%s (%s) as %s under %s for %q/%q: %q %v, want %q %v", tmpl, scheme, free, other, u, srv, got, err2, want, err1)
						}
					}
				}
			}
		}
	}
}

// runDirectoryScript runs the init container's script with sh on real
// directories below root (standing for SharedRoot), with the environment
// of d; before is shell text run right before the named line of the
// script (a concurrent server's doing), "" for none.
func runDirectoryScript(t *testing.T, shell, root string, d Directory, at, before string) (string, error) {
	t.Helper()
	cmd, vars := SharedDirectoryCommand(d)
	script := strings.ReplaceAll(cmd[2], SharedRoot, root)
	if before != "" {
		if !strings.Contains(script, at) {
			t.Fatalf("the script has no line %q", at)
		}
		script = strings.Replace(script, at, before+at, 1)
	}
	c := exec.Command(shell, "-c", script)
	c.Env = []string{"PATH=" + os.Getenv("PATH")}
	for _, v := range vars {
		c.Env = append(c.Env, v.Name+"="+v.Value)
	}
	out, err := c.CombinedOutput()
	return string(out), err
}

// shells are the shells the script runs under here: dash (sh) and
// BusyBox's, which the images of init containers usually are.
func shells(t *testing.T) []string {
	p, err := exec.LookPath("busybox")
	if err != nil {
		t.Fatalf("no busybox (the test bed's node image has it; make nodedeps installs it): %v", err)
	}
	dir := t.TempDir()
	for _, tool := range []string{"sh", "mv", "ls", "mkdir", "chown", "chmod", "rmdir", "dirname"} {
		if err := os.Symlink(p, filepath.Join(dir, tool)); err != nil {
			t.Fatal(err)
		}
	}
	return []string{"sh", filepath.Join(dir, "sh")}
}

func writeHome(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o750); err != nil {
		t.Fatal(err)
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

func readHome(t *testing.T, dir string) map[string]string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	got := map[string]string{}
	for _, e := range entries {
		b, _ := os.ReadFile(filepath.Join(dir, e.Name()))
		got[e.Name()] = string(b)
	}
	return got
}

// A home moved by on_layout_change = "move": a missing directory is the
// earlier one, renamed (its files, mode and inode kept); a home found at
// two places, an earlier place that is a symbolic link or a file, and a
// directory that appears with files right before the rename are refused
// with nothing changed; a rename another server did at the same moment is
// taken as done.
func TestSharedInitScript_moved(t *testing.T) {
	for _, shell := range shells(t) {
		name := "sh"
		if shell != "sh" {
			name = "busybox"
		}
		t.Run(name, func(t *testing.T) {
			root := t.TempDir()
			uid, gid := int64(os.Getuid()), int64(os.Getgid())
			dir := func(user string) Directory {
				return Directory{Path: "new/" + user, MovedFrom: []string{"old/" + user, "older/" + user}, UID: uid, GID: gid, Mode: "0700"}
			}
			at := func(p string) string { return filepath.Join(root, p) }

			// alice: at her earlier place only.
			writeHome(t, at("old/alice"), map[string]string{"notes": "alice's"})
			before, _ := os.Stat(at("old/alice"))
			if out, err := runDirectoryScript(t, shell, root, dir("alice"), "", ""); err != nil {
				t.Fatalf("alice: %v %s", err, out)
			}
			after, err := os.Stat(at("new/alice"))
			if err != nil || !os.SameFile(before, after) || after.Mode().Perm() != 0o750 {
				t.Fatalf("alice's home was not renamed in place: %v %v", after, err)
			}
			if got := readHome(t, at("new/alice")); got["notes"] != "alice's" {
				t.Errorf("alice's files: %v", got)
			}
			if _, err := os.Stat(at("old/alice")); !os.IsNotExist(err) {
				t.Errorf("alice's earlier place is still there: %v", err)
			}
			// Spawning again changes nothing.
			if out, err := runDirectoryScript(t, shell, root, dir("alice"), "", ""); err != nil {
				t.Fatalf("alice again: %v %s", err, out)
			}

			// bob: his directory exists; an empty earlier one is ignored.
			writeHome(t, at("new/bob"), map[string]string{"notes": "bob's"})
			writeHome(t, at("older/bob"), nil)
			if out, err := runDirectoryScript(t, shell, root, dir("bob"), "", ""); err != nil {
				t.Fatalf("bob: %v %s", err, out)
			}

			// carol: both places hold files; dave: two earlier places.
			writeHome(t, at("new/carol"), map[string]string{"a": "new"})
			writeHome(t, at("old/carol"), map[string]string{"b": "old"})
			writeHome(t, at("old/dave"), map[string]string{"a": "1"})
			writeHome(t, at("older/dave"), map[string]string{"b": "2"})
			for _, u := range []string{"carol", "dave"} {
				if out, err := runDirectoryScript(t, shell, root, dir(u), "", ""); err == nil || !strings.Contains(out, "two places") {
					t.Errorf("%s: %v %s, want a refusal naming two places", u, err, out)
				}
			}
			if readHome(t, at("new/carol"))["a"] != "new" || readHome(t, at("old/carol"))["b"] != "old" ||
				readHome(t, at("old/dave"))["a"] != "1" || readHome(t, at("older/dave"))["b"] != "2" {
				t.Errorf("a refused home changed")
			}
			if _, err := os.Stat(at("new/dave")); !os.IsNotExist(err) {
				t.Errorf("dave got a directory: %v", err)
			}

			// erin: her earlier place is a symbolic link to bob's home.
			if err := os.MkdirAll(at("old"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(at("new/bob"), at("old/erin")); err != nil {
				t.Fatal(err)
			}
			if out, err := runDirectoryScript(t, shell, root, dir("erin"), "", ""); err == nil || !strings.Contains(out, "symbolic link") {
				t.Errorf("erin: %v %s", err, out)
			}
			// frank: nowhere yet: made.
			if out, err := runDirectoryScript(t, shell, root, dir("frank"), "", ""); err != nil {
				t.Fatalf("frank: %v %s", err, out)
			}
			if fi, err := os.Stat(at("new/frank")); err != nil || fi.Mode().Perm() != 0o700 {
				t.Errorf("frank: %v %v", fi, err)
			}

			// gina: another server of hers makes her directory, with a
			// file, right before the rename: refused, nothing lost.
			writeHome(t, at("old/gina"), map[string]string{"notes": "gina's"})
			out, err := runDirectoryScript(t, shell, root, dir("gina"), `  if mv -T`, `  mkdir "$d"; echo other > "$d/x"`+"\n")
			if err == nil {
				t.Errorf("gina: %s", out)
			}
			if readHome(t, at("old/gina"))["notes"] != "gina's" || readHome(t, at("new/gina"))["x"] != "other\n" {
				t.Errorf("gina's homes changed: %v %v", readHome(t, at("old/gina")), readHome(t, at("new/gina")))
			}
			// ivy's named server: her earlier place held the home of all
			// her servers (it names no server); only the default server
			// takes it, the named one starts in a directory of its own.
			writeHome(t, at("old/ivy"), map[string]string{"notes": "ivy's"})
			named := Directory{Path: "new/ivy--gpu", MovedFrom: []string{"old/ivy"}, Server: "gpu", UID: uid, GID: gid, Mode: "0700"}
			if out, err := runDirectoryScript(t, shell, root, named, "", ""); err != nil {
				t.Fatalf("ivy's gpu: %v %s", err, out)
			}
			if readHome(t, at("old/ivy"))["notes"] != "ivy's" || len(readHome(t, at("new/ivy--gpu"))) != 0 {
				t.Errorf("ivy's named server took her home: %v %v", readHome(t, at("old/ivy")), readHome(t, at("new/ivy--gpu")))
			}
			// hank: another server renamed it at the same moment.
			writeHome(t, at("old/hank"), map[string]string{"notes": "hank's"})
			if out, err := runDirectoryScript(t, shell, root, dir("hank"), `  if mv -T`, `  mv -T "$found" "$d"`+"\n"); err != nil {
				t.Errorf("hank: %v %s", err, out)
			}
			if readHome(t, at("new/hank"))["notes"] != "hank's" {
				t.Errorf("hank's home: %v", readHome(t, at("new/hank")))
			}
		})
	}
}

// A place that names no server was the home of all the user's servers:
// the script is told so (only the default server takes it); one that names
// the server is each server's own.
func TestSharedDirectoryCommand_placesOfAllServers(t *testing.T) {
	_, vars := SharedDirectoryCommand(Directory{Path: "{user_server}", MovedFrom: []string{"{safe_username}", "x/{safe_user_server}"}, Server: "{servername}"})
	env := map[string]string{}
	for _, v := range vars {
		env[v.Name] = v.Value
	}
	if env[MovedFromVar(0)] != "{safe_username}" || env[MovedFromVar(0)+"_USER"] != "1" || env[MovedFromVar(1)] != "x/{safe_user_server}" || env[MovedFromVar(1)+"_USER"] != "" || env["HOME_SERVER"] != "{servername}" {
		t.Errorf("%v", env)
	}
}

// What the settings tell the init container is read back, in order, in
// the shared layout and while homes move out of it.
func TestMovedFromOf(t *testing.T) {
	shared := SharedHome{Claim: "home-nfs", SubPathTemplate: "homes_v2/{username}", UID: 1000, GID: 100, Mode: "0700", Image: "busybox",
		MovedFrom: []string{"{escaped_username}", "old_/{safe_user_server}"}}
	for _, h := range []HomeStorage{
		{AccessMode: "ReadWriteMany", Capacity: "1Gi", NameTemplate: "claim-{username}", Scheme: SchemeSafe, Shared: &shared},
		{AccessMode: "ReadWriteMany", Capacity: "1Gi", NameTemplate: "claim-{username}", Scheme: SchemeSafe, SplitFrom: &shared},
	} {
		b, err := json.Marshal(h.Settings())
		if err != nil {
			t.Fatal(err)
		}
		if got := MovedFromOf(string(b)); !slices.Equal(got, shared.MovedFrom) {
			t.Errorf("%q, want %q", got, shared.MovedFrom)
		}
	}
	if got := MovedFromOf(""); got != nil {
		t.Errorf("none: %q", got)
	}
}
