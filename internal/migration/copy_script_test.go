package migration

import (
	"fmt"
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
	return runCopyScriptAs(t, dir)
}

// runCopyScriptAs runs CopyScript with its paths moved under dir, through
// the command prefix (setpriv and its options).
func runCopyScriptAs(t *testing.T, dir string, prefix ...string) (string, error) {
	t.Helper()
	script := strings.NewReplacer(
		"/src/", filepath.Join(dir, "src")+"/",
		"/dst/", filepath.Join(dir, "dst")+"/",
		"/tmp/.count/", filepath.Join(dir, "count")+"/",
		"/dev/termination-log", filepath.Join(dir, "termination-log"),
	).Replace(CopyScript)
	args := append(prefix, "sh", "-c", script)
	out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
	msg, _ := os.ReadFile(filepath.Join(dir, "termination-log"))
	if err != nil {
		return string(out), err
	}
	return string(msg), nil
}

// needTool fails the test when a program it runs is missing, naming the
// Debian package that has it (make test installs them: nodedeps).
func needTool(t *testing.T, tool, pkg string) {
	t.Helper()
	if _, err := exec.LookPath(tool); err != nil {
		t.Fatalf("%s is needed (Debian package %s; make test installs it): %v", tool, pkg, err)
	}
}

// run runs a program in dir and returns its output; it fails the test if
// the program fails.
func run(t *testing.T, dir string, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// acls and xattrs list the POSIX ACLs and the user.* extended attributes
// of every file under dir, with paths relative to dir.
func acls(t *testing.T, dir string) string {
	t.Helper()
	return run(t, dir, "getfacl", "-R", "-n", "-p", ".")
}

func xattrs(t *testing.T, dir string) string {
	t.Helper()
	return run(t, dir, "getfattr", "-R", "-d", "-h", "-m", `^user\.`, ".")
}

// The copy Job's script, run here with the local rsync on a home with the
// things a copy must keep: permissions, times, hard links, sparse files,
// symlinks, empty files and directories, POSIX ACLs (a file's and a
// directory's default ACL) and user extended attributes. (In the cluster
// it runs in the migration.copy_image container; no test here runs that
// Job.)
func TestCopyScript(t *testing.T) {
	if _, err := exec.LookPath("rsync"); err != nil {
		t.Fatal("rsync is needed (make test installs it): ", err)
	}
	needTool(t, "setfacl", "acl")
	needTool(t, "getfacl", "acl")
	needTool(t, "setfattr", "attr")
	needTool(t, "getfattr", "attr")
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
	run(t, src, "setfacl", "-m", "u:1234:r", "notebook.ipynb")
	run(t, src, "setfacl", "-d", "-m", "g:2345:rx", "work")
	run(t, src, "setfattr", "-n", "user.origin", "-v", "lab", "sparse.bin")
	run(t, src, "setfattr", "-n", "user.project", "-v", "p1", "work")
	if os.Getuid() == 0 { // the target's SELinux label is its own: never copied
		run(t, src, "setfattr", "-n", "security.selinux", "-v", "system_u:object_r:src_t:s0", "sparse.bin")
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

	if a, b := acls(t, dst), acls(t, src); a != b || !strings.Contains(a, "user:1234:r--") || !strings.Contains(a, "default:group:2345:r-x") {
		t.Errorf("ACLs not kept:\n%s\nsource:\n%s", a, b)
	}
	if a, b := xattrs(t, dst), xattrs(t, src); a != b || !strings.Contains(a, `user.origin="lab"`) || !strings.Contains(a, `user.project="p1"`) {
		t.Errorf("extended attributes not kept:\n%s\nsource:\n%s", a, b)
	}
	if os.Getuid() == 0 {
		if out, err := exec.Command("getfattr", "-n", "security.selinux", filepath.Join(dst, "sparse.bin")).CombinedOutput(); err == nil {
			t.Errorf("the source's SELinux label was copied: %s", out)
		}
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

// jobCapabilities are the capabilities kube.CopyJob gives the copy and
// verification Jobs' root (kube.JobCapabilities: all others dropped, no new
// privileges), as setpriv takes them. No DAC_READ_SEARCH: Pod Security's
// baseline level refuses it.
const jobCapabilities = "-all,+chown,+dac_override,+fowner,+fsetid"

// asJob is the command prefix that runs a script as root with only the
// Job's capabilities.
var asJob = []string{"setpriv", "--no-new-privs", "--inh-caps=-all", "--bounding-set=" + jobCapabilities, "--"}

// The copy Job's script as root with only the Job's capabilities: it keeps
// the owners, modes, ACLs and user extended attributes of files that belong
// to a user and that root may not read by their modes (FOWNER lets it set
// an ACL, an xattr or a time on a file it does not own). On a target whose
// file system keeps neither ACLs nor extended attributes (ramfs), a home
// without them is copied, and one with them fails the Job, its log naming
// the file: nothing is dropped silently.
func TestCopyScriptAsTheJob(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("runs as root, as the copy Job does (make test runs as root)")
	}
	needTool(t, "rsync", "rsync")
	needTool(t, "setpriv", "util-linux")
	needTool(t, "setfacl", "acl")
	needTool(t, "getfacl", "acl")
	needTool(t, "setfattr", "attr")
	needTool(t, "getfattr", "attr")
	must := func(t *testing.T, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	// home is a user's home under dir/src: private modes, owned by 1000:100,
	// with ACLs and extended attributes when rich, and a directory and a
	// file with no permission bits at all (mode 000), which only
	// DAC_OVERRIDE lets root read.
	home := func(t *testing.T, dir string, rich bool) string {
		src := filepath.Join(dir, "src")
		must(t, os.MkdirAll(filepath.Join(src, "private"), 0o700))
		must(t, os.WriteFile(filepath.Join(src, "private", "key.txt"), []byte("secret"), 0o600))
		must(t, os.WriteFile(filepath.Join(src, "notes.md"), []byte("v1"), 0o600))
		must(t, os.MkdirAll(filepath.Join(src, "locked"), 0o700))
		must(t, os.WriteFile(filepath.Join(src, "locked", "data.bin"), []byte("locked away"), 0o600))
		if rich {
			run(t, src, "setfacl", "-m", "u:1234:r", "notes.md")
			run(t, src, "setfacl", "-d", "-m", "u:1234:rx", "private")
			run(t, src, "setfattr", "-n", "user.origin", "-v", "lab", "private/key.txt")
		}
		for _, p := range []string{".", "private", "private/key.txt", "notes.md", "locked", "locked/data.bin"} {
			must(t, os.Lchown(filepath.Join(src, p), 1000, 100))
		}
		must(t, os.Chmod(filepath.Join(src, "locked", "data.bin"), 0))
		must(t, os.Chmod(filepath.Join(src, "locked"), 0))
		return src
	}
	// locked is the content and mode of locked/data.bin under root, read
	// by this test's process (all capabilities).
	locked := func(t *testing.T, root string) string {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(root, "locked", "data.bin"))
		must(t, err)
		dfi, err := os.Stat(filepath.Join(root, "locked"))
		must(t, err)
		fi, err := os.Stat(filepath.Join(root, "locked", "data.bin"))
		must(t, err)
		return fmt.Sprintf("%s %o %o", b, dfi.Mode().Perm(), fi.Mode().Perm())
	}

	t.Run("the Job's capabilities keep ACLs and xattrs", func(t *testing.T) {
		dir := t.TempDir()
		src, dst := home(t, dir, true), filepath.Join(dir, "dst")
		must(t, os.MkdirAll(dst, 0o755))
		if msg, err := runCopyScriptAs(t, dir, asJob...); err != nil {
			t.Fatalf("copy with the Job's capabilities: %v\n%s", err, msg)
		}
		if a, b := acls(t, dst), acls(t, src); a != b || !strings.Contains(a, "user:1234:r--") || !strings.Contains(a, "# owner: 1000") {
			t.Errorf("ACLs or owners not kept:\n%s\nsource:\n%s", a, b)
		}
		if a, b := xattrs(t, dst), xattrs(t, src); a != b || !strings.Contains(a, `user.origin="lab"`) {
			t.Errorf("extended attributes not kept:\n%s\nsource:\n%s", a, b)
		}
		if a := locked(t, dst); a != "locked away 0 0" {
			t.Errorf("the file without permission bits: %q in the copy, want its content and mode 000", a)
		}
	})

	// The verification before an old home's delete runs with the same
	// capabilities: it reads every file, also those nobody may read by
	// their modes, and names one whose content differs there. Without
	// DAC_OVERRIDE it cannot look, and fails: what it passes, it read.
	t.Run("the verification with the Job's capabilities reads every file", func(t *testing.T) {
		dir := t.TempDir()
		home(t, dir, true)
		must(t, os.MkdirAll(filepath.Join(dir, "dst"), 0o755))
		if msg, err := runCopyScriptAs(t, dir, asJob...); err != nil {
			t.Fatalf("copy with the Job's capabilities: %v\n%s", err, msg)
		}
		if out, err := runVerifyScriptAs(t, dir, asJob...); err != nil || out != "verified" {
			t.Fatalf("verification of a fresh copy: %v %s", err, out)
		}
		withoutOverride := []string{"setpriv", "--no-new-privs", "--inh-caps=-all", "--bounding-set=-all,+chown,+fowner,+fsetid", "--"}
		if out, err := runVerifyScriptAs(t, dir, withoutOverride...); err == nil || !strings.Contains(out, "Permission denied") {
			t.Errorf("the verification without DAC_OVERRIDE: %v %s; want a failure that it could not read", err, out)
		}
		// Same size and time, other content, in the file nobody may read.
		p := filepath.Join(dir, "src", "locked", "data.bin")
		fi, err := os.Stat(p)
		must(t, err)
		must(t, os.WriteFile(p, []byte("LOCKED AWAY"), 0))
		must(t, os.Chtimes(p, fi.ModTime(), fi.ModTime()))
		if out, err := runVerifyScriptAs(t, dir, asJob...); err == nil || !strings.Contains(out, "locked/data.bin") {
			t.Errorf("the verification missed a change in a file without permission bits: %v %s", err, out)
		}
	})

	// ramfs keeps neither ACLs nor extended attributes.
	target := func(t *testing.T, dir string) {
		dst := filepath.Join(dir, "dst")
		must(t, os.MkdirAll(dst, 0o755))
		if err := syscall.Mount("ramfs", dst, "ramfs", 0, ""); err != nil {
			t.Fatalf("mount a ramfs (root in make test can): %v", err)
		}
		t.Cleanup(func() { _ = syscall.Unmount(dst, 0) })
		if out, err := exec.Command("setfacl", "-m", "u:1234:r", dst).CombinedOutput(); err == nil {
			t.Fatalf("ramfs took an ACL: the test needs a file system without them (%s)", out)
		}
	}
	for _, tc := range []struct {
		name   string
		change func(t *testing.T, src string)
		names  string // in the log of a copy that fails
	}{
		{"a home without ACLs or xattrs", func(*testing.T, string) {}, ""},
		{"a file with an ACL", func(t *testing.T, src string) {
			run(t, src, "setfacl", "-m", "u:1234:r", "notes.md")
		}, "notes.md"},
		{"a directory with a default ACL", func(t *testing.T, src string) {
			run(t, src, "setfacl", "-d", "-m", "u:1234:rx", "private")
		}, "private"},
		{"a file with an extended attribute", func(t *testing.T, src string) {
			run(t, src, "setfattr", "-n", "user.origin", "-v", "lab", "private/key.txt")
		}, "private/key.txt"},
	} {
		t.Run("to a target without ACLs or xattrs: "+tc.name, func(t *testing.T) {
			dir := t.TempDir()
			tc.change(t, home(t, dir, false))
			target(t, dir)
			out, err := runCopyScriptAs(t, dir, asJob...)
			switch {
			case tc.names == "" && err != nil:
				t.Errorf("copy failed: %v\n%s", err, out)
			case tc.names == "":
				if _, err := ParseVerification(out); err != nil {
					t.Error(err)
				}
			case err == nil:
				t.Errorf("the copy succeeded and dropped what %s holds: %s", tc.names, out)
			case !strings.Contains(out, " "+tc.names) || !strings.Contains(out, "cannot keep the file's POSIX ACL or extended attributes"):
				t.Errorf("the failed copy's log does not name %s or say why:\n%s", tc.names, out)
			}
		})
	}
}

// runVerifyScript runs VerifyScript with its paths moved under dir.
func runVerifyScript(t *testing.T, dir string) (string, error) {
	t.Helper()
	return runVerifyScriptAs(t, dir)
}

// runVerifyScriptAs runs VerifyScript with its paths moved under dir,
// through the command prefix (setpriv and its options).
func runVerifyScriptAs(t *testing.T, dir string, prefix ...string) (string, error) {
	t.Helper()
	log := filepath.Join(dir, "verify-log")
	_ = os.Remove(log)
	script := strings.NewReplacer(
		"/src/", filepath.Join(dir, "src")+"/",
		"/dst/", filepath.Join(dir, "dst")+"/",
		"/dev/termination-log", log,
	).Replace(VerifyScript)
	args := append(append([]string{}, prefix...), "sh", "-c", script)
	out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
	msg, _ := os.ReadFile(log)
	return string(msg) + string(out), err
}

// The verification made right before a copied source is deleted compares
// content, not times: it passes when the new home holds every file of the
// old one as it is (also when only times changed, or the user added files
// in the new home), and fails, naming the file, when anything of a file
// differs (content whatever its time, owner, mode, ACL, extended attribute,
// symlink target, hard links) or the new home lacks it. A file the user
// edited in the new home since the switch keeps the old home too: the
// script cannot tell it from a write the new home lacks.
func TestVerifyScript(t *testing.T) {
	if _, err := exec.LookPath("rsync"); err != nil {
		t.Fatal("rsync is needed (make test installs it): ", err)
	}
	needTool(t, "setfacl", "acl")
	needTool(t, "setfattr", "attr")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	// The old home as the copy leaves it: a notebook with an ACL and a hard
	// link, a script with an extended attribute, a symlink.
	setup := func(t *testing.T) string {
		dir := t.TempDir()
		src := filepath.Join(dir, "src")
		must(os.MkdirAll(filepath.Join(src, "work"), 0o750))
		must(os.MkdirAll(filepath.Join(dir, "dst"), 0o755))
		must(os.WriteFile(filepath.Join(src, "notes.md"), []byte("v1"), 0o640))
		must(os.WriteFile(filepath.Join(src, "work", "a.py"), []byte("print(1)"), 0o640))
		must(os.Link(filepath.Join(src, "notes.md"), filepath.Join(src, "work", "notes-link.md")))
		must(os.Symlink("../notes.md", filepath.Join(src, "work", "link")))
		run(t, src, "setfacl", "-m", "u:1234:r", "notes.md")
		run(t, src, "setfattr", "-n", "user.origin", "-v", "lab", "work/a.py")
		old := time.Now().Add(-48 * time.Hour)
		for _, p := range []string{"notes.md", "work/a.py"} {
			must(os.Chtimes(filepath.Join(src, p), old, old))
		}
		if msg, err := runCopyScript(t, dir); err != nil {
			t.Fatalf("copy: %v %s", err, msg)
		}
		return dir
	}
	later, earlier := time.Now().Add(time.Hour), time.Now().Add(-100*24*time.Hour)
	// rewrite writes content to a file of one side and sets its times.
	rewrite := func(path, content string, at time.Time) {
		must(os.WriteFile(path, []byte(content), 0o640))
		must(os.Chtimes(path, at, at))
	}
	type verifyCase struct {
		name   string
		change func(t *testing.T, dir string)
		names  string // the file the termination log names; "" when it passes
	}
	cases := []verifyCase{
		{"right after the copy", func(*testing.T, string) {}, ""},
		{"only times changed in the old home", func(t *testing.T, dir string) {
			for _, p := range []string{"notes.md", "work", "work/a.py"} { // notes.md has a hard link
				must(os.Chtimes(filepath.Join(dir, "src", p), earlier, earlier))
			}
		}, ""},
		{"the user added files in the new home", func(t *testing.T, dir string) {
			must(os.WriteFile(filepath.Join(dir, "dst", "work", "new.py"), nil, 0o640))
			must(os.MkdirAll(filepath.Join(dir, "dst", "new-dir"), 0o750))
		}, ""},
		{"the user changed a file in the new home since the switch", func(t *testing.T, dir string) {
			rewrite(filepath.Join(dir, "dst", "work", "a.py"), "print(2), edited in the new home", later)
		}, "work/a.py"},
		{"written to the old home after the copy", func(t *testing.T, dir string) {
			rewrite(filepath.Join(dir, "src", "work", "a.py"), "print(2), written to the old home", later)
		}, "work/a.py"},
		{"rewritten in the old home with an older time, as tar x, unzip, cp -p do", func(t *testing.T, dir string) {
			rewrite(filepath.Join(dir, "src", "work", "a.py"), "print(2), restored from an archive", earlier)
		}, "work/a.py"},
		{"same size and time, other content", func(t *testing.T, dir string) {
			p := filepath.Join(dir, "src", "work", "a.py")
			fi, err := os.Stat(p)
			must(err)
			rewrite(p, "print(2)", fi.ModTime())
		}, "work/a.py"},
		{"edited on both sides", func(t *testing.T, dir string) {
			rewrite(filepath.Join(dir, "src", "work", "a.py"), "print('old home')", earlier)
			rewrite(filepath.Join(dir, "dst", "work", "a.py"), "print('new home')", later)
		}, "work/a.py"},
		{"a file only the old home has", func(t *testing.T, dir string) {
			must(os.WriteFile(filepath.Join(dir, "src", "work", "late.py"), []byte("x"), 0o640))
		}, "work/late.py"},
		{"a directory only the old home has", func(t *testing.T, dir string) {
			must(os.RemoveAll(filepath.Join(dir, "dst", "work")))
		}, "work/a.py"},
		{"an ACL changed in the old home", func(t *testing.T, dir string) {
			run(t, filepath.Join(dir, "src"), "setfacl", "-m", "u:1234:r,u:4321:r", "notes.md")
		}, "notes.md"},
		{"an extended attribute changed in the old home", func(t *testing.T, dir string) {
			run(t, filepath.Join(dir, "src"), "setfattr", "-n", "user.origin", "-v", "home", "work/a.py")
		}, "work/a.py"},
		{"a mode changed in the old home", func(t *testing.T, dir string) {
			must(os.Chmod(filepath.Join(dir, "src", "work", "a.py"), 0o600))
		}, "work/a.py"},
		{"a symlink points elsewhere in the old home", func(t *testing.T, dir string) {
			must(os.Remove(filepath.Join(dir, "src", "work", "link")))
			must(os.Symlink("a.py", filepath.Join(dir, "src", "work", "link")))
		}, "work/link"},
		{"a hard link broken in the new home", func(t *testing.T, dir string) {
			p := filepath.Join(dir, "dst", "work", "notes-link.md")
			fi, err := os.Stat(p)
			must(err)
			must(os.Remove(p))
			rewrite(p, "v1", fi.ModTime()) // same content, another file
		}, "work/notes-link.md"},
	}
	if os.Getuid() == 0 {
		cases = append(cases,
			verifyCase{"an owner changed in the old home", func(t *testing.T, dir string) {
				must(os.Lchown(filepath.Join(dir, "src", "work", "a.py"), 1000, 100))
			}, "work/a.py"},
			verifyCase{"the SELinux labels differ", func(t *testing.T, dir string) { // each volume's own
				run(t, filepath.Join(dir, "src"), "setfattr", "-n", "security.selinux", "-v", "system_u:object_r:old_t:s0", "notes.md")
				run(t, filepath.Join(dir, "dst"), "setfattr", "-n", "security.selinux", "-v", "system_u:object_r:new_t:s0", "notes.md")
			}, ""})
	} else {
		cases = append(cases, verifyCase{"a directory of the old home that cannot be read", func(t *testing.T, dir string) {
			must(os.Chmod(filepath.Join(dir, "src", "work"), 0))
			t.Cleanup(func() { _ = os.Chmod(filepath.Join(dir, "src", "work"), 0o750) })
		}, "src/work"})
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := setup(t)
			tc.change(t, dir)
			out, err := runVerifyScript(t, dir)
			switch {
			case (err == nil) != (tc.names == ""):
				t.Errorf("verification passed = %v, want %v: %s", err == nil, tc.names == "", out)
			case tc.names != "" && !strings.Contains(out, tc.names):
				t.Errorf("the verification does not name %s: %s", tc.names, out)
			case tc.names == "" && out != "verified":
				t.Errorf("termination log %q, want verified", out)
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
