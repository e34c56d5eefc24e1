package framework

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	istioapinetworkingv1 "istio.io/api/networking/v1"
	istionetworkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// IstioNamespace is where the node world installs istiod, as Istio's install guides do.
const IstioNamespace = "istio-system"

// Istio is the Istio control plane the node world runs (InstallIstio): istiod as a pod, installed
// from Istio's own charts, with its validating webhook serving.
type Istio struct {
	// Version is what istiod and istioctl report (`pilot-discovery version --short`), e.g.
	// "1.31-alpha.eed52ebb66ad"; ModuleVersion the istio.io/istio module version they were built
	// from (hack/tools/istio).
	Version, ModuleVersion string
	// Image is istiod's image as the istiod Deployment names it.
	Image string
	// Istioctl is the istioctl binary of the same version.
	Istioctl string
	// XDS is istiod's plaintext xDS address (Service istiod's cluster IP, port 15010), where a
	// test connects as a gateway proxy would.
	XDS string
	// Webhook is the ValidatingWebhookConfiguration whose webhook validates the Istio Gateways the
	// operator writes (no istio.io/rev label: the base chart's istiod-default-validator), as
	// istiod patched it (its CA bundle, failurePolicy Fail).
	Webhook *admissionregistrationv1.ValidatingWebhookConfiguration
	// Refusal is the error istiod's webhook gave a Gateway only it finds invalid (the probe of
	// waitIstioWebhook), as a client sees it: what a refused write of the operator's looks like.
	Refusal string
}

// istioBin is where `make istio` builds istiod, istioctl and copies their charts.
func (w *NodeWorld) istioBin(name string) string { return w.bin(filepath.Join("istio", name)) }

// InstallIstio installs Istio's control plane as Istio's Helm install guide does: the base chart
// (the CRDs and the default revision's validating webhook) and the istiod chart into
// istio-system, with istiod's image (pilot-discovery on an empty base, as Istio's distroless
// image) pushed to the world's registry and named with the chart's hub and tag values; nothing
// else is changed but the resource requests and the autoscaler (one small replica on the test
// nodes), and istiod's configuration analysis is on (global.istiod.enableAnalysis). It returns once istiod is Ready and its webhook refuses an invalid Gateway with istiod's
// own message: from then on every Istio Gateway written in the world passes istiod's validation.
func (w *NodeWorld) InstallIstio(ctx context.Context) (*Istio, error) {
	discovery, charts := w.istioBin("pilot-discovery"), w.istioBin("charts")
	for _, p := range []string{discovery, w.istioBin("istioctl"), charts} {
		if _, err := os.Stat(p); err != nil {
			return nil, fmt.Errorf("%v (make istio builds it)", err)
		}
	}
	version, err := exec.CommandContext(ctx, discovery, "version", "--short").Output()
	if err != nil {
		return nil, fmt.Errorf("%s version: %w", discovery, err)
	}
	module, err := os.ReadFile(filepath.Join(charts, "MODULE_VERSION"))
	if err != nil {
		return nil, err
	}
	// "client version: 1.31-alpha.<commit>" (istiod's version command says "client" too).
	_, v, _ := strings.Cut(strings.TrimSpace(string(version)), ": ")
	istio := &Istio{Version: v, ModuleVersion: strings.TrimSpace(string(module)), Istioctl: w.istioBin("istioctl")}
	// The chart's image is <hub>/pilot:<tag>; Istio's images run as 1337.
	hub := w.Registry + "/istio"
	if _, err := PushBinaryImage(ctx, w.Registry, BinaryImage{
		Repository: "istio/pilot", Tag: istio.Version,
		Files:      map[string]string{"/usr/local/bin/pilot-discovery": discovery},
		Entrypoint: []string{"/usr/local/bin/pilot-discovery"}, User: "1337:1337",
	}); err != nil {
		return nil, err
	}
	istio.Image = hub + "/pilot:" + istio.Version
	script := strings.Join([]string{
		"helm install istio-base " + filepath.Join(charts, "base") + " -n " + IstioNamespace + " --create-namespace --set defaultRevision=default",
		"helm install istiod " + filepath.Join(charts, "istiod") + " -n " + IstioNamespace +
			" --set hub=" + hub + " --set tag=" + istio.Version +
			" --set autoscaleEnabled=false --set resources.requests.cpu=100m --set resources.requests.memory=256Mi" +
			// istiod's analysis in the cluster: its findings on each Istio resource's status, which
			// the operator shows on the Gateway (IstioAnalysis, docs/OPERATOR-GUIDE.md).
			" --set global.istiod.enableAnalysis=true",
	}, "\n")
	if out, err := w.Cluster().RunScript(ctx, script); err != nil {
		return nil, fmt.Errorf("%w\n%s", err, out)
	}
	if _, err := w.WaitDeploymentReady(ctx, IstioNamespace, "istiod", 3*time.Minute); err != nil {
		return nil, fmt.Errorf("%w\n%s", err, w.Diagnostics(ctx, IstioNamespace))
	}
	var svc corev1.Service
	if err := w.Client.Get(ctx, client.ObjectKey{Namespace: IstioNamespace, Name: "istiod"}, &svc); err != nil {
		return nil, err
	}
	istio.XDS = net.JoinHostPort(svc.Spec.ClusterIP, "15010")
	if err := w.waitIstioWebhook(ctx, istio); err != nil {
		return nil, fmt.Errorf("%w\n%s", err, w.Diagnostics(ctx, IstioNamespace))
	}
	return istio, nil
}

