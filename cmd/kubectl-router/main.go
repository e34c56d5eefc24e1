// Command kubectl-router is the Service Router Operator's kubectl plugin: `kubectl router plan`
// previews what manifests change in DNS before they are applied, `kubectl router status` shows
// one hostname's whole path. Installed on the PATH (or through krew) it runs as `kubectl router`.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/service-router/service-router-operator/cmd/kubectl-router/app"
)

// version is set at build time (make plugin, the release archives).
var version = "dev"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	cmd := app.NewCommand(genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr})
	cmd.Version = version
	if err := cmd.ExecuteContext(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(app.ExitCode(err))
	}
}
