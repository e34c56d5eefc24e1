package guard

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

var t0 = time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)

var testSettings = Settings{Share: 0.25, Minimum: 3, Window: 30 * time.Second, Observe: 5 * time.Second, Grace: 2 * time.Minute}

func newGuard(total int) (*Guard, *int) {
	changes := 0
	return New(testSettings, func() int { return total }, func(bool) { changes++ }), &changes
}

func TestGuard_NilAndDisabledNeverHold(t *testing.T) {
	var g *Guard
	_, held := g.Hold("a", t0)
	assert.False(t, held)
	g.Forget("a")
	assert.Equal(t, State{}, g.State(t0))

	off := New(Settings{}, func() int { return 1 }, nil)
	_, held = off.Hold("a", t0)
	assert.False(t, held, "a zero grace disables the guard")
}

func TestGuard_SingleDeletionWaitsOnlyTheObserveDelay(t *testing.T) {
	g, changes := newGuard(100)
	until, held := g.Hold("ns/a", t0)
	assert.True(t, held)
	assert.Equal(t, t0.Add(5*time.Second), until)
	_, held = g.Hold("ns/a", t0.Add(2*time.Second))
	assert.True(t, held, "asked again before the delay: still waits")
	_, held = g.Hold("ns/a", t0.Add(5*time.Second))
	assert.False(t, held, "after the delay it goes")
	assert.Equal(t, 0, *changes)
	assert.False(t, g.State(t0).Tripped)
}

func TestGuard_MassDeletionWaitsTheGracePeriod(t *testing.T) {
	g, changes := newGuard(8) // 25% of 8 = 2 records; minimum 3
	for i := range 3 {
		g.Hold(fmt.Sprintf("ns/r%d", i), t0.Add(time.Duration(i)*time.Second))
	}
	st := g.State(t0)
	assert.True(t, st.Tripped, "3 of 8 records asked to go together")
	assert.Equal(t, 3, st.Held)
	assert.Equal(t, t0.Add(2*time.Second).Add(2*time.Minute), st.Until)
	assert.Equal(t, 1, *changes, "tripping is announced once")

	_, held := g.Hold("ns/r0", t0.Add(time.Minute))
	assert.True(t, held, "past the observe delay but within the grace period")
	until, held := g.Hold("ns/r0", t0.Add(2*time.Minute))
	assert.False(t, held, "grace period over: it goes, counted from the first request")
	assert.Equal(t, t0.Add(2*time.Minute), until)
}

func TestGuard_RevertingWithinTheGracePeriodCancelsAndSettles(t *testing.T) {
	g, changes := newGuard(8)
	for i := range 4 {
		g.Hold(fmt.Sprintf("ns/r%d", i), t0)
	}
	assert.True(t, g.State(t0).Tripped)
	for i := range 4 {
		g.Forget(fmt.Sprintf("ns/r%d", i))
	}
	assert.Equal(t, State{}, g.State(t0), "every record wanted again: nothing held")
	assert.Equal(t, 2, *changes, "tripped, then settled")

	// A later deletion asks afresh: the cancelled requests do not count.
	until, held := g.Hold("ns/r0", t0.Add(time.Minute))
	assert.True(t, held)
	assert.Equal(t, t0.Add(time.Minute+5*time.Second), until)
}

func TestGuard_BelowTheShareOrMinimumDoesNotTrip(t *testing.T) {
	g, _ := newGuard(100) // 25% of 100 = 25
	for i := range 20 {
		g.Hold(fmt.Sprintf("ns/r%d", i), t0)
	}
	assert.False(t, g.State(t0).Tripped, "20 of 100 is under a quarter")

	small, _ := newGuard(2)
	small.Hold("a", t0)
	small.Hold("b", t0)
	assert.False(t, small.State(t0).Tripped, "under the minimum: a small cluster behaves as the architecture describes")
}

func TestGuard_DeletionsSpreadOverTheWindowCountAsOneChange(t *testing.T) {
	g, _ := newGuard(8)
	g.Hold("a", t0)
	g.Hold("a", t0.Add(5*time.Second)) // goes
	g.Hold("b", t0.Add(10*time.Second))
	g.Hold("b", t0.Add(15*time.Second)) // goes
	assert.False(t, g.State(t0).Tripped)
	g.Hold("c", t0.Add(20*time.Second))
	assert.True(t, g.State(t0).Tripped, "a and b went within the window; c makes three")

	fresh, _ := newGuard(8)
	fresh.Hold("a", t0)
	fresh.Hold("a", t0.Add(5*time.Second))
	fresh.Hold("b", t0.Add(40*time.Second))
	fresh.Hold("b", t0.Add(45*time.Second))
	fresh.Hold("c", t0.Add(80*time.Second))
	assert.False(t, fresh.State(t0).Tripped, "deletions further apart than the window are separate changes")
}

