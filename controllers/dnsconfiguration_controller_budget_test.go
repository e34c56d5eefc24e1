package controllers

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	clusterv1alpha1 "github.com/service-router/service-router-operator/apis/cluster/v1alpha1"
	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
	"github.com/service-router/service-router-operator/internal/azureprivatedns"
	"github.com/service-router/service-router-operator/internal/budget"
	"github.com/service-router/service-router-operator/internal/decide"
	"github.com/service-router/service-router-operator/internal/prober"
	operatorscheme "github.com/service-router/service-router-operator/internal/scheme"
	"github.com/service-router/service-router-operator/internal/verify"
)

// The budget's model takes the defaults verification uses, without importing them from here:
// this keeps the two in step (failover's: internal/failoverloop's TestBudget_DefaultsAreTheLoops).
func TestBudget_DefaultsAreVerifications(t *testing.T) {
	assert.Equal(t, prober.DefaultListInterval, budget.DefaultInterval)
	assert.Equal(t, azureprivatedns.DefaultPageSize, budget.DefaultPageSize)
	assert.Equal(t, azureprivatedns.DefaultPageSize, budget.WholePageSize)
	assert.Equal(t, 5*time.Minute, verify.DefaultSettings.SettledInterval, "verification lists a settled zone every 5 minutes (budget's V)")
}

// azureConfiguration is dns-config with one zone read through Resource Manager (with failover
// settings) and one asked by DNS.
func azureConfiguration() *clusterv1alpha1.DNSConfiguration {
	return &clusterv1alpha1.DNSConfiguration{ObjectMeta: metav1.ObjectMeta{Name: clusterv1alpha1.DNSConfigurationName, Generation: 3, UID: "cfg"},
		Spec: clusterv1alpha1.DNSConfigurationSpec{ExternalDNSControllers: []clusterv1alpha1.ExternalDNSController{
			{Name: "external-dns-weu", Region: "weu", Failover: &clusterv1alpha1.ZoneFailover{OwnerID: "weu"},
				Verification: &clusterv1alpha1.ZoneVerification{AzurePrivateDNS: &clusterv1alpha1.AzurePrivateDNSVerification{
					SubscriptionID: "00000000-0000-0000-0000-00000000000A", ResourceGroup: "RG", ZoneName: "example.internal"}}},
			{Name: "external-dns-lab", Region: "lab", Verification: &clusterv1alpha1.ZoneVerification{Nameservers: []string{"10.0.0.53:53"}}},
		}}}
}

// fixedCounts counts every zone's routes as published.
type fixedCounts int

func (n fixedCounts) Zone(string) verify.ZoneCounts {
	return verify.ZoneCounts{routingv1alpha1.ZonePublished: int(n)}
}

// storedStatus writes status patches into the fake API server, as the real writer does.
type storedStatus struct {
	objectWriter
	c       client.Client
	patches int
}

func (w *storedStatus) PatchStatus(ctx context.Context, obj client.Object, _, _ any, _ string) (string, error) {
	w.patches++
	if err := w.c.Status().Update(ctx, obj.DeepCopyObject().(client.Object)); err != nil {
		return "", err
	}
	return obj.GetResourceVersion(), nil
}

