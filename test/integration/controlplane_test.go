package integration

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	externaldnsv1alpha1 "sigs.k8s.io/external-dns/apis/v1alpha1"
	"sigs.k8s.io/external-dns/endpoint"

	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
)

// TestControlPlane_GarbageCollectsOwnedObjects proves kube-controller-manager runs: a DNSEndpoint
// owned by a ServiceRoute disappears when the ServiceRoute is deleted, and a namespace deletion
// completes. Later tests rely on both.
func TestControlPlane_GarbageCollectsOwnedObjects(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t, "gc")

	route := &routingv1alpha1.ServiceRoute{
		ObjectMeta: metav1.ObjectMeta{Name: "api-route", Namespace: ns},
		Spec:       routingv1alpha1.ServiceRouteSpec{ServiceName: "api", GatewayName: "default-gateway", Environment: "dev", Application: "myapp"},
	}
	require.NoError(t, env.Client.Create(ctx, route))
	owner, err := ownerReference(route)
	require.NoError(t, err)
	dnsEndpoint := &externaldnsv1alpha1.DNSEndpoint{
		ObjectMeta: metav1.ObjectMeta{Name: "api-route-external-dns-weu", Namespace: ns, OwnerReferences: []metav1.OwnerReference{owner}},
		Spec: externaldnsv1alpha1.DNSEndpointSpec{Endpoints: []*endpoint.Endpoint{
			{DNSName: "api-ns-d-dev-myapp.example.com", RecordType: "CNAME", Targets: endpoint.Targets{"aks01-weu-internal.example.com"}},
		}},
	}
	require.NoError(t, env.Client.Create(ctx, dnsEndpoint))

	require.NoError(t, env.Client.Delete(ctx, route, client.PropagationPolicy(metav1.DeletePropagationBackground)))
	require.Eventually(t, func() bool {
		err := env.Client.Get(ctx, client.ObjectKeyFromObject(dnsEndpoint), &externaldnsv1alpha1.DNSEndpoint{})
		return apierrors.IsNotFound(err)
	}, 60*time.Second, 200*time.Millisecond, "the owned DNSEndpoint was not garbage collected; kube-controller-manager log:\n%s", env.ControllerManagerLog())

	require.NoError(t, env.Client.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	require.Eventually(t, func() bool {
		err := env.Client.Get(ctx, client.ObjectKey{Name: ns}, &corev1.Namespace{})
		return apierrors.IsNotFound(err)
	}, 60*time.Second, 200*time.Millisecond, "namespace %s was not deleted; kube-controller-manager log:\n%s", ns, env.ControllerManagerLog())
}

// TestControlPlane_DiscoveryListsRouterCategory checks what `kubectl get router` and the short
// names rely on: every kind is in the router category with its short name.
func TestControlPlane_DiscoveryListsRouterCategory(t *testing.T) {
	dc, err := discovery.NewDiscoveryClientForConfig(env.Config)
	require.NoError(t, err)
	want := map[string]string{ // resource -> short name
		"cluster.router.io/v1alpha1/clusteridentities": "cid",
		"cluster.router.io/v1alpha1/dnsconfigurations": "dnscfg",
		"routing.router.io/v1alpha1/gateways":          "rgw",
		"routing.router.io/v1alpha1/dnspolicies":       "dnsp",
		"routing.router.io/v1alpha1/serviceroutes":     "sr",
	}
	for _, gv := range []string{"cluster.router.io/v1alpha1", "routing.router.io/v1alpha1"} {
		list, err := dc.ServerResourcesForGroupVersion(gv)
		require.NoError(t, err)
		for _, res := range list.APIResources {
			short, ok := want[gv+"/"+res.Name]
			if !ok {
				continue // subresources
			}
			require.Contains(t, res.Categories, "router", res.Name)
			require.Equal(t, []string{short}, res.ShortNames, res.Name)
			delete(want, gv+"/"+res.Name)
		}
	}
	require.Empty(t, want, "resources missing from discovery")
}

func ownerReference(obj client.Object) (metav1.OwnerReference, error) {
	gvk, err := apiutil.GVKForObject(obj, env.Scheme)
	if err != nil {
		return metav1.OwnerReference{}, err
	}
	return *metav1.NewControllerRef(obj, gvk), nil
}
