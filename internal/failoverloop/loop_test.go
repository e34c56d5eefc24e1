package failoverloop

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/event"
	externaldnsv1alpha1 "sigs.k8s.io/external-dns/apis/v1alpha1"
	"sigs.k8s.io/external-dns/endpoint"

	clusterv1alpha1 "github.com/service-router/service-router-operator/apis/cluster/v1alpha1"
	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
	"github.com/service-router/service-router-operator/internal/budget"
	"github.com/service-router/service-router-operator/internal/decide"
	"github.com/service-router/service-router-operator/internal/failover"
	"github.com/service-router/service-router-operator/internal/naming"
	operatorscheme "github.com/service-router/service-router-operator/internal/scheme"
	"github.com/service-router/service-router-operator/internal/verify"
)

// A new leader says nothing of the regions until its first round has judged them, so that the
// status keeps what an earlier leader wrote; then the status says the machine's view: each region's
// judgement, and the names taken from it by zone, each once, intermediates aside. Without zones
// with failover settings it says, once, that there is nothing to report.
func TestFailover_RegionsSayTheMachinesView(t *testing.T) {
	f := newLoop(nil, nil, nil, nil)
	_, known := f.Regions()
	assert.False(t, known, "before the first round")

	since := time.Unix(1000, 0)
	f.publish(true, failover.View{Judged: true, Regions: map[string]failover.RegionView{
		"weu": {Judgement: failover.Judgement{State: failover.Lost, Reason: "HeartbeatStale"}, Since: since}},
		Held: []failover.Pass{{Controller: "external-dns-weu", Hostname: "a.example.com", Region: "weu"}, {Controller: "external-dns-weu", Hostname: "b.example.com", Region: "weu"},
			{Controller: "external-dns-weu", Hostname: naming.IntermediateName("internal", "myapp", "weu", "example.com"), Region: "weu"}}})
	regions, known := f.Regions()
	assert.True(t, known)
	assert.Equal(t, []clusterv1alpha1.RegionFailoverStatus{{Region: "weu", State: "Lost", Reason: "HeartbeatStale", Since: &metav1.Time{Time: since},
		Taken: []clusterv1alpha1.ZoneTakeover{{Controller: "external-dns-weu", Names: 2}}}}, regions)

	identity := &clusterv1alpha1.ClusterIdentity{ObjectMeta: metav1.ObjectMeta{Name: clusterv1alpha1.ClusterIdentityName},
		Spec: clusterv1alpha1.ClusterIdentitySpec{Cluster: "aks02", Region: "neu", Domain: "example.com"}}
	cfg := &clusterv1alpha1.DNSConfiguration{ObjectMeta: metav1.ObjectMeta{Name: clusterv1alpha1.DNSConfigurationName}}
	g := newLoop(fakeClient(identity, cfg), nil, nil, nil)
	g.round(t.Context())
	regions, known = g.Regions()
	assert.True(t, known, "no zone has failover settings: a definite answer")
	assert.Empty(t, regions)
	select {
	case <-g.changes:
	default:
		t.Error("forgetting must wake the DNSConfiguration reconcile once, to clear an earlier leader's status")
	}
	g.round(t.Context())
	select {
	case <-g.changes:
		t.Error("forgetting again changes nothing")
	default:
	}
}

