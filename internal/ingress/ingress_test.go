package ingress

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/external-dns/endpoint"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
)

func service(ns, name string, typ corev1.ServiceType, created time.Time, ingress ...corev1.LoadBalancerIngress) corev1.Service {
	return corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, CreationTimestamp: metav1.NewTime(created)},
		Spec:       corev1.ServiceSpec{Type: typ},
		Status:     corev1.ServiceStatus{LoadBalancer: corev1.LoadBalancerStatus{Ingress: ingress}},
	}
}

func TestSelectService(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	lb := corev1.ServiceTypeLoadBalancer
	tests := []struct {
		name       string
		candidates []corev1.Service
		want       string
	}{
		{"none", nil, ""},
		{"only ClusterIP", []corev1.Service{service("istio-system", "gw", corev1.ServiceTypeClusterIP, t0)}, ""},
		{"one load balancer", []corev1.Service{service("istio-system", "gw", corev1.ServiceTypeClusterIP, t0), service("aks-istio-ingress", "lb", lb, t0.Add(time.Hour))}, "aks-istio-ingress/lb"},
		{"oldest wins", []corev1.Service{service("b", "new", lb, t0.Add(time.Minute)), service("a", "old", lb, t0)}, "a/old"},
		{"same age: namespace then name", []corev1.Service{service("b", "a", lb, t0), service("a", "z", lb, t0), service("a", "y", lb, t0)}, "a/y"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := SelectService(tt.candidates)
			if tt.want == "" {
				assert.Nil(t, got)
				return
			}
			require.NotNil(t, got)
			assert.Equal(t, tt.want, got.Namespace+"/"+got.Name)
		})
	}
}

func TestRecords(t *testing.T) {
	const name = "aks01-weu-internal.example.com"
	tests := []struct {
		name        string
		ingress     []corev1.LoadBalancerIngress
		want        []*endpoint.Endpoint
		wantPrimary string
	}{
		{"no address yet", nil, nil, ""},
		{"one IPv4", []corev1.LoadBalancerIngress{{IP: "10.123.45.67"}},
			[]*endpoint.Endpoint{{DNSName: name, RecordType: "A", Targets: endpoint.Targets{"10.123.45.67"}}}, "10.123.45.67"},
		{"several IPv4, sorted and deduplicated", []corev1.LoadBalancerIngress{{IP: "10.0.0.2"}, {IP: "10.0.0.1"}, {IP: "10.0.0.2"}},
			[]*endpoint.Endpoint{{DNSName: name, RecordType: "A", Targets: endpoint.Targets{"10.0.0.1", "10.0.0.2"}}}, "10.0.0.1"},
		{"IPv6 gets AAAA", []corev1.LoadBalancerIngress{{IP: "fd00::10"}},
			[]*endpoint.Endpoint{{DNSName: name, RecordType: "AAAA", Targets: endpoint.Targets{"fd00::10"}}}, "fd00::10"},
		{"dual stack", []corev1.LoadBalancerIngress{{IP: "fd00::10"}, {IP: "10.0.0.1"}},
			[]*endpoint.Endpoint{
				{DNSName: name, RecordType: "A", Targets: endpoint.Targets{"10.0.0.1"}},
				{DNSName: name, RecordType: "AAAA", Targets: endpoint.Targets{"fd00::10"}},
			}, "10.0.0.1"},
		{"hostname load balancer gets a CNAME", []corev1.LoadBalancerIngress{{Hostname: "lb-123.elb.example.net"}},
			[]*endpoint.Endpoint{{DNSName: name, RecordType: "CNAME", Targets: endpoint.Targets{"lb-123.elb.example.net"}}}, "lb-123.elb.example.net"},
		{"IP wins over hostname", []corev1.LoadBalancerIngress{{Hostname: "lb.example.net"}, {IP: "10.0.0.1"}},
			[]*endpoint.Endpoint{{DNSName: name, RecordType: "A", Targets: endpoint.Targets{"10.0.0.1"}}}, "10.0.0.1"},
		{"IPv4-mapped IPv6 is IPv4", []corev1.LoadBalancerIngress{{IP: "::ffff:10.0.0.1"}},
			[]*endpoint.Endpoint{{DNSName: name, RecordType: "A", Targets: endpoint.Targets{"10.0.0.1"}}}, "10.0.0.1"},
		{"malformed IP ignored", []corev1.LoadBalancerIngress{{IP: "not-an-ip"}}, nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			svc := service("istio-system", "lb", corev1.ServiceTypeLoadBalancer, time.Now(), tt.ingress...)
			addrs := ServiceAddresses(&svc)
			assert.Equal(t, tt.want, addrs.Records(name))
			assert.Equal(t, tt.wantPrimary, addrs.Primary())
			assert.Equal(t, tt.want == nil, addrs.Empty())
		})
	}
}

func TestGatewayAddresses(t *testing.T) {
	ip, host, custom := gwv1.IPAddressType, gwv1.HostnameAddressType, gwv1.AddressType("example.com/vip")
	cases := []struct {
		name   string
		status []gwv1.GatewayStatusAddress
		want   Addresses
	}{
		{"none yet", nil, Addresses{}},
		{"IPv4 and IPv6, sorted, without duplicates", []gwv1.GatewayStatusAddress{{Type: &ip, Value: "10.0.0.2"}, {Type: &ip, Value: "2001:db8::1"}, {Type: &ip, Value: "10.0.0.1"}, {Type: &ip, Value: "10.0.0.2"}},
			Addresses{IPv4: []string{"10.0.0.1", "10.0.0.2"}, IPv6: []string{"2001:db8::1"}}},
		{"type defaults to IPAddress", []gwv1.GatewayStatusAddress{{Value: "10.0.0.1"}}, Addresses{IPv4: []string{"10.0.0.1"}}},
		{"hostname", []gwv1.GatewayStatusAddress{{Type: &host, Value: "lb.example.net"}}, Addresses{Hostnames: []string{"lb.example.net"}}},
		{"malformed and implementation-specific addresses are not published", []gwv1.GatewayStatusAddress{{Type: &ip, Value: "not-an-ip"}, {Type: &custom, Value: "10.9.9.9"}}, Addresses{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := GatewayAddresses(c.status)
			assert.Equal(t, c.want, got)
			assert.Equal(t, len(c.want.IPv4)+len(c.want.IPv6)+len(c.want.Hostnames) == 0, got.Empty())
		})
	}
}
