package integration

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	istioapinetworkingv1 "istio.io/api/networking/v1"
	istionetworkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
	externaldnsv1alpha1 "sigs.k8s.io/external-dns/apis/v1alpha1"
	"sigs.k8s.io/external-dns/endpoint"

	clusterv1alpha1 "github.com/service-router/service-router-operator/apis/cluster/v1alpha1"
	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
	"github.com/service-router/service-router-operator/internal/desired"
	"github.com/service-router/service-router-operator/internal/guard"
	"github.com/service-router/service-router-operator/internal/naming"
)

// endpointDeletions watches the DNSEndpoints of a namespace and records every deletion, from now
// until the test ends.
type endpointDeletions struct {
	mu      sync.Mutex
	deleted []string
}

func watchEndpointDeletions(t *testing.T, ns string) *endpointDeletions {
	t.Helper()
	wc, ok := env.Client.(client.WithWatch)
	if !ok {
		var err error
		wc, err = client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
		require.NoError(t, err)
	}
	w, err := wc.Watch(context.Background(), &externaldnsv1alpha1.DNSEndpointList{}, client.InNamespace(ns))
	require.NoError(t, err)
	d := &endpointDeletions{}
	go func() {
		for ev := range w.ResultChan() {
			if ev.Type == watch.Deleted {
				d.mu.Lock()
				d.deleted = append(d.deleted, ev.Object.(*externaldnsv1alpha1.DNSEndpoint).Name)
				d.mu.Unlock()
			}
		}
	}()
	t.Cleanup(w.Stop)
	return d
}

func (d *endpointDeletions) names() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.deleted...)
}

func uidsOf(eps []externaldnsv1alpha1.DNSEndpoint) map[string]types.UID {
	out := map[string]types.UID{}
	for _, ep := range eps {
		out[ep.Name] = ep.UID
	}
	return out
}

func (f *fixture) waitDeletionsHeld(status metav1.ConditionStatus) *metav1.Condition {
	f.t.Helper()
	var c *metav1.Condition
	// Up to the grace period, plus the usual wait.
	waitFor(f.t, "DeletionsHeld="+string(status), func() string {
		cfg := &clusterv1alpha1.DNSConfiguration{}
		if err := env.Client.Get(f.ctx, client.ObjectKey{Name: clusterv1alpha1.DNSConfigurationName}, cfg); err != nil {
			return err.Error()
		}
		c = meta.FindStatusCondition(cfg.Status.Conditions, clusterv1alpha1.ConditionDeletionsHeld)
		if c == nil || c.Status != status {
			return fmt.Sprintf("condition %+v", c)
		}
		return ""
	}, 2*waitTimeout)
	return c
}

// TestDeletionGuard_MassDeletionWaitsAndRevertKeepsRecords removes an ExternalDNS controller from
// dns-config, which asks for a record of every route to go at once. The guard holds them, says so
// on dns-config, and putting the controller back within the grace period keeps every original
// DNSEndpoint (no deletion seen by a watch, same UIDs). Removing it again and leaving it removed
// deletes them once the grace period is over.
func TestDeletionGuard_MassDeletionWaitsAndRevertKeepsRecords(t *testing.T) {
	f := newFixture(t)
	f.setIdentity(weuIdentity())
	f.setControllers("weu", "neu")
	t.Cleanup(func() { f.setControllers("weu", "neu") })
	grace := 10 * time.Second
	startOperatorWith(t, env.Config, operatorOptions{deletionGuard: guard.Settings{
		Share: 0.1, Minimum: 5, Window: time.Minute, Observe: time.Second, Grace: grace}})

	gw := f.gateway("default-gateway", "internal")
	f.ingressService(lbIP...)
	f.policy(weuBound)
	const routes = 8
	uids := map[string]types.UID{}
	for i := range routes {
		name := fmt.Sprintf("r%d", i)
		f.route("", name, fmt.Sprintf("svc%d", i), gw.Name)
	}
	for i := range routes {
		name := fmt.Sprintf("r%d", i)
		eps := f.waitRouteEndpoints(f.ns, name, f.hostname(fmt.Sprintf("svc%d", i), "example.com"), "aks01-weu-internal.example.com", "external-dns-neu", "external-dns-weu")
		for k, v := range uidsOf(eps) {
			uids[k] = v
		}
	}
	deletions := watchEndpointDeletions(t, f.ns)

	f.setControllers("weu") // a mistaken edit: every neu record would go
	held := f.waitDeletionsHeld(metav1.ConditionTrue)
	assert.Equal(t, clusterv1alpha1.ReasonMassDeletionHeld, held.Reason)
	assert.Contains(t, held.Message, "held until")
	// `kubectl get dnscfg` says so without describe: HELD, and with -o wide how many and until when.
	wide := kubectlOutput(t, adminKubeconfig(t), "get", "dnscfg", "-o", "wide")
	row := tableRow(t, wide, clusterv1alpha1.DNSConfigurationName)
	assert.Equal(t, "True", row["HELD"], wide)
	// The count grows while the deletions of routes left by earlier tests are asked for too, so
	// the column is compared by shape, not with the message read a moment before.
	assert.Regexp(t, `^\d+ DNSEndpoint deletion\(s\) requested at once by one change are held until \S+; revert the change before then to keep the records$`, row["DELETIONS"], wide)
	r := f.waitRoute(f.ns, "r0", routingv1alpha1.PhaseActive, routingv1alpha1.ReasonReconciliationSucceeded)
	waitFor(t, "the route to say its deletion waits", func() string {
		require.NoError(t, env.Client.Get(f.ctx, client.ObjectKeyFromObject(r), r))
		if msg := r.Status.Conditions[0].Message; !strings.Contains(msg, "mass-deletion guard") {
			return msg
		}
		return ""
	})
	assert.Empty(t, deletions.names(), "nothing is deleted while the guard holds")
	cfg := &clusterv1alpha1.DNSConfiguration{}
	require.NoError(t, env.Client.Get(f.ctx, client.ObjectKey{Name: clusterv1alpha1.DNSConfigurationName}, cfg))
	waitEvent(t, cfg, clusterv1alpha1.ReasonMassDeletionHeld)

	f.setControllers("weu", "neu") // reverted within the grace period
	f.waitDeletionsHeld(metav1.ConditionFalse)
	time.Sleep(grace + 2*time.Second) // past the grace period: a held deletion would have happened now
	for i := range routes {
		name := fmt.Sprintf("r%d", i)
		eps := f.waitRouteEndpoints(f.ns, name, f.hostname(fmt.Sprintf("svc%d", i), "example.com"), "aks01-weu-internal.example.com", "external-dns-neu", "external-dns-weu")
		for k, v := range uidsOf(eps) {
			assert.Equal(t, uids[k], v, "%s was re-created", k)
		}
	}
	assert.Empty(t, deletions.names(), "reverting kept every original record")

	f.setControllers("weu") // this time on purpose
	f.waitDeletionsHeld(metav1.ConditionTrue)
	for i := range routes {
		name := fmt.Sprintf("r%d", i)
		f.waitRouteEndpoints(f.ns, name, f.hostname(fmt.Sprintf("svc%d", i), "example.com"), "aks01-weu-internal.example.com", "external-dns-weu")
	}
	assert.Len(t, deletions.names(), routes, "after the grace period the neu records went")
	f.waitDeletionsHeld(metav1.ConditionFalse)
}

