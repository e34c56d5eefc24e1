package azureprivatedns

import (
	"context"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/cloud"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var t0 = time.Unix(1_700_000_000, 0)

func TestQuota_Admit(t *testing.T) {
	reads, writes := buckets[0], buckets[1]
	tests := []struct {
		name   string
		b      bucket
		q      quota
		now    time.Time
		want   admission
		wantAt time.Time // q.next after the decision
	}{
		{"nothing known: sent at once", reads, quota{}, t0, admission{}, time.Time{}},
		{"plenty left: sent at once", reads, quota{remaining: 25, seen: t0}, t0, admission{}, time.Time{}},
		{"in a backoff: held for what is left", reads, quota{until: t0.Add(30 * time.Second), asked: 30 * time.Second}, t0.Add(5 * time.Second),
			admission{held: 25 * time.Second}, time.Time{}},
		{"the backoff's last second: waited out", reads, quota{until: t0.Add(30 * time.Second)}, t0.Add(29200 * time.Millisecond),
			admission{wait: 800 * time.Millisecond}, time.Time{}},
		{"the backoff is over", reads, quota{until: t0}, t0, admission{}, time.Time{}},
		{"reads low, the first at once", reads, quota{remaining: 24, seen: t0}, t0, admission{paced: true}, t0.Add(40 * time.Millisecond)},
		{"reads low, the next after a refill", reads, quota{remaining: 24, seen: t0, next: t0.Add(40 * time.Millisecond)}, t0,
			admission{wait: 40 * time.Millisecond, paced: true}, t0.Add(80 * time.Millisecond)},
		{"writes low: ten a second", writes, quota{remaining: 19, seen: t0, next: t0.Add(100 * time.Millisecond)}, t0,
			admission{wait: 100 * time.Millisecond, paced: true}, t0.Add(200 * time.Millisecond)},
		{"writes at the threshold are not paced", writes, quota{remaining: 20, seen: t0, next: t0.Add(time.Second)}, t0, admission{}, t0.Add(time.Second)},
		{"after a backoff's tail, paced from its end", reads, quota{remaining: 0, seen: t0, until: t0.Add(time.Second)}, t0,
			admission{wait: time.Second, paced: true}, t0.Add(1040 * time.Millisecond)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := tt.q
			assert.Equal(t, tt.want, q.admit(tt.b, tt.now))
			assert.Equal(t, tt.wantAt, q.next)
		})
	}
}

func TestQuota_Observe(t *testing.T) {
	reads := buckets[0]
	h := func(kv ...string) http.Header {
		out := http.Header{}
		for i := 0; i < len(kv); i += 2 {
			out.Set(kv[i], kv[i+1])
		}
		return out
	}
	tests := []struct {
		name       string
		q          quota
		header     http.Header
		status     int
		retryAfter time.Duration
		want       quota
	}{
		{"the tokens left", quota{}, h(reads.header, "11999"), 200, 0, quota{remaining: 11999, seen: t0}},
		{"an answer without the header changes nothing", quota{remaining: 7, seen: t0.Add(-time.Second)}, h(), 200, 0, quota{remaining: 7, seen: t0.Add(-time.Second)}},
		{"a 429 begins a backoff", quota{}, h(reads.header, "0"), 429, 30 * time.Second,
			quota{remaining: 0, seen: t0, until: t0.Add(30 * time.Second), asked: 30 * time.Second}},
		{"a 429 without Retry-After: the default", quota{remaining: 200, seen: t0.Add(-time.Second)}, h(), 429, 0,
			quota{remaining: 0, seen: t0, until: t0.Add(DefaultRetryAfter), asked: DefaultRetryAfter}},
		{"a shorter 429 does not shorten the backoff", quota{until: t0.Add(time.Minute), asked: time.Minute}, h(), 429, 5 * time.Second,
			quota{remaining: 0, seen: t0, until: t0.Add(time.Minute), asked: time.Minute}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := tt.q
			q.observe(reads, tt.header, tt.status, tt.retryAfter, t0)
			assert.Equal(t, tt.want, q)
		})
	}
}

