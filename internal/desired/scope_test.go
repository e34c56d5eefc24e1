package desired

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	externaldnsv1alpha1 "sigs.k8s.io/external-dns/apis/v1alpha1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
	"github.com/service-router/service-router-operator/internal/naming"
)

func TestScopeSelectors(t *testing.T) {
	assert.True(t, ManagedSelector().Matches(labels.Set{naming.LabelManagedBy: naming.ManagedByValue}))
	assert.False(t, ManagedSelector().Matches(labels.Set{naming.LabelManagedBy: "someone-else"}))
	assert.True(t, IngressServiceSelector().Matches(labels.Set{naming.IngressServiceSelector: "aks-istio-ingress"}))
	assert.False(t, IngressServiceSelector().Matches(labels.Set{"app": "web"}))
}

func TestEntryPoints_GatewaysAndLeftoverRecordsOnceEach(t *testing.T) {
	gw := func(controller, postfix string) *routingv1alpha1.Gateway {
		return &routingv1alpha1.Gateway{Spec: routingv1alpha1.GatewaySpec{Controller: controller, TargetPostfix: postfix}}
	}
	addresses := func(controller, postfix string) *externaldnsv1alpha1.DNSEndpoint {
		return &externaldnsv1alpha1.DNSEndpoint{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{
			naming.LabelResourceType: naming.ResourceTypeGateway, naming.LabelIstioController: controller, naming.LabelTargetPostfix: postfix}}}
	}
	route := &externaldnsv1alpha1.DNSEndpoint{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{naming.LabelServiceRoute: "api"}}}
	got := EntryPoints([]*routingv1alpha1.Gateway{gw("ingress", "internal"), gw("ingress", "internal"), gw("external", "public")},
		[]*externaldnsv1alpha1.DNSEndpoint{addresses("ingress", "internal"), addresses("gone", "internal"), route})
	assert.Equal(t, []Ingress{{"external", "public"}, {"gone", "internal"}, {"ingress", "internal"}}, got)
}

func TestOrphanedGrantOwner(t *testing.T) {
	long := strings.Repeat("n", 70)
	managed := func(labels, annotations map[string]string) *gwv1.ReferenceGrant {
		l := map[string]string{naming.LabelManagedBy: naming.ManagedByValue}
		for k, v := range labels {
			l[k] = v
		}
		return &gwv1.ReferenceGrant{ObjectMeta: metav1.ObjectMeta{Labels: l, Annotations: annotations}}
	}
	for _, tt := range []struct {
		name         string
		grant        *gwv1.ReferenceGrant
		wantNS, want string
		wantOK       bool
	}{
		{"written by this operator: the annotation", managed(map[string]string{LabelGateway: GatewayLabelValue("istio-system", long)},
			map[string]string{AnnotationGateway: "istio-system/" + long}), "istio-system", long, true},
		{"written before the annotation, label in full", managed(map[string]string{LabelGateway: "istio-system.gw"}, nil), "istio-system", "gw", true},
		{"written before the annotation, label shortened: leads nowhere", managed(map[string]string{LabelGateway: GatewayLabelValue("istio-system", long)}, nil), "", "", false},
		{"annotation without the label: nothing finds it by its Gateway", managed(nil, map[string]string{AnnotationGateway: "istio-system/gw"}), "", "", false},
		{"not managed", &gwv1.ReferenceGrant{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{LabelGateway: "istio-system.gw"}}}, "", "", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ns, name, ok := OrphanedGrantOwner(tt.grant)
			assert.Equal(t, []any{tt.wantNS, tt.want, tt.wantOK}, []any{ns, name, ok})
		})
	}
}
