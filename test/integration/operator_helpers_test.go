package integration

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	istionetworkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	externaldnsv1alpha1 "sigs.k8s.io/external-dns/apis/v1alpha1"

	clusterv1alpha1 "github.com/service-router/service-router-operator/apis/cluster/v1alpha1"
	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
)

// waitTimeout bounds every wait for the operator to converge.
const waitTimeout = 30 * time.Second

// startOperator runs the operator's manager with all six controllers against the test control
// plane until the test ends or the returned stop function is called. cfg may be a wrapped copy of
// env.Config (to count requests).
func startOperator(t testing.TB, cfg *rest.Config) (stop func()) {
	t.Helper()
	return startOperatorWith(t, cfg, operatorOptions{})
}

func join(s []string) string { return strings.Join(s, ", ") }

// fixture builds one test's world: its own namespaces, an application name and an Istio ingress
// controller name no other test uses, so tests sharing the control plane cannot collide on
// hostnames, gateway pairs or ingress Services.
type fixture struct {
	t          testing.TB
	ctx        context.Context
	ns         string // the application namespace
	gatewayNS  string
	app        string
	controller string // Istio ingress controller (istio label value)
}

func newFixture(t testing.TB) *fixture {
	suffix := rand.String(5)
	f := &fixture{t: t, ctx: context.Background(), app: "app" + suffix, controller: "ingress-" + suffix}
	f.ns = newNamespace(t, "app")
	f.gatewayNS = newNamespace(t, "gw")
	t.Cleanup(func() {
		for _, ns := range []string{f.ns, f.gatewayNS} {
			_ = env.Client.Delete(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
		}
	})
	return f
}

// setIdentity creates or replaces the ClusterIdentity singleton's spec.
func (f *fixture) setIdentity(spec clusterv1alpha1.ClusterIdentitySpec) {
	f.t.Helper()
	ci := &clusterv1alpha1.ClusterIdentity{ObjectMeta: metav1.ObjectMeta{Name: clusterv1alpha1.ClusterIdentityName}}
	_, err := createOrUpdate(f.ctx, ci, func() error { ci.Spec = spec; return nil })
	require.NoError(f.t, err)
}

func (f *fixture) deleteIdentity() {
	f.t.Helper()
	err := env.Client.Delete(f.ctx, &clusterv1alpha1.ClusterIdentity{ObjectMeta: metav1.ObjectMeta{Name: clusterv1alpha1.ClusterIdentityName}})
	require.NoError(f.t, client.IgnoreNotFound(err))
}

// setControllers creates or replaces the DNSConfiguration singleton: one controller
// external-dns-<region> per region.
func (f *fixture) setControllers(regions ...string) {
	f.t.Helper()
	cfg := &clusterv1alpha1.DNSConfiguration{ObjectMeta: metav1.ObjectMeta{Name: clusterv1alpha1.DNSConfigurationName}}
	_, err := createOrUpdate(f.ctx, cfg, func() error {
		cfg.Spec.ExternalDNSControllers = nil
		for _, r := range regions {
			cfg.Spec.ExternalDNSControllers = append(cfg.Spec.ExternalDNSControllers, clusterv1alpha1.ExternalDNSController{Name: "external-dns-" + r, Region: r})
		}
		return nil
	})
	require.NoError(f.t, err)
}

func weuIdentity(adopts ...string) clusterv1alpha1.ClusterIdentitySpec {
	return clusterv1alpha1.ClusterIdentitySpec{Region: "weu", Cluster: "aks01", Domain: "example.com", EnvironmentLetter: "d", AdoptsRegions: adopts}
}

func (f *fixture) gateway(name, postfix string) *routingv1alpha1.Gateway {
	f.t.Helper()
	gw := &routingv1alpha1.Gateway{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: f.gatewayNS},
		Spec:       routingv1alpha1.GatewaySpec{Controller: f.controller, CredentialName: "cert-" + name, TargetPostfix: postfix},
	}
	require.NoError(f.t, env.Client.Create(f.ctx, gw))
	return gw
}

func (f *fixture) policy(spec routingv1alpha1.DNSPolicySpec) *routingv1alpha1.DNSPolicy {
	f.t.Helper()
	p := &routingv1alpha1.DNSPolicy{ObjectMeta: metav1.ObjectMeta{Name: "dns", Namespace: f.ns}, Spec: spec}
	require.NoError(f.t, env.Client.Create(f.ctx, p))
	return p
}

