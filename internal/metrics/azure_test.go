package metrics

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/service-router/service-router-operator/internal/azureprivatedns"
)

func TestAzureSamples_RequestsPerZoneAndTheLowestRemainingPerSubscription(t *testing.T) {
	seen := time.Unix(1_700_000_000, 0)
	usage := []azureprivatedns.ZoneUsage{{SubscriptionID: "sub-a", ResourceGroup: "rg-dns-weu", Zone: "example.internal",
		Reads:  azureprivatedns.Requests{Answered: 40, Throttled: 2, Held: 3, Failed: 1, Paced: 7},
		Writes: azureprivatedns.Requests{Answered: 5}}}
	principals := []azureprivatedns.PrincipalState{
		{Principal: azureprivatedns.Principal{Endpoint: "https://management.azure.com", SubscriptionID: "sub-a", ClientID: "one"},
			Reads: azureprivatedns.QuotaState{Remaining: 120, Seen: seen}, Writes: azureprivatedns.QuotaState{Remaining: 150, Seen: seen}},
		{Principal: azureprivatedns.Principal{Endpoint: "https://management.azure.com", SubscriptionID: "sub-a", ClientID: "two"},
			Reads: azureprivatedns.QuotaState{Remaining: 18, Seen: seen}},
		{Principal: azureprivatedns.Principal{Endpoint: "https://management.azure.com", SubscriptionID: "sub-b", ClientID: "one"}},
	}
	got := map[string]float64{}
	for _, s := range AzureSamples(usage, principals) {
		got[s.Name+"{"+strings.Join(s.Labels, ",")+"}"] = s.Value
	}
	assert.Equal(t, map[string]float64{
		"service_router_azure_requests_total{sub-a,rg-dns-weu,example.internal,read,answered}":    40,
		"service_router_azure_requests_total{sub-a,rg-dns-weu,example.internal,read,throttled}":   2,
		"service_router_azure_requests_total{sub-a,rg-dns-weu,example.internal,read,held}":        3,
		"service_router_azure_requests_total{sub-a,rg-dns-weu,example.internal,read,error}":       1,
		"service_router_azure_requests_total{sub-a,rg-dns-weu,example.internal,write,answered}":   5,
		"service_router_azure_requests_total{sub-a,rg-dns-weu,example.internal,write,throttled}":  0,
		"service_router_azure_requests_total{sub-a,rg-dns-weu,example.internal,write,held}":       0,
		"service_router_azure_requests_total{sub-a,rg-dns-weu,example.internal,write,error}":      0,
		"service_router_azure_requests_total{sub-a,rg-dns-weu,example.internal,delete,answered}":  0,
		"service_router_azure_requests_total{sub-a,rg-dns-weu,example.internal,delete,throttled}": 0,
		"service_router_azure_requests_total{sub-a,rg-dns-weu,example.internal,delete,held}":      0,
		"service_router_azure_requests_total{sub-a,rg-dns-weu,example.internal,delete,error}":     0,
		// The lowest of the subscription's two principals; none before an answer.
		"service_router_azure_ratelimit_remaining{sub-a,read}":  18,
		"service_router_azure_ratelimit_remaining{sub-a,write}": 150,
	}, got)
}
