package framework

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/service-router/service-router-operator/internal/testenv"
)

// ClusterOptions configure a local control plane standing in for one Kubernetes cluster.
type ClusterOptions struct {
	// Name identifies the cluster in messages, e.g. "aks01-weu".
	Name string
	// ControllerManager also runs kube-controller-manager (garbage collector and namespace
	// controller), for tests that rely on owner-reference cascades or namespace deletion.
	ControllerManager bool
	// GatewayAPICRDs also installs the Gateway API's standard-channel CRDs.
	GatewayAPICRDs bool
}

// Cluster is a running control plane (etcd + kube-apiserver from envtest, with the operator's
// CRDs, the ExternalDNS DNSEndpoint CRD and the Istio CRDs installed).
type Cluster struct {
	Name string
	Env  *testenv.Env
	// Config and Client are admin (system:masters) access with the operator's scheme.
	Config *rest.Config
	Client client.Client
	// Kubeconfig is an admin kubeconfig file for processes and kubectl.
	Kubeconfig string
	// Dir holds the cluster's kubeconfig files; removed by Stop.
	Dir string
}

// StartCluster starts a control plane; the binaries come from $KUBEBUILDER_ASSETS or bin/ (`make
// control-plane`). When c is not nil, Stop is registered with it.
func StartCluster(ctx context.Context, c Cleanup, opts ClusterOptions) (*Cluster, error) {
	if opts.Name == "" {
		opts.Name = "cluster"
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	dir, err := newWorkDir("cluster-" + opts.Name)
	if err != nil {
		return nil, err
	}
	env, err := testenv.Start(testenv.Options{ControllerManager: opts.ControllerManager, GatewayAPICRDs: opts.GatewayAPICRDs})
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("cluster %q: %w", opts.Name, err)
	}
	cl := &Cluster{Name: opts.Name, Env: env, Config: env.Config, Client: env.Client, Dir: dir}
	if cl.Kubeconfig, err = cl.NewKubeconfig("admin"); err != nil {
		_ = cl.Stop()
		return nil, fmt.Errorf("cluster %q: %w", opts.Name, err)
	}
	if c != nil {
		c.Cleanup(func() { _ = cl.Stop() })
	}
	return cl, nil
}

// NewKubeconfig writes a kubeconfig for a new system:masters user named name into a new file in
// the cluster's directory and returns its path. Every call makes a new file, so no process ever
// sees its kubeconfig rewritten.
func (cl *Cluster) NewKubeconfig(name string) (string, error) {
	f, err := os.CreateTemp(cl.Dir, sanitize(name)+"-*.kubeconfig")
	if err != nil {
		return "", err
	}
	path := f.Name()
	if err := f.Close(); err != nil {
		return "", err
	}
	if err := cl.Env.WriteAdminKubeconfig(path, name); err != nil {
		return "", err
	}
	return path, nil
}

// StartExternalDNS starts an ExternalDNS process watching this cluster (opts.Kubeconfig is set
// to a kubeconfig of its own).
func (cl *Cluster) StartExternalDNS(ctx context.Context, c Cleanup, opts ExternalDNSOptions) (*ExternalDNS, error) {
	if opts.Kubeconfig == "" {
		kc, err := cl.NewKubeconfig(opts.Name)
		if err != nil {
			return nil, err
		}
		opts.Kubeconfig = kc
	}
	return StartExternalDNS(ctx, c, opts)
}

// Stop stops the control plane and removes the cluster's directory.
func (cl *Cluster) Stop() error {
	var err error
	if cl.Env != nil {
		err = cl.Env.Stop()
	}
	return errors.Join(err, os.RemoveAll(cl.Dir))
}

// OperatorOptions configure the operator process.
type OperatorOptions struct {
	// Binary is the manager executable (default ManagerBinary: $E2E_MANAGER_BINARY, else
	// <repo>/bin/manager, built by `make build`).
	Binary string
	// ExtraArgs are appended to the command line (after the defaults, so they win for flags
	// given twice).
	ExtraArgs []string
	// StartTimeout bounds the wait for /readyz (default 60s).
	StartTimeout time.Duration
	// Env is added to the operator's environment (for example GOMEMLIMIT=...); nil inherits ours.
	Env []string
}

// Operator is the operator binary running against a Cluster.
type Operator struct {
	// HealthPort serves /healthz and /readyz on 127.0.0.1.
	HealthPort int
	Args       []string
	Dir        string

	proc *Process
}

