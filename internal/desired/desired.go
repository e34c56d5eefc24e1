// Package desired computes the objects a given state should produce — the ServiceRoute CNAME
// DNSEndpoints, the gateway address DNSEndpoints and the Istio Gateway — and compares them with
// what exists. It is pure: no client, table-tested.
package desired

import (
	"maps"
	"slices"

	"google.golang.org/protobuf/proto"
	istioapinetworkingv1 "istio.io/api/networking/v1"
	istionetworkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	externaldnsv1alpha1 "sigs.k8s.io/external-dns/apis/v1alpha1"
	"sigs.k8s.io/external-dns/endpoint"

	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
	"github.com/service-router/service-router-operator/internal/apply"
	"github.com/service-router/service-router-operator/internal/naming"
	"github.com/service-router/service-router-operator/internal/policy"
)

// RouteEndpoint is the DNSEndpoint of route for one ExternalDNS controller: a CNAME from the
// route's hostname to the gateway target hostname, annotated so that only that controller's
// ExternalDNS instance publishes it, and controlled by the route so that it is garbage collected
// with it.
func RouteEndpoint(route *routingv1alpha1.ServiceRoute, controller policy.Controller, hostname, target string) *externaldnsv1alpha1.DNSEndpoint {
	return &externaldnsv1alpha1.DNSEndpoint{
		ObjectMeta: metav1.ObjectMeta{
			Name:      naming.RouteEndpointName(route.Name, controller.Name),
			Namespace: route.Namespace,
			Labels: map[string]string{
				naming.LabelManagedBy:       naming.ManagedByValue,
				naming.LabelController:      controller.Name,
				naming.LabelRegion:          controller.Region,
				naming.LabelServiceRoute:    route.Name,
				naming.LabelSourceNamespace: route.Namespace,
			},
			Annotations:     map[string]string{naming.AnnotationController: controller.Name},
			OwnerReferences: []metav1.OwnerReference{controllerReference(route, "ServiceRoute")},
		},
		Spec: externaldnsv1alpha1.DNSEndpointSpec{Endpoints: []*endpoint.Endpoint{
			{DNSName: hostname, RecordType: endpoint.RecordTypeCNAME, Targets: endpoint.Targets{target}},
		}},
	}
}

// WithRecordTTL sets the TTL of every record of ep (in place) and returns ep. ExternalDNS passes
// it to the provider; without it each provider applies its own default (TTL 0 with rfc2136).
func WithRecordTTL(ep *externaldnsv1alpha1.DNSEndpoint, seconds int64) *externaldnsv1alpha1.DNSEndpoint {
	for _, r := range ep.Spec.Endpoints {
		r.RecordTTL = endpoint.TTL(seconds)
	}
	return ep
}

// Ingress identifies one gateway entry point: an Istio ingress controller and a target postfix.
// Every Gateway with the same pair shares the same target hostname and address records.
type Ingress struct {
	Controller    string
	TargetPostfix string
}

// GatewayEndpoint is the DNSEndpoint publishing the address records of a gateway target hostname
// for one ExternalDNS controller. It carries the controller annotation like the route CNAMEs do:
// ExternalDNS runs with an annotation filter, and without it the CNAMEs would point at a name
// that is never published.
func GatewayEndpoint(ingress Ingress, controller policy.Controller, namespace, target string, records []*endpoint.Endpoint) *externaldnsv1alpha1.DNSEndpoint {
	return &externaldnsv1alpha1.DNSEndpoint{
		ObjectMeta: metav1.ObjectMeta{
			Name:      naming.GatewayEndpointName(ingress.Controller, ingress.TargetPostfix, controller.Name),
			Namespace: namespace,
			Labels: map[string]string{
				naming.LabelManagedBy:       naming.ManagedByValue,
				naming.LabelIstioController: ingress.Controller,
				naming.LabelTargetPostfix:   ingress.TargetPostfix,
				naming.LabelResourceType:    naming.ResourceTypeGateway,
				naming.LabelController:      controller.Name,
				naming.LabelRegion:          controller.Region,
			},
			Annotations: map[string]string{naming.AnnotationController: controller.Name},
		},
		Spec: externaldnsv1alpha1.DNSEndpointSpec{Endpoints: records},
	}
}

// IstioGateway is the Istio Gateway generated for gw: selector istio=<controller>, and the servers
// of istioServers (HTTPS on 443 with the credential, plain HTTP on 80), each serving exactly hosts
// (never a wildcard).
func IstioGateway(gw *routingv1alpha1.Gateway, hosts []string) *istionetworkingv1.Gateway {
	return &istionetworkingv1.Gateway{
		ObjectMeta: metav1.ObjectMeta{
			Name:            gw.Name,
			Namespace:       gw.Namespace,
			Labels:          map[string]string{naming.LabelManagedBy: naming.ManagedByValue},
			OwnerReferences: []metav1.OwnerReference{controllerReference(gw, "Gateway")},
		},
		Spec: istioapinetworkingv1.Gateway{
			Selector: map[string]string{naming.IngressServiceSelector: gw.Spec.Controller},
			Servers:  istioServers(gw, hosts),
		},
	}
}

