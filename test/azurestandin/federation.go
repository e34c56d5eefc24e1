package azurestandin

import (
	"crypto"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"strings"
	"time"
)

// FederatedCredential is a federated identity credential of a managed identity, as
// `az identity federated-credential create --issuer --subject --audiences` makes it: the token
// endpoint accepts, as that identity's client assertion, a token that Issuer signed for Subject
// and Audience (a Kubernetes service account token projected by the workload identity webhook).
type FederatedCredential struct {
	// ClientID is the managed identity's client ID (the service account's
	// azure.workload.identity/client-id annotation).
	ClientID string
	// Issuer is the cluster's OIDC issuer URL (the API server's --service-account-issuer).
	Issuer string
	// Subject is system:serviceaccount:<namespace>:<name>.
	Subject string
	// Audience is api://AzureADTokenExchange unless the credential says otherwise.
	Audience string
}

// TokenExchangeAudience is the audience of the service account tokens a workload identity
// exchanges, the one the webhook projects and federated credentials name by default.
const TokenExchangeAudience = "api://AzureADTokenExchange"

// TrustIssuer gives the token endpoint an OIDC issuer's signing keys: jwks is the JSON Web Key
// Set the issuer publishes (its discovery document's jwks_uri, /openid/v1/jwks of a Kubernetes
// API server), as Entra ID fetches it to check a federated token's signature. RSA keys only (a
// service account token is signed RS256).
func (s *Server) TrustIssuer(issuer string, jwks []byte) error {
	var set struct {
		Keys []struct {
			Kty, Kid, Alg, Use, N, E string
		} `json:"keys"`
	}
	if err := json.Unmarshal(jwks, &set); err != nil {
		return fmt.Errorf("the JWKS of %s: %w", issuer, err)
	}
	keys := map[string]*rsa.PublicKey{}
	for _, k := range set.Keys {
		if k.Kty != "RSA" {
			continue
		}
		n, errN := base64.RawURLEncoding.DecodeString(k.N)
		e, errE := base64.RawURLEncoding.DecodeString(k.E)
		if errN != nil || errE != nil || len(e) > 4 {
			return fmt.Errorf("the JWKS of %s: key %q is not an RSA public key", issuer, k.Kid)
		}
		keys[k.Kid] = &rsa.PublicKey{N: new(big.Int).SetBytes(n), E: int(new(big.Int).SetBytes(e).Int64())}
	}
	if len(keys) == 0 {
		return fmt.Errorf("the JWKS of %s has no RSA key", issuer)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.issuers[issuer] = keys
	return nil
}

// Federate adds a federated credential to a managed identity (an identity may have several: one
// per cluster and service account).
func (s *Server) Federate(c FederatedCredential) {
	if c.Audience == "" {
		c.Audience = TokenExchangeAudience
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.federated[c.ClientID] = append(s.federated[c.ClientID], c)
}

// assertionError is a refused client assertion: the OAuth error and Entra ID's description.
type assertionError struct {
	status      int
	code, descr string
}

func (e *assertionError) Error() string { return e.descr }

// exchange checks a client assertion presented for clientID against the identity's federated
// credentials as Entra ID does: a JWT signed RS256 by a trusted issuer's key, within its validity,
// whose issuer, subject and audience match one credential exactly. It returns the subject.
func (s *Server) exchange(clientID, assertion string) (string, error) {
	s.mu.Lock()
	creds := slices.Clone(s.federated[clientID])
	issuers := s.issuers
	s.mu.Unlock()
	if len(creds) == 0 {
		return "", &assertionError{400, "unauthorized_client", "AADSTS700016: Application with identifier '" + clientID + "' was not found in the directory."}
	}
	parts := strings.Split(assertion, ".")
	if len(parts) != 3 {
		return "", &assertionError{400, "invalid_request", "AADSTS50027: JWT token is invalid or malformed."}
	}
	var header struct{ Alg, Kid string }
	var claims struct {
		Iss      string   `json:"iss"`
		Sub      string   `json:"sub"`
		Aud      audience `json:"aud"`
		Exp, Nbf int64
	}
	h, errH := base64.RawURLEncoding.DecodeString(parts[0])
	c, errC := base64.RawURLEncoding.DecodeString(parts[1])
	sig, errS := base64.RawURLEncoding.DecodeString(parts[2])
	if errH != nil || errC != nil || errS != nil || json.Unmarshal(h, &header) != nil || json.Unmarshal(c, &claims) != nil {
		return "", &assertionError{400, "invalid_request", "AADSTS50027: JWT token is invalid or malformed."}
	}
	keys, trusted := issuers[claims.Iss]
	if !trusted {
		return "", &assertionError{400, "invalid_request", fmt.Sprintf("AADSTS700211: No matching federated identity record found for presented assertion issuer '%s'.", claims.Iss)}
	}
	key := keys[header.Kid]
	digest := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if key == nil || header.Alg != "RS256" || rsa.VerifyPKCS1v15(key, crypto.SHA256, digest[:], sig) != nil {
		// (No Entra ID error code: the stand-in's own wording.)
		return "", &assertionError{401, "invalid_client", fmt.Sprintf("the client assertion's signature (%s, key %q) does not verify with the signing keys of issuer '%s'", header.Alg, header.Kid, claims.Iss)}
	}
	now := time.Now().Unix()
	if claims.Exp <= now || claims.Nbf > now+300 {
		return "", &assertionError{400, "invalid_client", "AADSTS700024: Client assertion is not within its valid time range."}
	}
	for _, cred := range creds {
		if cred.Issuer == claims.Iss && cred.Subject == claims.Sub && slices.Contains(claims.Aud, cred.Audience) {
			return claims.Sub, nil
		}
	}
	return "", &assertionError{400, "invalid_request", fmt.Sprintf("AADSTS70021: No matching federated identity record found for presented assertion. Assertion Issuer: '%s'. Assertion Subject: '%s'. Assertion Audience: '%s'.",
		claims.Iss, claims.Sub, strings.Join(claims.Aud, ","))}
}

// audience is a JWT's aud claim: one string or a list.
type audience []string

func (a *audience) UnmarshalJSON(b []byte) error {
	var one string
	if json.Unmarshal(b, &one) == nil {
		*a = []string{one}
		return nil
	}
	var many []string
	if err := json.Unmarshal(b, &many); err != nil {
		return errors.New("aud is neither a string nor a list of strings")
	}
	*a = many
	return nil
}
