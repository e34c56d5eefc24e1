// Package naming builds the hostnames and object names the spec prescribes. It is pure: every
// function is a computation on strings, table-tested without a cluster.
package naming

import (
	"fmt"
	"strings"
)

const (
	// MaxLabelLength is the longest DNS label (RFC 1035).
	MaxLabelLength = 63
	// MaxHostnameLength is the longest DNS name in text form, without the trailing dot.
	MaxHostnameLength = 253
)

// Labels, annotations and values the operator puts on what it creates. The managed-by label marks
// ownership: the operator never updates or deletes an object without it.
const (
	LabelManagedBy         = "app.kubernetes.io/managed-by"
	ManagedByValue         = "service-router-operator"
	LabelController        = "router.io/controller"
	LabelRegion            = "router.io/region"
	LabelServiceRoute      = "router.io/serviceroute"
	LabelSourceNamespace   = "router.io/source-namespace"
	LabelIstioController   = "router.io/istio-controller"
	LabelTargetPostfix     = "router.io/target-postfix"
	LabelResourceType      = "router.io/resource-type"
	ResourceTypeGateway    = "gateway-service"
	AnnotationController   = "external-dns.alpha.kubernetes.io/controller"
	IngressServiceSelector = "istio"
	// AnnotationAdopt, set to "true" by a platform admin on an existing DNSEndpoint or Istio
	// Gateway that has the name the operator would generate, lets the operator take it over in
	// place (same UID, no gap in the records) instead of reporting an ownership conflict.
	AnnotationAdopt = "router.io/adopt"
	// AnnotationApplications, on a Namespace, lists the application names (comma-separated) the
	// namespace owns: its ServiceRoutes may use only those, and ServiceRoutes of other namespaces
	// may not use them. A namespace editor cannot change Namespace objects, so the platform decides.
	AnnotationApplications = "router.io/applications"
	// AnnotationOwnershipPassed, on a route's DNSEndpoint, is when regional failover last passed
	// the ownership of one of its names to this cluster's ExternalDNS (RFC 3339). Setting it is
	// an update of the DNSEndpoint, which an ExternalDNS run with --events takes as the cue to
	// synchronise within about 5 s instead of at its next interval.
	AnnotationOwnershipPassed = "router.io/ownership-passed-at"
	// AnnotationTakenFrom, on a route's DNSEndpoint, is the region whose name regional failover
	// took over for this cluster; it goes when the name goes back. A new leader counts the
	// takeovers that stand from it and the zones' ownership records.
	AnnotationTakenFrom = "router.io/taken-from-region"
	// AnnotationIntermediateTarget, on a route's DNSEndpoint whose name goes through its policy's
	// intermediate name (regional failover), is this cluster's gateway target hostname the
	// intermediate points at when this cluster serves it: the operators write the intermediate,
	// and publication verification checks it against this.
	AnnotationIntermediateTarget = "router.io/intermediate-target"
)

// Applications parses a namespace's router.io/applications annotation: the application names it
// lists (spaces around names and empty entries ignored), and whether the annotation is set at all.
// A set annotation that lists nothing allows no application.
func Applications(annotations map[string]string) (apps []string, listed bool) {
	value, listed := annotations[AnnotationApplications]
	if !listed {
		return nil, false
	}
	for _, app := range strings.Split(value, ",") {
		if app = strings.TrimSpace(app); app != "" {
			apps = append(apps, app)
		}
	}
	return apps, true
}

// SourceLabel is the first label of a service hostname:
// {serviceName}-ns-{environmentLetter}-{environment}-{application}.
func SourceLabel(serviceName, environmentLetter, environment, application string) string {
	return serviceName + "-ns-" + environmentLetter + "-" + environment + "-" + application
}

// SourceHostname is the client-facing hostname of a ServiceRoute.
func SourceHostname(serviceName, environmentLetter, environment, application, domain string) string {
	return SourceLabel(serviceName, environmentLetter, environment, application) + "." + domain
}

// TargetHostname is the gateway entry point {cluster}-{region}-{targetPostfix}.{domain}: the
// name every service hostname of that gateway is a CNAME to.
func TargetHostname(cluster, region, targetPostfix, domain string) string {
	return cluster + "-" + region + "-" + targetPostfix + "." + domain
}

