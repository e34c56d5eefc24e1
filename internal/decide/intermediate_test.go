package decide

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	externaldnsv1alpha1 "sigs.k8s.io/external-dns/apis/v1alpha1"
	"sigs.k8s.io/external-dns/endpoint"

	clusterv1alpha1 "github.com/service-router/service-router-operator/apis/cluster/v1alpha1"
	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
	"github.com/service-router/service-router-operator/internal/failover"
)

const (
	apiHost    = "api-ns-d-dev-myapp.example.com"
	aks01Entry = "aks01-weu-internal.example.com"
	weuInt     = "internal.myapp.weu._router-failover.example.com"
	neuInt     = "internal.myapp.neu._router-failover.example.com"
)

// failoverWorld is aks01 (weu, adopting neu) with failover settings for both zones and a policy
// with stand-ins.
func failoverWorld(forms Forms, current ...*externaldnsv1alpha1.DNSEndpoint) RouteInputs {
	cfg := configuration("weu", "neu")
	for i := range cfg.Spec.ExternalDNSControllers {
		c := &cfg.Spec.ExternalDNSControllers[i]
		c.Failover = &clusterv1alpha1.ZoneFailover{OwnerID: c.Name + "-aks01"}
	}
	pol := policyTTL(0)
	pol.Spec.Failover = &routingv1alpha1.PolicyFailover{StandIns: []string{"neu"}}
	return RouteInputs{Route: serviceRoute(), Identity: identity("neu"), Configuration: cfg, Policy: pol, Gateway: gateway("cert"), Forms: forms, Current: current}
}

// records is what a route's DNSEndpoints publish, "zone: name → target", in order.
func records(eps []*externaldnsv1alpha1.DNSEndpoint) []string {
	var out []string
	for _, ep := range eps {
		for _, r := range ep.Spec.Endpoints {
			out = append(out, ep.Name+": "+r.DNSName+" → "+r.Targets[0])
		}
	}
	return out
}

func TestRoute_AFailoverNameGoesThroughItsIntermediateAsTheZoneAllows(t *testing.T) {
	read := func(z map[string]failover.Form) Forms {
		return func(controller, hostname, intermediate string) (failover.Form, bool) {
			f, ok := z[controller]
			return f, ok
		}
	}
	through := failover.Form{Through: true}
	tests := []struct {
		name    string
		in      RouteInputs
		records []string
	}{
		{"no reading yet: direct everywhere, no intermediate published (the operators write it)", failoverWorld(nil), []string{
			"api-route-external-dns-weu: " + apiHost + " → " + aks01Entry,
			"api-route-external-dns-neu: " + apiHost + " → " + aks01Entry,
		}},
		{"read: through in weu, direct in neu", failoverWorld(read(map[string]failover.Form{"external-dns-weu": through, "external-dns-neu": {}})), []string{
			"api-route-external-dns-weu: " + apiHost + " → " + weuInt,
			"api-route-external-dns-neu: " + apiHost + " → " + aks01Entry,
		}},
		{"a form once taken is kept, whatever the reading says now", failoverWorld(read(map[string]failover.Form{"external-dns-weu": {}, "external-dns-neu": {}}),
			endpointWith("api-route-external-dns-weu", "external-dns-weu", apiHost, weuInt)), []string{
			"api-route-external-dns-weu: " + apiHost + " → " + weuInt,
			"api-route-external-dns-neu: " + apiHost + " → " + aks01Entry,
		}},
		{"an earlier version's intermediate record: kept while its ExternalDNS owns it", failoverWorld(read(map[string]failover.Form{"external-dns-weu": {Intermediate: true, Through: true}}),
			endpointWith("api-route-external-dns-weu", "external-dns-weu", apiHost, weuInt, weuInt, aks01Entry)), []string{
			"api-route-external-dns-weu: " + apiHost + " → " + weuInt,
			"api-route-external-dns-weu: " + weuInt + " → " + aks01Entry,
			"api-route-external-dns-neu: " + apiHost + " → " + aks01Entry,
		}},
		{"that record dropped once the reading shows it released to the operators", failoverWorld(read(map[string]failover.Form{"external-dns-weu": through}),
			endpointWith("api-route-external-dns-weu", "external-dns-weu", apiHost, weuInt, weuInt, aks01Entry)), []string{
			"api-route-external-dns-weu: " + apiHost + " → " + weuInt,
			"api-route-external-dns-neu: " + apiHost + " → " + aks01Entry,
		}},
		{"without failover in the policy: the seed's one record, whatever the zone", func() RouteInputs {
			in := failoverWorld(read(map[string]failover.Form{"external-dns-weu": through, "external-dns-neu": through}))
			in.Policy.Spec.Failover = nil
			return in
		}(), []string{
			"api-route-external-dns-weu: " + apiHost + " → " + aks01Entry,
			"api-route-external-dns-neu: " + apiHost + " → " + aks01Entry,
		}},
		{"a zone without failover settings: the seed's one record", func() RouteInputs {
			in := failoverWorld(read(map[string]failover.Form{"external-dns-weu": through, "external-dns-neu": through}))
			in.Configuration.Spec.ExternalDNSControllers[1].Failover = nil
			return in
		}(), []string{
			"api-route-external-dns-weu: " + apiHost + " → " + weuInt,
			"api-route-external-dns-neu: " + apiHost + " → " + aks01Entry,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := Route(tt.in)
			require.True(t, p.Ready, p.Message)
			assert.Equal(t, tt.records, records(p.Endpoints))
			for _, ep := range p.Endpoints {
				for _, r := range ep.Spec.Endpoints {
					assert.Equal(t, endpoint.TTL(DefaultRecordTTL), r.RecordTTL, "the intermediate has the names' TTL")
				}
			}
		})
	}
}

