package testcluster

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"syscall"
	"time"
)

// launcher starts child processes from one OS thread that stays alive for
// the cluster's lifetime. Children get SIGKILL when that thread's process dies
// (Pdeathsig), so a test binary that panics or is killed never leaves etcd or
// kube-apiserver behind. Pdeathsig fires when the creating *thread* exits,
// which is why every start goes through the same locked thread.
type launcher struct {
	reqs chan launchReq
	done chan struct{}
}

type launchReq struct {
	cmd   *exec.Cmd
	reply chan error
}

func newLauncher() *launcher {
	l := &launcher{reqs: make(chan launchReq), done: make(chan struct{})}
	go func() {
		runtime.LockOSThread()
		// Never unlocked: the thread must outlive every child it started.
		for {
			select {
			case r := <-l.reqs:
				r.reply <- r.cmd.Start()
			case <-l.done:
				return
			}
		}
	}()
	return l
}

func (l *launcher) start(cmd *exec.Cmd) error {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	r := launchReq{cmd: cmd, reply: make(chan error)}
	l.reqs <- r
	return <-r.reply
}

func (l *launcher) close() { close(l.done) }

// process is one running component.
type process struct {
	name   string
	cmd    *exec.Cmd
	log    *os.File
	exited chan struct{}
	err    error
}

func (l *launcher) run(name, bin string, args []string, logPath string) (*process, error) {
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Env = append(os.Environ(), "GOMAXPROCS=2")
	if err := l.start(cmd); err != nil {
		_ = logf.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &process{name: name, cmd: cmd, log: logf, exited: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.exited)
	}()
	return p, nil
}

// stop sends SIGTERM to the process group, then SIGKILL after the grace period.
func (p *process) stop(grace time.Duration) {
	if p == nil {
		return
	}
	select {
	case <-p.exited:
	default:
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-p.exited:
		case <-time.After(grace):
			_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
			<-p.exited
		}
	}
	_ = p.log.Close()
}

func (p *process) running() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// tail returns the last bytes of the process log, for error messages.
func tail(path string, n int64) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer func() { _ = f.Close() }()
	st, err := f.Stat()
	if err != nil {
		return ""
	}
	if st.Size() > n {
		_, _ = f.Seek(st.Size()-n, io.SeekStart)
	}
	b, _ := io.ReadAll(f)
	return string(b)
}
