package packaging

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
	"github.com/service-router/service-router-operator/test/e2e/framework"
)

// TestDocs_AKSIstioAddOnSecretIsTheGatewaysCredential runs the TLS Secret command of
// docs/INSTALLATION.md's "Gateways on the AKS Istio add-on" as written (with a certificate and key
// made for the test as tls.crt and tls.key) against a real API server: it creates a TLS Secret
// named as the section's Gateway's credentialName, in its ingressNamespace, where the add-on's
// gateway pods read it.
func TestDocs_AKSIstioAddOnSecretIsTheGatewaysCredential(t *testing.T) {
	env := controlPlane(t)
	ctx := context.Background()
	section := docSection(t, readFile(t, repoPath("docs", "INSTALLATION.md")), "#### Gateways on the AKS Istio add-on")
	gatewayYAML, err := framework.BlockWith(section, "kind: Gateway")
	require.NoError(t, err)
	var gateway routingv1alpha1.Gateway
	require.NoError(t, yaml.UnmarshalStrict([]byte(gatewayYAML), &gateway))
	command, err := framework.BlockWith(section, "create secret tls")
	require.NoError(t, err)

	dir := t.TempDir()
	writeTestCertificate(t, filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key"))
	// The add-on creates its namespace.
	err = env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: gateway.Spec.IngressNamespace}})
	if err != nil {
		require.True(t, client.IgnoreAlreadyExists(err) == nil, "%v", err)
	}
	runDocCommand(t, "cd "+dir+"\n"+command)

	var secret corev1.Secret
	require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Namespace: gateway.Spec.IngressNamespace, Name: gateway.Spec.CredentialName}, &secret),
		"the command creates the Secret the Gateway's credentialName names, in its ingressNamespace")
	assert.Equal(t, corev1.SecretTypeTLS, secret.Type)
	assert.NotEmpty(t, secret.Data[corev1.TLSCertKey])
	assert.NotEmpty(t, secret.Data[corev1.TLSPrivateKeyKey])
}

// writeTestCertificate writes a self-signed certificate and its key as PEM files.
func writeTestCertificate(t *testing.T, certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	template := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "*.example.com"},
		DNSNames: []string{"*.example.com"}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, template, template, &key.PublicKey, key)
	require.NoError(t, err)
	keyDER, err := x509.MarshalECPrivateKey(key)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600))
	require.NoError(t, os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600))
}
