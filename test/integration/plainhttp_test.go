package integration

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	istionetworkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
)

// servers describes an Istio Gateway's servers: "HTTPS 443 cert-x", "HTTP 80", "HTTP 80 redirect".
func servers(ig *istionetworkingv1.Gateway) []string {
	var out []string
	for _, s := range ig.Spec.Servers {
		d := fmt.Sprintf("%s %d", s.GetPort().GetProtocol(), s.GetPort().GetNumber())
		switch {
		case s.GetTls().GetHttpsRedirect():
			d += " redirect"
		case s.GetTls().GetCredentialName() != "":
			d += " " + s.GetTls().GetCredentialName()
		}
		out = append(out, d)
	}
	return out
}

// A homelab without TLS publishes over plain HTTP, and a Gateway moves between HTTPS only,
// HTTPS with a redirect and plain HTTP only without losing a record or its Istio Gateway: the
// DNSEndpoint and the Istio Gateway keep their UIDs through every change.
func TestGateway_PlainHTTPServeAndRedirect(t *testing.T) {
	f := newFixture(t)
	f.setIdentity(weuIdentity())
	f.setControllers("weu")
	startOperator(t, env.Config)

	gw := f.gateway("homelab", "internal")
	f.ingressService(lbIP...)
	f.policy(activeMode)
	f.route("", "api-route", "api", gw.Name)
	host, target := f.hostname("api", "example.com"), "aks01-weu-internal.example.com"
	endpoint := f.waitRouteEndpoints(f.ns, "api-route", host, target, "external-dns-weu")[0]
	istio := f.waitIstioHosts(gw.Name, istioHost(f.ns, host))

	steps := []struct {
		name           string
		credentialName string
		plainHTTP      routingv1alpha1.PlainHTTP
		want           []string
	}{
		{"HTTPS with a redirect from HTTP", "cert-homelab", routingv1alpha1.PlainHTTPRedirectToHTTPS, []string{"HTTPS 443 cert-homelab", "HTTP 80 redirect"}},
		{"HTTPS and HTTP", "cert-homelab", routingv1alpha1.PlainHTTPServe, []string{"HTTPS 443 cert-homelab", "HTTP 80"}},
		{"HTTP only, no TLS Secret", "", routingv1alpha1.PlainHTTPServe, []string{"HTTP 80"}},
		{"back to HTTPS only", "cert-homelab", routingv1alpha1.PlainHTTPDisabled, []string{"HTTPS 443 cert-homelab"}},
	}
	for _, step := range steps {
		require.NoError(t, retryOnConflict(func() error {
			current := &routingv1alpha1.Gateway{}
			if err := env.Client.Get(f.ctx, client.ObjectKeyFromObject(gw), current); err != nil {
				return err
			}
			current.Spec.CredentialName, current.Spec.PlainHTTP = step.credentialName, step.plainHTTP
			return env.Client.Update(f.ctx, current)
		}), step.name)
		got := &istionetworkingv1.Gateway{}
		waitFor(t, step.name, func() string {
			if err := env.Client.Get(f.ctx, client.ObjectKeyFromObject(gw), got); err != nil {
				return err.Error()
			}
			if fmt.Sprint(servers(got)) != fmt.Sprint(step.want) {
				return fmt.Sprintf("servers %v", servers(got))
			}
			for _, s := range got.Spec.Servers {
				if fmt.Sprint(s.Hosts) != fmt.Sprint([]string{istioHost(f.ns, host)}) {
					return fmt.Sprintf("%s lists %v", s.GetPort().GetName(), s.Hosts)
				}
			}
			return ""
		})
		assert.Equal(t, istio.UID, got.UID, "%s: the Istio Gateway is updated in place", step.name)
		status := f.waitGateway(gw.Name, routingv1alpha1.PhaseActive, routingv1alpha1.ReasonGatewayCreated)
		assert.Equal(t, int32(1), status.Status.Hosts, step.name)
		route := f.waitRoute(f.ns, "api-route", routingv1alpha1.PhaseActive, routingv1alpha1.ReasonReconciliationSucceeded)
		assert.Equal(t, host, route.Status.Hostname)
		eps := routeEndpoints(t, f.ns, "api-route")
		require.Len(t, eps, 1, step.name)
		assert.Equal(t, endpoint.UID, eps[0].UID, "%s: the record is never re-created", step.name)
	}
}
