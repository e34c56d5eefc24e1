package desired

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"maps"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
	"github.com/service-router/service-router-operator/internal/apply"
	"github.com/service-router/service-router-operator/internal/naming"
)

// The Gateway API backend (spec.backend GatewayAPI). A routing.router.io Gateway generates, in its
// own namespace (the platform's):
//
//   - a gateway.networking.k8s.io/v1 Gateway of the same name, class spec.gatewayClassName, whose
//     own listeners serve only the target hostname (and, with plainHTTP RedirectToHTTPS, a
//     catch-all HTTP listener for the redirect), admit routes from its own namespace only, and
//     which admits ListenerSets from its own namespace only (allowedListeners: Same);
//   - per namespace with published routes, one or more ListenerSets named
//     {gateway}.{namespace}[.{n}] holding that namespace's hostnames, each listener admitting
//     HTTPRoutes and GRPCRoutes of that namespace only (selected by the kubernetes.io/metadata.name
//     label, which the API server sets and nobody can change);
//   - with RedirectToHTTPS, an HTTPRoute {gateway}-https-redirect on the catch-all HTTP listener;
//   - with a TLS Secret in another namespace (spec.ingressNamespace), a ReferenceGrant there.
//
// The ListenerSets live beside the Gateway rather than in the routes' namespaces: the Gateway then
// admits ListenerSets from its own namespace only, so a tenant — whatever its role grants on
// gateway.networking.k8s.io in its own namespace — cannot attach a listener to the platform's
// Gateway, while the listeners' allowedRoutes still confine each hostname to its route's namespace.

// MaxListeners is Gateway API's cap on the listeners of one Gateway and of one ListenerSet (the
// CRDs' maxItems).
const MaxListeners = 64

// LabelListenerSetShard numbers the ListenerSets of one route namespace (1, 2, …), so that a
// hostname stays in the ListenerSet its HTTPRoutes reference while there is room there.
const LabelListenerSetShard = "router.io/listener-set"

// LabelGateway marks a ReferenceGrant with the Gateway (namespace.name) it was written for: it
// lives in another namespace than its Gateway, where no owner reference can point.
const LabelGateway = "router.io/gateway"

// AnnotationGateway names the Gateway (namespace/name) a ReferenceGrant was written for in full:
// LabelGateway's value is shortened when long, and the grant must lead back to its Gateway after
// that is gone (GatewayOfGrant).
const AnnotationGateway = "router.io/gateway"

// GatewayOfGrant is the Gateway a managed ReferenceGrant was written for: from AnnotationGateway,
// else from LabelGateway when that is not shortened. ok is false when neither says.
func GatewayOfGrant(grant metav1.Object) (namespace, name string, ok bool) {
	if namespace, name, ok = strings.Cut(grant.GetAnnotations()[AnnotationGateway], "/"); ok && namespace != "" && name != "" {
		return namespace, name, true
	}
	if v := grant.GetLabels()[LabelGateway]; len(v) < 63 { // a shortened value has 63 characters
		if namespace, name, ok = strings.Cut(v, "."); ok && namespace != "" && name != "" {
			return namespace, name, true
		}
	}
	return "", "", false
}

// namespaceNameLabel is set by the API server on every Namespace to its name, and cannot be
// changed: a selector on it names exactly one namespace.
const namespaceNameLabel = "kubernetes.io/metadata.name"

// Listener names of the Gateway itself.
const (
	listenerTarget   = "target"
	listenerRedirect = "http-redirect"
)

var (
	gatewayAPIGroup = gwv1.Group(gwv1.GroupName)
	routeKinds      = []gwv1.RouteGroupKind{{Group: &gatewayAPIGroup, Kind: "HTTPRoute"}, {Group: &gatewayAPIGroup, Kind: "GRPCRoute"}}
)

// RouteHost is a hostname on the Gateway and the namespace whose routes may attach to it.
type RouteHost struct {
	Namespace, Hostname string
}

// GatewayAPIObjects are the Gateway API objects of one routing.router.io Gateway.
type GatewayAPIObjects struct {
	Gateway      *gwv1.Gateway
	ListenerSets []*gwv1.ListenerSet
	// HTTPRoutes holds the HTTPS redirect route (RedirectToHTTPS only).
	HTTPRoutes []*gwv1.HTTPRoute
	// ReferenceGrants holds the grant in the Secret's namespace when that is not the Gateway's.
	ReferenceGrants []*gwv1.ReferenceGrant
}

