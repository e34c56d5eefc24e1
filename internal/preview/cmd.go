package preview

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
	"github.com/service-router/service-router-operator/internal/guard"
	"github.com/service-router/service-router-operator/internal/plan"
	"github.com/service-router/service-router-operator/internal/scheme"
)

// ExitTooManyDeletions is the exit code of `plan --max-deletions N` when more DNS names would
// leave their zones (errors exit with 1).
const ExitTooManyDeletions = 2

// ExitRefused is the exit code of plan when the API server would refuse a manifest (or, with
// --delete, find no object for it): a GitOps gate tells a wrong pull request (3) from a broken
// pipeline (1).
const ExitRefused = 3

// TooManyDeletionsError is returned by plan when --max-deletions is exceeded.
type TooManyDeletionsError struct{ Removed, Max int }

func (e *TooManyDeletionsError) Error() string {
	return fmt.Sprintf("%d DNS name(s) would leave their zones, more than --max-deletions=%d", e.Removed, e.Max)
}

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

type planOptions struct {
	files        []string
	delete       bool
	output       string
	maxDeletions int
	settings     Settings
}

func newPlanCommand(kube *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := planOptions{settings: DefaultSettings}
	cmd := &cobra.Command{
		Use:   "plan -f FILENAME [--delete] [-o table|json] [--max-deletions N]",
		Short: "Show what applying (or deleting) manifests would change, per DNS zone",
		Long: `plan reads the objects the operator reads, overlays the given manifests as kubectl apply
(or, with --delete, kubectl delete) would, runs the operator's own planning code on the result,
and prints per zone (per ExternalDNS controller) the DNS records that would be created,
retargeted and deleted, the ServiceRoutes whose Ready or Published state would change and why,
the Istio hosts added and removed, and whether the mass-deletion guard would hold the change.

Manifests the API server would refuse (checked against the CRDs the cluster serves), and with
--delete objects that do not exist, are reported with the API server's message, and nothing is
predicted (exit code 3).

Nothing is written. The operator's flags that change its decisions (the guard's, the Istio
Gateway's byte budget) can be given here when the operator runs with other values.`,
		Example: `  # What does this pull request change in DNS?
  kubectl router plan -f deploy/

  # Gate a GitOps pull request: fail when any DNS name would leave a zone
  kubectl router plan -f deploy/ --max-deletions 0

  # What would deleting a DNSPolicy do?
  kubectl router plan --delete -f policy.yaml -n myapp

  # For machines
  kubectl router plan -f route.yaml -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if len(o.files) == 0 {
				return errors.New("give the manifests with -f FILENAME (a file, a directory or - for stdin)")
			}
			if o.output != "table" && o.output != "json" {
				return fmt.Errorf("unknown output %q: use table or json", o.output)
			}
			c, namespace, err := connect(kube)
			if err != nil {
				return err
			}
			return runPlan(cmd.Context(), c, namespace, o, streams)
		},
	}
	f := cmd.Flags()
	f.StringSliceVarP(&o.files, "filename", "f", nil, "manifests to overlay: files, directories (their .yaml, .yml and .json files) or - for stdin")
	f.BoolVar(&o.delete, "delete", false, "preview deleting the manifests' objects instead of applying them")
	f.StringVarP(&o.output, "output", "o", "table", "output format: table or json")
	f.IntVar(&o.maxDeletions, "max-deletions", -1, fmt.Sprintf("exit with code %d when more DNS names than this would leave their zones (-1: no limit)", ExitTooManyDeletions))
	f.IntVar(&o.settings.HostBudget, "istio-gateway-max-bytes", plan.DefaultIstioGatewayBudget, "the operator's --istio-gateway-max-bytes")
	f.Float64Var(&o.settings.Guard.Share, "deletion-guard-share", guard.DefaultSettings.Share, "the operator's --deletion-guard-share")
	f.IntVar(&o.settings.Guard.Minimum, "deletion-guard-minimum", guard.DefaultSettings.Minimum, "the operator's --deletion-guard-minimum")
	f.DurationVar(&o.settings.Guard.Grace, "deletion-guard-grace", guard.DefaultSettings.Grace, "the operator's --deletion-guard-grace")
	_ = cmd.MarkFlagFilename("filename", "yaml", "yml", "json")
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions([]string{"table", "json"}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
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

func runPlan(ctx context.Context, c client.Reader, namespace string, o planOptions, streams genericiooptions.IOStreams) error {
	objs, err := ReadManifests(o.files, streams.In)
	if err != nil {
		return err
	}
	r, err := PlanFor(ctx, c, objs, o.delete, namespace, o.settings)
	if err != nil {
		return err
	}
	if o.output == "json" {
		err = WriteJSON(streams.Out, r)
	} else {
		err = WriteTable(streams.Out, r)
	}
	if err != nil {
		return err
	}
	if o.maxDeletions >= 0 && r.RecordsRemoved > o.maxDeletions {
		return &TooManyDeletionsError{Removed: r.RecordsRemoved, Max: o.maxDeletions}
	}
	return nil
}

func newStatusCommand(kube *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	var output string
	budget := plan.DefaultIstioGatewayBudget
	cmd := &cobra.Command{
		Use:   "status [HOSTNAME | TARGET HOSTNAME | ROUTE | NAMESPACE/ROUTE]",
		Short: "Show one hostname's whole path, or a summary of the cluster",
		Long: `status with a hostname or a ServiceRoute shows its whole path in one screen: the route, the
DNSPolicy in force, every zone with its ExternalDNS controller, DNSEndpoint, whether ExternalDNS
processed it, what verification found and answered, the gateway target and its address records,
and the first thing that is wrong, with the condition reason and a link to the guide. A gateway
target hostname ({cluster}-{region}-{postfix}.{domain}) shows its address record in every zone.

Without an argument it summarises the cluster: routes by state, zones by verification state,
deletions held by the mass-deletion guard, and each Gateway's host budget.`,
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
			w, err := Load(cmd.Context(), c)
			if err != nil {
				return err
			}
			if len(args) == 0 {
				s := SummaryOf(w, budget)
				if output == "json" {
					return writeJSON(streams.Out, s)
				}
				return WriteSummary(streams.Out, s)
			}
			if gateways := FindTarget(w, args[0]); len(gateways) > 0 {
				p := TargetPathOf(w, gateways)
				if output == "json" {
					return writeJSON(streams.Out, p)
				}
				return WriteTargetPath(streams.Out, p)
			}
			r, err := FindRoute(w, args[0], namespace)
			if err != nil {
				return err
			}
			p := PathOf(w, r)
			if output == "json" {
				return writeJSON(streams.Out, p)
			}
			return WritePath(streams.Out, p)
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
	cmd.Flags().IntVar(&budget, "istio-gateway-max-bytes", plan.DefaultIstioGatewayBudget, "the operator's --istio-gateway-max-bytes")
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions([]string{"table", "json"}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}
