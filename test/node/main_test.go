//go:build node

// Package node is the node suite: the operator as it ships (its image, the chart's and the CSV's
// Deployments) running as pods under a real kubelet, in a whole cluster the suite starts inside a
// network namespace of its own (test/e2e/framework: NodeWorld). It follows the install journeys
// of docs/INSTALLATION.md with their own commands and files.
package node

import (
	"os"
	"testing"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/service-router/service-router-operator/test/e2e/framework"
)

func TestMain(m *testing.M) {
	// envtest's CRD installer logs through controller-runtime; the suite reports what it needs.
	ctrllog.SetLogger(logr.Discard())
	os.Exit(framework.RunInNetworkNamespace(m,
		framework.FetchPrometheusOperatorModule,
		// The upgrade tests build the 0.1.0 operator.
		func() error { return framework.FetchModulesOf(release010) }))
}
