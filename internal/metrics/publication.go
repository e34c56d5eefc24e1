package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
)

// zoneStates are the values of the state label of service_router_zone_routes, exported for every
// ExternalDNS controller of the DNSConfiguration (0 when no route is in the state).
var zoneStates = []routingv1alpha1.ZoneState{
	routingv1alpha1.ZonePublished, routingv1alpha1.ZonePending, routingv1alpha1.ZoneDrifted,
	routingv1alpha1.ZoneUnreachable, routingv1alpha1.ZoneUnverified,
}

// publishBuckets reach from one ExternalDNS run in a test (a second) to an hour: an interval of
// one minute gives 60-120 s, a zone that stopped publishing shows in the last buckets.
var publishBuckets = []float64{1, 2, 5, 10, 20, 30, 60, 90, 120, 180, 300, 600, 1200, 1800, 3600}

var (
	publishDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: PublishDurationName, Help: definition(PublishDurationName).Help,
		Buckets: publishBuckets}, definition(PublishDurationName).Labels)
	verificationQueries = prometheus.NewCounterVec(prometheus.CounterOpts{Name: VerificationQueriesName, Help: definition(VerificationQueriesName).Help},
		definition(VerificationQueriesName).Labels)
	ownershipWrites = prometheus.NewCounterVec(prometheus.CounterOpts{Name: OwnershipWritesName, Help: definition(OwnershipWritesName).Help},
		definition(OwnershipWritesName).Labels)
	intermediateWrites = prometheus.NewCounterVec(prometheus.CounterOpts{Name: IntermediateWritesName, Help: definition(IntermediateWritesName).Help},
		definition(IntermediateWritesName).Labels)
)

func init() {
	ctrlmetrics.Registry.MustRegister(publishDuration, verificationQueries, ownershipWrites, intermediateWrites)
}

// The results of service_router_failover_ownership_writes_total.
const (
	OwnershipPassed  = "passed"
	OwnershipChanged = "changed"
	OwnershipRefused = "refused"
)

// CountOwnershipWrite counts one conditional ownership write in a zone and its result.
func CountOwnershipWrite(zone, result string) {
	ownershipWrites.WithLabelValues(zone, result).Inc()
}

// The kinds of service_router_failover_intermediate_writes_total.
const (
	IntermediateCreated  = "created"
	IntermediateReleased = "released"
	IntermediateDeleted  = "deleted"
)

// CountIntermediateWrite counts one conditional write of an intermediate name outside a move, its
// kind and its result (the results of CountOwnershipWrite).
func CountIntermediateWrite(zone, kind, result string) {
	intermediateWrites.WithLabelValues(zone, kind, result).Inc()
}

// ObservePublished records the time from a route's change to its publication in a zone.
func ObservePublished(controller string, d time.Duration) {
	publishDuration.WithLabelValues(controller).Observe(d.Seconds())
}

// CountQuery counts one verification query and its outcome.
func CountQuery(controller, outcome string) {
	verificationQueries.WithLabelValues(controller, outcome).Inc()
}

// zoneRoutes counts the routes by zone and state, from their status.
func (s State) zoneRoutes() map[string]float64 {
	counts := map[string]float64{}
	for _, cfg := range s.Configurations {
		for _, c := range cfg.Spec.ExternalDNSControllers {
			for _, state := range zoneStates {
				counts[key(c.Name, string(state))] = 0
			}
		}
	}
	for _, r := range s.Routes {
		for _, z := range r.Status.Zones {
			counts[key(z.Controller, string(z.State))]++
		}
	}
	return counts
}
