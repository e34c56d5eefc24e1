package decide

import (
	"fmt"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clusterv1alpha1 "github.com/service-router/service-router-operator/apis/cluster/v1alpha1"
	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
	"github.com/service-router/service-router-operator/internal/naming"
	"github.com/service-router/service-router-operator/internal/verify"
)

// ClusterIdentity checks what admission cannot: that the identity leaves room for a gateway
// target hostname and that the DNSConfiguration has a controller for the cluster's own region and
// for every adopted region. The identity is used by the other controllers in every case (its
// fields are valid on their own); Ready=False points the platform team at the inconsistency.
func ClusterIdentity(ci *clusterv1alpha1.ClusterIdentity, cfg *clusterv1alpha1.DNSConfiguration) Outcome {
	active := string(clusterv1alpha1.PhaseActive)
	// {cluster}-{region}-{postfix} with the shortest postfix (one character) must fit one label.
	if n := len(ci.Spec.Cluster) + len(ci.Spec.Region) + 3; n > naming.MaxLabelLength {
		return Outcome{Phase: string(clusterv1alpha1.PhaseFailed), Reason: clusterv1alpha1.ReasonTargetHostnameTooLong,
			Message: fmt.Sprintf("cluster %q and region %q leave no room for a target postfix in the 63-character label {cluster}-{region}-{targetPostfix}", ci.Spec.Cluster, ci.Spec.Region)}
	}
	if cfg == nil {
		return Outcome{Phase: active, Reason: clusterv1alpha1.ReasonDNSConfigurationNotFound,
			Message: fmt.Sprintf("DNSConfiguration %s does not exist: no DNSPolicy can activate an ExternalDNS controller", clusterv1alpha1.DNSConfigurationName)}
	}
	regions := map[string]bool{}
	for _, c := range cfg.Spec.ExternalDNSControllers {
		regions[c.Region] = true
	}
	if !regions[ci.Spec.Region] {
		return Outcome{Phase: active, Reason: clusterv1alpha1.ReasonRegionWithoutController,
			Message: fmt.Sprintf("no ExternalDNS controller in DNSConfiguration %s serves this cluster's region %s: Active DNSPolicies publish no records in it", cfg.Name, ci.Spec.Region)}
	}
	var orphans []string
	for _, r := range ci.Spec.AdoptsRegions {
		if !regions[r] {
			orphans = append(orphans, r)
		}
	}
	if len(orphans) > 0 {
		slices.Sort(orphans)
		return Outcome{Phase: active, Reason: clusterv1alpha1.ReasonAdoptedRegionWithoutController,
			Message: fmt.Sprintf("adopted region(s) %s have no ExternalDNS controller in DNSConfiguration %s: their zones get no records", strings.Join(orphans, ", "), cfg.Name)}
	}
	return Outcome{Phase: active, Ready: true, Reason: clusterv1alpha1.ReasonValidationSucceeded, Message: "ClusterIdentity is valid"}
}

// DNSConfiguration has nothing to check beyond admission (at least one controller, unique DNS-label
// names); it reports the controllers in use, or that nothing can be published because the
// DNSEndpoint API is not installed.
func DNSConfiguration(cfg *clusterv1alpha1.DNSConfiguration, endpointsAPIMissing bool) Outcome {
	if endpointsAPIMissing {
		return Outcome{Phase: string(clusterv1alpha1.PhaseActive), Reason: clusterv1alpha1.ReasonExternalDNSNotInstalled,
			Message: "the DNSEndpoint API (externaldns.k8s.io/v1alpha1) is not installed: no DNS record can be published; install ExternalDNS's DNSEndpoint CRD and publishing starts without a restart"}
	}
	return Outcome{Phase: string(clusterv1alpha1.PhaseActive), Ready: true, Reason: clusterv1alpha1.ReasonConfigurationValid,
		Message: fmt.Sprintf("DNSConfiguration is valid: %d ExternalDNS controller(s)", len(cfg.Spec.ExternalDNSControllers))}
}

// DeletionsHeldCondition is the DNSConfiguration's DeletionsHeld condition: True while the
// mass-deletion guard holds deletions of DNS records back.
func DeletionsHeldCondition(held int, until time.Time, generation int64) metav1.Condition {
	if held == 0 {
		return metav1.Condition{Type: clusterv1alpha1.ConditionDeletionsHeld, Status: metav1.ConditionFalse, ObservedGeneration: generation,
			Reason: clusterv1alpha1.ReasonNoDeletionsHeld, Message: "no deletion of DNS records is held back"}
	}
	return metav1.Condition{Type: clusterv1alpha1.ConditionDeletionsHeld, Status: metav1.ConditionTrue, ObservedGeneration: generation,
		Reason:  clusterv1alpha1.ReasonMassDeletionHeld,
		Message: fmt.Sprintf("%d DNSEndpoint deletion(s) requested at once by one change are held until %s; revert the change before then to keep the records", held, until.UTC().Format(time.RFC3339))}
}

// ZoneVerification summarises the verified zones for the DNSConfiguration's status: per zone
// with verification settings, its routes by state (count reads them from the tracker), in
// DNSConfiguration order, and the same in one line. Zones without verification settings are
// named unverified in the line.
func ZoneVerification(cfg *clusterv1alpha1.DNSConfiguration, count func(controller string) verify.ZoneCounts) ([]clusterv1alpha1.ZoneVerificationStatus, string) {
	if cfg == nil {
		return nil, ""
	}
	var zones []clusterv1alpha1.ZoneVerificationStatus
	var parts []string
	for _, c := range cfg.Spec.ExternalDNSControllers {
		if !Verified(cfg, c.Name) {
			parts = append(parts, c.Name+" unverified")
			continue
		}
		n := count(c.Name)
		z := clusterv1alpha1.ZoneVerificationStatus{Controller: c.Name,
			Published: int32(n[routingv1alpha1.ZonePublished]), Pending: int32(n[routingv1alpha1.ZonePending]),
			Drifted: int32(n[routingv1alpha1.ZoneDrifted]), Unreachable: int32(n[routingv1alpha1.ZoneUnreachable])}
		z.Routes = z.Published + z.Pending + z.Drifted + z.Unreachable
		zones = append(zones, z)
		line := fmt.Sprintf("%s %d/%d published", c.Name, z.Published, z.Routes)
		for _, other := range []struct {
			n    int32
			word string
		}{{z.Drifted, "drifted"}, {z.Unreachable, "unreachable"}, {z.Pending, "pending"}} {
			if other.n > 0 {
				line += fmt.Sprintf(", %d %s", other.n, other.word)
			}
		}
		parts = append(parts, line)
	}
	return zones, strings.Join(parts, "; ")
}
