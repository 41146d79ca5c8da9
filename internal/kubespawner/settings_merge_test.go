package kubespawner

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The merge's directory Job: a missing directory is made (owner and mode
// as the layout's), an empty one is taken; a directory that holds a file,
// a file in its place, and an earlier place of the home that holds files
// are refused with nothing changed; nothing is renamed into it.
func TestMergeDirectoryCommand(t *testing.T) {
	run := func(t *testing.T, shell, root string, earlier ...string) (string, error) {
		cmd, vars := MergeDirectoryCommand(Directory{Path: "home/ada", MovedFrom: []string{"old/{username}"}, UID: int64(os.Getuid()), GID: int64(os.Getgid()), Mode: "0750"}, earlier)
		c := exec.Command(shell, "-c", strings.ReplaceAll(cmd[2], SharedRoot, root))
		c.Env = []string{"PATH=" + os.Getenv("PATH")}
		for _, v := range vars {
			c.Env = append(c.Env, v.Name+"="+v.Value)
		}
		out, err := c.CombinedOutput()
		return string(out), err
	}
	for _, shell := range shells(t) {
		t.Run(filepath.Base(shell), func(t *testing.T) {
			root := t.TempDir()
			if out, err := run(t, shell, root); err != nil {
				t.Fatalf("missing directory: %v\n%s", err, out)
			}
			if fi, err := os.Stat(filepath.Join(root, "home/ada")); err != nil || fi.Mode().Perm() != 0o750 {
				t.Fatalf("made: %v %v", fi, err)
			}
			if out, err := run(t, shell, root); err != nil {
				t.Fatalf("empty directory: %v\n%s", err, out)
			}
			writeHome(t, filepath.Join(root, "old/ada"), map[string]string{"notes": "old"})
			if out, err := run(t, shell, root, "old/ada"); err == nil || !strings.Contains(out, "earlier place") {
				t.Fatalf("an earlier place with files was not refused: %v\n%s", err, out)
			}
			if got := readHome(t, filepath.Join(root, "old/ada")); got["notes"] != "old" {
				t.Fatalf("earlier place changed: %v", got)
			}
			if out, err := run(t, shell, root); err != nil {
				t.Fatalf("the earlier place is not one when not given (MovedFrom is not used): %v\n%s", err, out)
			}
			writeHome(t, filepath.Join(root, "home/ada"), map[string]string{".bashrc": "x"})
			if out, err := run(t, shell, root); err == nil || !strings.Contains(out, "holds files") {
				t.Fatalf("a directory with a file was not refused: %v\n%s", err, out)
			}
			if got := readHome(t, filepath.Join(root, "home/ada")); len(got) != 1 || got[".bashrc"] != "x" {
				t.Fatalf("directory changed: %v", got)
			}
			if err := os.RemoveAll(filepath.Join(root, "home/ada")); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(root, "home/ada"), nil, 0o600); err != nil {
				t.Fatal(err)
			}
			if out, err := run(t, shell, root); err == nil {
				t.Fatalf("a file in the directory's place was not refused:\n%s", out)
			}
		})
	}
}
