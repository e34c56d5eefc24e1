package integration

import (
	"context"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	eventsv1 "k8s.io/api/events/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
)

// TestEvents_ReasonsAreConditionReasons walks a gateway, a policy and a route through a
// scenario and asserts every event the operator emits: each Ready transition is an event whose
// reason is the new condition reason (Warning when not Ready), each change to a generated
// object is a Normal event with the reason of the plan that caused it, and no event reason is
// outside the condition reasons the API exports.
func TestEvents_ReasonsAreConditionReasons(t *testing.T) {
	f := newFixture(t)
	f.setIdentity(weuIdentity())
	f.setControllers("weu")
	startOperator(t, env.Config)

	gw := f.gateway("default-gateway", "internal")
	f.waitGateway(gw.Name, routingv1alpha1.PhasePending, routingv1alpha1.ReasonLoadBalancerNotFound)
	svc := f.ingressService()
	f.waitGateway(gw.Name, routingv1alpha1.PhasePending, routingv1alpha1.ReasonLoadBalancerAddressPending)
	f.setLoadBalancer(svc, lbIP...)
	f.waitGateway(gw.Name, routingv1alpha1.PhaseActive, routingv1alpha1.ReasonNoServiceRoutes)
	pol := f.policy(activeMode)
	f.waitPolicy(routingv1alpha1.PhaseActive, routingv1alpha1.ReasonPolicyActive)
	route := f.route("", "api-route", "api", gw.Name)
	f.waitRoute(f.ns, route.Name, routingv1alpha1.PhaseActive, routingv1alpha1.ReasonReconciliationSucceeded)
	f.waitGateway(gw.Name, routingv1alpha1.PhaseActive, routingv1alpha1.ReasonGatewayCreated)
	require.NoError(t, env.Client.Delete(f.ctx, pol))
	f.waitRoute(f.ns, route.Name, routingv1alpha1.PhasePending, routingv1alpha1.ReasonDNSPolicyNotFound)
	f.waitGateway(gw.Name, routingv1alpha1.PhaseActive, routingv1alpha1.ReasonNoServiceRoutes)

	want := map[client.Object][]string{
		gw: {
			"Warning LoadBalancerNotFound Reconcile",
			"Warning LoadBalancerAddressPending Reconcile",
			"Normal NoServiceRoutes Reconcile", // twice: before the route and after it lost its policy
			"Normal GatewayCreated Reconcile",
			"Normal GatewayCreated Create",  // the Istio Gateway, and the entry point's address DNSEndpoint (IngressDNS)
			"Normal NoServiceRoutes Delete", // the Istio Gateway, without hosts
		},
		pol: {"Normal PolicyActive Reconcile"},
		route: {
			"Normal ReconciliationSucceeded Reconcile",
			"Normal ReconciliationSucceeded Create", // the DNSEndpoint for external-dns-weu
			"Warning DNSPolicyNotFound Reconcile",
			"Normal DNSPolicyNotFound Delete",
		},
	}
	for obj, events := range want {
		slices.Sort(events)
		events = slices.Compact(events)
		waitFor(t, fmt.Sprintf("the events of %T %s", obj, obj.GetName()), func() string {
			if got := eventsOf(t, obj); !slices.Equal(got, events) {
				return fmt.Sprintf("got\n  %s\nwant\n  %s", strings.Join(got, "\n  "), strings.Join(events, "\n  "))
			}
			return ""
		})
	}

	reasons := conditionReasons(t)
	for obj := range want {
		for _, e := range eventsOf(t, obj) {
			reason := strings.Fields(e)[1]
			assert.True(t, reasons[reason], "event reason %s of %s is not a condition reason of the API", reason, obj.GetName())
		}
	}
}

// eventsOf lists the distinct events.k8s.io Events regarding obj as "type reason action",
// sorted. Occurrences are not counted: a reconcile that runs before the cache has the status it
// just wrote may record the same transition twice (events.k8s.io folds the repeat into a series).
func eventsOf(t *testing.T, obj client.Object) []string {
	t.Helper()
	list := &eventsv1.EventList{}
	require.NoError(t, env.Client.List(context.Background(), list, client.InNamespace(obj.GetNamespace())))
	var out []string
	for _, e := range list.Items {
		if e.Regarding.UID != obj.GetUID() {
			continue
		}
		out = append(out, e.Type+" "+e.Reason+" "+e.Action)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// conditionReasons reads the exported Reason* constants of apis/*/v1alpha1/conditions.go.
func conditionReasons(t *testing.T) map[string]bool {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(env.RepoRoot, "apis", "*", "v1alpha1", "conditions.go"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	reasons := map[string]bool{}
	for _, file := range files {
		parsed, err := parser.ParseFile(token.NewFileSet(), file, nil, 0)
		require.NoError(t, err)
		ast.Inspect(parsed, func(n ast.Node) bool {
			spec, ok := n.(*ast.ValueSpec)
			if !ok {
				return true
			}
			for i, name := range spec.Names {
				if lit, ok := spec.Values[i].(*ast.BasicLit); ok && strings.HasPrefix(name.Name, "Reason") && lit.Kind == token.STRING {
					value, err := strconv.Unquote(lit.Value)
					require.NoError(t, err)
					reasons[value] = true
				}
			}
			return true
		})
	}
	return reasons
}
