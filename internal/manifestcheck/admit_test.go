package manifestcheck_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
	"github.com/service-router/service-router-operator/internal/manifestcheck"
	"github.com/service-router/service-router-operator/internal/naming"
	"github.com/service-router/service-router-operator/internal/routerplan"
)

// bundledCRDs are the CRDs of config/crd/bases: what a cluster with this release serves.
func bundledCRDs(t *testing.T) []*apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	files, err := filepath.Glob("../../config/crd/bases/*.yaml")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	var crds []*apiextensionsv1.CustomResourceDefinition
	for _, f := range files {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		crd := &apiextensionsv1.CustomResourceDefinition{}
		require.NoError(t, yaml.UnmarshalStrict(data, crd), f)
		crds = append(crds, crd)
	}
	return crds
}

func bundledSchemas(t *testing.T) manifestcheck.Schemas {
	t.Helper()
	s, err := manifestcheck.SchemasOf(bundledCRDs(t)...)
	require.NoError(t, err)
	return s
}

// refusals are the messages of Admit's refusal, none when it admits.
func refusals(err error) []string {
	var refused *manifestcheck.RefusedError
	if !errors.As(err, &refused) {
		return nil
	}
	out := make([]string, len(refused.Errors))
	for i, e := range refused.Errors {
		out[i] = e.Error()
	}
	return out
}

// world is what plan predicts from: namespaces app and istio-system, DNSPolicy app/dns,
// ServiceRoute app/r0 and the ingress Service istio-system/ingress.
func world() *routerplan.World {
	return &routerplan.World{
		Namespaces: map[string]routerplan.Namespace{"app": {}, "istio-system": {}},
		Policies: []*routingv1alpha1.DNSPolicy{{ObjectMeta: metav1.ObjectMeta{Name: "dns", Namespace: "app"},
			Spec: routingv1alpha1.DNSPolicySpec{Mode: routingv1alpha1.DNSPolicyModeActive}}},
		Routes: []*routingv1alpha1.ServiceRoute{{ObjectMeta: metav1.ObjectMeta{Name: "r0", Namespace: "app", Generation: 1},
			Spec: routingv1alpha1.ServiceRouteSpec{ServiceName: "svc0", GatewayName: "gw", GatewayNamespace: "istio-system", Environment: "dev", Application: "shop"}}},
		Services: []*corev1.Service{{ObjectMeta: metav1.ObjectMeta{Name: "ingress", Namespace: "istio-system",
			Labels: map[string]string{naming.IngressServiceSelector: "ingress"}}}},
	}
}

func manifests(t *testing.T, docs ...string) []*unstructured.Unstructured {
	t.Helper()
	objs, err := routerplan.ReadManifests([]string{"-"}, strings.NewReader(strings.Join(docs, "\n---\n")))
	require.NoError(t, err)
	return objs
}

const (
	dnsLabelRule    = "must be a DNS label: lowercase letters, digits and '-', starting and ending with a letter or digit"
	notAllValidated = "<nil>: Invalid value: null: some validation rules were not checked because the object was invalid; correct the existing errors to complete validation"
	webRoute        = "apiVersion: routing.router.io/v1alpha1\nkind: ServiceRoute\nmetadata: {name: web}\nspec: %s"
	routeYAML       = "apiVersion: routing.router.io/v1alpha1\nkind: ServiceRoute\nmetadata: {name: %s}\nspec: {serviceName: %s, gatewayName: gw, gatewayNamespace: istio-system, environment: dev, application: shop}"
	policyYAML      = "apiVersion: routing.router.io/v1alpha1\nkind: DNSPolicy\nmetadata: {name: dns, namespace: app}\nspec: %s"
)