// ManagerBinary returns the path of the operator binary: $E2E_MANAGER_BINARY when set (a build
// of one's own, so that a shared bin/ is not overwritten), else bin/manager.
func ManagerBinary() (string, error) {
	if p := os.Getenv("E2E_MANAGER_BINARY"); p != "" {
		return p, nil
	}
	root, err := repoRoot()
	if err != nil {
		return "", err
	}
	p := filepath.Join(root, "bin", "manager")
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("%s not found: run `make build`: %w", p, err)
	}
	return p, nil
}

// StartOperator runs the operator against the cluster with --kubeconfig, metrics off, a free
// health-probe port and no leader election, and returns once /readyz answers 200. When c is not
// nil, Stop is registered with it.
func (cl *Cluster) StartOperator(ctx context.Context, c Cleanup, opts OperatorOptions) (*Operator, error) {
	binary := opts.Binary
	if binary == "" {
		var err error
		if binary, err = ManagerBinary(); err != nil {
			return nil, err
		}
	}
	if opts.StartTimeout == 0 {
		opts.StartTimeout = 60 * time.Second
	}
	kubeconfig, err := cl.NewKubeconfig("operator")
	if err != nil {
		return nil, err
	}
	op, err := startRetryingPort(ctx, c, func() (*Operator, error) { // the health port may be taken in between
		return startOperatorOnce(ctx, cl.Name, binary, kubeconfig, opts)
	})
	if err != nil {
		return nil, fmt.Errorf("starting the operator against cluster %q: %w", cl.Name, err)
	}
	return op, nil
}

func startOperatorOnce(ctx context.Context, cluster, binary, kubeconfig string, opts OperatorOptions) (*Operator, error) {
	port, err := FreePort()
	if err != nil {
		return nil, err
	}
	dir, err := newWorkDir("operator-" + cluster)
	if err != nil {
		return nil, err
	}
	args := append([]string{
		"--kubeconfig=" + kubeconfig,
		"--metrics-bind-address=0",
		"--health-probe-bind-address=127.0.0.1:" + strconv.Itoa(port),
		"--leader-elect=false",
	}, opts.ExtraArgs...)
	op := &Operator{HealthPort: port, Args: args, Dir: dir}
	var env []string
	if len(opts.Env) > 0 {
		env = append(os.Environ(), opts.Env...)
	}
	if op.proc, err = StartProcessWithEnv("operator-"+cluster, logPathFor(dir, "operator-"+cluster), env, binary, args...); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	wctx, cancel := context.WithTimeout(ctx, opts.StartTimeout)
	defer cancel()
	if err := waitFor(wctx, 100*time.Millisecond, op.proc, op.ready); err != nil {
		log := op.proc.LogTail(40)
		_ = op.Stop()
		err = fmt.Errorf("operator not ready on 127.0.0.1:%d/readyz: %w\n--- operator log (last 40 lines) ---\n%s", port, err, log)
		if strings.Contains(log, "address already in use") {
			err = fmt.Errorf("%w: %w", errPortInUse, err)
		}
		return nil, err
	}
	return op, nil
}

func (op *Operator) ready(ctx context.Context) (bool, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d/readyz", op.HealthPort), nil)
	if err != nil {
		return false, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false, nil
	}
	_ = resp.Body.Close()
	return resp.StatusCode == http.StatusOK, nil
}

// Running reports whether the operator process is still running.
func (op *Operator) Running() bool { return op.proc.Running() }

// LogPath is the file with the operator's output.
func (op *Operator) LogPath() string { return op.proc.LogPath }

// LogTail returns the last n lines of the operator's log.
func (op *Operator) LogTail(n int) string { return op.proc.LogTail(n) }

// Diagnostics returns the tail of the log, for failure messages.
func (op *Operator) Diagnostics() string {
	return fmt.Sprintf("--- operator log (last 25 lines; full log %s%s) ---\n%s", op.proc.LogPath, keptNote(), op.proc.LogTail(25))
}

// Stop stops the operator (SIGTERM, so it shuts down cleanly) and removes its directory.
func (op *Operator) Stop() error {
	var err error
	if op.proc != nil {
		err = op.proc.Stop()
	}
	return errors.Join(err, os.RemoveAll(op.Dir))
}

// Kill kills the operator with SIGKILL (Process.Kill); Stop still removes its directory.
func (op *Operator) Kill() { op.proc.Kill() }

// repoRoot is the operator repository's top directory.
func repoRoot() (string, error) { return testenv.RepoRoot() }

// Pid is the operator's process id (for /proc/<pid>/status: peak memory).
func (op *Operator) Pid() int { return op.proc.Pid() }
