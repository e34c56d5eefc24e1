package integration

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	externaldnsv1alpha1 "sigs.k8s.io/external-dns/apis/v1alpha1"

	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
)

// The watch drops the events of the operator's own writes (a route's status, its DNSEndpoints),
// so a change reconciles each route once, not once more per write; the same watch must still
// pass every change somebody else makes, which the operator then undoes.
func TestServiceRoute_OwnWritesAreNotReconciledAgainOthersAreUndone(t *testing.T) {
	f := newFixture(t)
	f.setIdentity(weuIdentity())
	f.setControllers("weu")
	startOperator(t, env.Config)
	gw := f.gateway("default-gateway", "internal")
	f.ingressService(lbIP...)
	f.policy(activeMode)
	const routes = 10
	for i := range routes {
		f.route("", fmt.Sprintf("route-%d", i), fmt.Sprintf("svc%d", i), gw.Name)
	}
	for i := range routes {
		f.waitRouteEndpoints(f.ns, fmt.Sprintf("route-%d", i), f.hostname(fmt.Sprintf("svc%d", i), "example.com"), "aks01-weu-internal.example.com", "external-dns-weu")
		f.waitRoute(f.ns, fmt.Sprintf("route-%d", i), routingv1alpha1.PhaseActive, routingv1alpha1.ReasonReconciliationSucceeded)
	}

	t.Run("a change of the Gateway's target postfix reconciles each route once", func(t *testing.T) {
		before := routeReconcilesWhenIdle(t)
		require.NoError(t, retryOnConflict(func() error {
			if err := env.Client.Get(f.ctx, client.ObjectKeyFromObject(gw), gw); err != nil {
				return err
			}
			gw.Spec.TargetPostfix = "edge"
			return env.Client.Update(f.ctx, gw)
		}))
		for i := range routes {
			f.waitRouteEndpoints(f.ns, fmt.Sprintf("route-%d", i), f.hostname(fmt.Sprintf("svc%d", i), "example.com"), "aks01-weu-edge.example.com", "external-dns-weu")
		}
		reconciles := routeReconcilesWhenIdle(t) - before
		t.Logf("%d routes, each with a DNSEndpoint update and a status write: %v reconciles", routes, reconciles)
		// Each route's two writes used to wake it twice more (about 3 reconciles per route).
		assert.GreaterOrEqual(t, reconciles, float64(routes), "every route followed the change")
		assert.LessOrEqual(t, reconciles, 1.5*routes, "the echoes of the operator's own writes woke the routes again")
	})

	t.Run("somebody else's edits of a route's status and DNSEndpoint are undone in place", func(t *testing.T) {
		key := client.ObjectKey{Namespace: f.ns, Name: "route-0"}
		route := &routingv1alpha1.ServiceRoute{}
		require.NoError(t, env.Client.Get(f.ctx, key, route))
		wantHostname := route.Status.Hostname
		original := route.DeepCopy()
		route.Status.Hostname = "tampered.example.com"
		meta.SetStatusCondition(&route.Status.Conditions, metav1.Condition{Type: "Ready", Status: metav1.ConditionFalse,
			Reason: "Tampered", Message: "edited by hand", ObservedGeneration: route.Generation})
		require.NoError(t, env.Client.Status().Patch(f.ctx, route, client.MergeFromWithOptions(original, client.MergeFromWithOptimisticLock{})))
		waitFor(t, "the operator to write the route's status back", func() string {
			if err := env.Client.Get(f.ctx, key, route); err != nil {
				return err.Error()
			}
			ready := meta.FindStatusCondition(route.Status.Conditions, "Ready")
			if route.Status.Hostname != wantHostname || ready == nil || ready.Status != metav1.ConditionTrue {
				return fmt.Sprintf("hostname %s, Ready %v", route.Status.Hostname, ready)
			}
			return ""
		})

		ep := routeEndpoints(t, f.ns, "route-0")[0]
		uid := ep.UID
		want := slices.Clone(ep.Spec.Endpoints[0].Targets)
		require.NoError(t, retryOnConflict(func() error {
			if err := env.Client.Get(f.ctx, client.ObjectKeyFromObject(&ep), &ep); err != nil {
				return err
			}
			ep.Spec.Endpoints[0].Targets = []string{"elsewhere.example.com"}
			return env.Client.Update(f.ctx, &ep)
		}))
		waitFor(t, "the operator to put the DNSEndpoint's target back", func() string {
			got := &externaldnsv1alpha1.DNSEndpoint{}
			if err := env.Client.Get(f.ctx, client.ObjectKeyFromObject(&ep), got); err != nil {
				return err.Error()
			}
			if got.UID != uid {
				return fmt.Sprintf("the DNSEndpoint was replaced (UID %s, was %s)", got.UID, uid)
			}
			if targets := got.Spec.Endpoints[0].Targets; !slices.Equal(targets, want) {
				return fmt.Sprintf("targets %v", targets)
			}
			return ""
		})
		assert.Equal(t, types.UID(uid), routeEndpoints(t, f.ns, "route-0")[0].UID, "updated in place")
	})
}

// routeReconcilesWhenIdle waits until the ServiceRoute controller has been idle for two seconds
// (no reconcile finished, nothing queued) and returns how many reconciles it finished so far.
func routeReconcilesWhenIdle(t *testing.T) float64 {
	t.Helper()
	var last float64
	stableSince := time.Now()
	waitFor(t, "the ServiceRoute controller to be idle", func() string {
		families := gather(t)
		total, queued := 0.0, 0.0
		for series, v := range seriesValues(families, "controller_runtime_reconcile_total") {
			if strings.Contains(series, `controller="serviceroute"`) {
				total += v
			}
		}
		for series, v := range seriesValues(families, "workqueue_depth") {
			if strings.Contains(series, `name="serviceroute"`) {
				queued += v
			}
		}
		if total != last || queued > 0 {
			last, stableSince = total, time.Now()
			return fmt.Sprintf("%v reconciles, %v queued", total, queued)
		}
		if time.Since(stableSince) < 2*time.Second {
			return "settling"
		}
		return ""
	})
	return last
}