// TestAdoption_AnnotatedObjectsAreTakenOverInPlace: a DNSEndpoint and an Istio Gateway that exist
// under the names the operator wants, written by another tool and annotated router.io/adopt=true
// by a platform admin, become the operator's without being re-created: same UIDs, the operator's
// labels, owner and content, the other tool's labels kept.
func TestAdoption_AnnotatedObjectsAreTakenOverInPlace(t *testing.T) {
	f := newFixture(t)
	f.setIdentity(weuIdentity())
	f.setControllers("weu")
	adopt := map[string]string{naming.AnnotationAdopt: "true"}
	legacyEndpoint := &externaldnsv1alpha1.DNSEndpoint{
		ObjectMeta: metav1.ObjectMeta{Name: "api-route-external-dns-weu", Namespace: f.ns, Labels: map[string]string{"team": "legacy"}, Annotations: adopt},
		Spec: externaldnsv1alpha1.DNSEndpointSpec{Endpoints: []*endpoint.Endpoint{
			{DNSName: f.hostname("api", "example.com"), RecordType: "CNAME", Targets: endpoint.Targets{"old-gateway.example.com"}},
		}},
	}
	require.NoError(t, env.Client.Create(f.ctx, legacyEndpoint))
	legacyGateway := &istionetworkingv1.Gateway{
		ObjectMeta: metav1.ObjectMeta{Name: "default-gateway", Namespace: f.gatewayNS, Annotations: adopt},
		Spec: istioapinetworkingv1.Gateway{Selector: map[string]string{"istio": "legacy"}, Servers: []*istioapinetworkingv1.Server{{
			Port: &istioapinetworkingv1.Port{Number: 80, Name: "http", Protocol: "HTTP"}, Hosts: []string{"legacy.example.com"}}}},
	}
	require.NoError(t, env.Client.Create(f.ctx, legacyGateway))
	startOperator(t, env.Config)

	gw := f.gateway("default-gateway", "internal")
	f.ingressService(lbIP...)
	f.policy(activeMode)
	f.route("", "api-route", "api", gw.Name)

	f.waitRoute(f.ns, "api-route", routingv1alpha1.PhaseActive, routingv1alpha1.ReasonReconciliationSucceeded)
	eps := f.waitRouteEndpoints(f.ns, "api-route", f.hostname("api", "example.com"), "aks01-weu-internal.example.com", "external-dns-weu")
	assert.Equal(t, legacyEndpoint.UID, eps[0].UID, "the DNSEndpoint was taken over in place, not re-created")
	assert.True(t, desired.OwnedBy(&eps[0], "ServiceRoute", "api-route"))
	assert.Equal(t, "legacy", eps[0].Labels["team"], "labels others set are kept")

	ig := f.waitIstioHosts(gw.Name, istioHost(f.ns, f.hostname("api", "example.com")))
	assert.Equal(t, legacyGateway.UID, ig.UID, "the Istio Gateway was taken over in place")
	assert.True(t, desired.OwnedBy(ig, "Gateway", gw.Name))
	assert.Equal(t, f.controller, ig.Spec.Selector["istio"])
	f.waitGateway(gw.Name, routingv1alpha1.PhaseActive, routingv1alpha1.ReasonGatewayCreated)
}
