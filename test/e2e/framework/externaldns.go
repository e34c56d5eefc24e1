package framework

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/service-router/service-router-operator/internal/naming"
)

// ControllerAnnotation is the annotation ExternalDNS instances filter DNSEndpoints on
// (--annotation-filter); its value is the instance's name.
const ControllerAnnotation = "external-dns.alpha.kubernetes.io/controller"

// ExternalDNSOptions configure one ExternalDNS process with the CRD source (DNSEndpoint) and the
// rfc2136 provider.
type ExternalDNSOptions struct {
	// Name is the controller name: DNSEndpoints annotated ControllerAnnotation=Name and labelled
	// router.io/controller=Name are this instance's (--annotation-filter, --label-filter).
	// Required, e.g. "external-dns-weu".
	Name string
	// Kubeconfig is the kubeconfig of the cluster to watch. Required.
	Kubeconfig string
	// DNSPort and Zone are the RFC 2136 server on 127.0.0.1 and the zone to manage. Required;
	// see ForBind.
	DNSPort int
	Zone    string
	// OwnerID is --txt-owner-id (default Name).
	OwnerID string
	// TXTPrefix is --txt-prefix (default none).
	TXTPrefix string
	// Policy is --policy (default "sync").
	Policy string
	// Interval is --interval (default 500ms). ExternalDNS's loop checks once a second whether
	// the next run is due (due = start of the previous run + interval), so with 1s the check
	// often comes a hair early and runs happen every 2s; any value below 1s means "every check",
	// i.e. one synchronization per second.
	Interval time.Duration
	// LogLevel is --log-level (default "debug": ownership decisions are logged at debug level).
	LogLevel string
	// AnnotationFilterOnly leaves out --label-filter=router.io/controller=<Name>, which the
	// instance otherwise has, as docs/EXTERNALDNS-INTEGRATION.md recommends: ExternalDNS v0.22.0
	// selecting by annotation alone dropped its whole initial list of DNSEndpoints when it held
	// another controller's (a restart, or a start that meets the operator's first records), and
	// then published nothing until each of its DNSEndpoints changed again; v0.23.0 keeps the zone
	// (kubernetes-sigs/external-dns#6728). Only the test that restarts an instance with either
	// filter (TestExternalDNSRestart_KeepsTheZoneWithEitherFilter) sets it.
	AnnotationFilterOnly bool
	// TSIG, when set, signs the updates and transfers with the key (ForBind sets it for a zone that
	// takes only signed updates) instead of --rfc2136-insecure.
	TSIG *TSIGKey
	// ExtraArgs are appended to the command line.
	ExtraArgs []string
	// Args, when set, is the whole command line but --kubeconfig and --metrics-address, which the
	// framework adds: DNSPort, Zone, OwnerID, TXTPrefix, Policy, Interval, LogLevel and
	// AnnotationFilterOnly are then ignored. For a configuration users copy rather than the
	// framework's (ExternalDNSExample.LocalArgs); OwnerID is read from its --txt-owner-id.
	Args []string
	// Binary is the external-dns executable (default $E2E_EXTERNAL_DNS_BINARY, else
	// <repo>/bin/external-dns, built by `make external-dns`).
	Binary string
	// StartTimeout bounds the wait for the first successful synchronization (default 60s).
	StartTimeout time.Duration
}

// ForBind fills DNSPort and Zone from a BIND server.
func (o ExternalDNSOptions) ForBind(b *BindServer) ExternalDNSOptions {
	o.DNSPort, o.Zone, o.TSIG = b.Port, b.Zone, b.TSIG
	return o
}

// ExternalDNS is a running ExternalDNS process.
type ExternalDNS struct {
	Name    string
	OwnerID string
	// MetricsPort serves /metrics and /healthz on 127.0.0.1.
	MetricsPort int
	// Args is the command line, for reports.
	Args []string
	Dir  string

	proc *Process
}

// ExternalDNSBinary returns the path of bin/external-dns.
func ExternalDNSBinary() (string, error) {
	if p := os.Getenv("E2E_EXTERNAL_DNS_BINARY"); p != "" {
		return p, nil
	}
	root, err := repoRoot()
	if err != nil {
		return "", err
	}
	p := filepath.Join(root, "bin", "external-dns")
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("%s not found: run `make external-dns` (builds ExternalDNS once, a few minutes): %w", p, err)
	}
	return p, nil
}

