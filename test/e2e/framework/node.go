package framework

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	operatorscheme "github.com/service-router/service-router-operator/internal/scheme"
	"github.com/service-router/service-router-operator/internal/testenv"
)

// NodeWorldOptions configure StartNodeWorld.
type NodeWorldOptions struct {
	// Nodes is how many nodes (kubelets, each with its own containerd) to start: 1 or 2.
	Nodes int
}

// NodeWorld is a whole Kubernetes cluster on this machine, inside the network namespace of
// RunInNetworkNamespace: etcd, kube-apiserver, kube-controller-manager (every default
// controller), kube-scheduler, kube-proxy (iptables), and per node a kubelet with its own
// containerd (Debian's containerd and runc) and bridge CNI; plus the OCI registry every image
// comes from. Nothing is pulled from outside: the pause image is built here and pushed to that
// registry, as every other image is.
type NodeWorld struct {
	// Dir holds the configuration, state and logs of every component; removed by Stop.
	Dir string
	// Kubeconfig is an admin (system:masters) kubeconfig; Config and Client are the same access.
	Kubeconfig string
	Config     *rest.Config
	Client     client.Client
	Scheme     *runtime.Scheme
	// APIServer is the API server's URL, on the first node's address.
	APIServer string
	// Registry is the registry's host:port; CAFile the cluster CA (the API server's and the
	// one in every pod's service account volume).
	Registry string
	CAFile   string
	Nodes    []*Node

	pki       *clusterPKI
	assets    string
	root      string
	processes []*Process
}

// Node is one kubelet and its container runtime.
type Node struct {
	Name, IP   string
	Kubelet    *Process
	Containerd *Process
	// Socket is containerd's CRI socket; Dir the node's state.
	Socket, Dir string
}

// Component ports inside the namespace: the world has the namespace to itself, so they are fixed.
const (
	etcdPort      = 2379
	apiServerPort = 6443
	registryPort  = 5000
	// PauseImageTag is the sandbox image's tag in the registry.
	pauseRepository = "pause"
	pauseTag        = "3.10"
)

// StartNodeWorld starts the cluster and returns once every node is Ready. It must run inside
// RunInNetworkNamespace. The timings of its steps are logged through logf.
func StartNodeWorld(ctx context.Context, c Cleanup, logf func(string, ...any), opts NodeWorldOptions) (*NodeWorld, error) {
	if os.Getenv(netnsEnv) == "" {
		return nil, errors.New("the node world runs inside the network namespace of RunInNetworkNamespace (call it from TestMain)")
	}
	if opts.Nodes < 1 {
		opts.Nodes = 1
	}
	if opts.Nodes > 2 {
		return nil, fmt.Errorf("the node world has addresses for 2 nodes, not %d", opts.Nodes)
	}
	root, err := repoRoot()
	if err != nil {
		return nil, err
	}
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		assets = filepath.Join(root, "bin")
	}
	for _, name := range []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubelet", "kube-proxy", "cni/bridge", "cni/host-local", "cni/loopback"} {
		if _, err := os.Stat(filepath.Join(assets, name)); err != nil {
			return nil, fmt.Errorf("%s not found in %s: run `make e2e-node` (it builds the node once into bin/)", name, assets)
		}
	}
	for _, name := range []string{"containerd", "containerd-shim-runc-v2", "runc", "iptables", "conntrack"} {
		if _, err := exec.LookPath(name); err != nil {
			return nil, fmt.Errorf("%s not found: run `make node-packages` (apt-get install containerd runc iptables conntrack)", name)
		}
	}
	dir, err := os.MkdirTemp("", "node-world-")
	if err != nil {
		return nil, err
	}
	w := &NodeWorld{Dir: dir, assets: assets, root: root, APIServer: fmt.Sprintf("https://%s:%d", NodeIP(1), apiServerPort)}
	if c != nil {
		c.Cleanup(func() { _ = w.Stop() })
	}
	start := time.Now()
	step := func(what string, fn func() error) error {
		t0 := time.Now()
		if err := fn(); err != nil {
			return fmt.Errorf("node world, %s: %w", what, err)
		}
		logf("node world: %s in %s", what, time.Since(t0).Round(10*time.Millisecond))
		return nil
	}
	for _, s := range []struct {
		what string
		fn   func() error
	}{
		{"certificates", w.startPKI},
		{"etcd and kube-apiserver ready", func() error { return w.startAPIServer(ctx) }},
		{"registry serving, pause image pushed", func() error { return w.startRegistry(ctx) }},
		{"kube-controller-manager, kube-scheduler and kube-proxy started", w.startControllers},
	} {
		if err := step(s.what, s.fn); err != nil {
			return w, err
		}
	}
	for i := 1; i <= opts.Nodes; i++ {
		if err := step(fmt.Sprintf("node-%d's containerd and kubelet started", i), func() error { return w.startNode(ctx, i) }); err != nil {
			return w, err
		}
	}
	if err := step("every node Ready", func() error { return w.waitNodesReady(ctx) }); err != nil {
		return w, err
	}
	logf("node world: %d node(s) Ready %s after start", opts.Nodes, time.Since(start).Round(10*time.Millisecond))
	return w, nil
}