// After a pass, the loop marks the DNSEndpoint that publishes the name (when, and from which
// region a takeover took it), so that an ExternalDNS run with --events synchronises within seconds
// and a later leader can count the takeover; a mark of "" removes one; a DNSEndpoint of that name
// that is not the operator's is left as it is, and a missing one is no error.
func TestFailover_MarkChangesOnlyTheOperatorsDNSEndpoint(t *testing.T) {
	owned := &externaldnsv1alpha1.DNSEndpoint{ObjectMeta: metav1.ObjectMeta{Namespace: "myapp", Name: "api-route-external-dns-weu",
		Labels: map[string]string{naming.LabelManagedBy: naming.ManagedByValue}, Annotations: map[string]string{"team": "kept"}}}
	foreign := &externaldnsv1alpha1.DNSEndpoint{ObjectMeta: metav1.ObjectMeta{Namespace: "other", Name: "api-route-external-dns-weu"}}
	c := fakeClient(owned, foreign)
	f := newLoop(c, nil, nil, nil)
	get := func(ns string) *externaldnsv1alpha1.DNSEndpoint {
		ep := &externaldnsv1alpha1.DNSEndpoint{}
		require.NoError(t, c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "api-route-external-dns-weu"}, ep))
		return ep
	}
	before := get("myapp").ResourceVersion
	taken := map[string]string{naming.AnnotationOwnershipPassed: "2026-11-27T02:00:00Z", naming.AnnotationTakenFrom: "weu"}

	f.mark(t.Context(), "myapp", "api-route-external-dns-weu", taken)
	f.mark(t.Context(), "other", "api-route-external-dns-weu", taken)
	f.mark(t.Context(), "gone", "api-route-external-dns-weu", taken)

	got := get("myapp")
	assert.NotEqual(t, before, got.ResourceVersion, "an update: what ExternalDNS's informer reacts to")
	assert.Equal(t, map[string]string{"team": "kept", naming.AnnotationOwnershipPassed: "2026-11-27T02:00:00Z", naming.AnnotationTakenFrom: "weu"}, got.Annotations)
	assert.Empty(t, get("other").Annotations, "not the operator's: untouched")

	marked := got.ResourceVersion
	f.mark(t.Context(), "myapp", "api-route-external-dns-weu", taken)
	assert.Equal(t, marked, get("myapp").ResourceVersion, "marked already: no write")
	f.mark(t.Context(), "myapp", "api-route-external-dns-weu", map[string]string{naming.AnnotationTakenFrom: ""})
	assert.Equal(t, map[string]string{"team": "kept", naming.AnnotationOwnershipPassed: "2026-11-27T02:00:00Z"}, get("myapp").Annotations, "the name went back")
}

// A route's status says who serves its answer in a failover zone as its last reconcile saw it. When
// a round learns otherwise (a new leader reads the heartbeats after its routes were reconciled;
// failover settings removed), the routes whose answers are attributed otherwise are reconciled
// again, and only those; a round that reads no zone changes nothing.
func TestFailover_RoutesWhoseAnswerIsAttributedOtherwiseAreReconciledAgain(t *testing.T) {
	ctx := t.Context()
	now := time.Unix(1000, 0)
	tracker := verify.NewTracker(verify.DefaultSettings, func() float64 { return 0 }, nil)
	taken := verify.RouteKey{Namespace: "myapp", Name: "api-route", Controller: "external-dns-weu"}
	elsewhere := verify.RouteKey{Namespace: "myapp", Name: "web-route", Controller: "external-dns-weu"}
	ownRegion := verify.RouteKey{Namespace: "other", Name: "api-route", Controller: "external-dns-neu"}
	// What each zone answers for each route's name: drifted from aks01's CNAME, all three.
	answers := map[string]string{
		"api.example.com": "CNAME aks02-neu-internal.example.com.", "web.example.com": "CNAME somewhere.example.com.",
		"other.example.com": "CNAME aks02-neu-internal.example.com."}
	for k, host := range map[verify.RouteKey]string{taken: "api.example.com", elsewhere: "web.example.com", ownRegion: "other.example.com"} {
		tracker.SetRoute(k, []*endpoint.Endpoint{endpoint.NewEndpoint(host, endpoint.RecordTypeCNAME, "aks01-weu-internal.example.com")}, true, false, now)
	}
	for _, controller := range []string{"external-dns-weu", "external-dns-neu"} {
		for {
			check, ok, _ := tracker.Next(controller, now.Add(time.Minute))
			if !ok {
				break
			}
			tracker.Report(check, verify.Finding{State: routingv1alpha1.ZoneDrifted, Answer: answers[strings.TrimSuffix(check.Expected[0].Name, ".")]}, now)
		}
	}
	routeChanges := make(chan event.GenericEvent, 10)
	sent := func() []string {
		var out []string
		for {
			select {
			case e := <-routeChanges:
				out = append(out, client.ObjectKeyFromObject(e.Object).String())
			default:
				return out
			}
		}
	}
	f := newLoop(nil, nil, tracker, routeChanges)
	aks02 := failover.Attribution{Cluster: "aks01", ZoneRegions: map[string]string{"external-dns-weu": "weu", "external-dns-neu": "neu"},
		Servers: map[string]failover.Server{"aks02-neu-internal.example.com": {Cluster: "aks02", Region: "neu"}}}
	const servedBy = "served by cluster aks02, of region neu, for region weu"

	before := f.attributionNow()
	f.reattribute(ctx, before)
	assert.Empty(t, sent(), "nothing learnt")
	assert.Empty(t, f.Attribute(taken.Controller, answers["api.example.com"]), "no heartbeat read yet")

	f.publish(false, failover.View{Attribution: aks02})
	f.reattribute(ctx, before)
	assert.Equal(t, []string{"myapp/api-route"}, sent(), "only the answer now attributed: web's names no known gateway, other's zone is aks02's own region")
	assert.Equal(t, servedBy, f.Attribute(taken.Controller, answers["api.example.com"]))

	before = f.attributionNow()
	f.publish(false, failover.View{Attribution: aks02})
	f.reattribute(ctx, before)
	assert.Empty(t, sent(), "the same attribution again")

	f.publish(false, failover.View{})
	f.reattribute(ctx, before)
	assert.Equal(t, []string{"myapp/api-route"}, sent(), "no failover settings any more: the attribution goes")
	assert.Empty(t, f.Attribute(taken.Controller, answers["api.example.com"]))
}

