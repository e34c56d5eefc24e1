package decide

import (
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestProgressOf_WaitsForWhatAppearsStallsOnWhatAPersonMustChange(t *testing.T) {
	tests := []struct {
		name    string
		outcome Outcome
		err     error
		want    Progress
	}{
		{"ready", Outcome{Ready: true, Reason: "ReconciliationSucceeded"}, nil, Done},
		{"a DNSPolicy Inactive here is Ready", Outcome{Ready: true, Reason: "PolicyInactive"}, nil, Done},
		{"a route not published here on purpose", Outcome{Reason: "DNSPolicyInactive"}, nil, Done},
		{"a Gateway applied after its route", Outcome{Phase: "Failed", Reason: "GatewayNotFound"}, nil, Progressing},
		{"no DNSPolicy yet", Outcome{Phase: "Pending", Reason: "DNSPolicyNotFound"}, nil, Progressing},
		{"a load balancer without an address yet", Outcome{Phase: "Pending", Reason: "LoadBalancerAddressPending"}, nil, Progressing},
		{"ExternalDNS's CRD not installed yet", Outcome{Phase: "Active", Reason: "ExternalDNSNotInstalled"}, nil, Progressing},
		{"an older route holds the hostname", Outcome{Phase: "Failed", Reason: "HostnameConflict"}, nil, Stalled},
		{"a foreign DNSEndpoint holds the name", Outcome{Phase: "Failed", Reason: "OwnershipConflict"}, nil, Stalled},
		{"a ClusterIdentity whose region has no controller (phase Active)", Outcome{Phase: "Active", Reason: "RegionWithoutController"}, nil, Stalled},
		{"the Gateway is full", Outcome{Phase: "Pending", Reason: "GatewayHostLimit"}, nil, Stalled},
		{"a reason added later is waited for, never failed", Outcome{Phase: "Pending", Reason: "SomethingNew"}, nil, Progressing},
		{"a failed reconcile is retried", Outcome{Ready: true, Reason: "ReconciliationSucceeded"}, errors.New("timeout"), Progressing},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, ProgressOf(tt.outcome, tt.err))
		})
	}
}

// Every reason the API declares is placed on purpose: a Ready=True reason, a reason of another
// condition, waited for (progressingReasons), stalled or settled. A reason added to the API fails
// here until someone decides which.
func TestProgressOf_EveryReasonOfTheAPIIsDecided(t *testing.T) {
	readyReasons := []string{"PolicyActive", "PolicyInactive", "ReconciliationSucceeded", "GatewayCreated", "NoServiceRoutes",
		"ValidationSucceeded", "ConfigurationValid"}
	progressingReasons := []string{"ClusterIdentityNotFound", "DNSConfigurationNotFound", "ExternalDNSNotInstalled", "ReconcileError",
		"DNSPolicyNotFound", "GatewayNotFound", "LoadBalancerNotFound", "LoadBalancerAddressPending", "IstioNotInstalled", "GatewayAPINotInstalled"}
	otherConditions := []string{"StandsIn", "RegionsNotAdopted", "NoFailoverZones", // StandIn
		"ZonesPublished", "ZonesPending", "ZonesDrifted", "ZonesUnreachable", "VerificationNotConfigured", "NothingPublished", // Published
		"MassDeletionHeld", "NoDeletionsHeld", "RequestBudgetExceeded", "WithinRequestBudget", "DrainInProgress", "DrainComplete", "NamesReturning"}
	placed := map[string]string{}
	for _, r := range readyReasons {
		placed[r] = "ready"
		assert.Equal(t, Done, ProgressOf(Outcome{Ready: true, Reason: r}, nil), r)
	}
	for _, r := range progressingReasons {
		placed[r] = "progressing"
		assert.Equal(t, Progressing, ProgressOf(Outcome{Reason: r}, nil), r)
	}
	for _, r := range otherConditions {
		placed[r] = "another condition's"
	}
	for r := range stalledReasons {
		placed[r] = "stalled"
	}
	for r := range settledReasons {
		placed[r] = "settled"
	}
	reasons := apiReasons(t)
	require.NotEmpty(t, reasons)
	for _, r := range reasons {
		assert.Contains(t, placed, r, "reason %s of the API is neither Ready, progressing, stalled, settled nor another condition's: decide", r)
	}
}

// apiReasons returns the values of every Reason* constant of the two API packages.
func apiReasons(t *testing.T) []string {
	var reasons []string
	for _, dir := range []string{"cluster", "routing"} {
		files, err := filepath.Glob(filepath.Join("..", "..", "apis", dir, "v1alpha1", "*.go"))
		require.NoError(t, err)
		for _, f := range files {
			file, err := parser.ParseFile(token.NewFileSet(), f, nil, 0)
			require.NoError(t, err)
			ast.Inspect(file, func(n ast.Node) bool {
				spec, ok := n.(*ast.ValueSpec)
				if !ok {
					return true
				}
				for i, name := range spec.Names {
					if strings.HasPrefix(name.Name, "Reason") && i < len(spec.Values) {
						if lit, ok := spec.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
							v, err := strconv.Unquote(lit.Value)
							require.NoError(t, err)
							reasons = append(reasons, v)
						}
					}
				}
				return true
			})
		}
	}
	return reasons
}