// GatewayAPI computes the Gateway API objects of gw: target is the gateway target hostname,
// secretNamespace where the TLS Secret (spec.credentialName) lives, hosts the admitted routes'
// hostnames oldest first, and current the ListenerSets the Gateway owns now (a hostname stays in
// its ListenerSet while it has room, so that HTTPRoutes naming it keep attaching).
func GatewayAPI(gw *routingv1alpha1.Gateway, target, secretNamespace string, hosts []RouteHost, current []*gwv1.ListenerSet) GatewayAPIObjects {
	out := GatewayAPIObjects{Gateway: gatewayAPIGateway(gw, target, secretNamespace)}
	perSet := MaxListeners / max(len(hostListeners(gw, "", "", "")), 1)
	byNamespace := map[string][]string{}
	var namespaces []string
	for _, h := range hosts {
		if _, ok := byNamespace[h.Namespace]; !ok {
			namespaces = append(namespaces, h.Namespace)
		}
		byNamespace[h.Namespace] = append(byNamespace[h.Namespace], h.Hostname)
	}
	slices.Sort(namespaces)
	placed := CurrentShards(current)
	for _, ns := range namespaces {
		shards := Shard(byNamespace[ns], placed[ns], perSet)
		for _, k := range slices.Sorted(maps.Keys(shards)) {
			out.ListenerSets = append(out.ListenerSets, listenerSet(gw, ns, k, shards[k], secretNamespace))
		}
	}
	if redirects(gw) {
		out.HTTPRoutes = append(out.HTTPRoutes, redirectRoute(gw))
	}
	if gw.Spec.CredentialName != "" && secretNamespace != gw.Namespace {
		out.ReferenceGrants = append(out.ReferenceGrants, referenceGrant(gw, secretNamespace))
	}
	return out
}

// Shard splits the hostnames of one namespace (oldest first) into ListenerSets of at most perSet
// hostnames, numbered from 1. A hostname stays in the ListenerSet current places it in while that
// one has room; the others fill the lowest-numbered ListenerSets with room, in order.
func Shard(hostnames []string, current map[string]int, perSet int) map[int][]string {
	shards := map[int][]string{}
	var rest []string
	for _, h := range hostnames {
		if k, ok := current[h]; ok && k > 0 && len(shards[k]) < perSet {
			shards[k] = append(shards[k], h)
			continue
		}
		rest = append(rest, h)
	}
	next := 1
	for _, h := range rest {
		for len(shards[next]) >= perSet {
			next++
		}
		shards[next] = append(shards[next], h)
	}
	return shards
}

// CurrentShards reads where the current ListenerSets place each hostname: namespace → hostname →
// ListenerSet number.
func CurrentShards(sets []*gwv1.ListenerSet) map[string]map[string]int {
	out := map[string]map[string]int{}
	for _, s := range sets {
		ns := s.Labels[naming.LabelSourceNamespace]
		k, err := strconv.Atoi(s.Labels[LabelListenerSetShard])
		if ns == "" || err != nil {
			continue
		}
		if out[ns] == nil {
			out[ns] = map[string]int{}
		}
		for _, l := range s.Spec.Listeners {
			if l.Hostname != nil {
				out[ns][string(*l.Hostname)] = k
			}
		}
	}
	return out
}

// ListenerSetName names the n-th ListenerSet (from 1) of a route namespace on Gateway gateway:
// {gateway}.{namespace}, then {gateway}.{namespace}.{n}. A namespace name has no dot, so the names
// of one Gateway never collide; too long a name is shortened with a hash.
func ListenerSetName(gateway, namespace string, n int) string {
	name := gateway + "." + namespace
	if n > 1 {
		name += "." + strconv.Itoa(n)
	}
	return shorten(name)
}

// shorten keeps name within the 253 characters of an object or listener name: a longer one keeps
// its first 236 characters and gets a hash of the whole.
func shorten(name string) string {
	if len(name) <= naming.MaxHostnameLength {
		return name
	}
	sum := sha256.Sum256([]byte(name))
	return name[:236] + "-" + hex.EncodeToString(sum[:8])
}