// IstioWebhookDenial is the prefix of every refusal of istiod's validating webhook, as kubectl
// prints it.
const IstioWebhookDenial = `admission webhook "validation.istio.io" denied the request`

// waitIstioWebhook waits until istiod's validation covers the Istio Gateways the operator writes
// and fails closed: a webhook whose rules take networking.istio.io gateways and whose object
// selector matches an object without Istio's revision label (the operator's: the base chart's
// istiod-default-validator, which istiod patches from failurePolicy Ignore to Fail once it
// serves), and a Gateway only istiod's validation finds invalid (a host that is no DNS name; the
// CRD's schema admits it) refused by a server-side dry run. It records the webhook's
// configuration as istiod patched it.
func (w *NodeWorld) waitIstioWebhook(ctx context.Context, istio *Istio) error {
	invalid := &istionetworkingv1.Gateway{
		ObjectMeta: metav1.ObjectMeta{Namespace: IstioNamespace, Name: "webhook-probe"},
		Spec: istioapinetworkingv1.Gateway{
			Selector: map[string]string{"istio": "ingressgateway"},
			Servers: []*istioapinetworkingv1.Server{{
				Port:  &istioapinetworkingv1.Port{Number: 80, Name: "http", Protocol: "HTTP"},
				Hosts: []string{"not..a.name"},
			}},
		},
	}
	return Poll(ctx, 2*time.Minute, 500*time.Millisecond, "istiod's webhook validating Istio Gateways, fail closed", func(ctx context.Context) (bool, string, error) {
		var configs admissionregistrationv1.ValidatingWebhookConfigurationList
		if err := w.Client.List(ctx, &configs); err != nil {
			return false, err.Error(), nil
		}
		istio.Webhook = nil
		var seen []string
		for i := range configs.Items {
			for _, wh := range configs.Items[i].Webhooks {
				if validatesUnlabelledIstioGateways(wh) {
					seen = append(seen, fmt.Sprintf("%s/%s failurePolicy %s", configs.Items[i].Name, wh.Name, ptrString(wh.FailurePolicy)))
					if wh.FailurePolicy != nil && *wh.FailurePolicy == admissionregistrationv1.Fail {
						istio.Webhook = &configs.Items[i]
					}
				}
			}
		}
		if istio.Webhook == nil {
			return false, fmt.Sprintf("webhooks for unlabelled Istio Gateways: %v", seen), nil
		}
		err := w.Client.Create(ctx, invalid.DeepCopy(), client.DryRunAll)
		if err == nil {
			return false, "an invalid Gateway admitted", nil
		}
		istio.Refusal = err.Error()
		return strings.Contains(err.Error(), IstioWebhookDenial), err.Error(), nil
	})
}

