package failoverloop

import (
	"cmp"
	"context"
	"maps"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	externaldnsv1alpha1 "sigs.k8s.io/external-dns/apis/v1alpha1"

	clusterv1alpha1 "github.com/service-router/service-router-operator/apis/cluster/v1alpha1"
	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
	"github.com/service-router/service-router-operator/internal/decide"
	"github.com/service-router/service-router-operator/internal/desired"
	"github.com/service-router/service-router-operator/internal/failover"
	"github.com/service-router/service-router-operator/internal/naming"
)

// start is what a round reads of the cluster before the machine takes over: this cluster's
// gateways, the names it stands in for and how their routes publish them, the status's earlier
// judgements, verification's listings.
func (f *Loop) start(ctx context.Context, cfg *clusterv1alpha1.DNSConfiguration, identity *clusterv1alpha1.ClusterIdentity, zones []failoverZone, s settings) (failover.RoundStart, error) {
	start := failover.RoundStart{Now: f.now(), Cluster: identity.Spec.Cluster, Own: identity.Spec.Region, Settings: s.MachineSettings,
		Earlier: earlierViews(cfg), Listed: f.takeListed(zones)}
	for _, z := range zones {
		start.Zones = append(start.Zones, z.MachineZone)
	}
	var err error
	if start.Targets, start.Addresses, err = f.ownGateways(ctx, zones); err != nil {
		return start, err
	}
	if start.Names, start.Publishing, err = f.standInNames(ctx, identity, zones); err != nil {
		ctrl.Log.WithName("failover").Error(err, "listing the names this cluster stands in for; nothing moves this round")
		start.Names = nil
	}
	return start, nil
}

// ownGateways are this cluster's gateway target hostnames and their load balancer addresses, from
// the address DNSEndpoints of the zones with failover settings.
func (f *Loop) ownGateways(ctx context.Context, zones []failoverZone) (targets, addresses []string, err error) {
	for _, z := range zones {
		list := &externaldnsv1alpha1.DNSEndpointList{}
		// Read only, and only the gateway entry points' DNSEndpoints: no copy of every route's,
		// every round.
		if err := f.reader.List(ctx, list, client.MatchingLabels{naming.LabelController: z.Controller, naming.LabelResourceType: naming.ResourceTypeGateway},
			client.UnsafeDisableDeepCopy); err != nil {
			return nil, nil, err
		}
		for _, ep := range list.Items {
			if _, ok := desired.IngressOfLabels(ep.Labels); !ok {
				continue
			}
			for _, e := range ep.Spec.Endpoints {
				if !slices.Contains(targets, e.DNSName) {
					targets = append(targets, e.DNSName)
				}
				for _, a := range e.Targets {
					if !slices.Contains(addresses, a) {
						addresses = append(addresses, a)
					}
				}
			}
		}
	}
	slices.Sort(targets)
	slices.Sort(addresses)
	return targets, addresses, nil
}

// standInNames are the names this cluster publishes into the zones with failover settings for
// routes whose namespace's DNSPolicy lists stand-ins, with the policy's failback
// (decide.FailoverNames), and how those routes publish into each zone; this lists the
// DNSEndpoints and the policies in force.
func (f *Loop) standInNames(ctx context.Context, identity *clusterv1alpha1.ClusterIdentity, zones []failoverZone) ([]failover.Name, map[string]failover.Publishing, error) {
	policies := map[string]*routingv1alpha1.DNSPolicy{}
	var out []failover.Name
	publishing := map[string]failover.Publishing{}
	for _, z := range zones {
		list := &externaldnsv1alpha1.DNSEndpointList{}
		// Read only: the cache's own objects, not a copy of every route's DNSEndpoint every round.
		if err := f.reader.List(ctx, list, client.MatchingLabels{naming.LabelController: z.Controller}, client.HasLabels{naming.LabelServiceRoute},
			client.UnsafeDisableDeepCopy); err != nil {
			return nil, nil, err
		}
		endpoints := make([]*externaldnsv1alpha1.DNSEndpoint, len(list.Items))
		var p failover.Publishing
		for i := range list.Items {
			ep := &list.Items[i]
			endpoints[i] = ep
			policy, known := policies[ep.Namespace]
			if !known {
				var err error
				if policy, err = f.cluster.PolicyInForce(ctx, ep.Namespace); err != nil {
					return nil, nil, err
				}
				policies[ep.Namespace] = policy
			}
			if policy != nil && policy.Spec.Failover != nil {
				p.Forming = p.Forming || forming(ep, identity, z.Region)
				if created := ep.CreationTimestamp.Time; created.After(p.NewestCreated) {
					p.NewestCreated = created
				}
			}
		}
		publishing[z.Controller] = p
		standIn, _ := decide.FailoverNames(z.Controller, endpoints, policies)
		out = append(out, withIntermediates(standIn, endpoints, identity, z.Region)...)
	}
	return out, publishing, nil
}

// earlierViews are the judgements the DNSConfiguration's status holds (an earlier leader's, or
// this one's own), by region: failover.Advance's earlier.
func earlierViews(cfg *clusterv1alpha1.DNSConfiguration) map[string]failover.RegionView {
	out := map[string]failover.RegionView{}
	for _, st := range cfg.Status.Failover {
		v := failover.RegionView{Judgement: failover.Judgement{State: failover.State(st.State), Reason: st.Reason, Message: st.Message}}
		if st.Since != nil {
			v.Since = st.Since.Time
		}
		out[st.Region] = v
	}
	return out
}

