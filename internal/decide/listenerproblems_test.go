package decide

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
)

func TestListenerProblems(t *testing.T) {
	gw := &routingv1alpha1.Gateway{ObjectMeta: metav1.ObjectMeta{Name: "mesh-gateway", Namespace: "mesh", Generation: 3}}
	cond := func(typ string, status metav1.ConditionStatus, reason string, generation int64) metav1.Condition {
		return metav1.Condition{Type: typ, Status: status, Reason: reason, Message: reason + " said the implementation", ObservedGeneration: generation}
	}
	listeners := func(name string, cs ...metav1.Condition) []gwv1.ListenerStatus {
		return []gwv1.ListenerStatus{{Name: gwv1.SectionName(name), Conditions: cs}}
	}
	gateway := func(generation int64, ls []gwv1.ListenerStatus) *gwv1.Gateway {
		return &gwv1.Gateway{ObjectMeta: metav1.ObjectMeta{Name: "mesh-gateway", Generation: generation}, Status: gwv1.GatewayStatus{Listeners: ls}}
	}
	set := func(name string, generation int64, ls []gwv1.ListenerStatus) *gwv1.ListenerSet {
		out := &gwv1.ListenerSet{ObjectMeta: metav1.ObjectMeta{Name: name, Generation: generation}}
		for _, l := range ls {
			out.Status.Listeners = append(out.Status.Listeners, gwv1.ListenerEntryStatus{Name: l.Name, Conditions: l.Conditions})
		}
		return out
	}
	good := listeners("https", cond("Accepted", metav1.ConditionTrue, "Accepted", 1), cond("ResolvedRefs", metav1.ConditionTrue, "ResolvedRefs", 1))
	noCert := listeners("https-0", cond("Accepted", metav1.ConditionTrue, "Accepted", 2), cond("ResolvedRefs", metav1.ConditionFalse, "InvalidCertificateRef", 2))
	for _, tc := range []struct {
		name       string
		gateway    *gwv1.Gateway
		sets       []*gwv1.ListenerSet
		wantReason string
		wantWords  []string
	}{
		{name: "nothing generated or read yet"},
		{name: "every listener accepted and resolved", gateway: gateway(1, good), sets: []*gwv1.ListenerSet{set("myapp-1", 1, good)}},
		{name: "the TLS Secret missing on a ListenerSet", gateway: gateway(1, good), sets: []*gwv1.ListenerSet{set("myapp-1", 2, noCert)},
			wantReason: "InvalidCertificateRef", wantWords: []string{"mesh/ListenerSet myapp-1 listener https-0: ResolvedRefs=False InvalidCertificateRef: InvalidCertificateRef said the implementation"}},
		{name: "a condition about an older generation does not count", gateway: gateway(1, good), sets: []*gwv1.ListenerSet{set("myapp-1", 3, noCert)}},
		{name: "not accepted on the Gateway itself", gateway: gateway(5, listeners("target", cond("Accepted", metav1.ConditionFalse, "UnsupportedProtocol", 5))),
			wantReason: "UnsupportedProtocol", wantWords: []string{"mesh/Gateway mesh-gateway listener target: Accepted=False UnsupportedProtocol"}},
		{name: "conflicted listeners are the routes' to report", gateway: gateway(1, good),
			sets: []*gwv1.ListenerSet{set("myapp-1", 1, listeners("h", cond("Conflicted", metav1.ConditionTrue, "HostnameConflict", 1), cond("Accepted", metav1.ConditionTrue, "Accepted", 1)))}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := ListenerProblemsCondition(gw, ListenerProblems(tc.gateway, tc.sets))
			if tc.wantReason == "" {
				assert.Nil(t, c)
				return
			}
			require.NotNil(t, c)
			assert.Equal(t, routingv1alpha1.ConditionListenerProblems, c.Type)
			assert.Equal(t, metav1.ConditionTrue, c.Status)
			assert.Equal(t, tc.wantReason, c.Reason)
			assert.Equal(t, gw.Generation, c.ObservedGeneration)
			for _, w := range tc.wantWords {
				assert.Contains(t, c.Message, w)
			}
		})
	}
}

func TestListenerProblemsCondition_ListsAFewAndCountsTheRest(t *testing.T) {
	gw := &routingv1alpha1.Gateway{ObjectMeta: metav1.ObjectMeta{Name: "g", Namespace: "ns"}}
	var problems []ListenerProblem
	for range maxListenerProblems + 3 {
		problems = append(problems, ListenerProblem{Object: "ListenerSet s", Listener: "l", Condition: metav1.Condition{Type: "ResolvedRefs", Reason: "InvalidCertificateRef"}})
	}
	c := ListenerProblemsCondition(gw, problems)
	require.NotNil(t, c)
	assert.Contains(t, c.Message, "and 3 more")
}