// istioServers are the servers of a Gateway's Istio Gateway, each listing every host: HTTPS on
// 443 with the TLS Secret when the Gateway names one, and plain HTTP on 80 when it serves HTTP or
// redirects it to HTTPS.
func istioServers(gw *routingv1alpha1.Gateway, hosts []string) []*istioapinetworkingv1.Server {
	var servers []*istioapinetworkingv1.Server
	if gw.Spec.CredentialName != "" {
		servers = append(servers, &istioapinetworkingv1.Server{
			Port:  &istioapinetworkingv1.Port{Number: 443, Name: "https", Protocol: "HTTPS"},
			Tls:   &istioapinetworkingv1.ServerTLSSettings{Mode: istioapinetworkingv1.ServerTLSSettings_SIMPLE, CredentialName: gw.Spec.CredentialName},
			Hosts: slices.Clone(hosts),
		})
	}
	http := &istioapinetworkingv1.Server{Port: &istioapinetworkingv1.Port{Number: 80, Name: "http", Protocol: "HTTP"}, Hosts: slices.Clone(hosts)}
	switch {
	case gw.Spec.PlainHTTP == routingv1alpha1.PlainHTTPServe:
		servers = append(servers, http)
	case gw.Spec.PlainHTTP == routingv1alpha1.PlainHTTPRedirectToHTTPS && gw.Spec.CredentialName != "":
		http.Tls = &istioapinetworkingv1.ServerTLSSettings{HttpsRedirect: true}
		servers = append(servers, http)
	}
	return servers
}

func controllerReference(owner metav1.Object, kind string) metav1.OwnerReference {
	return metav1.OwnerReference{
		APIVersion:         routingv1alpha1.GroupVersion.String(),
		Kind:               kind,
		Name:               owner.GetName(),
		UID:                owner.GetUID(),
		Controller:         ptr(true),
		BlockOwnerDeletion: ptr(true),
	}
}

func ptr[T any](v T) *T { return &v }

// OwnedBy reports whether obj is the operator's (managed-by label) and controlled by a
// routing.router.io object of this kind and name: the operator's proof of ownership before any
// update or delete. The UID is deliberately not compared: an owner deleted and re-created under
// the same name adopts what its predecessor generated (the garbage collector may not have removed
// it yet) instead of reporting a conflict with itself.
func OwnedBy(obj metav1.Object, kind, name string) bool {
	if !IsManaged(obj) {
		return false
	}
	ref := metav1.GetControllerOfNoCopy(obj)
	return ref != nil && ref.APIVersion == routingv1alpha1.GroupVersion.String() && ref.Kind == kind && ref.Name == name
}

// IsManaged reports whether obj carries the operator's managed-by label.
func IsManaged(obj metav1.Object) bool {
	return obj.GetLabels()[naming.LabelManagedBy] == naming.ManagedByValue
}

// EndpointUpToDate reports whether current already has everything desired sets: labels,
// annotations, owner references and records. Other labels and annotations are left alone.
func EndpointUpToDate(current, desired *externaldnsv1alpha1.DNSEndpoint) bool {
	return metaUpToDate(current, desired) && endpointsEqual(current.Spec.Endpoints, desired.Spec.Endpoints)
}

// IstioGatewayUpToDate reports whether current already has everything desired sets.
func IstioGatewayUpToDate(current, desired *istionetworkingv1.Gateway) bool {
	return metaUpToDate(current, desired) && proto.Equal(&current.Spec, &desired.Spec)
}

// MergeMeta copies desired's labels, annotations and owner references onto current, keeping
// labels and annotations others added.
func MergeMeta(current, desired metav1.Object) {
	labels := current.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	maps.Copy(labels, desired.GetLabels())
	current.SetLabels(labels)
	annotations := current.GetAnnotations()
	if annotations == nil {
		annotations = map[string]string{}
	}
	maps.Copy(annotations, desired.GetAnnotations())
	current.SetAnnotations(annotations)
	current.SetOwnerReferences(desired.GetOwnerReferences())
}

func metaUpToDate(current, desired metav1.Object) bool {
	return isSubset(desired.GetLabels(), current.GetLabels()) &&
		isSubset(desired.GetAnnotations(), current.GetAnnotations()) &&
		ownerReferencesEqual(current.GetOwnerReferences(), desired.GetOwnerReferences())
}

func isSubset(want, have map[string]string) bool {
	for k, v := range want {
		if got, ok := have[k]; !ok || got != v {
			return false
		}
	}
	return true
}