func (w *NodeWorld) startPKI() error {
	var err error
	if w.pki, err = newClusterPKI(filepath.Join(w.Dir, "pki")); err != nil {
		return err
	}
	w.CAFile = w.pki.CA
	if w.Kubeconfig, err = w.pki.kubeconfig("admin", w.APIServer, "node-world-admin", "system:masters"); err != nil {
		return err
	}
	if w.Config, err = clientcmd.BuildConfigFromFlags("", w.Kubeconfig); err != nil {
		return err
	}
	w.Config.QPS, w.Config.Burst = 50, 100
	w.Scheme = operatorscheme.New()
	utilruntime.Must(clientgoscheme.AddToScheme(w.Scheme))
	w.Client, err = client.New(w.Config, client.Options{Scheme: w.Scheme})
	return err
}

func (w *NodeWorld) start(name, binary string, args ...string) (*Process, error) {
	p, err := StartProcess(name, logPathFor(w.Dir, name), binary, args...)
	if err != nil {
		return nil, err
	}
	w.processes = append(w.processes, p)
	return p, nil
}

func (w *NodeWorld) bin(name string) string { return filepath.Join(w.assets, name) }

func (w *NodeWorld) startAPIServer(ctx context.Context) error {
	etcdURL := fmt.Sprintf("http://127.0.0.1:%d", etcdPort)
	etcd, err := w.start("etcd", w.bin("etcd"),
		"--data-dir="+filepath.Join(w.Dir, "etcd"),
		"--listen-client-urls="+etcdURL, "--advertise-client-urls="+etcdURL,
		fmt.Sprintf("--listen-peer-urls=http://127.0.0.1:%d", etcdPort+1),
		"--unsafe-no-fsync", "--log-level=warn")
	if err != nil {
		return err
	}
	p := w.pki
	apiserver, err := w.start("kube-apiserver", w.bin("kube-apiserver"),
		"--etcd-servers="+etcdURL,
		"--bind-address=0.0.0.0", "--secure-port="+strconv.Itoa(apiServerPort),
		// The address pods reach the API at, through the kubernetes Service.
		"--advertise-address="+NodeIP(1),
		"--tls-cert-file="+p.ServingCert, "--tls-private-key-file="+p.ServingKey,
		"--client-ca-file="+p.CA,
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file="+p.ServiceAccountPub,
		"--service-account-signing-key-file="+p.ServiceAccountKey,
		"--service-cluster-ip-range="+ServiceCIDR,
		"--authorization-mode=Node,RBAC",
		"--enable-admission-plugins=NodeRestriction",
		"--kubelet-client-certificate="+filepath.Join(p.dir, "admin.crt"),
		"--kubelet-client-key="+filepath.Join(p.dir, "admin.key"),
		"--kubelet-preferred-address-types=InternalIP",
		// The aggregation layer (APIServices such as OLM's packageserver), as kubeadm sets it up.
		"--requestheader-client-ca-file="+p.FrontProxyCA,
		"--requestheader-allowed-names=front-proxy-client",
		"--requestheader-username-headers=X-Remote-User",
		"--requestheader-group-headers=X-Remote-Group",
		"--requestheader-extra-headers-prefix=X-Remote-Extra-",
		"--proxy-client-cert-file="+p.ProxyClientCert, "--proxy-client-key-file="+p.ProxyClientKey,
		"--allow-privileged=true",
		"--profiling=false",
		"--v=1")
	if err != nil {
		return err
	}
	hc, err := rest.HTTPClientFor(w.Config)
	if err != nil {
		return err
	}
	wait, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	return waitFor(wait, 200*time.Millisecond, apiserver, func(ctx context.Context) (bool, error) {
		if !etcd.Running() {
			return false, fmt.Errorf("%v:\n%s", etcd.ExitError(), etcd.LogTail(20))
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, w.APIServer+"/readyz", nil)
		resp, err := hc.Do(req)
		if err != nil {
			return false, nil
		}
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
}

// startRegistry builds and starts the OCI registry (hack/image/registry, go-containerregistry's)
// on the first node's address, and pushes the pause image to it.
func (w *NodeWorld) startRegistry(ctx context.Context) error {
	binDir := filepath.Join(w.Dir, "bin")
	if err := os.MkdirAll(binDir, 0o755); err != nil {
		return err
	}
	registryBin := filepath.Join(binDir, "registry")
	build := exec.CommandContext(ctx, "go", "build", "-o", registryBin, "./registry")
	build.Dir = filepath.Join(w.root, "hack", "image")
	if out, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("building hack/image/registry: %v: %s", err, out)
	}
	w.Registry = net.JoinHostPort(NodeIP(1), strconv.Itoa(registryPort))
	registry, err := w.start("registry", registryBin, "--addr="+w.Registry)
	if err != nil {
		return err
	}
	wait, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := waitFor(wait, 100*time.Millisecond, registry, func(ctx context.Context) (bool, error) {
		resp, err := http.Get("http://" + w.Registry + "/v2/")
		if err != nil {
			return false, nil
		}
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	}); err != nil {
		return err
	}
	pause, err := buildStatic(ctx, w.root, "test/e2e/framework/pause", binDir)
	if err != nil {
		return err
	}
	_, err = PushBinaryImage(ctx, w.Registry, BinaryImage{
		Repository: pauseRepository, Tag: pauseTag,
		Files: map[string]string{"/pause": pause}, Entrypoint: []string{"/pause"}, User: "65535:65535",
	})
	return err
}

func (w *NodeWorld) startControllers() error {
	p := w.pki
	if _, err := w.start("kube-controller-manager", w.bin("kube-controller-manager"),
		"--kubeconfig="+w.Kubeconfig,
		"--controllers=*",
		"--use-service-account-credentials=true",
		"--service-account-private-key-file="+p.ServiceAccountKey,
		"--root-ca-file="+p.CA,
		"--cluster-signing-cert-file="+p.CA, "--cluster-signing-key-file="+p.CAKey,
		"--leader-elect=false", "--secure-port=0",
		"--v=1"); err != nil {
		return err
	}
	if _, err := w.start("kube-scheduler", w.bin("kube-scheduler"),
		"--kubeconfig="+w.Kubeconfig, "--leader-elect=false", "--secure-port=0", "--v=1"); err != nil {
		return err
	}
	// One kube-proxy: the nodes share the namespace, so they share its iptables.
	_, err := w.start("kube-proxy", w.bin("kube-proxy"),
		"--kubeconfig="+w.Kubeconfig,
		"--proxy-mode=iptables",
		"--cluster-cidr="+PodCIDR,
		"--hostname-override=node-1",
		"--bind-address="+NodeIP(1),
		"--healthz-bind-address=127.0.0.1:10256", "--metrics-bind-address=127.0.0.1:10249",
		// Leave the host's conntrack settings alone (they are not this namespace's).
		"--conntrack-max-per-core=0", "--conntrack-tcp-timeout-established=0s", "--conntrack-tcp-timeout-close-wait=0s",
		"--v=1")
	return err
}

func (w *NodeWorld) startNode(ctx context.Context, i int) error {
	n := &Node{Name: "node-" + strconv.Itoa(i), IP: NodeIP(i), Dir: filepath.Join(w.Dir, "node-"+strconv.Itoa(i))}
	n.Socket = filepath.Join(n.Dir, "containerd.sock")
	if err := w.writeNodeConfig(n, i); err != nil {
		return err
	}
	var err error
	if n.Containerd, err = w.start(n.Name+"-containerd", "containerd", "--config="+filepath.Join(n.Dir, "containerd.toml")); err != nil {
		return err
	}
	wait, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := waitFor(wait, 100*time.Millisecond, n.Containerd, func(context.Context) (bool, error) {
		conn, err := net.Dial("unix", n.Socket)
		if err != nil {
			return false, nil
		}
		_ = conn.Close()
		return true, nil
	}); err != nil {
		return fmt.Errorf("containerd of %s: %w:\n%s", n.Name, err, n.Containerd.LogTail(20))
	}
	if err := createCgroupRoot(NodeCgroupRoot(i)); err != nil {
		return fmt.Errorf("%s's cgroups: %w", n.Name, err)
	}
	kubeconfig, err := w.pki.kubeconfig(n.Name, w.APIServer, "system:node:"+n.Name, "system:nodes")
	if err != nil {
		return err
	}
	if n.Kubelet, err = w.start(n.Name+"-kubelet", w.bin("kubelet"),
		"--config="+filepath.Join(n.Dir, "kubelet.yaml"),
		"--kubeconfig="+kubeconfig,
		"--root-dir="+filepath.Join(n.Dir, "kubelet"),
		"--cert-dir="+filepath.Join(n.Dir, "kubelet", "pki"),
		"--hostname-override="+n.Name,
		"--node-ip="+n.IP,
		"--v=1"); err != nil {
		return err
	}
	w.Nodes = append(w.Nodes, n)
	return nil
}

// createCgroupRoot creates the cgroup a kubelet puts its pods under, in every cgroup v1 hierarchy
// (the kubelet wants it to exist); a new cpuset cgroup gets its parent's CPUs and memory nodes,
// without which no process may join it.
func createCgroupRoot(cgroup string) error {
	hierarchies, err := filepath.Glob("/sys/fs/cgroup/*")
	if err != nil {
		return err
	}
	for _, h := range hierarchies {
		if filepath.Base(h) == "unified" {
			continue
		}
		dir := filepath.Join(h, cgroup)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		if filepath.Base(h) == "cpuset" {
			for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
				value, err := os.ReadFile(filepath.Join(h, f))
				if err != nil {
					return err
				}
				if err := os.WriteFile(filepath.Join(dir, f), value, 0o644); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// writeNodeConfig writes node i's containerd configuration (its own root, state and socket, the
// registry as a plain-HTTP mirror, the bridge CNI) and kubelet configuration.
func (w *NodeWorld) writeNodeConfig(n *Node, i int) error {
	for _, d := range []string{"cni", "certs.d/" + w.Registry, "logs", "cni-state"} {
		if err := os.MkdirAll(filepath.Join(n.Dir, d), 0o755); err != nil {
			return err
		}
	}
	files := map[string]string{
		// Debian's containerd 1.6 (configuration version 2). restrict_oom_score_adj: root here has
		// no CAP_SYS_RESOURCE, and runc fails to lower a container's OOM score without it.
		"containerd.toml": fmt.Sprintf(`version = 2
root = %[1]q
state = %[2]q
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper"]
[grpc]
  address = %[3]q
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = %[4]q
  restrict_oom_score_adj = true
  enable_selinux = false
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = %[5]q
    conf_dir = %[6]q
  [plugins."io.containerd.grpc.v1.cri".registry]
    config_path = %[7]q
`, filepath.Join(n.Dir, "containerd-root"), filepath.Join(n.Dir, "containerd-state"), n.Socket,
			w.Registry+"/"+pauseRepository+":"+pauseTag, filepath.Join(w.assets, "cni"), filepath.Join(n.Dir, "cni"), filepath.Join(n.Dir, "certs.d")),
		// The registry speaks plain HTTP, as a homelab's often does.
		"certs.d/" + w.Registry + "/hosts.toml": fmt.Sprintf(`server = "http://%[1]s"
[host."http://%[1]s"]
  capabilities = ["pull", "resolve"]
`, w.Registry),
		"cni/10-node-world.conflist": fmt.Sprintf(`{
  "cniVersion": "1.0.0",
  "name": "node-world",
  "plugins": [
    {"type": "bridge", "bridge": "cni%[1]d", "isGateway": true, "ipMasq": false, "hairpinMode": true,
     "ipam": {"type": "host-local", "dataDir": %[2]q, "ranges": [[{"subnet": "10.88.%[1]d.0/24"}]], "routes": [{"dst": "0.0.0.0/0"}]}},
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
`, i, filepath.Join(n.Dir, "cni-state")),
		// cgroup v1 here: kubelet ≥ 1.35 refuses it unless told; oomScoreAdj 0 for the same reason
		// as containerd's restrict_oom_score_adj. Each node's pods get a cgroup root of their own.
		"kubelet.yaml": fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
containerRuntimeEndpoint: unix://%[1]s
failCgroupV1: false
cgroupDriver: cgroupfs
cgroupRoot: %[2]s
oomScoreAdj: 0
failSwapOn: false
port: %[3]d
readOnlyPort: 0
healthzPort: 0
podLogsDir: %[4]q
podCIDR: 10.88.%[5]d.0/24
clusterDomain: cluster.local
resolvConf: /etc/resolv.conf
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: %[6]q}
authorization:
  mode: Webhook
evictionHard:
  memory.available: "100Mi"
  nodefs.available: "1%%"
  imagefs.available: "1%%"
  nodefs.inodesFree: "1%%"
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
serializeImagePulls: false
nodeStatusUpdateFrequency: 4s
syncFrequency: 10s
`, n.Socket, NodeCgroupRoot(i), 10250+10*(i-1), filepath.Join(n.Dir, "logs"), i, w.pki.CA),
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(n.Dir, name), []byte(content), 0o644); err != nil {
			return err
		}
	}
	return nil
}

func (w *NodeWorld) waitNodesReady(ctx context.Context) error {
	wait, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	state := ""
	err := waitFor(wait, 250*time.Millisecond, nil, func(ctx context.Context) (bool, error) {
		for _, n := range w.Nodes {
			if !n.Kubelet.Running() {
				return false, fmt.Errorf("%v:\n%s", n.Kubelet.ExitError(), n.Kubelet.LogTail(30))
			}
		}
		var nodes corev1.NodeList
		if err := w.Client.List(ctx, &nodes); err != nil {
			state = err.Error()
			return false, nil
		}
		ready := 0
		var states []string
		for _, node := range nodes.Items {
			for _, cond := range node.Status.Conditions {
				if cond.Type == corev1.NodeReady {
					states = append(states, node.Name+": "+string(cond.Status)+" "+cond.Reason+" "+cond.Message)
					if cond.Status == corev1.ConditionTrue {
						ready++
					}
				}
			}
		}
		state = strings.Join(states, "; ")
		return ready == len(w.Nodes), nil
	})
	if err != nil {
		return fmt.Errorf("%w (nodes: %s); kubelet log:\n%s", err, state, w.Nodes[0].Kubelet.LogTail(30))
	}
	return nil
}

// Logs returns where the components' logs are, for failure messages.
func (w *NodeWorld) Logs() string {
	var b strings.Builder
	for _, p := range w.processes {
		fmt.Fprintf(&b, "  %s: %s\n", p.Name, p.LogPath)
	}
	return b.String()
}

// Stop stops every component, last started first, and removes the world's directory (whatever
// the pods left, the namespace's cleanup in RunInNetworkNamespace kills).
func (w *NodeWorld) Stop() error {
	var errs []error
	for i := len(w.processes) - 1; i >= 0; i-- {
		if err := w.processes[i].Stop(); err != nil {
			errs = append(errs, err)
		}
	}
	w.processes = nil
	if artifactsDir() == "" {
		// Mounts of the pods (overlays, projected volumes) live in the suite's own mount
		// namespace; unmount them so that the directory can go.
		_ = exec.Command("sh", "-c", "grep -o ' "+w.Dir+"[^ ]*' /proc/self/mounts | sort -r | xargs -r -n1 umount -l").Run()
		errs = append(errs, os.RemoveAll(w.Dir))
	}
	return errors.Join(errs...)
}

// WaitDeploymentReady waits until the Deployment has rolled out (as `kubectl rollout status`
// does: the new ReplicaSet's pods all updated and available, none left of an older one) and
// returns its pods.
func (w *NodeWorld) WaitDeploymentReady(ctx context.Context, namespace, name string, timeout time.Duration) ([]corev1.Pod, error) {
	var pods []corev1.Pod
	err := Poll(ctx, timeout, 250*time.Millisecond, "Deployment "+namespace+"/"+name+" rolled out", func(ctx context.Context) (bool, string, error) {
		var d appsv1.Deployment
		if err := w.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &d); err != nil {
			return false, err.Error(), nil
		}
		want := int32(1)
		if d.Spec.Replicas != nil {
			want = *d.Spec.Replicas
		}
		s := d.Status
		state := fmt.Sprintf("generation %d observed %d, %d/%d updated, %d available, %d total", d.Generation, s.ObservedGeneration, s.UpdatedReplicas, want, s.AvailableReplicas, s.Replicas)
		var list corev1.PodList
		if err := w.Client.List(ctx, &list, client.InNamespace(namespace), client.MatchingLabels(d.Spec.Selector.MatchLabels)); err != nil {
			return false, err.Error(), nil
		}
		// Pods still terminating (an older ReplicaSet's, an evicted one) are not the rollout's.
		pods = pods[:0]
		for _, p := range list.Items {
			if p.DeletionTimestamp == nil {
				pods = append(pods, p)
			}
		}
		state += "; pods: " + podStates(list.Items)
		return s.ObservedGeneration >= d.Generation && s.UpdatedReplicas == want && s.AvailableReplicas == want && s.Replicas == want &&
			len(pods) == int(want), state, nil
	})
	return pods, err
}

// podStates summarises pods for messages: phase, node and why a container is not ready.
func podStates(pods []corev1.Pod) string {
	var parts []string
	for _, p := range pods {
		s := p.Name + " " + string(p.Status.Phase) + " on " + p.Spec.NodeName
		for _, cs := range p.Status.ContainerStatuses {
			switch {
			case cs.State.Waiting != nil:
				s += fmt.Sprintf(" (%s waiting: %s %s)", cs.Name, cs.State.Waiting.Reason, cs.State.Waiting.Message)
			case cs.State.Terminated != nil:
				s += fmt.Sprintf(" (%s terminated: %s %d)", cs.Name, cs.State.Terminated.Reason, cs.State.Terminated.ExitCode)
			case !cs.Ready:
				s += fmt.Sprintf(" (%s running, not ready, %d restarts)", cs.Name, cs.RestartCount)
			}
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status != corev1.ConditionTrue {
				s += " (unschedulable: " + c.Message + ")"
			}
		}
		parts = append(parts, s)
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, "; ")
}

// Cluster returns the world as a Cluster, for what runs against any cluster (RunScript, an
// ExternalDNS process with opts.Kubeconfig set). Stopping it is the world's business.
func (w *NodeWorld) Cluster() *Cluster {
	return &Cluster{Name: "node-world", Config: w.Config, Client: w.Client, Kubeconfig: w.Kubeconfig, Dir: w.Dir}
}

// InstallIstioCRDs installs Istio's CRDs (the module go.mod selects), as `istioctl install` does:
// without istiod (InstallIstio runs it from Istio's own charts instead), the Istio Gateway stays an
// object the operator writes and tests read.
func (w *NodeWorld) InstallIstioCRDs() error {
	return w.installModuleCRDs(func(c testenv.CRDFiles) string { return c.Istio })
}

// installModuleCRDs installs the CRDs of the file pick chooses among those testenv installs.
func (w *NodeWorld) installModuleCRDs(pick func(testenv.CRDFiles) string) error {
	crds, err := testenv.LocateCRDs()
	if err != nil {
		return err
	}
	_, err = envtest.InstallCRDs(w.Config, envtest.CRDInstallOptions{Paths: []string{pick(crds)}, ErrorIfPathMissing: true})
	return err
}

// NewKubeconfig writes another admin kubeconfig (its own client certificate, named name) and
// returns its path, for processes that run beside the cluster (ExternalDNS as a homelab runs it).
func (w *NodeWorld) NewKubeconfig(name string) (string, error) {
	return w.pki.kubeconfig(sanitize(name), w.APIServer, name, "system:masters")
}

// Diagnostics describes the pods of namespace, the last lines each of their containers logged (the
// kubelets' log files, what `kubectl logs` reads), the namespace's recent events and the kubelets'
// last lines, for failure messages.
func (w *NodeWorld) Diagnostics(ctx context.Context, namespace string) string {
	var b strings.Builder
	var pods corev1.PodList
	if err := w.Client.List(ctx, &pods, client.InNamespace(namespace)); err != nil {
		fmt.Fprintf(&b, "listing pods of %s: %v\n", namespace, err)
	}
	fmt.Fprintf(&b, "--- pods of %s: %s\n", namespace, podStates(pods.Items))
	for _, n := range w.Nodes {
		logs, _ := filepath.Glob(filepath.Join(n.Dir, "logs", namespace+"_*", "*", "*.log"))
		for _, l := range logs {
			fmt.Fprintf(&b, "--- %s (last 20 lines)\n%s\n", strings.TrimPrefix(l, filepath.Join(n.Dir, "logs")+"/"), tailFile(l, 20))
		}
	}
	var events corev1.EventList
	if err := w.Client.List(ctx, &events, client.InNamespace(namespace)); err == nil {
		fmt.Fprintf(&b, "--- events of %s (last 15)\n", namespace)
		items := events.Items
		if len(items) > 15 {
			items = items[len(items)-15:]
		}
		for _, e := range items {
			fmt.Fprintf(&b, "%s %s/%s %s: %s\n", e.Type, e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Reason, e.Message)
		}
	}
	for _, n := range w.Nodes {
		fmt.Fprintf(&b, "--- %s kubelet (last 10 lines)\n%s\n", n.Name, n.Kubelet.LogTail(10))
	}
	fmt.Fprintf(&b, "--- logs of the world's components%s:\n%s", keptNote(), w.Logs())
	return b.String()
}

// ContainerLog returns what the container of the pod logged so far (as `kubectl logs` shows it:
// the kubelet's log file of the container's current instance, CRI lines with their prefixes).
func (w *NodeWorld) ContainerLog(pod *corev1.Pod, container string) string {
	var b strings.Builder
	for _, n := range w.Nodes {
		logs, _ := filepath.Glob(filepath.Join(n.Dir, "logs", pod.Namespace+"_"+pod.Name+"_"+string(pod.UID), container, "*.log"))
		for _, l := range logs {
			data, _ := os.ReadFile(l)
			b.Write(data)
		}
	}
	return b.String()
}

// InstallGatewayAPICRDs installs the standard-channel Gateway API CRDs of the module go.mod
// selects (Gateway, ListenerSet, HTTPRoute, ReferenceGrant, ...), as a Gateway API install does.
func (w *NodeWorld) InstallGatewayAPICRDs() error {
	return w.installModuleCRDs(func(c testenv.CRDFiles) string { return c.GatewayAPI })
}

// InstallExternalDNSCRDs installs the DNSEndpoint CRD of the ExternalDNS module go.mod selects.
func (w *NodeWorld) InstallExternalDNSCRDs() error {
	return w.installModuleCRDs(func(c testenv.CRDFiles) string { return c.ExternalDNS })
}

// prometheusOperatorModule holds the Prometheus Operator's CRDs (ServiceMonitor, PrometheusRule):
// the chart's AKS values create both, as a cluster running kube-prometheus-stack accepts.
const prometheusOperatorModule = "github.com/prometheus-operator/prometheus-operator@v0.89.0"

// InstallPrometheusOperatorCRDs installs the ServiceMonitor and PrometheusRule CRDs of the
// Prometheus Operator (from its module, through the Go module proxy).
func (w *NodeWorld) InstallPrometheusOperatorCRDs(ctx context.Context) error {
	moduleDir, err := downloadModule(ctx, prometheusOperatorModule)
	if err != nil {
		return err
	}
	dir := filepath.Join(moduleDir, "example", "prometheus-operator-crd")
	_, err = envtest.InstallCRDs(w.Config, envtest.CRDInstallOptions{ErrorIfPathMissing: true, Paths: []string{
		filepath.Join(dir, "monitoring.coreos.com_servicemonitors.yaml"),
		filepath.Join(dir, "monitoring.coreos.com_prometheusrules.yaml"),
	}})
	return err
}

// PushOperatorImage pushes the operator's image (the layout `make image` wrote) to the world's
// registry with `make image-push`, the command the walkthroughs give, and returns the repository
// it pushed to (REGISTRY/service-router-operator, tag v<chart appVersion>).
func (w *NodeWorld) PushOperatorImage(ctx context.Context) (string, error) {
	chart, err := os.ReadFile(filepath.Join(w.root, "charts", "service-router-operator", "Chart.yaml"))
	if err != nil {
		return "", err
	}
	appVersion := regexp.MustCompile(`(?m)^appVersion: "?([^"\s]+)"?$`).FindSubmatch(chart)
	if appVersion == nil {
		return "", errors.New("the chart's Chart.yaml has no appVersion")
	}
	repo := w.Registry + "/service-router-operator"
	// The chart's default tag is v<appVersion>.
	unlock, err := LockTree(w.root)
	if err != nil {
		return "", err
	}
	defer unlock()
	cmd := exec.CommandContext(ctx, "make", "--no-print-directory", "image-push", "IMG="+repo+":v"+string(appVersion[1]), "REGISTRY_PLAIN_HTTP=true")
	cmd.Dir = w.root
	// A make of its own, not a sub-make of `make test` (whose jobserver it would share).
	cmd.Env = append(os.Environ(), "MAKEFLAGS=", "MAKELEVEL=")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("make image-push: %v\n%s", err, out)
	}
	return repo, nil
}

// downloadModule returns the directory of module@version in the module cache, downloading it
// first if needed (outside the node world's namespace: it has no network).
func downloadModule(ctx context.Context, module string) (string, error) {
	out, err := exec.CommandContext(ctx, "go", "mod", "download", "-json", module).Output()
	var mod struct{ Dir, Error string }
	if jsonErr := json.Unmarshal(out, &mod); err != nil || jsonErr != nil || mod.Dir == "" {
		return "", fmt.Errorf("go mod download %s: %v %s (inside the node world's namespace only modules fetched before, by RunInNetworkNamespace's fetch, are there)", module, err, mod.Error)
	}
	return mod.Dir, nil
}
