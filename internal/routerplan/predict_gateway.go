package routerplan

import (
	"context"
	"maps"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
	"github.com/service-router/service-router-operator/internal/core"
	"github.com/service-router/service-router-operator/internal/decide"
	"github.com/service-router/service-router-operator/internal/desired"
)

// reconcileGateway is the Gateway reconcile, core.Gateway as the operator runs it, over the world
// (rd) with its writes recorded in rd's Istio Gateways and Gateway API objects and its deletions
// in deletes, ended as the operator ends it (decide.SetOutcome). gw is not changed.
func reconcileGateway(rd worldReads, gw *routingv1alpha1.Gateway, budget int, deletes *[]string) GatewayOutcome {
	wr := core.GatewayWriters{Istio: record(rd.istio, deletes), Gateways: record(rd.api.gateways, deletes), ListenerSets: record(rd.api.sets, deletes),
		HTTPRoutes: record(rd.api.routes, deletes), ReferenceGrants: record(rd.api.grants, deletes)}
	gw = gw.DeepCopy()
	res, err := core.Gateway(context.Background(), rd, wr, gw, budget) // the world's reads and writes do not fail
	decide.SetOutcome(gw, res.Plan.Outcome, err)
	return GatewayOutcome{Outcome: res.Plan.Outcome, Status: gw.Status}
}

// gatewayAPIObjects are the managed Gateway API objects as the prediction changes them, by
// namespace/name.
type gatewayAPIObjects struct {
	gateways map[string]*gwv1.Gateway
	sets     map[string]*gwv1.ListenerSet
	routes   map[string]*gwv1.HTTPRoute
	grants   map[string]*gwv1.ReferenceGrant
}

func newGatewayAPIObjects(w *World) *gatewayAPIObjects {
	return &gatewayAPIObjects{gateways: byKeyOf(w.GatewayAPIGateways), sets: byKeyOf(w.ListenerSets), routes: byKeyOf(w.HTTPRoutes), grants: byKeyOf(w.ReferenceGrants)}
}

func byKeyOf[T client.Object](objs []T) map[string]T {
	out := make(map[string]T, len(objs))
	for _, o := range objs {
		out[key(o)] = o
	}
	return out
}

// grantsOf are the ReferenceGrants labelled for the Gateway namespace/name, in every namespace.
func (a *gatewayAPIObjects) grantsOf(namespace, name string) []*gwv1.ReferenceGrant {
	var out []*gwv1.ReferenceGrant
	for _, g := range a.grants {
		if g.Labels[desired.LabelGateway] == desired.GatewayLabelValue(namespace, name) {
			out = append(out, g)
		}
	}
	slices.SortFunc(out, byKey)
	return out
}

// collect removes the objects the garbage collector (or the namespace controller) removes: those
// controlled by a Gateway that no longer exists, and those in a deleted namespace.
func (a *gatewayAPIObjects) collect(w *World, gateways []*routingv1alpha1.Gateway) []string {
	var gone []string
	gone = append(gone, collectGone(w, "Gateway API Gateway", a.gateways, "Gateway", gateways)...)
	gone = append(gone, collectGone(w, "ListenerSet", a.sets, "Gateway", gateways)...)
	gone = append(gone, collectGone(w, "HTTPRoute", a.routes, "Gateway", gateways)...)
	for k, g := range a.grants {
		if namespaceGone(w, g) {
			delete(a.grants, k)
			gone = append(gone, "ReferenceGrant "+k)
		}
	}
	return gone
}

// collectGone removes from objs, of kind, those whose owner of ownerKind is not among owners or
// whose namespace is gone: the garbage collector's (or the namespace controller's) to remove.
func collectGone[T client.Object, O metav1.Object](w *World, kind string, objs map[string]T, ownerKind string, owners []O) []string {
	var gone []string
	for k, o := range objs {
		if ownerGone(o, ownerKind, owners) || namespaceGone(w, o) {
			delete(objs, k)
			gone = append(gone, kind+" "+k)
		}
	}
	return gone
}

// forget is the reconcile of each Gateway that no longer exists, as the operator runs it
// (GatewayReconciler.forgetGatewayAPI: core.ForgetGateway over the world, its deletions
// recorded): for each Gateway the manifests delete (the operator hears of the deletion), and for
// each one a managed grant leads back to while no Gateway its label names exists
// (desired.OrphanedGrantOwner: the informer's listing of the grant brings that request). A grant
// that leads nowhere stays, as it does in the cluster.
func forget(rd worldReads, gateways []*routingv1alpha1.Gateway) []string {
	if rd.w.ReferenceGrantAPIMissing {
		return nil
	}
	live := map[string]bool{}
	for _, gw := range gateways {
		live[desired.GatewayLabelValue(gw.Namespace, gw.Name)] = true
	}
	gone := map[types.NamespacedName]bool{}
	for _, k := range rd.w.DeletedGateways {
		gone[k] = true
	}
	for _, g := range rd.api.grants {
		if ns, name, ok := desired.OrphanedGrantOwner(g); ok && !live[g.Labels[desired.LabelGateway]] {
			gone[types.NamespacedName{Namespace: ns, Name: name}] = true
		}
	}
	var deletes []string
	for _, k := range slices.SortedFunc(maps.Keys(gone), func(a, b types.NamespacedName) int { return strings.Compare(a.String(), b.String()) }) {
		_ = core.ForgetGateway(context.Background(), rd, record(rd.api.grants, &deletes), k.Namespace, k.Name) // the world's reads and writes do not fail
	}
	return deletes
}

// clone is a copy whose maps can be written without changing a's (the objects are replaced, never
// changed, by the writes).
func (a *gatewayAPIObjects) clone() *gatewayAPIObjects {
	return &gatewayAPIObjects{gateways: maps.Clone(a.gateways), sets: maps.Clone(a.sets), routes: maps.Clone(a.routes), grants: maps.Clone(a.grants)}
}

// into puts the objects as the prediction leaves them into out, sorted.
func (a *gatewayAPIObjects) into(out *Prediction) {
	out.GatewayAPIGateways = sortedValues(a.gateways)
	out.ListenerSets = sortedValues(a.sets)
	out.HTTPRoutes = sortedValues(a.routes)
	out.ReferenceGrants = sortedValues(a.grants)
}

func sortedValues[T client.Object](m map[string]T) []T {
	return slices.SortedFunc(maps.Values(m), byKey)
}
