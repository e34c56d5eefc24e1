package ownwrite

import (
	"testing"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
)

// wrote records a write as the controllers do: Writing when it is sent, Wrote when it is answered.
func wrote(v *Versions, uid types.UID, replaced, produced string) {
	v.Writing(uid, replaced)
	v.Wrote(uid, replaced, produced)
}

func routeAt(uid, rv string) *routingv1alpha1.ServiceRoute {
	return &routingv1alpha1.ServiceRoute{ObjectMeta: metav1.ObjectMeta{UID: types.UID(uid), ResourceVersion: rv}}
}

func TestWrittenVersions_OnlyTheCopyOurWriteReplacedIsStale(t *testing.T) {
	at := func(rv string) *routingv1alpha1.ServiceRoute { return routeAt("u", rv) }
	v := NewVersions()
	assert.False(t, v.Superseded(at("1")), "nothing written yet")
	wrote(v, "u", "1", "2") // our write turned version 1 into 2
	assert.True(t, v.Superseded(at("1")), "the cache still has the copy our write replaced")
	assert.True(t, v.Superseded(at("1")), "still, until the cache moves on")
	assert.False(t, v.Superseded(at("2")), "the cache caught up")
	assert.False(t, v.Superseded(at("1")), "forgotten once the cache moved on")

	wrote(v, "u", "5", "6")
	assert.False(t, v.Superseded(routeAt("other", "5")), "another object")

	wrote(v, "u", "", "7") // a create replaced nothing
	assert.False(t, v.Superseded(routeAt("u", "")), "a create supersedes no copy")

	wrote(v, "u", "8", "8") // the API server changed nothing: no new version, no event
	assert.False(t, v.Superseded(at("8")), "a write that changed nothing replaced no copy: waiting for its echo would wait forever")

	var none *Versions
	wrote(none, "u", "1", "2")
	assert.False(t, none.Superseded(at("1")), "no memory: never stale")
	assert.False(t, none.Echo(at("2")), "no memory: no echo")
}

// The echo filter drops exactly the event of the version our own write produced, and only when
// no reconcile is waiting for it.
func TestOwnEchoes_DropOnlyTheEventOfOurOwnWrite(t *testing.T) {
	update := func(p interface{ Update(event.UpdateEvent) bool }, old, new *routingv1alpha1.ServiceRoute) bool {
		return p.Update(event.UpdateEvent{ObjectOld: old, ObjectNew: new})
	}
	tests := []struct {
		name string
		// prepare writes and reads before the event of version "2" arrives.
		prepare func(v *Versions)
		event   string
		want    bool // the event passes
		// kept: the write is still remembered after the event.
		kept bool
	}{
		{name: "nothing written: every event passes", prepare: func(*Versions) {}, event: "2", want: true},
		{name: "the echo of our write is dropped", prepare: func(v *Versions) { wrote(v, "u", "1", "2") }, event: "2", want: false},
		{
			name:    "another version passes, and the write is remembered until its echo (an event older than the write, handed to the filter after the store moved on)",
			prepare: func(v *Versions) { wrote(v, "u", "3", "4") }, event: "2", want: true, kept: true,
		},
		{
			name: "the echo passes when a reconcile read the replaced copy and skipped its write",
			prepare: func(v *Versions) {
				wrote(v, "u", "1", "2")
				assert.True(t, v.Superseded(routeAt("u", "1")))
			},
			event: "2", want: true,
		},
		{
			name:    "the echo of a create is dropped",
			prepare: func(v *Versions) { wrote(v, "u", "", "2") },
			event:   "2", want: false,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := NewVersions()
			tt.prepare(v)
			assert.Equal(t, tt.want, update(EchoFilter(v), routeAt("u", "1"), routeAt("u", tt.event)))
			if tt.kept {
				assert.False(t, update(EchoFilter(v), routeAt("u", tt.event), routeAt("u", "4")), "the echo that follows is dropped")
			}
			// Once the event went by, the write is forgotten: a later event of the same version
			// (a relist) passes, and the memory does not grow with the writes.
			assert.True(t, update(EchoFilter(v), routeAt("u", "1"), routeAt("u", tt.event)), "the next event passes")
			assert.Empty(t, v.writes)
		})
	}
}

