package decide

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/external-dns/endpoint"

	clusterv1alpha1 "github.com/service-router/service-router-operator/apis/cluster/v1alpha1"
	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
	"github.com/service-router/service-router-operator/internal/desired"
	"github.com/service-router/service-router-operator/internal/ingress"
)

func withTTL(cfg *clusterv1alpha1.DNSConfiguration, ttl int32, bounds *clusterv1alpha1.RecordTTLBounds) *clusterv1alpha1.DNSConfiguration {
	if ttl != 0 {
		cfg.Spec.RecordTTL = ptr.To(ttl)
	}
	cfg.Spec.RecordTTLBounds = bounds
	return cfg
}

func policyTTL(ttl int32) *routingv1alpha1.DNSPolicy {
	p := dnsPolicy("myapp-dns", time.Now(), routingv1alpha1.DNSPolicyModeActive, "")
	if ttl != 0 {
		p.Spec.RecordTTL = ptr.To(ttl)
	}
	return p
}

func TestRecordTTL_PolicyWithinPlatformBounds(t *testing.T) {
	bounds := &clusterv1alpha1.RecordTTLBounds{Min: 60, Max: 3600}
	tests := []struct {
		name     string
		cfg      *clusterv1alpha1.DNSConfiguration
		pol      *routingv1alpha1.DNSPolicy
		want     int64
		wantNote string
	}{
		{"nothing set: 300 s", configuration("weu"), policyTTL(0), 300, ""},
		{"no configuration: 300 s", nil, nil, 300, ""},
		{"platform TTL", withTTL(configuration("weu"), 120, nil), policyTTL(0), 120, ""},
		{"policy overrides the platform TTL", withTTL(configuration("weu"), 120, nil), policyTTL(600), 600, ""},
		{"without bounds any value of the schema's range", configuration("weu"), policyTTL(30), 30, ""},
		{"policy within bounds", withTTL(configuration("weu"), 300, bounds), policyTTL(900), 900, ""},
		{"policy below the minimum is raised", withTTL(configuration("weu"), 300, bounds), policyTTL(30), 60, "recordTTL 30 is below the platform's minimum; records use 60"},
		{"policy above the maximum is lowered", withTTL(configuration("weu"), 300, bounds), policyTTL(86400), 3600, "recordTTL 86400 is above the platform's maximum; records use 3600"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, note := RecordTTL(tt.cfg, tt.pol)
			assert.Equal(t, tt.want, got)
			assert.Equal(t, tt.wantNote, note)
		})
	}
}

func TestRoute_RecordsCarryThePolicyTTL(t *testing.T) {
	pol := policyTTL(900)
	p := Route(RouteInputs{Route: serviceRoute(), Identity: identity(), Configuration: withTTL(configuration("weu"), 120, nil), Policy: pol, Gateway: gateway("cert")})
	require.Len(t, p.Endpoints, 1)
	assert.Equal(t, endpoint.TTL(900), p.Endpoints[0].Spec.Endpoints[0].RecordTTL)

	p = Route(RouteInputs{Route: serviceRoute(), Identity: identity(), Configuration: configuration("weu"), Policy: policyTTL(0), Gateway: gateway("cert")})
	require.Len(t, p.Endpoints, 1)
	assert.Equal(t, endpoint.TTL(DefaultRecordTTL), p.Endpoints[0].Spec.Endpoints[0].RecordTTL, "records without any TTL setting get 300 s, not the provider's default")
}

func TestIngress_AddressRecordsCarryThePlatformTTL(t *testing.T) {
	svc := &corev1.Service{Status: corev1.ServiceStatus{LoadBalancer: corev1.LoadBalancerStatus{Ingress: []corev1.LoadBalancerIngress{{IP: "10.1.2.3"}, {IP: "fd00::1"}}}}}
	p := Ingress(IngressInputs{
		Ingress:  desired.Ingress{Controller: "istio-internal", TargetPostfix: "internal"},
		Gateways: []*routingv1alpha1.Gateway{gateway("cert")}, Identity: identity(), Configuration: withTTL(configuration("weu", "neu"), 45, nil),
		Service: &IngressService{Namespace: "istio-system", Addresses: ingress.ServiceAddresses(svc)},
	})
	require.Len(t, p.Endpoints, 2)
	for _, ep := range p.Endpoints {
		require.Len(t, ep.Spec.Endpoints, 2, "A and AAAA")
		for _, r := range ep.Spec.Endpoints {
			assert.Equal(t, endpoint.TTL(45), r.RecordTTL, "%s %s", ep.Name, r.RecordType)
		}
	}
}

func TestPolicy_ReportsTheTTLInUse(t *testing.T) {
	cfg := withTTL(configuration("weu"), 300, &clusterv1alpha1.RecordTTLBounds{Min: 60, Max: 600})
	pol := policyTTL(30)
	p := Policy(PolicyInputs{Policy: pol, Identity: identity(), Configuration: cfg, InForce: pol})
	assert.Equal(t, int64(60), p.RecordTTL)
	assert.True(t, p.Ready)
	assert.Contains(t, p.Message, "recordTTL 30 is below the platform's minimum; records use 60")

	p = Policy(PolicyInputs{Policy: policyTTL(0), Identity: identity(), Configuration: cfg})
	assert.Equal(t, int64(300), p.RecordTTL)
}