// newLoop is a loop reading and writing c (nil: nothing), its singletons and policies included.
func newLoop(c client.Client, recorder events.EventRecorder, observed RouteObservations, routeChanges chan<- event.GenericEvent) *Loop {
	return New(c, clientReads{c}, recorder, observed, routeChanges, 0)
}

// clientReads reads the singletons and the policy in force from a client, as the controllers read
// them from the cache.
type clientReads struct{ c client.Reader }

func (r clientReads) Singletons(ctx context.Context) (*clusterv1alpha1.ClusterIdentity, *clusterv1alpha1.DNSConfiguration, error) {
	ci, cfg := &clusterv1alpha1.ClusterIdentity{}, &clusterv1alpha1.DNSConfiguration{}
	if err := r.c.Get(ctx, client.ObjectKey{Name: clusterv1alpha1.ClusterIdentityName}, ci); err != nil {
		return nil, nil, client.IgnoreNotFound(err)
	}
	if err := r.c.Get(ctx, client.ObjectKey{Name: clusterv1alpha1.DNSConfigurationName}, cfg); err != nil {
		return ci, nil, client.IgnoreNotFound(err)
	}
	return ci, cfg, nil
}

func (r clientReads) PolicyInForce(ctx context.Context, namespace string) (*routingv1alpha1.DNSPolicy, error) {
	list := &routingv1alpha1.DNSPolicyList{}
	if err := r.c.List(ctx, list, client.InNamespace(namespace)); err != nil {
		return nil, err
	}
	policies := make([]*routingv1alpha1.DNSPolicy, len(list.Items))
	for i := range list.Items {
		policies[i] = &list.Items[i]
	}
	oldest, _ := decide.Oldest(policies)
	return oldest, nil
}

func fakeClient(objs ...client.Object) client.Client {
	return fake.NewClientBuilder().WithScheme(operatorscheme.New()).WithObjects(objs...).Build()
}

// The budget's model takes the defaults the loop uses, without importing them from here: this
// keeps the two in step.
func TestBudget_DefaultsAreTheLoops(t *testing.T) {
	s := failoverSettingsOf(&clusterv1alpha1.DNSConfiguration{})
	assert.Equal(t, budget.FailoverSettings{ProbeInterval: s.ProbeInterval, HeartbeatInterval: s.HeartbeatInterval, HeartbeatStaleAfter: s.Judge.HeartbeatStaleAfter},
		budget.DefaultFailoverSettings())
}
