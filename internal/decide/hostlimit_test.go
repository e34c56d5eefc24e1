package decide

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
)

var created0 = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// candidate is a route in namespace "ns" created at second s, with a hostname of host.
func candidate(name string, s int, host string) HostCandidate {
	return HostCandidate{Namespace: "ns", Name: name, Created: metav1.NewTime(created0.Add(time.Duration(s) * time.Second)), Hostname: host}
}

// budgetFor is the budget that holds exactly the given candidates.
func budgetFor(cs ...HostCandidate) int { return EstimatedIstioGatewayBytes(cs...) }

func TestAdmitHosts_OldestRoutesFillTheBudget(t *testing.T) {
	a, b, c := candidate("a", 1, "a.example.com"), candidate("b", 2, "b.example.com"), candidate("c", 3, "c.example.com")
	short := candidate("d", 4, "d.io")
	tie1, tie2 := candidate("x", 5, "x.example.com"), candidate("y", 5, "y.example.com")
	tests := []struct {
		name       string
		candidates []HostCandidate
		budget     int
		wantHosts  []string
		wantLimit  *routingv1alpha1.GatewayHostLimit
	}{
		{"every host fits", []HostCandidate{c, a, b}, budgetFor(a, b, c), []string{"a.example.com", "b.example.com", "c.example.com"}, nil},
		{"no budget admits everything", []HostCandidate{c, a, b}, 0, []string{"a.example.com", "b.example.com", "c.example.com"}, nil},
		{"the youngest is left off", []HostCandidate{c, b, a}, budgetFor(a, b, c) - 1, []string{"a.example.com", "b.example.com"},
			&routingv1alpha1.GatewayHostLimit{BudgetBytes: int64(budgetFor(a, b, c) - 1), Admitted: 2, LeftOff: 1, FirstLeftOff: "ns/c", FirstLeftOffCreated: c.Created}},
		{"a younger short host that would fit is left off too: the cutoff is one point", []HostCandidate{a, b, c, short}, budgetFor(a, b, short), []string{"a.example.com", "b.example.com"},
			&routingv1alpha1.GatewayHostLimit{BudgetBytes: int64(budgetFor(a, b, short)), Admitted: 2, LeftOff: 2, FirstLeftOff: "ns/c", FirstLeftOffCreated: c.Created}},
		{"routes created in the same second are ordered by namespace/name", []HostCandidate{tie2, tie1}, budgetFor(tie1), []string{"x.example.com"},
			&routingv1alpha1.GatewayHostLimit{BudgetBytes: int64(budgetFor(tie1)), Admitted: 1, LeftOff: 1, FirstLeftOff: "ns/y", FirstLeftOffCreated: tie2.Created}},
		{"a host named by two routes is listed and counted once", []HostCandidate{a, candidate("a2", 2, "a.example.com"), b}, budgetFor(a, b), []string{"a.example.com", "b.example.com"}, nil},
		{"the budget exactly", []HostCandidate{a, b}, EstimatedIstioGatewayBytes(a, b), []string{"a.example.com", "b.example.com"}, nil},
		{"nothing fits", []HostCandidate{a}, 10, nil,
			&routingv1alpha1.GatewayHostLimit{BudgetBytes: 10, Admitted: 0, LeftOff: 1, FirstLeftOff: "ns/a", FirstLeftOffCreated: a.Created}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := AdmitHosts(tt.candidates, tt.budget)
			assert.Equal(t, tt.wantHosts, got.Hosts)
			assert.Equal(t, tt.wantLimit, got.Limit)
			if tt.budget > 0 {
				assert.LessOrEqual(t, got.Bytes, max(tt.budget, EstimatedIstioGatewayBytes()), "estimated size of the admitted hosts")
			}
		})
	}
}

