package routerplan

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
	"github.com/service-router/service-router-operator/internal/desired"
	"github.com/service-router/service-router-operator/internal/naming"
)

// gatewayYAML is the Gateway gw of baseWorld with the given extra spec fields.
func gatewayYAML(extra string) string {
	return fmt.Sprintf(`apiVersion: routing.router.io/v1alpha1
kind: Gateway
metadata: {name: gw, namespace: istio-system}
spec: {controller: ingress, credentialName: cert, targetPostfix: internal%s}`, extra)
}

const (
	host0, host1 = "svc0-ns-d-dev-shop.example.com", "svc1-ns-d-dev-shop.example.com"
	target       = "aks01-weu-internal.example.com"
	addressWEU   = "istio-system/gateway-controller-ingress-internal-external-dns-weu"
	addressNEU   = "istio-system/gateway-controller-ingress-internal-external-dns-neu"
)

// gatewayAPIWorld is baseWorld(n) converged with gw on the GatewayAPI backend, its Gateway API
// Gateway reporting address (none when empty), and the address records following it.
func gatewayAPIWorld(t *testing.T, n int, address string) *World {
	t.Helper()
	w := baseWorld(n)
	w.Namespaces["certs"] = Namespace{Labels: map[string]string{"kubernetes.io/metadata.name": "certs"}}
	w.Gateways[0].Spec.Backend = routingv1alpha1.BackendGatewayAPI
	w = converge(t, w)
	require.Len(t, w.GatewayAPIGateways, 1)
	if address != "" {
		ip := gwv1.IPAddressType
		w.GatewayAPIGateways[0].Status.Addresses = []gwv1.GatewayStatusAddress{{Type: &ip, Value: address}}
		w = converge(t, w)
	}
	return w
}

func objectChanges(r Result) []string {
	var out []string
	for _, o := range r.Objects {
		out = append(out, fmt.Sprintf("%s %s %s %s", o.Action, o.Kind, o.Object, o.By))
	}
	return out
}

