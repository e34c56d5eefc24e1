package scheme

import (
	"testing"

	"github.com/stretchr/testify/assert"
	istionetworkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	externaldnsv1alpha1 "sigs.k8s.io/external-dns/apis/v1alpha1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	clusterv1alpha1 "github.com/service-router/service-router-operator/apis/cluster/v1alpha1"
	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
)

// TestNew_KnowsEveryKindTheOperatorHandles: the scheme is cut down to what the operator reads and
// writes; a kind missing from it would fail at run time ("no kind is registered").
func TestNew_KnowsEveryKindTheOperatorHandles(t *testing.T) {
	s := New()
	for _, obj := range []runtime.Object{
		&clusterv1alpha1.ClusterIdentity{}, &clusterv1alpha1.ClusterIdentityList{},
		&clusterv1alpha1.DNSConfiguration{}, &clusterv1alpha1.DNSConfigurationList{},
		&routingv1alpha1.Gateway{}, &routingv1alpha1.GatewayList{},
		&routingv1alpha1.DNSPolicy{}, &routingv1alpha1.DNSPolicyList{},
		&routingv1alpha1.ServiceRoute{}, &routingv1alpha1.ServiceRouteList{},
		&externaldnsv1alpha1.DNSEndpoint{}, &externaldnsv1alpha1.DNSEndpointList{},
		&istionetworkingv1.Gateway{}, &istionetworkingv1.GatewayList{},
		&gwv1.Gateway{}, &gwv1.GatewayList{}, &gwv1.ListenerSet{}, &gwv1.ListenerSetList{},
		&gwv1.HTTPRoute{}, &gwv1.HTTPRouteList{}, &gwv1.ReferenceGrant{}, &gwv1.ReferenceGrantList{},
		&corev1.Service{}, &corev1.ServiceList{}, &corev1.Namespace{}, &corev1.NamespaceList{},
		&eventsv1.Event{},
	} {
		_, err := apiutil.GVKForObject(obj, s)
		assert.NoError(t, err, "%T", obj)
	}
	_, err := apiutil.GVKForObject(&rbacv1.Role{}, s)
	assert.Error(t, err, "only the groups the operator uses: not every built-in one")
}
