// Command kubectl-router is the Service Router Operator's kubectl plugin: `kubectl router plan`
// previews what manifests change in DNS before they are applied, `kubectl router status` shows
// one hostname's whole path. Installed on the PATH (or through krew) it runs as `kubectl router`.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/service-router/service-router-operator/internal/admission"
	"github.com/service-router/service-router-operator/internal/preview"
)

// version is set at build time (make plugin, the release archives).
var version = "dev"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	cmd := preview.NewCommand(genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr})
	cmd.Version = version
	if err := cmd.ExecuteContext(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		var tooMany *preview.TooManyDeletionsError
		if errors.As(err, &tooMany) {
			os.Exit(preview.ExitTooManyDeletions)
		}
		var refused *admission.RefusedError
		if errors.As(err, &refused) {
			os.Exit(preview.ExitRefused)
		}
		os.Exit(1)
	}
}