// The messages are the API server's own (test/integration's TestPlan_RefusesWhatTheAPIServerRefuses
// compares them with a real one's for the same manifests).
func TestAdmit_RefusesWhatTheAPIServerRefuses(t *testing.T) {
	for _, tc := range []struct {
		name string
		docs []string
		want []string // nil: admitted
	}{
		{name: "a valid route", docs: []string{fmt.Sprintf(webRoute, "{serviceName: web, gatewayName: gw, environment: dev, application: shop}")}},
		{name: "a CEL rule of a field", docs: []string{fmt.Sprintf(webRoute, "{serviceName: Web_V2, gatewayName: gw, environment: dev, application: shop}")},
			want: []string{`ServiceRoute.routing.router.io "web" is invalid: spec.serviceName: Invalid value: "Web_V2": serviceName ` + dnsLabelRule}},
		{name: "a CEL rule of the object", docs: []string{"apiVersion: cluster.router.io/v1alpha1\nkind: ClusterIdentity\nmetadata: {name: another}\nspec: {region: weu, cluster: aks01, domain: example.com, environmentLetter: d}"},
			want: []string{`ClusterIdentity.cluster.router.io "another" is invalid: <nil>: Invalid value: ClusterIdentity is a singleton: metadata.name must be cluster-identity`}},
		{name: "unknown fields, as kubectl's strict field validation", docs: []string{fmt.Sprintf(webRoute, "{serviceName: web, gatewayName: gw, environment: dev, application: shop, tls: true, port: 80}")},
			want: []string{`ServiceRoute in version "v1alpha1" cannot be handled as a ServiceRoute: strict decoding error: unknown field "spec.port", unknown field "spec.tls"`}},
		{name: "an unknown metadata field", docs: []string{"apiVersion: routing.router.io/v1alpha1\nkind: ServiceRoute\nmetadata: {name: web, label: {a: b}}\nspec: {serviceName: web, gatewayName: gw, environment: dev, application: shop}"},
			want: []string{`ServiceRoute in version "v1alpha1" cannot be handled as a ServiceRoute: strict decoding error: unknown field "metadata.label"`}},
		{name: "malformed metadata", docs: []string{"apiVersion: routing.router.io/v1alpha1\nkind: ServiceRoute\nmetadata: {name: web, labels: [a]}\nspec: {serviceName: web, gatewayName: gw, environment: dev, application: shop}"},
			want: []string{`ServiceRoute in version "v1alpha1" cannot be handled as a ServiceRoute: json: cannot unmarshal array into Go struct field ObjectMeta.labels of type map[string]string`}},
		{name: "a required field: the CEL rules are not run", docs: []string{fmt.Sprintf(webRoute, "{gatewayName: gw, environment: dev, application: shop}")},
			want: []string{`ServiceRoute.routing.router.io "web" is invalid: [spec.serviceName: Required value, ` + notAllValidated + `]`}},
		{name: "a type, named as the API server decodes JSON", docs: []string{fmt.Sprintf(webRoute, "{serviceName: 5, gatewayName: gw, environment: dev, application: shop}")},
			want: []string{`ServiceRoute.routing.router.io "web" is invalid: [spec.serviceName: Invalid value: "integer": spec.serviceName in body must be of type string: "integer", ` + notAllValidated + `]`}},
		{name: "an enum", docs: []string{"apiVersion: routing.router.io/v1alpha1\nkind: DNSPolicy\nmetadata: {name: dns}\nspec: {mode: Passive}"},
			want: []string{`DNSPolicy.routing.router.io "dns" is invalid: [spec.mode: Unsupported value: "Passive": supported values: "Active", "RegionBound", ` + notAllValidated + `]`}},
		{name: "a version the cluster does not serve", docs: []string{"apiVersion: routing.router.io/v1beta1\nkind: DNSPolicy\nmetadata: {name: dns}\nspec: {mode: Active}"},
			want: []string{`no matches for kind "DNSPolicy" in version "routing.router.io/v1beta1"`}},
		{name: "a kind our groups do not have", docs: []string{"apiVersion: routing.router.io/v1alpha1\nkind: ServiceRoutes\nmetadata: {name: web}"},
			want: []string{`no matches for kind "ServiceRoutes" in version "routing.router.io/v1alpha1"`}},
		{name: "a Namespace's name", docs: []string{"apiVersion: v1\nkind: Namespace\nmetadata: {name: Shop}"},
			want: []string{`Namespace "Shop" is invalid: metadata.name: Invalid value: "Shop": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')`}},
		{name: "a Service's label", docs: []string{"apiVersion: v1\nkind: Service\nmetadata: {name: svc, labels: {tier: 'gold plated'}}"},
			want: []string{`Service "svc" is invalid: metadata.labels: Invalid value: "gold plated": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')`}},
		{name: "a kind the operator does not read is not checked", docs: []string{"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: Not_Checked}"}},
		{name: "every refused manifest, in order", docs: []string{
			fmt.Sprintf(webRoute, "{serviceName: Web_V2, gatewayName: gw, environment: dev, application: shop}"),
			fmt.Sprintf(policyYAML, "{mode: Active}"),
			"apiVersion: routing.router.io/v1alpha1\nkind: DNSPolicy\nmetadata: {name: other}\nspec: {mode: RegionBound}"},
			want: []string{`ServiceRoute.routing.router.io "web" is invalid: spec.serviceName: Invalid value: "Web_V2": serviceName ` + dnsLabelRule,
				`DNSPolicy.routing.router.io "other" is invalid: spec.sourceRegion: Invalid value: sourceRegion is required in RegionBound mode: without it every cluster would write every regional zone`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := bundledSchemas(t).Admit(context.Background(), world(), manifests(t, tc.docs...), "app")
			if tc.want == nil {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Equal(t, tc.want, refusals(err))
		})
	}
}

// The API server defaults before it stores: a manifest that leaves a defaulted field out changes
// nothing, and the prediction starts from the stored values.
func TestAdmit_AppliesTheCRDsDefaults(t *testing.T) {
	w := world()
	objs := manifests(t, "apiVersion: routing.router.io/v1alpha1\nkind: ServiceRoute\nmetadata: {name: r0}\nspec: {serviceName: svc0, gatewayName: gw, environment: dev, application: shop}",
		"apiVersion: routing.router.io/v1alpha1\nkind: Gateway\nmetadata: {name: gw2, namespace: istio-system}\nspec: {controller: ingress, targetPostfix: other}")
	admitted, err := bundledSchemas(t).Admit(context.Background(), w, objs, "app")
	require.NoError(t, err)
	assert.Equal(t, "istio-system", admitted[0].Object["spec"].(map[string]any)["gatewayNamespace"])
	assert.Equal(t, "IstioGateway", admitted[1].Object["spec"].(map[string]any)["backend"])
	assert.NotContains(t, admitted[0].Object, "status", "a create drops the status")
	assert.Empty(t, objs[0].GetNamespace(), "the manifests read are not changed")
	changes, err := routerplan.Overlay(w.DeepCopy(), admitted, false, "app", time.Now())
	require.NoError(t, err)
	assert.Equal(t, "unchanged", changes[0].Action)
}

// Kubernetes 1.30 and later ratchet: an update keeping a value the CRD's rules now refuse (a rule
// tightened by an upgrade) is admitted; changing it to another refused value is not.
func TestAdmit_RatchetsWhatAnUpdateDoesNotChange(t *testing.T) {
	w := world()
	w.Routes[0].Spec.ServiceName = "Old_Name"
	route := "apiVersion: routing.router.io/v1alpha1\nkind: ServiceRoute\nmetadata: {name: r0}\nspec: {serviceName: %s, gatewayName: gw, environment: %s, application: shop}"
	s := bundledSchemas(t)
	_, err := s.Admit(context.Background(), w, manifests(t, fmt.Sprintf(route, "Old_Name", "prod")), "app")
	require.NoError(t, err)
	_, err = s.Admit(context.Background(), w, manifests(t, fmt.Sprintf(route, "New_Name", "dev")), "app")
	assert.Equal(t, []string{`ServiceRoute.routing.router.io "r0" is invalid: spec.serviceName: Invalid value: "New_Name": serviceName ` + dnsLabelRule}, refusals(err))
	_, err = s.Admit(context.Background(), w, manifests(t, strings.Replace(fmt.Sprintf(route, "Old_Name", "dev"), "r0", "r1", 1)), "app")
	assert.Len(t, refusals(err), 1, "a create is not ratcheted")
}

// existing is a cluster read for what the world does not hold: the objects named "Kind ns/name".
type existing map[string]bool

func (e existing) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	if e[obj.GetObjectKind().GroupVersionKind().Kind+" "+key.String()] {
		return nil
	}
	return apierrors.NewNotFound(schema.GroupResource{}, key.Name)
}