func TestPlan_GatewayAPIBackend(t *testing.T) {
	istio := converge(t, baseWorld(2))
	for _, tt := range []struct {
		name        string
		world       func(t *testing.T) *World
		del         bool
		docs        []string
		wantZones   []string
		wantIstio   []HostChange
		wantListen  []ListenerChange
		wantObjects []string
		wantGateway string
		wantDeletes int
	}{
		{name: "Istio to Gateway API: the Istio Gateway goes once the Gateway API objects are written, the records stay",
			world:     func(*testing.T) *World { return istio },
			docs:      []string{gatewayYAML(", backend: GatewayAPI")},
			wantIstio: []HostChange{{Gateway: "istio-system/gw", Removed: []string{"app/" + host0, "app/" + host1}}},
			wantListen: []ListenerChange{{Object: "Gateway API Gateway istio-system/gw", Added: []string{target}},
				{Object: "ListenerSet istio-system/gw.app", Added: []string{host0, host1}}},
			wantObjects: []string{"delete Istio Gateway istio-system/gw ", "create Gateway API Gateway istio-system/gw ", "create ListenerSet istio-system/gw.app "},
			// No address yet: the address records are kept as they are.
			wantGateway: "Pending " + routingv1alpha1.ReasonLoadBalancerAddressPending, wantDeletes: 1},
		{name: "Gateway API to Istio with the same address: the Gateway API objects go, the records stay",
			world:     func(t *testing.T) *World { return gatewayAPIWorld(t, 2, "10.0.0.1") },
			docs:      []string{gatewayYAML("")},
			wantIstio: []HostChange{{Gateway: "istio-system/gw", Added: []string{"app/" + host0, "app/" + host1}}},
			wantListen: []ListenerChange{{Object: "Gateway API Gateway istio-system/gw", Removed: []string{target}},
				{Object: "ListenerSet istio-system/gw.app", Removed: []string{host0, host1}}},
			wantObjects: []string{"create Istio Gateway istio-system/gw ", "delete Gateway API Gateway istio-system/gw ", "delete ListenerSet istio-system/gw.app "},
			wantGateway: "Active " + routingv1alpha1.ReasonGatewayCreated, wantDeletes: 2},
		{name: "Gateway API to Istio with another address: the address records follow the ingress Service",
			world:       func(t *testing.T) *World { return gatewayAPIWorld(t, 1, "10.9.9.9") },
			docs:        []string{gatewayYAML("")},
			wantZones:   []string{"external-dns-weu ~" + addressWEU, "external-dns-neu ~" + addressNEU},
			wantIstio:   []HostChange{{Gateway: "istio-system/gw", Added: []string{"app/" + host0}}},
			wantListen:  []ListenerChange{{Object: "Gateway API Gateway istio-system/gw", Removed: []string{target}}, {Object: "ListenerSet istio-system/gw.app", Removed: []string{host0}}},
			wantObjects: []string{"create Istio Gateway istio-system/gw ", "delete Gateway API Gateway istio-system/gw ", "delete ListenerSet istio-system/gw.app "},
			wantGateway: "Active " + routingv1alpha1.ReasonGatewayCreated, wantDeletes: 2},
		{name: "a route added: its hostname joins its namespace's ListenerSet",
			world:       func(t *testing.T) *World { return gatewayAPIWorld(t, 1, "10.0.0.1") },
			docs:        []string{fmt.Sprintf(routeYAML, "r9", "svc9")},
			wantZones:   []string{"external-dns-weu +app/r9-external-dns-weu"},
			wantListen:  []ListenerChange{{Object: "ListenerSet istio-system/gw.app", Added: []string{"svc9-ns-d-dev-shop.example.com"}}},
			wantObjects: []string{"change ListenerSet istio-system/gw.app "},
			wantGateway: "Active " + routingv1alpha1.ReasonGatewayCreated},
		{name: "allowedRoutes narrowed: the namespace's ListenerSet and records go",
			world:       func(t *testing.T) *World { return gatewayAPIWorld(t, 2, "10.0.0.1") },
			docs:        []string{gatewayYAML(", backend: GatewayAPI, allowedRoutes: {namespaces: {from: Same}}")},
			wantZones:   []string{"external-dns-weu -app/r0-external-dns-weu", "external-dns-weu -app/r1-external-dns-weu"},
			wantListen:  []ListenerChange{{Object: "ListenerSet istio-system/gw.app", Removed: []string{host0, host1}}},
			wantObjects: []string{"delete ListenerSet istio-system/gw.app "},
			wantGateway: "Active " + routingv1alpha1.ReasonGatewayCreated, wantDeletes: 3},
		{name: "RedirectToHTTPS and a Secret in another namespace: the redirect route and the ReferenceGrant",
			world: func(t *testing.T) *World { return gatewayAPIWorld(t, 1, "10.0.0.1") },
			docs:  []string{gatewayYAML(", backend: GatewayAPI, plainHTTP: RedirectToHTTPS, ingressNamespace: certs")},
			wantObjects: []string{"change Gateway API Gateway istio-system/gw ", "change ListenerSet istio-system/gw.app ",
				"create HTTPRoute istio-system/gw-https-redirect ", "create ReferenceGrant certs/service-router.istio-system.gw "},
			// The ingress namespace moved: the address records follow it (same names elsewhere).
			wantZones: []string{"external-dns-weu +certs/gateway-controller-ingress-internal-external-dns-weu", "external-dns-weu -" + addressWEU,
				"external-dns-neu +certs/gateway-controller-ingress-internal-external-dns-neu", "external-dns-neu -" + addressNEU},
			wantGateway: "Active " + routingv1alpha1.ReasonGatewayCreated, wantDeletes: 2},
		{name: "the Gateway deleted: the garbage collector takes its Gateway API objects, the operator its ReferenceGrant",
			world: func(t *testing.T) *World {
				w := baseWorld(1)
				w.Namespaces["certs"] = Namespace{Labels: map[string]string{"kubernetes.io/metadata.name": "certs"}}
				w.Gateways[0].Spec.Backend, w.Gateways[0].Spec.IngressNamespace = routingv1alpha1.BackendGatewayAPI, "certs"
				return converge(t, w)
			},
			del:  true,
			docs: []string{gatewayYAML("")},
			// Its Gateway API Gateway never had an address: there are no address records.
			wantZones: []string{"external-dns-weu -app/r0-external-dns-weu"},
			wantListen: []ListenerChange{{Object: "Gateway API Gateway istio-system/gw", Removed: []string{target}},
				{Object: "ListenerSet istio-system/gw.app", Removed: []string{host0}}},
			wantObjects: []string{"delete Gateway API Gateway istio-system/gw garbage collector", "delete ListenerSet istio-system/gw.app garbage collector",
				"delete ReferenceGrant certs/service-router.istio-system.gw "},
			wantDeletes: 2}, // the route's record and the ReferenceGrant
	} {
		t.Run(tt.name, func(t *testing.T) {
			r, p := planOf(t, tt.world(t), tt.del, DefaultSettings, tt.docs...)
			assert.ElementsMatch(t, tt.wantZones, summary(r))
			if tt.wantIstio == nil {
				tt.wantIstio = []HostChange{}
			}
			if tt.wantListen == nil {
				tt.wantListen = []ListenerChange{}
			}
			assert.Equal(t, tt.wantIstio, r.IstioHosts)
			assert.Equal(t, tt.wantListen, r.GatewayAPIHosts)
			assert.ElementsMatch(t, tt.wantObjects, objectChanges(r))
			if gw, ok := p.Gateways["istio-system/gw"]; ok {
				assert.Equal(t, tt.wantGateway, gw.Phase+" "+gw.Reason, gw.Message)
				// The plan reports a Gateway whose Ready state changes, with the operator's message.
				changed := slices.ContainsFunc(r.Gateways, func(c GatewayChange) bool { return c.After.Reason == gw.Reason && c.After.Message == gw.Message })
				assert.Equal(t, gw.Reason != routingv1alpha1.ReasonGatewayCreated, changed, "%+v", r.Gateways)
			}
			assert.Equal(t, tt.wantDeletes, r.Guard.Deletions, r.Guard.Message)
		})
	}
}

