package apply_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	istionetworkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	externaldnsv1alpha1 "sigs.k8s.io/external-dns/apis/v1alpha1"
	"sigs.k8s.io/external-dns/endpoint"

	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
	"github.com/service-router/service-router-operator/internal/apply"
	"github.com/service-router/service-router-operator/internal/desired"
	"github.com/service-router/service-router-operator/internal/naming"
	"github.com/service-router/service-router-operator/internal/policy"
)

var route = &routingv1alpha1.ServiceRoute{ObjectMeta: metav1.ObjectMeta{Name: "api", Namespace: "team", UID: "route-uid"}}

func want(controller, target string) *externaldnsv1alpha1.DNSEndpoint {
	return desired.RouteEndpoint(route, policy.Controller{Name: controller, Region: controller}, "api-ns-d-dev-app.example.com", target)
}

// existing is a DNSEndpoint as the API server holds it: desired plus server fields, changed by mutate.
func existing(d *externaldnsv1alpha1.DNSEndpoint, uid string, mutate ...func(*externaldnsv1alpha1.DNSEndpoint)) *externaldnsv1alpha1.DNSEndpoint {
	ep := d.DeepCopy()
	ep.UID = types.UID(uid)
	ep.ResourceVersion = "7"
	for _, m := range mutate {
		m(ep)
	}
	return ep
}

func foreign(ep *externaldnsv1alpha1.DNSEndpoint) {
	ep.Labels = map[string]string{"team": "dns"}
	ep.OwnerReferences = nil
}

func names(eps []*externaldnsv1alpha1.DNSEndpoint) []string {
	var out []string
	for _, ep := range eps {
		out = append(out, ep.Name)
	}
	return out
}