func TestOwnEchoes_CreatesAndDeletes(t *testing.T) {
	v := NewVersions()
	p := EchoFilter(v)
	wrote(v, "u", "", "2")
	assert.False(t, p.Create(event.CreateEvent{Object: routeAt("u", "2")}), "the echo of our own create")
	assert.True(t, p.Create(event.CreateEvent{Object: routeAt("u", "2")}), "a create nobody remembers writing")

	wrote(v, "u", "2", "3")
	assert.True(t, p.Delete(event.DeleteEvent{Object: routeAt("u", "3")}), "deletions always pass")
	assert.Empty(t, v.writes, "a deleted object is forgotten")

	v.Writing("u", "3")
	assert.True(t, p.Delete(event.DeleteEvent{Object: routeAt("u", "3")}))
	assert.True(t, v.Wrote("u", "3", "4"), "a write answered after its object's deletion went by")
	assert.Empty(t, v.writes, "is not remembered for an object that is gone")
}

// An echo may outrun the answer to the write that caused it: an event that arrives while the
// write is in flight is dropped, and the answer tells whether it was the write's own.
func TestOwnEchoes_EventsWhileTheWriteIsInFlight(t *testing.T) {
	update := func(p predicate.Predicate, rv string) bool {
		return p.Update(event.UpdateEvent{ObjectOld: routeAt("u", "1"), ObjectNew: routeAt("u", rv)})
	}

	v := NewVersions()
	p := EchoFilter(v)
	v.Writing("u", "1")
	assert.True(t, update(p, "1"), "an event of the version the write replaces is not its echo")
	assert.False(t, update(p, "2"), "the echo before the answer")
	assert.True(t, update(p, "3"), "a second event while in flight passes")
	assert.True(t, v.Wrote("u", "1", "2"), "the dropped event was the write's own")
	assert.Empty(t, v.writes, "nothing left to wait for")

	v.Writing("u", "1")
	assert.False(t, update(p, "0"), "an event older than the write, its handler late")
	assert.False(t, v.Wrote("u", "1", "3"), "the dropped event was not the write's own: the caller looks again")
	assert.True(t, v.Superseded(routeAt("u", "1")), "and the copy the write replaced, still in the store, is not taken for a current one")
	assert.True(t, update(p, "3"), "the echo runs the reconcile that skipped its write")
	assert.Empty(t, v.writes)

	v.Writing("u", "1")
	assert.False(t, update(p, "2"))
	v.Failed("u")
	assert.Empty(t, v.writes, "a failed write is forgotten (its reconcile runs again)")

	v.Writing("u", "1")
	assert.False(t, v.Superseded(routeAt("u", "1")), "a write in flight supersedes nothing yet")
	assert.True(t, v.Wrote("u", "1", "2"), "no event came first")
	assert.False(t, update(p, "2"), "the echo after the answer")
	assert.Empty(t, v.writes)
}

// The echo of a create may outrun its answer too; until the answer the new object's UID is not
// known, so the create is remembered by name.
func TestOwnEchoes_EventsWhileACreateIsInFlight(t *testing.T) {
	named := func(uid, rv string) *routingv1alpha1.ServiceRoute {
		r := routeAt(uid, rv)
		r.Namespace, r.Name = "ns", "a"
		return r
	}
	created := func(p predicate.Predicate, uid, rv string) bool {
		return p.Create(event.CreateEvent{Object: named(uid, rv)})
	}
	v := NewVersions()
	p := EchoFilter(v)

	v.Creating(named("", ""))
	assert.False(t, created(p, "u", "2"), "the echo before the answer")
	assert.True(t, v.Created(named("u", "2"), true), "the dropped event was the create's own")
	assert.Empty(t, v.writes)
	assert.Empty(t, v.creating)

	v.Creating(named("", ""))
	assert.False(t, p.Update(event.UpdateEvent{ObjectOld: named("old", "8"), ObjectNew: named("old", "9")}), "an event of the name while in flight")
	assert.False(t, v.Created(named("u", "2"), true), "it was another object's: the caller looks again")
	assert.Empty(t, v.creating)

	v.Creating(named("", ""))
	assert.True(t, v.Created(named("u", "2"), true), "no event came first")
	assert.False(t, created(p, "u", "2"), "the echo after the answer")
	assert.Empty(t, v.writes)

	v.Creating(named("", ""))
	assert.True(t, v.Created(named("", ""), false), "a failed create")
	assert.Empty(t, v.creating, "is forgotten")
	assert.True(t, created(p, "x", "3"), "somebody else's object of that name passes")
}
