package core

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	externaldnsv1alpha1 "sigs.k8s.io/external-dns/apis/v1alpha1"

	clusterv1alpha1 "github.com/service-router/service-router-operator/apis/cluster/v1alpha1"
	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
	"github.com/service-router/service-router-operator/internal/apply"
	"github.com/service-router/service-router-operator/internal/decide"
	"github.com/service-router/service-router-operator/internal/verify"
)

// fakeRouteReads is a RouteReads over fixed objects; failing makes the named read fail.
type fakeRouteReads struct {
	identity   *clusterv1alpha1.ClusterIdentity
	config     *clusterv1alpha1.DNSConfiguration
	policy     *routingv1alpha1.DNSPolicy
	gateway    *routingv1alpha1.Gateway
	claimants  []*routingv1alpha1.ServiceRoute
	endpoints  []*externaldnsv1alpha1.DNSEndpoint
	zones      map[string]*verify.Observation
	notServed  bool
	failing    string
	namespaces map[string]map[string]string // annotations by namespace
	forms      decide.Forms
}

func (f *fakeRouteReads) fail(read string) error {
	if f.failing == read {
		return errors.New(read + ": connection refused")
	}
	return nil
}

func (f *fakeRouteReads) Singletons(context.Context) (*clusterv1alpha1.ClusterIdentity, *clusterv1alpha1.DNSConfiguration, error) {
	return f.identity, f.config, f.fail("singletons")
}
func (f *fakeRouteReads) EndpointsServed() bool { return !f.notServed }
func (f *fakeRouteReads) PolicyInForce(context.Context, string) (*routingv1alpha1.DNSPolicy, error) {
	return f.policy, f.fail("policy")
}
func (f *fakeRouteReads) NamespaceMetadata(_ context.Context, name string) (map[string]string, map[string]string, error) {
	return nil, f.namespaces[name], f.fail("namespace")
}
func (f *fakeRouteReads) NamespacesListing(context.Context, string) ([]string, error) {
	return nil, f.fail("listing")
}
func (f *fakeRouteReads) GatewayNamed(context.Context, types.NamespacedName) (*routingv1alpha1.Gateway, error) {
	return f.gateway, f.fail("gateway")
}
func (f *fakeRouteReads) Claimants(context.Context, *routingv1alpha1.ServiceRoute, *clusterv1alpha1.ClusterIdentity) ([]*routingv1alpha1.ServiceRoute, error) {
	return f.claimants, f.fail("claimants")
}
func (f *fakeRouteReads) RouteEndpoints(context.Context, *routingv1alpha1.ServiceRoute) ([]*externaldnsv1alpha1.DNSEndpoint, error) {
	return f.endpoints, f.fail("endpoints")
}
func (f *fakeRouteReads) Forms() decide.Forms { return f.forms }

func (f *fakeRouteReads) RouteZone(_ *routingv1alpha1.ServiceRoute, controller string) *verify.Observation {
	return f.zones[controller]
}

// recorder is a core.Apply that records the writes apply.Diff decides and makes each succeed,
// but for the names taken (a foreign object holds them).
type recorder[T client.Object] struct {
	calls                     int
	created, updated, deleted []string
	taken                     map[string]bool
	// log, when set, gets every write in order: "create DNSEndpoint ns/name".
	log *[]string
}

func (r *recorder[T]) logged(verb, kind, key string) {
	if r.log != nil {
		*r.log = append(*r.log, verb+" "+kind+" "+key)
	}
}

func (r *recorder[T]) apply(_ context.Context, k apply.Kind[T], want, current []T, n Notice[T]) (Written[T], error) {
	r.calls++
	ch := apply.Diff(k, want, current)
	out := Written[T]{Applied: ch.Unchanged, Conflicts: ch.Conflicts}
	for _, o := range ch.Update {
		r.updated = append(r.updated, apply.Key(o))
		r.logged("update", k.Name, apply.Key(o))
		out.Applied = append(out.Applied, o)
	}
	for _, o := range ch.Create {
		if r.taken[apply.Key(o)] {
			out.Conflicts = append(out.Conflicts, apply.ConflictOf(k, o))
			continue
		}
		r.created = append(r.created, apply.Key(o))
		r.logged("create", k.Name, apply.Key(o))
		out.Applied = append(out.Applied, o)
	}
	for _, o := range ch.Delete {
		r.deleted = append(r.deleted, apply.Key(o))
		r.logged("delete", k.Name, apply.Key(o))
	}
	return out, nil
}

func route() *routingv1alpha1.ServiceRoute {
	return &routingv1alpha1.ServiceRoute{
		ObjectMeta: metav1.ObjectMeta{Name: "api-route", Namespace: "myapp", UID: "route-uid", Generation: 3, CreationTimestamp: metav1.NewTime(time.Unix(2000, 0))},
		Spec: routingv1alpha1.ServiceRouteSpec{ServiceName: "api", GatewayName: "default-gateway", GatewayNamespace: "istio-system",
			Environment: "dev", Application: "myapp"},
	}
}

