package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/service-router/service-router-operator/cmd/kubectl-router/app"
	"github.com/service-router/service-router-operator/internal/manifestcheck"
	"github.com/service-router/service-router-operator/internal/routerplan"
)

// TestPlan_RefusesWhatTheAPIServerRefuses: plan, run as a user bound to the plan reader role (which
// reads the CRDs the cluster serves), refuses each manifest the API server refuses, with the API
// server's own message for the same manifest (kubectl's strict field validation on, as by
// default), and predicts nothing; what the API server admits, plan admits with the same defaults;
// with --delete, an object that does not exist is "not found", as kubectl delete says.
func TestPlan_RefusesWhatTheAPIServerRefuses(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t, "refuse")
	viewer, user := planViewer(t)
	route := "apiVersion: routing.router.io/v1alpha1\nkind: ServiceRoute\nmetadata: {name: %s}\nspec: %s"
	policy := "apiVersion: routing.router.io/v1alpha1\nkind: DNSPolicy\nmetadata: {name: dns}\nspec: %s"

	t.Run("refused on apply", func(t *testing.T) {
		for _, manifest := range []string{
			fmt.Sprintf(route, "web", "{serviceName: Web_V2, gatewayName: gw, environment: dev, application: shop}"),
			fmt.Sprintf(route, "web", "{serviceName: web, gatewayName: gw, environment: dev, application: shop, port: 80, tls: true}"),
			fmt.Sprintf(route, "web", "{gatewayName: gw, environment: dev, application: shop}"),
			"apiVersion: routing.router.io/v1alpha1\nkind: ServiceRoute\nmetadata: {name: web, label: {a: b}}\nspec: {serviceName: web, gatewayName: gw, environment: dev, application: shop}",
			"apiVersion: routing.router.io/v1alpha1\nkind: ServiceRoute\nmetadata: {name: web, labels: [a]}\nspec: {serviceName: web, gatewayName: gw, environment: dev, application: shop}",
			fmt.Sprintf(route, "web", "{serviceName: 5, gatewayName: gw, environment: dev, application: shop}"),
			fmt.Sprintf(route, strings.Repeat("a", 64), "{serviceName: web, gatewayName: gw, environment: dev, application: shop}"),
			fmt.Sprintf(route, "web", "{serviceName: "+strings.Repeat("s", 30)+", gatewayName: gw, environment: "+strings.Repeat("e", 20)+", application: shop-and-more}"),
			fmt.Sprintf(policy, "{mode: Passive}"),
			fmt.Sprintf(policy, "{mode: RegionBound}"),
			"apiVersion: routing.router.io/v1beta1\nkind: DNSPolicy\nmetadata: {name: dns}\nspec: {mode: Active}",
			"apiVersion: routing.router.io/v1alpha1\nkind: Gateway\nmetadata: {name: Bad_Name}\nspec: {controller: ingress, credentialName: Cert_1, targetPostfix: '', plainHTTP: RedirectToHTTPS}",
			"apiVersion: cluster.router.io/v1alpha1\nkind: ClusterIdentity\nmetadata: {name: another}\nspec: {region: weu, cluster: aks01, domain: example.com, environmentLetter: d}",
			"apiVersion: cluster.router.io/v1alpha1\nkind: ClusterIdentity\nmetadata: {name: cluster-identity}\nspec: {region: weu, cluster: aks01, domain: Example.com, environmentLetter: dd, adoptsRegions: [weu]}",
			"apiVersion: v1\nkind: Namespace\nmetadata: {name: Shop}",
			"apiVersion: v1\nkind: Service\nmetadata: {name: svc, labels: {tier: 'gold plated'}}\nspec: {ports: [{port: 80}]}",
		} {
			objs := objectsOf(t, manifest)
			_, _, err := routerplan.PredictFor(ctx, viewer, objs, false, ns, routerplan.DefaultSettings)
			var refused *manifestcheck.RefusedError
			require.ErrorAs(t, err, &refused, manifest)
			require.Len(t, refused.Errors, 1)
			apiErr := env.Client.Create(ctx, inNamespace(objs[0], ns), client.FieldValidation("Strict"))
			require.Error(t, apiErr, "the API server admits\n%s", manifest)
			requireSameRefusal(t, apiErr, refused.Errors[0], manifest)
		}
	})

	t.Run("admitted with the API server's defaults", func(t *testing.T) {
		objs := objectsOf(t, fmt.Sprintf(route, "web", "{serviceName: web, gatewayName: gw, environment: dev, application: shop}"))
		world, err := routerplan.Load(ctx, viewer)
		require.NoError(t, err)
		admitted, err := manifestcheck.Admit(ctx, viewer, world, objs, false, ns)
		require.NoError(t, err)
		stored := inNamespace(objs[0], ns)
		require.NoError(t, env.Client.Create(ctx, stored, client.FieldValidation("Strict")))
		require.Equal(t, stored.Object["spec"], admitted[0].Object["spec"], "the spec as the API server stores it, defaults included")
		require.Equal(t, "istio-system", stored.Object["spec"].(map[string]any)["gatewayNamespace"])
	})

	t.Run("not found on delete", func(t *testing.T) {
		for _, manifest := range []string{
			fmt.Sprintf(route, "gone", "{serviceName: web, gatewayName: gw, environment: dev, application: shop}"),
			"apiVersion: v1\nkind: Namespace\nmetadata: {name: gone-" + ns + "}",
			"apiVersion: v1\nkind: Service\nmetadata: {name: gone}",
		} {
			objs := objectsOf(t, manifest)
			_, _, err := routerplan.PredictFor(ctx, viewer, objs, true, ns, routerplan.DefaultSettings)
			var refused *manifestcheck.RefusedError
			require.ErrorAs(t, err, &refused, manifest)
			apiErr := env.Client.Delete(ctx, inNamespace(objs[0], ns))
			require.Error(t, apiErr)
			require.Equal(t, apiErr.Error(), refused.Errors[0].Error(), manifest)
		}
		// An existing Service the operator does not read (no istio label) is found, not refused.
		svc := objectsOf(t, "apiVersion: v1\nkind: Service\nmetadata: {name: plain}\nspec: {ports: [{port: 80}]}")
		require.NoError(t, env.Client.Create(ctx, inNamespace(svc[0], ns)))
		r, err := routerplan.PlanFor(ctx, viewer, svc, true, ns, routerplan.DefaultSettings)
		require.NoError(t, err)
		require.Equal(t, "ignored", r.Manifests[0].Action)
	})

	t.Run("without the right to read the CRDs it fails, and does not guess", func(t *testing.T) {
		older, _ := planViewerWithout(t, "apiextensions.k8s.io")
		objs := objectsOf(t, fmt.Sprintf(route, "web", "{serviceName: web, gatewayName: gw, environment: dev, application: shop}"))
		_, _, err := routerplan.PredictFor(ctx, older, objs, false, ns, routerplan.DefaultSettings)
		require.True(t, apierrors.IsForbidden(err), "%v", err)
		require.ErrorContains(t, err, "reading CustomResourceDefinition serviceroutes.routing.router.io")
	})

	t.Run("the command prints nothing and says why", func(t *testing.T) {
		t.Setenv("KUBECONFIG", impersonatingKubeconfig(t, adminKubeconfig(t), user))
		dir := t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(dir, "route.yaml"), []byte(fmt.Sprintf(route, "web", "{serviceName: Web_V2, gatewayName: gw, environment: dev, application: shop}")), 0o644))
		var out, errOut strings.Builder
		cmd := app.NewCommand(genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
		cmd.SetArgs([]string{"plan", "-f", dir, "-n", ns})
		err := cmd.ExecuteContext(ctx)
		var refused *manifestcheck.RefusedError
		require.ErrorAs(t, err, &refused)
		require.Empty(t, out.String(), "no prediction")
		require.Contains(t, err.Error(), `ServiceRoute.routing.router.io "web" is invalid: spec.serviceName: Invalid value: "Web_V2": serviceName must be a DNS label`)
	})
}

// requireSameRefusal requires plan's refusal to be the API server's: the same message, but for the
// order of the CEL errors of sibling fields, which the API server (and plan, with its code) takes
// from a map: it changes from one request to the next.
func requireSameRefusal(t *testing.T, apiErr, planErr error, manifest string) {
	t.Helper()
	if apiErr.Error() == planErr.Error() {
		return
	}
	var want, got apierrors.APIStatus
	require.ErrorAs(t, apiErr, &want, manifest)
	require.ErrorAs(t, planErr, &got, "plan: %v\nAPI server: %v", planErr, apiErr)
	require.Equal(t, want.Status().Reason, got.Status().Reason, manifest)
	require.ElementsMatch(t, want.Status().Details.Causes, got.Status().Details.Causes, manifest)
}

// inNamespace is a copy of a manifest in ns unless it names one (cluster-scoped kinds ignore it).
func inNamespace(u *unstructured.Unstructured, ns string) *unstructured.Unstructured {
	u = u.DeepCopy()
	if u.GetNamespace() == "" {
		u.SetNamespace(ns)
	}
	return u
}
