package ownwrite

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
)

// The status patch is computed from the two statuses alone; applied to the whole object it must
// give exactly the new status, with the rest of the object untouched, and carry the lock.
func TestStatusMergePatch_TurnsTheOldStatusIntoTheNewOne(t *testing.T) {
	ready := metav1.Condition{Type: "Ready", Status: metav1.ConditionTrue, Reason: "ReconciliationSucceeded", Message: "published"}
	tests := []struct {
		name          string
		before, after routingv1alpha1.ServiceRouteStatus
		wantPatch     string
	}{
		{
			name:      "first status",
			after:     routingv1alpha1.ServiceRouteStatus{Phase: "Active", Hostname: "api.example.com", Conditions: []metav1.Condition{ready}},
			wantPatch: `{"metadata":{"resourceVersion":"7"},"status":{"conditions":[{"lastTransitionTime":null,"message":"published","reason":"ReconciliationSucceeded","status":"True","type":"Ready"}],"hostname":"api.example.com","phase":"Active"}}`,
		},
		{
			name:      "a field that went is removed, unchanged ones are not sent",
			before:    routingv1alpha1.ServiceRouteStatus{Phase: "Active", Hostname: "api.example.com", TargetHostname: "aks01.example.com"},
			after:     routingv1alpha1.ServiceRouteStatus{Phase: "Active", Hostname: "api.example.com"},
			wantPatch: `{"metadata":{"resourceVersion":"7"},"status":{"targetHostname":null}}`,
		},
		{
			name:      "no change: only the lock",
			before:    routingv1alpha1.ServiceRouteStatus{Phase: "Active"},
			after:     routingv1alpha1.ServiceRouteStatus{Phase: "Active"},
			wantPatch: `{"metadata":{"resourceVersion":"7"}}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			patch, err := statusMergePatch(&tt.before, &tt.after, "7")
			require.NoError(t, err)
			assert.JSONEq(t, tt.wantPatch, string(patch))

			route := routingv1alpha1.ServiceRoute{ObjectMeta: metav1.ObjectMeta{Name: "r", Namespace: "ns", ResourceVersion: "7", Labels: map[string]string{"team": "a"}},
				Spec: routingv1alpha1.ServiceRouteSpec{ServiceName: "api", GatewayName: "gw", Environment: "dev", Application: "app"}, Status: tt.before}
			whole, err := json.Marshal(route)
			require.NoError(t, err)
			patched, err := jsonpatch.MergePatch(whole, patch)
			require.NoError(t, err)
			var got routingv1alpha1.ServiceRoute
			require.NoError(t, json.Unmarshal(patched, &got))
			want := route
			want.Status = tt.after
			assert.Equal(t, want, got)
		})
	}
}

// request is what the test API server saw of one write.
type request struct {
	method, path, fieldManager, accept, contentType string
	body                                            map[string]any
}

// metadataServer answers every write with the metadata of a created or updated object, as the API
// server does for as=PartialObjectMetadata, and records the requests.
func metadataServer(t *testing.T, seen *[]request) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body map[string]any
		raw, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(raw, &body)
		*seen = append(*seen, request{r.Method, r.URL.Path, r.URL.Query().Get("fieldManager"), r.Header.Get("Accept"), r.Header.Get("Content-Type"), body})
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{"name":"cm","namespace":"app","uid":"new-uid","resourceVersion":"42","generation":3,"creationTimestamp":"2026-11-25T12:00:00Z"}}`))
	}))
	t.Cleanup(srv.Close)
	return srv
}

func testWriter(t *testing.T, host string) *Writer {
	t.Helper()
	scheme := runtime.NewScheme()
	require.NoError(t, corev1.AddToScheme(scheme))
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(corev1.SchemeGroupVersion.WithKind("ConfigMap"), meta.RESTScopeNamespace)
	w, err := NewWriter(&rest.Config{Host: host}, http.DefaultClient, mapper, scheme, client.FieldOwner("test-operator"))
	require.NoError(t, err)
	return w
}

