package decide

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	istioanalysisv1alpha1 "istio.io/api/analysis/v1alpha1"
	istiometav1alpha1 "istio.io/api/meta/v1alpha1"
	istionetworkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
)

func TestIstioAnalysisCondition(t *testing.T) {
	withTLS := &routingv1alpha1.Gateway{ObjectMeta: metav1.ObjectMeta{Name: "default-gateway", Namespace: "istio-system", Generation: 4},
		Spec: routingv1alpha1.GatewaySpec{Controller: "aks-istio-ingressgateway-internal", CredentialName: "cert-aks-ingress"}}
	plainHTTP := &routingv1alpha1.Gateway{ObjectMeta: metav1.ObjectMeta{Name: "public", Namespace: "istio-system", Generation: 1},
		Spec: routingv1alpha1.GatewaySpec{Controller: "ingressgateway", PlainHTTP: routingv1alpha1.PlainHTTPServe}}
	message := func(level istioanalysisv1alpha1.AnalysisMessageBase_Level, code, name string) *istioanalysisv1alpha1.AnalysisMessageBase {
		return &istioanalysisv1alpha1.AnalysisMessageBase{Level: level, Type: &istioanalysisv1alpha1.AnalysisMessageBase_Type{Code: code, Name: name},
			DocumentationUrl: "https://istio.io/v1.31/docs/reference/config/analysis/" + code}
	}
	generated := func(gw *routingv1alpha1.Gateway, messages ...*istioanalysisv1alpha1.AnalysisMessageBase) *istionetworkingv1.Gateway {
		return &istionetworkingv1.Gateway{ObjectMeta: metav1.ObjectMeta{Name: gw.Name, Namespace: gw.Namespace},
			Status: istiometav1alpha1.IstioStatus{ValidationMessages: messages}}
	}
	for _, tc := range []struct {
		name      string
		gw        *routingv1alpha1.Gateway
		generated *istionetworkingv1.Gateway
		// wantReason "" means no condition; wantWords must all be in its message.
		wantReason string
		wantWords  []string
	}{
		{name: "no Istio Gateway generated", gw: withTLS},
		{name: "istiod reports nothing (or does not analyse)", gw: withTLS, generated: generated(withTLS)},
		{name: "info only: not the Gateway's problem", gw: withTLS,
			generated: generated(withTLS, message(istioanalysisv1alpha1.AnalysisMessageBase_INFO, "IST0102", "NamespaceNotInjected"))},
		{name: "the TLS Secret missing", gw: withTLS,
			generated:  generated(withTLS, message(istioanalysisv1alpha1.AnalysisMessageBase_ERROR, "IST0101", "ReferencedResourceNotFound")),
			wantReason: "ReferencedResourceNotFound",
			wantWords: []string{"istio-system/default-gateway", "Error IST0101 ReferencedResourceNotFound", `Referenced credentialName not found: "cert-aks-ingress"`,
				`Referenced selector not found: "istio=aks-istio-ingressgateway-internal"`, "https://istio.io/v1.31/docs/reference/config/analysis/IST0101"}},
		{name: "plain HTTP: only the selector can be missing", gw: plainHTTP,
			generated:  generated(plainHTTP, message(istioanalysisv1alpha1.AnalysisMessageBase_ERROR, "IST0101", "ReferencedResourceNotFound")),
			wantReason: "ReferencedResourceNotFound", wantWords: []string{`Referenced selector not found: "istio=ingressgateway"`}},
		{name: "the first Error or Warning names the reason, each is listed", gw: withTLS,
			generated: generated(withTLS,
				message(istioanalysisv1alpha1.AnalysisMessageBase_INFO, "IST0102", "NamespaceNotInjected"),
				message(istioanalysisv1alpha1.AnalysisMessageBase_WARNING, "IST0138", "GatewayDuplicateCertificate"),
				message(istioanalysisv1alpha1.AnalysisMessageBase_WARNING, "IST0162", "GatewayPortNotDefinedOnService")),
			wantReason: "GatewayDuplicateCertificate",
			wantWords:  []string{"Warning IST0138 GatewayDuplicateCertificate", "may get 404s", "Warning IST0162 GatewayPortNotDefinedOnService", "443 for HTTPS"}},
		{name: "as istiod 1.31 writes it: the code alone", gw: withTLS,
			generated:  generated(withTLS, message(istioanalysisv1alpha1.AnalysisMessageBase_ERROR, "IST0101", "")),
			wantReason: "ReferencedResourceNotFound", wantWords: []string{"Error IST0101 ReferencedResourceNotFound", `Referenced credentialName not found: "cert-aks-ingress"`}},
		{name: "an unknown code alone is the reason", gw: withTLS,
			generated:  generated(withTLS, message(istioanalysisv1alpha1.AnalysisMessageBase_WARNING, "IST0998", "")),
			wantReason: "IST0998", wantWords: []string{"Warning IST0998 (https://"}},
		{name: "a finding without a hint still names its code", gw: withTLS,
			generated:  generated(withTLS, message(istioanalysisv1alpha1.AnalysisMessageBase_WARNING, "IST0999", "SomethingNew")),
			wantReason: "SomethingNew", wantWords: []string{"Warning IST0999 SomethingNew (https://istio.io/v1.31/docs/reference/config/analysis/IST0999)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := IstioAnalysisCondition(tc.gw, tc.generated)
			if tc.wantReason == "" {
				assert.Nil(t, c)
				return
			}
			require.NotNil(t, c)
			assert.Equal(t, routingv1alpha1.ConditionIstioAnalysis, c.Type)
			assert.Equal(t, metav1.ConditionTrue, c.Status)
			assert.Equal(t, tc.wantReason, c.Reason)
			assert.Equal(t, tc.gw.Generation, c.ObservedGeneration)
			for _, w := range tc.wantWords {
				assert.Contains(t, c.Message, w)
			}
			assert.NotContains(t, c.Message, "IST0102", "Info findings are not listed")
		})
	}
}