func (f *fixture) updatePolicy(spec routingv1alpha1.DNSPolicySpec) {
	f.t.Helper()
	p := &routingv1alpha1.DNSPolicy{ObjectMeta: metav1.ObjectMeta{Name: "dns", Namespace: f.ns}}
	_, err := createOrUpdate(f.ctx, p, func() error { p.Spec = spec; return nil })
	require.NoError(f.t, err)
}

// route creates a ServiceRoute for service on gateway gw in namespace ns (f.ns when empty).
func (f *fixture) route(ns, name, service, gw string) *routingv1alpha1.ServiceRoute {
	f.t.Helper()
	r := &routingv1alpha1.ServiceRoute{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: cmpOr(ns, f.ns)},
		Spec: routingv1alpha1.ServiceRouteSpec{ServiceName: service, GatewayName: gw, GatewayNamespace: f.gatewayNS,
			Environment: "dev", Application: f.app},
	}
	require.NoError(f.t, env.Client.Create(f.ctx, r))
	return r
}

// hostname is the hostname of service in this fixture's application for environment letter d.
func (f *fixture) hostname(service, domain string) string {
	return fmt.Sprintf("%s-ns-d-dev-%s.%s", service, f.app, domain)
}

// ingressService creates the LoadBalancer Service of the fixture's ingress controller with the
// given load balancer status.
func (f *fixture) ingressService(ingress ...corev1.LoadBalancerIngress) *corev1.Service {
	f.t.Helper()
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: f.controller, Namespace: f.gatewayNS, Labels: map[string]string{"istio": f.controller}},
		Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{{Name: "https", Port: 443}}},
	}
	require.NoError(f.t, env.Client.Create(f.ctx, svc))
	f.setLoadBalancer(svc, ingress...)
	return svc
}

func (f *fixture) setLoadBalancer(svc *corev1.Service, ingress ...corev1.LoadBalancerIngress) {
	f.t.Helper()
	require.NoError(f.t, retryOnConflict(func() error {
		if err := env.Client.Get(f.ctx, client.ObjectKeyFromObject(svc), svc); err != nil {
			return err
		}
		svc.Status.LoadBalancer.Ingress = ingress
		return env.Client.Status().Update(f.ctx, svc)
	}))
}

