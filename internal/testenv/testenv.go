// Package testenv starts a real control plane for integration tests: etcd and kube-apiserver
// through envtest, with the operator's CRDs plus the ExternalDNS DNSEndpoint and Istio CRDs (and,
// on request, the Gateway API's standard channel) from the pinned modules, and optionally kube-controller-manager so that owner-reference garbage
// collection and namespace deletion happen as they do in a real cluster.
//
// The binaries come from bin/ (built by `make test` from the Go module proxy) or from
// $KUBEBUILDER_ASSETS.
package testenv

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	operatorscheme "github.com/service-router/service-router-operator/internal/scheme"
)

// Pinned locations of third-party CRDs inside their Go modules. The module versions come from
// go.mod, so the CRDs always match the Go types the operator is compiled against.
const (
	externalDNSModule  = "sigs.k8s.io/external-dns"
	externalDNSCRDPath = "config/crd/standard/dnsendpoints.externaldns.k8s.io.yaml"
	istioAPIModule     = "istio.io/api"
	istioCRDPath       = "kubernetes/customresourcedefinitions.gen.yaml"
	// The Gateway API's standard channel (Gateway, ListenerSet, HTTPRoute, ReferenceGrant, …, with
	// their CEL rules); the directory also holds a ValidatingAdmissionPolicy, which envtest skips.
	gatewayAPIModule = "sigs.k8s.io/gateway-api"
	gatewayAPICRDDir = "config/crd/standard"
)

// Options choose what runs besides etcd and kube-apiserver.
type Options struct {
	// ControllerManager also starts kube-controller-manager with the garbage collector, the
	// namespace controller and the cluster role aggregation controller.
	ControllerManager bool
	// SkipIstioCRDs starts the control plane without the Istio CRDs, as a cluster without Istio
	// (or with Istio being reinstalled); InstallIstioCRDs adds them later.
	SkipIstioCRDs bool
	// SkipExternalDNSCRDs starts the control plane without the DNSEndpoint CRD, as a cluster where
	// ExternalDNS is not installed yet; InstallExternalDNSCRDs adds it later.
	SkipExternalDNSCRDs bool
	// SkipOperatorCRDs starts the control plane without the operator's own CRDs, as a cluster
	// the operator has never been installed on (a chart installs them).
	SkipOperatorCRDs bool
	// GatewayAPICRDs also installs the Gateway API's standard-channel CRDs (the version go.mod
	// selects); without it the cluster has no Gateway API, as most clusters with classic Istio.
	// InstallGatewayAPICRDs adds them later.
	GatewayAPICRDs bool
}

// Env is a running control plane.
type Env struct {
	// Config is an admin (system:masters) REST config.
	Config *rest.Config
	// Client is a client for Config with the operator's scheme.
	Client client.Client
	// Scheme is the operator's scheme.
	Scheme *runtime.Scheme
	// RepoRoot is the repository's top directory.
	RepoRoot string

	env        *envtest.Environment
	kcm        *exec.Cmd
	kcmExited  chan struct{}
	kcmLog     *bytes.Buffer
	scratchDir string
	crds       CRDFiles
	// restarted are the kube-apiservers RestartAPIServer started.
	restarted []restartedProcess
}