func TestPrincipalOf(t *testing.T) {
	stack := cloud.Configuration{Services: map[cloud.ServiceName]cloud.ServiceConfiguration{cloud.ResourceManager: {Endpoint: "https://ARM.local/"}}}
	t.Setenv("AZURE_CLIENT_ID", "FROM-THE-ENVIRONMENT")
	tests := []struct {
		name    string
		cfg     Config
		c       cloud.Configuration
		want    Principal
		wantErr string
	}{
		{"a service principal", Config{SubscriptionID: "SUB", ClientID: "Client", ClientSecret: "s"}, cloud.AzurePublic,
			Principal{"https://management.azure.com", "sub", "client"}, ""},
		{"workload identity, the azure.json's client", Config{SubscriptionID: "sub", ClientID: "wi", UseWorkloadIdentityExtension: true}, stack,
			Principal{"https://arm.local", "sub", "wi"}, ""},
		{"workload identity, the environment's client", Config{SubscriptionID: "sub", UseWorkloadIdentityExtension: true}, stack,
			Principal{"https://arm.local", "sub", "from-the-environment"}, ""},
		{"a user-assigned managed identity", Config{SubscriptionID: "sub", ClientID: "msi", ClientSecret: "msi", UseManagedIdentityExtension: true, UserAssignedIdentityID: "uami"}, stack,
			Principal{"https://arm.local", "sub", "uami"}, ""},
		{"the system-assigned managed identity", Config{SubscriptionID: "sub", UseManagedIdentityExtension: true}, stack,
			Principal{"https://arm.local", "sub", SystemAssignedIdentity}, ""},
		{"no credentials", Config{SubscriptionID: "sub"}, stack, Principal{}, "names no credentials"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := principalOf(tt.cfg, tt.c)
			if tt.wantErr != "" {
				assert.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
	t.Setenv("AZURE_CLIENT_ID", "")
	_, err := principalOf(Config{UseWorkloadIdentityExtension: true}, stack)
	assert.ErrorContains(t, err, "AZURE_CLIENT_ID")
}

func TestZoneOfPath(t *testing.T) {
	assert.Equal(t, zoneKey{"sub", "rg-dns", "example.internal"},
		zoneOfPath("/subscriptions/SUB/resourceGroups/RG-DNS/providers/Microsoft.Network/privateDnsZones/Example.Internal/TXT/_router-heartbeat"))
	assert.Equal(t, zoneKey{"sub", "rg", ""}, zoneOfPath("/subscriptions/sub/resourceGroups/rg/providers/Microsoft.Network/privateDnsZones"))
}

// fakeARM answers every request with the tokens left it is set to, and 429 while throttled; it
// records when (on the test's clock) each request arrived.
type fakeARM struct {
	clock     *fakeClock
	remaining int
	throttled time.Duration // Retry-After of a 429, or 0: answer 200
	arrived   []time.Time
}

func (f *fakeARM) Do(req *http.Request) (*http.Response, error) {
	f.arrived = append(f.arrived, f.clock.t)
	h := http.Header{}
	h.Set(buckets[OperationOf(req.Method).index()].header, strconv.Itoa(f.remaining))
	status := http.StatusOK
	if f.throttled > 0 {
		status = http.StatusTooManyRequests
		h.Set("Retry-After", strconv.Itoa(int(f.throttled/time.Second)))
	}
	return &http.Response{StatusCode: status, Header: h, Body: http.NoBody, Request: req}, nil
}

// fakeClock is a clock that moves only when a request sleeps.
type fakeClock struct {
	t     time.Time
	slept []time.Duration
}

func (c *fakeClock) clock() clock {
	return clock{now: func() time.Time { return c.t }, sleep: func(ctx context.Context, d time.Duration) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		c.slept = append(c.slept, d)
		c.t = c.t.Add(d)
		return nil
	}}
}

// pipeline is the pipeline RecordSets builds (its retry options, the budget as a per-retry
// policy) in front of a fake Resource Manager, on the fake clock.
func pipeline(arm *fakeARM, b *principalBudget) runtime.Pipeline {
	o := clientOptions(cloud.AzurePublic, arm)
	o.PerRetryPolicies = []policy.Policy{&budgetPolicy{budget: b, clock: arm.clock.clock()}}
	return runtime.NewPipeline("test", "v0", runtime.PipelineOptions{}, &o)
}

func send(t *testing.T, ctx context.Context, pl runtime.Pipeline, method, zone string) (*http.Response, error) {
	t.Helper()
	req, err := runtime.NewRequest(ctx, method, "https://management.azure.com/subscriptions/pace/resourceGroups/rg/providers/Microsoft.Network/privateDnsZones/"+zone+"/ALL")
	require.NoError(t, err)
	return pl.Do(req)
}

// Once Resource Manager says fewer than 25 reads are left, reads go out no faster than the bucket
// refills (25 a second), until an answer says the bucket recovered; writes are not slowed.
func TestBudgetPolicy_PacesWhenFewRequestsAreLeft(t *testing.T) {
	c := &fakeClock{t: t0}
	arm := &fakeARM{clock: c, remaining: 100}
	b := &principalBudget{key: Principal{SubscriptionID: "pace"}}
	pl := pipeline(arm, b)
	ctx := context.Background()
	zone := Zone{SubscriptionID: "pace", ResourceGroup: "rg", ZoneName: "paced.internal"}
	before := UsageOf(zone)

	for range 5 {
		_, err := send(t, ctx, pl, http.MethodGet, "paced.internal")
		require.NoError(t, err)
	}
	assert.Empty(t, c.slept, "100 left: no wait")

	arm.remaining = 10
	_, err := send(t, ctx, pl, http.MethodGet, "paced.internal") // the answer that says few are left
	require.NoError(t, err)
	start := c.t
	for range 25 {
		_, err := send(t, ctx, pl, http.MethodGet, "paced.internal")
		require.NoError(t, err)
	}
	assert.Equal(t, 24*40*time.Millisecond, c.t.Sub(start), "25 paced reads span 24 refills of 40 ms")
	for i := 1; i < len(arm.arrived); i++ {
		if arm.arrived[i].After(start) {
			assert.GreaterOrEqual(t, arm.arrived[i].Sub(arm.arrived[i-1]), 40*time.Millisecond, "request %d", i)
		}
	}
	u := UsageOf(zone)
	assert.Equal(t, int64(25), u.Reads.Paced-before.Reads.Paced)
	assert.Equal(t, int64(31), u.Reads.Answered-before.Reads.Answered)

	slept := len(c.slept)
	_, err = send(t, ctx, pl, http.MethodPut, "paced.internal")
	require.NoError(t, err)
	assert.Len(t, c.slept, slept, "writes have a bucket of their own")

	arm.remaining = 200
	_, err = send(t, ctx, pl, http.MethodGet, "paced.internal") // still paced: the bucket's recovery is not known yet
	require.NoError(t, err)
	slept = len(c.slept)
	for range 5 {
		_, err := send(t, ctx, pl, http.MethodGet, "paced.internal")
		require.NoError(t, err)
	}
	assert.Len(t, c.slept, slept, "recovered: no wait")

	arm.remaining = 3
	_, err = send(t, ctx, pl, http.MethodGet, "paced.internal")
	require.NoError(t, err)
	_, err = send(t, ctx, pl, http.MethodGet, "paced.internal")
	require.NoError(t, err)
	sent := len(arm.arrived)
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	_, err = send(t, cancelled, pl, http.MethodGet, "paced.internal")
	assert.ErrorIs(t, err, context.Canceled, "a request waiting for its turn gives up with its context")
	assert.Len(t, arm.arrived, sent, "and is not sent")
}

// A 429 holds the principal's requests of its type, without sending them, until its Retry-After
// has passed; the SDK retries neither the 429 nor a held request; another type is not held.
func TestBudgetPolicy_A429HoldsItsTypeUntilRetryAfter(t *testing.T) {
	c := &fakeClock{t: t0}
	arm := &fakeARM{clock: c, remaining: 100, throttled: 30 * time.Second}
	b := &principalBudget{key: Principal{SubscriptionID: "pace"}}
	pl := pipeline(arm, b)
	ctx := context.Background()
	second := Zone{SubscriptionID: "pace", ResourceGroup: "rg", ZoneName: "second.internal"}
	before := UsageOf(second)

	resp, err := send(t, ctx, pl, http.MethodGet, "first.internal")
	require.NoError(t, err)
	assert.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
	assert.Len(t, arm.arrived, 1, "the SDK does not retry a 429")

	arm.throttled = 0
	c.t = t0.Add(10 * time.Second)
	_, err = send(t, ctx, pl, http.MethodGet, "second.internal")
	var held *ThrottledError
	require.ErrorAs(t, err, &held)
	assert.Equal(t, &ThrottledError{Zone: "second.internal", Operation: OperationRead, RetryAfter: 20 * time.Second, Asked: 30 * time.Second}, held)
	assert.Len(t, arm.arrived, 1, "held: not sent, nor retried")
	reason, wait := Classify(err)
	assert.Equal(t, "Throttled: Retry-After 30s", reason, "the reason of the 429 itself")
	assert.Equal(t, 20*time.Second, wait)
	assert.Equal(t, int64(1), UsageOf(second).Reads.Held-before.Reads.Held)

	_, err = send(t, ctx, pl, http.MethodPut, "second.internal")
	require.NoError(t, err, "writes have a bucket of their own")
	assert.Len(t, arm.arrived, 2)

	c.t = t0.Add(29500 * time.Millisecond)
	_, err = send(t, ctx, pl, http.MethodGet, "second.internal")
	require.NoError(t, err, "the last half second is waited out")
	assert.Equal(t, t0.Add(30*time.Second), arm.arrived[2])

	state := b.stateOf()
	assert.Equal(t, t0.Add(30*time.Second), state.Reads.BackoffUntil)
	assert.Equal(t, 100, state.Reads.Remaining)
	assert.False(t, state.Reads.Paced)
}