func retryOnConflict(fn func() error) error {
	for {
		err := fn()
		if !apierrors.IsConflict(err) {
			return err
		}
	}
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// waitFor polls check until it returns "" (converged) or the deadline passes (waitTimeout unless
// given); it then fails with the last description of what was still wrong.
func waitFor(t testing.TB, what string, check func() string, timeout ...time.Duration) {
	t.Helper()
	limit := waitTimeout
	if len(timeout) > 0 {
		limit = timeout[0]
	}
	deadline := time.Now().Add(limit)
	for {
		problem := check()
		if problem == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s: %s", limit, what, problem)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// routeEndpoints lists the DNSEndpoints labelled for a route, sorted by name.
func routeEndpoints(t testing.TB, ns, route string) []externaldnsv1alpha1.DNSEndpoint {
	t.Helper()
	list := &externaldnsv1alpha1.DNSEndpointList{}
	require.NoError(t, env.Client.List(context.Background(), list, client.InNamespace(ns), client.MatchingLabels{"router.io/serviceroute": route}))
	sort.Slice(list.Items, func(i, j int) bool { return list.Items[i].Name < list.Items[j].Name })
	return list.Items
}

// waitRouteEndpoints waits until the route's DNSEndpoints are exactly one per controller, each a
// CNAME from hostname to target, and returns them.
func (f *fixture) waitRouteEndpoints(ns, route, hostname, target string, controllers ...string) []externaldnsv1alpha1.DNSEndpoint {
	f.t.Helper()
	var want []string
	for _, c := range controllers {
		want = append(want, route+"-"+c)
	}
	slices.Sort(want)
	var eps []externaldnsv1alpha1.DNSEndpoint
	waitFor(f.t, fmt.Sprintf("DNSEndpoints %v of %s/%s", want, ns, route), func() string {
		eps = routeEndpoints(f.t, ns, route)
		var got []string
		for _, ep := range eps {
			got = append(got, ep.Name)
			if n := len(ep.Spec.Endpoints); n != 1 {
				return fmt.Sprintf("%s has %d records", ep.Name, n)
			}
			r := ep.Spec.Endpoints[0]
			if r.DNSName != hostname || r.RecordType != "CNAME" || !slices.Equal(r.Targets, []string{target}) {
				return fmt.Sprintf("%s is %s %s %v, want %s CNAME %s", ep.Name, r.DNSName, r.RecordType, r.Targets, hostname, target)
			}
		}
		if !slices.Equal(got, want) {
			return fmt.Sprintf("endpoints are %v", got)
		}
		return ""
	})
	return eps
}

// waitRoute waits for the route's Ready condition to have the reason and its phase to match, and
// returns the route.
func (f *fixture) waitRoute(ns, name string, phase routingv1alpha1.Phase, reason string) *routingv1alpha1.ServiceRoute {
	f.t.Helper()
	r := &routingv1alpha1.ServiceRoute{}
	waitFor(f.t, fmt.Sprintf("ServiceRoute %s/%s to be %s/%s", ns, name, phase, reason), func() string {
		if err := env.Client.Get(f.ctx, client.ObjectKey{Namespace: ns, Name: name}, r); err != nil {
			return err.Error()
		}
		return statusProblem(r.Generation, r.Status.ObservedGeneration, r.Status.Conditions, string(r.Status.Phase), string(phase), reason)
	})
	return r
}

func (f *fixture) waitPolicy(phase routingv1alpha1.Phase, reason string) *routingv1alpha1.DNSPolicy {
	f.t.Helper()
	p := &routingv1alpha1.DNSPolicy{}
	waitFor(f.t, fmt.Sprintf("DNSPolicy to be %s/%s", phase, reason), func() string {
		if err := env.Client.Get(f.ctx, client.ObjectKey{Namespace: f.ns, Name: "dns"}, p); err != nil {
			return err.Error()
		}
		return statusProblem(p.Generation, p.Status.ObservedGeneration, p.Status.Conditions, string(p.Status.Phase), string(phase), reason)
	})
	return p
}

func (f *fixture) waitGateway(name string, phase routingv1alpha1.Phase, reason string) *routingv1alpha1.Gateway {
	f.t.Helper()
	gw := &routingv1alpha1.Gateway{}
	waitFor(f.t, fmt.Sprintf("Gateway %s to be %s/%s", name, phase, reason), func() string {
		if err := env.Client.Get(f.ctx, client.ObjectKey{Namespace: f.gatewayNS, Name: name}, gw); err != nil {
			return err.Error()
		}
		return statusProblem(gw.Generation, gw.Status.ObservedGeneration, gw.Status.Conditions, string(gw.Status.Phase), string(phase), reason)
	})
	return gw
}

// statusProblem describes how a status differs from the wanted phase and Ready reason ("" when
// it matches and is current).
func statusProblem(generation, observed int64, conditions []metav1.Condition, phase, wantPhase, wantReason string) string {
	ready := meta.FindStatusCondition(conditions, "Ready")
	switch {
	case ready == nil:
		return "no Ready condition yet"
	case observed != generation:
		return fmt.Sprintf("observedGeneration %d, generation %d", observed, generation)
	case phase != wantPhase || ready.Reason != wantReason:
		return fmt.Sprintf("phase %s, Ready=%s %s: %s", phase, ready.Status, ready.Reason, ready.Message)
	case ready.ObservedGeneration != generation:
		return fmt.Sprintf("Ready condition observedGeneration %d, generation %d", ready.ObservedGeneration, generation)
	}
	return ""
}

// istioHost is how the Istio Gateway lists hostname of a route in namespace: namespace-scoped,
// the default istioHostFormat.
func istioHost(namespace, hostname string) string { return namespace + "/" + hostname }

// waitIstioHosts waits for the Istio Gateway to list exactly hosts (none: the Istio Gateway does
// not exist) and returns it.
func (f *fixture) waitIstioHosts(name string, hosts ...string) *istionetworkingv1.Gateway {
	f.t.Helper()
	ig := &istionetworkingv1.Gateway{}
	waitFor(f.t, fmt.Sprintf("Istio Gateway %s hosts %v", name, hosts), func() string {
		err := env.Client.Get(f.ctx, client.ObjectKey{Namespace: f.gatewayNS, Name: name}, ig)
		switch {
		case apierrors.IsNotFound(err) && len(hosts) == 0:
			return ""
		case err != nil:
			return err.Error()
		case len(hosts) == 0:
			return fmt.Sprintf("the Istio Gateway exists with hosts %v", ig.Spec.Servers[0].Hosts)
		case len(ig.Spec.Servers) != 1 || !slices.Equal(ig.Spec.Servers[0].Hosts, hosts):
			return fmt.Sprintf("servers %v", ig.Spec.Servers)
		}
		return ""
	})
	return ig
}

// addressEndpoints lists the gateway address DNSEndpoints of the fixture's ingress controller.
func (f *fixture) addressEndpoints() []externaldnsv1alpha1.DNSEndpoint {
	f.t.Helper()
	list := &externaldnsv1alpha1.DNSEndpointList{}
	require.NoError(f.t, env.Client.List(f.ctx, list, client.MatchingLabels{"router.io/istio-controller": f.controller}))
	sort.Slice(list.Items, func(i, j int) bool { return list.Items[i].Name < list.Items[j].Name })
	return list.Items
}

// waitAddressRecords waits until the address DNSEndpoints of (controller, postfix) are exactly
// one per ExternalDNS controller, each holding records (type → targets) for target.
func (f *fixture) waitAddressRecords(postfix, target string, records map[string][]string, controllers ...string) []externaldnsv1alpha1.DNSEndpoint {
	f.t.Helper()
	var want []string
	for _, c := range controllers {
		want = append(want, fmt.Sprintf("gateway-controller-%s-%s-%s", f.controller, postfix, c))
	}
	slices.Sort(want)
	var eps []externaldnsv1alpha1.DNSEndpoint
	waitFor(f.t, fmt.Sprintf("address DNSEndpoints %v with %v", want, records), func() string {
		eps = f.addressEndpoints()
		var got []string
		for _, ep := range eps {
			got = append(got, ep.Name)
			have := map[string][]string{}
			for _, r := range ep.Spec.Endpoints {
				if r.DNSName != target {
					return fmt.Sprintf("%s has a record for %s, want %s", ep.Name, r.DNSName, target)
				}
				have[r.RecordType] = r.Targets
			}
			if fmt.Sprint(have) != fmt.Sprint(records) {
				return fmt.Sprintf("%s has %v", ep.Name, have)
			}
		}
		if !slices.Equal(got, want) {
			return fmt.Sprintf("endpoints are %v", got)
		}
		return ""
	})
	return eps
}

func waitGone(t testing.TB, obj client.Object) {
	t.Helper()
	waitFor(t, fmt.Sprintf("%T %s to be deleted", obj, client.ObjectKeyFromObject(obj)), func() string {
		err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(obj), obj)
		if apierrors.IsNotFound(err) {
			return ""
		}
		if err != nil {
			return err.Error()
		}
		return "still exists"
	})
}

// eventReasons lists the reasons of the events.k8s.io Events regarding an object.
func eventReasons(t testing.TB, obj client.Object) []string {
	t.Helper()
	list := &eventsv1.EventList{}
	require.NoError(t, env.Client.List(context.Background(), list, client.InNamespace(obj.GetNamespace())))
	var reasons []string
	for _, e := range list.Items {
		if e.Regarding.UID == obj.GetUID() {
			reasons = append(reasons, e.Reason)
		}
	}
	return reasons
}

// waitEvent waits for an events.k8s.io Event of reason regarding obj. The operator's recorder
// sends Events asynchronously, after the status write that caused them: a status a test saw is no
// proof its Event is stored yet.
func waitEvent(t testing.TB, obj client.Object, reason string) {
	t.Helper()
	waitFor(t, fmt.Sprintf("a %s event regarding %s", reason, obj.GetName()), func() string {
		if reasons := eventReasons(t, obj); !slices.Contains(reasons, reason) {
			return "events: " + join(reasons)
		}
		return ""
	})
}

// createOrUpdate is ctrl.CreateOrUpdate as a person's retrying client does it: the operator
// writes the status of these objects, so an update can meet a newer version and is retried on
// a fresh read (mutate must set, not append).
func createOrUpdate(ctx context.Context, obj client.Object, mutate controllerutil.MutateFn) (controllerutil.OperationResult, error) {
	var result controllerutil.OperationResult
	err := retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		var err error
		result, err = ctrl.CreateOrUpdate(ctx, env.Client, obj, mutate)
		return err
	})
	return result, err
}
