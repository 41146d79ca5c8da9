package migration

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// runCopyScript runs CopyScript with its paths moved under dir.
func runCopyScript(t *testing.T, dir string) (string, error) {
	t.Helper()
	script := strings.NewReplacer(
		"/src/", filepath.Join(dir, "src")+"/",
		"/dst/", filepath.Join(dir, "dst")+"/",
		"/tmp/.count/", filepath.Join(dir, "count")+"/",
		"/dev/termination-log", filepath.Join(dir, "termination-log"),
	).Replace(CopyScript)
	out, err := exec.Command("sh", "-c", script).CombinedOutput()
	msg, _ := os.ReadFile(filepath.Join(dir, "termination-log"))
	if err != nil {
		return string(out), err
	}
	return string(msg), nil
}

// The copy Job's script, run here with the local rsync on a home with the
// things a copy must keep: permissions, times, hard links, sparse files,
// symlinks, empty files and directories. (In the cluster it runs in the
// migration.copy_image container; no test here runs that Job.)
func TestCopyScript(t *testing.T) {
	if _, err := exec.LookPath("rsync"); err != nil {
		t.Fatal("rsync is needed (make test installs it): ", err)
	}
	dir := t.TempDir()
	src, dst := filepath.Join(dir, "src"), filepath.Join(dir, "dst")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(src, "work", "empty"), 0o750))
	must(os.MkdirAll(dst, 0o755))
	must(os.WriteFile(filepath.Join(src, "notebook.ipynb"), []byte(`{"cells": []}`), 0o640))
	must(os.Link(filepath.Join(src, "notebook.ipynb"), filepath.Join(src, "work", "hardlink.ipynb")))
	must(os.Symlink("../notebook.ipynb", filepath.Join(src, "work", "link")))
	must(os.WriteFile(filepath.Join(src, "work", ".empty"), nil, 0o600))
	sparse, err := os.Create(filepath.Join(src, "sparse.bin"))
	must(err)
	must(sparse.Truncate(64 << 20))
	_, err = sparse.WriteAt([]byte("end"), 64<<20-3)
	must(err)
	must(sparse.Close())
	if os.Getuid() == 0 { // as in the Job: numeric ownership is kept
		must(os.Lchown(filepath.Join(src, "notebook.ipynb"), 1000, 100))
	}

	msg, err := runCopyScript(t, dir)
	if err != nil {
		t.Fatalf("script failed: %v\n%s", err, msg)
	}
	v, err := ParseVerification(msg)
	if err != nil {
		t.Fatal(err)
	}
	// ., notebook, sparse.bin, work, work/empty, work/hardlink, work/link, work/.empty
	if v.Files != 8 || v.Bytes != int64(len(`{"cells": []}`))*2+64<<20+int64(len("../notebook.ipynb")) {
		t.Errorf("verification %+v", v)
	}
	stat := func(p string) *syscall.Stat_t {
		t.Helper()
		fi, err := os.Lstat(p)
		must(err)
		return fi.Sys().(*syscall.Stat_t)
	}
	a, b := stat(filepath.Join(dst, "notebook.ipynb")), stat(filepath.Join(dst, "work", "hardlink.ipynb"))
	if os.Getuid() == 0 && (a.Uid != 1000 || a.Gid != 100) {
		t.Errorf("owner %d:%d, want 1000:100", a.Uid, a.Gid)
	}
	if a.Ino != b.Ino {
		t.Errorf("the hard link became two files")
	}
	if got := stat(filepath.Join(dst, "work")).Mode & 0o777; got != 0o750 {
		t.Errorf("directory mode %o, want 750", got)
	}
	if a.Mode&0o777 != 0o640 {
		t.Errorf("file mode %o, want 640", a.Mode&0o777)
	}
	if s := stat(filepath.Join(dst, "sparse.bin")); s.Size != 64<<20 || s.Blocks*512 > 1<<20 {
		t.Errorf("sparse file: size %d, %d bytes allocated", s.Size, s.Blocks*512)
	}
	if l, err := os.Readlink(filepath.Join(dst, "work", "link")); err != nil || l != "../notebook.ipynb" {
		t.Errorf("symlink: %q, %v", l, err)
	}
	if st, ss := stat(filepath.Join(dst, "notebook.ipynb")), stat(filepath.Join(src, "notebook.ipynb")); st.Mtim != ss.Mtim {
		t.Errorf("modification time not kept")
	}

	// A second run (a resumed copy) sends nothing new and verifies again.
	if msg2, err := runCopyScript(t, dir); err != nil || msg2 != msg {
		t.Errorf("second run: %v %q, first %q", err, msg2, msg)
	}
	// No source: the Job fails, nothing is reported as verified.
	must(os.RemoveAll(src))
	must(os.Remove(filepath.Join(dir, "termination-log")))
	if out, err := runCopyScript(t, dir); err == nil {
		t.Errorf("the script succeeded without a source: %s", out)
	}
}

