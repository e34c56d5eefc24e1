// Package verifyloop connects publication verification to the cluster, on the leader: it feeds
// the tracker (internal/verify, which decides what each record's answer means) with every managed
// DNSEndpoint of a verified zone, keeps one prober loop (internal/prober, which asks the zones) per
// zone with verification settings in the DNSConfiguration, and turns the state changes they find
// into reconcile requests for the routes and Gateways concerned. It is the I/O around those two,
// beside them rather than in either: the tracker stays pure and the prober knows no Kubernetes
// object. The controllers construct it (controllers/setup.go) and read its results through the
// tracker.
package verifyloop

import (
	"context"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	externaldnsv1alpha1 "sigs.k8s.io/external-dns/apis/v1alpha1"

	clusterv1alpha1 "github.com/service-router/service-router-operator/apis/cluster/v1alpha1"
	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
	"github.com/service-router/service-router-operator/internal/decide"
	"github.com/service-router/service-router-operator/internal/desired"
	"github.com/service-router/service-router-operator/internal/naming"
	"github.com/service-router/service-router-operator/internal/prober"
	"github.com/service-router/service-router-operator/internal/verify"
	"github.com/service-router/service-router-operator/internal/zoneconfig"
)

// verificationEvents is how many state changes may wait for the controllers' queues before the
// prober waits for them.
const verificationEvents = 1024

// configurationResync is how often the zones are compared with the DNSConfiguration even without
// an event, in case one was missed.
const configurationResync = 30 * time.Second

func randomFraction() float64 { return rand.Float64() }

// Loop connects the prober to the cluster. It feeds the tracker with every managed DNSEndpoint of
// a verified zone (informer events: what the operator published, including what ExternalDNS has
// processed), keeps one prober loop per zone with verification settings in the DNSConfiguration,
// and turns the state changes the prober finds into reconcile requests for the routes and
// gateways concerned (channel sources). It runs on the leader only.
type Loop struct {
	// Tracker holds the results the reconcilers read; Prober asks the zones; RouteEvents and
	// GatewayEvents are the reconcile requests of the routes and the entry points (mapped to their
	// Gateways by the Gateway controller) whose state changed.
	Tracker                    *verify.Tracker
	Prober                     *prober.Prober
	RouteEvents, GatewayEvents chan event.GenericEvent

	reader        client.Reader
	informers     cache.Informers
	config        ConfigurationReader
	apis          APIs
	configChanged chan struct{}

	// ctx is Start's, set before any event handler or prober loop runs.
	ctx context.Context

	// mu serializes what the tracker is told (informer events, resyncs of newly verified zones),
	// so that a resync never brings back a record whose deletion it raced with.
	mu       sync.Mutex
	watching bool
}

// ConfigurationReader reads the DNSConfiguration, as the reconcilers read it (the controllers'
// informer cache); nil when it does not exist.
type ConfigurationReader interface {
	Configuration(ctx context.Context) (*clusterv1alpha1.DNSConfiguration, error)
}

// APIs starts what needs an optional API once it is served (controllers' OptionalAPIs).
type APIs interface {
	WhenServed(gvk schema.GroupVersionKind, start func() error) error
}

// dnsEndpointKind is ExternalDNS's DNSEndpoint, an optional API: the loop watches it once served.
var dnsEndpointKind = externaldnsv1alpha1.GroupVersion.WithKind("DNSEndpoint")

// New is the loop over the DNSEndpoints reader lists and informers watch, the zones config
// configures, with the tracker's and the prober's settings and limits; observe and counted are
// the metrics of a publication and of a query.
func New(reader client.Reader, informers cache.Informers, config ConfigurationReader, apis APIs, settings verify.Settings, limits prober.Limits,
	observe func(string, time.Duration), counted func(string, string)) *Loop {
	v := &Loop{reader: reader, informers: informers, config: config, apis: apis,
		RouteEvents: make(chan event.GenericEvent, verificationEvents), GatewayEvents: make(chan event.GenericEvent, verificationEvents),
		configChanged: make(chan struct{}, 1)}
	v.Tracker = verify.NewTracker(settings, randomFraction, observe)
	v.Prober = prober.New(v.Tracker, limits, v.send, counted)
	return v
}