func TestLeftOff_TheCutoffRouteAndEveryYoungerOne(t *testing.T) {
	limit := &routingv1alpha1.GatewayHostLimit{FirstLeftOff: "ns/m", FirstLeftOffCreated: metav1.NewTime(created0.Add(10 * time.Second))}
	route := func(ns, name string, s int) *routingv1alpha1.ServiceRoute {
		return &routingv1alpha1.ServiceRoute{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, CreationTimestamp: metav1.NewTime(created0.Add(time.Duration(s) * time.Second))}}
	}
	tests := []struct {
		name  string
		limit *routingv1alpha1.GatewayHostLimit
		route *routingv1alpha1.ServiceRoute
		want  bool
	}{
		{"no limit", nil, route("ns", "z", 99), false},
		{"older", limit, route("ns", "z", 9), false},
		{"the first left off", limit, route("ns", "m", 10), true},
		{"same second, name before", limit, route("ns", "a", 10), false},
		{"same second, name after", limit, route("ns", "n", 10), true},
		{"same second, namespace after", limit, route("nt", "a", 10), true},
		{"younger", limit, route("aa", "a", 11), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, LeftOff(tt.limit, tt.route))
		})
	}
}

func publishing(name string, s int) *routingv1alpha1.ServiceRoute {
	r := serviceRoute()
	r.Name, r.CreationTimestamp = name, metav1.NewTime(created0.Add(time.Duration(s)*time.Second))
	r.Spec.ServiceName = name
	r.Status = routingv1alpha1.ServiceRouteStatus{Hostname: name + "-ns-d-dev-myapp.example.com", Endpoints: []routingv1alpha1.ManagedEndpoint{{Name: name + "-external-dns-weu"}},
		Conditions: []metav1.Condition{{Type: "Ready", Status: "True", Reason: routingv1alpha1.ReasonReconciliationSucceeded}}}
	return r
}

// withRouteDecision applies the route's own decision to its status, as its reconcile would.
func withRouteDecision(r *routingv1alpha1.ServiceRoute, p RoutePlan) *routingv1alpha1.ServiceRoute {
	r = r.DeepCopy()
	r.Status.Hostname = p.Hostname
	if len(p.Endpoints) == 0 {
		r.Status.Endpoints = nil
	}
	r.Status.Conditions = []metav1.Condition{{Type: "Ready", Reason: p.Reason}}
	return r
}