func (existing) List(context.Context, client.ObjectList, ...client.ListOption) error {
	return errors.New("plan lists nothing to check a deletion")
}

func TestAdmit_DeletingWhatDoesNotExistIsNotFound(t *testing.T) {
	cluster := existing{"Service app/plain": true}
	for _, tc := range []struct {
		name string
		doc  string
		want []string
	}{
		{name: "a route", doc: fmt.Sprintf(routeYAML, "r0", "svc0")},
		{name: "a missing route", doc: fmt.Sprintf(routeYAML, "gone", "x"), want: []string{`serviceroutes.routing.router.io "gone" not found`}},
		{name: "a missing policy in another namespace", doc: strings.Replace(fmt.Sprintf(policyYAML, "{}"), "namespace: app", "namespace: other", 1),
			want: []string{`dnspolicies.routing.router.io "dns" not found`}},
		{name: "a missing ClusterIdentity", doc: "apiVersion: cluster.router.io/v1alpha1\nkind: ClusterIdentity\nmetadata: {name: another}",
			want: []string{`clusteridentities.cluster.router.io "another" not found`}},
		{name: "a namespace", doc: "apiVersion: v1\nkind: Namespace\nmetadata: {name: app}"},
		{name: "a missing namespace", doc: "apiVersion: v1\nkind: Namespace\nmetadata: {name: gone}", want: []string{`namespaces "gone" not found`}},
		{name: "an ingress Service", doc: "apiVersion: v1\nkind: Service\nmetadata: {name: ingress, namespace: istio-system}"},
		{name: "a Service the operator does not read, asked of the cluster", doc: "apiVersion: v1\nkind: Service\nmetadata: {name: plain}"},
		{name: "a missing Service", doc: "apiVersion: v1\nkind: Service\nmetadata: {name: gone}", want: []string{`services "gone" not found`}},
		{name: "a kind plan does not read is not checked", doc: "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: gone}"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := manifestcheck.Admit(context.Background(), cluster, world(), manifests(t, tc.doc), true, "app")
			if tc.want == nil {
				require.NoError(t, err)
				return
			}
			assert.Equal(t, tc.want, refusals(err))
		})
	}
}

// The CRD names plan reads (and the plan reader role may get) are the operator's CRDs.
func TestCRDNames_AreTheOperatorsCRDs(t *testing.T) {
	want := map[schema.GroupKind]string{}
	for _, crd := range bundledCRDs(t) {
		want[schema.GroupKind{Group: crd.Spec.Group, Kind: crd.Spec.Names.Kind}] = crd.Name
		assert.Equal(t, schema.GroupResource{Group: crd.Spec.Group, Resource: crd.Spec.Names.Plural}, manifestcheck.ResourceOf(schema.GroupKind{Group: crd.Spec.Group, Kind: crd.Spec.Names.Kind}))
	}
	assert.Equal(t, want, manifestcheck.CRDNames)
}
