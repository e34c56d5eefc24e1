//go:build e2e

package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	istionetworkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	externaldnsv1alpha1 "sigs.k8s.io/external-dns/apis/v1alpha1"

	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
	"github.com/service-router/service-router-operator/internal/testenv"
	"github.com/service-router/service-router-operator/test/e2e/framework"
)

// TestUninstall_RemovingWhatItManagesEmptiesTheZone runs step 2 of docs/INSTALLATION.md#uninstall
// as written, one command at a time, on a cluster with kube-controller-manager, the operator
// stopped (step 1), and the real ExternalDNS (--policy=sync) writing a BIND zone, and checks what
// the section says happens: deleting the CRDs deletes the custom resources, the garbage collector
// the routes' DNSEndpoints and the Istio Gateway, and ExternalDNS the routes' records; the
// DNSEndpoint of the gateway's address stays, with its record, until the second command deletes
// it by its label, and then its record goes too.
func TestUninstall_RemovingWhatItManagesEmptiesTheZone(t *testing.T) {
	ctx := t.Context()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join(root, "docs", "INSTALLATION.md"))
	if err != nil {
		t.Fatal(err)
	}
	section, err := framework.DocSection(string(doc), "## Uninstall")
	if err != nil {
		t.Fatal(err)
	}
	block, err := framework.BlockWith(section, "delete crd serviceroutes")
	if err != nil {
		t.Fatal(err)
	}
	deleteCRDs, deleteAddresses, ok := strings.Cut(block, "kubectl delete dnsendpoints")
	if !ok {
		t.Fatalf("the block has no `kubectl delete dnsendpoints` after the CRDs:\n%s", block)
	}
	deleteAddresses = "kubectl delete dnsendpoints" + deleteAddresses

	samples, err := framework.ReadKustomization(filepath.Join(root, "config", "samples"))
	if err != nil {
		t.Fatal(err)
	}
	cl, err := framework.StartCluster(ctx, t, framework.ClusterOptions{Name: "uninstall", ControllerManager: true})
	if err != nil {
		t.Fatal(err)
	}
	zone, err := framework.StartBind(ctx, t, framework.BindOptions{Name: "weu", Zone: "example.com"})
	if err != nil {
		t.Fatal(err)
	}
	ed, err := cl.StartExternalDNS(ctx, t, framework.ExternalDNSOptions{Name: "external-dns-weu", OwnerID: "external-dns-weu-aks01", TXTPrefix: "weu-d-"}.ForBind(zone))
	if err != nil {
		t.Fatal(err)
	}
	op, err := cl.StartOperator(ctx, t, framework.OperatorOptions{})
	if err != nil {
		t.Fatal(err)
	}
	diag := []func() string{op.Diagnostics, ed.Diagnostics, zone.Diagnostics}
	if err := framework.CreateAll(ctx, cl.Client, samples); err != nil {
		t.Fatal(err)
	}
	if _, err := framework.CreateIngressService(ctx, cl.Client, framework.IngressService{
		Namespace: "aks-istio-ingress", Name: "aks-istio-ingressgateway-internal", Controller: "aks-istio-ingressgateway-internal", IPs: []string{"10.123.45.67"},
	}); err != nil {
		t.Fatal(err)
	}

	// Published: every route's name answers through the gateway's address.
	var routes routingv1alpha1.ServiceRouteList
	err = framework.Poll(ctx, time.Minute, 200*time.Millisecond, "the sample routes Active", func(ctx context.Context) (bool, string, error) {
		if err := cl.Client.List(ctx, &routes); err != nil {
			return false, "", err
		}
		for _, r := range routes.Items {
			if r.Status.Hostname == "" || r.Status.TargetHostname == "" {
				return false, r.Name + " has no hostname yet", nil
			}
		}
		return len(routes.Items) > 0, "", nil
	})
	if err != nil {
		t.Fatal(err)
	}
	target := routes.Items[0].Status.TargetHostname
	for _, r := range routes.Items {
		if _, err := framework.Converge(ctx, zone.Query(r.Status.Hostname, "A"), framework.Resolves("CNAME "+target+".", "A 10.123.45.67"), time.Minute, 100*time.Millisecond, diag...); err != nil {
			t.Fatal(err)
		}
	}
	var endpoints externaldnsv1alpha1.DNSEndpointList
	if err := cl.Client.List(ctx, &endpoints); err != nil {
		t.Fatal(err)
	}
	// The gateway address's DNSEndpoints (one per ExternalDNS controller) have no owner: the
	// operator shares them per ingress gateway.
	addresses := map[string]bool{}
	for _, ep := range endpoints.Items {
		if len(ep.OwnerReferences) == 0 {
			addresses[string(ep.UID)] = true
		}
	}
	if len(addresses) == 0 || len(endpoints.Items) <= len(addresses) {
		t.Fatalf("want the routes' DNSEndpoints and the gateway address's, without owner; have %s", describeEndpoints(endpoints.Items))
	}

	// Step 1: the operator removed.
	if err := op.Stop(); err != nil {
		t.Fatal(err)
	}
	// Step 2, its first command: the CRDs, and with them every custom resource; the garbage
	// collector deletes what they own, ExternalDNS the records.
	started := time.Now()
	if out, err := cl.RunScript(ctx, deleteCRDs); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, r := range routes.Items {
		if _, err := framework.Converge(ctx, zone.Query(r.Status.Hostname, "A"), framework.NXDomain(), time.Minute, 100*time.Millisecond, diag...); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("the CRDs deleted: the routes' names gone from the zone %s later", time.Since(started).Round(100*time.Millisecond))
	err = framework.Poll(ctx, time.Minute, 200*time.Millisecond, "the routes' DNSEndpoints and the Istio Gateway garbage-collected", func(ctx context.Context) (bool, string, error) {
		var left externaldnsv1alpha1.DNSEndpointList
		if err := cl.Client.List(ctx, &left); err != nil {
			return false, "", err
		}
		var gateways istionetworkingv1.GatewayList
		if err := cl.Client.List(ctx, &gateways); err != nil {
			return false, "", err
		}
		for _, ep := range left.Items {
			if !addresses[string(ep.UID)] {
				return false, describeEndpoints(left.Items), nil
			}
		}
		return len(left.Items) == len(addresses) && len(gateways.Items) == 0, describeEndpoints(left.Items), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := framework.Converge(ctx, zone.Query(target, "A"), framework.Resolves("A 10.123.45.67"), 5*time.Second, 100*time.Millisecond, diag...); err != nil {
		t.Fatalf("the gateway's address must stay until its DNSEndpoint is deleted: %v", err)
	}
	crds := &unstructured.UnstructuredList{}
	crds.SetAPIVersion("apiextensions.k8s.io/v1")
	crds.SetKind("CustomResourceDefinitionList")
	if err := cl.Client.List(ctx, crds); err != nil {
		t.Fatal(err)
	}
	for _, crd := range crds.Items {
		if strings.HasSuffix(crd.GetName(), ".router.io") {
			t.Errorf("CRD %s left", crd.GetName())
		}
	}

	// Its second command: the gateway's address, by its label; ExternalDNS removes the record.
	if out, err := cl.RunScript(ctx, deleteAddresses); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var left externaldnsv1alpha1.DNSEndpointList
	if err := cl.Client.List(ctx, &left); err != nil || len(left.Items) > 0 {
		t.Errorf("DNSEndpoints left after the label's deletion: %s (%v)", describeEndpoints(left.Items), err)
	}
	if _, err := framework.Converge(ctx, zone.Query(target, "A"), framework.NXDomain(), time.Minute, 100*time.Millisecond, diag...); err != nil {
		t.Fatal(err)
	}
	framework.LogZone(ctx, t, "after step 2", zone)
}

func describeEndpoints(eps []externaldnsv1alpha1.DNSEndpoint) string {
	var s []string
	for _, ep := range eps {
		s = append(s, ep.Namespace+"/"+ep.Name)
	}
	return strings.Join(s, ", ")
}