// Start boots the control plane. Call Stop when done.
func Start(opts Options) (*Env, error) {
	root, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		assets = filepath.Join(root, "bin")
	}
	for _, name := range []string{"etcd", "kube-apiserver"} {
		if _, err := os.Stat(filepath.Join(assets, name)); err != nil {
			return nil, fmt.Errorf("control-plane binary %s not found in %s: run `make test` (it builds them once into bin/): %w", name, assets, err)
		}
	}
	crds, err := locateCRDs(root)
	if err != nil {
		return nil, err
	}
	var crdPaths []string
	if !opts.SkipOperatorCRDs {
		crdPaths = append(crdPaths, crds.Operator)
	}
	if !opts.SkipExternalDNSCRDs {
		crdPaths = append(crdPaths, crds.ExternalDNS)
	}
	if !opts.SkipIstioCRDs {
		crdPaths = append(crdPaths, crds.Istio)
	}
	if opts.GatewayAPICRDs {
		crdPaths = append(crdPaths, crds.GatewayAPI)
	}

	scheme := operatorscheme.New()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme)) // tests handle RBAC, leases, …
	e := &Env{Scheme: scheme, RepoRoot: root, crds: crds}
	e.env = &envtest.Environment{
		Scheme:                scheme,
		BinaryAssetsDirectory: assets,
		ErrorIfCRDPathMissing: true,
		CRDInstallOptions:     envtest.CRDInstallOptions{Paths: crdPaths},
		// A loaded 2-core CI machine can take longer than envtest's 20 s default.
		ControlPlaneStartTimeout: 90 * time.Second,
	}
	if e.Config, err = e.env.Start(); err != nil {
		return nil, fmt.Errorf("starting kube-apiserver and etcd: %w", err)
	}
	if e.Client, err = client.New(e.Config, client.Options{Scheme: scheme}); err != nil {
		_ = e.Stop()
		return nil, err
	}
	if opts.ControllerManager {
		if err := e.startControllerManager(assets); err != nil {
			_ = e.Stop()
			return nil, err
		}
	}
	return e, nil
}

// Stop stops kube-controller-manager (if started) and the control plane.
func (e *Env) Stop() error {
	var errs []error
	if e.kcm != nil && e.kcm.Process != nil {
		_ = e.kcm.Process.Signal(os.Interrupt)
		select {
		case <-e.kcmExited:
		case <-time.After(10 * time.Second):
			_ = e.kcm.Process.Kill()
			<-e.kcmExited
		}
	}
	for _, p := range e.restarted {
		errs = append(errs, p.stop())
	}
	if e.env != nil {
		errs = append(errs, e.env.Stop())
	}
	if e.scratchDir != "" {
		errs = append(errs, os.RemoveAll(e.scratchDir))
	}
	return errors.Join(errs...)
}

// AdminKubeconfig writes a kubeconfig for a system:masters user and returns its path. It lives
// until Stop.
func (e *Env) AdminKubeconfig() (string, error) {
	user, err := e.env.AddUser(envtest.User{Name: "testenv-admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return "", fmt.Errorf("adding admin user: %w", err)
	}
	kubeconfig, err := user.KubeConfig()
	if err != nil {
		return "", err
	}
	if e.scratchDir == "" {
		if e.scratchDir, err = os.MkdirTemp("", "testenv-"); err != nil {
			return "", err
		}
	}
	path := filepath.Join(e.scratchDir, "admin.kubeconfig")
	return path, os.WriteFile(path, kubeconfig, 0o600)
}

// ControllerManagerLog returns what kube-controller-manager printed so far, for failure messages.
func (e *Env) ControllerManagerLog() string {
	if e.kcmLog == nil {
		return ""
	}
	return e.kcmLog.String()
}

func (e *Env) startControllerManager(assets string) error {
	path := filepath.Join(assets, "kube-controller-manager")
	if _, err := os.Stat(path); err != nil {
		return fmt.Errorf("kube-controller-manager not found in %s: run `make test` (it builds it once into bin/): %w", assets, err)
	}
	kubeconfig, err := e.AdminKubeconfig()
	if err != nil {
		return err
	}
	e.kcmLog = &bytes.Buffer{}
	e.kcm = exec.Command(path,
		"--kubeconfig="+kubeconfig,
		// clusterrole-aggregation fills the built-in admin, edit and view roles from the roles
		// labelled to aggregate into them, so a test can act as a namespace editor.
		"--controllers=garbagecollector,namespace,clusterrole-aggregation",
		"--leader-elect=false",
		"--secure-port=0",
		"--use-service-account-credentials=false",
	)
	e.kcm.Stdout = e.kcmLog
	e.kcm.Stderr = e.kcmLog
	if err := e.kcm.Start(); err != nil {
		return fmt.Errorf("starting kube-controller-manager: %w", err)
	}
	e.kcmExited = make(chan struct{})
	go func() {
		_ = e.kcm.Wait()
		close(e.kcmExited)
	}()
	// The garbage collector only acts once it has synced its informers; give it a moment to
	// come up and fail fast if the process dies on bad flags.
	select {
	case <-e.kcmExited:
		return fmt.Errorf("kube-controller-manager exited at start:\n%s", e.kcmLog.String())
	case <-time.After(500 * time.Millisecond):
		return nil
	}
}

// RepoRoot finds the repository's top directory (the one holding the operator's go.mod) from
// the working directory, which `go test` sets to the package directory.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && bytes.HasPrefix(bytes.TrimSpace(data), []byte("module github.com/service-router/service-router-operator\n")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("repository root (go.mod of the operator) not found above the working directory")
		}
		dir = parent
	}
}