func TestGuard_HeldDeletionsNobodyAsksForAgainSettleOnTime(t *testing.T) {
	g, _ := newGuard(8)
	for i := range 3 {
		g.Hold(fmt.Sprintf("r%d", i), t0)
	}
	st := g.State(t0)
	assert.True(t, st.Tripped)
	assert.Equal(t, t0.Add(2*time.Minute), st.Recheck, "the guard settles when the last held deletion's time comes")
	// Nobody asks again (the routes were deleted and the garbage collector took the records).
	assert.True(t, g.State(st.Recheck.Add(-time.Second)).Tripped)
	assert.Equal(t, State{}, g.State(st.Recheck), "their time came: nothing is held any more")

	g2, changes := newGuard(8)
	for i := range 3 {
		g2.Hold(fmt.Sprintf("r%d", i), t0)
	}
	_, held := g2.Hold("other", t0.Add(3*time.Minute))
	assert.True(t, held, "observe delay of the new request")
	assert.False(t, g2.State(t0.Add(3*time.Minute)).Tripped, "a later request also sees them settled")
	assert.Equal(t, 2, *changes, "tripped, then settled")
}

// A busy operator can come back for a held deletion long after its time (at 30,000 routes the
// queue ran minutes behind). The deletion then proceeds; it used to start waiting afresh, so that
// it never happened while dns-config said nothing was held.
func TestGuard_ALateRequestAfterItsTimeProceeds(t *testing.T) {
	g, _ := newGuard(8)
	for i := range 3 {
		g.Hold(fmt.Sprintf("r%d", i), t0)
	}
	assert.False(t, g.State(t0.Add(3*time.Minute)).Tripped, "the grace period is over")
	until, held := g.Hold("r0", t0.Add(6*time.Minute))
	assert.False(t, held, "asked again four minutes late: it goes")
	assert.Equal(t, t0.Add(6*time.Minute), until)
	assert.False(t, g.State(t0.Add(6*time.Minute)).Tripped, "and the guard does not trip again")

	quiet, _ := newGuard(100)
	quiet.Hold("a", t0)
	_, held = quiet.Hold("a", t0.Add(2*time.Minute))
	assert.False(t, held, "a single deletion asked again long after its observe delay goes")

	_, held = g.Hold("r1", t0.Add(2*time.Minute+permitLifetime+time.Second))
	assert.True(t, held, "asked for after the permit's lifetime: it waits afresh, the safe way")
}

func TestGuard_TrippingHoldsDeletionsOfTheWindowNotYetCarriedOut(t *testing.T) {
	g, _ := newGuard(8)
	g.Hold("early", t0)
	g.State(t0.Add(6 * time.Second)) // its observe delay is over, but its holder has not come back yet
	g.Hold("b", t0.Add(10*time.Second))
	g.Hold("c", t0.Add(10*time.Second))
	st := g.State(t0.Add(10 * time.Second))
	assert.True(t, st.Tripped)
	assert.Equal(t, 3, st.Held, "the early deletion belongs to the same change")
	until, held := g.Hold("early", t0.Add(20*time.Second))
	assert.True(t, held)
	assert.Equal(t, t0.Add(2*time.Minute), until, "its grace period counts from its first request")

	carried, _ := newGuard(8)
	carried.Hold("early", t0)
	_, held = carried.Hold("early", t0.Add(6*time.Second))
	assert.False(t, held, "gone before the change was seen")
	carried.Hold("b", t0.Add(10*time.Second))
	carried.Hold("c", t0.Add(10*time.Second))
	st = carried.State(t0.Add(10 * time.Second))
	assert.True(t, st.Tripped, "the deletion carried out still counts")
	assert.Equal(t, 2, st.Held)
}

func TestGuard_WantedAgainAfterItsTimeWaitsAfresh(t *testing.T) {
	g, _ := newGuard(100)
	g.Hold("a", t0)
	g.State(t0.Add(10 * time.Second)) // its time came
	g.Forget("a")                     // but the record is wanted again
	until, held := g.Hold("a", t0.Add(20*time.Second))
	assert.True(t, held, "a new deletion of it waits its own delay")
	assert.Equal(t, t0.Add(25*time.Second), until)
}

func TestGuard_ARetriedDeletionIsNotHeldAgain(t *testing.T) {
	g, _ := newGuard(8)
	for i := range 3 {
		g.Hold(fmt.Sprintf("r%d", i), t0)
	}
	_, held := g.Hold("r0", t0.Add(2*time.Minute))
	assert.False(t, held, "its grace period is over: it goes")
	_, held = g.Hold("r0", t0.Add(2*time.Minute+time.Second))
	assert.False(t, held, "the delete failed and is retried: not held again")
}

// The operator's defaults, as PLUGIN.md states them: it trips at 10 or more and over 25%.
func TestSettings_TripsAtTheMinimumAndAboveTheShare(t *testing.T) {
	s := DefaultSettings
	for _, tc := range []struct {
		name             string
		settings         Settings
		requested, total int
		want             bool
	}{
		{"below the minimum, whatever the share", s, 9, 9, false},
		{"at the minimum and above the share", s, 10, 39, true},
		{"at the minimum, exactly the share", s, 10, 40, false},
		{"many, but a small share", s, 100, 1000, false},
		{"disabled guard", Settings{Share: 0.25, Minimum: 10}, 100, 100, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.settings.Trips(tc.requested, tc.total); got != tc.want {
				t.Errorf("Trips(%d, %d) = %v, want %v", tc.requested, tc.total, got, tc.want)
			}
		})
	}
}
