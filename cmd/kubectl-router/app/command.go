// Package app is the kubectl-router command line (main in cmd/kubectl-router; test/integration
// runs it in-process as a user would): `plan` prints preview's prediction, `status` diagnosis's
// paths and summary, with kubectl's connection flags. The commands only read.
package app

import (
	"encoding/json"
	"errors"
	"io"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/service-router/service-router-operator/internal/manifestcheck"
	"github.com/service-router/service-router-operator/internal/scheme"
)

// NewCommand is the kubectl-router command: plan, status and completion, with kubectl's
// connection flags (--kubeconfig, --context, --namespace, ...; KUBECONFIG as kubectl reads it).
func NewCommand(streams genericiooptions.IOStreams) *cobra.Command {
	kube := genericclioptions.NewConfigFlags(true)
	root := &cobra.Command{
		Use:   "kubectl-router",
		Short: "See what the Service Router Operator will do, and why a hostname is (not) published",
		Long: `kubectl router runs the Service Router Operator's own decisions on your cluster's objects.

  plan    what applying (or deleting) manifests changes, per DNS zone, before you apply them
  status  one hostname's or route's whole path, or a summary of the cluster

It only reads (get and list: bind the ClusterRole service-router-plan-reader) and never writes.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Annotations:   map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl router"},
	}
	kube.AddFlags(root.PersistentFlags())
	root.SetIn(streams.In)
	root.SetOut(streams.Out)
	root.SetErr(streams.ErrOut)
	root.AddCommand(newPlanCommand(kube, streams), newStatusCommand(kube, streams))
	return root
}

// connect makes a read client and the default namespace from kubectl's flags.
func connect(kube *genericclioptions.ConfigFlags) (client.Reader, string, error) {
	cfg, err := kube.ToRESTConfig()
	if err != nil {
		return nil, "", err
	}
	namespace, _, err := kube.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return nil, "", err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme.New()})
	if err != nil {
		return nil, "", err
	}
	return c, namespace, nil
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// ExitCode is the plugin's exit code for what a command returned: 0, ExitTooManyDeletions,
// ExitRefused, or 1 for any other error.
func ExitCode(err error) int {
	var tooMany *TooManyDeletionsError
	var refused *manifestcheck.RefusedError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &tooMany):
		return ExitTooManyDeletions
	case errors.As(err, &refused):
		return ExitRefused
	}
	return 1
}
