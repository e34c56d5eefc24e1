package controllers

import (
	"unique"

	istionetworkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	externaldnsv1alpha1 "sigs.k8s.io/external-dns/apis/v1alpha1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
	"github.com/service-router/service-router-operator/internal/desired"
	"github.com/service-router/service-router-operator/internal/naming"
)

// CacheOptions restricts the informer caches to what the operator manages, so that memory follows
// the operator's objects rather than the cluster's size: DNSEndpoints, Istio Gateways and the
// Gateway API objects of the GatewayAPI backend carrying the managed-by label (objects of others
// never enter the cache; a name collision with one is detected at create time), Services carrying an istio label (ingress gateways), and Namespaces
// as metadata with only their labels and the router.io/applications annotation. Managed fields
// are stripped from every cached object, and kubectl's last-applied-configuration (a full copy of
// the object) from the objects the operator reads but never writes whole.
// The selectors are the operator's scope, defined once in internal/desired (scope.go): `kubectl
// router plan` reads the same objects.
func CacheOptions() cache.Options {
	managed := desired.ManagedSelector()
	// The generated objects are updated whole from their cached copy: every annotation stays, so
	// that an update never drops one somebody else set.
	generated := trimGenerated
	return cache.Options{
		DefaultTransform: trimForCache,
		ByObject: map[client.Object]cache.ByObject{
			&externaldnsv1alpha1.DNSEndpoint{}: {Label: managed, Transform: generated},
			&istionetworkingv1.Gateway{}:       {Label: managed, Transform: generated},
			&gwv1.Gateway{}:                    {Label: managed, Transform: generated},
			&gwv1.ListenerSet{}:                {Label: managed, Transform: generated},
			&gwv1.HTTPRoute{}:                  {Label: managed, Transform: generated},
			&gwv1.ReferenceGrant{}:             {Label: managed, Transform: generated},
			&corev1.Service{}:                  {Label: desired.IngressServiceSelector()},
			&corev1.Namespace{}:                {Transform: namespaceTransform},
		},
	}
}

// namespaceTransform keeps of a cached Namespace what the operator reads: its name, labels (the
// Gateways' allowedRoutes selectors) and the applications it owns. Other annotations (a
// last-applied configuration, for instance) can be large and are dropped, as are managed fields,
// owner references, finalizers, spec and status.
func namespaceTransform(obj any) (any, error) {
	o, ok := obj.(client.Object)
	if !ok {
		return obj, nil // a tombstone: passed on as it is
	}
	var kept map[string]string
	if apps, ok := o.GetAnnotations()[naming.AnnotationApplications]; ok {
		kept = map[string]string{naming.AnnotationApplications: apps}
	}
	o.SetAnnotations(kept)
	o.SetManagedFields(nil)
	o.SetOwnerReferences(nil)
	o.SetFinalizers(nil)
	if ns, ok := o.(*corev1.Namespace); ok {
		ns.Spec, ns.Status = corev1.NamespaceSpec{}, corev1.NamespaceStatus{}
	}
	return o, nil
}

// The informer cache holds every ServiceRoute and every managed DNSEndpoint: at 10,000 routes
// that is most of the operator's memory. The transforms here run on each object as it enters the
// cache: they drop what the operator never reads and share the strings that thousands of
// objects repeat (label keys and values, namespaces, the target hostname, condition types and
// reasons), so that memory per route is what is unique to the route.

// lastAppliedAnnotation is where `kubectl apply` keeps a full copy of what it applied.
const lastAppliedAnnotation = "kubectl.kubernetes.io/last-applied-configuration"

// trimForCache is the transform of the objects the operator reads but never writes whole
// (ServiceRoutes, Gateways, DNSPolicies, the singletons, Services): it writes only their status,
// as a merge patch computed between two cached copies, so nothing it writes depends on what is
// dropped here — managed fields and kubectl's last-applied-configuration.
func trimForCache(obj any) (any, error) {
	o, ok := obj.(metav1.Object)
	if !ok {
		return obj, nil
	}
	o.SetManagedFields(nil)
	if a := o.GetAnnotations(); a[lastAppliedAnnotation] != "" {
		delete(a, lastAppliedAnnotation)
		if len(a) == 0 {
			o.SetAnnotations(nil)
		}
	}
	internMeta(o)
	if r, ok := obj.(*routingv1alpha1.ServiceRoute); ok {
		internRoute(r)
	}
	return obj, nil
}

// trimGenerated is the transform of the generated objects (DNSEndpoints, Istio Gateways). They are
// updated whole from their cached copy, so every annotation stays; only managed fields go.
func trimGenerated(obj any) (any, error) {
	o, ok := obj.(metav1.Object)
	if !ok {
		return obj, nil
	}
	o.SetManagedFields(nil)
	internMeta(o)
	if ep, ok := obj.(*externaldnsv1alpha1.DNSEndpoint); ok {
		for _, e := range ep.Spec.Endpoints {
			e.RecordType = intern(e.RecordType)
			for i := range e.Targets {
				e.Targets[i] = intern(e.Targets[i])
			}
		}
	}
	return obj, nil
}

// intern returns the one shared copy of s.
func intern(s string) string { return unique.Make(s).Value() }

func internMap(m map[string]string) map[string]string {
	if len(m) == 0 {
		return m
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[intern(k)] = intern(v)
	}
	return out
}

func internMeta(o metav1.Object) {
	o.SetNamespace(intern(o.GetNamespace()))
	if l := o.GetLabels(); len(l) > 0 {
		o.SetLabels(internMap(l))
	}
	if a := o.GetAnnotations(); len(a) > 0 {
		o.SetAnnotations(internMap(a))
	}
	if refs := o.GetOwnerReferences(); len(refs) > 0 {
		for i := range refs {
			refs[i].APIVersion, refs[i].Kind = intern(refs[i].APIVersion), intern(refs[i].Kind)
		}
	}
}

func internRoute(r *routingv1alpha1.ServiceRoute) {
	s := &r.Spec
	s.GatewayName, s.GatewayNamespace = intern(s.GatewayName), intern(s.GatewayNamespace)
	s.Environment, s.Application = intern(s.Environment), intern(s.Application)
	st := &r.Status
	st.Phase, st.TargetHostname = routingv1alpha1.Phase(intern(string(st.Phase))), intern(st.TargetHostname)
	for i := range st.Endpoints {
		st.Endpoints[i].Controller, st.Endpoints[i].Region = intern(st.Endpoints[i].Controller), intern(st.Endpoints[i].Region)
	}
	for i := range st.Conditions {
		c := &st.Conditions[i]
		c.Type, c.Status, c.Reason = intern(c.Type), metav1.ConditionStatus(intern(string(c.Status))), intern(c.Reason)
	}
}
