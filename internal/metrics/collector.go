package metrics

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	istionetworkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	ctrlcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	externaldnsv1alpha1 "sigs.k8s.io/external-dns/apis/v1alpha1"

	clusterv1alpha1 "github.com/service-router/service-router-operator/apis/cluster/v1alpha1"
	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
	"github.com/service-router/service-router-operator/internal/cacheview"
)

// stateMetrics are the metrics StateCollector computes.
var stateMetrics = []string{
	ClusterIdentityInfoName, ResourcesName, LongestNotReadyName, ConflictsName, DNSRecordsName,
	ActiveDNSPoliciesName, DNSPolicyActiveControllersName, IstioGatewayHostsName, ZoneRoutesName,
	FailoverRegionStateName, FailoverActiveName,
}

// collectTimeout bounds the cache reads of one scrape.
const collectTimeout = 10 * time.Second

// StateCollector computes the resource-state metrics at scrape time from the manager's informer
// cache: listing from the cache costs no API call, the values are always consistent with what
// the controllers see, and no reconciler keeps any bookkeeping for them.
//
// It is a manager Runnable that needs leader election: the leader registers it on
// controller-runtime's registry when it starts leading and unregisters it when it stops, so
// standby replicas export no state metrics (nothing is counted twice) and start no informers.
type StateCollector struct {
	cache            ctrlcache.Cache
	ingressConflicts *ConflictSet
	listable         func(client.ObjectList) bool
	descs            map[string]*prometheus.Desc
}

// NewStateCollector returns a collector reading the manager's cache and counting the IngressDNS
// conflicts recorded in ingressConflicts. listable says whether a kind can be listed (its API is
// installed); kinds that cannot are left out of the scrape, so that a missing optional CRD never
// blocks it.
func NewStateCollector(cache ctrlcache.Cache, ingressConflicts *ConflictSet, listable func(client.ObjectList) bool) *StateCollector {
	c := &StateCollector{cache: cache, ingressConflicts: ingressConflicts, listable: listable, descs: map[string]*prometheus.Desc{}}
	for _, name := range stateMetrics {
		c.descs[name] = desc(name)
	}
	return c
}

// Describe sends the descriptors of the state metrics.
func (c *StateCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, name := range stateMetrics {
		ch <- c.descs[name]
	}
}

// Collect reads the cache and sends the state metrics. A kind the cache cannot list is left out
// (and logged) rather than failing the whole scrape.
func (c *StateCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), collectTimeout)
	defer cancel()
	state, err := c.read(ctx)
	if err != nil {
		ctrl.Log.WithName("metrics").Error(err, "reading the cache for the state metrics; some are missing from this scrape")
	}
	for _, s := range state.Samples(time.Now()) {
		ch <- prometheus.MustNewConstMetric(c.descs[s.Name], prometheus.GaugeValue, s.Value, s.Labels...)
	}
}

// read takes the cache's own objects (cacheview.All): a scrape copies none of them.
func (c *StateCollector) read(ctx context.Context) (State, error) {
	s := State{IngressConflicts: c.ingressConflicts.Len()}
	var errs []error
	readAll(ctx, c, &s.Identities, &clusterv1alpha1.ClusterIdentityList{}, &errs)
	readAll(ctx, c, &s.Configurations, &clusterv1alpha1.DNSConfigurationList{}, &errs)
	readAll(ctx, c, &s.Policies, &routingv1alpha1.DNSPolicyList{}, &errs)
	readAll(ctx, c, &s.Gateways, &routingv1alpha1.GatewayList{}, &errs)
	readAll(ctx, c, &s.Routes, &routingv1alpha1.ServiceRouteList{}, &errs)
	readAll(ctx, c, &s.Endpoints, &externaldnsv1alpha1.DNSEndpointList{}, &errs)
	readAll(ctx, c, &s.IstioGateways, &istionetworkingv1.GatewayList{}, &errs)
	return s, errors.Join(errs...)
}

// readAll fills out with the cached objects of list's kind, when the kind can be listed.
func readAll[T interface {
	client.Object
	*E
}, E any](ctx context.Context, c *StateCollector, out *[]T, list client.ObjectList, errs *[]error) {
	if !c.listable(list) {
		return
	}
	objs, err := cacheview.All(ctx, c.cache, func() T { return new(E) }, func() client.ObjectList { return list }, "")
	if err != nil {
		*errs = append(*errs, fmt.Errorf("listing %T: %w", list, err))
	}
	*out = objs
}

// Start registers the collector on controller-runtime's registry until ctx ends.
func (c *StateCollector) Start(ctx context.Context) error {
	if err := ctrlmetrics.Registry.Register(c); err != nil {
		return fmt.Errorf("registering the state metrics: %w", err)
	}
	<-ctx.Done()
	ctrlmetrics.Registry.Unregister(c)
	return nil
}

// NeedLeaderElection makes only the leader run the collector.
func (c *StateCollector) NeedLeaderElection() bool { return true }
