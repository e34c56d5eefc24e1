package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
)

// admissionCase is one manifest the API server must reject, and what the error must say: the
// field path and the reason, so that a user knows what to fix.
type admissionCase struct {
	name     string
	manifest string
	want     []string
}

const (
	validIdentitySpec = `
  region: weu
  cluster: aks01
  domain: example.com
  environmentLetter: d`
	validRouteSpec = `
  serviceName: api
  gatewayName: default-gateway
  environment: prod
  application: myapp`
)

func clusterIdentity(name, spec string) string {
	return fmt.Sprintf("apiVersion: cluster.router.io/v1alpha1\nkind: ClusterIdentity\nmetadata:\n  name: %s\nspec:%s\n", name, spec)
}

func dnsConfiguration(name, spec string) string {
	return fmt.Sprintf("apiVersion: cluster.router.io/v1alpha1\nkind: DNSConfiguration\nmetadata:\n  name: %s\nspec:%s\n", name, spec)
}

func namespaced(kind, name, spec string) string {
	return fmt.Sprintf("apiVersion: routing.router.io/v1alpha1\nkind: %s\nmetadata:\n  name: %s\n  namespace: admission\nspec:%s\n", kind, name, spec)
}

func TestAdmission_RejectsInvalidObjects(t *testing.T) {
	ensureNamespace(t, "admission")
	long := strings.Repeat("a", 64)
	cases := []admissionCase{
		// ClusterIdentity
		{"ClusterIdentity is a singleton", clusterIdentity("my-identity", validIdentitySpec),
			[]string{"metadata.name must be cluster-identity"}},
		{"ClusterIdentity region required", clusterIdentity("cluster-identity", "\n  cluster: aks01\n  domain: example.com\n  environmentLetter: d"),
			[]string{"spec.region", "Required value"}},
		{"ClusterIdentity cluster required", clusterIdentity("cluster-identity", "\n  region: weu\n  domain: example.com\n  environmentLetter: d"),
			[]string{"spec.cluster", "Required value"}},
		{"ClusterIdentity environmentLetter required", clusterIdentity("cluster-identity", "\n  region: weu\n  cluster: aks01\n  domain: example.com"),
			[]string{"spec.environmentLetter", "Required value"}},
		{"ClusterIdentity domain required", clusterIdentity("cluster-identity", "\n  region: weu\n  cluster: aks01\n  environmentLetter: d"),
			[]string{"spec.domain", "Required value"}},
		{"ClusterIdentity region is a DNS label", clusterIdentity("cluster-identity", "\n  region: West_EU\n  cluster: aks01\n  domain: example.com\n  environmentLetter: d"),
			[]string{"spec.region", "region must be a DNS label"}},
		{"ClusterIdentity region at most 63 characters", clusterIdentity("cluster-identity", "\n  region: "+long+"\n  cluster: aks01\n  domain: example.com\n  environmentLetter: d"),
			[]string{"spec.region", "Too long"}},
		{"ClusterIdentity cluster is a DNS label", clusterIdentity("cluster-identity", "\n  region: weu\n  cluster: -aks01\n  domain: example.com\n  environmentLetter: d"),
			[]string{"spec.cluster", "cluster must be a DNS label"}},
		{"ClusterIdentity adopted region is a DNS label", clusterIdentity("cluster-identity", validIdentitySpec+"\n  adoptsRegions: [frc, Not.A.Label]"),
			[]string{"spec.adoptsRegions[1]", "each adopted region must be a DNS label"}},
		{"ClusterIdentity adopted regions unique", clusterIdentity("cluster-identity", validIdentitySpec+"\n  adoptsRegions: [frc, frc]"),
			[]string{"spec.adoptsRegions[1]", "Duplicate value"}},
		{"ClusterIdentity does not adopt its own region", clusterIdentity("cluster-identity", validIdentitySpec+"\n  adoptsRegions: [frc, weu]"),
			[]string{"spec.adoptsRegions", "adoptsRegions must not contain the cluster's own region"}},
		{"ClusterIdentity adopts at most 32 regions", clusterIdentity("cluster-identity", validIdentitySpec+"\n  adoptsRegions: ["+regionList(33)+"]"),
			[]string{"spec.adoptsRegions", "Too many"}},
		{"ClusterIdentity domain lowercase", clusterIdentity("cluster-identity", "\n  region: weu\n  cluster: aks01\n  domain: Example.COM\n  environmentLetter: d"),
			[]string{"spec.domain", "domain must be a lowercase DNS name"}},
		{"ClusterIdentity domain labels at most 63 characters", clusterIdentity("cluster-identity", "\n  region: weu\n  cluster: aks01\n  domain: "+long+".example.com\n  environmentLetter: d"),
			[]string{"spec.domain", "domain must be a lowercase DNS name"}},
		{"ClusterIdentity domain has no empty label", clusterIdentity("cluster-identity", "\n  region: weu\n  cluster: aks01\n  domain: example..com\n  environmentLetter: d"),
			[]string{"spec.domain", "domain must be a lowercase DNS name"}},
		{"ClusterIdentity domain at most 242 characters (room for the shortest service hostname)", clusterIdentity("cluster-identity", "\n  region: weu\n  cluster: aks01\n  domain: "+longDomain(243)+"\n  environmentLetter: d"),
			[]string{"spec.domain", "Too long", "242"}},
		{"ClusterIdentity leaves room for a gateway target hostname", clusterIdentity("cluster-identity", "\n  region: "+strings.Repeat("r", 63)+"\n  cluster: "+strings.Repeat("c", 63)+"\n  domain: "+longDomain(130)+"\n  environmentLetter: d"),
			[]string{"spec.domain", "leave no room for a gateway target hostname"}},
		{"ClusterIdentity environmentLetter is one character", clusterIdentity("cluster-identity", "\n  region: weu\n  cluster: aks01\n  domain: example.com\n  environmentLetter: dev"),
			[]string{"spec.environmentLetter", "Too long"}},
		{"ClusterIdentity environmentLetter lowercase", clusterIdentity("cluster-identity", "\n  region: weu\n  cluster: aks01\n  domain: example.com\n  environmentLetter: D"),
			[]string{"spec.environmentLetter", "environmentLetter must be one lowercase letter or digit"}},

		// DNSConfiguration
		{"DNSConfiguration is a singleton", dnsConfiguration("dns", "\n  externalDNSControllers:\n    - {name: external-dns-weu, region: weu}"),
			[]string{"metadata.name must be dns-config"}},
		{"DNSConfiguration controllers required", dnsConfiguration("dns-config", " {}"),
			[]string{"spec.externalDNSControllers", "Required value"}},
		{"DNSConfiguration at least one controller", dnsConfiguration("dns-config", "\n  externalDNSControllers: []"),
			[]string{"spec.externalDNSControllers", "should have at least 1 items"}},
		{"DNSConfiguration controller names unique", dnsConfiguration("dns-config", "\n  externalDNSControllers:\n    - {name: external-dns-weu, region: weu}\n    - {name: external-dns-weu, region: neu}"),
			[]string{"spec.externalDNSControllers[1]", "Duplicate value"}},
		{"DNSConfiguration controller name is a DNS label", dnsConfiguration("dns-config", "\n  externalDNSControllers:\n    - {name: External_DNS, region: weu}"),
			[]string{"spec.externalDNSControllers[0].name", "controller name must be a DNS label"}},
		{"DNSConfiguration controller region required", dnsConfiguration("dns-config", "\n  externalDNSControllers:\n    - {name: external-dns-weu}"),
			[]string{"spec.externalDNSControllers[0].region", "Required value"}},
		{"DNSConfiguration controller region is a DNS label", dnsConfiguration("dns-config", "\n  externalDNSControllers:\n    - {name: external-dns-weu, region: WEU}"),
			[]string{"spec.externalDNSControllers[0].region", "controller region must be a DNS label"}},
		{"DNSConfiguration name server needs a port", dnsConfiguration("dns-config", "\n  externalDNSControllers:\n    - {name: external-dns-weu, region: weu, verification: {nameservers: [10.0.0.53]}}"),
			[]string{"spec.externalDNSControllers[0].verification.nameservers[0]", "each name server must be host:port"}},
		{"DNSConfiguration name server port at most 65535", dnsConfiguration("dns-config", "\n  externalDNSControllers:\n    - {name: external-dns-weu, region: weu, verification: {nameservers: [\"10.0.0.53:65536\"]}}"),
			[]string{"spec.externalDNSControllers[0].verification.nameservers[0]", "port from 1 to 65535"}},
		{"DNSConfiguration verification needs a name server", dnsConfiguration("dns-config", "\n  externalDNSControllers:\n    - {name: external-dns-weu, region: weu, verification: {nameservers: []}}"),
			[]string{"spec.externalDNSControllers[0].verification.nameservers", "should have at least 1 items"}},
		{"DNSConfiguration verification timeout at most 30s", dnsConfiguration("dns-config", "\n  externalDNSControllers:\n    - {name: external-dns-weu, region: weu, verification: {nameservers: [\"10.0.0.53:53\"], timeout: 1m}}"),
			[]string{"spec.externalDNSControllers[0].verification.timeout", "timeout must be between 100ms and 30s"}},
		{"DNSConfiguration recordTTL at least 30", dnsConfiguration("dns-config", "\n  recordTTL: 0\n  externalDNSControllers:\n    - {name: external-dns-weu, region: weu}"),
			[]string{"spec.recordTTL", "should be greater than or equal to 30"}},
		{"DNSConfiguration recordTTL within its bounds", dnsConfiguration("dns-config", "\n  recordTTL: 300\n  recordTTLBounds: {min: 60, max: 120}\n  externalDNSControllers:\n    - {name: external-dns-weu, region: weu}"),
			[]string{"spec.recordTTL", "recordTTL must lie within recordTTLBounds"}},
		{"DNSConfiguration recordTTLBounds ordered", dnsConfiguration("dns-config", "\n  recordTTLBounds: {min: 600, max: 60}\n  externalDNSControllers:\n    - {name: external-dns-weu, region: weu}"),
			[]string{"spec.recordTTLBounds", "recordTTLBounds.min must not exceed recordTTLBounds.max"}},
		{"DNSConfiguration drain needs a zone with failover settings", dnsConfiguration("dns-config", "\n  failover: {drain: true}\n  externalDNSControllers:\n    - {name: external-dns-weu, region: weu}"),
			[]string{"spec", "failover.drain moves the names of the zones with failover settings", "nothing to drain"}},

		{"DNSPolicy recordTTL at most a day", namespaced("DNSPolicy", "p", "\n  mode: Active\n  recordTTL: 86401"),
			[]string{"spec.recordTTL", "should be less than or equal to 86400"}},

		// Gateway
		{"Gateway controller required", namespaced("Gateway", "gw", "\n  targetPostfix: internal"),
			[]string{"spec.controller", "Required value"}},
		{"Gateway controller is a DNS label", namespaced("Gateway", "gw", "\n  controller: Istio_Ingress\n  targetPostfix: internal"),
			[]string{"spec.controller", "controller must be a DNS label"}},
		{"Gateway targetPostfix required", namespaced("Gateway", "gw", "\n  controller: ingress"),
			[]string{"spec.targetPostfix", "Required value"}},
		{"Gateway targetPostfix is a DNS label", namespaced("Gateway", "gw", "\n  controller: ingress\n  targetPostfix: internal.lan"),
			[]string{"spec.targetPostfix", "targetPostfix must be a DNS label"}},
		{"DNSConfiguration zone transfer from the authoritative name servers only",
			dnsConfiguration("dns-config", "\n  externalDNSControllers:\n    - {name: external-dns-weu, region: weu, verification: {resolvers: [\"168.63.129.16:53\"], transferZone: example.com}}"),
			[]string{"transferZone reads the zone from its authoritative nameservers"}},
		{"DNSConfiguration transfer zone is a DNS name",
			dnsConfiguration("dns-config", "\n  externalDNSControllers:\n    - {name: external-dns-weu, region: weu, verification: {nameservers: [\"10.0.0.53:53\"], transferZone: \"example..com\"}}"),
			[]string{"spec.externalDNSControllers[0].verification.transferZone", "should match"}},
		{"DNSConfiguration verification through name servers or resolvers, not both",
			dnsConfiguration("dns-config", "\n  externalDNSControllers:\n    - {name: external-dns-weu, region: weu, verification: {nameservers: [\"10.0.0.53:53\"], resolvers: [\"168.63.129.16:53\"]}}"),
			[]string{"set exactly one of nameservers (the zone's authoritative servers), resolvers (a recursive resolver that serves the zone) and azurePrivateDNS"}},
		{"DNSConfiguration verification needs one of them",
			dnsConfiguration("dns-config", "\n  externalDNSControllers:\n    - {name: external-dns-weu, region: weu, verification: {timeout: 2s}}"),
			[]string{"set exactly one of nameservers (the zone's authoritative servers), resolvers (a recursive resolver that serves the zone) and azurePrivateDNS"}},
		{"DNSConfiguration verification through Azure Resource Manager and name servers, not both",
			dnsConfiguration("dns-config", "\n  externalDNSControllers:\n    - {name: external-dns-weu, region: weu, verification: {nameservers: [\"10.0.0.53:53\"], azurePrivateDNS: {subscriptionId: 00000000-0000-0000-0000-000000000000, resourceGroup: rg-dns-weu, zoneName: example.internal}}}"),
			[]string{"set exactly one of nameservers (the zone's authoritative servers), resolvers (a recursive resolver that serves the zone) and azurePrivateDNS"}},
		{"DNSConfiguration azurePrivateDNS subscriptionId is a GUID",
			dnsConfiguration("dns-config", "\n  externalDNSControllers:\n    - {name: external-dns-weu, region: weu, verification: {azurePrivateDNS: {subscriptionId: my-subscription, resourceGroup: rg-dns-weu, zoneName: example.internal}}}"),
			[]string{"spec.externalDNSControllers[0].verification.azurePrivateDNS.subscriptionId"}},
		{"DNSConfiguration azurePrivateDNS zoneName without a trailing dot",
			dnsConfiguration("dns-config", "\n  externalDNSControllers:\n    - {name: external-dns-weu, region: weu, verification: {azurePrivateDNS: {subscriptionId: 00000000-0000-0000-0000-000000000000, resourceGroup: rg-dns-weu, zoneName: example.internal.}}}"),
			[]string{"spec.externalDNSControllers[0].verification.azurePrivateDNS.zoneName"}},
		{"DNSConfiguration azurePrivateDNS pageSize at most 1000",
			dnsConfiguration("dns-config", "\n  externalDNSControllers:\n    - {name: external-dns-weu, region: weu, verification: {azurePrivateDNS: {subscriptionId: 00000000-0000-0000-0000-000000000000, resourceGroup: rg-dns-weu, zoneName: example.internal, pageSize: 5000}}}"),
			[]string{"spec.externalDNSControllers[0].verification.azurePrivateDNS.pageSize", "less than or equal to 1000"}},
		{"DNSConfiguration azurePrivateDNS takes its own timeout",
			dnsConfiguration("dns-config", "\n  externalDNSControllers:\n    - {name: external-dns-weu, region: weu, verification: {timeout: 2s, azurePrivateDNS: {subscriptionId: 00000000-0000-0000-0000-000000000000, resourceGroup: rg-dns-weu, zoneName: example.internal}}}"),
			[]string{"timeout applies to DNS queries; for azurePrivateDNS set azurePrivateDNS.timeout"}},
		{"DNSConfiguration azurePrivateDNS endpoint is https",
			dnsConfiguration("dns-config", "\n  externalDNSControllers:\n    - {name: external-dns-weu, region: weu, verification: {azurePrivateDNS: {subscriptionId: 00000000-0000-0000-0000-000000000000, resourceGroup: rg-dns-weu, zoneName: example.internal, resourceManagerEndpoint: \"http://arm.local/\"}}}"),
			[]string{"spec.externalDNSControllers[0].verification.azurePrivateDNS.resourceManagerEndpoint"}},
		{"Gateway redirecting HTTP needs HTTPS", namespaced("Gateway", "gw", "\n  controller: ingress\n  targetPostfix: internal\n  plainHTTP: RedirectToHTTPS"),
			[]string{"plainHTTP RedirectToHTTPS sends clients to HTTPS, which needs credentialName"}},
		{"Gateway plainHTTP is one of three", namespaced("Gateway", "gw", "\n  controller: ingress\n  targetPostfix: internal\n  plainHTTP: Yes"),
			[]string{"spec.plainHTTP", "Unsupported value"}},
		{"Gateway credentialName is a Secret name", namespaced("Gateway", "gw", "\n  controller: ingress\n  targetPostfix: internal\n  credentialName: Cert/Ingress"),
			[]string{"spec.credentialName", "credentialName must be a valid Secret name"}},
		{"Gateway backend is one of two", namespaced("Gateway", "gw", "\n  controller: ingress\n  targetPostfix: internal\n  credentialName: cert\n  backend: Ingress"),
			[]string{"spec.backend", "Unsupported value"}},
		{"Gateway gatewayClassName is a GatewayClass name", namespaced("Gateway", "gw", "\n  controller: ingress\n  targetPostfix: internal\n  credentialName: cert\n  backend: GatewayAPI\n  gatewayClassName: Istio_Class"),
			[]string{"spec.gatewayClassName", "gatewayClassName must be a GatewayClass name"}},
		{"Gateway bare Istio hosts only with the classic backend", namespaced("Gateway", "gw", "\n  controller: ingress\n  targetPostfix: internal\n  credentialName: cert\n  backend: GatewayAPI\n  istioHostFormat: Bare"),
			[]string{"istioHostFormat Bare applies to the IstioGateway backend only"}},

		{"DNSConfiguration failover needs verification", dnsConfiguration("dns-config", "\n  externalDNSControllers:\n    - {name: external-dns-weu, region: weu, failover: {ownerID: external-dns-weu-aks01}}"),
			[]string{"spec.externalDNSControllers[0].failover", "failover reads the zone through its verification settings"}},
		{"DNSConfiguration failover TSIG needs nameservers", dnsConfiguration("dns-config", "\n  externalDNSControllers:\n    - {name: external-dns-weu, region: weu, verification: {resolvers: [\"10.0.0.1:53\"]}, failover: {ownerID: o, tsig: {keyName: k, secretFile: /etc/k}}}"),
			[]string{"spec.externalDNSControllers[0].failover.tsig", "set verification.nameservers"}},
		{"DNSConfiguration failover TSIG secret is a path", dnsConfiguration("dns-config", "\n  externalDNSControllers:\n    - {name: external-dns-weu, region: weu, verification: {nameservers: [\"10.0.0.1:53\"]}, failover: {ownerID: o, tsig: {keyName: k, secretFile: k.secret}}}"),
			[]string{"spec.externalDNSControllers[0].failover.tsig.secretFile", "secretFile must be an absolute path"}},
		{"DNSConfiguration failover owner ID required", dnsConfiguration("dns-config", "\n  externalDNSControllers:\n    - {name: external-dns-weu, region: weu, verification: {nameservers: [\"10.0.0.1:53\"]}, failover: {txtPrefix: weu-p-}}"),
			[]string{"spec.externalDNSControllers[0].failover.ownerID", "Required value"}},
		{"DNSConfiguration heartbeat goes stale after its interval", dnsConfiguration("dns-config", "\n  failover: {heartbeatInterval: 30s}\n  externalDNSControllers:\n    - {name: external-dns-weu, region: weu}"),
			[]string{"spec.failover", "heartbeatStaleAfter must exceed heartbeatInterval"}},
		// DNSPolicy
		{"DNSPolicy mode required", namespaced("DNSPolicy", "p", "\n  sourceRegion: weu"),
			[]string{"spec.mode", "Required value"}},
		{"DNSPolicy mode Active or RegionBound", namespaced("DNSPolicy", "p", "\n  mode: Passive"),
			[]string{"spec.mode", `Unsupported value: "Passive"`, `"Active", "RegionBound"`}},
		{"DNSPolicy stand-ins unique", namespaced("DNSPolicy", "p", "\n  mode: Active\n  failover: {standIns: [neu, neu]}"),
			[]string{"spec.failover.standIns", "standIns must not repeat a region"}},
		{"DNSPolicy stand-ins are region names", namespaced("DNSPolicy", "p", "\n  mode: Active\n  failover: {standIns: [North_EU]}"),
			[]string{"spec.failover.standIns[0]", "each stand-in must be a region name"}},
		{"DNSPolicy failover names a stand-in", namespaced("DNSPolicy", "p", "\n  mode: Active\n  failover: {standIns: []}"),
			[]string{"spec.failover.standIns", "should have at least 1 items"}},
		{"DNSPolicy failover not in RegionBound mode (no stand-in publishes the names)", namespaced("DNSPolicy", "p", "\n  mode: RegionBound\n  sourceRegion: weu\n  failover: {standIns: [neu]}"),
			[]string{"spec.failover", "failover needs mode Active without sourceRegion or sourceCluster"}},
		{"DNSPolicy failover not limited to a region", namespaced("DNSPolicy", "p", "\n  mode: Active\n  sourceRegion: weu\n  failover: {standIns: [neu]}"),
			[]string{"spec.failover", "a policy that applies in one region or cluster is published by no stand-in"}},
		{"DNSPolicy failover not limited to a cluster", namespaced("DNSPolicy", "p", "\n  mode: Active\n  sourceCluster: aks01\n  failover: {standIns: [neu]}"),
			[]string{"spec.failover", "failover needs mode Active"}},
		{"DNSPolicy RegionBound requires sourceRegion", namespaced("DNSPolicy", "p", "\n  mode: RegionBound"),
			[]string{"spec.sourceRegion", "sourceRegion is required in RegionBound mode"}},
		{"DNSPolicy RegionBound requires non-empty sourceRegion", namespaced("DNSPolicy", "p", "\n  mode: RegionBound\n  sourceRegion: \"\""),
			[]string{"spec.sourceRegion", "sourceRegion is required in RegionBound mode"}},
		{"DNSPolicy sourceRegion is a DNS label", namespaced("DNSPolicy", "p", "\n  mode: Active\n  sourceRegion: West EU"),
			[]string{"spec.sourceRegion", "sourceRegion must be a DNS label"}},
		{"DNSPolicy sourceCluster is a DNS label", namespaced("DNSPolicy", "p", "\n  mode: RegionBound\n  sourceRegion: weu\n  sourceCluster: AKS01"),
			[]string{"spec.sourceCluster", "sourceCluster must be a DNS label"}},

		// ServiceRoute
		{"ServiceRoute serviceName required", namespaced("ServiceRoute", "r", "\n  gatewayName: gw\n  environment: prod\n  application: myapp"),
			[]string{"spec.serviceName", "Required value"}},
		{"ServiceRoute gatewayName required", namespaced("ServiceRoute", "r", "\n  serviceName: api\n  environment: prod\n  application: myapp"),
			[]string{"spec.gatewayName", "Required value"}},
		{"ServiceRoute environment required", namespaced("ServiceRoute", "r", "\n  serviceName: api\n  gatewayName: gw\n  application: myapp"),
			[]string{"spec.environment", "Required value"}},
		{"ServiceRoute application required", namespaced("ServiceRoute", "r", "\n  serviceName: api\n  gatewayName: gw\n  environment: prod"),
			[]string{"spec.application", "Required value"}},
		{"ServiceRoute serviceName is a DNS label", namespaced("ServiceRoute", "r", "\n  serviceName: api.v2\n  gatewayName: gw\n  environment: prod\n  application: myapp"),
			[]string{"spec.serviceName", "serviceName must be a DNS label"}},
		{"ServiceRoute gatewayName is a DNS label", namespaced("ServiceRoute", "r", "\n  serviceName: api\n  gatewayName: Default_Gateway\n  environment: prod\n  application: myapp"),
			[]string{"spec.gatewayName", "gatewayName must be a DNS label"}},
		{"ServiceRoute gatewayNamespace is a namespace name", namespaced("ServiceRoute", "r", validRouteSpec+"\n  gatewayNamespace: Istio-System"),
			[]string{"spec.gatewayNamespace", "gatewayNamespace must be a namespace name"}},
		{"ServiceRoute environment is a DNS label", namespaced("ServiceRoute", "r", "\n  serviceName: api\n  gatewayName: gw\n  environment: Prod\n  application: myapp"),
			[]string{"spec.environment", "environment must be a DNS label"}},
		{"ServiceRoute application is a DNS label", namespaced("ServiceRoute", "r", "\n  serviceName: api\n  gatewayName: gw\n  environment: prod\n  application: my_app"),
			[]string{"spec.application", "application must be a DNS label"}},
		{"ServiceRoute hostname label fits in 63 characters", namespaced("ServiceRoute", "r",
			"\n  serviceName: "+strings.Repeat("s", 20)+"\n  gatewayName: gw\n  environment: "+strings.Repeat("e", 20)+"\n  application: "+strings.Repeat("a", 17)),
			[]string{"spec", "must fit in 63 characters"}},
		{"ServiceRoute name at most 63 characters", namespaced("ServiceRoute", long, validRouteSpec),
			[]string{"ServiceRoute name must be at most 63 characters"}},
	}

	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			obj := fromYAML(t, tc.manifest)
			err := env.Client.Create(context.Background(), obj, client.DryRunAll)
			require.Error(t, err, "the API server accepted:\n%s", tc.manifest)
			require.True(t, apierrors.IsInvalid(err), "want an Invalid error, got %v", err)
			for _, want := range tc.want {
				require.Contains(t, err.Error(), want)
			}
		})
	}
}

