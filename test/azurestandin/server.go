// Package azurestandin is a local stand-in for Azure Private DNS behind Azure Resource Manager,
// for tests: a stateful HTTPS server on 127.0.0.1 serving the REST operations ExternalDNS's
// azure-private-dns provider and the operator's verification reader use — private zones of a
// resource group, record sets listed whole or by type with $top and nextLink paging, read,
// created or replaced (PUT, with If-Match / If-None-Match ETags), patched and deleted — with
// Resource Manager's error bodies and its bearer-token check. It enforces Resource Manager's
// documented request limits (DocumentedLimits, changed by SetLimits, on a clock SetClock may
// replace): a token bucket per subscription, principal and operation type (250 reads refilled at
// 25 a second, 200 writes and 200 deletes at 10), the subscription's global buckets 15 times as
// large, Microsoft.Network's 10,000 reads and 1,000 writes and deletes per 5 minutes, and Private
// DNS's limits per zone (60 record set creates, 60 updates, 60 deletes, 200 gets and 100 list
// pages a minute, ZoneLimits); a refused request gets 429 TooManyRequests, Retry-After and a message naming the rule, and every
// answer the x-ms-ratelimit-remaining-subscription-* header of the principal's bucket. A test
// may also inject 429s (Throttle, ThrottleReads). Usage counts what was admitted and throttled
// by principal, zone and subscription, and by zone and Private DNS operation. It is also the token authority (never throttled): an AD
// FS-style (Azure Stack Hub, tenant "adfs") OpenID configuration and a client-credentials token
// endpoint, so that the real Azure SDK clients authenticate with an azure.json's aadClientId and
// aadClientSecret (ClientID, or a principal AddServicePrincipal added), or as a workload identity
// with its federated token: the fixed FederatedToken, or a Kubernetes service account token
// checked against federated credentials (TrustIssuer, Federate) as Entra ID checks it. TLS uses
// a CA made at start, written to CAFile for SSL_CERT_FILE. There is no cloud metadata endpoint: with cloud AzureStackCloud, ExternalDNS v0.23.0 and the SDK take the
// endpoints from the azure.json and fetch none. Not served: zone writes and virtual network
// links (ExternalDNS never makes them; CreateZone stands for the platform team's Terraform).
package azurestandin

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The credentials the stand-in accepts.
const (
	TenantID     = "adfs" // Azure Stack Hub's AD FS: no instance discovery against the public cloud
	ClientID     = "00000000-0000-0000-0000-0000000000c1"
	ClientSecret = "stand-in-secret"
	// FederatedToken is the service account token a workload identity presents as its client
	// assertion (the file AZURE_FEDERATED_TOKEN_FILE names).
	FederatedToken = "stand-in-federated-service-account-token"
	// Audience is the Resource Manager audience tokens are issued for.
	Audience = "https://management.azurestandin.local/"
)

// Server is a running stand-in.
type Server struct {
	// URL is both the Resource Manager endpoint and the AD authority host, with a trailing slash.
	URL string
	// CAFile is the PEM of the CA that signed the server's certificate.
	CAFile string

	listener net.Listener
	srv      *http.Server
	pool     *x509.CertPool

	mu       sync.Mutex
	zones    map[zoneKey]*zone
	tokens   map[string]issued
	throttle throttle
	counts   map[string]int
	// limiter enforces the limits by the clock now; usage is what it admitted and refused.
	limiter limiter
	now     func() time.Time
	usage   map[usageKey]Tallies
	// zoneUsage is usage by zone and Private DNS operation.
	zoneUsage map[zoneKey]ZoneTallies
	// secrets are the service principals added beside ClientID (client ID → secret).
	secrets map[string]string
	// issuers are the OIDC issuers whose tokens may be exchanged (key ID → key); federated the
	// federated credentials of each client ID.
	issuers   map[string]map[string]*rsa.PublicKey
	federated map[string][]FederatedCredential
	// readers are the principals whose role on the zones only reads (Reader): Resource Manager
	// refuses their writes and deletes with 403 AuthorizationFailed.
	readers map[string]bool
}

// issued is a bearer token the stand-in issued: until when, and to which client.
type issued struct {
	expiry   time.Time
	clientID string
}

// throttle is the injected throttling of Resource Manager requests.
type throttle struct {
	// next requests are refused (counting down), or every request while sustained.
	next       int
	sustained  bool
	retryAfter time.Duration
	// readsOnly throttles GETs only (Resource Manager counts reads and writes apart).
	readsOnly bool
}

// Start starts a stand-in on 127.0.0.1; dir receives the CA file. Close stops it.
func Start(dir string) (*Server, error) { return StartOn(dir, "127.0.0.1") }

