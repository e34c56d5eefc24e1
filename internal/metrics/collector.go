package metrics

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	istionetworkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	externaldnsv1alpha1 "sigs.k8s.io/external-dns/apis/v1alpha1"

	clusterv1alpha1 "github.com/service-router/service-router-operator/apis/cluster/v1alpha1"
	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
)

// stateMetrics are the metrics StateCollector computes.
var stateMetrics = []string{
	ClusterIdentityInfoName, ResourcesName, LongestNotReadyName, ConflictsName, DNSRecordsName,
	ActiveDNSPoliciesName, DNSPolicyActiveControllersName, IstioGatewayHostsName, ZoneRoutesName,
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
	reader           client.Reader
	ingressConflicts *ConflictSet
	listable         func(client.ObjectList) bool
	descs            map[string]*prometheus.Desc
}

// NewStateCollector returns a collector reading from reader (the manager's cached client) and
// counting the IngressDNS conflicts recorded in ingressConflicts. listable says whether a kind can be listed (its API is installed); kinds that cannot are left
// out of the scrape, so that a missing optional CRD never blocks it.
func NewStateCollector(reader client.Reader, ingressConflicts *ConflictSet, listable func(client.ObjectList) bool) *StateCollector {
	c := &StateCollector{reader: reader, ingressConflicts: ingressConflicts, listable: listable, descs: map[string]*prometheus.Desc{}}
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

func (c *StateCollector) read(ctx context.Context) (State, error) {
	s := State{IngressConflicts: c.ingressConflicts.Len()}
	identities := &clusterv1alpha1.ClusterIdentityList{}
	configurations := &clusterv1alpha1.DNSConfigurationList{}
	policies := &routingv1alpha1.DNSPolicyList{}
	gateways := &routingv1alpha1.GatewayList{}
	routes := &routingv1alpha1.ServiceRouteList{}
	endpoints := &externaldnsv1alpha1.DNSEndpointList{}
	istioGateways := &istionetworkingv1.GatewayList{}
	var errs []error
	for _, list := range []client.ObjectList{identities, configurations, policies, gateways, routes, endpoints, istioGateways} {
		if !c.listable(list) {
			continue
		}
		// Read-only: the samples are counted from the cache's own objects, without copying them.
		if err := c.reader.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
			errs = append(errs, fmt.Errorf("listing %T: %w", list, err))
		}
	}
	s.Identities, s.Configurations, s.Policies = identities.Items, configurations.Items, policies.Items
	s.Gateways, s.Routes, s.Endpoints, s.IstioGateways = gateways.Items, routes.Items, endpoints.Items, istioGateways.Items
	return s, errors.Join(errs...)
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