// NeedLeaderElection makes only the leader verify: the reconcilers that read the results run
// there, and standbys send no queries.
func (v *Loop) NeedLeaderElection() bool { return true }

// Start runs the verification until ctx ends.
func (v *Loop) Start(ctx context.Context) error {
	log := ctrl.Log.WithName("verification")
	v.ctx = ctx
	inf, err := v.informers.GetInformer(ctx, &clusterv1alpha1.DNSConfiguration{})
	if err != nil {
		return err
	}
	signal := func() {
		select {
		case v.configChanged <- struct{}{}:
		default:
		}
	}
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(any) { signal() }, UpdateFunc: func(any, any) { signal() }, DeleteFunc: func(any) { signal() },
	}); err != nil {
		return err
	}
	// Zones first: the DNSEndpoint handler's replay of existing objects checks which are verified.
	v.configure(ctx)
	if err := v.apis.WhenServed(dnsEndpointKind, func() error { return v.watchEndpoints(ctx) }); err != nil {
		return err
	}
	done := make(chan struct{})
	go func() { _ = v.Prober.Start(ctx); close(done) }()
	ticker := time.NewTicker(configurationResync)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			<-done
			log.V(1).Info("verification stopped")
			return nil
		case <-v.configChanged:
		case <-ticker.C:
		}
		v.configure(ctx)
	}
}

// configure makes the prober's zones match the DNSConfiguration's verification settings.
// Newly verified zones get every DNSEndpoint they have, as found at start; removed zones are
// forgotten (their routes show Unverified, being reconciled for the configuration change).
func (v *Loop) configure(ctx context.Context) {
	cfg, err := v.config.Configuration(ctx)
	if err != nil {
		ctrl.Log.WithName("verification").Error(err, "reading the DNSConfiguration; the verified zones stay as they are")
		return
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	added, removed := v.Prober.SetZones(zonesOf(cfg))
	for _, c := range removed {
		v.Tracker.DropController(c)
	}
	if v.watching {
		for _, c := range added {
			v.resync(ctx, c)
		}
	}
}

// zonesOf lists the zones with verification settings.
func zonesOf(cfg *clusterv1alpha1.DNSConfiguration) []prober.Zone {
	if cfg == nil {
		return nil
	}
	var out []prober.Zone
	for _, c := range cfg.Spec.ExternalDNSControllers {
		if !decide.Verified(cfg, c.Name) {
			continue
		}
		z := prober.Zone{Controller: c.Name, Nameservers: slices.Clone(c.Verification.Nameservers), TransferZone: c.Verification.TransferZone,
			Timeout: prober.DefaultTimeout}
		if len(c.Verification.Resolvers) > 0 {
			z.Nameservers, z.Recursive = slices.Clone(c.Verification.Resolvers), true
		}
		if a := c.Verification.AzurePrivateDNS; a != nil {
			z.Azure, z.ListInterval = zoneconfig.AzureZone(a), prober.DefaultListInterval
			if a.Interval != nil {
				z.ListInterval = a.Interval.Duration
			}
		}
		if c.Verification.Timeout != nil {
			z.Timeout = c.Verification.Timeout.Duration
		}
		out = append(out, z)
	}
	return out
}

// resync tells the tracker about every DNSEndpoint of a zone that just became verified; v.mu is held.
func (v *Loop) resync(ctx context.Context, controller string) {
	list := &externaldnsv1alpha1.DNSEndpointList{}
	if err := v.reader.List(ctx, list, client.MatchingLabels{naming.LabelController: controller}, client.UnsafeDisableDeepCopy); err != nil {
		ctrl.Log.WithName("verification").Error(err, "listing the DNSEndpoints of a newly verified zone; they are checked when they next change", "controller", controller)
		return
	}
	for i := range list.Items {
		v.set(&list.Items[i], true)
	}
}

// watchEndpoints feeds the tracker from the DNSEndpoint informer; existing objects arrive as the
// initial list.
func (v *Loop) watchEndpoints(ctx context.Context) error {
	inf, err := v.informers.GetInformer(ctx, &externaldnsv1alpha1.DNSEndpoint{})
	if err != nil {
		return err
	}
	v.mu.Lock()
	v.watching = true
	v.mu.Unlock()
	_, err = inf.AddEventHandler(toolscache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(obj any, initial bool) {
			if ep, ok := obj.(*externaldnsv1alpha1.DNSEndpoint); ok {
				v.locked(func() { v.set(ep, initial) })
			}
		},
		UpdateFunc: func(_, newObj any) {
			if ep, ok := newObj.(*externaldnsv1alpha1.DNSEndpoint); ok {
				v.locked(func() { v.set(ep, false) })
			}
		},
		DeleteFunc: func(obj any) {
			if tombstone, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
				obj = tombstone.Obj
			}
			if ep, ok := obj.(*externaldnsv1alpha1.DNSEndpoint); ok {
				v.locked(func() { v.remove(ep) })
			}
		},
	})
	return err
}

