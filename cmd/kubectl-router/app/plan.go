package app

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/service-router/service-router-operator/internal/decide"
	"github.com/service-router/service-router-operator/internal/diagnosis"
	"github.com/service-router/service-router-operator/internal/guard"
	"github.com/service-router/service-router-operator/internal/routerplan"
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

type planOptions struct {
	files        []string
	regionLost   string
	delete       bool
	output       string
	maxDeletions int
	settings     routerplan.Settings
}

func newPlanCommand(kube *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := planOptions{settings: routerplan.DefaultSettings}
	cmd := &cobra.Command{
		Use:   "plan (-f FILENAME [--delete] [--max-deletions N] | --region-lost REGION) [-o table|json]",
		Short: "Show what applying (or deleting) manifests would change, per DNS zone",
		Long: `plan reads the objects the operator reads, overlays the given manifests as kubectl apply
(or, with --delete, kubectl delete) would, runs the operator's own planning code on the result,
and prints per zone (per ExternalDNS controller) the DNS records that would be created,
retargeted and deleted, the ServiceRoutes whose Ready or Published state would change and why,
the Istio hosts added and removed, and whether the mass-deletion guard would hold the change.

Manifests the API server would refuse (checked against the CRDs the cluster serves), and with
--delete objects that do not exist, are reported with the API server's message, and nothing is
predicted (exit code 3).

With --region-lost REGION instead of manifests, plan previews regional failover: for each zone
with failover settings, which of this cluster's names it would take over if it judged the region
lost now (where the lost region holds them, published from the same namespace), which would go to another stand-in first in their
policy's order, and which would not move.

Nothing is written. The operator's flags that change its decisions (the guard's, the Istio
Gateway's byte budget) can be given here when the operator runs with other values.`,
		Example: `  # What does this pull request change in DNS?
  kubectl router plan -f deploy/

  # Gate a GitOps pull request: fail when any DNS name would leave a zone
  kubectl router plan -f deploy/ --max-deletions 0

  # What would deleting a DNSPolicy do?
  kubectl router plan --delete -f policy.yaml -n myapp

  # For machines
  kubectl router plan -f route.yaml -o json

  # What would this cluster take over if region weu were lost?
  kubectl router plan --region-lost weu`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.output != "table" && o.output != "json" {
				return fmt.Errorf("unknown output %q: use table or json", o.output)
			}
			if o.regionLost != "" {
				if len(o.files) > 0 || o.delete {
					return errors.New("--region-lost previews a region's loss: give it without -f and --delete")
				}
				c, _, err := connect(kube)
				if err != nil {
					return err
				}
				return runFailoverPlan(cmd.Context(), c, o, streams)
			}
			if len(o.files) == 0 {
				return errors.New("give the manifests with -f FILENAME (a file, a directory or - for stdin), or --region-lost REGION")
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
	f.StringVar(&o.regionLost, "region-lost", "", "preview regional failover: what this cluster would take over if it judged this region lost")
	f.BoolVar(&o.delete, "delete", false, "preview deleting the manifests' objects instead of applying them")
	f.StringVarP(&o.output, "output", "o", "table", "output format: table or json")
	f.IntVar(&o.maxDeletions, "max-deletions", -1, fmt.Sprintf("exit with code %d when more DNS names than this would leave their zones (-1: no limit)", ExitTooManyDeletions))
	f.IntVar(&o.settings.HostBudget, "istio-gateway-max-bytes", decide.DefaultIstioGatewayBudget, "the operator's --istio-gateway-max-bytes")
	f.Float64Var(&o.settings.Guard.Share, "deletion-guard-share", guard.DefaultSettings.Share, "the operator's --deletion-guard-share")
	f.IntVar(&o.settings.Guard.Minimum, "deletion-guard-minimum", guard.DefaultSettings.Minimum, "the operator's --deletion-guard-minimum")
	f.DurationVar(&o.settings.Guard.Grace, "deletion-guard-grace", guard.DefaultSettings.Grace, "the operator's --deletion-guard-grace")
	_ = cmd.MarkFlagFilename("filename", "yaml", "yml", "json")
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions([]string{"table", "json"}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

func runPlan(ctx context.Context, c client.Reader, namespace string, o planOptions, streams genericiooptions.IOStreams) error {
	objs, err := routerplan.ReadManifests(o.files, streams.In)
	if err != nil {
		return err
	}
	r, err := routerplan.PlanFor(ctx, c, objs, o.delete, namespace, o.settings)
	if err != nil {
		return err
	}
	if o.output == "json" {
		err = writeJSON(streams.Out, r)
	} else {
		err = routerplan.WriteTable(streams.Out, r)
	}
	if err != nil {
		return err
	}
	if o.maxDeletions >= 0 && r.RecordsRemoved > o.maxDeletions {
		return &TooManyDeletionsError{Removed: r.RecordsRemoved, Max: o.maxDeletions}
	}
	return nil
}

func runFailoverPlan(ctx context.Context, c client.Reader, o planOptions, streams genericiooptions.IOStreams) error {
	w, err := routerplan.Load(ctx, c)
	if err != nil {
		return err
	}
	e, err := diagnosis.FailoverEffectOf(w, o.regionLost)
	if err != nil {
		return err
	}
	if o.output == "json" {
		return writeJSON(streams.Out, e)
	}
	return diagnosis.WriteFailoverEffect(streams.Out, e)
}
