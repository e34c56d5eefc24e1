// Package framework runs the pieces of an end-to-end environment as plain local processes: control
// planes (etcd + kube-apiserver through internal/testenv), the operator binary, BIND 9 `named`
// servers acting as RFC 2136 DNS zones, and the real ExternalDNS binary. It also queries DNS with
// `dig` and polls for convergence.
//
// Every Start function returns a handle with a Stop method and, when given a Cleanup registrar
// (a *testing.T, or a *Teardown in programs such as `make demo`), registers Stop there so that
// processes are stopped and temporary directories removed in reverse start order.
//
// Nothing here sleeps in place of readiness: each Start returns once the process provably serves
// (named answers an SOA query, ExternalDNS completed a synchronization, the operator's /readyz
// returns 200), and waits poll the observable state with a deadline.
package framework

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Cleanup registers functions to run at teardown. *testing.T, *testing.B and *Teardown
// implement it.
type Cleanup interface {
	Cleanup(func())
}

// Teardown collects cleanup functions for programs that have no *testing.T (for example a demo
// command). Run them with Run, usually deferred; they run in reverse registration order.
type Teardown struct {
	mu  sync.Mutex
	fns []func()
}

// Cleanup registers fn to run at Run.
func (td *Teardown) Cleanup(fn func()) {
	td.mu.Lock()
	defer td.mu.Unlock()
	td.fns = append(td.fns, fn)
}

// Run runs the registered functions, last registered first. It is safe to call more than once.
func (td *Teardown) Run() {
	td.mu.Lock()
	fns := td.fns
	td.fns = nil
	td.mu.Unlock()
	for i := len(fns) - 1; i >= 0; i-- {
		fns[i]()
	}
}

// stopGrace is how long a process gets to exit after SIGTERM before it is killed.
const stopGrace = 10 * time.Second

// Process is a child process whose standard output and error go to a log file.
type Process struct {
	// Name identifies the process in messages, for example "named-weu".
	Name string
	// LogPath is the file that receives the process's output.
	LogPath string

	cmd      *exec.Cmd
	logFile  *os.File
	exited   chan struct{}
	waitErr  error
	stopOnce sync.Once
	stopErr  error
}

// StartProcess starts binary with args, its output appended to logPath. The process gets its own
// process group so that Stop also reaches anything it forks.
func StartProcess(name, logPath, binary string, args ...string) (*Process, error) {
	return StartProcessWithEnv(name, logPath, nil, binary, args...)
}

// StartProcessWithEnv is StartProcess with an explicit environment (nil: inherit ours).
func StartProcessWithEnv(name, logPath string, env []string, binary string, args ...string) (*Process, error) {
	if err := os.MkdirAll(filepath.Dir(logPath), 0o755); err != nil {
		return nil, err
	}
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("%s: opening log file: %w", name, err)
	}
	fmt.Fprintf(logFile, "### %s: %s %s\n", time.Now().Format(time.RFC3339Nano), binary, strings.Join(args, " "))
	cmd := exec.Command(binary, args...)
	cmd.Env = env
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	// Own process group: Stop signals the group. Pdeathsig: if this program dies without
	// running its cleanups (a `go test -timeout` panic, SIGKILL), the kernel kills the child
	// instead of leaving it running.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		_ = logFile.Close()
		return nil, fmt.Errorf("%s: starting %s: %w", name, binary, err)
	}
	p := &Process{Name: name, LogPath: logPath, cmd: cmd, logFile: logFile, exited: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		close(p.exited)
	}()
	return p, nil
}

// Pid returns the process id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Exited is closed when the process has exited.
func (p *Process) Exited() <-chan struct{} { return p.exited }

// Running reports whether the process has not exited yet.
func (p *Process) Running() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// ExitError describes how the process ended; nil while it runs.
func (p *Process) ExitError() error {
	if p.Running() {
		return nil
	}
	if p.waitErr == nil {
		return fmt.Errorf("%s exited with status 0", p.Name)
	}
	return fmt.Errorf("%s exited: %w", p.Name, p.waitErr)
}

