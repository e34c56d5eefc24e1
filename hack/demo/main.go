// Command demo shows the operator doing its job on one machine, with nothing but local processes:
// a control plane (etcd, kube-apiserver, kube-controller-manager) with the CRDs installed, the
// operator, a BIND 9 `named` serving the cluster's DNS zone, and the real ExternalDNS publishing
// the operator's DNSEndpoints into it. It applies config/samples plus an ingress LoadBalancer
// Service with an address, waits until every service hostname resolves through the chain
// hostname -> CNAME -> gateway hostname -> A -> load balancer IP, prints a report and how to
// explore, and keeps running until SIGINT/SIGTERM (Ctrl-C, or `demo --down` from another
// terminal), then stops every process it started and removes its state directory.
//
// With --kubeconfig it runs on a cluster the user already has, with the operator installed there
// by its Helm chart (existing.go): no control plane and no operator of its own, only BIND and
// ExternalDNS on this machine; it applies the samples (and the ingress Service unless the cluster
// has one) and deletes exactly what it created when it stops.
//
// It is run by `make demo`, `make demo-on-cluster` (and `make demo-down`), which build everything
// it needs first.
//
// Usage:
//
//	demo [--state-dir=.demo] [--check]                     run (--check: exit after the report)
//	demo --kubeconfig=FILE [--state-dir=.demo] [--check]   run on the cluster of FILE
//	demo --down [--state-dir=.demo]                        stop the demo running with that state directory
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/service-router/service-router-operator/internal/testenv"
	"github.com/service-router/service-router-operator/test/e2e/framework"
)

type options struct {
	stateDir string
	samples  string
	lbIP     string
	check    bool
	down     bool
	timeout  time.Duration
	// backend is the sample Gateway's spec.backend: IstioGateway (as the samples say) or GatewayAPI.
	backend string
	// kubeconfig selects the existing-cluster mode: the cluster of this kubeconfig, with the
	// operator installed.
	kubeconfig string
}

func main() {
	var o options
	// A flag set of its own: controller-runtime registers a --kubeconfig of its own on the default one.
	fs := flag.NewFlagSet("demo", flag.ExitOnError)
	fs.StringVar(&o.stateDir, "state-dir", ".demo", "directory for the kubeconfig, logs, pid file and every temporary file; removed when the demo stops")
	fs.StringVar(&o.samples, "samples", "", "directory with the kustomization.yaml of the objects to apply (default <repository>/config/samples)")
	fs.StringVar(&o.lbIP, "load-balancer-ip", "10.123.45.67", "address written to the ingress Service's load balancer status")
	fs.BoolVar(&o.check, "check", false, "exit (and clean up) after the report instead of waiting for a signal")
	fs.BoolVar(&o.down, "down", false, "stop the demo running with --state-dir and remove the directory")
	fs.DurationVar(&o.timeout, "timeout", 5*time.Minute, "how long starting and converging may take")
	fs.StringVar(&o.backend, "backend", "IstioGateway", "the sample Gateway's backend: IstioGateway (a classic Istio Gateway) or GatewayAPI (a Gateway API Gateway and ListenerSets; the demo then reports the load balancer address on the generated Gateway, as Istio would)")
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "run on the cluster of this kubeconfig file (its current context), where the operator is installed with the Helm chart, instead of starting a control plane and the operator; the demo deletes what it created there when it stops")
	_ = fs.Parse(os.Args[1:]) // ExitOnError
	if o.backend != "IstioGateway" && o.backend != "GatewayAPI" {
		fmt.Fprintf(os.Stderr, "demo: --backend must be IstioGateway or GatewayAPI, not %q\n", o.backend)
		os.Exit(2)
	}
	if o.kubeconfig != "" && o.backend != "IstioGateway" {
		fmt.Fprintln(os.Stderr, "demo: --backend=GatewayAPI needs the demo's own control plane (it writes the generated Gateway's status in place of Istio): leave out --kubeconfig")
		os.Exit(2)
	}
	if fs.NArg() != 0 {
		fmt.Fprintf(os.Stderr, "demo: unexpected arguments %v\n", fs.Args())
		os.Exit(2)
	}
	abs, err := filepath.Abs(o.stateDir)
	if err != nil {
		fatal(err)
	}
	o.stateDir = abs
	if o.kubeconfig != "" {
		if o.kubeconfig, err = filepath.Abs(o.kubeconfig); err != nil {
			fatal(err)
		}
		if _, err := os.Stat(o.kubeconfig); err != nil {
			fatal(fmt.Errorf("--kubeconfig: %w", err))
		}
	}
	if o.down {
		if err := down(o.stateDir); err != nil {
			fatal(err)
		}
		return
	}
	os.Exit(run(o))
}

func fatal(err error) {
	fmt.Fprintf(os.Stderr, "demo: %v\n", err)
	os.Exit(1)
}

// say prints a progress line.
func say(format string, args ...any) {
	fmt.Printf("==> "+format+"\n", args...)
}

// run starts everything, reports, waits, and tears down. It returns the exit code.
func run(o options) (code int) {
	root, err := testenv.RepoRoot()
	if err != nil {
		fmt.Fprintf(os.Stderr, "demo: run it from the operator repository: %v\n", err)
		return 1
	}
	if o.samples == "" {
		o.samples = filepath.Join(root, "config", "samples")
	}
	st, err := claimState(o.stateDir)
	if err != nil {
		fmt.Fprintf(os.Stderr, "demo: %v\n", err)
		return 1
	}

	// Every temporary directory (envtest's etcd data and certificates, named's zone, the
	// components' kubeconfigs) goes under the state directory, and every log into it: removing
	// the directory removes all the demo ever wrote.
	for k, v := range map[string]string{"TMPDIR": st.tmpDir(), "E2E_ARTIFACTS_DIR": st.logDir()} {
		if err := os.Setenv(k, v); err != nil {
			fmt.Fprintf(os.Stderr, "demo: %v\n", err)
			return 1
		}
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	signals := make(chan os.Signal, 4)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		sig := <-signals
		fmt.Println()
		say("%s: stopping every process the demo started", sig)
		cancel()
		for sig := range signals {
			say("%s: still cleaning up, please wait", sig)
		}
	}()

	td := &framework.Teardown{}
	defer func() {
		start := time.Now()
		td.Run()
		if _, err := os.Stat(st.createdFile()); err == nil {
			// Objects the demo created in the cluster are still there: the state directory keeps
			// them for `demo --down`.
			fmt.Fprintf(os.Stderr, "demo: stopped every process but kept %s: it lists objects still in the cluster; `make demo-down` deletes them\n", o.stateDir)
			code = 1
			return
		}
		if err := st.remove(); err != nil {
			fmt.Fprintf(os.Stderr, "demo: removing %s: %v\n", o.stateDir, err)
			code = 1
		}
		say("stopped everything and removed %s in %s", o.stateDir, time.Since(start).Round(100*time.Millisecond))
	}()

	d, err := start(ctx, td, st, o)
	if err != nil {
		if ctx.Err() != nil {
			return 130
		}
		fmt.Fprintf(os.Stderr, "\ndemo: %v\n", err)
		return 1
	}
	if err := printReport(ctx, d); err != nil {
		fmt.Fprintf(os.Stderr, "\ndemo: %v\n", err)
		return 1
	}
	if o.check {
		return 0
	}
	if err := d.writeExploreFiles(); err != nil {
		fmt.Fprintf(os.Stderr, "\ndemo: %v\n", err)
		return 1
	}
	printExplore(d)
	if err := d.watch(ctx); err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintf(os.Stderr, "\ndemo: %v\n", err)
		return 1
	}
	return 0
}