// StartExternalDNS starts ExternalDNS and returns once it has completed a successful
// synchronization (it reached the API server and transferred the zone). When c is not nil, Stop
// is registered with it.
func StartExternalDNS(ctx context.Context, c Cleanup, opts ExternalDNSOptions) (*ExternalDNS, error) {
	if opts.Name == "" || opts.Kubeconfig == "" || (opts.Args == nil && (opts.DNSPort == 0 || opts.Zone == "")) {
		return nil, errors.New("ExternalDNSOptions: Name, Kubeconfig, and DNSPort and Zone or Args are required")
	}
	for _, a := range opts.Args {
		if owner, ok := strings.CutPrefix(a, "--txt-owner-id="); ok {
			opts.OwnerID = owner
		}
	}
	if opts.OwnerID == "" {
		opts.OwnerID = opts.Name
	}
	if opts.Policy == "" {
		opts.Policy = "sync"
	}
	if opts.Interval == 0 {
		opts.Interval = 500 * time.Millisecond
	}
	if opts.LogLevel == "" {
		opts.LogLevel = "debug"
	}
	if opts.StartTimeout == 0 {
		opts.StartTimeout = 60 * time.Second
	}
	binary := opts.Binary
	if binary == "" {
		var err error
		if binary, err = ExternalDNSBinary(); err != nil {
			return nil, err
		}
	}
	e, err := startRetryingPort(ctx, c, func() (*ExternalDNS, error) { // the metrics port may be taken in between
		return startExternalDNSOnce(ctx, binary, opts)
	})
	if err != nil {
		return nil, fmt.Errorf("starting ExternalDNS %q: %w", opts.Name, err)
	}
	return e, nil
}

var errPortInUse = errors.New("port already in use")

func startExternalDNSOnce(ctx context.Context, binary string, opts ExternalDNSOptions) (*ExternalDNS, error) {
	port, err := FreePort()
	if err != nil {
		return nil, err
	}
	dir, err := newWorkDir(opts.Name)
	if err != nil {
		return nil, err
	}
	args := []string{
		"--source=crd",
		"--crd-source-apiversion=externaldns.k8s.io/v1alpha1",
		"--crd-source-kind=DNSEndpoint",
		"--provider=rfc2136",
		"--rfc2136-host=127.0.0.1",
		"--rfc2136-port=" + strconv.Itoa(opts.DNSPort),
		"--rfc2136-zone=" + opts.Zone,
		// Without zone transfers the rfc2136 provider cannot list records, so it could never
		// update or delete (ExternalDNS warns it then behaves as create-only).
		"--rfc2136-axfr",
		"--annotation-filter=" + ControllerAnnotation + "=" + opts.Name,
		"--registry=txt",
		"--txt-owner-id=" + opts.OwnerID,
		"--policy=" + opts.Policy,
		"--interval=" + opts.Interval.String(),
		"--kubeconfig=" + opts.Kubeconfig,
		"--metrics-address=127.0.0.1:" + strconv.Itoa(port),
		"--log-level=" + opts.LogLevel,
	}
	args = append(args, opts.TSIG.ExternalDNSArgs()...)
	if !opts.AnnotationFilterOnly {
		args = append(args, "--label-filter="+naming.LabelController+"="+opts.Name)
	}
	if opts.TXTPrefix != "" {
		args = append(args, "--txt-prefix="+opts.TXTPrefix)
	}
	if opts.Args != nil {
		args = append(slices.Clone(opts.Args),
			"--kubeconfig="+opts.Kubeconfig,
			"--metrics-address=127.0.0.1:"+strconv.Itoa(port))
	}
	args = append(args, opts.ExtraArgs...)
	e := &ExternalDNS{Name: opts.Name, OwnerID: opts.OwnerID, MetricsPort: port, Args: args, Dir: dir}
	started := time.Now()
	e.proc, err = StartProcessWithEnv(opts.Name, logPathFor(dir, opts.Name), externalDNSEnv(), binary, args...)
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	wctx, cancel := context.WithTimeout(ctx, opts.StartTimeout)
	defer cancel()
	if err := e.waitForSync(wctx, started); err != nil {
		log := e.proc.LogTail(40)
		_ = e.Stop()
		if strings.Contains(log, "address already in use") {
			err = fmt.Errorf("%w: %w", errPortInUse, err)
		}
		return nil, fmt.Errorf("ExternalDNS %q did not complete a synchronization: %w\n--- log (last 40 lines) ---\n%s", opts.Name, err, log)
	}
	return e, nil
}

// externalDNSEnv is our environment without EXTERNAL_DNS_* variables, which ExternalDNS reads as
// flag values: only the command line configures it.
func externalDNSEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "EXTERNAL_DNS_") {
			env = append(env, kv)
		}
	}
	return env
}

// Metrics scrapes ExternalDNS's /metrics and returns the unlabelled samples by name (labelled
// samples are keyed by the full "name{labels}" text).
func (e *ExternalDNS) Metrics(ctx context.Context) (map[string]float64, error) {
	return ScrapeMetrics(ctx, e.MetricsPort)
}

func parseMetrics(r io.Reader) (map[string]float64, error) {
	out := map[string]float64{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			continue
		}
		out[line[:i]] = v
	}
	return out, sc.Err()
}

// Sync timestamps: ExternalDNS sets the reconcile gauge when a synchronization starts and the
// sync gauge when one completes successfully.
const (
	metricReconcileStarted = "external_dns_controller_last_reconcile_timestamp_seconds"
	metricSyncSucceeded    = "external_dns_controller_last_sync_timestamp_seconds"
)

