package core

import (
	"context"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/types"
	externaldnsv1alpha1 "sigs.k8s.io/external-dns/apis/v1alpha1"

	clusterv1alpha1 "github.com/service-router/service-router-operator/apis/cluster/v1alpha1"
	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
	"github.com/service-router/service-router-operator/internal/decide"
	"github.com/service-router/service-router-operator/internal/desired"
	"github.com/service-router/service-router-operator/internal/verify"
)

// RouteReads is what a ServiceRoute's reconcile reads. Objects returned are the reader's: read
// them, never change them. A missing object is nil, never an error; a failed read is an error,
// never "absent" (nothing may be removed on an unreadable input).
type RouteReads interface {
	// Singletons are the ClusterIdentity and the DNSConfiguration.
	Singletons(ctx context.Context) (*clusterv1alpha1.ClusterIdentity, *clusterv1alpha1.DNSConfiguration, error)
	// EndpointsServed says the DNSEndpoint API is served.
	EndpointsServed() bool
	// PolicyInForce is the namespace's oldest DNSPolicy.
	PolicyInForce(ctx context.Context, namespace string) (*routingv1alpha1.DNSPolicy, error)
	// NamespaceMetadata is a namespace's labels and annotations; a namespace the reader does not show
	// (yet) is an error.
	NamespaceMetadata(ctx context.Context, name string) (labels, annotations map[string]string, err error)
	// NamespacesListing are the namespaces whose router.io/applications annotation lists
	// application.
	NamespacesListing(ctx context.Context, application string) ([]string, error)
	GatewayNamed(ctx context.Context, key types.NamespacedName) (*routingv1alpha1.Gateway, error)
	// Claimants are the ServiceRoutes, in any namespace, that generate route's hostname (route
	// included).
	Claimants(ctx context.Context, route *routingv1alpha1.ServiceRoute, identity *clusterv1alpha1.ClusterIdentity) ([]*routingv1alpha1.ServiceRoute, error)
	// RouteEndpoints are the managed DNSEndpoints of the route.
	RouteEndpoints(ctx context.Context, route *routingv1alpha1.ServiceRoute) ([]*externaldnsv1alpha1.DNSEndpoint, error)
	// RouteZone is the prober's last result for the route's records in controller's zone; nil
	// when there is none.
	RouteZone(route *routingv1alpha1.ServiceRoute, controller string) *verify.Observation
	// Forms is regional failover's view of the zones, for the form of a failover policy's names
	// (decide.Forms); nil when there is none.
	Forms() decide.Forms
}

// RouteResult is what a route's reconcile decided and did; its status is in the route.
type RouteResult struct {
	// Outcome is the route's phase and Ready condition (decide.SetOutcome sets them).
	decide.Outcome
	// Synced says the records follow the decision (false: an input is missing and the records
	// are kept as they are).
	Synced bool
	// Written is what the write found: conflicts and deletions held back, which the operator
	// checks again later.
	Written decide.Written
}

// Route is a ServiceRoute's reconcile: gather → decide.Route → its DNSEndpoints through endpoints
// (one CNAME per active ExternalDNS controller, controlled by the route) → its status, set into
// route but for the outcome (the driver ends with decide.SetOutcome). Records are removed only on a
// definite answer: an error stops it before any write.
func Route(ctx context.Context, rd RouteReads, endpoints Apply[*externaldnsv1alpha1.DNSEndpoint], route *routingv1alpha1.ServiceRoute) (RouteResult, error) {
	in, err := gatherRoute(ctx, rd, route)
	if err != nil {
		return RouteResult{}, err
	}
	p := decide.Route(in)
	res := RouteResult{Outcome: p.Outcome, Synced: p.Sync}
	if !p.Sync {
		return res, nil
	}
	current := in.Current
	w, err := endpoints(ctx, desired.RouteEndpointKind(route.Name), p.Endpoints, current,
		Notice[*externaldnsv1alpha1.DNSEndpoint]{Target: route, Reason: p.Reason, Describe: DescribeRecords})
	res.Written = w.Result("DNSEndpoint", "ServiceRoute")
	if err != nil {
		return res, err
	}
	res.Outcome = decide.AfterWrite(p.Outcome, res.Written)
	zones := decide.RouteZones(in.Configuration, w.Applied, current, func(controller string) *verify.Observation { return rd.RouteZone(route, controller) })
	route.Status = decide.SyncedRouteStatus(route, p, w.Applied, zones)
	return res, nil
}

// gatherRoute reads decide.Route's inputs.
func gatherRoute(ctx context.Context, rd RouteReads, route *routingv1alpha1.ServiceRoute) (decide.RouteInputs, error) {
	in := decide.RouteInputs{Route: route, EndpointsAPIMissing: !rd.EndpointsServed()}
	var err error
	if in.Identity, in.Configuration, err = rd.Singletons(ctx); err != nil {
		return in, err
	}
	if in.Policy, err = rd.PolicyInForce(ctx, route.Namespace); err != nil {
		return in, err
	}
	if in.NamespaceLabels, in.NamespaceAnnotations, err = rd.NamespaceMetadata(ctx, route.Namespace); err != nil {
		return in, err
	}
	if in.ApplicationListedBy, err = rd.NamespacesListing(ctx, route.Spec.Application); err != nil {
		return in, err
	}
	if in.Gateway, err = rd.GatewayNamed(ctx, decide.GatewayRef(route)); err != nil {
		return in, err
	}
	if in.Current, err = rd.RouteEndpoints(ctx, route); err != nil {
		return in, fmt.Errorf("listing DNSEndpoints of the route: %w", err)
	}
	in.Forms = rd.Forms()
	if in.Identity != nil {
		in.Winner, err = hostnameWinner(ctx, rd, route, in.Identity)
	}
	return in, err
}

// hostnameWinner is the oldest other route claiming route's hostname that may use its
// application (decide.HostnameWinner); nil when route is the oldest such claimant.
func hostnameWinner(ctx context.Context, rd RouteReads, route *routingv1alpha1.ServiceRoute, ci *clusterv1alpha1.ClusterIdentity) (*routingv1alpha1.ServiceRoute, error) {
	claimants, err := rd.Claimants(ctx, route, ci)
	if err != nil {
		return nil, err
	}
	allowed := make(map[types.UID]bool, len(claimants))
	for _, c := range claimants {
		if c.UID == route.UID {
			continue
		}
		_, annotations, err := rd.NamespaceMetadata(ctx, c.Namespace)
		if err != nil {
			return nil, err
		}
		listedBy, err := rd.NamespacesListing(ctx, c.Spec.Application)
		if err != nil {
			return nil, err
		}
		allowed[c.UID], _ = decide.ApplicationAllowed(c.Namespace, c.Spec.Application, annotations, listedBy)
	}
	return decide.HostnameWinner(route, claimants, func(c *routingv1alpha1.ServiceRoute) bool { return allowed[c.UID] }), nil
}

// DescribeRecords summarises a DNSEndpoint's records for Events: "api.example.com CNAME aks01.example.com".
func DescribeRecords(ep *externaldnsv1alpha1.DNSEndpoint) string {
	var parts []string
	for _, r := range ep.Spec.Endpoints {
		parts = append(parts, fmt.Sprintf("%s %s %s", r.DNSName, r.RecordType, strings.Join(r.Targets, ",")))
	}
	return strings.Join(parts, "; ")
}
