package framework

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The network of the node world. Everything the node suite starts (etcd, the API server, the
// kubelets, containerd, the registry, BIND, the pods) lives in one network namespace that
// RunInNetworkNamespace creates: the node addresses are on a veth whose peer stays down, so no
// packet leaves the namespace; pods get addresses on a bridge per node.
const (
	// NodeNetworkPrefix is the node network: the first node's address is .2, the second's .3.
	nodeNetworkPrefix = "10.200.0."
	nodeNetworkBits   = 24
	// ServiceCIDR is the Services' range; the API server's ClusterIP is its first address.
	ServiceCIDR = "10.96.0.0/16"
	// KubernetesServiceIP is the ClusterIP of default/kubernetes, which pods reach the API by.
	KubernetesServiceIP = "10.96.0.1"
	// PodCIDR is the pods' range; node N gives its pods 10.88.N.0/24.
	PodCIDR = "10.88.0.0/16"

	// netnsEnv names the namespace the re-executed test binary runs in.
	netnsEnv = "SERVICE_ROUTER_NODE_NETNS"
	// nodeLink is the namespace's side of the veth pair holding the node addresses.
	nodeLink = "node0"
)

// NodeIP returns the address of node i (1-based).
func NodeIP(i int) string { return nodeNetworkPrefix + strconv.Itoa(1+i) }

// cgroupRootPrefix names the cgroups of the node world's kubelets; a kubelet's pods live under
// /<prefix><pid of the outer test process>-node-<i> in every cgroup v1 hierarchy.
const cgroupRootPrefix = "service-router-node-"

// RunInNetworkNamespace runs the tests of m inside a network namespace and a mount namespace of
// their own, for TestMain. Inside there is no network, the Go module proxy included: fetch runs
// first, outside, for whatever the tests download (modules they read files of or build). The
// test binary then creates the network namespace (ip netns add), gives it a
// loopback and the node addresses, re-executes itself inside it (nsenter --net, then unshare
// --mount: `ip netns exec` would remount /sys and hide the cgroup hierarchies the kubelet needs),
// and when that run ends kills whatever it left (containerd's shims, the pods' processes in the
// kubelets' cgroups), removes those cgroups and deletes the namespace. It needs root.
func RunInNetworkNamespace(m *testing.M, fetch ...func() error) int {
	// Listing the tests (make e2e-node's shards ask for them) starts nothing.
	flag.Parse()
	if list := flag.Lookup("test.list"); list != nil && list.Value.String() != "" {
		return m.Run()
	}
	if os.Getenv(netnsEnv) != "" {
		// containerd names each pod's network namespace by a file in /run/netns: a tmpfs of the
		// suite's own mount namespace keeps them from outliving it on the host.
		if err := syscall.Mount("tmpfs", "/run/netns", "tmpfs", 0, "mode=0755"); err != nil {
			fmt.Fprintf(os.Stderr, "node world: mounting a tmpfs on /run/netns: %v\n", err)
			return 1
		}
		return m.Run()
	}
	if os.Geteuid() != 0 {
		fmt.Fprintln(os.Stderr, "the node suite runs a kubelet, containerd and a network namespace: it needs root (run `make test` or `make e2e-node` as root)")
		return 1
	}
	for _, f := range fetch {
		if err := f(); err != nil {
			fmt.Fprintf(os.Stderr, "node world: fetching before entering the network namespace: %v\n", err)
			return 1
		}
	}
	name := fmt.Sprintf("service-router-%d", os.Getpid())
	if err := createNetworkNamespace(name); err != nil {
		fmt.Fprintln(os.Stderr, err)
		_ = exec.Command("ip", "netns", "del", name).Run()
		return 1
	}
	start := time.Now()
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	args := append([]string{"--net=/run/netns/" + name, "--", "unshare", "--mount", "--propagation", "private", "--", exe}, os.Args[1:]...)
	cmd := exec.Command("nsenter", args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(), netnsEnv+"="+name, "SERVICE_ROUTER_NODE_CGROUP_ROOT="+cgroupRootPrefix+strconv.Itoa(os.Getpid()))
	code := 0
	if err := cmd.Run(); err != nil {
		code = 1
		if exit, ok := err.(*exec.ExitError); ok && exit.ExitCode() > 0 {
			code = exit.ExitCode()
		}
	}
	left := cleanUpNamespace(name, cgroupRootPrefix+strconv.Itoa(os.Getpid()))
	fmt.Fprintf(os.Stderr, "node world: network namespace %s removed after %s (%d leftover processes killed)\n", name, time.Since(start).Round(time.Second), left)
	return code
}

// NodeCgroupRoot returns the cgroup (relative to each hierarchy's root) under which node i's
// kubelet puts its pods, inside RunInNetworkNamespace.
func NodeCgroupRoot(i int) string {
	return "/" + os.Getenv("SERVICE_ROUTER_NODE_CGROUP_ROOT") + "-node-" + strconv.Itoa(i)
}

func createNetworkNamespace(name string) error {
	steps := [][]string{
		{"netns", "add", name},
		{"-n", name, "link", "set", "lo", "up"},
		// The veth's peer is never brought up: the addresses exist, nothing is sent anywhere.
		{"-n", name, "link", "add", nodeLink, "type", "veth", "peer", "name", nodeLink + "-peer"},
		{"-n", name, "addr", "add", NodeIP(1) + "/" + strconv.Itoa(nodeNetworkBits), "dev", nodeLink},
		{"-n", name, "addr", "add", NodeIP(2) + "/" + strconv.Itoa(nodeNetworkBits), "dev", nodeLink},
		{"-n", name, "link", "set", nodeLink, "up"},
		// The kubelet and kube-proxy pick the interface of the default route.
		{"-n", name, "route", "add", "default", "via", nodeNetworkPrefix + "1", "dev", nodeLink, "onlink"},
	}
	for _, args := range steps {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			return fmt.Errorf("node world: ip %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	// Services reached from a pod on the same bridge as their backend must pass iptables (the
	// kubelet's "hairpin" case); the setting is per network namespace.
	sysctls := map[string]string{
		"net/bridge/bridge-nf-call-iptables": "1",
		"net/ipv4/ip_forward":                "1",
	}
	for key, value := range sysctls {
		cmd := exec.Command("nsenter", "--net=/run/netns/"+name, "sh", "-c", "echo "+value+" > /proc/sys/"+key)
		if out, err := cmd.CombinedOutput(); err != nil && key == "net/ipv4/ip_forward" {
			return fmt.Errorf("node world: setting %s: %v: %s", key, err, out)
		}
	}
	return nil
}

// cleanUpNamespace kills every process still in the namespace or in the kubelets' cgroups, removes
// those cgroups and deletes the namespace. It returns how many processes it killed.
func cleanUpNamespace(name, cgroupRoot string) int {
	netns, err := os.Stat("/run/netns/" + name)
	killed := 0
	if err == nil {
		ino := netns.Sys().(*syscall.Stat_t).Ino
		for _, pid := range processes() {
			if st, err := os.Stat(fmt.Sprintf("/proc/%d/ns/net", pid)); err == nil && st.Sys().(*syscall.Stat_t).Ino == ino {
				_ = syscall.Kill(pid, syscall.SIGKILL)
				killed++
			}
		}
	}
	hierarchies, _ := filepath.Glob("/sys/fs/cgroup/*")
	var dirs []string
	for _, h := range hierarchies {
		matches, _ := filepath.Glob(filepath.Join(h, cgroupRoot+"-node-*"))
		for _, top := range matches {
			_ = filepath.WalkDir(top, func(path string, d os.DirEntry, err error) error {
				if err == nil && d.IsDir() {
					dirs = append(dirs, path)
				}
				return nil
			})
		}
	}
	for _, dir := range dirs {
		data, _ := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
		for _, field := range strings.Fields(string(data)) {
			if pid, err := strconv.Atoi(field); err == nil {
				_ = syscall.Kill(pid, syscall.SIGKILL)
				killed++
			}
		}
	}
	// Deepest first: a cgroup goes once its children and processes are gone.
	sort.Slice(dirs, func(i, j int) bool { return len(dirs[i]) > len(dirs[j]) })
	for attempt := 0; attempt < 50; attempt++ {
		remaining := dirs[:0]
		for _, dir := range dirs {
			if err := os.Remove(dir); err != nil && !os.IsNotExist(err) {
				remaining = append(remaining, dir)
			}
		}
		if dirs = remaining; len(dirs) == 0 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if len(dirs) > 0 {
		fmt.Fprintf(os.Stderr, "node world: %d cgroups could not be removed, first %s\n", len(dirs), dirs[0])
	}
	if out, err := exec.Command("ip", "netns", "del", name).CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "node world: ip netns del %s: %v: %s\n", name, err, bytes.TrimSpace(out))
	}
	return killed
}

func processes() []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		if pid, err := strconv.Atoi(e.Name()); err == nil && pid != os.Getpid() {
			pids = append(pids, pid)
		}
	}
	return pids
}

// FetchPrometheusOperatorModule downloads the module InstallPrometheusOperatorCRDs reads, for
// RunInNetworkNamespace's fetch.
func FetchPrometheusOperatorModule() error {
	_, err := downloadModule(context.Background(), prometheusOperatorModule)
	return err
}

// FetchModulesOf downloads every module the go.mod of the repository's commit requires, for tests
// that build that commit inside the namespace (RunInNetworkNamespace's fetch).
func FetchModulesOf(commit string) error {
	root, err := repoRoot()
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "modules-of-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	script := fmt.Sprintf("git -C %q archive --format=tar %s go.mod go.sum | tar -x -C %q && cd %q && go mod download", root, commit, dir, dir)
	if out, err := exec.Command("bash", "-e", "-o", "pipefail", "-c", script).CombinedOutput(); err != nil {
		return fmt.Errorf("downloading the modules of %s: %v\n%s", commit, err, out)
	}
	return nil
}