func TestHostCandidateOf_PublishingOrWaitingForRoom(t *testing.T) {
	waiting := publishing("w", 1)
	waiting.Status.Endpoints = nil
	waiting.Status.Conditions[0].Reason = routingv1alpha1.ReasonGatewayHostLimit
	otherReason := waiting.DeepCopy()
	otherReason.Status.Conditions[0].Reason = routingv1alpha1.ReasonDNSPolicyInactive
	deleting := publishing("d", 1)
	deleting.DeletionTimestamp = &metav1.Time{Time: created0}
	for _, tt := range []struct {
		name  string
		route *routingv1alpha1.ServiceRoute
		want  bool
	}{
		{"publishing", publishing("p", 1), true},
		{"left off for lack of room", waiting, true},
		{"withdrawn for another reason", otherReason, false},
		{"being deleted", deleting, false},
		{"new, no status yet", serviceRoute(), false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, got := HostCandidateOf(tt.route)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestHostInputChanged_OnlyWhatTheGatewayWrites(t *testing.T) {
	p := publishing("p", 1)
	messageOnly := p.DeepCopy()
	messageOnly.Status.Conditions[0].Message = "something else"
	renamed := p.DeepCopy()
	renamed.Status.Hostname = "other.example.com"
	waiting := p.DeepCopy()
	waiting.Status.Endpoints = nil
	waiting.Status.Conditions[0].Reason = routingv1alpha1.ReasonGatewayHostLimit
	withdrawn := waiting.DeepCopy()
	withdrawn.Status.Conditions[0].Reason = routingv1alpha1.ReasonDNSPolicyInactive
	moved := p.DeepCopy()
	moved.Spec.GatewayName = "other-gateway"
	for _, tt := range []struct {
		name     string
		old, new *routingv1alpha1.ServiceRoute
		want     bool
	}{
		{"a new route without status", nil, serviceRoute(), false},
		{"a publishing route deleted", p, nil, true},
		{"a route without status deleted", serviceRoute(), nil, false},
		{"starts publishing", serviceRoute(), p, true},
		{"a message changes", p, messageOnly, false},
		{"the hostname changes", p, renamed, true},
		{"left off: still a candidate with the same host", p, waiting, false},
		{"withdrawn", waiting, withdrawn, true},
		{"moved to another Gateway", p, moved, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, HostInputChanged(tt.old, tt.new))
		})
	}
}

func TestRoute_LeftOffByTheGatewayHostLimitPublishesNothing(t *testing.T) {
	in := RouteInputs{Route: serviceRoute(), Identity: identity(), Configuration: configuration("weu"),
		Policy: dnsPolicy("myapp-dns", created0, "Active", ""), Gateway: gateway("cert")}
	in.Route.CreationTimestamp = metav1.NewTime(created0.Add(time.Minute))

	in.Gateway.Status.HostLimit = &routingv1alpha1.GatewayHostLimit{BudgetBytes: 1000, Admitted: 10, LeftOff: 3, FirstLeftOff: "myapp/a-route", FirstLeftOffCreated: in.Route.CreationTimestamp}
	got := Route(in)
	assert.Equal(t, "Pending", got.Phase)
	assert.Equal(t, routingv1alpha1.ReasonGatewayHostLimit, got.Reason)
	assert.True(t, got.Sync, "a definite answer: the records go")
	assert.Empty(t, got.Endpoints)
	assert.Equal(t, "api-ns-d-dev-myapp.example.com", got.Hostname, "the hostname stays in status: the route remains a candidate")
	assert.Contains(t, got.Message, "istio-system/default-gateway")

	in.Gateway.Status.HostLimit.FirstLeftOff = "myapp/b-route" // after api-route in the same second
	got = Route(in)
	assert.Equal(t, routingv1alpha1.ReasonReconciliationSucceeded, got.Reason, "a route before the cutoff publishes")
	assert.Len(t, got.Endpoints, 1)
}

// TestHostLimitMessages_NameTheBackendInUse: a platform admin reading a full Gateway's condition,
// or an application team reading its route's Ready message, is told what the budget measures for
// the Gateway's backend, not an Istio Gateway the GatewayAPI backend never writes.
func TestHostLimitMessages_NameTheBackendInUse(t *testing.T) {
	limit := &routingv1alpha1.GatewayHostLimit{BudgetBytes: 1000, Admitted: 10, LeftOff: 3, FirstLeftOff: "myapp/a-route", FirstLeftOffCreated: metav1.NewTime(created0)}
	for _, tt := range []struct {
		backend routingv1alpha1.GatewayBackend
		want    string
	}{
		{"", "the size of the one Istio Gateway listing every host"},
		{routingv1alpha1.BackendIstioGateway, "the size of the one Istio Gateway listing every host"},
		{routingv1alpha1.BackendGatewayAPI, "counted as for an Istio Gateway: both backends admit the same routes"},
	} {
		t.Run(string(tt.backend), func(t *testing.T) {
			gw := gateway("cert")
			gw.Spec.Backend, gw.Generation, gw.Status.HostLimit = tt.backend, 7, limit
			c := HostLimitCondition(gw, limit)
			require.NotNil(t, c)
			assert.Equal(t, int64(7), c.ObservedGeneration)
			assert.Contains(t, c.Message, "(1000 bytes, "+tt.want+"): 10 route(s) admitted, 3 left off from myapp/a-route")
			assert.Contains(t, hostLimitMessage(gw), "the host budget of Gateway istio-system/default-gateway is full (1000 bytes, "+tt.want+")")
		})
	}
	assert.Nil(t, HostLimitCondition(gateway("cert"), nil), "every route fits: no condition")
}

// TestHostLimit_LeftOffRoutesKeepTheCutoffWhereItIs plays the Gateway and its routes against each
// other: the routes left off withdraw their records, and the next admission must leave the same
// routes off instead of admitting them again (which would make them publish, overflow, withdraw...).
func TestHostLimit_LeftOffRoutesKeepTheCutoffWhereItIs(t *testing.T) {
	var routes []*routingv1alpha1.ServiceRoute
	for i := range 10 {
		routes = append(routes, publishing(fmt.Sprintf("route-%02d", i), i))
	}
	gw := gateway("cert")
	var all []HostCandidate
	for _, r := range routes {
		c, ok := HostCandidateOf(r)
		require.True(t, ok)
		all = append(all, c)
	}
	budget := budgetFor(all[:7]...)
	var previous *routingv1alpha1.GatewayHostLimit
	for round := range 3 {
		var candidates []HostCandidate
		for _, r := range routes {
			if c, ok := HostCandidateOf(r); ok {
				candidates = append(candidates, c)
			}
		}
		admission := AdmitHosts(candidates, budget)
		require.NotNil(t, admission.Limit)
		assert.Equal(t, "myapp/route-07", admission.Limit.FirstLeftOff, "round %d", round)
		assert.Equal(t, int32(3), admission.Limit.LeftOff, "round %d", round)
		if previous != nil {
			assert.Equal(t, previous, admission.Limit, "the cutoff does not move once the routes left off withdrew (round %d)", round)
		}
		previous = admission.Limit
		gw.Status.HostLimit = admission.Limit
		for i, r := range routes {
			p := Route(RouteInputs{Route: r, Identity: identity(), Configuration: configuration("weu"), Policy: dnsPolicy("p", created0, "Active", ""), Gateway: gw})
			routes[i] = withRouteDecision(r, p)
			assert.Equal(t, i >= 7, p.Reason == routingv1alpha1.ReasonGatewayHostLimit, "route %d", i)
		}
	}
}

func TestIstioHostBudget_EachServerListingEveryHostTakesItsShare(t *testing.T) {
	gw := func(credential string, plain routingv1alpha1.PlainHTTP) *routingv1alpha1.Gateway {
		return &routingv1alpha1.Gateway{Spec: routingv1alpha1.GatewaySpec{CredentialName: credential, PlainHTTP: plain}}
	}
	tests := []struct {
		name      string
		gw        *routingv1alpha1.Gateway
		lists     int
		budget    int
		wantShare int
	}{
		{"HTTPS only", gw("cert", ""), 1, 1000, 1000},
		{"HTTPS and plain HTTP", gw("cert", routingv1alpha1.PlainHTTPServe), 2, 1000, 500},
		{"HTTPS and a redirect", gw("cert", routingv1alpha1.PlainHTTPRedirectToHTTPS), 2, 1000, 500},
		{"plain HTTP only", gw("", routingv1alpha1.PlainHTTPServe), 1, 1000, 1000},
		{"nothing served", gw("", routingv1alpha1.PlainHTTPRedirectToHTTPS), 0, 1000, 1000},
		{"no limit stays no limit", gw("cert", routingv1alpha1.PlainHTTPServe), 2, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.lists, IstioHostLists(tt.gw))
			assert.Equal(t, tt.wantShare, IstioHostBudget(tt.gw, tt.budget))
		})
	}
}

