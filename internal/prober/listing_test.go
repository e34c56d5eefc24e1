package prober

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/external-dns/endpoint"

	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
	"github.com/service-router/service-router-operator/internal/azureprivatedns"
	"github.com/service-router/service-router-operator/internal/desired"
	"github.com/service-router/service-router-operator/internal/verify"
	"github.com/service-router/service-router-operator/test/azurestandin"
)

const (
	azSub  = "00000000-0000-0000-0000-000000000001"
	azRG   = "rg-dns-weu"
	azZone = "example.internal"
)

// statesOf is the routes' states and answers in the zone.
func statesOf(tr *verify.Tracker, keys []verify.RouteKey) (map[routingv1alpha1.ZoneState]int, []string) {
	counts := map[routingv1alpha1.ZoneState]int{}
	var answers []string
	for _, k := range keys {
		o, known := tr.Route(k)
		if !known {
			counts[""]++
			continue
		}
		counts[o.State]++
		answers = append(answers, o.Answer)
	}
	return counts, answers
}

// An Azure Private DNS zone is read whole: one listing answers every record of the zone, never a
// request per record; a throttled zone is Unreachable with the reason, listed no more often than
// Retry-After allows, and Published again once Resource Manager answers.
func TestListed_OneListingServesEveryRecordAndHonoursRetryAfter(t *testing.T) {
	s, err := azurestandin.Start(t.TempDir())
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	s.CreateZone(azSub, azRG, azZone)
	file := filepath.Join(t.TempDir(), "azure.json")
	require.NoError(t, os.WriteFile(file, s.AzureJSON(azSub, azRG), 0o600))

	const routes = 60
	tr := verify.NewTracker(verify.Settings{FastInterval: 100 * time.Millisecond, SettledInterval: 2 * time.Second, FailuresBeforeUnreachable: 3},
		func() float64 { return 0.5 }, nil)
	now := time.Now()
	target := "aks01-weu-internal." + azZone
	require.NoError(t, s.SetA(azSub, azRG, azZone, "aks01-weu-internal", "10.1.2.3"))
	tr.SetTarget("external-dns-weu", desired.Ingress{Controller: "istio-internal", TargetPostfix: "internal"}, "istio-system/gw",
		address(target, "10.1.2.3"), true, false, now)
	var keys []verify.RouteKey
	for i := range routes {
		name := fmt.Sprintf("api-%d", i)
		require.NoError(t, s.SetCNAME(azSub, azRG, azZone, name, target))
		k := verify.RouteKey{Namespace: "shop", Name: name, Controller: "external-dns-weu"}
		keys = append(keys, k)
		tr.SetRoute(k, cname(name+"."+azZone, target), true, false, now)
	}

	var mu sync.Mutex
	outcomes := map[string]int{}
	p := New(tr, Limits{}, func([]verify.Change) {}, func(_, outcome string) { mu.Lock(); outcomes[outcome]++; mu.Unlock() })
	p.AzureTransport = s.HTTPClient()
	p.SetZones([]Zone{{Controller: "external-dns-weu", ListInterval: 200 * time.Millisecond,
		Azure: &azureprivatedns.Zone{SubscriptionID: azSub, ResourceGroup: azRG, ZoneName: azZone, ConfigFile: file, PageSize: 1000, Timeout: 5 * time.Second}}})
	ctx := t.Context()
	go func() { _ = p.Start(ctx) }()

	require.Eventually(t, func() bool { c, _ := statesOf(tr, keys); return c[routingv1alpha1.ZonePublished] == routes }, 10*time.Second, 50*time.Millisecond)
	assert.LessOrEqual(t, s.Count("listRecordSets"), 2, "61 records answered by one listing (a second may have started for the target's CNAMEs)")
	assert.Zero(t, s.Count("getRecordSet"), "never a request per record")
	mu.Lock()
	assert.Equal(t, s.Count("listRecordSets"), outcomes["answered"])
	mu.Unlock()

	// Drifted and Pending come from the same judge as in the DNS modes.
	require.NoError(t, s.SetCNAME(azSub, azRG, azZone, "api-0", "aks02-neu-internal."+azZone))
	require.NoError(t, s.Delete(azSub, azRG, azZone, "api-1", "CNAME"))
	require.Eventually(t, func() bool {
		o0, _ := tr.Route(keys[0])
		o1, _ := tr.Route(keys[1])
		return o0.State == routingv1alpha1.ZoneDrifted && o1.State == routingv1alpha1.ZonePending
	}, 10*time.Second, 50*time.Millisecond, "found at the next settled check")
	o0, _ := tr.Route(keys[0])
	assert.Equal(t, "CNAME aks02-neu-internal.example.internal.", o0.Answer)
	o1, _ := tr.Route(keys[1])
	assert.Equal(t, "NXDOMAIN", o1.Answer)
	require.NoError(t, s.SetCNAME(azSub, azRG, azZone, "api-0", target))
	require.NoError(t, s.SetCNAME(azSub, azRG, azZone, "api-1", target))

	s.ThrottleReads(time.Second)
	throttledAt := time.Now()
	require.Eventually(t, func() bool { c, _ := statesOf(tr, keys); return c[routingv1alpha1.ZoneUnreachable] == routes }, 20*time.Second, 50*time.Millisecond)
	_, answers := statesOf(tr, keys)
	for _, a := range answers {
		require.Equal(t, "no answer from Azure Resource Manager (Throttled: Retry-After 1s)", a)
	}
	elapsed := time.Since(throttledAt)
	attempts := s.Count("throttled")
	assert.GreaterOrEqual(t, attempts, 3, "Unreachable after three failed listings in a row")
	assert.LessOrEqual(t, attempts, int(elapsed/time.Second)+1, "no more than one listing per Retry-After (%d in %s)", attempts, elapsed)
	mu.Lock()
	assert.Equal(t, attempts, outcomes["throttled"])
	mu.Unlock()

	s.Unthrottle()
	require.Eventually(t, func() bool { c, _ := statesOf(tr, keys); return c[routingv1alpha1.ZonePublished] == routes }, 20*time.Second, 50*time.Millisecond,
		"back to Published once Resource Manager answers (after a backoff of a few seconds)")
	_, answers = statesOf(tr, keys)
	assert.True(t, strings.HasPrefix(answers[0], "CNAME "+target+". → A 10.1.2.3"), answers[0])
}