// TestAdmission_AcceptsBoundaryValues proves the rules are not stricter than they say.
func TestAdmission_AcceptsBoundaryValues(t *testing.T) {
	ensureNamespace(t, "admission")
	accepted := []string{
		// {aks01}-{weu}-{p}.{domain} is exactly 253 characters with the shortest postfix.
		clusterIdentity("cluster-identity", "\n  region: weu\n  cluster: aks01\n  domain: "+longDomain(241)+"\n  environmentLetter: \"7\"\n  adoptsRegions: ["+regionList(32)+"]"),
		clusterIdentity("cluster-identity", "\n  region: "+strings.Repeat("r", 63)+"\n  cluster: a\n  domain: com\n  environmentLetter: p"),
		namespaced("DNSPolicy", "p", "\n  mode: RegionBound\n  sourceRegion: weu\n  sourceCluster: vec-weu-p-aks01"),
		namespaced("DNSPolicy", "p", "\n  mode: Active\n  sourceRegion: \"\"\n  sourceCluster: \"\""),
		namespaced("DNSPolicy", "p", "\n  mode: Active\n  recordTTL: 30"),
		namespaced("DNSPolicy", "p", "\n  mode: Active\n  failover: {standIns: [neu, frc, a, b, c, d, e, \"f-1\"]}"),
		namespaced("DNSPolicy", "p", "\n  mode: Active\n  sourceRegion: \"\"\n  failover: {standIns: [neu]}"),
		dnsConfiguration("dns-config", "\n  failover: {probePort: 65535, probeInterval: 1s, failureThreshold: 20, heartbeatInterval: 1s, heartbeatStaleAfter: 2s, drain: true}\n  externalDNSControllers:\n"+
			"    - {name: external-dns-weu, region: weu, verification: {nameservers: [\"10.0.0.53:53\"]}, failover: {ownerID: external-dns-weu-aks01, txtPrefix: weu-p-,"+
			" tsig: {keyName: externaldns-weu, algorithm: hmac-sha512, secretFile: /etc/service-router/tsig/weu}}}\n"+
			"    - {name: external-dns-neu, region: neu, verification: {azurePrivateDNS: {subscriptionId: 00000000-0000-0000-0000-000000000000, resourceGroup: rg, zoneName: x}}, failover: {ownerID: Owner_1.x}}"),
		dnsConfiguration("dns-config", "\n  recordTTL: 86400\n  recordTTLBounds: {min: 30, max: 86400}\n  externalDNSControllers:\n"+
			"    - {name: external-dns-weu, region: weu, verification: {nameservers: [\"10.0.0.53:53\", \"ns1.example.com:5353\", \"[fd00::53]:53\"], timeout: 100ms}}\n"+
			"    - {name: external-dns-neu, region: neu, verification: {nameservers: [\"10.1.0.53:65535\"], timeout: 30s, transferZone: example.com.}}\n"+
			"    - {name: external-dns-frc, region: frc, verification: {resolvers: [\"168.63.129.16:53\"]}}"),
		dnsConfiguration("dns-config", "\n  externalDNSControllers:\n"+
			"    - {name: external-dns-weu, region: weu, verification: {azurePrivateDNS: {subscriptionId: 00000000-0000-0000-0000-000000000000, resourceGroup: rg-dns-weu, zoneName: aks.example.com}}}\n"+
			"    - {name: external-dns-neu, region: neu, verification: {azurePrivateDNS: {subscriptionId: 0A0b0c0D-0000-0000-0000-000000000000, resourceGroup: \"rg_(dns).neu-1\", zoneName: x,"+
			" configFile: /etc/azure/azure.json, resourceManagerEndpoint: \"https://management.usgovcloudapi.net/\", activeDirectoryAuthorityHost: \"https://login.microsoftonline.us/\","+
			" pageSize: 1000, interval: 1s, timeout: 2m}}}\n"+
			"    - {name: external-dns-frc, region: frc, verification: {azurePrivateDNS: {subscriptionId: 00000000-0000-0000-0000-000000000000, resourceGroup: "+strings.Repeat("g", 90)+", zoneName: aks.example.com, pageSize: 1, interval: 1h}}}"),
		namespaced("Gateway", "gw", "\n  controller: ingress\n  targetPostfix: internal\n  credentialName: cert.ingress-tls"),
		namespaced("Gateway", "gw", "\n  controller: ingress\n  targetPostfix: internal\n  plainHTTP: Serve"),
		namespaced("Gateway", "gw", "\n  controller: ingress\n  targetPostfix: internal\n  credentialName: cert\n  plainHTTP: RedirectToHTTPS"),
		namespaced("Gateway", "gw", "\n  controller: ingress\n  targetPostfix: internal\n  credentialName: cert\n  backend: GatewayAPI\n  gatewayClassName: istio.example.com"),
		namespaced("ServiceRoute", strings.Repeat("r", 63),
			"\n  serviceName: "+strings.Repeat("s", 20)+"\n  gatewayName: gw\n  environment: "+strings.Repeat("e", 20)+"\n  application: "+strings.Repeat("a", 16)),
	}
	for _, manifest := range accepted {
		obj := fromYAML(t, manifest)
		require.NoError(t, applyDryRun(obj), "rejected:\n%s", manifest) // the singletons may exist already
	}
}