// StartOn starts a stand-in on an IP address of this machine (a port of its own), with a
// certificate for that address: where pods reach it, for a cluster's node address.
func StartOn(dir, ip string) (*Server, error) {
	addr := net.ParseIP(ip)
	if addr == nil {
		return nil, fmt.Errorf("%q is not an IP address", ip)
	}
	cert, pool, caPEM, err := certificates(addr)
	if err != nil {
		return nil, err
	}
	caFile := filepath.Join(dir, "azure-standin-ca.pem")
	if err := os.WriteFile(caFile, caPEM, 0o644); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		return nil, err
	}
	s := &Server{URL: fmt.Sprintf("https://%s/", ln.Addr().String()), CAFile: caFile, listener: ln, pool: pool,
		zones: map[zoneKey]*zone{}, tokens: map[string]issued{}, counts: map[string]int{},
		issuers: map[string]map[string]*rsa.PublicKey{}, federated: map[string][]FederatedCredential{},
		limiter: newLimiter(DocumentedLimits), now: time.Now, usage: map[usageKey]Tallies{}, zoneUsage: map[zoneKey]ZoneTallies{}, secrets: map[string]string{}}
	s.srv = &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second,
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}}
	go func() { _ = s.srv.ServeTLS(ln, "", "") }()
	return s, nil
}

// Close stops the server.
func (s *Server) Close() error { return s.srv.Close() }

// HTTPClient is a client that trusts the stand-in's CA (for in-process SDK clients).
func (s *Server) HTTPClient() *http.Client {
	return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: s.pool, MinVersion: tls.VersionTLS12}}}
}

// AzureJSON is an azure.json, in the format ExternalDNS's --azure-config-file reads, that points
// the real Azure clients at the stand-in (cloud AzureStackCloud, its endpoints, the service
// principal the stand-in knows) for a subscription and resource group.
func (s *Server) AzureJSON(subscriptionID, resourceGroup string) []byte {
	b, _ := json.MarshalIndent(map[string]string{
		"cloud": "AzureStackCloud", "tenantId": TenantID, "subscriptionId": subscriptionID, "resourceGroup": resourceGroup,
		"aadClientId": ClientID, "aadClientSecret": ClientSecret,
		"resourceManagerEndpoint": s.URL, "activeDirectoryAuthorityHost": s.URL, "resourceManagerAudience": Audience,
	}, "", "  ")
	return b
}

// AddServicePrincipal makes the token endpoint accept another service principal's client ID and
// secret: a principal of its own for the limits, as each cluster's ExternalDNS is in a fleet.
func (s *Server) AddServicePrincipal(clientID, secret string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.secrets[clientID] = secret
}

func (s *Server) hasSecret(clientID, secret string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	want, known := s.secrets[clientID]
	return known && secret == want
}

// SetReadOnly gives a principal the Reader role on every zone (readOnly) or back the Private DNS
// Zone Contributor role every principal has by default: as a role assignment removed or restored
// in Azure, its writes and deletes are refused with 403 AuthorizationFailed, before any limit
// counts them, while its reads go on.
func (s *Server) SetReadOnly(clientID string, readOnly bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.readers == nil {
		s.readers = map[string]bool{}
	}
	s.readers[clientID] = readOnly
}

// Throttle refuses the next n Resource Manager requests with 429 and Retry-After, before the
// limits count them.
func (s *Server) Throttle(n int, retryAfter time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.throttle = throttle{next: n, retryAfter: retryAfter}
}

// ThrottleReads refuses every Resource Manager read (GET) with 429 and Retry-After until
// Unthrottle, as a subscription over its read budget is.
func (s *Server) ThrottleReads(retryAfter time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.throttle = throttle{sustained: true, readsOnly: true, retryAfter: retryAfter}
}

// Unthrottle ends any throttling.
func (s *Server) Unthrottle() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.throttle = throttle{}
}

// Count is how many requests of a kind the stand-in served (kinds: token, listZones, getZone,
// listRecordSets, listRecordSetsByType, getRecordSet, putRecordSet, patchRecordSet,
// deleteRecordSet, throttled (every 429: injected or by the limits), unauthorized; and per
// client ID: "token <client ID>" the tokens issued to it, "<HTTP method> <client ID>" the
// Resource Manager requests it made).
func (s *Server) Count(kind string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.counts[kind]
}

func (s *Server) count(kind string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.counts[kind]++
}