func worldOf(mode routingv1alpha1.DNSPolicyMode) *fakeRouteReads {
	cfg := &clusterv1alpha1.DNSConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "dns-config"}}
	for _, region := range []string{"weu", "neu"} {
		cfg.Spec.ExternalDNSControllers = append(cfg.Spec.ExternalDNSControllers, clusterv1alpha1.ExternalDNSController{Name: "external-dns-" + region, Region: region})
	}
	return &fakeRouteReads{
		identity: &clusterv1alpha1.ClusterIdentity{ObjectMeta: metav1.ObjectMeta{Name: "cluster-identity"},
			Spec: clusterv1alpha1.ClusterIdentitySpec{Region: "weu", Cluster: "aks01", Domain: "example.com", EnvironmentLetter: "d"}},
		config: cfg,
		policy: &routingv1alpha1.DNSPolicy{ObjectMeta: metav1.ObjectMeta{Name: "dns", Namespace: "myapp", Generation: 1},
			Spec: routingv1alpha1.DNSPolicySpec{Mode: mode, SourceRegion: "weu"}},
		gateway: &routingv1alpha1.Gateway{ObjectMeta: metav1.ObjectMeta{Name: "default-gateway", Namespace: "istio-system", UID: "gw-uid"},
			Spec: routingv1alpha1.GatewaySpec{Controller: "aks-istio-ingressgateway-internal", CredentialName: "cert", TargetPostfix: "internal"}},
	}
}

// published are the DNSEndpoints a route publishes with rd's inputs (what a first reconcile
// creates), as the cache then holds them.
func published(t *testing.T, rd *fakeRouteReads) []*externaldnsv1alpha1.DNSEndpoint {
	t.Helper()
	rec := &recorder[*externaldnsv1alpha1.DNSEndpoint]{}
	var got []*externaldnsv1alpha1.DNSEndpoint
	_, err := Route(context.Background(), rd, func(ctx context.Context, k apply.Kind[*externaldnsv1alpha1.DNSEndpoint], want, current []*externaldnsv1alpha1.DNSEndpoint,
		n Notice[*externaldnsv1alpha1.DNSEndpoint]) (Written[*externaldnsv1alpha1.DNSEndpoint], error) {
		got = want
		return rec.apply(ctx, k, want, current, n)
	}, route())
	require.NoError(t, err)
	for _, ep := range got {
		ep.UID = types.UID("uid-" + ep.Name) // as the API server gives it
	}
	return got
}

func TestRoute_WritesTheRecordsAndTheWholeStatusButTheOutcome(t *testing.T) {
	rd := worldOf(routingv1alpha1.DNSPolicyModeRegionBound)
	rd.zones = map[string]*verify.Observation{"external-dns-weu": {State: routingv1alpha1.ZonePublished, Since: time.Unix(3000, 0)}}
	rec := &recorder[*externaldnsv1alpha1.DNSEndpoint]{}
	r := route()
	res, err := Route(context.Background(), rd, rec.apply, r)
	require.NoError(t, err)

	assert.True(t, res.Synced)
	assert.True(t, res.Ready)
	assert.Equal(t, routingv1alpha1.ReasonReconciliationSucceeded, res.Reason)
	assert.Equal(t, []string{"myapp/api-route-external-dns-weu", "myapp/api-route-external-dns-neu"}, rec.created)
	assert.Equal(t, "api-ns-d-dev-myapp.example.com", r.Status.Hostname)
	assert.Equal(t, "aks01-weu-internal.example.com", r.Status.TargetHostname)
	assert.Len(t, r.Status.Endpoints, 2)
	require.Len(t, r.Status.Zones, 2, "one zone per record, with the prober's result where it has one")
	assert.NotNil(t, meta.FindStatusCondition(r.Status.Conditions, routingv1alpha1.ConditionPublished))
	assert.Nil(t, meta.FindStatusCondition(r.Status.Conditions, routingv1alpha1.ConditionReady), "Ready is the driver's, with decide.SetOutcome")
	assert.Zero(t, r.Status.ObservedGeneration)

	// Again with the records in place: nothing written, the same status.
	rd.endpoints = published(t, rd)
	again := &recorder[*externaldnsv1alpha1.DNSEndpoint]{}
	r2 := route()
	_, err = Route(context.Background(), rd, again.apply, r2)
	require.NoError(t, err)
	assert.Empty(t, append(append(again.created, again.updated...), again.deleted...))
	assert.Equal(t, r.Status.Endpoints, r2.Status.Endpoints)
}