func gatewayAPIGateway(gw *routingv1alpha1.Gateway, target, secretNamespace string) *gwv1.Gateway {
	same := gwv1.NamespacesFromSame
	listeners := []gwv1.Listener{targetListener(gw, target, secretNamespace)}
	if redirects(gw) {
		// A catch-all plain HTTP listener only the operator's redirect route (in this namespace)
		// attaches to: every plain HTTP request is answered with a redirect to HTTPS.
		listeners = append(listeners, gwv1.Listener{Name: listenerRedirect, Port: 80, Protocol: gwv1.HTTPProtocolType, AllowedRoutes: sameNamespaceRoutes()})
	}
	return &gwv1.Gateway{
		ObjectMeta: generatedMeta(gw, gw.Name, nil),
		Spec: gwv1.GatewaySpec{
			GatewayClassName: gwv1.ObjectName(cmp.Or(gw.Spec.GatewayClassName, routingv1alpha1.DefaultGatewayClassName)),
			Listeners:        listeners,
			AllowedListeners: &gwv1.AllowedListeners{Namespaces: &gwv1.ListenerNamespaces{From: &same}},
		},
	}
}

// targetListener is the Gateway's own listener: the target hostname, HTTPS when the gateway has a
// TLS Secret, for routes of the Gateway's namespace only. A Gateway needs one listener, and this
// one serves no tenant's hostname.
func targetListener(gw *routingv1alpha1.Gateway, target, secretNamespace string) gwv1.Listener {
	host := gwv1.Hostname(target)
	l := gwv1.Listener{Name: listenerTarget, Hostname: &host, Port: 80, Protocol: gwv1.HTTPProtocolType, AllowedRoutes: sameNamespaceRoutes()}
	if gw.Spec.CredentialName != "" {
		l.Port, l.Protocol, l.TLS = 443, gwv1.HTTPSProtocolType, listenerTLS(gw, secretNamespace)
	}
	return l
}

func sameNamespaceRoutes() *gwv1.AllowedRoutes {
	same := gwv1.NamespacesFromSame
	return &gwv1.AllowedRoutes{Namespaces: &gwv1.RouteNamespaces{From: &same}, Kinds: slices.Clone(routeKinds)}
}

func redirects(gw *routingv1alpha1.Gateway) bool {
	return gw.Spec.PlainHTTP == routingv1alpha1.PlainHTTPRedirectToHTTPS && gw.Spec.CredentialName != ""
}

// hostListeners are the listeners of one hostname, as the classic backend's servers: HTTPS with
// the TLS Secret when the gateway has one, plain HTTP when it serves HTTP (a redirect is served by
// the Gateway's catch-all listener instead). Only routes of namespace attach to them.
func hostListeners(gw *routingv1alpha1.Gateway, namespace, hostname, secretNamespace string) []gwv1.ListenerEntry {
	host := gwv1.Hostname(hostname)
	from := gwv1.NamespacesFromSelector
	allowed := &gwv1.AllowedRoutes{
		Namespaces: &gwv1.RouteNamespaces{From: &from, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{namespaceNameLabel: namespace}}},
		Kinds:      slices.Clone(routeKinds),
	}
	var out []gwv1.ListenerEntry
	if gw.Spec.CredentialName != "" {
		out = append(out, gwv1.ListenerEntry{Name: gwv1.SectionName(shorten("https-" + hostname)), Hostname: &host, Port: 443,
			Protocol: gwv1.HTTPSProtocolType, TLS: listenerTLS(gw, secretNamespace), AllowedRoutes: allowed})
	}
	if gw.Spec.PlainHTTP == routingv1alpha1.PlainHTTPServe {
		out = append(out, gwv1.ListenerEntry{Name: gwv1.SectionName(shorten("http-" + hostname)), Hostname: &host, Port: 80,
			Protocol: gwv1.HTTPProtocolType, AllowedRoutes: allowed})
	}
	return out
}

// listenerTLS terminates TLS with the Secret spec.credentialName of secretNamespace.
func listenerTLS(gw *routingv1alpha1.Gateway, secretNamespace string) *gwv1.ListenerTLSConfig {
	mode := gwv1.TLSModeTerminate
	core, secret := gwv1.Group(""), gwv1.Kind("Secret")
	ref := gwv1.SecretObjectReference{Group: &core, Kind: &secret, Name: gwv1.ObjectName(gw.Spec.CredentialName)}
	if secretNamespace != gw.Namespace {
		ns := gwv1.Namespace(secretNamespace)
		ref.Namespace = &ns
	}
	return &gwv1.ListenerTLSConfig{Mode: &mode, CertificateRefs: []gwv1.SecretObjectReference{ref}}
}

