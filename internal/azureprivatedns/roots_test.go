package azureprivatedns_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/service-router/service-router-operator/internal/azureprivatedns"
)

// azureRoots are the root certificate authorities of Azure's service endpoints (Resource Manager,
// Microsoft Entra ID), as Microsoft's "Azure Certificate Authority details" page
// (learn.microsoft.com/azure/security/fundamentals/azure-ca-details) lists them, with that page's
// SHA-1 thumbprints and the SHA-256 fingerprints of the same certificates. The test reads them
// from Debian's copy of Mozilla's roots, and the pins make sure it read the right ones.
//
// legacy marks DigiCert Global Root CA (G1): Mozilla no longer trusts it for TLS (certificates
// issued after 2026-04-15), so Mozilla's TLS roots, and the compiled-in ones taken from them,
// leave it out. Microsoft moved login.microsoftonline.com (February 2025), the rest of Entra ID
// (January 2026) and the public cloud's managed certificates to G2 and G3; an endpoint still
// chaining to G1 (some sovereign-cloud endpoints) needs a CA bundle that holds it
// (docs/OPERATOR-GUIDE.md#verifying-azure-private-dns-zones).
var azureRoots = []struct {
	name, file, sha1, sha256 string
	legacy                   bool
}{
	{"DigiCert Global Root CA", "DigiCert_Global_Root_CA.crt",
		"a8985d3a65e5e5c4b2d7d66d40c6dd2fb19c5436", "4348a0e9444c78cb265e058d5e8944b4d84f9662bd26db257f8934a443c70161", true},
	{"DigiCert Global Root G2", "DigiCert_Global_Root_G2.crt",
		"df3c24f9bfd666761b268073fe06d1cc8d4f82a4", "cb3ccbb76031e5e0138f8dd39a23f9de47ffc35e43c1144cea27d46a5ab1cb5f", false},
	{"DigiCert Global Root G3", "DigiCert_Global_Root_G3.crt",
		"7e04de896a3e666d00e687d33ffad93be83d349e", "31ad6648f8104138c738f39ea4320133393e3a18cc02296ef97c2ac9ef6731d0", false},
	{"DigiCert TLS ECC P384 Root G5", "DigiCert_TLS_ECC_P384_Root_G5.crt",
		"17f3de5e9f0f19e98ef61f32266e20c407ae30ee", "018e13f0772532cf809bd1b17281867283fc48c6e13be9c69812854a490c1b05", false},
	{"DigiCert TLS RSA 4096 Root G5", "DigiCert_TLS_RSA4096_Root_G5.crt",
		"a78849dc5d7c758c8cde399856b3aad0b2a57135", "371a00dc0533b3721a7eeb40e8419e70799d2b0a0f2c1d80693165f7cec4ad75", false},
	{"Microsoft ECC Root Certificate Authority 2017", "Microsoft_ECC_Root_Certificate_Authority_2017.crt",
		"999a64c37ff47d9fab95f14769891460eec4c3c5", "358df39d764af9e1b766e9c972df352ee15cfac227af6ad1d70e8e4a6edcba02", false},
	{"Microsoft RSA Root Certificate Authority 2017", "Microsoft_RSA_Root_Certificate_Authority_2017.crt",
		"73a5e64a3bff8316ff0edccc618a906e4eae4d74", "c741f70f4b2a8d88bf2e71c14122ef53ef10eba0cfa5e64cfa20f418853073e0", false},
}

// azureRoot is one of azureRoots, read.
type azureRoot struct {
	cert   *x509.Certificate
	legacy bool
}

// mozillaRootsDir is where Debian's ca-certificates package keeps Mozilla's roots, one file each.
const mozillaRootsDir = "/usr/share/ca-certificates/mozilla"

// rootsChildEnv marks the test binary re-run by runRootsChild: it then runs the test's check in
// the environment the parent prepared, instead of preparing one.
const rootsChildEnv = "SERVICE_ROUTER_ROOTS_CHILD"

// loadAzureRoots returns the azureRoots found in mozillaRootsDir, each checked against its pins,
// and skips the test when there are none (not a Debian-like system).
func loadAzureRoots(t *testing.T) map[string]azureRoot {
	t.Helper()
	certs := map[string]azureRoot{}
	for _, r := range azureRoots {
		data, err := os.ReadFile(filepath.Join(mozillaRootsDir, r.file))
		if os.IsNotExist(err) {
			t.Logf("%s: not in %s, not checked", r.name, mozillaRootsDir)
			continue
		}
		require.NoError(t, err)
		block, _ := pem.Decode(data)
		require.NotNil(t, block, "%s: no PEM block", r.file)
		sum1, sum256 := sha1.Sum(block.Bytes), sha256.Sum256(block.Bytes)
		require.Equal(t, r.sha1, hex.EncodeToString(sum1[:]), "%s: not the certificate Microsoft lists as %s", r.file, r.name)
		require.Equal(t, r.sha256, hex.EncodeToString(sum256[:]), "%s: not the certificate pinned for %s", r.file, r.name)
		cert, err := x509.ParseCertificate(block.Bytes)
		require.NoError(t, err)
		certs[r.name] = azureRoot{cert: cert, legacy: r.legacy}
	}
	if len(certs) == 0 {
		t.Skipf("none of Azure's root certificates is in %s (Debian's ca-certificates)", mozillaRootsDir)
	}
	return certs
}

