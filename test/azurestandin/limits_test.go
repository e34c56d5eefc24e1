package azurestandin

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/privatedns/armprivatedns"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/utils/ptr"
)

// fakeClock is the limits' clock, moved only by the test: buckets refill and the window slides
// exactly as much as it says, however long the requests take.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// startOnClock is a stand-in enforcing the documented limits on a fake clock.
func startOnClock(t *testing.T) (*Server, *fakeClock) {
	t.Helper()
	s := start(t)
	clock := &fakeClock{t: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)}
	s.SetClock(clock.now)
	return s, clock
}

// resourceManagerLimits are the documented limits but Private DNS's per-zone ones, for the tests
// of Resource Manager's rules: they send more requests to one zone in a minute than it admits.
var resourceManagerLimits = func() Limits { l := DocumentedLimits; l.Zone = ZoneLimits{}; return l }()

// startOnClockWithoutZoneLimits is startOnClock enforcing resourceManagerLimits.
func startOnClockWithoutZoneLimits(t *testing.T) (*Server, *fakeClock) {
	t.Helper()
	s, clock := startOnClock(t)
	s.SetLimits(resourceManagerLimits)
	return s, clock
}

// answer is one request's outcome: its status, the remaining tokens header of its operation
// type, Retry-After and the error message.
type answer struct {
	status                       int
	remaining, retryAfter, error string
}

func answerOf(t *testing.T, resp *http.Response, err error, header string) answer {
	t.Helper()
	if err != nil {
		var re *azcore.ResponseError
		require.ErrorAs(t, err, &re)
		resp = re.RawResponse
	}
	a := answer{status: resp.StatusCode, remaining: resp.Header.Get(header), retryAfter: resp.Header.Get("Retry-After")}
	if err != nil {
		a.error = err.Error()
	}
	return a
}

// read gets the zone's SOA record set (a read).
func read(t *testing.T, c clients) answer {
	t.Helper()
	var resp *http.Response
	_, err := c.records.Get(policy.WithCaptureResponse(context.Background(), &resp), rg, zoneName, armprivatedns.RecordTypeSOA, "@", nil)
	return answerOf(t, resp, err, "x-ms-ratelimit-remaining-subscription-reads")
}

// write replaces the A record set w (a write).
func write(t *testing.T, c clients) answer {
	t.Helper()
	var resp *http.Response
	_, err := c.records.CreateOrUpdate(policy.WithCaptureResponse(context.Background(), &resp), rg, zoneName, armprivatedns.RecordTypeA, "w", aSet("10.0.0.1"), nil)
	return answerOf(t, resp, err, "x-ms-ratelimit-remaining-subscription-writes")
}

// remove deletes the A record set w (a delete).
func remove(t *testing.T, c clients) answer {
	t.Helper()
	var resp *http.Response
	_, err := c.records.Delete(policy.WithCaptureResponse(context.Background(), &resp), rg, zoneName, armprivatedns.RecordTypeA, "w", nil)
	return answerOf(t, resp, err, "x-ms-ratelimit-remaining-subscription-deletes")
}

// burst makes n requests and counts those answered 2xx; remaining are their remaining headers.
func burst(t *testing.T, n int, request func() answer) (passed int, remaining []string) {
	t.Helper()
	for range n {
		a := request()
		if a.status < 300 {
			passed++
		}
		remaining = append(remaining, a.remaining)
	}
	return passed, remaining
}

// countdown is the remaining headers of n admitted requests from a full bucket of size.
func countdown(size, n int) []string {
	var out []string
	for i := 1; i <= n; i++ {
		out = append(out, strconv.Itoa(size-i))
	}
	return out
}

