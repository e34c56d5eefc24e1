// Command service-router-operator runs the Service Router Operator: it turns ClusterIdentity,
// DNSConfiguration, Gateway, DNSPolicy and ServiceRoute resources into ExternalDNS DNSEndpoints
// and Istio Gateways.
package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"net/http"
	"os"
	"runtime/debug"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/service-router/service-router-operator/controllers"
	"github.com/service-router/service-router-operator/internal/coalesce"
	"github.com/service-router/service-router-operator/internal/decide"
	"github.com/service-router/service-router-operator/internal/eventrecorder"
	"github.com/service-router/service-router-operator/internal/guard"
	"github.com/service-router/service-router-operator/internal/lazylog"
	"github.com/service-router/service-router-operator/internal/metrics"
	"github.com/service-router/service-router-operator/internal/prober"
	operatorscheme "github.com/service-router/service-router-operator/internal/scheme"
	"github.com/service-router/service-router-operator/internal/verify"
)

// leaderElectionID names the Lease replicas compete for; it must stay stable across releases so
// that an old and a new replica never lead at the same time during an upgrade.
const leaderElectionID = "service-router-operator.router.io"

type options struct {
	metricsAddr          string
	metricsSecure        bool
	probeAddr            string
	leaderElect          bool
	leaderElectNamespace string
	leaseDuration        time.Duration
	renewDeadline        time.Duration
	retryPeriod          time.Duration
	enableHTTP2          bool
	deletionGuard        guard.Settings
	pprofAddr            string
	kubeAPIQPS           float64
	kubeAPIBurst         int
	eventsPerSecond      float64
	controllers          controllers.Options
	verification         verify.Settings
	verificationLimits   prober.Limits
}