func TestPredict_WithoutTheGatewayAPIWhatExistsIsKept(t *testing.T) {
	t.Run("a GatewayAPI Gateway keeps its objects and says so", func(t *testing.T) {
		w := gatewayAPIWorld(t, 1, "10.0.0.1")
		w.GatewayAPIMissing = true
		r, p := planOf(t, w, false, DefaultSettings, fmt.Sprintf(routeYAML, "r9", "svc9"))
		assert.Equal(t, routingv1alpha1.ReasonGatewayAPINotInstalled, p.Gateways["istio-system/gw"].Reason)
		require.Len(t, r.Gateways, 1, "the plan says so")
		assert.Contains(t, r.Gateways[0].After.Message, "what exists is kept")
		assert.Empty(t, r.GatewayAPIHosts)
		assert.Empty(t, r.Objects)
		assert.Equal(t, keys(w.ListenerSets), keys(p.ListenerSets))
	})
	t.Run("switching to it keeps the Istio Gateway", func(t *testing.T) {
		w := converge(t, baseWorld(1))
		w.GatewayAPIMissing = true
		r, p := planOf(t, w, false, DefaultSettings, gatewayYAML(", backend: GatewayAPI"))
		assert.Equal(t, routingv1alpha1.ReasonGatewayAPINotInstalled, p.Gateways["istio-system/gw"].Reason)
		assert.Empty(t, r.IstioHosts)
		assert.Empty(t, r.Objects)
		assert.Zero(t, r.Guard.Deletions)
	})
}

func TestPredict_GatewayAPIObjectsOfOthersAreLeftAlone(t *testing.T) {
	w := gatewayAPIWorld(t, 1, "10.0.0.1")
	// A managed ListenerSet controlled by something else than a routing Gateway beside the
	// generated one: neither changed nor deleted.
	other := w.ListenerSets[0].DeepCopy()
	other.Name, other.UID = "other.app", "other"
	other.OwnerReferences[0].APIVersion, other.OwnerReferences[0].Kind = "example.com/v1", "Thing"
	w.ListenerSets = append(w.ListenerSets, other)
	r, p := planOf(t, w, false, DefaultSettings, fmt.Sprintf(routeYAML, "r9", "svc9"))
	assert.Contains(t, keys(p.ListenerSets), "istio-system/other.app")
	assert.Equal(t, []string{"change ListenerSet istio-system/gw.app "}, objectChanges(r))

	// The name the operator wants, held by such a ListenerSet: left untouched, and said so.
	taken := gatewayAPIWorld(t, 1, "10.0.0.1")
	taken.ListenerSets[0].OwnerReferences[0].APIVersion, taken.ListenerSets[0].OwnerReferences[0].Kind = "example.com/v1", "Thing"
	r, p = planOf(t, taken, false, DefaultSettings, fmt.Sprintf(routeYAML, "r9", "svc9"))
	assert.Equal(t, routingv1alpha1.ReasonOwnershipConflict, p.Gateways["istio-system/gw"].Reason, p.Gateways["istio-system/gw"].Message)
	assert.Contains(t, p.Gateways["istio-system/gw"].Message, "ListenerSet istio-system/gw.app exists and is not managed by this Gateway")
	assert.Empty(t, r.Objects, "the foreign ListenerSet is left untouched")
}