func TestWriter_AsksForMetadataOnlyAndKeepsWhatItSent(t *testing.T) {
	var seen []request
	w := testWriter(t, metadataServer(t, &seen).URL)
	ctx := context.Background()

	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "cm"}, Data: map[string]string{"k": "v"}}
	require.NoError(t, w.Create(ctx, cm))
	assert.Equal(t, types.UID("new-uid"), cm.UID, "the answer's metadata is filled in")
	assert.Equal(t, "42", cm.ResourceVersion)
	assert.Equal(t, int64(3), cm.Generation)
	assert.Equal(t, map[string]string{"k": "v"}, cm.Data, "what was sent is kept")

	cm.Data["k"] = "w"
	require.NoError(t, w.Update(ctx, cm))
	rv, err := w.PatchStatus(ctx, cm, map[string]any{"phase": "A"}, map[string]any{"phase": "B"}, "42")
	require.NoError(t, err)
	assert.Equal(t, "42", rv)

	require.Len(t, seen, 3)
	for _, r := range seen {
		assert.Equal(t, "test-operator", r.fieldManager, "the field owner names every write")
		assert.Contains(t, r.accept, "as=PartialObjectMetadata", "the answer carries metadata only")
	}
	assert.Equal(t, []string{"POST", "/api/v1/namespaces/app/configmaps"}, []string{seen[0].method, seen[0].path})
	assert.Equal(t, "ConfigMap", seen[0].body["kind"], "the body names its kind")
	assert.Equal(t, []string{"PUT", "/api/v1/namespaces/app/configmaps/cm"}, []string{seen[1].method, seen[1].path})
	assert.Equal(t, []string{"PATCH", "/api/v1/namespaces/app/configmaps/cm/status", "application/merge-patch+json"},
		[]string{seen[2].method, seen[2].path, seen[2].contentType})
	assert.Equal(t, map[string]any{"metadata": map[string]any{"resourceVersion": "42"}, "status": map[string]any{"phase": "B"}}, seen[2].body,
		"only the status change, locked to the version it was computed from")
}

// countingMapper counts the REST mapper's lookups.
type countingMapper struct {
	meta.RESTMapper
	lookups int
}

func (m *countingMapper) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	m.lookups++
	return m.RESTMapper.RESTMapping(gk, versions...)
}

// A kind's mapping is looked up once, not per write; a kind the API server does not serve (its
// CRD missing) is looked up again on the next write, so that it works once the CRD is installed.
func TestWriter_LooksUpAKindsMappingOnce(t *testing.T) {
	var seen []request
	scheme := runtime.NewScheme()
	require.NoError(t, corev1.AddToScheme(scheme))
	mapper := &countingMapper{RESTMapper: meta.NewDefaultRESTMapper(nil)}
	w, err := NewWriter(&rest.Config{Host: metadataServer(t, &seen).URL}, http.DefaultClient, mapper, scheme, client.FieldOwner("test-operator"))
	require.NoError(t, err)
	ctx := context.Background()

	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "s"}}
	for range 2 {
		require.Error(t, w.Create(ctx, secret), "Secrets are not served yet")
	}
	assert.Equal(t, 2, mapper.lookups, "a failed lookup is not remembered")
	mapper.RESTMapper.(*meta.DefaultRESTMapper).Add(corev1.SchemeGroupVersion.WithKind("Secret"), meta.RESTScopeNamespace)
	for i := range 3 {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: fmt.Sprint("cm", i)}}
		require.Error(t, w.Create(ctx, cm), "ConfigMaps are not served")
		require.NoError(t, w.Create(ctx, secret))
	}
	assert.Equal(t, 2+3+1, mapper.lookups, "the Secret's mapping looked up once it was served, then remembered")
	assert.Len(t, seen, 3)
}
