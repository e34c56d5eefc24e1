package ownwrite

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestDecisionFor_EveryDecisionOfEveryKind(t *testing.T) {
	for _, c := range []struct {
		decision Decision
		kind     Kind
		want     Step
	}{
		{Write, StatusWrite, Send},
		{Write, ObjectWrite, Send},
		{Unchanged, StatusWrite, Leave},
		{Unchanged, ObjectWrite, Leave},
		// A status copy our own write replaced waits for that write's echo; an object's is
		// looked at again (the apply decides every object of the kind at once).
		{Skip, StatusWrite, Leave},
		{Skip, ObjectWrite, LookAgain},
		{RetryLater, StatusWrite, LookAgain},
		{RetryLater, ObjectWrite, LookAgain},
	} {
		assert.Equal(t, c.want, c.decision.For(c.kind), "decision %d, kind %d", c.decision, c.kind)
	}
}

func TestAnswered_AFailureForgetsTheWriteAndLooksAgain(t *testing.T) {
	v := NewVersions()
	v.Writing("u1", "5")
	assert.True(t, v.Answered("u1", "5", "", true), "a failed write looks again")
	assert.False(t, v.Superseded(routeAt("u1", "5")), "a failed write replaced nothing")

	v.Writing("u1", "5")
	assert.False(t, v.Answered("u1", "5", "6", false), "a write whose echo is still to come: nothing to look at")
	assert.True(t, v.Superseded(routeAt("u1", "5")), "the copy the write replaced is not taken for current")
}
