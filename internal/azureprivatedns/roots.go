package azureprivatedns

import (
	"crypto/x509"
	"sync"

	"golang.org/x/crypto/x509roots/fallback/bundle"
)

// trustCompiledInRoots gives Go's certificate verification Mozilla's root certificates, compiled
// into the binary, where the system has none: the operator's image is scratch, without a CA
// bundle, and TLS to Resource Manager and Microsoft Entra ID needs them. Nothing else the
// operator talks to does (the API server's CA comes with the service account), so they are
// parsed on the first zone read through Azure, not at start as golang.org/x/crypto/x509roots/
// fallback's init would: parsed, they make a program that does nothing else 2.3 MiB larger in
// resident memory (heap, and the pages they are read from), which a cluster without an
// azurePrivateDNS verification would pay for nothing. Go uses them only when the
// system pool is empty, so a bundle given with SSL_CERT_FILE or SSL_CERT_DIR, or a
// distribution's, replaces them.
var trustCompiledInRoots = sync.OnceFunc(func() {
	pool := x509.NewCertPool()
	for root := range bundle.Roots() {
		cert, err := x509.ParseCertificate(root.Certificate)
		if err != nil {
			panic(err) // the bundle is Go's own, tested upstream; it cannot hold a bad certificate
		}
		if root.Constraint == nil {
			pool.AddCert(cert)
		} else {
			pool.AddCertWithConstraint(cert, root.Constraint)
		}
	}
	x509.SetFallbackRoots(pool)
})
