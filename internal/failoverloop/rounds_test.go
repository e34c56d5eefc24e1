package failoverloop

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
	"github.com/service-router/service-router-operator/internal/verify"
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
	// fleet is how many clusters beside aks01 and the reader beat in the zone (aks03…).
	fleet int
	// lastValue is the last heartbeat value written.
	lastValue string
}

const weuOwnership = `"heritage=external-dns,external-dns/owner=external-dns-weu-aks01,external-dns/resource=crd/team/web"`

func (z *countingZone) reading(whole bool) failover.ZoneReading {
	r := failover.ZoneReading{Read: true, Beats: map[string][]failover.Heartbeat{"weu": {{Zone: "external-dns-weu", Read: true, Found: true, At: z.lastBeat,
		GatewayAnswers: true, Cluster: "aks01", Owner: "external-dns-weu-aks01", Addresses: []string{"10.0.0.1"}}}}}
	for i := range z.fleet {
		region := fmt.Sprintf("r%02d", i)
		r.Beats[region] = []failover.Heartbeat{{Read: true, Found: true, At: z.lastBeat, GatewayAnswers: true, Cluster: fmt.Sprintf("aks%02d", i+3)}}
	}
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

func (z *countingZone) WriteHeartbeat(_ context.Context, _, _, value string) error {
	z.mu.Lock()
	defer z.mu.Unlock()
	z.writes++
	z.lastValue = value
	return nil
}

func (z *countingZone) RemoveLegacyHeartbeat(context.Context, string, string) error { return nil }

func (z *countingZone) PassOwnership(_ context.Context, txtName string, ttl uint32, old, new string) error {
	z.mu.Lock()
	defer z.mu.Unlock()
	z.passes = append(z.passes, failover.Pass{TXTName: txtName, TTL: ttl, Old: old, New: new})
	z.ownership = new
	return nil
}

func (z *countingZone) WriteIntermediate(context.Context, string, uint32, string, string) error {
	return errors.New("the counting zone holds no intermediate")
}

func (z *countingZone) counts() (whole, witness int) {
	z.mu.Lock()
	defer z.mu.Unlock()
	return z.wholeReads, z.witnessReads
}

// failoverOnAzure is a leader of cluster aks02 (region neu) standing in for weu's names of
// namespace team, failover on zone external-dns-weu (read through Resource Manager) with the
// default settings; the zone is zone, the clock now.
func failoverOnAzure(t *testing.T, zone *countingZone, now *time.Time, more ...*countingZone) *Loop {
	azure := &clusterv1alpha1.AzurePrivateDNSVerification{SubscriptionID: "sub", ResourceGroup: "rg", ZoneName: "example.com"}
	cfg := &clusterv1alpha1.DNSConfiguration{ObjectMeta: metav1.ObjectMeta{Name: clusterv1alpha1.DNSConfigurationName},
		Spec: clusterv1alpha1.DNSConfigurationSpec{ExternalDNSControllers: []clusterv1alpha1.ExternalDNSController{{Name: "external-dns-weu", Region: "weu",
			Verification: &clusterv1alpha1.ZoneVerification{AzurePrivateDNS: azure},
			Failover:     &clusterv1alpha1.ZoneFailover{OwnerID: "external-dns-weu-aks02"}}},
			Failover: &clusterv1alpha1.FailoverSettings{}}}
	ios := map[string]cachedIO{"external-dns-weu": {key: fmt.Sprintf("%+v", *azure), io: zone}}
	for i, z := range more {
		name, region := fmt.Sprintf("external-dns-x%d", i), fmt.Sprintf("x%d", i)
		a := &clusterv1alpha1.AzurePrivateDNSVerification{SubscriptionID: "sub", ResourceGroup: "rg-" + region, ZoneName: "example.com"}
		cfg.Spec.ExternalDNSControllers = append(cfg.Spec.ExternalDNSControllers, clusterv1alpha1.ExternalDNSController{Name: name, Region: region,
			Verification: &clusterv1alpha1.ZoneVerification{AzurePrivateDNS: a}, Failover: &clusterv1alpha1.ZoneFailover{OwnerID: name + "-aks02"}})
		ios[name] = cachedIO{key: fmt.Sprintf("%+v", *a), io: z}
	}
	identity := &clusterv1alpha1.ClusterIdentity{ObjectMeta: metav1.ObjectMeta{Name: clusterv1alpha1.ClusterIdentityName},
		Spec: clusterv1alpha1.ClusterIdentitySpec{Cluster: "aks02", Region: "neu", Domain: "example.com"}}
	policy := &routingv1alpha1.DNSPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "policy"},
		Spec: routingv1alpha1.DNSPolicySpec{Mode: routingv1alpha1.DNSPolicyMode("Active"), Failover: &routingv1alpha1.PolicyFailover{StandIns: []string{"neu"}}}}
	ep := &externaldnsv1alpha1.DNSEndpoint{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "web-weu",
		Labels: map[string]string{naming.LabelController: "external-dns-weu", naming.LabelServiceRoute: "web", naming.LabelManagedBy: naming.ManagedByValue}},
		Spec: externaldnsv1alpha1.DNSEndpointSpec{Endpoints: []*endpoint.Endpoint{{DNSName: "api.example.com", RecordType: "CNAME", Targets: endpoint.Targets{"aks02-neu-internal.example.com"}}}}}
	f := newLoop(fakeClient(cfg, identity, policy, ep), events.NewFakeRecorder(100), nil, nil)
	f.ios = ios
	f.now = func() time.Time { return *now }
	return f
}