// ServeHTTP routes a request: the token authority, or Resource Manager.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.URL.Path == "/adfs/.well-known/openid-configuration":
		s.openIDConfiguration(w)
	case r.URL.Path == "/adfs/oauth2/token":
		s.token(w, r)
	case strings.HasPrefix(strings.ToLower(r.URL.Path), "/subscriptions/"):
		s.resourceManager(w, r)
	default:
		armError(w, http.StatusNotFound, "NotFound", "no such path: "+r.URL.Path)
	}
}

func (s *Server) openIDConfiguration(w http.ResponseWriter) {
	writeJSON(w, http.StatusOK, map[string]any{
		"issuer":                                s.URL + "adfs",
		"authorization_endpoint":                s.URL + "adfs/oauth2/authorize",
		"token_endpoint":                        s.URL + "adfs/oauth2/token",
		"token_endpoint_auth_methods_supported": []string{"client_secret_post"},
		"grant_types_supported":                 []string{"client_credentials"},
	})
}

// token is the client-credentials grant: the stand-in's service principal gets a bearer token
// for Resource Manager's audience, valid for an hour.
func (s *Server) token(w http.ResponseWriter, r *http.Request) {
	s.count("token")
	if err := r.ParseForm(); err != nil || r.Method != http.MethodPost {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_request"})
		return
	}
	if r.PostForm.Get("grant_type") != "client_credentials" {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "unsupported_grant_type"})
		return
	}
	// A service principal's secret, or a workload identity's federated token as client assertion:
	// the fixed one, or a service account token matching a federated credential of the client.
	clientID := r.PostForm.Get("client_id")
	secret := r.PostForm.Get("client_secret") == ClientSecret
	isAssertion := r.PostForm.Get("client_assertion_type") == "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
	switch {
	case clientID == ClientID && (secret || isAssertion && r.PostForm.Get("client_assertion") == FederatedToken):
	case !isAssertion && s.hasSecret(clientID, r.PostForm.Get("client_secret")):
	case isAssertion && clientID != ClientID:
		if _, err := s.exchange(clientID, r.PostForm.Get("client_assertion")); err != nil {
			var refused *assertionError
			_ = errors.As(err, &refused)
			s.count("unauthorized")
			writeJSON(w, refused.status, map[string]string{"error": refused.code, "error_description": refused.descr})
			return
		}
	default:
		writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "invalid_client", "error_description": "MSIS9607: The client credentials are invalid."})
		return
	}
	// The audience named in the azure.json, or the Resource Manager endpoint itself (the
	// operator's default audience for a custom endpoint).
	if scope := r.PostForm.Get("scope"); !strings.HasPrefix(scope, strings.TrimSuffix(Audience, "/")) && !strings.HasPrefix(scope, strings.TrimSuffix(s.URL, "/")) {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_resource", "error_description": "unknown scope " + scope})
		return
	}
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	token := hex.EncodeToString(b)
	s.mu.Lock()
	s.tokens[token] = issued{expiry: time.Now().Add(time.Hour), clientID: clientID}
	s.counts["token "+clientID]++
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{"token_type": "Bearer", "access_token": token, "expires_in": 3600, "ext_expires_in": 3600})
}

