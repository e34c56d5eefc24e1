package testenv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"k8s.io/client-go/kubernetes"
)

// RestartAPIServer kills the control plane's kube-apiserver with SIGKILL, as a crash or the loss of
// its node would, and starts it again after down with the same command line: the same port,
// certificates and etcd, so that every client keeps its configuration and etcd keeps every
// object. It returns once the new one answers /readyz. Stop stops the new one too.
func (e *Env) RestartAPIServer(ctx context.Context, down time.Duration) error {
	u, err := url.Parse(e.Config.Host)
	if err != nil {
		return err
	}
	pid, args, err := findProcess("kube-apiserver", "--secure-port="+u.Port())
	if err != nil {
		return err
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		return fmt.Errorf("killing kube-apiserver (pid %d): %w", pid, err)
	}
	for processExists(pid) {
		time.Sleep(20 * time.Millisecond)
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(down):
	}
	log, err := os.CreateTemp("", "kube-apiserver-restarted-*.log")
	if err != nil {
		return err
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		_ = log.Close()
		return fmt.Errorf("starting kube-apiserver again: %w", err)
	}
	e.restarted = append(e.restarted, restartedProcess{cmd: cmd, log: log})
	return e.waitReady(ctx, log.Name())
}

// waitReady waits until the API server answers /readyz.
func (e *Env) waitReady(ctx context.Context, logPath string) error {
	cs, err := kubernetes.NewForConfig(e.Config)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	for {
		body, err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		if err == nil && string(body) == "ok" {
			return nil
		}
		select {
		case <-ctx.Done():
			tail, _ := os.ReadFile(logPath)
			if len(tail) > 2000 {
				tail = tail[len(tail)-2000:]
			}
			return fmt.Errorf("kube-apiserver not ready again: %v (last error %v)\n--- its log ---\n%s", ctx.Err(), err, tail)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// restartedProcess is a process RestartAPIServer started, with its log.
type restartedProcess struct {
	cmd *exec.Cmd
	log *os.File
}

// stop stops it: SIGTERM, SIGKILL after 10 s.
func (p restartedProcess) stop() error {
	defer func() {
		_ = p.log.Close()
		_ = os.Remove(p.log.Name())
	}()
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	select {
	case <-done:
		return nil
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-done
		return errors.New("the restarted kube-apiserver did not stop within 10 s of SIGTERM and was killed")
	}
}

// findProcess finds the one process of binary (by its command line's first word's base name)
// whose arguments include arg, and returns its pid and command line.
func findProcess(binary, arg string) (int, []string, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, nil, err
	}
	for _, entry := range entries {
		pid, err := strconv.Atoi(entry.Name())
		if err != nil {
			continue
		}
		raw, err := os.ReadFile(filepath.Join("/proc", entry.Name(), "cmdline"))
		if err != nil || len(raw) == 0 {
			continue
		}
		args := strings.Split(string(bytes.TrimRight(raw, "\x00")), "\x00")
		if filepath.Base(args[0]) == binary && slices.Contains(args[1:], arg) {
			return pid, args, nil
		}
	}
	return 0, nil, fmt.Errorf("no %s process with %s", binary, arg)
}

// processExists says the process is still there (and not a zombie waiting to be reaped).
func processExists(pid int) bool {
	stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return false
	}
	// The state follows the command's closing parenthesis: "Z" is a zombie.
	if i := bytes.LastIndexByte(stat, ')'); i >= 0 && i+2 < len(stat) {
		return stat[i+2] != 'Z'
	}
	return true
}