// conclude carries out what a round concluded: its Events, the view for the status, the marks on
// this cluster's DNSEndpoints, and the routes whose form the zones' new readings may change.
func (f *Loop) conclude(ctx context.Context, cfg *clusterv1alpha1.DNSConfiguration, identity *clusterv1alpha1.ClusterIdentity, zones []failoverZone, o failover.Outcome) {
	for _, e := range o.Events {
		kind := "Normal"
		if e.Warning {
			kind = "Warning"
		}
		f.recorder.Eventf(cfg, nil, kind, e.Reason, "Failover", "%s", e.Message)
	}
	f.publish(o.Changed, o.View)
	for _, m := range o.Marks {
		marks := map[string]string{naming.AnnotationTakenFrom: m.TakenFrom}
		if !m.PassedAt.IsZero() {
			marks[naming.AnnotationOwnershipPassed] = m.PassedAt.UTC().Format(time.RFC3339)
		}
		f.mark(ctx, m.Namespace, m.Endpoint, marks)
	}
	f.wakeRoutes(ctx, identity, zones, o.View.Forms, o.FormsChangedIn)
}

// mark sets the annotations of marks ("" removes one) on this cluster's DNSEndpoint of a name whose
// ownership passed: naming.AnnotationOwnershipPassed, the time of the pass, an update an ExternalDNS
// run with --events synchronises on within seconds instead of at its next interval (a minute by
// default); naming.AnnotationTakenFrom, the region a takeover took the name from, from which a
// later leader counts the takeovers that stand (failover.Standing). The DNSEndpoint is the
// operator's own (it was listed by the operator's labels); only these annotations change. A
// failed mark costs time, not correctness: the next interval synchronises anyway, and this
// leader remembers its takeovers.
func (f *Loop) mark(ctx context.Context, namespace, name string, marks map[string]string) {
	log := ctrl.Log.WithName("failover")
	cached := &externaldnsv1alpha1.DNSEndpoint{}
	if err := f.reader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, cached); err != nil {
		log.Error(err, "reading the DNSEndpoint to mark a pass", "namespace", namespace, "name", name)
		return
	}
	if cached.Labels[naming.LabelManagedBy] != naming.ManagedByValue {
		return
	}
	annotations := maps.Clone(cached.Annotations)
	if annotations == nil {
		annotations = map[string]string{}
	}
	for k, v := range marks {
		if v == "" {
			delete(annotations, k)
		} else {
			annotations[k] = v
		}
	}
	if maps.Equal(annotations, cached.Annotations) {
		return
	}
	ep := cached.DeepCopy()
	ep.Annotations = annotations
	// The resourceVersion read is the update's precondition: a conflict means the DNSEndpoint
	// changed meanwhile (that change is an update ExternalDNS reacts to); a taken-from mark still
	// missing is set again next round (failover.Marks).
	if err := f.writer.Update(ctx, ep); err != nil && !apierrors.IsConflict(err) {
		log.Error(err, "marking a pass on its DNSEndpoint", "namespace", namespace, "name", name)
	}
}

// withIntermediates gives each name of a zone of region its policy's intermediate name there and
// this cluster's target and TTL (what the operators write it with), and adds each intermediate
// once as a name of its own, as the first of its routes' DNSEndpoints publishes it (its mark says
// whether it was taken): no route publishes it through ExternalDNS any more, yet it is what a
// move passes.
func withIntermediates(names []failover.Name, endpoints []*externaldnsv1alpha1.DNSEndpoint, identity *clusterv1alpha1.ClusterIdentity, region string) []failover.Name {
	byName := make(map[string]*externaldnsv1alpha1.DNSEndpoint, len(endpoints))
	for _, ep := range endpoints {
		byName[ep.Namespace+"/"+ep.Name] = ep
	}
	out := make([]failover.Name, 0, len(names))
	listed := map[string]int{}
	add := func(n failover.Name) {
		key := failover.Canonical(n.Hostname)
		if i, seen := listed[key]; seen {
			out[i].Target, out[i].TTL = cmp.Or(out[i].Target, n.Target), cmp.Or(out[i].TTL, n.TTL)
			return
		}
		listed[key] = len(out)
		out = append(out, n)
	}
	for _, n := range names {
		ep := byName[n.Namespace+"/"+n.Endpoint]
		if ep == nil || len(ep.Spec.Endpoints) == 0 || ep.Spec.Endpoints[0] == nil || len(ep.Spec.Endpoints[0].Targets) != 1 {
			add(n)
			continue
		}
		intermediate := intermediateOf(ep, identity.Spec.Cluster, identity.Spec.Region, identity.Spec.Domain, region)
		n.TTL = uint32(max(ep.Spec.Endpoints[0].RecordTTL, 0))
		if target := targetOf(intermediate, identity); target != "" {
			n.Target = target
		}
		if intermediate == "" || naming.IsIntermediate(n.Hostname) {
			add(n)
			continue
		}
		n.Intermediate = intermediate
		add(n)
		i := n
		i.Hostname, i.Intermediate = failover.Canonical(intermediate), ""
		add(i)
	}
	return out
}

// targetOf is this cluster's gateway target hostname an intermediate name points at from this
// cluster: the one of the entry point whose target postfix the intermediate carries.
func targetOf(intermediate string, identity *clusterv1alpha1.ClusterIdentity) string {
	postfix, ok := naming.IntermediatePostfix(intermediate)
	if !ok {
		return ""
	}
	return naming.TargetHostname(identity.Spec.Cluster, identity.Spec.Region, postfix, identity.Spec.Domain)
}