func TestStandIn_ReadBucketHolds250AndRefills25ASecond(t *testing.T) {
	s, clock := startOnClockWithoutZoneLimits(t)
	c := newClients(t, s, ClientSecret)

	passed, remaining := burst(t, 250, func() answer { return read(t, c) })
	assert.Equal(t, 250, passed, "a burst of the bucket's size")
	assert.Equal(t, countdown(250, 250), remaining, "the header counts the principal's tokens down")
	refused := read(t, c)
	assert.Equal(t, http.StatusTooManyRequests, refused.status, "the 251st read")
	assert.Equal(t, "1", refused.retryAfter, "a token comes back in 40 ms: Retry-After rounds up to 1")
	assert.Equal(t, "0", refused.remaining)
	assert.Contains(t, refused.error, "TooManyRequests")
	assert.Contains(t, refused.error, "the principal bucket of client "+ClientID)
	assert.NotContains(t, refused.error, "global bucket", "15 times 250 is far away")

	assert.Equal(t, http.StatusCreated, write(t, c).status, "writes are counted apart from reads")

	clock.advance(time.Second)
	passed, remaining = burst(t, 26, func() answer { return read(t, c) })
	assert.Equal(t, 25, passed, "a second later, 25 more")
	assert.Equal(t, append(countdown(25, 25), "0"), remaining)

	u := s.Usage()
	want := Tally{Admitted: 275, Throttled: 2}
	assert.Equal(t, want, u.Principals[ClientID].Read)
	assert.Equal(t, want, u.Zones[zoneName].Read)
	assert.Equal(t, want, u.Subscriptions[sub].Read)
	assert.Equal(t, Tally{Admitted: 1}, u.Principals[ClientID].Write)
	assert.Equal(t, Tally{Admitted: 276, Throttled: 2}, u.Subscriptions[sub].Total())
	assert.Equal(t, 2, s.Count("throttled"), "Count still counts every 429")
	assert.Equal(t, 277, s.Count("getRecordSet")+s.Count("throttled"), "Count's kinds unchanged: the admitted reads and the throttled ones")

	s.ResetUsage()
	assert.Empty(t, s.Usage().Principals)
	assert.Equal(t, http.StatusTooManyRequests, read(t, c).status, "ResetUsage leaves the buckets as they are")
}

func TestStandIn_WritesAndDeletesHaveBucketsOf200Refilling10ASecond(t *testing.T) {
	s, clock := startOnClockWithoutZoneLimits(t)
	c := newClients(t, s, ClientSecret)

	passed, remaining := burst(t, 200, func() answer { return write(t, c) })
	assert.Equal(t, 200, passed)
	assert.Equal(t, countdown(200, 200), remaining)
	refused := write(t, c)
	assert.Equal(t, http.StatusTooManyRequests, refused.status, "the 201st write")
	assert.Equal(t, "1", refused.retryAfter, "a token comes back in 100 ms")
	assert.Contains(t, refused.error, "Number of 'write' requests")
	assert.Contains(t, refused.error, "the principal bucket of client "+ClientID+" (200 writes, 10 more a second) is empty")

	deleted := remove(t, c)
	assert.Equal(t, http.StatusOK, deleted.status, "deletes have a bucket of their own")
	assert.Equal(t, "199", deleted.remaining)
	assert.Equal(t, "249", read(t, c).remaining, "and reads theirs")

	clock.advance(time.Second)
	passed, _ = burst(t, 11, func() answer { return write(t, c) })
	assert.Equal(t, 10, passed, "a second later, 10 more writes")

	u := s.Usage().Principals[ClientID]
	assert.Equal(t, Tallies{Read: Tally{Admitted: 1}, Write: Tally{Admitted: 210, Throttled: 2}, Delete: Tally{Admitted: 1}}, u)
}