func unixFloat(f float64) time.Time {
	sec, frac := math.Modf(f)
	return time.Unix(int64(sec), int64(frac*1e9))
}

// SyncState reports when the latest synchronization started and when the latest successful one
// completed.
func (e *ExternalDNS) SyncState(ctx context.Context) (started, succeeded time.Time, err error) {
	m, err := e.Metrics(ctx)
	if err != nil {
		return time.Time{}, time.Time{}, err
	}
	if v := m[metricReconcileStarted]; v > 0 {
		started = unixFloat(v)
	}
	if v := m[metricSyncSucceeded]; v > 0 {
		succeeded = unixFloat(v)
	}
	return started, succeeded, nil
}

// WaitForSyncSince waits until ExternalDNS has completed a successful synchronization that
// started after since: everything it could see at since (DNSEndpoints in its informer cache,
// records in the zone) has been acted upon. Use it to assert that something did NOT happen.
func (e *ExternalDNS) WaitForSyncSince(ctx context.Context, since time.Time, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := e.waitForSync(ctx, since); err != nil {
		return fmt.Errorf("ExternalDNS %q: no successful synchronization started after %s: %w\n--- log (last 30 lines) ---\n%s",
			e.Name, since.Format(time.RFC3339Nano), err, e.proc.LogTail(30))
	}
	return nil
}

// SyncsDuring watches ExternalDNS for d and returns how many successful synchronizations
// completed in that time (each one read every DNSEndpoint and the whole zone and applied the
// differences). A check that records "stay put" is only meaningful over several of them.
func (e *ExternalDNS) SyncsDuring(ctx context.Context, d time.Duration) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	start := time.Now()
	seen := map[time.Time]bool{}
	ticker := time.NewTicker(100 * time.Millisecond)
	defer ticker.Stop()
	for {
		if started, succeeded, err := e.SyncState(ctx); err == nil {
			if started.After(start) && !succeeded.Before(started) {
				seen[succeeded] = true
			}
		} else if ctx.Err() == nil {
			return len(seen), fmt.Errorf("ExternalDNS %q: %w", e.Name, err)
		}
		select {
		case <-ctx.Done():
			if !e.Running() {
				return len(seen), e.proc.ExitError()
			}
			return len(seen), nil
		case <-ticker.C:
		}
	}
}

func (e *ExternalDNS) waitForSync(ctx context.Context, since time.Time) error {
	var lastErr error
	err := waitFor(ctx, 100*time.Millisecond, e.proc, func(ctx context.Context) (bool, error) {
		started, succeeded, err := e.SyncState(ctx)
		if err != nil {
			lastErr = err
			return false, nil
		}
		// The latest run started after since and has completed successfully.
		return started.After(since) && !succeeded.Before(started), nil
	})
	if err != nil && lastErr != nil && ctx.Err() != nil {
		err = fmt.Errorf("%w (last scrape error: %v)", err, lastErr)
	}
	return err
}

// LogPath is the file with ExternalDNS's output.
func (e *ExternalDNS) LogPath() string { return e.proc.LogPath }

// LogTail returns the last n lines of the log.
func (e *ExternalDNS) LogTail(n int) string { return e.proc.LogTail(n) }

// Log returns the whole log.
func (e *ExternalDNS) Log() string { return e.proc.Log() }

// Pid is the instance's process ID: a test checks with it that something happened without a restart.
func (e *ExternalDNS) Pid() int { return e.proc.Pid() }

// noisyLogLines are debug messages ExternalDNS prints on every synchronization (each record of
// the zone transfer, each DNS message); Diagnostics leaves them out.
var noisyLogLines = []string{
	`msg="Record=`, `msg="Fetching records`, `msg="dedupSource:`, `msg="multiSource:`,
	`msg="Couldn't parse`, `msg=SendMessage`, `msg="Sending message`, `msg="Skipping endpoint ns1.`,
	`msg="config: {`,
}

// Diagnostics returns the last 25 meaningful log lines (per-synchronization debug chatter left
// out), for failure messages.
func (e *ExternalDNS) Diagnostics() string {
	return fmt.Sprintf("--- ExternalDNS %q log (last 25 lines without per-sync debug output; full log %s%s) ---\n%s",
		e.Name, e.proc.LogPath, keptNote(), filteredTail(e.proc.Log(), 25, noisyLogLines))
}

// Running reports whether the process is still running.
func (e *ExternalDNS) Running() bool { return e.proc.Running() }

// Kill kills ExternalDNS with SIGKILL (Process.Kill); Stop still removes its directory.
func (e *ExternalDNS) Kill() { e.proc.Kill() }

// Stop stops ExternalDNS and removes its directory.
func (e *ExternalDNS) Stop() error {
	var err error
	if e.proc != nil {
		err = e.proc.Stop()
	}
	return errors.Join(err, os.RemoveAll(e.Dir))
}