// ValidateHostname returns an error saying what is wrong when name is not a valid DNS name: the
// API schema bounds each part, but only their combination can be checked here.
func ValidateHostname(name string) error {
	if len(name) > MaxHostnameLength {
		return fmt.Errorf("%s is %d characters long, more than the %d a DNS name may have", name, len(name), MaxHostnameLength)
	}
	for _, label := range strings.Split(name, ".") {
		if len(label) > MaxLabelLength {
			return fmt.Errorf("label %q of %s is %d characters long, more than the %d a DNS label may have", label, name, len(label), MaxLabelLength)
		}
		if label == "" {
			return fmt.Errorf("%s has an empty label", name)
		}
	}
	return nil
}

// RouteEndpointName names the DNSEndpoint of a ServiceRoute for one ExternalDNS controller.
func RouteEndpointName(route, externalDNSController string) string {
	return route + "-" + externalDNSController
}

// GatewayEndpointName names the DNSEndpoint holding the address record of a gateway target
// hostname for one ExternalDNS controller.
func GatewayEndpointName(istioController, targetPostfix, externalDNSController string) string {
	return "gateway-controller-" + istioController + "-" + targetPostfix + "-" + externalDNSController
}

// placeholder stands for the environment letter in a HostnameKey. It cannot occur in a DNS label,
// so the key of a route does not depend on the letter the cluster uses.
const placeholder = "*"

// HostnameKey identifies the hostname a ServiceRoute claims independently of the cluster's
// environment letter and domain: SourceLabel with the letter replaced by a placeholder. It is
// stored in a cache index; ClaimKeys finds every key that can produce a given label.
func HostnameKey(serviceName, environment, application string) string {
	return SourceLabel(serviceName, placeholder, environment, application)
}

// IsHostnameKey reports whether key equals HostnameKey(serviceName, environment, application)
// without building it: a lookup compares it with every route that shares the key's index
// bucket.
func IsHostnameKey(key, serviceName, environment, application string) bool {
	rest, ok := strings.CutPrefix(key, serviceName)
	if ok {
		rest, ok = strings.CutPrefix(rest, "-ns-"+placeholder+"-")
	}
	if ok {
		rest, ok = strings.CutPrefix(rest, environment)
	}
	if ok {
		rest, ok = strings.CutPrefix(rest, "-")
	}
	return ok && rest == application
}

// ClaimKeys returns the HostnameKeys of every (serviceName, environment, application) that yields
// label with environmentLetter. Different fields can produce the same label (a serviceName may
// itself contain "-ns-d-"), so there is one key per occurrence of "-ns-{letter}-" in the label.
func ClaimKeys(label, environmentLetter string) []string {
	infix := "-ns-" + environmentLetter + "-"
	var keys []string
	for start := 0; ; {
		i := strings.Index(label[start:], infix)
		if i < 0 {
			return keys
		}
		at := start + i
		keys = append(keys, label[:at]+"-ns-"+placeholder+"-"+label[at+len(infix):])
		start = at + 1
	}
}

// IntermediateLabel marks the names regional failover resolves a policy's names through
// (IntermediateName); the underscore keeps them out of any hostname a route can generate, as
// the heartbeats' label does.
const IntermediateLabel = "_router-failover"

// IntermediateName is the one name through which, in the zone of region, every name of
// namespace's failover policy on the gateways of targetPostfix resolves:
// <targetPostfix>.<namespace>.<region>._router-failover.<domain>, a CNAME to the gateway target
// hostname of the cluster serving the region's names. A takeover, a failback or a drain rewrites
// this one record per policy, entry point and zone instead of every name
// (docs/ARCHITECTURE.md#one-record-moves-a-policy). The name carries no cluster: every cluster
// publishing the namespace's names into that zone publishes the same CNAME to it, so the names'
// own records never change owner.
func IntermediateName(targetPostfix, namespace, region, domain string) string {
	return targetPostfix + "." + namespace + "." + region + "." + IntermediateLabel + "." + domain
}

// IntermediatePostfix is the gateway target postfix an intermediate name (IntermediateName) carries:
// everything before its namespace, region and label.
func IntermediatePostfix(intermediate string) (string, bool) {
	before, _, found := strings.Cut(strings.TrimSuffix(strings.ToLower(intermediate), "."), "."+IntermediateLabel+".")
	if !found {
		return "", false
	}
	labels := strings.Split(before, ".")
	if len(labels) < 3 {
		return "", false
	}
	return strings.Join(labels[:len(labels)-2], "."), true
}

// IsIntermediate says whether name (any case, with or without the final dot) is an intermediate
// name (IntermediateName).
func IsIntermediate(name string) bool {
	return strings.Contains("."+strings.TrimSuffix(strings.ToLower(name), ".")+".", "."+IntermediateLabel+".")
}