// Sixteen service principals of one subscription: each has a bucket of its own, and fifteen of
// them empty the subscription's global bucket (15 times 250 reads), which then refuses the
// sixteenth although its own bucket is full.
func TestStandIn_PrincipalsHaveBucketsOfTheirOwnAndShareTheGlobalOne(t *testing.T) {
	s, clock := startOnClockWithoutZoneLimits(t)
	principals := make([]clients, 16)
	ids := make([]string, 16)
	for i := range principals {
		ids[i] = fmt.Sprintf("00000000-0000-0000-0000-0000000001%02d", i)
		s.AddServicePrincipal(ids[i], "secret-"+ids[i])
		principals[i] = newClientsAs(t, s, ids[i], "secret-"+ids[i])
	}
	var wg sync.WaitGroup
	passed := make([]int, 15)
	for i := range 15 {
		wg.Go(func() { passed[i], _ = burst(t, 250, func() answer { return read(t, principals[i]) }) })
	}
	wg.Wait()
	for i := range 15 {
		assert.Equal(t, 250, passed[i], "principal %d: a full bucket of its own", i)
	}

	last := principals[15]
	refused := read(t, last)
	assert.Equal(t, http.StatusTooManyRequests, refused.status, "the global bucket is empty")
	assert.Contains(t, refused.error, "the global bucket of the subscription, shared by all principals (3750 reads, 375 more a second)")
	assert.NotContains(t, refused.error, "principal bucket", "its own bucket is full")
	assert.Equal(t, "1", refused.retryAfter)
	both := read(t, principals[0])
	assert.Contains(t, both.error, "principal bucket", "a spent principal: both buckets refuse")
	assert.Contains(t, both.error, "global bucket")

	clock.advance(time.Second) // 375 global tokens back, 25 for each principal
	n, remaining := burst(t, 251, func() answer { return read(t, last) })
	assert.Equal(t, 250, n, "its own bucket's 250, from the global bucket's 375")
	refused = read(t, last)
	assert.Equal(t, "0", remaining[250])
	assert.Contains(t, refused.error, "principal bucket")
	assert.NotContains(t, refused.error, "global bucket", "125 global tokens left")

	u := s.Usage()
	assert.Equal(t, Tally{Admitted: 250, Throttled: 1}, u.Principals[ids[0]].Read)
	assert.Equal(t, Tally{Admitted: 250}, u.Principals[ids[14]].Read)
	assert.Equal(t, Tally{Admitted: 250, Throttled: 3}, u.Principals[ids[15]].Read)
	assert.Equal(t, Tally{Admitted: 4000, Throttled: 4}, u.Subscriptions[sub].Read)
}

// Microsoft.Network's window counts every principal's reads of the subscription: five principals
// reading as fast as their buckets allow make 10,000 reads in 71 s, and the next is refused until
// 5 minutes after the first ones.
func TestStandIn_ProviderWindowRefusesThe10001stReadIn5Minutes(t *testing.T) {
	s, clock := startOnClockWithoutZoneLimits(t)
	principals := make([]clients, 5)
	for i := range principals {
		id := fmt.Sprintf("00000000-0000-0000-0000-0000000002%02d", i)
		s.AddServicePrincipal(id, "secret")
		principals[i] = newClientsAs(t, s, id, "secret")
	}
	// every principal reads n at once; the count of admitted reads
	round := func(n int) int {
		var wg sync.WaitGroup
		passed := make([]int, len(principals))
		for i, c := range principals {
			wg.Go(func() { passed[i], _ = burst(t, n, func() answer { return read(t, c) }) })
		}
		wg.Wait()
		total := 0
		for _, p := range passed {
			total += p
		}
		return total
	}
	admitted := round(250)
	for range 70 {
		clock.advance(time.Second)
		admitted += round(25)
	}
	require.Equal(t, 10000, admitted, "10,000 reads in 70 s, within every bucket")

	clock.advance(time.Second) // 25 tokens in each principal's bucket again
	refused := read(t, principals[0])
	assert.Equal(t, http.StatusTooManyRequests, refused.status, "the 10,001st read within 5 minutes")
	assert.Contains(t, refused.error, "the Microsoft.Network provider window (10000 reads in 5m0s) is full")
	assert.NotContains(t, refused.error, "bucket")
	assert.Equal(t, "229", refused.retryAfter, "until the first 1,250 reads are 5 minutes old: 300 s - 71 s")
	assert.Equal(t, http.StatusCreated, write(t, principals[0]).status, "writes have a window of their own")

	clock.advance(228 * time.Second)
	assert.Equal(t, "1", read(t, principals[0]).retryAfter)
	clock.advance(time.Second)
	assert.Equal(t, http.StatusOK, read(t, principals[0]).status, "5 minutes after the first reads")
	assert.Equal(t, Tally{Admitted: 10001, Throttled: 2}, s.Usage().Subscriptions[sub].Read)
}

func TestStandIn_ProviderWindowCountsWritesAndDeletesTogether(t *testing.T) {
	s, clock := startOnClock(t)
	s.SetLimits(Limits{Provider: Window{Duration: 5 * time.Minute, Writes: 3}})
	c := newClients(t, s, ClientSecret)
	first := write(t, c)
	assert.Equal(t, http.StatusCreated, first.status)
	assert.Empty(t, first.remaining, "no bucket: no remaining header")
	clock.advance(time.Minute + 500*time.Millisecond)
	assert.Equal(t, http.StatusOK, write(t, c).status)
	assert.Equal(t, http.StatusOK, remove(t, c).status)
	refused := remove(t, c)
	assert.Equal(t, http.StatusTooManyRequests, refused.status, "the fourth write or delete")
	assert.Contains(t, refused.error, "(3 writes and deletes in 5m0s) is full")
	assert.Equal(t, "240", refused.retryAfter, "the first write is 5 minutes old in 239.5 s, rounded up")
	passed, _ := burst(t, 300, func() answer { return read(t, c) })
	assert.Equal(t, 300, passed, "reads unlimited")
}