func main() {
	opts := options{}
	flag.StringVar(&opts.metricsAddr, "metrics-bind-address", ":8443",
		"Address the /metrics endpoint binds to, for example :8443 (HTTPS) or :8080 (HTTP). 0 disables it.")
	flag.BoolVar(&opts.metricsSecure, "metrics-secure", true,
		"Serve /metrics over HTTPS and require a token allowed to GET /metrics (TokenReview + SubjectAccessReview). "+
			"Set to false to serve plain HTTP without authentication, for example on a homelab cluster.")
	flag.StringVar(&opts.probeAddr, "health-probe-bind-address", ":8081",
		"Address the /healthz and /readyz endpoints bind to.")
	flag.BoolVar(&opts.leaderElect, "leader-elect", runningInCluster(),
		"Elect a leader so that only one replica reconciles at a time. Defaults to true inside a cluster, false outside.")
	flag.StringVar(&opts.leaderElectNamespace, "leader-election-namespace", "",
		"Namespace of the leader-election Lease. Defaults to the operator's own namespace in a cluster.")
	flag.DurationVar(&opts.leaseDuration, "leader-elect-lease-duration", 15*time.Second,
		"How long a standby replica waits after the leader's last renewal before it takes over; bounds the failover time when the leader dies.")
	flag.DurationVar(&opts.renewDeadline, "leader-elect-renew-deadline", 10*time.Second,
		"How long the leader keeps retrying to renew its lease before it gives up leading (and exits). Must be shorter than the lease duration.")
	flag.DurationVar(&opts.retryPeriod, "leader-elect-retry-period", 2*time.Second,
		"How often replicas try to acquire or renew the lease.")
	flag.BoolVar(&opts.enableHTTP2, "enable-http2", false,
		"Serve the metrics endpoint over HTTP/2 as well. Off by default because of the HTTP/2 rapid-reset CVEs.")
	flag.StringVar(&opts.pprofAddr, "pprof-bind-address", "",
		"Address to serve Go's net/http/pprof profiles on (for example 127.0.0.1:6060), for memory and CPU investigations. Empty (the default) disables it.")
	flag.Float64Var(&opts.kubeAPIQPS, "kube-api-qps", -1,
		"Client-side limit of requests per second to the API server. Negative (the default): no client-side limit; the API server's "+
			"priority and fairness decides, which lets a change reaching every route go at the speed of the API server (see docs/DEVELOPMENT.md).")
	flag.IntVar(&opts.kubeAPIBurst, "kube-api-burst", 0,
		"Client-side burst of requests to the API server, with --kube-api-qps >= 0; 0: client-go's default of 10.")
	flag.IntVar(&opts.controllers.ServiceRouteWorkers, "serviceroute-workers", controllers.DefaultServiceRouteWorkers,
		"ServiceRoutes reconciled in parallel (a change reaching every route goes as fast as that many clients writing in parallel).")
	opts.controllers.Events = eventrecorder.DefaultSettings
	flag.Float64Var(&opts.eventsPerSecond, "events-per-second", float64(eventrecorder.DefaultSettings.PerSecond),
		"Kubernetes Events are sent at most this fast (0: no limit), so that a change reaching thousands of routes writes their DNS records "+
			"at the speed of the API server while its events trail behind; events that do not fit in the queue meanwhile are dropped and counted.")
	flag.IntVar(&opts.controllers.Events.Burst, "events-burst", eventrecorder.DefaultSettings.Burst,
		"Kubernetes Events sent at once before --events-per-second applies.")
	opts.controllers.GatewayCoalesce = coalesce.DefaultSettings
	flag.DurationVar(&opts.controllers.GatewayCoalesce.Quiet, "gateway-coalesce-quiet", coalesce.DefaultSettings.Quiet,
		"Route changes feeding a Gateway's Istio Gateway and status are written once no route change came for this long (0: at once, no coalescing).")
	flag.DurationVar(&opts.controllers.GatewayCoalesce.MaxWait, "gateway-coalesce-max-wait", coalesce.DefaultSettings.MaxWait,
		"During a steady stream of route changes, a Gateway's Istio Gateway and status are written at least this often.")
	flag.IntVar(&opts.controllers.GatewayCoalesce.BytesPerSecond, "gateway-coalesce-bytes-per-second", coalesce.DefaultSettings.BytesPerSecond,
		"During a steady stream of route changes, a large Istio Gateway is written at most every (its size / this) seconds rather than every "+
			"--gateway-coalesce-max-wait, so that the bytes written to it per second stay bounded (0: no stretching).")
	flag.IntVar(&opts.controllers.IstioGatewayMaxBytes, "istio-gateway-max-bytes", decide.DefaultIstioGatewayBudget,
		"Byte budget of one generated Istio Gateway (etcd refuses objects over 1.5 MiB by default). The hosts of the oldest routes fill it; "+
			"younger routes are left off with reason GatewayHostLimit.")
	opts.deletionGuard = guard.DefaultSettings
	flag.Float64Var(&opts.deletionGuard.Share, "deletion-guard-share", guard.DefaultSettings.Share,
		"Mass-deletion guard: the share (0-1) of all managed DNSEndpoints that, asked to go within the guard window by one change, trips the guard.")
	flag.IntVar(&opts.deletionGuard.Minimum, "deletion-guard-minimum", guard.DefaultSettings.Minimum,
		"Mass-deletion guard: fewer deletions than this within the window never trip it.")
	flag.DurationVar(&opts.deletionGuard.Window, "deletion-guard-window", guard.DefaultSettings.Window,
		"Mass-deletion guard: deletions asked for within this time count as one change.")
	flag.DurationVar(&opts.deletionGuard.Observe, "deletion-guard-observe", guard.DefaultSettings.Observe,
		"Mass-deletion guard: how long every DNSEndpoint deletion waits while the guard counts the others of the same change.")
	flag.DurationVar(&opts.deletionGuard.Grace, "deletion-guard-grace", guard.DefaultSettings.Grace,
		"Mass-deletion guard: how long deletions wait once it has tripped; reverting the change within it keeps the records. 0 disables the guard.")
	opts.verification, opts.verificationLimits = verify.DefaultSettings, prober.DefaultLimits
	flag.Float64Var(&opts.verificationLimits.QPS, "verification-qps", prober.DefaultLimits.QPS,
		"Publication verification: the most DNS queries per second sent to one zone's name servers (a token bucket; a full round of checks takes longer when a zone has many records).")
	flag.IntVar(&opts.verificationLimits.Concurrency, "verification-concurrency", prober.DefaultLimits.Concurrency,
		"Publication verification: the most DNS queries to one zone in flight at once.")
	flag.DurationVar(&opts.verificationLimits.TransferInterval, "verification-transfer-interval", prober.DefaultLimits.TransferInterval,
		"Publication verification: the shortest time between two zone transfers of a zone read whole (verification.transferZone).")
	flag.DurationVar(&opts.verification.FastInterval, "verification-fast-interval", verify.DefaultSettings.FastInterval,
		"Publication verification: the first check of a changed record; each further check of a record not yet published waits twice as long, up to --verification-settled-interval.")
	flag.DurationVar(&opts.verification.SettledInterval, "verification-settled-interval", verify.DefaultSettings.SettledInterval,
		"Publication verification: how often a published record is checked again (±10 % jitter).")
	flag.DurationVar(&opts.controllers.FailoverClockOffset, "failover-clock-offset", 0,
		"For fault tests only: run regional failover's clock this far off the node's (the times its heartbeats state, its judgement of the "+
			"others'), as on a node whose clock is off. Never set it in a real cluster.")
	zapOpts := zap.Options{}
	zapOpts.BindFlags(flag.CommandLine)
	flag.Parse()

	// Values attached to a logger reach zap only when a line is written (lazylog): every reconcile
	// gets a logger with its request's names, and almost none of them logs.
	ctrl.SetLogger(lazylog.New(zap.New(zap.UseFlagOptions(&zapOpts))))
	leanGarbageCollection()
	setupLog := ctrl.Log.WithName("setup")

	ctx := ctrl.SetupSignalHandler()
	mgr, err := ctrl.NewManager(restConfig(opts), managerOptions(opts))
	if err != nil {
		setupLog.Error(err, "unable to create manager")
		os.Exit(1)
	}
	opts.controllers.DeletionGuard = opts.deletionGuard
	opts.controllers.Verification, opts.controllers.VerificationLimits = opts.verification, opts.verificationLimits
	opts.controllers.Events.PerSecond = float32(opts.eventsPerSecond)
	if err := controllers.Setup(ctx, mgr, opts.controllers); err != nil {
		setupLog.Error(err, "unable to set up controllers")
		os.Exit(1)
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		setupLog.Error(err, "unable to set up health check")
		os.Exit(1)
	}
	if err := mgr.AddReadyzCheck("readyz", cachesSynced(mgr)); err != nil {
		setupLog.Error(err, "unable to set up ready check")
		os.Exit(1)
	}

	setupLog.Info("starting manager", "leaderElection", opts.leaderElect, "metrics", opts.metricsAddr, "metricsSecure", opts.metricsSecure)
	if err := mgr.Start(ctx); err != nil {
		setupLog.Error(err, "manager exited with an error")
		os.Exit(1)
	}
}