// authorized checks the bearer token, the injected throttling and then the limits; false when it
// answered. An admitted request carries the tokens left in the principal's bucket of its
// operation type (none without that bucket), a throttled one 0.
func (s *Server) authorized(w http.ResponseWriter, r *http.Request) bool {
	token := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	sub, zoneName := scope(r.URL.Path)
	op := operationOf(r.Method)
	s.mu.Lock()
	tok, known := s.tokens[token]
	if known {
		s.counts[r.Method+" "+tok.clientID]++
	}
	if !known || time.Now().After(tok.expiry) {
		s.counts["unauthorized"]++
		s.mu.Unlock()
		w.Header().Set("WWW-Authenticate", `Bearer authorization_uri="`+s.URL+`adfs", error="invalid_token"`)
		armError(w, http.StatusUnauthorized, "AuthenticationFailed", "Authentication failed. The 'Authorization' header is missing or invalid.")
		return false
	}
	if op != opRead && s.readers[tok.clientID] {
		s.counts["forbidden"]++
		s.mu.Unlock()
		armError(w, http.StatusForbidden, "AuthorizationFailed", fmt.Sprintf("The client '%s' with object id '%s' does not have authorization to perform action "+
			"'Microsoft.Network/privateDnsZones/%s/%s' over scope '%s' or the scope is invalid. If access was recently granted, please refresh your credentials.",
			tok.clientID, tok.clientID, recordTypeOf(r.URL.Path), op.action(), strings.TrimPrefix(r.URL.Path, "/")))
		return false
	}
	t := &s.throttle
	injected := (t.sustained || t.next > 0) && (!t.readsOnly || r.Method == http.MethodGet)
	if injected && t.next > 0 {
		t.next--
	}
	retryAfter := t.retryAfter
	zr := s.zoneRequestOf(r)
	d := decision{remaining: -1}
	if !injected {
		d = s.limiter.admit(s.now(), sub, tok.clientID, op, zr)
	}
	k := usageKey{subscription: sub, principal: tok.clientID, zone: zoneName}
	tallies := s.usage[k]
	tallies.add(op, d.admitted)
	s.usage[k] = tallies
	if zr.op != zoneNone {
		zoneTallies := s.zoneUsage[zr.zone]
		zoneTallies.add(zr.op, d.admitted, d.zoneLimited)
		s.zoneUsage[zr.zone] = zoneTallies
	}
	if !d.admitted {
		s.counts["throttled"]++
	}
	s.mu.Unlock()
	switch {
	case injected:
		w.Header().Set(op.remainingHeader(), "0")
		if retryAfter > 0 {
			w.Header().Set("Retry-After", fmt.Sprint(int(retryAfter.Round(time.Second)/time.Second)))
		}
		armError(w, http.StatusTooManyRequests, "TooManyRequests", "The request is being throttled as the limit has been reached for operation type - Read_ObservationWindow_00:05:00.")
		return false
	case !d.admitted:
		w.Header().Set(op.remainingHeader(), "0")
		w.Header().Set("Retry-After", strconv.Itoa(d.retryAfter))
		armError(w, http.StatusTooManyRequests, "TooManyRequests", d.message(sub, tok.clientID, op))
		return false
	}
	if d.remaining >= 0 {
		w.Header().Set(op.remainingHeader(), strconv.Itoa(d.remaining))
	}
	return true
}

// zoneRequestOf is the Private DNS operation a request makes on a zone's record sets (ZoneLimits),
// with s.mu held: whether a PUT or PATCH creates or updates depends on the record set existing
// now. A request on no existing zone, or on a zone itself, is zoneNone.
func (s *Server) zoneRequestOf(r *http.Request) zoneRequest {
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	if len(parts) < 9 || len(parts) > 10 || !strings.EqualFold(parts[6], "privateDnsZones") {
		return zoneRequest{}
	}
	k := zoneKey{strings.ToLower(parts[1]), strings.ToLower(parts[3]), strings.ToLower(parts[7])}
	z := s.zones[k]
	if z == nil {
		return zoneRequest{}
	}
	if len(parts) == 9 {
		if r.Method == http.MethodGet {
			return zoneRequest{zone: k, op: zoneList}
		}
		return zoneRequest{}
	}
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		return zoneRequest{zone: k, op: zoneGet}
	case http.MethodDelete:
		return zoneRequest{zone: k, op: zoneDelete}
	case http.MethodPut, http.MethodPatch:
		if z.records[rsKey{strings.ToLower(parts[9]), strings.ToUpper(parts[8])}] == nil {
			return zoneRequest{zone: k, op: zoneCreate}
		}
		return zoneRequest{zone: k, op: zoneUpdate}
	}
	return zoneRequest{}
}

// armError writes Resource Manager's error body.
func armError(w http.ResponseWriter, status int, code, message string) {
	writeJSON(w, status, map[string]any{"error": map[string]string{"code": code, "message": message}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("x-ms-request-id", requestID())
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func requestID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// certificates makes a CA and a certificate for ip, 127.0.0.1 and localhost signed by it.
func certificates(ip net.IP) (tls.Certificate, *x509.CertPool, []byte, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, nil, nil, err
	}
	now := time.Now()
	ca := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "azure stand-in CA"}, NotBefore: now.Add(-time.Hour),
		NotAfter: now.Add(24 * time.Hour), IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		return tls.Certificate{}, nil, nil, err
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		return tls.Certificate{}, nil, nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, nil, nil, err
	}
	leaf := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: ip.String()}, NotBefore: now.Add(-time.Hour),
		NotAfter: now.Add(24 * time.Hour), IPAddresses: []net.IP{ip, net.IPv4(127, 0, 0, 1)}, DNSNames: []string{"localhost"},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	leafDER, err := x509.CreateCertificate(rand.Reader, leaf, caCert, &key.PublicKey, caKey)
	if err != nil {
		return tls.Certificate{}, nil, nil, err
	}
	pool := x509.NewCertPool()
	pool.AddCert(caCert)
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})
	return tls.Certificate{Certificate: [][]byte{leafDER, caDER}, PrivateKey: key}, pool, caPEM, nil
}