func TestStandIn_NoLimits(t *testing.T) {
	s, _ := startOnClock(t)
	s.SetLimits(Limits{})
	c := newClients(t, s, ClientSecret)
	passed, remaining := burst(t, 300, func() answer { return read(t, c) })
	assert.Equal(t, 300, passed)
	assert.Equal(t, make([]string, 300), remaining, "no bucket: no remaining header")
	passed, _ = burst(t, 250, func() answer { return write(t, c) })
	assert.Equal(t, 250, passed)
	assert.Zero(t, s.Count("throttled"))

	s.SetLimits(resourceManagerLimits)
	passed, _ = burst(t, 251, func() answer { return read(t, c) })
	assert.Equal(t, 250, passed, "SetLimits starts with full buckets")
}

// Injected throttling answers before the limits, and takes no token.
func TestStandIn_InjectedThrottlingTakesNoTokens(t *testing.T) {
	s, _ := startOnClock(t)
	c := newClients(t, s, ClientSecret)
	s.Throttle(2, 30*time.Second)
	for range 2 {
		a := read(t, c)
		assert.Equal(t, http.StatusTooManyRequests, a.status)
		assert.Equal(t, "30", a.retryAfter)
		assert.Equal(t, "0", a.remaining)
	}
	assert.Equal(t, "249", read(t, c).remaining)
	assert.Equal(t, Tally{Admitted: 1, Throttled: 2}, s.Usage().Principals[ClientID].Read)
}

// The token endpoint is not Resource Manager: a principal whose reads are spent still gets tokens.
func TestStandIn_TokensAreNeverThrottled(t *testing.T) {
	s, _ := startOnClockWithoutZoneLimits(t)
	c := newClients(t, s, ClientSecret)
	_, err := c.zones.NewListByResourceGroupPager(rg, nil).NextPage(context.Background())
	require.NoError(t, err)
	passed, _ := burst(t, 250, func() answer { return read(t, c) })
	require.Equal(t, 249, passed, "the zone listing took a read")
	assert.Equal(t, Tally{Admitted: 1}, s.Usage().Zones[""].Read, "a request naming no zone")

	form := url.Values{"grant_type": {"client_credentials"}, "client_id": {ClientID}, "client_secret": {ClientSecret}, "scope": {Audience + ".default"}}
	tokens := 0
	for range 300 {
		resp, err := s.HTTPClient().Post(s.URL+"adfs/oauth2/token", "application/x-www-form-urlencoded", strings.NewReader(form.Encode()))
		require.NoError(t, err)
		_ = resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			tokens++
		}
	}
	assert.Equal(t, 300, tokens)
	refused := read(t, newClients(t, s, ClientSecret))
	assert.Equal(t, http.StatusTooManyRequests, refused.status, "a new client gets its token, and its read is refused")
	assert.Equal(t, 302, s.Count("token"))
	assert.Equal(t, Tallies{Read: Tally{Admitted: 250, Throttled: 2}}, s.Usage().Principals[ClientID], "token requests are not in the usage")
}

// zoneLimitCase is one of Private DNS's per-zone limits: prepare sets the zone up outside the
// limits (as the portal would), request makes one request of the operation, and other one of
// another operation, counted apart.
type zoneLimitCase struct {
	name         string
	limit        int
	prepare      func(t *testing.T, s *Server)
	request      func(t *testing.T, c clients, i int) answer
	other        func(t *testing.T, c clients) answer
	operationOf  func(ZoneTallies) Tally
	limitMessage string
}

