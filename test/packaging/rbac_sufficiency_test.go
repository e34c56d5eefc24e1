package packaging

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	istionetworkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	externaldnsv1alpha1 "sigs.k8s.io/external-dns/apis/v1alpha1"

	clusterv1alpha1 "github.com/service-router/service-router-operator/apis/cluster/v1alpha1"
	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
	"github.com/service-router/service-router-operator/controllers"
)

// leaderElectionLease is the Lease main.go elects on; the chart's leader-election Role grants
// access to this name only.
const leaderElectionLease = "service-router-operator.router.io"

// forbiddenRecorder remembers every request the API server answered with 403 Forbidden.
type forbiddenRecorder struct {
	mu        sync.Mutex
	forbidden []string
}

func (f *forbiddenRecorder) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripper(func(req *http.Request) (*http.Response, error) {
		resp, err := rt.RoundTrip(req)
		if err == nil && resp.StatusCode == http.StatusForbidden {
			f.mu.Lock()
			f.forbidden = append(f.forbidden, req.Method+" "+req.URL.Path)
			f.mu.Unlock()
		}
		return resp, err
	})
}

func (f *forbiddenRecorder) list() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.forbidden...)
}

type roundTripper func(*http.Request) (*http.Response, error)

func (r roundTripper) RoundTrip(req *http.Request) (*http.Response, error) { return r(req) }

// TestChartRBAC_OperatorConvergesAsItsServiceAccount installs the chart's RBAC for real and runs
// the operator impersonating the chart's ServiceAccount, with leader election on, through a full
// scenario: every write it needs is allowed (no 403 at all), so the generated RBAC is sufficient.
// Least privilege is checked separately (TestChart_RBACIsLeastPrivilege and friends).
func TestChartRBAC_OperatorConvergesAsItsServiceAccount(t *testing.T) {
	requireOperatorRole(t)
	env := controlPlane(t)
	ctx := context.Background()
	restrictedNamespace(t, releaseNamespace)

	rbacKinds := map[string]bool{"ServiceAccount": true, "ClusterRole": true, "ClusterRoleBinding": true, "Role": true, "RoleBinding": true}
	var account string
	for _, obj := range renderChart(t) {
		if !rbacKinds[obj.GetKind()] {
			continue
		}
		if obj.GetKind() == "ServiceAccount" {
			account = obj.GetName()
		}
		require.NoError(t, env.Client.Create(ctx, obj), "installing %s %s", obj.GetKind(), obj.GetName())
		deleteAtEnd(t, env.Client, obj) // a later `helm install` test must not find objects without its release annotations
	}
	require.NotEmpty(t, account, "the chart renders no ServiceAccount")

	recorder := &forbiddenRecorder{}
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{
		UserName: fmt.Sprintf("system:serviceaccount:%s:%s", releaseNamespace, account),
		Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:" + releaseNamespace, "system:authenticated"},
	}
	cfg.WrapTransport = recorder.wrap
	startOperatorAs(t, cfg)

	scenario := newRBACScenario(t, env.Client)
	waitUntil(t, "the operator to converge as its ServiceAccount", func() string {
		return scenario.problem(ctx, env.Client)
	})
	// Namespaces earlier runs left Terminating (no namespace controller here) answer 403 to any
	// create; only this scenario's namespaces, the release namespace and cluster-scoped requests
	// say something about RBAC.
	var forbidden []string
	for _, req := range recorder.list() {
		if !strings.Contains(req, "/namespaces/") || strings.Contains(req, "/namespaces/"+scenario.ns+"/") ||
			strings.Contains(req, "/namespaces/"+scenario.gatewayNS+"/") || strings.Contains(req, "/namespaces/"+releaseNamespace+"/") {
			forbidden = append(forbidden, req)
		}
	}
	require.Empty(t, forbidden, "requests of the operator were forbidden by the chart's RBAC")
}

func startOperatorAs(t *testing.T, cfg *rest.Config) {
	t.Helper()
	runOperator(t, cfg, controlPlane(t).Scheme, releaseNamespace)
}

// runOperator runs the operator in-process with cfg until the test ends, its leader-election
// Lease in leaseNamespace.
func runOperator(t *testing.T, cfg *rest.Config, scheme *runtime.Scheme, leaseNamespace string) {
	t.Helper()
	skip := true
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                  scheme,
		Cache:                   controllers.CacheOptions(),
		MapperProvider:          controllers.MapperProvider,
		Metrics:                 metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress:  "0",
		LeaderElection:          true,
		LeaderElectionID:        leaderElectionLease,
		LeaderElectionNamespace: leaseNamespace,
		Controller:              config.Controller{SkipNameValidation: &skip},
	})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	require.NoError(t, controllers.Setup(ctx, mgr, controllers.Options{}))
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
}

// rbacScenario is one of everything: identity, configuration, gateway with its ingress Service,
// policy and route.
type rbacScenario struct {
	ns, gatewayNS string
	ingress       string // Istio ingress controller (istio label value)
}