// Failover reads a zone at the rate its decisions need, not at the probe rate: while weu's gateway
// answers, its heartbeats every heartbeatStaleAfter (30 s) and the whole zone every 6 minutes;
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

	// Eleven minutes at rest (132 rounds, 0:00 to 10:55), no verification listing the zone.
	rounds(11 * time.Minute)
	whole, witness := counts()
	assert.Equal(t, 2, whole, "the whole zone at the first round and at 6:00 (verification's settled listing, 5.5 minutes at the latest, late by a heartbeat reading)")
	assert.Equal(t, 20, witness, "the heartbeats every 30 s in between")
	assert.Equal(t, 66, zone.writes, "the heartbeat every 10 s")
	regions, _ := f.Regions()
	require.Len(t, regions, 1)
	assert.Equal(t, "Serving", regions[0].State)

	// 11:00: the gateway stops answering, the heartbeat still fresh (a partition): the heartbeats
	// every round, the whole zone not at all, nothing passed.
	answers = false
	zone.lastBeat = now
	rounds(25 * time.Second)
	whole2, witness2 := counts()
	assert.Equal(t, whole, whole2, "no whole reading for a region judged on its heartbeats")
	assert.Equal(t, witness+5, witness2, "the heartbeats every round (11:00 was due anyway)")
	regions, _ = f.Regions()
	assert.Equal(t, "Unreachable", regions[0].State)
	assert.Empty(t, zone.passes)

	// The heartbeat goes stale (after 11:30): weu is lost; the round that judges it reads the zone
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

// In a fleet of 20 clusters writing 10 zones, each cluster spaces its heartbeats so that the
// fleet's take at most failover.HeartbeatWritesPerMinute (100 a minute: half the network resource
// provider's 1,000 writes per 5 minutes), and says so in each heartbeat.
func TestFailover_HeartbeatsFitTheFleetsWriteBudget(t *testing.T) {
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	zones := make([]*countingZone, 10)
	for i := range zones {
		zones[i] = &countingZone{lastBeat: now, fleet: 18} // aks01, this cluster and 18 more
	}
	f := failoverOnAzure(t, zones[0], &now, zones[1:]...)
	f.probe = func(context.Context, string) error { return nil }
	for end := now.Add(10 * time.Minute); now.Before(end); now = now.Add(defaultProbeInterval) {
		for _, z := range zones {
			z.lastBeat = now
		}
		f.round(context.Background())
	}
	writes := 0
	for _, z := range zones {
		writes += z.writes
	}
	hb, ok := failover.ParseHeartbeat("example.com", zones[0].lastValue)
	require.True(t, ok, zones[0].lastValue)
	assert.Equal(t, 2*time.Minute, hb.Interval, "20 clusters × 10 zones at 100 writes a minute, said in the heartbeat")
	// The first round knows no fleet yet and writes at once; then one write per zone every 2 minutes.
	assert.LessOrEqual(t, writes, 10*(1+5), "this cluster's heartbeat writes in 10 minutes")
	assert.GreaterOrEqual(t, writes, 10*5)
	perMinute := float64(writes-10) / 10
	assert.LessOrEqual(t, perMinute*20, float64(failover.HeartbeatWritesPerMinute), "the fleet's heartbeat writes a minute at this cluster's rate")
}