// zoneLimitCases are the documented per-zone limits, a case each.
func zoneLimitCases() []zoneLimitCase {
	ctx := context.Background()
	put := func(t *testing.T, c clients, name string) answer {
		var resp *http.Response
		_, err := c.records.CreateOrUpdate(policy.WithCaptureResponse(ctx, &resp), rg, zoneName, armprivatedns.RecordTypeA, name, aSet("10.0.0.1"), nil)
		return answerOf(t, resp, err, "x-ms-ratelimit-remaining-subscription-writes")
	}
	del := func(t *testing.T, c clients, name string) answer {
		var resp *http.Response
		_, err := c.records.Delete(policy.WithCaptureResponse(ctx, &resp), rg, zoneName, armprivatedns.RecordTypeA, name, nil)
		return answerOf(t, resp, err, "x-ms-ratelimit-remaining-subscription-deletes")
	}
	var pager *runtime.Pager[armprivatedns.RecordSetsClientListResponse]
	// listPage is the next page of a listing of the zone at one record set a page (4 record sets:
	// a listing is 4 pages), a new listing once one ends: each page is one list request.
	listPage := func(t *testing.T, c clients) answer {
		if pager == nil || !pager.More() {
			pager = c.records.NewListPager(rg, zoneName, &armprivatedns.RecordSetsClientListOptions{Top: ptr.To[int32](1)})
		}
		var resp *http.Response
		_, err := pager.NextPage(policy.WithCaptureResponse(ctx, &resp))
		return answerOf(t, resp, err, "x-ms-ratelimit-remaining-subscription-reads")
	}
	prepareRecords := func(prefix string, n int) func(t *testing.T, s *Server) {
		return func(t *testing.T, s *Server) {
			for i := range n {
				require.NoError(t, s.SetA(sub, rg, zoneName, fmt.Sprintf("%s%d", prefix, i), "10.0.0.1"))
			}
		}
	}
	return []zoneLimitCase{
		{name: "create", limit: 60, prepare: prepareRecords("existing", 1),
			request:      func(t *testing.T, c clients, i int) answer { return put(t, c, fmt.Sprintf("new%d", i)) },
			other:        func(t *testing.T, c clients) answer { return put(t, c, "existing0") },
			operationOf:  func(z ZoneTallies) Tally { return z.Create },
			limitMessage: "the Private DNS zone 'example.internal' limit of 60 record set creates a minute (Private DNS resource record operations per zone) is reached"},
		{name: "update", limit: 60, prepare: prepareRecords("existing", 1),
			request:      func(t *testing.T, c clients, _ int) answer { return put(t, c, "existing0") },
			other:        func(t *testing.T, c clients) answer { return put(t, c, "new") },
			operationOf:  func(z ZoneTallies) Tally { return z.Update },
			limitMessage: "limit of 60 record set updates a minute"},
		{name: "delete", limit: 60, prepare: prepareRecords("existing", 200),
			request:      func(t *testing.T, c clients, i int) answer { return del(t, c, fmt.Sprintf("existing%d", i)) },
			other:        func(t *testing.T, c clients) answer { return put(t, c, "existing199") },
			operationOf:  func(z ZoneTallies) Tally { return z.Delete },
			limitMessage: "limit of 60 record set deletes a minute"},
		{name: "get", limit: 200, prepare: prepareRecords("existing", 3),
			request:      func(t *testing.T, c clients, _ int) answer { return read(t, c) },
			other:        func(t *testing.T, c clients) answer { return listPage(t, c) },
			operationOf:  func(z ZoneTallies) Tally { return z.Get },
			limitMessage: "limit of 200 record set gets a minute"},
		{name: "list: each page of a listing is one request", limit: 100, prepare: prepareRecords("existing", 3),
			request:      func(t *testing.T, c clients, _ int) answer { return listPage(t, c) },
			other:        func(t *testing.T, c clients) answer { return read(t, c) },
			operationOf:  func(z ZoneTallies) Tally { return z.List },
			limitMessage: "limit of 100 record set lists a minute"},
	}
}

