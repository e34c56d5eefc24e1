package integration

// Set OPERATOR_LOG=1 to see the operator's logs while debugging a test.

import (
	"os"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
)

func init() {
	if os.Getenv("OPERATOR_LOG") != "" {
		ctrl.SetLogger(zap.New(zap.UseDevMode(true)))
	}
}
