//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	clusterv1alpha1 "github.com/service-router/service-router-operator/apis/cluster/v1alpha1"
	"github.com/service-router/service-router-operator/internal/failover"
	"github.com/service-router/service-router-operator/test/azurestandin"
	"github.com/service-router/service-router-operator/test/e2e/framework"
)

// azureMoveZone is the weu zone in the Azure stand-in, the failover world's operators on the
// defaults (FAILOVER_SETTINGS=defaults) and publication verification at its default pace, and
// ExternalDNS as OPERATOR-GUIDE sizes it for two clusters writing a zone of 3,000 names
// (azure-private-dns, --interval=2m, --events, so that a pass's mark makes it synchronise within
// seconds, and a client allowed the thousands of DNSEndpoints' status writes). At the weu example's
// --interval=1m, two instances' listings (61 pages each) exceed the zone's 100 lists a minute, and
// every operator listing is refused (429) in turn: the failback, which waits for the returning
// cluster's whole readings, then took minutes beyond failbackAfter. The zone is seeded with every
// limit off (ExternalDNS's first publication of 3,000 names is over 6,000 creates: 100 minutes at
// Private DNS's 60 a minute), and measured with every documented limit on: Resource Manager's
// buckets, the network provider's windows, Private DNS's per zone.
func azureMoveZone(tb testing.TB) moveZone {
	tb.Setenv("FAILOVER_SETTINGS", "defaults")
	z := startAzureExampleZone(tb, failoverController)
	z.az.SetLimits(azurestandin.Limits{})
	w := startFailoverWorld(tb, z.domain, func(m *failoverMember) (clusterv1alpha1.ExternalDNSController, framework.ExternalDNSOptions) {
		c, o := z.failoverZone(failoverController, m, z.file)
		v := *c.Verification.AzurePrivateDNS
		v.Interval = nil
		c.Verification = &clusterv1alpha1.ZoneVerification{AzurePrivateDNS: &v}
		o.Args = append(slices.DeleteFunc(o.Args, func(a string) bool { return strings.HasPrefix(a, "--interval=") }), "--interval=2m", "--events")
		o.ExtraArgs = append(o.ExtraArgs, "--kube-api-qps=50", "--kube-api-burst=100")
		return c, o
	})
	id := azurestandin.ZoneIDOf(z.sub, z.group, z.domain)
	return moveZone{w: w, diag: z.az.Diagnostics, timeout: 15 * time.Minute,
		records: func(context.Context) ([]framework.Record, error) {
			var out []framework.Record
			for key, values := range z.az.Records(z.sub, z.group, z.domain) {
				label, rtype, _ := strings.Cut(key, " ")
				name := label + "." + z.domain + "."
				if label == "@" {
					name = z.domain + "."
				}
				for _, v := range values {
					if rtype == "CNAME" && !strings.HasSuffix(v, ".") {
						v += "."
					}
					out = append(out, framework.Record{Name: name, Type: rtype, Data: v})
				}
			}
			return out, nil
		},
		limit: func() {
			z.az.SetLimits(azurestandin.DocumentedLimits)
			z.az.ResetUsage()
		},
		requests: func() (int, string) {
			t := z.az.Usage().ZoneOperations[id]
			return t.Writes().Admitted, fmt.Sprintf("(zone requests since the limits went on: %d creates, %d updates, %d deletes, %d gets, %d lists admitted; %d throttled, %d of them by the per-zone limits)",
				t.Create.Admitted, t.Update.Admitted, t.Delete.Admitted, t.Get.Admitted, t.List.Admitted,
				t.Writes().Throttled+t.Get.Throttled+t.List.Throttled, t.ZoneLimited)
		}}
}

// BenchmarkFailover_AzureMoveAtScale is the time and the record writes of a takeover in an Azure
// Private DNS zone holding 3,000 names in 30 policies (FAILOVER_AZURE_MOVE_NAMES: other sizes),
// every documented limit on, the defaults everywhere (azureMoveZone): from the judgement to every
// name answering the stand-in, and from the lost cluster's return to every name answering it again
// beyond failbackAfter, and from a drain asked for (and ended) to every name answering the stand-in
// (and aks01 again), against the goal of 60 s. The takeover rewrites each policy's
// intermediate's CNAME, which the operators write: a get and an update a policy, against the
// zone's 200 gets and 60 updates a minute.
func BenchmarkFailover_AzureMoveAtScale(b *testing.B) {
	const policies, goal = 30, time.Minute
	for _, n := range framework.EnvInts("FAILOVER_AZURE_MOVE_NAMES", 3000) {
		b.Run(fmt.Sprintf("names=%d", n), func(b *testing.B) {
			for range b.N {
				m := measureMoves(b, azureMoveZone(b), policies, n/policies, true)
				checkMoves(b, m)
				b.ReportMetric(float64(m.writes), "takeover-zone-writes")
				if m.moved > goal {
					b.Errorf("%d names in %d policies: every name answered the stand-in %s after the judgement, over the goal of %s (%d record writes in the zone) %s",
						m.names, policies, m.moved.Round(time.Second), goal, m.writes, m.requests)
				}
				// The failback waits failbackAfter (5 minutes by default) on purpose.
				if over := m.back - failover.DefaultSettings.FailbackAfter; over > goal {
					b.Errorf("%d names in %d policies: every name answered aks01 again %s after its return, %s beyond failbackAfter: over the goal of %s",
						m.names, policies, m.back.Round(time.Second), over.Round(time.Second), goal)
				}
				if m.drained > goal || m.undrained > goal {
					b.Errorf("%d names in %d policies: every name answered the stand-in %s after the drain was asked for, and aks01 again %s after it ended: over the goal of %s",
						m.names, policies, m.drained.Round(time.Second), m.undrained.Round(time.Second), goal)
				}
			}
		})
	}
}