// cachesSynced is the readiness check: a replica is ready once its informer caches have synced,
// so that a rollout waits for a replica that can actually take over.
func cachesSynced(mgr ctrl.Manager) healthz.Checker {
	return func(req *http.Request) error {
		ctx, cancel := context.WithTimeout(req.Context(), time.Second)
		defer cancel()
		if !mgr.GetCache().WaitForCacheSync(ctx) {
			return errors.New("informer caches have not synced yet")
		}
		return nil
	}
}

// restConfig is the API server connection with the client-side rate limit of the flags.
func restConfig(opts options) *rest.Config {
	cfg := ctrl.GetConfigOrDie()
	setRateLimit(cfg, opts.kubeAPIQPS, opts.kubeAPIBurst)
	return cfg
}

// setRateLimit sets the client-side limit of the flags: none for a negative qps, otherwise one
// bucket for every client made from cfg (the manager's, the status writer's, the event
// recorder's), so that the limit is the operator's, not per client. Zero means client-go's
// default, as it does for a configuration without a bucket.
func setRateLimit(cfg *rest.Config, qps float64, burst int) {
	cfg.QPS, cfg.Burst = float32(qps), burst
	if qps >= 0 {
		cfg.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(cmp.Or(cfg.QPS, rest.DefaultQPS), cmp.Or(cfg.Burst, rest.DefaultBurst))
	}
}

func managerOptions(opts options) ctrl.Options {
	return ctrl.Options{
		Scheme:                        operatorscheme.New(),
		Cache:                         controllers.CacheOptions(),
		MapperProvider:                controllers.MapperProvider,
		Metrics:                       metrics.ServerOptions(opts.metricsAddr, opts.metricsSecure, opts.enableHTTP2),
		HealthProbeBindAddress:        opts.probeAddr,
		PprofBindAddress:              opts.pprofAddr,
		LeaderElection:                opts.leaderElect,
		LeaderElectionID:              leaderElectionID,
		LeaderElectionNamespace:       opts.leaderElectNamespace,
		LeaderElectionReleaseOnCancel: true,
		LeaseDuration:                 &opts.leaseDuration,
		RenewDeadline:                 &opts.renewDeadline,
		RetryPeriod:                   &opts.retryPeriod,
	}
}

// defaultGCPercent is the operator's GOGC unless the environment sets one. Most of its heap is the
// informer cache, which lives as long as the process and is hardly ever garbage: collecting when
// the heap has grown by a fifth keeps it at 1.2 times the live heap. Measured at 3,000 routes
// (docs/DEVELOPMENT.md#where-the-memory-goes): peak RSS 63.4 MiB at 50 and 58.8 MiB at 25 (then),
// for about 1 s more of the operator's CPU per burst of 3,000 route changes (7.1 / 6.6 s cold /
// fan-out at 50, 8.7 / 7.4 s at 25); at 20, 58.9 MiB where 25 gave 59.7-60.5 in the same week,
// with no CPU difference beyond the runs' noise (6.9 / 7.2 s at 20, 7.3 / 7.5 s at 25).
const defaultGCPercent = 20

func leanGarbageCollection() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(defaultGCPercent)
	}
}

// runningInCluster reports whether the process runs in a Pod with a service account, which is
// where several replicas may run and leader election must be on.
func runningInCluster() bool {
	_, err := rest.InClusterConfig()
	return err == nil
}
