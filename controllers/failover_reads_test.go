package controllers

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	externaldnsv1alpha1 "sigs.k8s.io/external-dns/apis/v1alpha1"
	"sigs.k8s.io/external-dns/endpoint"

	clusterv1alpha1 "github.com/service-router/service-router-operator/apis/cluster/v1alpha1"
	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
	"github.com/service-router/service-router-operator/internal/failover"
	"github.com/service-router/service-router-operator/internal/naming"
)

// countingZone is a zone failover reads and writes, counting what it is asked: aks01 (region weu)
// beats in it while alive, with its gateway's address; the name api.example.com is weu's.
type countingZone struct {
	mu                               sync.Mutex
	wholeReads, witnessReads, writes int
	passes                           []failover.Pass
	lastBeat                         time.Time
	refuse                           error
	// ownership is api.example.com's ownership value (weuOwnership until a pass).
	ownership string
}

const weuOwnership = `"heritage=external-dns,external-dns/owner=external-dns-weu-aks01,external-dns/resource=crd/team/web"`

func (z *countingZone) reading(whole bool) failover.ZoneReading {
	r := failover.ZoneReading{Read: true, Beats: map[string][]failover.Heartbeat{"weu": {{Zone: "external-dns-weu", Read: true, Found: true, At: z.lastBeat,
		GatewayAnswers: true, Cluster: "aks01", Owner: "external-dns-weu-aks01", Addresses: []string{"10.0.0.1"}}}}}
	if whole {
		r.TXT = map[string]failover.TXTSet{"cname-api.example.com": {Values: []string{cmp.Or(z.ownership, weuOwnership)}, TTL: 300}}
	}
	return r
}

func (z *countingZone) Read(context.Context) (failover.ZoneReading, error) {
	z.mu.Lock()
	defer z.mu.Unlock()
	z.wholeReads++
	if z.refuse != nil {
		return failover.ZoneReading{}, z.refuse
	}
	return z.reading(true), nil
}

func (z *countingZone) ReadWitness(context.Context, []string) (failover.ZoneReading, error) {
	z.mu.Lock()
	defer z.mu.Unlock()
	z.witnessReads++
	if z.refuse != nil {
		return failover.ZoneReading{}, z.refuse
	}
	return z.reading(false), nil
}

func (z *countingZone) WriteHeartbeat(context.Context, string, string, string) error {
	z.mu.Lock()
	defer z.mu.Unlock()
	z.writes++
	return nil
}

func (z *countingZone) RemoveLegacyHeartbeat(context.Context, string, string) error { return nil }

func (z *countingZone) Pass(_ context.Context, p failover.Pass) error {
	z.mu.Lock()
	defer z.mu.Unlock()
	z.passes = append(z.passes, p)
	z.ownership = p.New
	return nil
}

func (z *countingZone) counts() (whole, witness int) {
	z.mu.Lock()
	defer z.mu.Unlock()
	return z.wholeReads, z.witnessReads
}

// failoverOnAzure is a leader of cluster aks02 (region neu) standing in for weu's names of
// namespace team, failover on zone external-dns-weu (read through Resource Manager) with the
// default settings; the zone is zone, the clock now.
func failoverOnAzure(t *testing.T, zone *countingZone, now *time.Time) *Failover {
	azure := &clusterv1alpha1.AzurePrivateDNSVerification{SubscriptionID: "sub", ResourceGroup: "rg", ZoneName: "example.com"}
	cfg := &clusterv1alpha1.DNSConfiguration{ObjectMeta: metav1.ObjectMeta{Name: clusterv1alpha1.DNSConfigurationName},
		Spec: clusterv1alpha1.DNSConfigurationSpec{ExternalDNSControllers: []clusterv1alpha1.ExternalDNSController{{Name: "external-dns-weu", Region: "weu",
			Verification: &clusterv1alpha1.ZoneVerification{AzurePrivateDNS: azure},
			Failover:     &clusterv1alpha1.ZoneFailover{OwnerID: "external-dns-weu-aks02"}}},
			Failover: &clusterv1alpha1.FailoverSettings{}}}
	identity := &clusterv1alpha1.ClusterIdentity{ObjectMeta: metav1.ObjectMeta{Name: clusterv1alpha1.ClusterIdentityName},
		Spec: clusterv1alpha1.ClusterIdentitySpec{Cluster: "aks02", Region: "neu", Domain: "example.com"}}
	policy := &routingv1alpha1.DNSPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "policy"},
		Spec: routingv1alpha1.DNSPolicySpec{Mode: routingv1alpha1.DNSPolicyMode("Active"), Failover: &routingv1alpha1.PolicyFailover{StandIns: []string{"neu"}}}}
	ep := &externaldnsv1alpha1.DNSEndpoint{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "web-weu",
		Labels: map[string]string{naming.LabelController: "external-dns-weu", naming.LabelServiceRoute: "web", naming.LabelManagedBy: naming.ManagedByValue}},
		Spec: externaldnsv1alpha1.DNSEndpointSpec{Endpoints: []*endpoint.Endpoint{{DNSName: "api.example.com", RecordType: "CNAME", Targets: endpoint.Targets{"aks02-neu-internal.example.com"}}}}}
	f := newFailover(fakeClientWith(cfg, identity, policy, ep), events.NewFakeRecorder(100), nil, nil)
	f.ios["external-dns-weu"] = cachedIO{key: fmt.Sprintf("%+v", *azure), io: zone}
	f.now = func() time.Time { return *now }
	return f
}