// InstallIstioCRDs installs the Istio CRDs (from the same pinned module file Start uses) into a
// control plane started with SkipIstioCRDs, and waits until the API server serves them.
func (e *Env) InstallIstioCRDs() error {
	return e.installCRDs(e.crds.Istio)
}

// InstallExternalDNSCRDs installs the DNSEndpoint CRD (from the same pinned module file Start
// uses) into a control plane started with SkipExternalDNSCRDs, and waits until it is served.
func (e *Env) InstallExternalDNSCRDs() error {
	return e.installCRDs(e.crds.ExternalDNS)
}

// InstallGatewayAPICRDs installs the Gateway API's standard-channel CRDs (from the same pinned
// module directory Start uses) and waits until they are served.
func (e *Env) InstallGatewayAPICRDs() error {
	return e.installCRDs(e.crds.GatewayAPI)
}

func (e *Env) installCRDs(path string) error {
	_, err := envtest.InstallCRDs(e.Config, envtest.CRDInstallOptions{Paths: []string{path}, ErrorIfPathMissing: true})
	if err != nil {
		return fmt.Errorf("installing the CRDs of %s: %w", path, err)
	}
	return nil
}

// CRDFiles are the operator's CRD directory and the third-party CRD files (a file, or the Gateway
// API's directory) from the module cache.
type CRDFiles struct {
	Operator, ExternalDNS, Istio, GatewayAPI string
}

// LocateCRDs returns the CRD files Start installs, for clusters it does not start (the node world
// of the end-to-end framework).
func LocateCRDs() (CRDFiles, error) {
	root, err := RepoRoot()
	if err != nil {
		return CRDFiles{}, err
	}
	return locateCRDs(root)
}

func locateCRDs(root string) (CRDFiles, error) {
	externalDNS, err := moduleDir(root, externalDNSModule)
	if err != nil {
		return CRDFiles{}, err
	}
	istioAPI, err := moduleDir(root, istioAPIModule)
	if err != nil {
		return CRDFiles{}, err
	}
	gatewayAPI, err := moduleDir(root, gatewayAPIModule)
	if err != nil {
		return CRDFiles{}, err
	}
	return CRDFiles{
		Operator:    filepath.Join(root, "config", "crd", "bases"),
		ExternalDNS: filepath.Join(externalDNS, externalDNSCRDPath),
		Istio:       filepath.Join(istioAPI, istioCRDPath),
		GatewayAPI:  filepath.Join(gatewayAPI, gatewayAPICRDDir),
	}, nil
}

// moduleDir asks the go command where the version of module that go.mod selects is unpacked.
func moduleDir(root, module string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "mod", "download", "-json", module)
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("locating module %s: %w", module, err)
	}
	var info struct{ Dir, Error string }
	if err := json.Unmarshal(out, &info); err != nil {
		return "", fmt.Errorf("locating module %s: %w", module, err)
	}
	if info.Dir == "" {
		return "", fmt.Errorf("locating module %s: %s", module, info.Error)
	}
	return info.Dir, nil
}
