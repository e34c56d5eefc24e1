package decide

import (
	"cmp"
	"fmt"
	"strings"

	istioanalysisv1alpha1 "istio.io/api/analysis/v1alpha1"
	istionetworkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
)

// IstioAnalysisCondition is the Gateway's IstioAnalysis condition: istiod's findings on the
// generated Istio Gateway (its status.validationMessages) at Error and Warning level, in the words
// a user searches for (Istio's code and name, and what `istioctl analyze` prints for them); nil
// (remove it) when there is no generated Istio Gateway or istiod reports nothing there. istiod
// records only each finding's code, level and page (Istio 1.31 leaves the name out too), not its
// text, so the message says what the finding means for a Gateway the operator generated.
func IstioAnalysisCondition(gw *routingv1alpha1.Gateway, generated *istionetworkingv1.Gateway) *metav1.Condition {
	if generated == nil {
		return nil
	}
	var reason string
	var findings []string
	for _, m := range generated.Status.ValidationMessages {
		if m == nil || m.GetType() == nil {
			continue
		}
		level := m.GetLevel()
		if level != istioanalysisv1alpha1.AnalysisMessageBase_ERROR && level != istioanalysisv1alpha1.AnalysisMessageBase_WARNING {
			continue
		}
		code := m.GetType().GetCode()
		name := cmp.Or(m.GetType().GetName(), istioFindingNames[code], code) // istiod writes the code alone
		if reason == "" {
			reason = name
		}
		f := strings.TrimSuffix(fmt.Sprintf("%s %s %s", titleLevel(level), code, name), " "+code)
		if hint := istioFindingHint(gw, code); hint != "" {
			f += ": " + hint
		}
		if m.GetDocumentationUrl() != "" {
			f += " (" + m.GetDocumentationUrl() + ")"
		}
		findings = append(findings, f)
	}
	if reason == "" {
		return nil
	}
	return &metav1.Condition{Type: routingv1alpha1.ConditionIstioAnalysis, Status: metav1.ConditionTrue, Reason: reason,
		ObservedGeneration: gw.Generation,
		Message:            fmt.Sprintf("istiod's analysis of the Istio Gateway %s/%s reports: %s", generated.Namespace, generated.Name, strings.Join(findings, "; "))}
}

// titleLevel is an analysis level as istioctl analyze prints it ("Error", "Warning").
func titleLevel(l istioanalysisv1alpha1.AnalysisMessageBase_Level) string {
	s := l.String()
	return s[:1] + strings.ToLower(s[1:])
}

// istioFindingNames are the names Istio gives the findings a generated Gateway can get
// (pkg/config/analysis/msg/messages.yaml): istiod's status carries only the code.
var istioFindingNames = map[string]string{
	"IST0101": "ReferencedResourceNotFound",
	"IST0138": "GatewayDuplicateCertificate",
	"IST0145": "ConflictingGateways",
	"IST0162": "GatewayPortNotDefinedOnService",
}

// istioFindingHint says what an analyser finding means for a generated Istio Gateway, with the
// words istioctl analyze prints for it, for the findings a generated Gateway can get.
func istioFindingHint(gw *routingv1alpha1.Gateway, code string) string {
	selector := "istio=" + gw.Spec.Controller
	switch code {
	case "IST0101": // ReferencedResourceNotFound: its TLS Secret or its pods
		if gw.Spec.CredentialName == "" {
			return fmt.Sprintf("Referenced selector not found: %q (no ingress gateway pods carry that label)", selector)
		}
		return fmt.Sprintf("Referenced credentialName not found: %q (the TLS Secret must exist in the namespace of the ingress gateway's pods, which Istio reads it from), or Referenced selector not found: %q (no ingress gateway pods carry that label)",
			gw.Spec.CredentialName, selector)
	case "IST0138": // GatewayDuplicateCertificate
		return fmt.Sprintf("another Istio Gateway on the same pods serves the same certificate (credentialName %q): HTTP/2 clients that reuse a connection for a host of the other Gateway may get 404s; give each Gateway its own certificate or its routes one Gateway", gw.Spec.CredentialName)
	case "IST0145": // ConflictingGateways
		return "another Istio Gateway on the same pods and port lists one of these hosts: only one of them serves it"
	case "IST0162": // GatewayPortNotDefinedOnService
		return "the ingress gateway's Service has no port for one of the servers (443 for HTTPS, 80 for plain HTTP): that server is not reachable through the Service"
	}
	return ""
}
