package azurestandin

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"math/big"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/arm"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/cloud"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/privatedns/armprivatedns"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const (
	issuer     = "https://oidc.cluster.example/"
	identity   = "22222222-2222-2222-2222-222222222222"
	subject    = "system:serviceaccount:service-router-system:service-router-operator"
	signingKID = "key-1"
)

// signJWT signs claims RS256 with key, as a Kubernetes API server signs a service account token.
func signJWT(t *testing.T, key *rsa.PrivateKey, kid string, claims map[string]any) string {
	t.Helper()
	enc := func(v any) string {
		b, err := json.Marshal(v)
		require.NoError(t, err)
		return base64.RawURLEncoding.EncodeToString(b)
	}
	signed := enc(map[string]string{"alg": "RS256", "kid": kid}) + "." + enc(claims)
	digest := sha256.Sum256([]byte(signed))
	sig, err := rsa.SignPKCS1v15(rand.Reader, key, crypto.SHA256, digest[:])
	require.NoError(t, err)
	return signed + "." + base64.RawURLEncoding.EncodeToString(sig)
}

func jwks(key *rsa.PublicKey, kid string) []byte {
	b, _ := json.Marshal(map[string]any{"keys": []map[string]string{{
		"kty": "RSA", "kid": kid, "alg": "RS256", "use": "sig",
		"n": base64.RawURLEncoding.EncodeToString(key.N.Bytes()),
		"e": base64.RawURLEncoding.EncodeToString(big.NewInt(int64(key.E)).Bytes()),
	}}})
	return b
}

// listAs lists the zone's record sets as a workload identity presenting token.
func listAs(t *testing.T, s *Server, clientID, token string) error {
	t.Helper()
	file := filepath.Join(t.TempDir(), "azure-identity-token")
	require.NoError(t, os.WriteFile(file, []byte(token), 0o600))
	o := azcore.ClientOptions{
		Cloud: cloud.Configuration{ActiveDirectoryAuthorityHost: s.URL, Services: map[cloud.ServiceName]cloud.ServiceConfiguration{
			cloud.ResourceManager: {Audience: s.URL, Endpoint: s.URL}}},
		Transport: s.HTTPClient(),
		Retry:     policy.RetryOptions{MaxRetries: -1},
	}
	cred, err := azidentity.NewWorkloadIdentityCredential(&azidentity.WorkloadIdentityCredentialOptions{
		ClientOptions: o, ClientID: clientID, TenantID: TenantID, TokenFilePath: file})
	require.NoError(t, err)
	records, err := armprivatedns.NewRecordSetsClient(sub, cred, &arm.ClientOptions{ClientOptions: o, DisableRPRegistration: true})
	require.NoError(t, err)
	_, err = records.NewListPager(rg, zoneName, nil).NextPage(context.Background())
	return err
}

// A workload identity's service account token is exchanged only as Entra ID exchanges it: signed
// by the issuer's key, valid now, and matching one of the identity's federated credentials in
// issuer, subject and audience; the token it gets is the identity's own.
func TestStandIn_ExchangesAFederatedServiceAccountToken(t *testing.T) {
	s := start(t)
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	require.NoError(t, s.TrustIssuer(issuer, jwks(&key.PublicKey, signingKID)))
	s.Federate(FederatedCredential{ClientID: identity, Issuer: issuer, Subject: subject})
	now := time.Now().Unix()
	claims := func(change func(map[string]any)) map[string]any {
		c := map[string]any{"iss": issuer, "sub": subject, "aud": []string{TokenExchangeAudience}, "iat": now, "nbf": now, "exp": now + 3600}
		if change != nil {
			change(c)
		}
		return c
	}

	require.NoError(t, listAs(t, s, identity, signJWT(t, key, signingKID, claims(nil))))
	assert.Equal(t, 1, s.Count("token "+identity))
	assert.Equal(t, 1, s.Count("GET "+identity), "the listing is counted as the identity's")

	other, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	for name, c := range map[string]struct {
		clientID, token, want string
	}{
		"another service account":   {identity, signJWT(t, key, signingKID, claims(func(c map[string]any) { c["sub"] = "system:serviceaccount:default:default" })), "AADSTS70021"},
		"another audience":          {identity, signJWT(t, key, signingKID, claims(func(c map[string]any) { c["aud"] = "https://kubernetes.default.svc" })), "AADSTS70021"},
		"another issuer":            {identity, signJWT(t, key, signingKID, claims(func(c map[string]any) { c["iss"] = "https://elsewhere.example/" })), "AADSTS700211"},
		"expired":                   {identity, signJWT(t, key, signingKID, claims(func(c map[string]any) { c["exp"] = now - 60 })), "AADSTS700024"},
		"signed by another key":     {identity, signJWT(t, other, signingKID, claims(nil)), "does not verify"},
		"an identity not federated": {"33333333-3333-3333-3333-333333333333", signJWT(t, key, signingKID, claims(nil)), "AADSTS700016"},
		"not a JWT":                 {identity, "stand-in-federated-service-account-token", "AADSTS50027"},
	} {
		t.Run(name, func(t *testing.T) {
			err := listAs(t, s, c.clientID, c.token)
			var auth *azidentity.AuthenticationFailedError
			require.ErrorAs(t, err, &auth)
			assert.Contains(t, err.Error(), c.want)
		})
	}
}