// runRootsChild runs the calling test again in a new process of the test binary, whose system
// root pool Go loads from certFile and certDir alone (SSL_CERT_FILE, SSL_CERT_DIR), and fails if
// the child's test fails. It returns false in the child, which then runs its check.
func runRootsChild(t *testing.T, certFile, certDir string) (parent bool) {
	t.Helper()
	if os.Getenv(rootsChildEnv) != "" {
		return false
	}
	cmd := exec.Command(os.Args[0], "-test.run=^"+t.Name()+"$", "-test.v", "-test.count=1")
	env := []string{rootsChildEnv + "=1", "SSL_CERT_FILE=" + certFile, "SSL_CERT_DIR=" + certDir}
	for _, kv := range os.Environ() {
		// Nothing else decides the roots (GODEBUG=x509usefallbackroots=1 would force the fallback).
		if name, _, _ := strings.Cut(kv, "="); name != "SSL_CERT_FILE" && name != "SSL_CERT_DIR" && name != "GODEBUG" {
			env = append(env, kv)
		}
	}
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "the test in a process with SSL_CERT_FILE=%s SSL_CERT_DIR=%s:\n%s", certFile, certDir, out)
	require.Contains(t, string(out), "--- PASS: "+t.Name(), "the child ran the test:\n%s", out)
	t.Logf("child process:\n%s", out)
	return true
}

// TestRoots_AzureEndpointsTrustedWithoutSystemRoots: the image is scratch, with no CA bundle, so
// the operator must trust Azure's roots on its own for the azurePrivateDNS verification (TLS to
// Resource Manager and Microsoft Entra ID). In a process whose system pool is empty, as in the
// image (SSL_CERT_FILE a file that does not exist, SSL_CERT_DIR an empty directory), no root is
// trusted until the first Reader is built (the compiled-in roots cost memory only where a zone
// is read through Azure); from then on every root Microsoft lists verifies with the default
// roots (Roots nil), except the legacy G1 root Mozilla no longer trusts for TLS.
func TestRoots_AzureEndpointsTrustedWithoutSystemRoots(t *testing.T) {
	certs := loadAzureRoots(t)
	dir := t.TempDir()
	emptyDir := filepath.Join(dir, "certs")
	require.NoError(t, os.Mkdir(emptyDir, 0o755))
	if runRootsChild(t, filepath.Join(dir, "no-such-bundle.pem"), emptyDir) {
		return
	}
	for name, root := range certs {
		_, err := root.cert.Verify(x509.VerifyOptions{})
		assert.Error(t, err, "%s is trusted before any zone is read through Azure: the compiled-in roots were parsed at start", name)
	}
	s, z := standIn(t)
	_, err := azureprivatedns.NewReader(z, s.HTTPClient())
	require.NoError(t, err)
	for name, root := range certs {
		_, err := root.cert.Verify(x509.VerifyOptions{})
		if root.legacy {
			assert.Error(t, err, "%s is trusted: Mozilla's TLS roots left it out; update azureRoots and the docs", name)
			continue
		}
		assert.NoError(t, err, "%s is not trusted without system roots once a Reader was built", name)
	}
}

// TestRoots_SystemRootsWinOverTheCompiledIn: where the system has roots of its own (a CA bundle
// mounted with SSL_CERT_FILE, a distribution's bundle), Go uses them and not the compiled-in ones,
// so a private CA given that way keeps working, and only it: a bundle replaces the compiled-in
// roots rather than adding to them.
func TestRoots_SystemRootsWinOverTheCompiledIn(t *testing.T) {
	if os.Getenv(rootsChildEnv) == "" {
		loadAzureRoots(t) // skips the test where there is nothing to compare with
		dir := t.TempDir()
		emptyDir := filepath.Join(dir, "certs")
		require.NoError(t, os.Mkdir(emptyDir, 0o755))
		bundle := filepath.Join(dir, "private-ca.pem")
		require.NoError(t, os.WriteFile(bundle, privateCA(t), 0o644))
		runRootsChild(t, bundle, emptyDir)
		return
	}
	s, z := standIn(t)
	_, err := azureprivatedns.NewReader(z, s.HTTPClient())
	require.NoError(t, err)
	data, err := os.ReadFile(os.Getenv("SSL_CERT_FILE"))
	require.NoError(t, err)
	block, _ := pem.Decode(data)
	require.NotNil(t, block)
	private, err := x509.ParseCertificate(block.Bytes)
	require.NoError(t, err)
	_, err = private.Verify(x509.VerifyOptions{})
	assert.NoError(t, err, "the CA of SSL_CERT_FILE is trusted")
	for name, root := range loadAzureRoots(t) {
		_, err := root.cert.Verify(x509.VerifyOptions{})
		assert.Error(t, err, "%s is trusted although SSL_CERT_FILE does not hold it: the compiled-in roots were used", name)
	}
}

// privateCA returns a new self-signed CA certificate, PEM-encoded.
func privateCA(t *testing.T) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	template := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "service-router test private CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, template, template, &key.PublicKey, key)
	require.NoError(t, err)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}
