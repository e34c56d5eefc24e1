package budget

import (
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clusterv1alpha1 "github.com/service-router/service-router-operator/apis/cluster/v1alpha1"
)

// InputOf is the plan's input from a DNSConfiguration: spec.failover's intervals (the defaults for
// those unset, as failover takes them) and every zone read through Resource Manager
// (verification.azurePrivateDNS), in spec order, its record sets estimated from names (the names
// published into the zone; ok false: unknown).
func InputOf(cfg *clusterv1alpha1.DNSConfiguration, names func(controller string) (n int, ok bool)) Input {
	in := Input{Failover: DefaultFailoverSettings()}
	if cfg == nil {
		return in
	}
	if f := cfg.Spec.Failover; f != nil {
		set(&in.Failover.ProbeInterval, f.ProbeInterval)
		set(&in.Failover.HeartbeatInterval, f.HeartbeatInterval)
		set(&in.Failover.HeartbeatStaleAfter, f.HeartbeatStaleAfter)
	}
	for _, c := range cfg.Spec.ExternalDNSControllers {
		if c.Verification == nil || c.Verification.AzurePrivateDNS == nil {
			continue
		}
		a := c.Verification.AzurePrivateDNS
		z := Zone{Controller: c.Name, SubscriptionID: strings.ToLower(a.SubscriptionID), Failover: c.Failover != nil,
			Interval: DefaultInterval, PageSize: DefaultPageSize, RecordSets: UnknownRecordSets}
		set(&z.Interval, a.Interval)
		if a.PageSize != nil && *a.PageSize > 0 {
			z.PageSize = int(*a.PageSize)
		}
		if names != nil {
			if n, ok := names(c.Name); ok {
				z.RecordSets = RecordSetsOf(n)
			}
		}
		in.Zones = append(in.Zones, z)
	}
	return in
}

// set sets dst to d when d is set and positive.
func set(dst *time.Duration, d *metav1.Duration) {
	if d != nil && d.Duration > 0 {
		*dst = d.Duration
	}
}
