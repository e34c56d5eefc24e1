package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// state is the demo's directory (.demo): its pid file, the pids of the processes it started,
// the kubeconfig and environment file for the user, logs, TMPDIR for everything else, and on a
// cluster the demo did not start, the objects it created there.
type state struct {
	dir string
}

func (s state) pidFile() string      { return filepath.Join(s.dir, "demo.pid") }
func (s state) childrenFile() string { return filepath.Join(s.dir, "children") }
func (s state) tmpDir() string       { return filepath.Join(s.dir, "tmp") }
func (s state) logDir() string       { return filepath.Join(s.dir, "logs") }
func (s state) kubeconfig() string   { return filepath.Join(s.dir, "kubeconfig") }
func (s state) envFile() string      { return filepath.Join(s.dir, "env") }
func (s state) createdFile() string  { return filepath.Join(s.dir, "created.json") }

// proc identifies a process across pid reuse: its pid and its start time (in clock ticks since
// boot, field 22 of /proc/<pid>/stat).
type proc struct {
	pid   int
	start uint64
}

func (p proc) String() string { return fmt.Sprintf("%d %d", p.pid, p.start) }

// alive reports whether the process still runs (and is the same process).
func (p proc) alive() bool {
	start, _, err := procStat(p.pid)
	return err == nil && start == p.start
}

// procStat reads the start time and parent pid of a process from /proc.
func procStat(pid int) (start uint64, ppid int, err error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0, err
	}
	// The command name (field 2) is in parentheses and may contain spaces: fields after it.
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, 0, fmt.Errorf("unexpected /proc/%d/stat", pid)
	}
	f := strings.Fields(s[i+1:])
	// f[0] is field 3 (state), so field n is f[n-3].
	if len(f) < 20 {
		return 0, 0, fmt.Errorf("unexpected /proc/%d/stat", pid)
	}
	if f[0] == "Z" {
		return 0, 0, fmt.Errorf("process %d is a zombie", pid)
	}
	ppid, err = strconv.Atoi(f[1])
	if err != nil {
		return 0, 0, err
	}
	start, err = strconv.ParseUint(f[19], 10, 64)
	return start, ppid, err
}

func self() (proc, error) {
	start, _, err := procStat(os.Getpid())
	return proc{pid: os.Getpid(), start: start}, err
}

// readProcs reads a file of "pid start" lines.
func readProcs(path string) ([]proc, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []proc
	for line := range strings.SplitSeq(strings.TrimSpace(string(data)), "\n") {
		var p proc
		if _, err := fmt.Sscanf(line, "%d %d", &p.pid, &p.start); err == nil {
			out = append(out, p)
		}
	}
	return out, nil
}

// claimState makes the state directory ours: it refuses if another demo runs with it, cleans up
// after a demo that died without cleaning up, and writes our pid file.
func claimState(dir string) (state, error) {
	s := state{dir: dir}
	if owners, err := readProcs(s.pidFile()); err == nil && len(owners) == 1 && owners[0].alive() {
		return s, fmt.Errorf("a demo is already running with %s (pid %d); stop it with `make demo-down` (or Ctrl-C in its terminal)", dir, owners[0].pid)
	}
	if _, err := os.Stat(dir); err == nil {
		fmt.Printf("==> %s is left over from a demo that did not stop cleanly: cleaning up\n", dir)
		if err := stopLeftovers(s); err != nil {
			return s, err
		}
		if err := os.RemoveAll(dir); err != nil {
			return s, err
		}
	}
	for _, d := range []string{s.tmpDir(), s.logDir()} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return s, err
		}
	}
	me, err := self()
	if err != nil {
		return s, err
	}
	return s, os.WriteFile(s.pidFile(), []byte(me.String()+"\n"), 0o644)
}

// recordChildren writes the processes we started (our direct children) to the state directory,
// so that `demo --down` can stop them even if this process dies without cleaning up.
func (s state) recordChildren() error {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return err
	}
	var b strings.Builder
	me := os.Getpid()
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		start, ppid, err := procStat(pid)
		if err != nil || ppid != me {
			continue
		}
		fmt.Fprintln(&b, proc{pid: pid, start: start})
	}
	return os.WriteFile(s.childrenFile(), []byte(b.String()), 0o644)
}

// remove deletes the state directory.
func (s state) remove() error { return os.RemoveAll(s.dir) }

// down stops the demo running with dir: SIGTERM to the demo, which stops its processes, deletes
// what it created in a cluster it did not start and removes the directory; then it stops any
// recorded process still running and deletes any object still remembered (if the demo had died,
// or could not delete them) and removes what is left.
func down(dir string) error {
	s := state{dir: dir}
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		fmt.Printf("==> no demo running with %s\n", dir)
		return nil
	}
	children, _ := readProcs(s.childrenFile())
	owners, _ := readProcs(s.pidFile())
	if len(owners) == 1 && owners[0].alive() {
		demo := owners[0]
		fmt.Printf("==> stopping the demo (pid %d)\n", demo.pid)
		if err := syscall.Kill(demo.pid, syscall.SIGTERM); err != nil {
			return fmt.Errorf("signalling the demo (pid %d): %w", demo.pid, err)
		}
		// Every process gets 10 s after SIGTERM; a stuck one costs at most that each.
		deadline := time.Now().Add(2 * time.Minute)
		for demo.alive() && time.Now().Before(deadline) {
			time.Sleep(100 * time.Millisecond)
		}
		if demo.alive() {
			return fmt.Errorf("the demo (pid %d) is still cleaning up after 2 minutes; check it with `ps -p %d`", demo.pid, demo.pid)
		}
	}
	if err := stopProcs(children); err != nil {
		return err
	}
	if err := deleteLeftovers(s); err != nil {
		return err
	}
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	fmt.Printf("==> the demo is stopped and %s removed\n", dir)
	return nil
}

// stopLeftovers stops the processes recorded by a demo that died without cleaning up, and deletes
// the objects it had created in a cluster it did not start.
func stopLeftovers(s state) error {
	if children, err := readProcs(s.childrenFile()); err == nil { // else the demo died before starting anything
		if err := stopProcs(children); err != nil {
			return err
		}
	}
	return deleteLeftovers(s)
}

// stopProcs sends SIGTERM to every process still running, then SIGKILL after 10 s.
func stopProcs(procs []proc) error {
	var running []proc
	for _, p := range procs {
		if p.alive() {
			fmt.Printf("==> stopping leftover process %d\n", p.pid)
			_ = syscall.Kill(p.pid, syscall.SIGTERM)
			running = append(running, p)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for _, p := range running {
		for p.alive() && time.Now().Before(deadline) {
			time.Sleep(100 * time.Millisecond)
		}
		if p.alive() {
			_ = syscall.Kill(p.pid, syscall.SIGKILL)
		}
	}
	for _, p := range running {
		for range 50 {
			if !p.alive() {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		if p.alive() {
			return fmt.Errorf("process %d does not stop", p.pid)
		}
	}
	return nil
}