func newRBACScenario(t *testing.T, c client.Client) rbacScenario {
	t.Helper()
	ctx := context.Background()
	// Unique namespaces: without kube-controller-manager a deleted namespace stays Terminating.
	suffix := rand.String(5)
	s := rbacScenario{ns: "rbac-app-" + suffix, gatewayNS: "rbac-istio-" + suffix, ingress: "rbac-ingress-" + suffix}
	objs := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: s.ns}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: s.gatewayNS}},
		&clusterv1alpha1.ClusterIdentity{ObjectMeta: metav1.ObjectMeta{Name: "cluster-identity"},
			Spec: clusterv1alpha1.ClusterIdentitySpec{Region: "weu", Cluster: "aks01", Domain: "example.com", EnvironmentLetter: "d"}},
		&clusterv1alpha1.DNSConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "dns-config"},
			Spec: clusterv1alpha1.DNSConfigurationSpec{ExternalDNSControllers: []clusterv1alpha1.ExternalDNSController{{Name: "external-dns-weu", Region: "weu"}}}},
		&routingv1alpha1.Gateway{ObjectMeta: metav1.ObjectMeta{Name: "default-gateway", Namespace: s.gatewayNS},
			Spec: routingv1alpha1.GatewaySpec{Controller: s.ingress, CredentialName: "cert", TargetPostfix: "internal"}},
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: s.ingress, Namespace: s.gatewayNS, Labels: map[string]string{"istio": s.ingress}},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{{Port: 443}}}},
		&routingv1alpha1.DNSPolicy{ObjectMeta: metav1.ObjectMeta{Name: "dns", Namespace: s.ns}, Spec: routingv1alpha1.DNSPolicySpec{Mode: routingv1alpha1.DNSPolicyModeActive}},
		&routingv1alpha1.ServiceRoute{ObjectMeta: metav1.ObjectMeta{Name: "api-route", Namespace: s.ns},
			Spec: routingv1alpha1.ServiceRouteSpec{ServiceName: "api", GatewayName: "default-gateway", GatewayNamespace: s.gatewayNS, Environment: "dev", Application: "rbac" + suffix}},
	}
	for _, obj := range objs {
		require.NoError(t, c.Create(ctx, obj), "creating %T %s", obj, obj.GetName())
		if obj.GetNamespace() == "" {
			deleteAtEnd(t, c, obj) // the singletons and namespaces; namespaced objects go with them
		}
	}
	svc := objs[5].(*corev1.Service)
	svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "10.1.2.3"}}
	require.NoError(t, c.Status().Update(ctx, svc))
	return s
}

// deleteAtEnd deletes obj when the test ends.
func deleteAtEnd(t *testing.T, c client.Client, obj client.Object) {
	t.Cleanup(func() {
		if err := c.Delete(context.Background(), obj); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting %s %s: %v", obj.GetObjectKind().GroupVersionKind().Kind, obj.GetName(), err)
		}
	})
}

// problem says what has not converged yet ("" when everything has).
func (s rbacScenario) problem(ctx context.Context, c client.Client) string {
	checks := []struct {
		what string
		obj  client.Object
		key  client.ObjectKey
	}{
		{"ClusterIdentity", &clusterv1alpha1.ClusterIdentity{}, client.ObjectKey{Name: "cluster-identity"}},
		{"DNSConfiguration", &clusterv1alpha1.DNSConfiguration{}, client.ObjectKey{Name: "dns-config"}},
		{"DNSPolicy", &routingv1alpha1.DNSPolicy{}, client.ObjectKey{Namespace: s.ns, Name: "dns"}},
		{"ServiceRoute", &routingv1alpha1.ServiceRoute{}, client.ObjectKey{Namespace: s.ns, Name: "api-route"}},
		{"Gateway", &routingv1alpha1.Gateway{}, client.ObjectKey{Namespace: s.gatewayNS, Name: "default-gateway"}},
	}
	for _, check := range checks {
		if err := c.Get(ctx, check.key, check.obj); err != nil {
			return err.Error()
		}
		conditions := conditionsOf(check.obj)
		if !meta.IsStatusConditionTrue(conditions, "Ready") {
			return fmt.Sprintf("%s not Ready: %v", check.what, conditions)
		}
	}
	for _, obj := range []struct {
		what string
		obj  client.Object
		key  client.ObjectKey
	}{
		{"the route's DNSEndpoint", &externaldnsv1alpha1.DNSEndpoint{}, client.ObjectKey{Namespace: s.ns, Name: "api-route-external-dns-weu"}},
		{"the address DNSEndpoint", &externaldnsv1alpha1.DNSEndpoint{}, client.ObjectKey{Namespace: s.gatewayNS, Name: "gateway-controller-" + s.ingress + "-internal-external-dns-weu"}},
		{"the Istio Gateway", &istionetworkingv1.Gateway{}, client.ObjectKey{Namespace: s.gatewayNS, Name: "default-gateway"}},
	} {
		if err := c.Get(ctx, obj.key, obj.obj); err != nil {
			return obj.what + ": " + err.Error()
		}
	}
	return ""
}

func conditionsOf(obj client.Object) []metav1.Condition {
	switch o := obj.(type) {
	case *clusterv1alpha1.ClusterIdentity:
		return o.Status.Conditions
	case *clusterv1alpha1.DNSConfiguration:
		return o.Status.Conditions
	case *routingv1alpha1.DNSPolicy:
		return o.Status.Conditions
	case *routingv1alpha1.ServiceRoute:
		return o.Status.Conditions
	case *routingv1alpha1.Gateway:
		return o.Status.Conditions
	}
	return nil
}

// waitUntil polls check until it returns "" or a minute passes, then fails with the last problem.
func waitUntil(t *testing.T, what string, check func() string) {
	t.Helper()
	waitUntilWithin(t, time.Minute, what, check)
}

// waitUntilWithin is waitUntil with another timeout.
func waitUntilWithin(t *testing.T, timeout time.Duration, what string, check func() string) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		problem := check()
		if problem == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s: %s", what, problem)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