func ownerReferencesEqual(a, b []metav1.OwnerReference) bool {
	return slices.EqualFunc(a, b, func(x, y metav1.OwnerReference) bool {
		return x.APIVersion == y.APIVersion && x.Kind == y.Kind && x.Name == y.Name && x.UID == y.UID &&
			boolValue(x.Controller) == boolValue(y.Controller) && boolValue(x.BlockOwnerDeletion) == boolValue(y.BlockOwnerDeletion)
	})
}

func boolValue(b *bool) bool { return b != nil && *b }

// endpointsEqual compares the fields the operator sets; fields ExternalDNS or the API server
// may normalise (empty vs nil maps) compare equal.
func endpointsEqual(a, b []*endpoint.Endpoint) bool {
	return slices.EqualFunc(a, b, func(x, y *endpoint.Endpoint) bool {
		return x.DNSName == y.DNSName && x.RecordType == y.RecordType && x.RecordTTL == y.RecordTTL &&
			x.SetIdentifier == y.SetIdentifier && slices.Equal(x.Targets, y.Targets)
	})
}

// adoptable reports whether a platform admin marked a foreign object for takeover.
func adoptable(obj metav1.Object) bool {
	return obj.GetAnnotations()[naming.AnnotationAdopt] == "true"
}

// ownership classifies an existing object: owned when owns says so, adoptable when marked for
// adoption, foreign otherwise.
func ownership(obj metav1.Object, owns func(metav1.Object) bool) apply.Ownership {
	switch {
	case owns(obj):
		return apply.Owned
	case adoptable(obj):
		return apply.Adoptable
	}
	return apply.Foreign
}

// RouteEndpointKind is how route DNSEndpoints are judged: owned when controlled by the
// ServiceRoute of that name.
func RouteEndpointKind(routeName string) apply.Kind[*externaldnsv1alpha1.DNSEndpoint] {
	return endpointKind(func(o metav1.Object) bool { return OwnedBy(o, "ServiceRoute", routeName) })
}

// AddressEndpointKind is how gateway address DNSEndpoints are judged: owned when managed and
// labelled with the (controller, targetPostfix) pair.
func AddressEndpointKind(pair Ingress) apply.Kind[*externaldnsv1alpha1.DNSEndpoint] {
	return endpointKind(func(o metav1.Object) bool {
		got, ok := IngressOfLabels(o.GetLabels())
		return ok && got == pair && IsManaged(o)
	})
}

func endpointKind(owns func(metav1.Object) bool) apply.Kind[*externaldnsv1alpha1.DNSEndpoint] {
	return apply.Kind[*externaldnsv1alpha1.DNSEndpoint]{
		Name:      "DNSEndpoint",
		Ownership: func(ep *externaldnsv1alpha1.DNSEndpoint) apply.Ownership { return ownership(ep, owns) },
		UpToDate:  EndpointUpToDate,
		Merge: func(current, desired *externaldnsv1alpha1.DNSEndpoint) *externaldnsv1alpha1.DNSEndpoint {
			merged := current.DeepCopy()
			MergeMeta(merged, desired)
			merged.Spec = *desired.Spec.DeepCopy()
			return merged
		},
	}
}

// IstioGatewayKind is how the Istio Gateway of a Gateway is judged: owned when controlled by
// the Gateway of that name.
func IstioGatewayKind(gatewayName string) apply.Kind[*istionetworkingv1.Gateway] {
	return apply.Kind[*istionetworkingv1.Gateway]{
		Name: "Istio Gateway",
		Ownership: func(g *istionetworkingv1.Gateway) apply.Ownership {
			return ownership(g, func(o metav1.Object) bool { return OwnedBy(o, "Gateway", gatewayName) })
		},
		UpToDate: IstioGatewayUpToDate,
		Merge: func(current, desired *istionetworkingv1.Gateway) *istionetworkingv1.Gateway {
			merged := current.DeepCopy()
			MergeMeta(merged, desired)
			desired.Spec.DeepCopyInto(&merged.Spec)
			return merged
		},
	}
}

// IngressOfGateway is the entry point of a Gateway: its (controller, targetPostfix) pair, which
// its target hostname and address records are named after.
func IngressOfGateway(gw *routingv1alpha1.Gateway) Ingress {
	return Ingress{Controller: gw.Spec.Controller, TargetPostfix: gw.Spec.TargetPostfix}
}

// IngressOfLabels reads the (controller, targetPostfix) pair of a gateway address DNSEndpoint
// from its labels.
func IngressOfLabels(l map[string]string) (Ingress, bool) {
	if l[naming.LabelResourceType] != naming.ResourceTypeGateway || l[naming.LabelIstioController] == "" || l[naming.LabelTargetPostfix] == "" {
		return Ingress{}, false
	}
	return Ingress{Controller: l[naming.LabelIstioController], TargetPostfix: l[naming.LabelTargetPostfix]}, true
}
