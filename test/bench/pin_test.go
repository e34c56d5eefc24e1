package bench

import (
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// pinControlPlane gives the control plane cores of its own, as a cluster has: kube-apiserver and
// etcd (every thread) run on the CPUs listed ("1", "2-3"), the benchmark's process (its clients)
// and the operator it starts on the others. Empty: nothing is pinned, every process shares every
// core. It needs taskset (util-linux).
func pinControlPlane(b testing.TB, cpus string) {
	if cpus == "" {
		return
	}
	set := func(list string, pid int) {
		if out, err := exec.Command("taskset", "-a", "-p", "-c", list, strconv.Itoa(pid)).CombinedOutput(); err != nil {
			b.Fatalf("taskset -c %s %d: %v\n%s", list, pid, err, out)
		}
	}
	current, err := exec.Command("taskset", "-c", "-p", strconv.Itoa(os.Getpid())).Output()
	must(b, err)
	// "pid 123's current affinity list: 0,1": what this process may use, less the control plane's.
	all := strings.TrimSpace(string(current[strings.LastIndexByte(string(current), ':')+1:]))
	others := otherCPUs(all, cpus)
	if others == "" {
		b.Fatalf("SCALE_CONTROL_PLANE_CPUS=%s leaves no CPU of %s to the operator and the clients", cpus, all)
	}
	pinned, self := 0, strconv.Itoa(os.Getpid())
	for _, p := range processes() {
		child := len(p.fields) > 1 && p.fields[1] == self // fields: state, ppid, …
		if child && (p.name == "kube-apiserver" || p.name == "etcd") {
			set(cpus, p.pid)
			pinned++
		}
	}
	if pinned != 2 {
		b.Fatalf("pinning the control plane: found %d of kube-apiserver and etcd among the benchmark's children", pinned)
	}
	set(others, os.Getpid())
	b.Logf("control plane on CPUs %s, the benchmark and the operator on %s", cpus, others)
}

// otherCPUs returns the CPUs of the list all ("0-3", "0,1") that are not in the list taken.
func otherCPUs(all, taken string) string {
	expand := func(list string) []int {
		var out []int
		for _, part := range strings.Split(list, ",") {
			lo, hi, found := strings.Cut(strings.TrimSpace(part), "-")
			a, err1 := strconv.Atoi(lo)
			z, err2 := strconv.Atoi(hi)
			if !found {
				z, err2 = a, nil
			}
			if err1 != nil || err2 != nil {
				continue
			}
			for c := a; c <= z; c++ {
				out = append(out, c)
			}
		}
		return out
	}
	var rest []string
	takenCPUs := expand(taken)
	for _, c := range expand(all) {
		if !slices.Contains(takenCPUs, c) {
			rest = append(rest, strconv.Itoa(c))
		}
	}
	return strings.Join(rest, ",")
}

func TestOtherCPUs(t *testing.T) {
	for _, tc := range []struct{ all, taken, want string }{
		{"0,1", "1", "0"},
		{"0-3", "2-3", "0,1"},
		{"0-3", "0,2", "1,3"},
		{"0,1", "0-1", ""},
		{"0-7", "4", "0,1,2,3,5,6,7"},
	} {
		if got := otherCPUs(tc.all, tc.taken); got != tc.want {
			t.Errorf("otherCPUs(%q, %q) = %q, want %q", tc.all, tc.taken, got, tc.want)
		}
	}
}
