// Package scheme builds the runtime.Scheme the operator and its tests share: core Kubernetes, both
// router.io API groups, Istio networking/v1 and ExternalDNS externaldns.k8s.io/v1alpha1.
package scheme

import (
	istionetworkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	externaldnsv1alpha1 "sigs.k8s.io/external-dns/apis/v1alpha1"

	clusterv1alpha1 "github.com/service-router/service-router-operator/apis/cluster/v1alpha1"
	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
)

// New returns a scheme with every API group the operator reads or writes.
func New() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(clusterv1alpha1.AddToScheme(s))
	utilruntime.Must(routingv1alpha1.AddToScheme(s))
	utilruntime.Must(istionetworkingv1.AddToScheme(s))
	utilruntime.Must(externaldnsv1alpha1.AddToScheme(s))
	// ExternalDNS registers only its types, not the options kinds (CreateOptions, ListOptions, …)
	// every API group needs for typed clients to send requests.
	metav1.AddToGroupVersion(s, externaldnsv1alpha1.GroupVersion)
	return s
}
