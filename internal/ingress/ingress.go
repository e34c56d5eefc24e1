// Package ingress finds the load balancer of an Istio ingress gateway and turns its addresses
// into DNS records. It is pure and table-tested.
//
// The rule: the ingress Service of a Gateway with spec.controller C is a Service of type
// LoadBalancer labelled istio=C in the Gateway's ingress namespace (decide.IngressNamespace: the
// Gateway's spec.ingressNamespace, else its own namespace; managed Istio on AKS runs its gateways
// in aks-istio-ingress). Services of other namespaces are never candidates: a namespace editor
// could otherwise capture the gateway's address. If several match, the oldest wins (then
// namespace/name), so every controller picks the same one.
package ingress

import (
	"cmp"
	"net/netip"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/external-dns/endpoint"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// SelectService returns the ingress Service among candidates (Services of the ingress namespace
// labelled istio=<controller>), or nil when none is of type LoadBalancer.
func SelectService(candidates []corev1.Service) *corev1.Service {
	var best *corev1.Service
	for i := range candidates {
		svc := &candidates[i]
		if svc.Spec.Type != corev1.ServiceTypeLoadBalancer || svc.DeletionTimestamp != nil {
			continue
		}
		if best == nil || older(svc, best) {
			best = svc
		}
	}
	return best
}

func older(a, b *corev1.Service) bool {
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return a.CreationTimestamp.Before(&b.CreationTimestamp)
	}
	return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name)) < 0
}

// Addresses are the load balancer's published addresses, sorted and without duplicates.
type Addresses struct {
	IPv4      []string
	IPv6      []string
	Hostnames []string
}

// ServiceAddresses reads the addresses a Service's load balancer reports in its status.
func ServiceAddresses(svc *corev1.Service) Addresses {
	var ips, hostnames []string
	for _, ing := range svc.Status.LoadBalancer.Ingress {
		ips, hostnames = append(ips, ing.IP), append(hostnames, ing.Hostname)
	}
	return addressesOf(ips, hostnames)
}

// GatewayAddresses reads the addresses a Gateway API Gateway reports in status.addresses (the
// Gateway API backend's load balancer). Types other than IPAddress and Hostname
// (implementation-specific ones) are not published.
func GatewayAddresses(status []gwv1.GatewayStatusAddress) Addresses {
	var ips, hostnames []string
	for _, a := range status {
		switch {
		case a.Type == nil || *a.Type == gwv1.IPAddressType:
			ips = append(ips, a.Value)
		case *a.Type == gwv1.HostnameAddressType:
			hostnames = append(hostnames, a.Value)
		}
	}
	return addressesOf(ips, hostnames)
}

func addressesOf(ips, hostnames []string) Addresses {
	var a Addresses
	for _, s := range ips {
		if s == "" {
			continue
		}
		ip, err := netip.ParseAddr(s)
		switch {
		case err != nil:
			continue // a malformed address is not published
		case ip.Is4() || ip.Is4In6():
			a.IPv4 = append(a.IPv4, ip.Unmap().String())
		default:
			a.IPv6 = append(a.IPv6, ip.String())
		}
	}
	for _, h := range hostnames {
		if h != "" {
			a.Hostnames = append(a.Hostnames, h)
		}
	}
	for _, list := range []*[]string{&a.IPv4, &a.IPv6, &a.Hostnames} {
		slices.Sort(*list)
		*list = slices.Compact(*list)
	}
	return a
}

// Empty reports whether the load balancer has no address yet.
func (a Addresses) Empty() bool {
	return len(a.IPv4) == 0 && len(a.IPv6) == 0 && len(a.Hostnames) == 0
}

// Primary is the address shown in Gateway status: the first IPv4, else IPv6, else hostname.
func (a Addresses) Primary() string {
	for _, list := range [][]string{a.IPv4, a.IPv6, a.Hostnames} {
		if len(list) > 0 {
			return list[0]
		}
	}
	return ""
}

// Records are the DNS records for name: an A record with every IPv4 address and an AAAA record
// with every IPv6 address. A load balancer that reports only hostnames (AWS-style) gets a CNAME
// to the first one: a name with a CNAME can have no other record, so IP addresses win when both
// are reported.
func (a Addresses) Records(name string) []*endpoint.Endpoint {
	var records []*endpoint.Endpoint
	if len(a.IPv4) > 0 {
		records = append(records, &endpoint.Endpoint{DNSName: name, RecordType: endpoint.RecordTypeA, Targets: slices.Clone(a.IPv4)})
	}
	if len(a.IPv6) > 0 {
		records = append(records, &endpoint.Endpoint{DNSName: name, RecordType: endpoint.RecordTypeAAAA, Targets: slices.Clone(a.IPv6)})
	}
	if len(records) == 0 && len(a.Hostnames) > 0 {
		records = append(records, &endpoint.Endpoint{DNSName: name, RecordType: endpoint.RecordTypeCNAME, Targets: endpoint.Targets{a.Hostnames[0]}})
	}
	return records
}
