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
)

// IstiodBinary returns istiod's pilot-discovery: $ISTIOD_BINARY when set, else bin/istio/pilot-discovery
// (`make istio`). A missing binary is an error naming the target, never a reason to skip.
func IstiodBinary() (string, error) {
	p := os.Getenv("ISTIOD_BINARY")
	if p == "" {
		root, err := repoRoot()
		if err != nil {
			return "", err
		}
		p = filepath.Join(root, "bin", "istio", "pilot-discovery")
	}
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("%s not found: run make istio: %w", p, err)
	}
	return p, nil
}

// Istiod is istiod (pilot-discovery) running as a process against a Cluster, out of the cluster.
type Istiod struct {
	// XDSAddress is its plaintext xDS (gRPC) address, what DialXDS connects to.
	XDSAddress string
	// HTTPAddress serves /ready and the debug endpoints (/debug/configz, /debug/syncz).
	HTTPAddress string
	Dir         string
	proc        *Process
}

// IstiodEnv is the environment istiod needs out of the cluster: its namespace (which must
// exist: it keeps its leader-election leases and looks for its mesh ConfigMap there) and revision,
// and none of what needs a pod: no CA (no certificates to sign, no secure xDS port) and no
// Gateway API controller (its CRDs may be absent). Analysis and status writes stay off so that
// istiod writes nothing the operator's benchmarks count.
var IstiodEnv = []string{
	"POD_NAMESPACE=istio-system",
	"POD_NAME=istiod-local",
	"REVISION=default",
	"ENABLE_CA_SERVER=false",
	"PILOT_ENABLE_GATEWAY_API=false",
	"PILOT_ENABLE_GATEWAY_API_STATUS=false",
	"PILOT_ENABLE_STATUS=false",
	"PILOT_ENABLE_ANALYSIS=false",
	"ENABLE_ENHANCED_RESOURCE_SCOPING=false",
}

// StartIstiod runs istiod against the cluster (the istio-system namespace must exist) and returns
// once it is ready: its caches synced, so that a proxy connecting now gets complete
// configuration. When c is not nil, Stop is registered with it.
func (cl *Cluster) StartIstiod(ctx context.Context, c Cleanup) (*Istiod, error) {
	binary, err := IstiodBinary()
	if err != nil {
		return nil, err
	}
	kubeconfig, err := cl.NewKubeconfig("istiod")
	if err != nil {
		return nil, err
	}
	is, err := startRetryingPort(ctx, c, func() (*Istiod, error) { return startIstiodOnce(ctx, cl.Name, binary, kubeconfig) })
	if err != nil {
		return nil, fmt.Errorf("starting istiod against cluster %q: %w", cl.Name, err)
	}
	return is, nil
}

func startIstiodOnce(ctx context.Context, cluster, binary, kubeconfig string) (*Istiod, error) {
	var ports [3]int
	for i := range ports {
		p, err := FreePort()
		if err != nil {
			return nil, err
		}
		ports[i] = p
	}
	dir, err := newWorkDir("istiod-" + cluster)
	if err != nil {
		return nil, err
	}
	is := &Istiod{XDSAddress: "127.0.0.1:" + strconv.Itoa(ports[0]), HTTPAddress: "127.0.0.1:" + strconv.Itoa(ports[1]), Dir: dir}
	args := []string{"discovery",
		"--kubeconfig=" + kubeconfig,
		"--grpcAddr=" + is.XDSAddress,
		"--httpAddr=" + is.HTTPAddress,
		"--monitoringAddr=127.0.0.1:" + strconv.Itoa(ports[2]),
		// No secure xDS port (it needs istiod's own certificate) and no webhook server.
		"--secureGRPCAddr=",
		"--httpsAddr=",
		// Files that do not exist: istiod then reads its ConfigMap (absent: the default mesh)
		// rather than ./etc/istio/config relative to wherever the test runs.
		"--meshConfig=" + filepath.Join(dir, "mesh"),
		"--networksConfig=" + filepath.Join(dir, "meshNetworks"),
		"--log_output_level=default:info",
	}
	env := append(os.Environ(), IstiodEnv...)
	if is.proc, err = StartProcessWithEnv("istiod-"+cluster, logPathFor(dir, "istiod-"+cluster), env, binary, args...); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	wctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	if err := waitFor(wctx, 200*time.Millisecond, is.proc, is.ready); err != nil {
		log := is.proc.LogTail(40)
		_ = is.Stop()
		err = fmt.Errorf("istiod not ready on %s/ready: %w\n--- istiod log (last 40 lines) ---\n%s", is.HTTPAddress, err, log)
		if strings.Contains(log, "address already in use") {
			err = fmt.Errorf("%w: %w", errPortInUse, err)
		}
		return nil, err
	}
	return is, nil
}

func (is *Istiod) ready(ctx context.Context) (bool, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+is.HTTPAddress+"/ready", nil)
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

// LogTail returns the last n lines of istiod's log.
func (is *Istiod) LogTail(n int) string { return is.proc.LogTail(n) }

// Pid is istiod's process id.
func (is *Istiod) Pid() int { return is.proc.Pid() }

// Stop stops istiod and removes its directory.
func (is *Istiod) Stop() error {
	var err error
	if is.proc != nil {
		err = is.proc.Stop()
	}
	return errors.Join(err, os.RemoveAll(is.Dir))
}
