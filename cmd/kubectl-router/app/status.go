package app

import (
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
	"github.com/service-router/service-router-operator/internal/decide"
	"github.com/service-router/service-router-operator/internal/diagnosis"
	"github.com/service-router/service-router-operator/internal/routerplan"
)

func newStatusCommand(kube *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	var output string
	budget := decide.DefaultIstioGatewayBudget
	cmd := &cobra.Command{
		Use:   "status [HOSTNAME | TARGET HOSTNAME | ROUTE | NAMESPACE/ROUTE]",
		Short: "Show one hostname's whole path, or a summary of the cluster",
		Long: `status with a hostname or a ServiceRoute shows its whole path in one screen: the route, the
DNSPolicy in force, every zone with its ExternalDNS controller, DNSEndpoint, whether ExternalDNS
processed it, what verification found and answered, the gateway target and its address records,
and the first thing that is wrong, with the condition reason and a link to the guide. A gateway
target hostname ({cluster}-{region}-{postfix}.{domain}) shows its address record in every zone.

Without an argument it summarises the cluster: routes by state, zones by verification state
(and, for zones read through Azure Resource Manager, the operator's reads and writes a minute,
429s and the quota left, with the OverRequestBudget condition), deletions held by the
mass-deletion guard, and each Gateway's host budget.`,
		Example: `  # Why does this hostname not resolve?
  kubectl router status api-ns-p-prod-shop.example.com

  # A gateway target hostname: its address records in every zone
  kubectl router status aks01-weu-internal.example.com

  # A route by name (in the current namespace, or -n)
  kubectl router status api-route -n shop

  # The cluster at a glance
  kubectl router status`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if output != "table" && output != "json" {
				return fmt.Errorf("unknown output %q: use table or json", output)
			}
			c, namespace, err := connect(kube)
			if err != nil {
				return err
			}
			w, err := routerplan.Load(cmd.Context(), c)
			if err != nil {
				return err
			}
			if len(args) == 0 {
				s := diagnosis.SummaryOf(w, budget)
				if output == "json" {
					return writeJSON(streams.Out, s)
				}
				return diagnosis.WriteSummary(streams.Out, s)
			}
			if gateways := diagnosis.FindTarget(w, args[0]); len(gateways) > 0 {
				p := diagnosis.TargetPathOf(w, gateways)
				if output == "json" {
					return writeJSON(streams.Out, p)
				}
				return diagnosis.WriteTargetPath(streams.Out, p)
			}
			r, err := diagnosis.FindRoute(w, args[0], namespace)
			if err != nil {
				return err
			}
			p := diagnosis.PathOf(w, r)
			if output == "json" {
				return writeJSON(streams.Out, p)
			}
			return diagnosis.WritePath(streams.Out, p)
		},
	}
	// Completes the ServiceRoutes of the namespace and their hostnames.
	cmd.ValidArgsFunction = func(cmd *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		c, namespace, err := connect(kube)
		if err != nil {
			return nil, cobra.ShellCompDirectiveError
		}
		routes := &routingv1alpha1.ServiceRouteList{}
		if err := c.List(cmd.Context(), routes, client.InNamespace(namespace)); err != nil {
			return nil, cobra.ShellCompDirectiveError
		}
		var out []string
		for _, r := range routes.Items {
			out = append(out, r.Name)
			if r.Status.Hostname != "" {
				out = append(out, r.Status.Hostname)
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
	cmd.Flags().StringVarP(&output, "output", "o", "table", "output format: table or json")
	cmd.Flags().IntVar(&budget, "istio-gateway-max-bytes", decide.DefaultIstioGatewayBudget, "the operator's --istio-gateway-max-bytes")
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions([]string{"table", "json"}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}