// Each of Private DNS's per-zone limits admits exactly its number of requests in a minute, refuses
// the next with 429 and a Retry-After until the oldest of them is a minute old, leaves the other
// operations and the other zones alone, and admits again as the window slides.
func TestStandIn_ZoneLimitsAdmitTheirNumberInAnyMinute(t *testing.T) {
	for i := range zoneLimitCases() {
		tc := zoneLimitCases()[i] // cases of their own: the list case keeps its listing between requests
		t.Run(tc.name, func(t *testing.T) {
			s, clock := startOnClock(t)
			tc.prepare(t, s)
			c := newClients(t, s, ClientSecret)

			// the first request at 0 s, the others at 20 s: the window slides in two steps
			require.Less(t, tc.request(t, c, 0).status, 300)
			clock.advance(20 * time.Second)
			for i := 1; i < tc.limit; i++ {
				a := tc.request(t, c, i)
				require.Less(t, a.status, 300, "request %d of %d in the minute: %s", i+1, tc.limit, a.error)
			}
			clock.advance(10 * time.Second)
			refused := tc.request(t, c, tc.limit)
			assert.Equal(t, http.StatusTooManyRequests, refused.status, "request %d in a minute", tc.limit+1)
			assert.Equal(t, "30", refused.retryAfter, "until the first request is a minute old")
			assert.Contains(t, refused.error, "TooManyRequests")
			assert.Contains(t, refused.error, tc.limitMessage)
			assert.Less(t, tc.other(t, c).status, 300, "another operation has a limit of its own")

			clock.advance(29 * time.Second)
			assert.Equal(t, "1", tc.request(t, c, tc.limit).retryAfter, "a second before the first request leaves the window")
			clock.advance(time.Second)
			assert.Less(t, tc.request(t, c, tc.limit).status, 300, "the first request left the window: one more")
			again := tc.request(t, c, tc.limit+1)
			assert.Equal(t, http.StatusTooManyRequests, again.status)
			assert.Equal(t, "20", again.retryAfter, "until the requests made at 20 s are a minute old")
			clock.advance(20 * time.Second)
			for i := range tc.limit - 1 {
				a := tc.request(t, c, tc.limit+1+i)
				require.Less(t, a.status, 300, "request %d after the window slid: %s", i+1, a.error)
			}

			usage := s.Usage().ZoneOperations[ZoneIDOf(sub, rg, zoneName)]
			assert.Equal(t, Tally{Admitted: 2 * tc.limit, Throttled: 3}, tc.operationOf(usage))
			assert.Equal(t, 3, usage.ZoneLimited, "the zone's throttled requests")
			assert.Equal(t, 3, s.Count("throttled"))
		})
	}
}

// The per-zone limits count each zone apart, whoever sends the requests: two principals share a
// zone's 200 gets, and another zone has 200 of its own.
func TestStandIn_ZoneLimitsArePerZoneForEveryPrincipal(t *testing.T) {
	s, _ := startOnClock(t)
	s.CreateZone(sub, rg, "other.internal")
	s.AddServicePrincipal("00000000-0000-0000-0000-000000000301", "secret")
	first, second := newClients(t, s, ClientSecret), newClientsAs(t, s, "00000000-0000-0000-0000-000000000301", "secret")
	passed, _ := burst(t, 100, func() answer { return read(t, first) })
	require.Equal(t, 100, passed)
	passed, _ = burst(t, 101, func() answer { return read(t, second) })
	assert.Equal(t, 100, passed, "the second principal has the zone's other 100 gets")
	_, err := second.records.Get(context.Background(), rg, "other.internal", armprivatedns.RecordTypeSOA, "@", nil)
	assert.NoError(t, err, "another zone has its own limit")
	usage := s.Usage()
	assert.Equal(t, Tally{Admitted: 200, Throttled: 1}, usage.ZoneOperations[ZoneIDOf(sub, rg, zoneName)].Get)
	assert.Equal(t, Tally{Admitted: 1}, usage.ZoneOperations[ZoneIDOf(sub, rg, "other.internal")].Get)
	assert.Zero(t, usage.ZoneOperations[ZoneIDOf(sub, rg, "other.internal")].ZoneLimited)
}

// Zero is no limit, as for the other rules.
func TestStandIn_ZoneLimitZeroIsNoLimit(t *testing.T) {
	s, _ := startOnClock(t)
	limits := DocumentedLimits
	limits.Zone.Gets = 0
	s.SetLimits(limits)
	c := newClients(t, s, ClientSecret)
	passed, _ := burst(t, 250, func() answer { return read(t, c) })
	assert.Equal(t, 250, passed, "only the principal's read bucket counts")
	assert.Zero(t, s.Usage().ZoneOperations[ZoneIDOf(sub, rg, zoneName)].ZoneLimited)
}