// validatesUnlabelledIstioGateways says whether wh is called for creates and updates of
// networking.istio.io Gateways that carry no istio.io/rev label.
func validatesUnlabelledIstioGateways(wh admissionregistrationv1.ValidatingWebhook) bool {
	if wh.ObjectSelector != nil {
		sel, err := metav1.LabelSelectorAsSelector(wh.ObjectSelector)
		if err != nil || !sel.Matches(labels.Set{}) {
			return false
		}
	}
	for _, r := range wh.Rules {
		if slices.Contains(r.APIGroups, "networking.istio.io") && (slices.Contains(r.Resources, "*") || slices.Contains(r.Resources, "gateways")) &&
			slices.Contains(r.Operations, admissionregistrationv1.Create) && slices.Contains(r.Operations, admissionregistrationv1.Update) {
			return true
		}
	}
	return false
}

func ptrString[T ~string](p *T) string {
	if p == nil {
		return "unset"
	}
	return string(*p)
}

// IngressGatewayWorkload is an Istio ingress gateway as Istio's gateway chart deploys it, minus
// Envoy (which cannot be had here): a Deployment whose pods carry the gateway's labels (a pause
// container in place of istio-proxy) and its LoadBalancer Service (status-port 15021, http2 80 →
// 8080, https 443 → 8443) with the load balancer addresses a cloud would have written. istiod and
// istioctl find the gateway's namespace and ports through them; a test connects to istiod as its
// proxy (IstioGatewayProxy).
type IngressGatewayWorkload struct {
	Namespace, Name string
	// Labels are the pods' and the Service's labels (istio=<the Gateway's spec.controller>).
	Labels map[string]string
	// IPs are the load balancer addresses written to the Service's status.
	IPs []string
}

// StartIngressGatewayWorkload creates g's Deployment and Service and returns its pod once Ready.
func (w *NodeWorld) StartIngressGatewayWorkload(ctx context.Context, g IngressGatewayWorkload) (*corev1.Pod, error) {
	if err := EnsureNamespace(ctx, w.Client, g.Namespace); err != nil {
		return nil, err
	}
	deploy := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: g.Namespace, Name: g.Name, Labels: g.Labels},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: g.Labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: g.Labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name: "istio-proxy", Image: w.Registry + "/" + pauseRepository + ":" + pauseTag,
					Ports: []corev1.ContainerPort{{Name: "http-envoy-prom", ContainerPort: 15090}},
				}}},
			},
		},
	}
	if err := w.Client.Create(ctx, deploy); err != nil {
		return nil, err
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: g.Namespace, Name: g.Name, Labels: g.Labels},
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeLoadBalancer,
			Selector: g.Labels,
			Ports: []corev1.ServicePort{
				{Name: "status-port", Port: 15021, TargetPort: intstr.FromInt32(15021), Protocol: corev1.ProtocolTCP},
				{Name: "http2", Port: 80, TargetPort: intstr.FromInt32(8080), Protocol: corev1.ProtocolTCP},
				{Name: "https", Port: 443, TargetPort: intstr.FromInt32(8443), Protocol: corev1.ProtocolTCP},
			},
		},
	}
	if err := w.Client.Create(ctx, svc); err != nil {
		return nil, err
	}
	for _, ip := range g.IPs {
		svc.Status.LoadBalancer.Ingress = append(svc.Status.LoadBalancer.Ingress, corev1.LoadBalancerIngress{IP: ip})
	}
	if err := w.Client.Status().Update(ctx, svc); err != nil {
		return nil, err
	}
	pods, err := w.WaitDeploymentReady(ctx, g.Namespace, g.Name, 2*time.Minute)
	if err != nil {
		return nil, err
	}
	return &pods[0], nil
}
