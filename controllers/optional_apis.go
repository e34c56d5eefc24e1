package controllers

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"time"

	istionetworkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/source"
	externaldnsv1alpha1 "sigs.k8s.io/external-dns/apis/v1alpha1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/service-router/service-router-operator/internal/metrics"
)

// The optional APIs: the operator works without any of them (publishing DNS without Istio or the
// Gateway API, or waiting for ExternalDNS) and starts using each as soon as its CRD is installed.
var (
	dnsEndpointKind  = externaldnsv1alpha1.GroupVersion.WithKind("DNSEndpoint")
	istioGatewayKind = istionetworkingv1.SchemeGroupVersion.WithKind("Gateway")
	// The Gateway API kinds of the GatewayAPI backend (standard channel; ListenerSet since v1.5).
	gatewayAPIVersion     = schema.GroupVersion{Group: gwv1.GroupName, Version: "v1"}
	gatewayAPIGatewayKind = gatewayAPIVersion.WithKind("Gateway")
	listenerSetKind       = gatewayAPIVersion.WithKind("ListenerSet")
	httpRouteKind         = gatewayAPIVersion.WithKind("HTTPRoute")
	referenceGrantKind    = gatewayAPIVersion.WithKind("ReferenceGrant")
	gatewayAPIKinds       = []schema.GroupVersionKind{gatewayAPIGatewayKind, listenerSetKind, httpRouteKind, referenceGrantKind}
)

// gatewayAPIServed reports whether every Gateway API kind the GatewayAPI backend writes is served.
func (a *OptionalAPIs) gatewayAPIServed() bool {
	for _, gvk := range gatewayAPIKinds {
		if !a.Served(gvk) {
			return false
		}
	}
	return true
}

// apiPollInterval is how often a missing optional API is looked for again.
const apiPollInterval = 10 * time.Second

// OptionalAPIs knows whether the optional APIs are served. The watches on an optional kind are
// started only once it is served: controller-runtime gives up on a watch whose kind does not
// exist (after its cache-sync timeout the manager stops), so they are deferred instead, and the
// reconcilers report the missing API in status rather than reading it.
type OptionalAPIs struct {
	mapper   meta.RESTMapper
	interval time.Duration

	mu          sync.Mutex
	served      map[schema.GroupVersionKind]bool
	starts      map[schema.GroupVersionKind][]func() error
	subscribers []chan event.GenericEvent
}

// NewOptionalAPIs looks the optional APIs up once; Start keeps looking for the missing ones.
// mapper is the manager's; the real discovery behind MapperProvider is used.
func NewOptionalAPIs(mapper meta.RESTMapper) *OptionalAPIs {
	if o, ok := mapper.(optionalKindsMapper); ok {
		mapper = o.RESTMapper
	}
	a := &OptionalAPIs{mapper: mapper, interval: apiPollInterval, served: map[schema.GroupVersionKind]bool{},
		starts: map[schema.GroupVersionKind][]func() error{}}
	for _, gvk := range append([]schema.GroupVersionKind{dnsEndpointKind, istioGatewayKind}, gatewayAPIKinds...) {
		a.served[gvk] = a.lookUp(gvk)
		metrics.SetAPIServed(gvk.Group, gvk.Kind, a.served[gvk])
	}
	return a
}

// Served reports whether the API of gvk is served.
func (a *OptionalAPIs) Served(gvk schema.GroupVersionKind) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.served[gvk]
}

// WhenServed runs start now if gvk is served, otherwise as soon as it is.
func (a *OptionalAPIs) WhenServed(gvk schema.GroupVersionKind, start func() error) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.served[gvk] {
		return start()
	}
	a.starts[gvk] = append(a.starts[gvk], start)
	return nil
}

// apiChanges is a source that fires once whenever an optional API appears, mapped by h to the
// requests that must be reconciled again.
func apiChanges[R comparable](a *OptionalAPIs, h handler.TypedEventHandler[client.Object, R]) source.TypedSource[R] {
	a.mu.Lock()
	defer a.mu.Unlock()
	ch := make(chan event.GenericEvent, 1)
	a.subscribers = append(a.subscribers, ch)
	return source.TypedChannel(ch, h)
}

