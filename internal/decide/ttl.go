package decide

import (
	"fmt"

	clusterv1alpha1 "github.com/service-router/service-router-operator/apis/cluster/v1alpha1"
	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
)

// TTL limits of every record the operator publishes, in seconds. Below 30 s resolvers would ask
// again faster than any ExternalDNS interval can change an answer; 86400 is a day.
const (
	DefaultRecordTTL = 300
	MinRecordTTL     = 30
	MaxRecordTTL     = 86400
)

// RecordTTL is the TTL of the records of a namespace's ServiceRoutes: the DNSPolicy's recordTTL
// held to the DNSConfiguration's recordTTLBounds, else the DNSConfiguration's recordTTL, else
// DefaultRecordTTL. note explains an adjustment to the policy's value ("" when none).
func RecordTTL(cfg *clusterv1alpha1.DNSConfiguration, pol *routingv1alpha1.DNSPolicy) (ttl int64, note string) {
	if pol == nil || pol.Spec.RecordTTL == nil {
		return PlatformRecordTTL(cfg), ""
	}
	lo, hi := int64(MinRecordTTL), int64(MaxRecordTTL)
	if cfg != nil && cfg.Spec.RecordTTLBounds != nil {
		lo, hi = int64(cfg.Spec.RecordTTLBounds.Min), int64(cfg.Spec.RecordTTLBounds.Max)
	}
	want := int64(*pol.Spec.RecordTTL)
	switch ttl = min(max(want, lo), hi); {
	case ttl > want:
		note = fmt.Sprintf("recordTTL %d is below the platform's minimum; records use %d", want, ttl)
	case ttl < want:
		note = fmt.Sprintf("recordTTL %d is above the platform's maximum; records use %d", want, ttl)
	}
	return ttl, note
}

// PlatformRecordTTL is the DNSConfiguration's recordTTL, DefaultRecordTTL when unset: the TTL of
// gateway address records and of the CNAMEs of policies without their own.
func PlatformRecordTTL(cfg *clusterv1alpha1.DNSConfiguration) int64 {
	if cfg == nil || cfg.Spec.RecordTTL == nil {
		return DefaultRecordTTL
	}
	return int64(*cfg.Spec.RecordTTL)
}