// runVerifyScript runs VerifyScript with its paths moved under dir.
func runVerifyScript(t *testing.T, dir string) (string, error) {
	t.Helper()
	log := filepath.Join(dir, "verify-log")
	_ = os.Remove(log)
	script := strings.NewReplacer(
		"/src/", filepath.Join(dir, "src")+"/",
		"/dst/", filepath.Join(dir, "dst")+"/",
		"/dev/termination-log", log,
	).Replace(VerifyScript)
	out, err := exec.Command("sh", "-c", script).CombinedOutput()
	msg, _ := os.ReadFile(log)
	return string(msg) + string(out), err
}

// The verification made right before a copied source is deleted: it passes
// when the new home holds everything of the old one (also after the user
// changed or added files in the new home), and fails when the old home holds
// something the new one lacks: a file written to the old home after the
// copy, or one the new home no longer has.
func TestVerifyScript(t *testing.T) {
	if _, err := exec.LookPath("rsync"); err != nil {
		t.Fatal("rsync is needed (make test installs it): ", err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	setup := func(t *testing.T) string {
		dir := t.TempDir()
		src := filepath.Join(dir, "src")
		must(os.MkdirAll(filepath.Join(src, "work"), 0o750))
		must(os.MkdirAll(filepath.Join(dir, "dst"), 0o755))
		must(os.WriteFile(filepath.Join(src, "notes.md"), []byte("v1"), 0o640))
		must(os.WriteFile(filepath.Join(src, "work", "a.py"), []byte("print(1)"), 0o640))
		if msg, err := runCopyScript(t, dir); err != nil {
			t.Fatalf("copy: %v %s", err, msg)
		}
		return dir
	}
	later := time.Now().Add(time.Hour)
	cases := []struct {
		name   string
		change func(dir string)
		ok     bool
	}{
		{"right after the copy", func(string) {}, true},
		{"the user changed and added files in the new home", func(dir string) {
			p := filepath.Join(dir, "dst", "notes.md")
			must(os.WriteFile(p, []byte("v2, edited in the new home"), 0o640))
			must(os.Chtimes(p, later, later))
			must(os.WriteFile(filepath.Join(dir, "dst", "work", "new.py"), nil, 0o640))
		}, true},
		{"written to the old home after the copy", func(dir string) {
			p := filepath.Join(dir, "src", "notes.md")
			must(os.WriteFile(p, []byte("v2, written to the old home"), 0o640))
			must(os.Chtimes(p, later, later))
		}, false},
		{"a file only the old home has", func(dir string) {
			must(os.WriteFile(filepath.Join(dir, "src", "work", "late.py"), []byte("x"), 0o640))
		}, false},
		{"same size and time, other content", func(dir string) {
			p := filepath.Join(dir, "src", "work", "a.py")
			fi, err := os.Stat(p)
			must(err)
			must(os.WriteFile(p, []byte("print(2)"), 0o640))
			must(os.Chtimes(p, fi.ModTime(), fi.ModTime()))
		}, false},
	}
	if os.Getuid() != 0 {
		cases = append(cases, struct {
			name   string
			change func(dir string)
			ok     bool
		}{"a directory of the old home that cannot be read", func(dir string) {
			must(os.Chmod(filepath.Join(dir, "src", "work"), 0))
			t.Cleanup(func() { _ = os.Chmod(filepath.Join(dir, "src", "work"), 0o750) })
		}, false})
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := setup(t)
			tc.change(dir)
			out, err := runVerifyScript(t, dir)
			if (err == nil) != tc.ok {
				t.Errorf("verification passed = %v, want %v: %s", err == nil, tc.ok, out)
			}
		})
	}
	// rsync fails (here: an image without it): the verification fails.
	t.Run("rsync fails", func(t *testing.T) {
		dir := setup(t)
		script := strings.NewReplacer("/src/", filepath.Join(dir, "src")+"/", "/dst/", filepath.Join(dir, "dst")+"/",
			"/dev/termination-log", filepath.Join(dir, "log"),
			"rsync -aHS", "rsync --no-such-option -aHS").Replace(VerifyScript)
		if out, err := exec.Command("sh", "-c", script).CombinedOutput(); err == nil {
			t.Errorf("verification passed although rsync failed: %s", out)
		}
		cmd := exec.Command("sh", "-c", strings.ReplaceAll(VerifyScript, "/dev/termination-log", filepath.Join(dir, "log2")))
		cmd.Env = []string{"PATH=/nonexistent"}
		if out, err := cmd.CombinedOutput(); err == nil {
			t.Errorf("verification passed without rsync: %s", out)
		}
	})
}