// Start looks for the missing APIs until ctx ends. It runs on every replica, so that a standby
// that becomes leader has its watches ready.
func (a *OptionalAPIs) Start(ctx context.Context) error {
	log := ctrl.Log.WithName("optional-apis")
	for gvk, served := range a.snapshot() {
		if !served {
			log.Info("API not installed; the operator works without it and starts using it once its CRD is installed", "group", gvk.Group, "kind", gvk.Kind)
		}
	}
	ticker := time.NewTicker(a.interval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C:
		}
		for gvk, served := range a.snapshot() {
			if served || !a.lookUp(gvk) {
				continue
			}
			log.Info("API installed; starting to use it", "group", gvk.Group, "kind", gvk.Kind)
			if err := a.markServed(gvk); err != nil {
				return err
			}
		}
	}
}

func (a *OptionalAPIs) snapshot() map[schema.GroupVersionKind]bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make(map[schema.GroupVersionKind]bool, len(a.served))
	for k, v := range a.served {
		out[k] = v
	}
	return out
}

// markServed starts the deferred watches of gvk and tells the subscribers.
func (a *OptionalAPIs) markServed(gvk schema.GroupVersionKind) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.served[gvk] = true
	metrics.SetAPIServed(gvk.Group, gvk.Kind, true)
	var errs []error
	for _, start := range a.starts[gvk] {
		errs = append(errs, start())
	}
	delete(a.starts, gvk)
	for _, ch := range a.subscribers {
		select {
		case ch <- event.GenericEvent{Object: &externaldnsv1alpha1.DNSEndpoint{}}:
		default: // one pending notification is enough
		}
	}
	return errors.Join(errs...)
}

// lookUp asks the API server (through the discovery-backed REST mapper) whether gvk is served.
// Only a definite "no such kind" counts as missing; any other error is taken as served, so that a
// discovery hiccup never switches publishing off.
func (a *OptionalAPIs) lookUp(gvk schema.GroupVersionKind) bool {
	_, err := a.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	return !kindMissing(err)
}

// kindMissing reports whether a REST mapping error says the kind does not exist.
func kindMissing(err error) bool {
	var failed *apiutil.ErrResourceDiscoveryFailed
	switch {
	case err == nil:
		return false
	case meta.IsNoMatchError(err), apierrors.IsNotFound(err):
		return true
	case errors.As(err, &failed):
		for _, e := range *failed {
			if !apierrors.IsNotFound(e) && !meta.IsNoMatchError(e) {
				return false
			}
		}
		return true
	}
	return false
}

// MapperProvider builds the manager's REST mapper: controller-runtime's dynamic one, except that
// the optional kinds always map, to their known resources. The informer cache is configured for
// them (label selectors) when the manager is built, which needs their mapping even before their
// CRDs exist; nothing reads them until OptionalAPIs says they are served.
func MapperProvider(c *rest.Config, httpClient *http.Client) (meta.RESTMapper, error) {
	m, err := apiutil.NewDynamicRESTMapper(c, httpClient)
	if err != nil {
		return nil, err
	}
	return optionalKindsMapper{RESTMapper: m}, nil
}

// optionalMappings are the REST mappings of the optional kinds, as their CRDs define them.
var optionalMappings = map[schema.GroupKind]*meta.RESTMapping{
	dnsEndpointKind.GroupKind(): {GroupVersionKind: dnsEndpointKind, Scope: meta.RESTScopeNamespace,
		Resource: externaldnsv1alpha1.GroupVersion.WithResource("dnsendpoints")},
	istioGatewayKind.GroupKind(): {GroupVersionKind: istioGatewayKind, Scope: meta.RESTScopeNamespace,
		Resource: istionetworkingv1.SchemeGroupVersion.WithResource("gateways")},
	gatewayAPIGatewayKind.GroupKind(): {GroupVersionKind: gatewayAPIGatewayKind, Scope: meta.RESTScopeNamespace,
		Resource: gatewayAPIVersion.WithResource("gateways")},
	listenerSetKind.GroupKind(): {GroupVersionKind: listenerSetKind, Scope: meta.RESTScopeNamespace,
		Resource: gatewayAPIVersion.WithResource("listenersets")},
	httpRouteKind.GroupKind(): {GroupVersionKind: httpRouteKind, Scope: meta.RESTScopeNamespace,
		Resource: gatewayAPIVersion.WithResource("httproutes")},
	referenceGrantKind.GroupKind(): {GroupVersionKind: referenceGrantKind, Scope: meta.RESTScopeNamespace,
		Resource: gatewayAPIVersion.WithResource("referencegrants")},
}

type optionalKindsMapper struct{ meta.RESTMapper }

func (m optionalKindsMapper) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	mapping, err := m.RESTMapper.RESTMapping(gk, versions...)
	if known, ok := optionalMappings[gk]; ok && kindMissing(err) {
		return known, nil
	}
	return mapping, err
}
