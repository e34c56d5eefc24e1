package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/service-router/service-router-operator/internal/azureprivatedns"
)

// azureOutcomes are the values of the outcome label of service_router_azure_requests_total.
var azureOutcomes = []string{"answered", "throttled", "held", "error"}

// AzureSamples are the Azure Resource Manager metrics: the requests of every zone by operation
// type and outcome (0 included, once the zone has had a request) and, per subscription and
// operation type, the fewest requests left that an answer reported to any of its principals.
// The principal itself is no label: its client ID identifies an identity, and a subscription
// is served by one or a few.
func AzureSamples(usage []azureprivatedns.ZoneUsage, principals []azureprivatedns.PrincipalState) []Sample {
	var out []Sample
	for _, u := range usage {
		for _, op := range azureprivatedns.Operations {
			r := u.Of(op)
			for i, v := range []int64{r.Answered, r.Throttled, r.Held, r.Failed} {
				out = append(out, Sample{Name: AzureRequestsName,
					Labels: []string{u.SubscriptionID, u.ResourceGroup, u.Zone, string(op), azureOutcomes[i]}, Value: float64(v)})
			}
		}
	}
	lowest := map[[2]string]int{}
	var order [][2]string
	for _, p := range principals {
		for _, op := range azureprivatedns.Operations {
			q := p.Quota(op)
			if q.Seen.IsZero() {
				continue
			}
			k := [2]string{p.SubscriptionID, string(op)}
			if v, ok := lowest[k]; !ok {
				order = append(order, k)
				lowest[k] = q.Remaining
			} else {
				lowest[k] = min(v, q.Remaining)
			}
		}
	}
	for _, k := range order {
		out = append(out, Sample{Name: AzureRateLimitRemainingName, Labels: k[:], Value: float64(lowest[k])})
	}
	return out
}

// azureCollector exports AzureSamples at scrape time from the counters of package
// azureprivatedns, which every Resource Manager client of the process updates: every replica
// exports its own requests (only the leader verifies and fails over).
type azureCollector struct{ requests, remaining *prometheus.Desc }

func (c azureCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.requests
	ch <- c.remaining
}

func (c azureCollector) Collect(ch chan<- prometheus.Metric) {
	for _, s := range AzureSamples(azureprivatedns.Usage(), azureprivatedns.Principals()) {
		if s.Name == AzureRequestsName {
			ch <- prometheus.MustNewConstMetric(c.requests, prometheus.CounterValue, s.Value, s.Labels...)
		} else {
			ch <- prometheus.MustNewConstMetric(c.remaining, prometheus.GaugeValue, s.Value, s.Labels...)
		}
	}
}

func init() {
	ctrlmetrics.Registry.MustRegister(azureCollector{requests: desc(AzureRequestsName), remaining: desc(AzureRateLimitRemainingName)})
}