func endpointWith(name, controller string, pairs ...string) *externaldnsv1alpha1.DNSEndpoint {
	ep := &externaldnsv1alpha1.DNSEndpoint{}
	ep.Name, ep.Labels = name, map[string]string{"router.io/controller": controller}
	for i := 0; i+1 < len(pairs); i += 2 {
		ep.Spec.Endpoints = append(ep.Spec.Endpoints, &endpoint.Endpoint{DNSName: pairs[i], RecordType: endpoint.RecordTypeCNAME, Targets: endpoint.Targets{pairs[i+1]}})
	}
	return ep
}

func TestRouteForm(t *testing.T) {
	direct := endpointWith("e", "c", apiHost, aks01Entry)
	beside := endpointWith("e", "c", apiHost, aks01Entry, weuInt, aks01Entry)
	through := endpointWith("e", "c", apiHost, weuInt, weuInt, aks01Entry)
	tests := []struct {
		name    string
		current *externaldnsv1alpha1.DNSEndpoint
		view    failover.Form
		known   bool
		want    failover.Form
	}{
		{"new, nothing known", nil, failover.Form{}, false, failover.Form{}},
		{"new, the view known: through, never the intermediate's own record", nil, failover.Form{Intermediate: true, Through: true}, true, failover.Form{Through: true}},
		{"not known: a view's Through is not taken", direct, failover.Form{Through: true}, false, failover.Form{}},
		{"direct to through", direct, failover.Form{Through: true}, true, failover.Form{Through: true}},
		{"new, the name unheld and no intermediate yet: through (the name did not resolve)", nil, failover.Form{Through: true, Unheld: true}, true, failover.Form{Through: true}},
		{"direct, the name unheld in the reading, no intermediate yet: direct (its ExternalDNS may have written it since)",
			direct, failover.Form{Through: true, Unheld: true}, true, failover.Form{}},
		{"an earlier version's beside to through, its record kept while ExternalDNS owns it", beside, failover.Form{Intermediate: true, Through: true}, true, failover.Form{Intermediate: true, Through: true}},
		{"beside, the record released: dropped", beside, failover.Form{}, true, failover.Form{}},
		{"beside, nothing known: kept", beside, failover.Form{}, false, failover.Form{Intermediate: true}},
		{"through kept when the view says direct (a stand-in holds the intermediate)", through, failover.Form{}, true, failover.Form{Through: true}},
		{"through kept while nothing is known (a new leader), the record too", through, failover.Form{}, false, failover.Form{Intermediate: true, Through: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, RouteForm(tt.current, tt.view, tt.known, apiHost, weuInt))
		})
	}
}

func TestFailoverNames_APolicysIntermediateIsOneName(t *testing.T) {
	pol := &routingv1alpha1.DNSPolicy{Spec: routingv1alpha1.DNSPolicySpec{Failover: &routingv1alpha1.PolicyFailover{StandIns: []string{"neu"}}}}
	var eps []*externaldnsv1alpha1.DNSEndpoint
	for _, route := range []string{"web", "api", "shop"} {
		ep := endpointWith(route+"-external-dns-weu", "external-dns-weu", route+".example.com", weuInt, weuInt, aks01Entry)
		ep.Namespace, ep.Labels["router.io/serviceroute"] = "myapp", route
		eps = append(eps, ep)
	}
	names, _ := FailoverNames("external-dns-weu", eps, map[string]*routingv1alpha1.DNSPolicy{"myapp": pol})
	var got []string
	for _, n := range names {
		got = append(got, n.Endpoint+": "+n.Hostname)
	}
	assert.Equal(t, []string{
		"api-external-dns-weu: api.example.com", "api-external-dns-weu: " + weuInt,
		"shop-external-dns-weu: shop.example.com", "web-external-dns-weu: web.example.com",
	}, got, "every route's name, and the intermediate once, from the first DNSEndpoint by name (its pass is marked there)")
}