// TestAdmission_DefaultsGatewayNamespace checks that a ServiceRoute without gatewayNamespace is
// stored with istio-system.
func TestAdmission_DefaultsGatewayNamespace(t *testing.T) {
	ns := newNamespace(t, "defaults")
	route := &routingv1alpha1.ServiceRoute{}
	route.Name, route.Namespace = "api-route", ns
	route.Spec = routingv1alpha1.ServiceRouteSpec{ServiceName: "api", GatewayName: "default-gateway", Environment: "dev", Application: "myapp"}
	require.NoError(t, env.Client.Create(context.Background(), route))
	require.Equal(t, routingv1alpha1.DefaultGatewayNamespace, route.Spec.GatewayNamespace)
}

// TestAdmission_GatewayBackendDefaultsToTheClassicIstioGateway: a Gateway written before the
// backend field existed is stored with backend IstioGateway (the same generation as before) and
// gatewayClassName istio.
func TestAdmission_GatewayBackendDefaultsToTheClassicIstioGateway(t *testing.T) {
	ns := newNamespace(t, "defaults")
	gw := &routingv1alpha1.Gateway{}
	gw.Name, gw.Namespace = "gw", ns
	gw.Spec = routingv1alpha1.GatewaySpec{Controller: "ingress", TargetPostfix: "internal", CredentialName: "cert"}
	require.NoError(t, env.Client.Create(context.Background(), gw))
	require.Equal(t, routingv1alpha1.BackendIstioGateway, gw.Spec.Backend)
	require.Equal(t, routingv1alpha1.DefaultGatewayClassName, gw.Spec.GatewayClassName)
	require.Equal(t, routingv1alpha1.IstioHostNamespaceScoped, gw.Spec.IstioHostFormat)
}

func regionList(n int) string {
	regions := make([]string, n)
	for i := range regions {
		regions[i] = fmt.Sprintf("r%d", i)
	}
	return strings.Join(regions, ", ")
}

// longDomain returns a valid DNS name of exactly n characters (n >= 3).
func longDomain(n int) string {
	var labels []string
	for n > 0 {
		size := min(n, 63)
		if n-size == 1 { // a remainder of one character cannot be ".x": shorten this label
			size--
		}
		labels = append(labels, strings.Repeat("d", size))
		n -= size
		if n > 0 {
			n-- // the dot
		}
	}
	return strings.Join(labels, ".")
}