func TestRoute_MissingOrUnreadableInputsKeepTheRecords(t *testing.T) {
	for _, tt := range []struct {
		name    string
		mutate  func(*fakeRouteReads)
		wantErr bool
		reason  string
	}{
		{"no ClusterIdentity", func(f *fakeRouteReads) { f.identity = nil }, false, routingv1alpha1.ReasonClusterIdentityNotFound},
		{"no DNSConfiguration", func(f *fakeRouteReads) { f.config = nil }, false, routingv1alpha1.ReasonDNSConfigurationNotFound},
		{"the DNSEndpoint API not served", func(f *fakeRouteReads) { f.notServed = true }, false, routingv1alpha1.ReasonExternalDNSNotInstalled},
		{"the singletons unreadable", func(f *fakeRouteReads) { f.failing = "singletons" }, true, ""},
		{"the policy unreadable", func(f *fakeRouteReads) { f.failing = "policy" }, true, ""},
		{"the namespace unreadable", func(f *fakeRouteReads) { f.failing = "namespace" }, true, ""},
		{"the Gateway unreadable", func(f *fakeRouteReads) { f.failing = "gateway" }, true, ""},
		{"the claimants unreadable", func(f *fakeRouteReads) { f.failing = "claimants" }, true, ""},
		{"the route's records unreadable", func(f *fakeRouteReads) { f.failing = "endpoints" }, true, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rd := worldOf(routingv1alpha1.DNSPolicyModeActive)
			rd.endpoints = published(t, rd)
			tt.mutate(rd)
			rec := &recorder[*externaldnsv1alpha1.DNSEndpoint]{}
			r := route()
			res, err := Route(context.Background(), rd, rec.apply, r)
			assert.Equal(t, tt.wantErr, err != nil, "error: %v", err)
			assert.Zero(t, rec.calls, "nothing written")
			if !tt.wantErr {
				assert.False(t, res.Synced)
				assert.Equal(t, tt.reason, res.Reason)
			}
			assert.Empty(t, r.Status.Endpoints, "the status is left as it was")
		})
	}
}

func TestRoute_DefiniteAnswersRemoveTheRecords(t *testing.T) {
	older := route()
	older.Namespace, older.UID, older.CreationTimestamp = "other", "older-uid", metav1.NewTime(time.Unix(1000, 0))
	for _, tt := range []struct {
		name   string
		mutate func(*fakeRouteReads)
		reason string
	}{
		{"no policy in the namespace", func(f *fakeRouteReads) { f.policy = nil }, routingv1alpha1.ReasonDNSPolicyNotFound},
		{"the Gateway deleted", func(f *fakeRouteReads) { f.gateway = nil }, routingv1alpha1.ReasonGatewayNotFound},
		{"an older route claims the hostname", func(f *fakeRouteReads) { f.claimants = []*routingv1alpha1.ServiceRoute{route(), older} }, routingv1alpha1.ReasonHostnameConflict},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rd := worldOf(routingv1alpha1.DNSPolicyModeActive)
			rd.endpoints = published(t, rd)
			tt.mutate(rd)
			rec := &recorder[*externaldnsv1alpha1.DNSEndpoint]{}
			r := route()
			res, err := Route(context.Background(), rd, rec.apply, r)
			require.NoError(t, err)
			assert.True(t, res.Synced)
			assert.Equal(t, tt.reason, res.Reason)
			assert.Equal(t, []string{"myapp/api-route-external-dns-weu"}, rec.deleted)
			assert.Empty(t, r.Status.Endpoints)
		})
	}
}

// An older claimant whose namespace may not use the application does not win: its namespace's
// annotation is read for it.
func TestRoute_AClaimantNotAllowedItsApplicationDoesNotWin(t *testing.T) {
	rd := worldOf(routingv1alpha1.DNSPolicyModeActive)
	older := route()
	older.Namespace, older.UID, older.CreationTimestamp = "other", "older-uid", metav1.NewTime(time.Unix(1000, 0))
	rd.claimants = []*routingv1alpha1.ServiceRoute{route(), older}
	rd.namespaces = map[string]map[string]string{"other": {"router.io/applications": "billing"}}
	rec := &recorder[*externaldnsv1alpha1.DNSEndpoint]{}
	res, err := Route(context.Background(), rd, rec.apply, route())
	require.NoError(t, err)
	assert.Equal(t, routingv1alpha1.ReasonReconciliationSucceeded, res.Reason)
	assert.Equal(t, []string{"myapp/api-route-external-dns-weu"}, rec.created)
}

func TestRoute_ANameTakenByAForeignObjectIsAConflict(t *testing.T) {
	rd := worldOf(routingv1alpha1.DNSPolicyModeActive)
	rec := &recorder[*externaldnsv1alpha1.DNSEndpoint]{taken: map[string]bool{"myapp/api-route-external-dns-weu": true}}
	r := route()
	res, err := Route(context.Background(), rd, rec.apply, r)
	require.NoError(t, err)
	assert.False(t, res.Ready)
	assert.Equal(t, routingv1alpha1.ReasonOwnershipConflict, res.Reason)
	assert.Equal(t, decide.Written{Kind: "DNSEndpoint", Owner: "ServiceRoute", Conflicts: []string{"myapp/api-route-external-dns-weu"}}, res.Written)
	assert.Empty(t, r.Status.Endpoints, "the taken name is not the route's")
}