func TestDiff_Endpoints(t *testing.T) {
	kind := desired.RouteEndpointKind(route.Name)
	weu, neu := want("weu", "aks01-weu-internal.example.com"), want("neu", "aks01-weu-internal.example.com")
	tests := []struct {
		name          string
		desired       []*externaldnsv1alpha1.DNSEndpoint
		current       []*externaldnsv1alpha1.DNSEndpoint
		create        []string
		update        []string
		deleted       []string
		unchanged     []string
		conflicts     []string
		checkUpdated  func(*testing.T, *externaldnsv1alpha1.DNSEndpoint)
		writesNothing bool
	}{
		{name: "nothing exists: create all", desired: []*externaldnsv1alpha1.DNSEndpoint{weu, neu}, create: []string{weu.Name, neu.Name}},
		{name: "owned and equal: nothing to write", desired: []*externaldnsv1alpha1.DNSEndpoint{weu},
			current: []*externaldnsv1alpha1.DNSEndpoint{existing(weu, "1")}, unchanged: []string{weu.Name}, writesNothing: true},
		{name: "managed fields, status and extra labels are noise", desired: []*externaldnsv1alpha1.DNSEndpoint{weu},
			current: []*externaldnsv1alpha1.DNSEndpoint{existing(weu, "1", func(ep *externaldnsv1alpha1.DNSEndpoint) {
				ep.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationUpdate}}
				ep.Labels["team"] = "x"
				ep.Annotations["note"] = "kept"
				ep.Status.ObservedGeneration = 3
			})}, unchanged: []string{weu.Name}, writesNothing: true},
		{name: "owned with other records: update keeps others' labels", desired: []*externaldnsv1alpha1.DNSEndpoint{weu},
			current: []*externaldnsv1alpha1.DNSEndpoint{existing(weu, "1", func(ep *externaldnsv1alpha1.DNSEndpoint) {
				ep.Spec.Endpoints[0].Targets = endpoint.Targets{"old.example.com"}
				ep.Labels["team"] = "x"
			})}, update: []string{weu.Name},
			checkUpdated: func(t *testing.T, ep *externaldnsv1alpha1.DNSEndpoint) {
				assert.Equal(t, endpoint.Targets{"aks01-weu-internal.example.com"}, ep.Spec.Endpoints[0].Targets)
				assert.Equal(t, "x", ep.Labels["team"])
				assert.Equal(t, "7", ep.ResourceVersion, "the update carries the resourceVersion it was computed from")
				assert.Equal(t, types.UID("1"), ep.UID)
			}},
		{name: "owned with a label missing: labels-only update", desired: []*externaldnsv1alpha1.DNSEndpoint{weu},
			current: []*externaldnsv1alpha1.DNSEndpoint{existing(weu, "1", func(ep *externaldnsv1alpha1.DNSEndpoint) {
				delete(ep.Labels, naming.LabelRegion)
			})}, update: []string{weu.Name},
			checkUpdated: func(t *testing.T, ep *externaldnsv1alpha1.DNSEndpoint) {
				assert.Equal(t, "weu", ep.Labels[naming.LabelRegion])
			}},
		{name: "owned by the previous owner of the same name (re-created route): updated, not a conflict", desired: []*externaldnsv1alpha1.DNSEndpoint{weu},
			current: []*externaldnsv1alpha1.DNSEndpoint{existing(weu, "1", func(ep *externaldnsv1alpha1.DNSEndpoint) {
				ep.OwnerReferences[0].UID = "old-route-uid"
			})}, update: []string{weu.Name},
			checkUpdated: func(t *testing.T, ep *externaldnsv1alpha1.DNSEndpoint) {
				assert.Equal(t, types.UID("route-uid"), ep.OwnerReferences[0].UID)
			}},
		{name: "foreign with the desired name: conflict, untouched", desired: []*externaldnsv1alpha1.DNSEndpoint{weu},
			current: []*externaldnsv1alpha1.DNSEndpoint{existing(weu, "1", foreign)}, conflicts: []string{"team/" + weu.Name}, writesNothing: true},
		{name: "managed by us but controlled by another route: conflict", desired: []*externaldnsv1alpha1.DNSEndpoint{weu},
			current: []*externaldnsv1alpha1.DNSEndpoint{existing(weu, "1", func(ep *externaldnsv1alpha1.DNSEndpoint) {
				ep.OwnerReferences[0].Name = "other"
			})}, conflicts: []string{"team/" + weu.Name}, writesNothing: true},
		{name: "foreign but marked for adoption: taken over in place", desired: []*externaldnsv1alpha1.DNSEndpoint{weu},
			current: []*externaldnsv1alpha1.DNSEndpoint{existing(weu, "1", foreign, func(ep *externaldnsv1alpha1.DNSEndpoint) {
				ep.Annotations = map[string]string{naming.AnnotationAdopt: "true"}
			})}, update: []string{weu.Name},
			checkUpdated: func(t *testing.T, ep *externaldnsv1alpha1.DNSEndpoint) {
				assert.Equal(t, types.UID("1"), ep.UID, "adoption keeps the object")
				assert.True(t, desired.OwnedBy(ep, "ServiceRoute", route.Name))
				assert.Equal(t, "dns", ep.Labels["team"])
			}},
		{name: "adopt annotation with another value: still foreign", desired: []*externaldnsv1alpha1.DNSEndpoint{weu},
			current: []*externaldnsv1alpha1.DNSEndpoint{existing(weu, "1", foreign, func(ep *externaldnsv1alpha1.DNSEndpoint) {
				ep.Annotations = map[string]string{naming.AnnotationAdopt: "yes"}
			})}, conflicts: []string{"team/" + weu.Name}, writesNothing: true},
		{name: "owned and no longer desired: deleted", current: []*externaldnsv1alpha1.DNSEndpoint{existing(weu, "1"), existing(neu, "2")},
			desired: []*externaldnsv1alpha1.DNSEndpoint{weu}, unchanged: []string{weu.Name}, deleted: []string{neu.Name}},
		{name: "foreign and not desired: never deleted", current: []*externaldnsv1alpha1.DNSEndpoint{existing(neu, "2", foreign)}, writesNothing: true},
		{name: "adoptable and not desired: never deleted", current: []*externaldnsv1alpha1.DNSEndpoint{existing(neu, "2", foreign, func(ep *externaldnsv1alpha1.DNSEndpoint) {
			ep.Annotations = map[string]string{naming.AnnotationAdopt: "true"}
		})}, writesNothing: true},
		{name: "owned without a UID (not from the API server): not deleted", current: []*externaldnsv1alpha1.DNSEndpoint{existing(neu, "")}, writesNothing: true},
		{name: "nothing desired: every owned one goes", current: []*externaldnsv1alpha1.DNSEndpoint{existing(weu, "1"), existing(neu, "2")},
			deleted: []string{neu.Name, weu.Name}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ch := apply.Diff(kind, tt.desired, tt.current)
			assert.Equal(t, tt.create, names(ch.Create), "create")
			assert.Equal(t, tt.update, names(ch.Update), "update")
			assert.Equal(t, tt.deleted, names(ch.Delete), "delete")
			assert.Equal(t, tt.unchanged, names(ch.Unchanged), "unchanged")
			var conflicts []string
			for _, c := range ch.Conflicts {
				conflicts = append(conflicts, c.Key)
				assert.Contains(t, c.Why, "not managed")
			}
			assert.Equal(t, tt.conflicts, conflicts, "conflicts")
			assert.Equal(t, tt.writesNothing, ch.Empty(), "writes nothing")
			for _, d := range ch.Delete {
				assert.NotEmpty(t, d.UID, "a delete must carry the UID precondition")
			}
			if tt.checkUpdated != nil {
				tt.checkUpdated(t, ch.Update[0])
			}
		})
	}
}