// A zone verification lists is not listed again by failover: a listing verification made takes
// the place of failover's next whole reading.
func TestFailover_TakesVerificationsListingAsItsWholeReading(t *testing.T) {
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	zone := &countingZone{lastBeat: now}
	f := failoverOnAzure(t, zone, &now)
	f.probe = func(context.Context, string) error { return nil }
	var listing verify.Listing
	listing.AddTXT("example.com", "aks01.weu._router-heartbeat", failover.HeartbeatValue(failover.Heartbeat{At: now, GatewayAnswers: true, Owner: "external-dns-weu-aks01"}))
	listing.AddTXT("example.com", "cname-api", weuOwnership)
	listing.Add("example.com", "aks01-weu-internal", "A", "10.0.0.1")
	for end := now.Add(9*time.Minute + 45*time.Second); now.Before(end); now = now.Add(defaultProbeInterval) {
		if now.Equal(time.Date(2026, 11, 28, 12, 4, 50, 0, time.UTC)) {
			f.Listed("external-dns-weu", listing, now)
		}
		zone.lastBeat = now
		f.round(context.Background())
	}
	whole, _ := zone.counts()
	assert.Equal(t, 1, whole, "the whole zone read once, at the first round; verification's listing at 4:50 stood for the one due at 5:00")
	read := f.view.Forms.Zones["external-dns-weu"]
	assert.Equal(t, []string{weuOwnership}, read.TXT["cname-api.example.com"].Values)
	assert.Equal(t, []string{"10.0.0.1"}, read.Addresses["aks01-weu-internal.example.com"])
	assert.Equal(t, "external-dns-weu-aks02", read.Owner, "labelled as this cluster's reading of the zone")
}

// Clocks that differ do not move names: with weu's clock 60 s behind (its heartbeats look a minute
// old) or 60 s ahead, a partition that fails the probes leaves weu Unreachable for as long as its
// heartbeats change; and a real loss is still found within heartbeatStaleAfter of this cluster
// last seeing them change, plus a round, whatever weu's clock said.
func TestFailover_ClockSkewMovesNothing(t *testing.T) {
	for _, skew := range []time.Duration{-time.Minute, time.Minute} {
		t.Run(skew.String(), func(t *testing.T) {
			now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
			zone := &countingZone{lastBeat: now.Add(skew)}
			f := failoverOnAzure(t, zone, &now)
			f.probe = func(context.Context, string) error { return nil }
			ctx := context.Background()
			f.round(ctx)
			f.probe = func(context.Context, string) error { return errors.New("partitioned") }
			for range 36 { // 3 minutes of partition, weu writing every round
				now = now.Add(defaultProbeInterval)
				zone.lastBeat = now.Add(skew)
				f.round(ctx)
				regions, _ := f.Regions()
				require.NotEqual(t, "Lost", regions[0].State, "at %s: %s", now.Format(time.TimeOnly), regions[0].Message)
			}
			assert.Empty(t, zone.passes)

			// weu is lost: its heartbeat stops changing.
			lost := now
			for regions, _ := f.Regions(); regions[0].State != "Lost"; regions, _ = f.Regions() {
				now = now.Add(defaultProbeInterval)
				f.round(ctx)
				require.LessOrEqual(t, now.Sub(lost), failover.DefaultSettings.HeartbeatStaleAfter+2*defaultProbeInterval, "weu not judged lost in time")
			}
			assert.Len(t, zone.passes, 1)
		})
	}
}