func listenerSet(gw *routingv1alpha1.Gateway, namespace string, n int, hostnames []string, secretNamespace string) *gwv1.ListenerSet {
	kind := gwv1.Kind("Gateway")
	group := gatewayAPIGroup
	s := &gwv1.ListenerSet{
		ObjectMeta: generatedMeta(gw, ListenerSetName(gw.Name, namespace, n), map[string]string{
			naming.LabelSourceNamespace: namespace,
			LabelListenerSetShard:       strconv.Itoa(n),
		}),
		Spec: gwv1.ListenerSetSpec{ParentRef: gwv1.ParentGatewayReference{Group: &group, Kind: &kind, Name: gwv1.ObjectName(gw.Name)}},
	}
	for _, h := range slices.Sorted(slices.Values(hostnames)) {
		s.Spec.Listeners = append(s.Spec.Listeners, hostListeners(gw, namespace, h, secretNamespace)...)
	}
	return s
}

// RedirectRouteName names the HTTPRoute answering plain HTTP with a redirect to HTTPS.
func RedirectRouteName(gateway string) string { return shorten(gateway + "-https-redirect") }

func redirectRoute(gw *routingv1alpha1.Gateway) *gwv1.HTTPRoute {
	group, kind, section := gatewayAPIGroup, gwv1.Kind("Gateway"), gwv1.SectionName(listenerRedirect)
	prefix, root := gwv1.PathMatchPathPrefix, "/"
	https, moved := "https", 301
	return &gwv1.HTTPRoute{
		ObjectMeta: generatedMeta(gw, RedirectRouteName(gw.Name), nil),
		Spec: gwv1.HTTPRouteSpec{
			CommonRouteSpec: gwv1.CommonRouteSpec{ParentRefs: []gwv1.ParentReference{{Group: &group, Kind: &kind, Name: gwv1.ObjectName(gw.Name), SectionName: &section}}},
			Rules: []gwv1.HTTPRouteRule{{
				Matches: []gwv1.HTTPRouteMatch{{Path: &gwv1.HTTPPathMatch{Type: &prefix, Value: &root}}},
				Filters: []gwv1.HTTPRouteFilter{{Type: gwv1.HTTPRouteFilterRequestRedirect,
					RequestRedirect: &gwv1.HTTPRequestRedirectFilter{Scheme: &https, StatusCode: &moved}}},
			}},
		},
	}
}

// ReferenceGrantName names the ReferenceGrant letting gw's Gateway and ListenerSets use its TLS
// Secret in another namespace.
func ReferenceGrantName(gw *routingv1alpha1.Gateway) string {
	return shorten("service-router." + gw.Namespace + "." + gw.Name)
}

func referenceGrant(gw *routingv1alpha1.Gateway, secretNamespace string) *gwv1.ReferenceGrant {
	ns := gwv1.Namespace(gw.Namespace)
	secret := gwv1.ObjectName(gw.Spec.CredentialName)
	return &gwv1.ReferenceGrant{
		// No owner reference: one pointing to another namespace counts as a missing owner, and
		// the garbage collector would delete the grant at once. The labels say whose it is.
		ObjectMeta: metav1.ObjectMeta{Name: ReferenceGrantName(gw), Namespace: secretNamespace, Labels: map[string]string{
			naming.LabelManagedBy: naming.ManagedByValue,
			LabelGateway:          GatewayLabelValue(gw.Namespace, gw.Name),
		}, Annotations: map[string]string{AnnotationGateway: gw.Namespace + "/" + gw.Name}},
		Spec: gwv1.ReferenceGrantSpec{
			From: []gwv1.ReferenceGrantFrom{
				{Group: gatewayAPIGroup, Kind: "Gateway", Namespace: ns},
				{Group: gatewayAPIGroup, Kind: "ListenerSet", Namespace: ns},
			},
			To: []gwv1.ReferenceGrantTo{{Group: "", Kind: "Secret", Name: &secret}},
		},
	}
}

// GatewayLabelValue is the LabelGateway value of the Gateway namespace/name (a label value cannot
// hold a slash; a namespace cannot hold a dot).
func GatewayLabelValue(namespace, name string) string {
	v := namespace + "." + name
	if len(v) > 63 {
		sum := sha256.Sum256([]byte(v))
		v = v[:46] + "-" + hex.EncodeToString(sum[:8])
	}
	return v
}