func cname(hostname, to string) []*endpoint.Endpoint {
	return []*endpoint.Endpoint{{DNSName: hostname, RecordType: "CNAME", Targets: endpoint.Targets{to}, RecordTTL: 300}}
}

func address(name string, ips ...string) []*endpoint.Endpoint {
	return []*endpoint.Endpoint{{DNSName: name, RecordType: "A", Targets: ips, RecordTTL: 300}}
}

// A rotated azure.json (its Secret updated in place) is read again once Resource Manager's token
// endpoint rejected the old credentials: the zone goes from Unreachable, naming the
// authentication failure, to Published without a restart.
func TestListed_RotatedAzureJSONIsReadAgain(t *testing.T) {
	s, err := azurestandin.Start(t.TempDir())
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	s.CreateZone(azSub, azRG, azZone)
	target := "aks01-weu-internal." + azZone
	require.NoError(t, s.SetA(azSub, azRG, azZone, "aks01-weu-internal", "10.1.2.3"))
	require.NoError(t, s.SetCNAME(azSub, azRG, azZone, "api", target))
	file := filepath.Join(t.TempDir(), "azure.json")
	stale := strings.Replace(string(s.AzureJSON(azSub, azRG)), azurestandin.ClientSecret, "expired-secret", 1)
	require.NoError(t, os.WriteFile(file, []byte(stale), 0o600))

	tr := verify.NewTracker(verify.Settings{FastInterval: 100 * time.Millisecond, SettledInterval: time.Second, FailuresBeforeUnreachable: 3},
		func() float64 { return 0.5 }, nil)
	now := time.Now()
	tr.SetTarget("external-dns-weu", desired.Ingress{Controller: "istio-internal", TargetPostfix: "internal"}, "istio-system/gw", address(target, "10.1.2.3"), true, false, now)
	k := verify.RouteKey{Namespace: "shop", Name: "api", Controller: "external-dns-weu"}
	tr.SetRoute(k, cname("api."+azZone, target), true, false, now)
	p := New(tr, Limits{}, func([]verify.Change) {}, nil)
	p.AzureTransport = s.HTTPClient()
	p.SetZones([]Zone{{Controller: "external-dns-weu", ListInterval: 100 * time.Millisecond,
		Azure: &azureprivatedns.Zone{SubscriptionID: azSub, ResourceGroup: azRG, ZoneName: azZone, ConfigFile: file, PageSize: 1000, Timeout: 5 * time.Second}}})
	go func() { _ = p.Start(t.Context()) }()

	require.Eventually(t, func() bool { o, _ := tr.Route(k); return o.State == routingv1alpha1.ZoneUnreachable }, 10*time.Second, 50*time.Millisecond)
	o, _ := tr.Route(k)
	assert.Equal(t, "no answer from Azure Resource Manager (authentication failed: 401)", o.Answer)

	require.NoError(t, os.WriteFile(file, s.AzureJSON(azSub, azRG), 0o600)) // the Secret rotated
	require.Eventually(t, func() bool { o, _ := tr.Route(k); return o.State == routingv1alpha1.ZonePublished }, 20*time.Second, 50*time.Millisecond,
		"Published with the new secret, without a restart")
}