func TestGatewayHosts_CandidatesInTheGatewaysFormWithinItsShare(t *testing.T) {
	older, younger := publishing("older", 1), publishing("younger", 2)
	withdrawn := publishing("withdrawn", 0)
	withdrawn.Status.Endpoints = nil
	bare := gateway("cert")
	bare.Spec.IstioHostFormat = routingv1alpha1.IstioHostBare
	serve := gateway("cert")
	serve.Spec.PlainHTTP = routingv1alpha1.PlainHTTPServe // two host lists share the budget
	oneHost := EstimatedIstioGatewayBytes(HostCandidate{Namespace: "myapp", Hostname: "myapp/" + older.Status.Hostname})
	for _, tt := range []struct {
		name      string
		gw        *routingv1alpha1.Gateway
		budget    int
		wantHosts []string
		leftOff   int32
	}{
		{"namespace-scoped hosts of the publishing routes", gateway("cert"), 0,
			[]string{"myapp/" + older.Status.Hostname, "myapp/" + younger.Status.Hostname}, 0},
		{"bare hosts", bare, 0, []string{older.Status.Hostname, younger.Status.Hostname}, 0},
		{"room for the oldest only", gateway("cert"), oneHost, []string{"myapp/" + older.Status.Hostname}, 1},
		{"each host list takes its share of the budget", serve, 2 * oneHost, []string{"myapp/" + older.Status.Hostname}, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := GatewayHosts(tt.gw, []*routingv1alpha1.ServiceRoute{younger, withdrawn, older}, tt.budget)
			assert.Equal(t, tt.wantHosts, got.Hosts)
			if tt.leftOff == 0 {
				assert.Nil(t, got.Limit)
			} else {
				require.NotNil(t, got.Limit)
				assert.Equal(t, tt.leftOff, got.Limit.LeftOff)
				assert.Equal(t, "myapp/younger", got.Limit.FirstLeftOff)
			}
		})
	}
}