func (v *Loop) locked(fn func()) {
	v.mu.Lock()
	defer v.mu.Unlock()
	fn()
}

// set tells the tracker what a DNSEndpoint publishes; v.mu is held.
func (v *Loop) set(ep *externaldnsv1alpha1.DNSEndpoint, initial bool) {
	controller := ep.Labels[naming.LabelController]
	if !v.Prober.Verified(controller) {
		return
	}
	processed := ep.Status.ObservedGeneration == ep.Generation
	now := time.Now()
	var changes []verify.Change
	if route := ep.Labels[naming.LabelServiceRoute]; route != "" {
		changes = v.Tracker.SetRoute(verify.RouteKey{Namespace: ep.Namespace, Name: route, Controller: controller}, verify.RouteRecords(ep), processed, initial, now)
	} else if pair, ok := desired.IngressOfLabels(ep.Labels); ok {
		changes = v.Tracker.SetTarget(controller, pair, ep.Namespace+"/"+ep.Name, ep.Spec.Endpoints, processed, initial, now)
	}
	v.Prober.Wake(controller)
	v.send(changes)
}

// remove tells the tracker a DNSEndpoint is gone; v.mu is held.
func (v *Loop) remove(ep *externaldnsv1alpha1.DNSEndpoint) {
	controller := ep.Labels[naming.LabelController]
	if route := ep.Labels[naming.LabelServiceRoute]; route != "" {
		v.send(v.Tracker.DeleteRoute(verify.RouteKey{Namespace: ep.Namespace, Name: route, Controller: controller}))
	} else if _, ok := desired.IngressOfLabels(ep.Labels); ok {
		v.send(v.Tracker.DeleteTarget(ep.Namespace+"/"+ep.Name, time.Now()))
	}
}

// send turns state changes into reconcile requests: the route, or the Gateways of the entry
// point (mapped through the gateway.ingress index by the Gateway controller).
func (v *Loop) send(changes []verify.Change) {
	ctx := v.ctx
	for _, c := range changes {
		var ch chan event.GenericEvent
		var obj client.Object
		switch {
		case c.Route != nil:
			ch, obj = v.RouteEvents, &routingv1alpha1.ServiceRoute{ObjectMeta: metav1.ObjectMeta{Namespace: c.Route.Namespace, Name: c.Route.Name}}
		case c.Gateway != nil:
			ch, obj = v.GatewayEvents, &routingv1alpha1.Gateway{Spec: routingv1alpha1.GatewaySpec{Controller: c.Gateway.Controller, TargetPostfix: c.Gateway.TargetPostfix}}
		default:
			continue
		}
		select {
		case ch <- event.GenericEvent{Object: obj}:
		case <-ctx.Done():
			return
		}
	}
}