// Reconciled every 30 s while zones are verified, the status carries a zone's requests once a
// window (5 minutes) and the OverRequestBudget condition, and is written for them at most once a
// window: at rest, no other write.
func TestDNSConfiguration_RequestsAreWrittenOnceAWindow(t *testing.T) {
	c := fake.NewClientBuilder().WithScheme(operatorscheme.New()).WithObjects(azureConfiguration()).
		WithStatusSubresource(&clusterv1alpha1.DNSConfiguration{}).Build()
	writer := &storedStatus{c: c}
	start := time.Date(2026, 11, 27, 3, 0, 0, 0, time.UTC)
	now := start
	var usage azureprivatedns.ZoneUsage
	var asked []azureprivatedns.Zone
	r := &DNSConfigurationReconciler{base: base{Client: c, Writer: writer, Recorder: &eventLog{}, Cached: cacheOver(c)},
		APIs: &OptionalAPIs{served: map[schema.GroupVersionKind]bool{dnsEndpointKind: true}}, Zones: fixedCounts(3000), VerificationRefresh: 30 * time.Second}
	r.requests.now = func() time.Time { return now }
	r.requests.usage = func(z azureprivatedns.Zone) azureprivatedns.ZoneUsage { asked = append(asked, z); return usage }
	r.requests.quota = func(azureprivatedns.Zone) budget.Quota {
		return budget.Quota{Reads: 247, Writes: 199, ReadsSeen: now.Add(-2 * time.Second), WritesSeen: now.Add(-9 * time.Second)}
	}
	reconcile := func() *clusterv1alpha1.DNSConfiguration {
		t.Helper()
		result, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKey{Name: clusterv1alpha1.DNSConfigurationName}})
		require.NoError(t, err)
		assert.Equal(t, 30*time.Second, result.RequeueAfter)
		cfg := &clusterv1alpha1.DNSConfiguration{}
		require.NoError(t, c.Get(context.Background(), client.ObjectKey{Name: clusterv1alpha1.DNSConfigurationName}, cfg))
		return cfg
	}

	cfg := reconcile()
	assert.Equal(t, 1, writer.patches, "the first status")
	require.Len(t, cfg.Status.Verification, 2)
	assert.Nil(t, cfg.Status.Verification[0].Requests, "no window has passed yet")
	assert.Nil(t, cfg.Status.Verification[1].Requests, "a zone asked by DNS has no requests")
	assert.Equal(t, azureprivatedns.Zone{SubscriptionID: "00000000-0000-0000-0000-00000000000A", ResourceGroup: "RG", ZoneName: "example.internal",
		PageSize: azureprivatedns.DefaultPageSize, Timeout: azureprivatedns.DefaultTimeout}, asked[0], "the zone as verification and failover read it")
	budgetCondition := meta.FindStatusCondition(cfg.Status.Conditions, clusterv1alpha1.ConditionOverRequestBudget)
	require.NotNil(t, budgetCondition)
	assert.Equal(t, metav1.ConditionFalse, budgetCondition.Status)
	assert.Equal(t, int64(3), budgetCondition.ObservedGeneration)
	assert.Contains(t, budgetCondition.Message, "subscription 00000000-0000-0000-0000-00000000000a: 3.0 (13.8 while records change) reads and 6.0 writes in 1 zone(s)",
		"3,000 routes: 6,000 record sets")
	assert.Equal(t, clusterv1alpha1.ConditionReady, cfg.Status.Conditions[0].Type, "Ready stays first")
	assert.Equal(t, int64(3), cfg.Status.ObservedGeneration)

	// At rest: 5 reads and 6 writes a minute (25 and 30 in 5 minutes), and a 429 counted as a read
	// that reached Resource Manager: 26 reads.
	step := func() {
		now = now.Add(30 * time.Second)
		usage.Reads.Answered += 2
		if now.Sub(start)%time.Minute == 0 {
			usage.Reads.Answered++
		}
		usage.Writes.Answered += 3
	}
	for range 9 {
		step()
		reconcile()
	}
	assert.Equal(t, 1, writer.patches, "4.5 minutes at rest: nothing new to write")
	step()
	usage.Reads.Throttled++
	cfg = reconcile()
	assert.Equal(t, 2, writer.patches, "the window passed: one write")
	assert.Equal(t, &clusterv1alpha1.ZoneRequests{ReadsPerMinute: "5.2", WritesPerMinute: "6.0", Throttled: 1,
		RemainingReads: ptrTo[int32](247), RemainingWrites: ptrTo[int32](199), RemainingSeen: ptrTo(metav1.NewTime(now.Add(-2 * time.Second))),
		Window: metav1.Duration{Duration: 5 * time.Minute}, MeasuredAt: metav1.NewTime(now)}, inUTC(cfg.Status.Verification[0].Requests))
	for range 9 {
		step()
		reconcile()
	}
	assert.Equal(t, 2, writer.patches, "the figure is carried between windows")
	assert.Equal(t, "5.2", cfg.Status.Verification[0].Requests.ReadsPerMinute)

	// A restarted operator starts counting again, keeping the status's figure until its first
	// window has passed.
	r.requests.samples, r.requests.figures = nil, nil
	usage = azureprivatedns.ZoneUsage{}
	step()
	cfg = reconcile()
	assert.Equal(t, 2, writer.patches)
	assert.Equal(t, "5.2", cfg.Status.Verification[0].Requests.ReadsPerMinute)
}

func ptrTo[T any](v T) *T { return &v }

// inUTC is r with its times in UTC, as the test writes them (the API's come back in Local).
func inUTC(r *clusterv1alpha1.ZoneRequests) *clusterv1alpha1.ZoneRequests {
	r = r.DeepCopy()
	r.MeasuredAt = metav1.NewTime(r.MeasuredAt.UTC())
	if r.RemainingSeen != nil {
		r.RemainingSeen = ptrTo(metav1.NewTime(r.RemainingSeen.UTC()))
	}
	return r
}

// A figure whose status write failed is written by the next reconcile, not lost for a window; a
// zone no longer read through Resource Manager loses its block and its samples.
func TestDNSConfiguration_RequestsSurviveAFailedWrite(t *testing.T) {
	start := time.Date(2026, 11, 27, 3, 0, 0, 0, time.UTC)
	now := start
	r := &DNSConfigurationReconciler{}
	r.requests.now = func() time.Time { return now }
	r.requests.usage = func(azureprivatedns.Zone) azureprivatedns.ZoneUsage {
		return azureprivatedns.ZoneUsage{Reads: azureprivatedns.Requests{Answered: int64(now.Sub(start) / time.Second)}}
	}
	r.requests.quota = func(azureprivatedns.Zone) budget.Quota { return budget.Quota{} }
	original := azureConfiguration()
	original.Status.Verification = []clusterv1alpha1.ZoneVerificationStatus{{Controller: "external-dns-weu"}, {Controller: "external-dns-lab"}}
	set := func(original *clusterv1alpha1.DNSConfiguration) *clusterv1alpha1.DNSConfiguration {
		cfg := original.DeepCopy()
		cfg.Status, _ = decide.DNSConfigurationStatus(decide.DNSConfigurationInputs{Configuration: original, Requests: r.requests.lastFigures(original)})
		return cfg
	}
	set(original)
	now = now.Add(budget.RateWindow)
	first := set(original).Status.Verification[0].Requests
	require.NotNil(t, first)
	assert.Equal(t, "60.0", first.ReadsPerMinute)
	now = now.Add(30 * time.Second) // the write failed; the status still has no figure
	assert.Equal(t, first, set(original).Status.Verification[0].Requests)

	gone := original.DeepCopy()
	gone.Spec.ExternalDNSControllers[0].Verification = &clusterv1alpha1.ZoneVerification{Nameservers: []string{"10.0.0.53:53"}}
	gone.Status.Verification[0].Requests = first
	assert.Nil(t, set(gone).Status.Verification[0].Requests)
	assert.Empty(t, r.requests.samples)
	assert.Empty(t, r.requests.figures)
}