// Stop sends SIGTERM to the process group, kills it after a grace period, and closes the log.
// Calling Stop again returns the first result.
func (p *Process) Stop() error {
	p.stopOnce.Do(func() {
		if p.Running() {
			_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
			select {
			case <-p.exited:
			case <-time.After(stopGrace):
				_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
				<-p.exited
				p.stopErr = fmt.Errorf("%s did not exit within %s of SIGTERM and was killed", p.Name, stopGrace)
			}
		}
		if err := p.logFile.Close(); err != nil && p.stopErr == nil {
			p.stopErr = err
		}
	})
	return p.stopErr
}

// Kill sends SIGKILL to the process group at once, as a node's sudden death or the OOM killer
// would: no shutdown, no lease released, nothing flushed. It returns once the process has exited;
// Stop then only closes the log.
func (p *Process) Kill() {
	if p.Running() {
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.exited
	}
}

// Signal sends sig to the process group.
func (p *Process) Signal(sig syscall.Signal) error {
	return syscall.Kill(-p.cmd.Process.Pid, sig)
}

// LogTail returns the last n lines of the process's log.
func (p *Process) LogTail(n int) string {
	return tailFile(p.LogPath, n)
}

// Log returns the whole log.
func (p *Process) Log() string {
	data, err := os.ReadFile(p.LogPath)
	if err != nil {
		return fmt.Sprintf("(cannot read %s: %v)", p.LogPath, err)
	}
	return string(data)
}

// tailFile returns the last n lines of a file, or a note saying why it cannot.
func tailFile(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Sprintf("(cannot read %s: %v)", path, err)
	}
	defer f.Close()
	lines := make([]string, 0, n)
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		if len(lines) == n {
			lines = lines[1:]
		}
		lines = append(lines, sc.Text())
	}
	return strings.Join(lines, "\n")
}

// waitFor polls check every interval until it returns true, returns an error, ctx ends, or the
// process (if any) exits.
func waitFor(ctx context.Context, interval time.Duration, proc *Process, check func(context.Context) (bool, error)) error {
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	for {
		ok, err := check(ctx)
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
		var exited <-chan struct{}
		if proc != nil {
			exited = proc.Exited()
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-exited:
			return proc.ExitError()
		case <-ticker.C:
		}
	}
}

// artifactsDir is where logs and configuration are kept after the run when E2E_ARTIFACTS_DIR is
// set (for CI artifacts); otherwise everything lives in temporary directories that are removed.
func artifactsDir() string { return os.Getenv("E2E_ARTIFACTS_DIR") }

// newWorkDir creates a temporary working directory for a component.
func newWorkDir(component string) (string, error) {
	return os.MkdirTemp("", "e2e-"+sanitize(component)+"-")
}

// logPathFor returns where the log of a component goes: in E2E_ARTIFACTS_DIR when set (kept),
// else in its work directory (removed with it).
func logPathFor(workDir, component string) string {
	if dir := artifactsDir(); dir != "" {
		return filepath.Join(dir, fmt.Sprintf("%s-%s.log", sanitize(component), filepath.Base(workDir)))
	}
	return filepath.Join(workDir, sanitize(component)+".log")
}

func sanitize(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			return r
		}
		return '-'
	}, s)
}

// lookBinary finds a program in PATH or in extra directories (named lives in /usr/sbin, which is
// not in every user's PATH).
func lookBinary(name string, extraDirs ...string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	for _, dir := range extraDirs {
		p := filepath.Join(dir, name)
		if st, err := os.Stat(p); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s not found in PATH or %s: run `make bind-tools` (installs bind9 and bind9-dnsutils)", name, strings.Join(extraDirs, ", "))
}

// filteredTail returns the last n lines of log that contain none of the noise substrings.
func filteredTail(log string, n int, noise []string) string {
	var kept []string
	for line := range strings.SplitSeq(log, "\n") {
		if line == "" || slices.ContainsFunc(noise, func(s string) bool { return strings.Contains(line, s) }) {
			continue
		}
		kept = append(kept, line)
	}
	if len(kept) > n {
		kept = kept[len(kept)-n:]
	}
	return strings.Join(kept, "\n")
}

// keptNote says whether logs survive the run.
func keptNote() string {
	if artifactsDir() != "" {
		return ", kept"
	}
	return ", removed at cleanup unless E2E_ARTIFACTS_DIR is set"
}
