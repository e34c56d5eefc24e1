package decide

import (
	"testing"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	externaldnsv1alpha1 "sigs.k8s.io/external-dns/apis/v1alpha1"
	"sigs.k8s.io/external-dns/endpoint"

	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
	"github.com/service-router/service-router-operator/internal/failover"
	"github.com/service-router/service-router-operator/internal/naming"
)

// The failover loop and `kubectl router plan --region-lost` decide over the same names: one per
// record of the routes' DNSEndpoints of the zone, with their namespace's policy's stand-ins.
func TestFailoverNames(t *testing.T) {
	const weu = "external-dns-weu"
	endpointOf := func(ns string, mut func(*externaldnsv1alpha1.DNSEndpoint), hostnames ...string) *externaldnsv1alpha1.DNSEndpoint {
		ep := &externaldnsv1alpha1.DNSEndpoint{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "api-" + weu,
			Labels: map[string]string{naming.LabelController: weu, naming.LabelServiceRoute: "api"}}}
		for _, h := range hostnames {
			ep.Spec.Endpoints = append(ep.Spec.Endpoints, &endpoint.Endpoint{DNSName: h, RecordType: "CNAME"})
		}
		if mut != nil {
			mut(ep)
		}
		return ep
	}
	policyOf := func(failback routingv1alpha1.FailbackMode, standIns ...string) *routingv1alpha1.DNSPolicy {
		p := &routingv1alpha1.DNSPolicy{}
		if standIns != nil {
			p.Spec.Failover = &routingv1alpha1.PolicyFailover{StandIns: standIns, Failback: failback}
		}
		return p
	}
	name := func(ns, hostname string, mut func(*failover.Name)) failover.Name {
		n := failover.Name{Controller: weu, Hostname: hostname, Namespace: ns, Endpoint: "api-" + weu}
		if mut != nil {
			mut(&n)
		}
		return n
	}
	shopPolicy := map[string]*routingv1alpha1.DNSPolicy{"shop": policyOf(routingv1alpha1.FailbackManual, "neu", "frc")}
	tests := []struct {
		name            string
		endpoints       []*externaldnsv1alpha1.DNSEndpoint
		policies        map[string]*routingv1alpha1.DNSPolicy
		wantIn, wantOut []failover.Name
	}{
		{"each record of a policy with stand-ins is a name, in order", []*externaldnsv1alpha1.DNSEndpoint{endpointOf("shop", nil, "a.example.com", "b.example.com")}, shopPolicy,
			[]failover.Name{name("shop", "a.example.com", func(n *failover.Name) { n.StandIns = []string{"neu", "frc"} }),
				name("shop", "b.example.com", func(n *failover.Name) { n.StandIns = []string{"neu", "frc"} })}, nil},
		{"automatic failback", []*externaldnsv1alpha1.DNSEndpoint{endpointOf("shop", nil, "a.example.com")},
			map[string]*routingv1alpha1.DNSPolicy{"shop": policyOf(routingv1alpha1.FailbackAutomatic, "neu")},
			[]failover.Name{name("shop", "a.example.com", func(n *failover.Name) { n.StandIns, n.FailBack = []string{"neu"}, true })}, nil},
		{"the DNSEndpoint's takeover mark", []*externaldnsv1alpha1.DNSEndpoint{endpointOf("shop", func(ep *externaldnsv1alpha1.DNSEndpoint) {
			ep.Annotations = map[string]string{naming.AnnotationTakenFrom: "weu"}
		}, "a.example.com")}, shopPolicy,
			[]failover.Name{name("shop", "a.example.com", func(n *failover.Name) { n.StandIns, n.TakenFrom = []string{"neu", "frc"}, "weu" })}, nil},
		{"another namespace's policy without failover: its names never move", []*externaldnsv1alpha1.DNSEndpoint{endpointOf("shop", nil, "a.example.com"), endpointOf("legacy", nil, "l.example.com")},
			map[string]*routingv1alpha1.DNSPolicy{"shop": shopPolicy["shop"], "legacy": policyOf("")},
			[]failover.Name{name("shop", "a.example.com", func(n *failover.Name) { n.StandIns = []string{"neu", "frc"} })}, []failover.Name{name("legacy", "l.example.com", nil)}},
		{"a namespace without a policy", []*externaldnsv1alpha1.DNSEndpoint{endpointOf("orphan", nil, "o.example.com")}, shopPolicy,
			nil, []failover.Name{name("orphan", "o.example.com", nil)}},
		{"a policy with an empty list of stand-ins", []*externaldnsv1alpha1.DNSEndpoint{endpointOf("shop", nil, "a.example.com")},
			map[string]*routingv1alpha1.DNSPolicy{"shop": {Spec: routingv1alpha1.DNSPolicySpec{Failover: &routingv1alpha1.PolicyFailover{}}}},
			nil, []failover.Name{name("shop", "a.example.com", nil)}},
		{"another zone's DNSEndpoint", []*externaldnsv1alpha1.DNSEndpoint{endpointOf("shop", func(ep *externaldnsv1alpha1.DNSEndpoint) {
			ep.Labels[naming.LabelController] = "external-dns-frc"
		}, "a.example.com")}, shopPolicy, nil, nil},
		{"not a route's DNSEndpoint (a gateway's addresses)", []*externaldnsv1alpha1.DNSEndpoint{endpointOf("shop", func(ep *externaldnsv1alpha1.DNSEndpoint) {
			delete(ep.Labels, naming.LabelServiceRoute)
		}, "a.example.com")}, shopPolicy, nil, nil},
		{"a DNSEndpoint being deleted: ExternalDNS still publishes it", []*externaldnsv1alpha1.DNSEndpoint{endpointOf("shop", func(ep *externaldnsv1alpha1.DNSEndpoint) {
			ep.DeletionTimestamp = &metav1.Time{}
		}, "a.example.com")}, shopPolicy,
			[]failover.Name{name("shop", "a.example.com", func(n *failover.Name) { n.StandIns = []string{"neu", "frc"} })}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			standIn, fixed := FailoverNames(weu, tt.endpoints, tt.policies)
			assert.Equal(t, tt.wantIn, standIn, "stand-in names")
			assert.Equal(t, tt.wantOut, fixed, "fixed names")
		})
	}
}
