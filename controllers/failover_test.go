package controllers

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	clusterv1alpha1 "github.com/service-router/service-router-operator/apis/cluster/v1alpha1"
	"github.com/service-router/service-router-operator/internal/failover"
)

// A new leader says nothing of the regions until its first round has judged them, so that the
// status keeps what an earlier leader wrote; without zones with failover settings it says, once,
// that there is nothing to report.
func TestFailover_RegionsUnknownUntilJudged(t *testing.T) {
	f := newFailover(nil, nil)
	_, known := f.Regions()
	assert.False(t, known, "before the first round")

	now := time.Unix(1000, 0)
	judged := map[string]failover.Judgement{"neu": {State: failover.Serving}, "weu": {State: failover.Lost, Reason: "HeartbeatStale"}}
	assert.True(t, f.remember(now, "neu", judged, nil, nil, &clusterv1alpha1.DNSConfiguration{}), "the first judgement is a change")
	regions, known := f.Regions()
	assert.True(t, known)
	assert.Equal(t, []clusterv1alpha1.RegionFailoverStatus{{Region: "weu", State: "Lost", Reason: "HeartbeatStale", Since: regions[0].Since}}, regions)
	assert.False(t, f.remember(now.Add(time.Second), "neu", judged, nil, nil, &clusterv1alpha1.DNSConfiguration{}), "the same judgement again changes nothing")

	g := newFailover(nil, nil)
	g.forget()
	regions, known = g.Regions()
	assert.True(t, known, "no zone has failover settings: a definite answer")
	assert.Empty(t, regions)
	select {
	case <-g.changes:
	default:
		t.Error("forgetting must wake the DNSConfiguration reconcile once, to clear an earlier leader's status")
	}
	g.forget()
	select {
	case <-g.changes:
		t.Error("forgetting again changes nothing")
	default:
	}
}