// Failover reads a zone at the rate its decisions need, not at the probe rate: while weu's gateway
// answers, its heartbeats every heartbeatStaleAfter (30 s) and the whole zone every 5 minutes;
// while the probes fail, the heartbeats every round; the whole zone, for its ownership records,
// only when weu is judged lost, in the round that judges it, before the name is passed.
func TestFailover_ReadsWhatItsDecisionsNeed(t *testing.T) {
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	zone := &countingZone{lastBeat: now}
	f := failoverOnAzure(t, zone, &now)
	answers := true
	f.probe = func(context.Context, string) error {
		if answers {
			return nil
		}
		return errors.New("refused")
	}
	ctx := context.Background()
	rounds := func(d time.Duration) {
		for end := now.Add(d); now.Before(end); now = now.Add(defaultProbeInterval) {
			if answers {
				zone.lastBeat = now
			}
			f.round(ctx)
		}
	}

	counts := func() (whole, witness int) { return zone.counts() }

	// Ten minutes at rest (120 rounds, 0:00 to 9:55).
	rounds(10 * time.Minute)
	whole, witness := counts()
	assert.Equal(t, 2, whole, "the whole zone at the first round and after 5 minutes")
	assert.Equal(t, 18, witness, "the heartbeats every 30 s in between")
	assert.Equal(t, 60, zone.writes, "the heartbeat every 10 s")
	regions, _ := f.Regions()
	require.Len(t, regions, 1)
	assert.Equal(t, "Serving", regions[0].State)
	rounds(2 * time.Minute) // 10:00 to 11:55: the whole zone at 10:00, the heartbeats at 10:30, 11:00, 11:30
	whole, witness = counts()
	require.Equal(t, 3, whole)
	require.Equal(t, 21, witness)

	// 12:00: the gateway stops answering, the heartbeat still fresh (a partition): the heartbeats
	// every round, the whole zone not at all, nothing passed.
	answers = false
	zone.lastBeat = now
	rounds(25 * time.Second)
	whole2, witness2 := counts()
	assert.Equal(t, whole, whole2, "no whole reading for a region judged on its heartbeats")
	assert.Equal(t, witness+5, witness2, "the heartbeats every round (12:00 was due anyway)")
	regions, _ = f.Regions()
	assert.Equal(t, "Unreachable", regions[0].State)
	assert.Empty(t, zone.passes)

	// The heartbeat goes stale (after 12:30): weu is lost; the round that judges it reads the zone
	// whole and passes the name; the name held, the zone is read whole every 30 s.
	for regions[0].State != "Lost" {
		rounds(defaultProbeInterval)
		regions, _ = f.Regions()
		require.True(t, now.Before(time.Date(2026, 11, 28, 12, 13, 0, 0, time.UTC)), "weu never judged lost")
	}
	whole3, _ := counts()
	assert.Equal(t, whole2+1, whole3, "one whole reading, in the round that judged weu lost")
	require.Len(t, zone.passes, 1)
	assert.Equal(t, "cname-api.example.com", zone.passes[0].TXTName)
	rounds(time.Minute)
	whole4, _ := counts()
	assert.Equal(t, whole3+2, whole4, "while the name is held, the whole zone every 30 s")
	assert.Len(t, zone.passes, 1, "passed once")
}

// A zone Resource Manager throttles says nothing: it is not read, so a region whose probes fail
// is not judged lost on it (Unreachable, WitnessUnreadable), nothing passes, and the throttling
// is announced.
func TestFailover_AThrottledZoneMovesNothing(t *testing.T) {
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	zone := &countingZone{lastBeat: now}
	f := failoverOnAzure(t, zone, &now)
	f.probe = func(context.Context, string) error { return nil }
	f.round(context.Background())
	f.probe = func(context.Context, string) error { return errors.New("refused") }
	zone.refuse = throttledByResourceManager()
	for range 20 {
		now = now.Add(defaultProbeInterval)
		f.round(context.Background())
	}
	regions, _ := f.Regions()
	require.Len(t, regions, 1)
	assert.Equal(t, "Unreachable", regions[0].State)
	assert.Equal(t, "WitnessUnreadable", regions[0].Reason)
	assert.Empty(t, zone.passes)
	assert.Contains(t, drain(f.recorder.(*events.FakeRecorder)), "ZoneThrottled")
}

// drain is every event the recorder holds, one a line.
func drain(r *events.FakeRecorder) string {
	var out string
	for {
		select {
		case e := <-r.Events:
			out += e + "\n"
		default:
			return out
		}
	}
}

// throttledByResourceManager is Resource Manager's answer to a principal over its budget.
func throttledByResourceManager() error {
	return fmt.Errorf("listing the heartbeats of zone example.com: %w", &azcore.ResponseError{StatusCode: http.StatusTooManyRequests, ErrorCode: "TooManyRequests",
		RawResponse: &http.Response{StatusCode: http.StatusTooManyRequests, Header: http.Header{"Retry-After": {"10"}}}})
}