// TestDiff_DoesNotModifyItsInputs: the current objects come from the informer cache, which must
// never be mutated.
func TestDiff_DoesNotModifyItsInputs(t *testing.T) {
	w := want("weu", "new.example.com")
	cur := existing(want("weu", "old.example.com"), "1", func(ep *externaldnsv1alpha1.DNSEndpoint) { ep.Labels["team"] = "x" })
	before := cur.DeepCopy()
	ch := apply.Diff(desired.RouteEndpointKind(route.Name), []*externaldnsv1alpha1.DNSEndpoint{w}, []*externaldnsv1alpha1.DNSEndpoint{cur})
	assert.Len(t, ch.Update, 1)
	assert.Equal(t, before, cur)
}

func TestTaken(t *testing.T) {
	kind := desired.RouteEndpointKind(route.Name)
	weu := want("weu", "t.example.com")
	assert.Equal(t, apply.TakenByUs, apply.Taken(kind, existing(weu, "1")), "ours, not in the cache yet: cache lag")
	assert.Equal(t, apply.TakenByOther, apply.Taken(kind, existing(weu, "1", foreign)))
	assert.Equal(t, apply.TakenAdoptable, apply.Taken(kind, existing(weu, "1", foreign, func(ep *externaldnsv1alpha1.DNSEndpoint) {
		ep.Annotations = map[string]string{naming.AnnotationAdopt: "true"}
	})))
}

func TestDiff_IstioGateway(t *testing.T) {
	gw := &routingv1alpha1.Gateway{ObjectMeta: metav1.ObjectMeta{Name: "gw", Namespace: "istio-system", UID: "gw-uid"},
		Spec: routingv1alpha1.GatewaySpec{Controller: "aks-istio-ingressgateway-internal", CredentialName: "cert", TargetPostfix: "internal"}}
	kind := desired.IstioGatewayKind(gw.Name)
	wantGW := desired.IstioGateway(gw, []string{"a.example.com", "b.example.com"})
	current := wantGW.DeepCopy()
	current.UID = "ig-uid"

	ch := apply.Diff(kind, []*istionetworkingv1.Gateway{wantGW}, []*istionetworkingv1.Gateway{current})
	assert.True(t, ch.Empty(), "equal hosts: no write")

	fewer := desired.IstioGateway(gw, []string{"a.example.com"})
	ch = apply.Diff(kind, []*istionetworkingv1.Gateway{fewer}, []*istionetworkingv1.Gateway{current})
	if assert.Len(t, ch.Update, 1) {
		assert.Equal(t, []string{"a.example.com"}, ch.Update[0].Spec.Servers[0].Hosts)
		assert.Equal(t, []string{"a.example.com", "b.example.com"}, current.Spec.Servers[0].Hosts, "the cached object is not modified")
	}

	ch = apply.Diff(kind, nil, []*istionetworkingv1.Gateway{current})
	assert.Len(t, ch.Delete, 1, "no hosts wanted: the owned Istio Gateway goes")

	legacy := current.DeepCopy()
	legacy.Labels, legacy.OwnerReferences = nil, nil
	ch = apply.Diff(kind, []*istionetworkingv1.Gateway{wantGW}, []*istionetworkingv1.Gateway{legacy})
	assert.Equal(t, []apply.Conflict{{Key: "istio-system/gw", Why: "Istio Gateway exists and is not managed by this owner"}}, ch.Conflicts)
	ch = apply.Diff(kind, nil, []*istionetworkingv1.Gateway{legacy})
	assert.True(t, ch.Empty(), "a foreign Istio Gateway is never deleted")
}
