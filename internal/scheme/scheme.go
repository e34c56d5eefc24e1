// Package scheme builds the operator's runtime.Scheme: the Kubernetes groups it reads or writes
// (core/v1, events.k8s.io/v1), both router.io API groups, Istio networking/v1, ExternalDNS
// externaldns.k8s.io/v1alpha1 and the Gateway API gateway.networking.k8s.io/v1. Tests that handle other Kubernetes kinds add client-go's scheme.
package scheme

import (
	istionetworkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	externaldnsv1alpha1 "sigs.k8s.io/external-dns/apis/v1alpha1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	clusterv1alpha1 "github.com/service-router/service-router-operator/apis/cluster/v1alpha1"
	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
)

// New returns a scheme with every API group the operator reads or writes. Only those: client-go's
// scheme of every built-in group costs about a megabyte of registrations, and client-go already
// holds one of its own.
func New() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(corev1.AddToScheme(s))
	utilruntime.Must(eventsv1.AddToScheme(s))
	utilruntime.Must(clusterv1alpha1.AddToScheme(s))
	utilruntime.Must(routingv1alpha1.AddToScheme(s))
	utilruntime.Must(istionetworkingv1.AddToScheme(s))
	utilruntime.Must(externaldnsv1alpha1.AddToScheme(s))
	utilruntime.Must(gwv1.Install(s))
	// ExternalDNS registers only its types, not the options kinds (CreateOptions, ListOptions, …)
	// every API group needs for typed clients to send requests.
	metav1.AddToGroupVersion(s, externaldnsv1alpha1.GroupVersion)
	return s
}
