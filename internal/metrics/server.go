package metrics

import (
	"crypto/tls"

	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// ServerOptions configures the /metrics endpoint. Secure (the default of the operator's
// --metrics-secure flag) serves HTTPS with a self-signed certificate and lets a request through
// only when its bearer token authenticates (TokenReview: 401 otherwise) and may GET /metrics
// (SubjectAccessReview: 403 otherwise), which is what the metrics-reader ClusterRole grants.
// Insecure serves plain HTTP without authentication, for clusters where the network is the
// boundary (a homelab). HTTP/2 is off unless enabled (HTTP/2 rapid-reset CVEs).
func ServerOptions(bindAddress string, secure, enableHTTP2 bool) metricsserver.Options {
	opts := metricsserver.Options{BindAddress: bindAddress, SecureServing: secure}
	if !enableHTTP2 {
		opts.TLSOpts = append(opts.TLSOpts, func(c *tls.Config) { c.NextProtos = []string{"http/1.1"} })
	}
	if secure {
		opts.FilterProvider = AuthorizedScrapes
	}
	return opts
}