func TestWriteTable_GatewayAPIHostsAndObjects(t *testing.T) {
	r, _ := planOf(t, converge(t, baseWorld(1)), false, DefaultSettings, gatewayYAML(", backend: GatewayAPI"))
	var b strings.Builder
	require.NoError(t, WriteTable(&b, r))
	out := b.String()
	for _, want := range []string{
		"Istio hosts:\n  Gateway istio-system/gw: 0 added, 1 removed\n    - app/" + host0,
		"Gateway API hosts:\n  Gateway API Gateway istio-system/gw: 1 added, 0 removed\n    + " + target + "\n  ListenerSet istio-system/gw.app: 1 added, 0 removed\n    + " + host0,
		"Gateways:\n  GATEWAY          READY                                                   WHY\n  istio-system/gw  True GatewayCreated → False LoadBalancerAddressPending  the Gateway API Gateway istio-system/gw (class istio) has no address",
		"Generated objects:\n  - Istio Gateway istio-system/gw\n  + Gateway API Gateway istio-system/gw\n  + ListenerSet istio-system/" + desired.ListenerSetName("gw", "app", 1),
	} {
		assert.Contains(t, out, want)
	}
}

// A deleted Gateway's ReferenceGrants go as the operator removes them: by the Gateway's key when
// the manifests delete it (the operator hears of the deletion), and for a Gateway already gone
// only when the grant leads back to it (desired.OrphanedGrantOwner). A grant an earlier release
// wrote without the annotation, whose label was shortened, leads nowhere and stays.
func TestPredict_ReferenceGrantsForgottenByTheOperatorsRule(t *testing.T) {
	long := strings.Repeat("g", 60)
	olderGrant := func(name, gateway string) *gwv1.ReferenceGrant {
		return &gwv1.ReferenceGrant{ObjectMeta: metav1.ObjectMeta{Namespace: "certs", Name: name, UID: types.UID("uid-" + name),
			Labels: map[string]string{naming.LabelManagedBy: naming.ManagedByValue, desired.LabelGateway: desired.GatewayLabelValue("istio-system", gateway)}}}
	}
	w := baseWorld(1)
	w.Namespaces["certs"] = Namespace{Labels: map[string]string{"kubernetes.io/metadata.name": "certs"}}
	w.Gateways[0].Spec.Backend, w.Gateways[0].Spec.IngressNamespace = routingv1alpha1.BackendGatewayAPI, "certs"
	w = converge(t, w)
	w.ReferenceGrants = append(w.ReferenceGrants, olderGrant("traced", "gone"), olderGrant("untraceable", long))
	require.Greater(t, len(desired.GatewayLabelValue("istio-system", long)), 62, "a shortened label")

	p := Predict(w, DefaultSettings)
	assert.Equal(t, []string{"ReferenceGrant certs/traced"}, p.OperatorDeletes, "a Gateway already gone: only the grant that leads back to it")
	assert.ElementsMatch(t, []string{"certs/service-router.istio-system.gw", "certs/untraceable"}, keys(p.ReferenceGrants))

	// A Gateway the manifests delete: its grant goes by the Gateway's key, even one whose label
	// was shortened and that carries no annotation.
	w = baseWorld(0)
	w.Namespaces["certs"] = Namespace{Labels: map[string]string{"kubernetes.io/metadata.name": "certs"}}
	w.Gateways[0].Name = long
	w.Gateways[0].Spec.Backend, w.Gateways[0].Spec.IngressNamespace = routingv1alpha1.BackendGatewayAPI, "certs"
	w = converge(t, w)
	require.Len(t, w.ReferenceGrants, 1)
	delete(w.ReferenceGrants[0].Annotations, desired.AnnotationGateway)
	_, p = planOf(t, w, true, DefaultSettings, strings.Replace(gatewayYAML(""), "name: gw,", "name: "+long+",", 1))
	assert.Equal(t, []string{"ReferenceGrant " + key(w.ReferenceGrants[0])}, p.OperatorDeletes)
	assert.Empty(t, p.ReferenceGrants)
}