func generatedMeta(gw *routingv1alpha1.Gateway, name string, labels map[string]string) metav1.ObjectMeta {
	l := map[string]string{naming.LabelManagedBy: naming.ManagedByValue}
	maps.Copy(l, labels)
	return metav1.ObjectMeta{Name: name, Namespace: gw.Namespace, Labels: l,
		OwnerReferences: []metav1.OwnerReference{controllerReference(gw, "Gateway")}}
}

// ListenerCount is the number of listeners of a Gateway or ListenerSet.
func ListenerCount(obj any) int {
	switch o := obj.(type) {
	case *gwv1.Gateway:
		return len(o.Spec.Listeners)
	case *gwv1.ListenerSet:
		return len(o.Spec.Listeners)
	}
	return 0
}

// The kinds of the write step. Generated Gateway API objects in the Gateway's namespace are owned
// when controlled by the Gateway of that name; the ReferenceGrant, elsewhere, by its labels.

// GatewayAPIGatewayKind judges the Gateway API Gateway of a routing Gateway.
func GatewayAPIGatewayKind(gatewayName string) apply.Kind[*gwv1.Gateway] {
	return gatewayAPIKind("Gateway API Gateway", gatewayName,
		func(c, d *gwv1.Gateway) bool { return equality.Semantic.DeepEqual(c.Spec, d.Spec) },
		func(m, d *gwv1.Gateway) { d.Spec.DeepCopyInto(&m.Spec) })
}

// ListenerSetKind judges the ListenerSets of a routing Gateway.
func ListenerSetKind(gatewayName string) apply.Kind[*gwv1.ListenerSet] {
	return gatewayAPIKind("ListenerSet", gatewayName,
		func(c, d *gwv1.ListenerSet) bool { return equality.Semantic.DeepEqual(c.Spec, d.Spec) },
		func(m, d *gwv1.ListenerSet) { d.Spec.DeepCopyInto(&m.Spec) })
}

// HTTPRouteKind judges the redirect HTTPRoute of a routing Gateway.
func HTTPRouteKind(gatewayName string) apply.Kind[*gwv1.HTTPRoute] {
	return gatewayAPIKind("HTTPRoute", gatewayName,
		func(c, d *gwv1.HTTPRoute) bool { return equality.Semantic.DeepEqual(c.Spec, d.Spec) },
		func(m, d *gwv1.HTTPRoute) { d.Spec.DeepCopyInto(&m.Spec) })
}

// ReferenceGrantKind judges the ReferenceGrants of the routing Gateway namespace/name.
func ReferenceGrantKind(namespace, name string) apply.Kind[*gwv1.ReferenceGrant] {
	owns := func(o metav1.Object) bool {
		return IsManaged(o) && o.GetLabels()[LabelGateway] == GatewayLabelValue(namespace, name)
	}
	return apply.Kind[*gwv1.ReferenceGrant]{
		Name:      "ReferenceGrant",
		Ownership: func(g *gwv1.ReferenceGrant) apply.Ownership { return ownership(g, owns) },
		UpToDate: func(c, d *gwv1.ReferenceGrant) bool {
			return metaUpToDate(c, d) && equality.Semantic.DeepEqual(c.Spec, d.Spec)
		},
		Merge: func(c, d *gwv1.ReferenceGrant) *gwv1.ReferenceGrant {
			m := c.DeepCopy()
			MergeMeta(m, d)
			d.Spec.DeepCopyInto(&m.Spec)
			return m
		},
	}
}

type gatewayAPIObject[T any] interface {
	*T
	client.Object
	DeepCopy() *T
}

func gatewayAPIKind[T any, P gatewayAPIObject[T]](name, gatewayName string, specEqual func(current, desired P) bool, setSpec func(merged, desired P)) apply.Kind[P] {
	return apply.Kind[P]{
		Name: name,
		Ownership: func(o P) apply.Ownership {
			return ownership(o, func(m metav1.Object) bool { return OwnedBy(m, "Gateway", gatewayName) })
		},
		UpToDate: func(c, d P) bool { return metaUpToDate(c, d) && specEqual(c, d) },
		Merge: func(c, d P) P {
			m := P(c.DeepCopy())
			MergeMeta(m, d)
			setSpec(m, d)
			return m
		},
	}
}
