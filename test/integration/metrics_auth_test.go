package integration

import (
	"context"
	"crypto/tls"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/service-router/service-router-operator/internal/metrics"
)

// TestMetricsEndpoint_SecureByDefault serves /metrics exactly as main.go does by default
// (metrics.ServerOptions with secure serving: HTTPS, TokenReview and SubjectAccessReview), with
// the operator running as a service account that has only the shipped metrics-auth ClusterRole,
// and scrapes it as nobody, as a service account without RBAC, and as one bound to the shipped
// metrics-reader ClusterRole.
func TestMetricsEndpoint_SecureByDefault(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t, "metrics")
	t.Cleanup(func() { _ = env.Client.Delete(ctx, namespaceObject(ns)) })
	clientset, err := kubernetes.NewForConfig(env.Config)
	require.NoError(t, err)

	operator := serviceAccountWithClusterRole(t, clientset, ns, "operator", "metrics_auth_role.yaml")
	reader := serviceAccountWithClusterRole(t, clientset, ns, "prometheus", "metrics_reader_role.yaml")
	stranger := serviceAccountWithClusterRole(t, clientset, ns, "stranger", "")

	operatorConfig := &rest.Config{Host: env.Config.Host, BearerToken: operator,
		TLSClientConfig: rest.TLSClientConfig{CAData: env.Config.CAData}}
	addr := freeAddress(t)
	opts := metrics.ServerOptions(addr, true, false)
	startOperatorWith(t, operatorConfig, operatorOptions{noControllers: true, metrics: &opts})

	url := "https://" + addr + "/metrics"
	waitServing(t, url)

	status, _ := scrape(t, url, "")
	assert.Equal(t, http.StatusUnauthorized, status, "a scrape without a token")
	status, body := scrape(t, url, "not-a-token")
	assert.Equal(t, http.StatusUnauthorized, status, "a scrape with a token the TokenReview rejects: %s", body)
	status, _ = scrape(t, url, stranger)
	assert.Equal(t, http.StatusForbidden, status, "a scrape with a token not allowed to GET /metrics")
	status, body = scrape(t, url, reader)
	require.Equal(t, http.StatusOK, status, "a scrape with a token bound to metrics-reader: %s", body)
	assert.Contains(t, body, "service_router_build_info")
	assert.Contains(t, body, "controller_runtime_")
}

// TestMetricsEndpoint_InsecureOptionServesPlainHTTP is --metrics-secure=false, for homelabs:
// plain HTTP, no authentication.
func TestMetricsEndpoint_InsecureOptionServesPlainHTTP(t *testing.T) {
	addr := freeAddress(t)
	opts := metrics.ServerOptions(addr, false, false)
	startOperatorWith(t, env.Config, operatorOptions{noControllers: true, metrics: &opts})

	url := "http://" + addr + "/metrics"
	waitServing(t, url)
	status, body := scrape(t, url, "")
	require.Equal(t, http.StatusOK, status, body)
	assert.Contains(t, body, "service_router_build_info")
}

// serviceAccountWithClusterRole creates a service account, binds it to a copy of the shipped
// ClusterRole in config/rbac/roleFile (none when empty) and returns a token of it from the
// TokenRequest API, which the API server's TokenReview accepts.
func serviceAccountWithClusterRole(t *testing.T, clientset kubernetes.Interface, ns, name, roleFile string) string {
	t.Helper()
	ctx := context.Background()
	_, err := clientset.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	require.NoError(t, err)
	if roleFile != "" {
		data, err := os.ReadFile(filepath.Join(env.RepoRoot, "config", "rbac", roleFile))
		require.NoError(t, err)
		role := &rbacv1.ClusterRole{}
		require.NoError(t, yaml.Unmarshal(data, role))
		role.Name = ns + "-" + role.Name // cluster-scoped: unique per test run
		_, err = clientset.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{})
		require.NoError(t, err)
		binding := &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: role.Name + "-" + name},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: ns}},
		}
		_, err = clientset.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{})
		require.NoError(t, err)
		t.Cleanup(func() {
			_ = clientset.RbacV1().ClusterRoleBindings().Delete(context.Background(), binding.Name, metav1.DeleteOptions{})
			_ = clientset.RbacV1().ClusterRoles().Delete(context.Background(), role.Name, metav1.DeleteOptions{})
		})
	}
	token, err := clientset.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](600)},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	return token.Status.Token
}

// metricsHTTPClient trusts the operator's self-signed serving certificate.
var metricsHTTPClient = &http.Client{
	Timeout:   10 * time.Second,
	Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}},
}

// scrape GETs url with the bearer token (none when empty) and returns the status and body.
func scrape(t *testing.T, url, token string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	require.NoError(t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := metricsHTTPClient.Do(req)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(body)
}

// waitServing waits until something answers HTTP at url.
func waitServing(t *testing.T, url string) {
	t.Helper()
	waitFor(t, "the metrics endpoint to listen", func() string {
		resp, err := metricsHTTPClient.Get(url)
		if err != nil {
			return err.Error()
		}
		_ = resp.Body.Close()
		return ""
	})
}
