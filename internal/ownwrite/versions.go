package ownwrite

import (
	"reflect"
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
)

// Versions remembers, per object the operator wrote, the resourceVersion its write
// replaced and the one it produced. Only equality is tested: resourceVersions are opaque and
// never compared for order. Two things follow from it:
//
//   - A reconcile that starts from the replaced version read the cache before the write's own
//     event arrived: writing again would only meet an optimistic-lock conflict, so the write is
//     skipped (superseded), and the write's event is asked to run the reconcile again on the
//     fresh copy.
//   - The event of the produced version is the echo of the operator's own write: the cache now
//     holds exactly what the reconcile decided from its inputs, and a change of any input raises
//     an event of its own. EchoFilter drops that event, so a route is reconciled once per change
//     instead of once more for each of its writes (unless a reconcile asked for it, above).
//
// One order of events escapes both: the echo arrives after a reconcile read the replaced copy
// but before it asked Superseded. The echo is dropped and the write forgotten, so the copy no
// longer counts as superseded, and no event will run the reconcile again. Its caller must not
// take "nothing to write" from that copy without checking that the cache still holds it (Next
// does); remembering every dropped echo instead cost about 1 MiB at 3,000 routes.
//
// model_test.go explores every interleaving of these calls with the watch, the cache's lag,
// conflicts and others' changes for one object, and shows the operator converges without an
// extra write or a conflict with its own write.
type Versions struct {
	mu     sync.Mutex
	writes map[types.UID]ownWrite
	// creating are the creates in flight, by name: the new object's UID comes with the answer.
	creating map[createKey]seenCreate
}

// createKey names an object being created: its Go type and its namespace and name.
type createKey struct {
	goType          reflect.Type
	namespace, name string
}

func createKeyOf(obj client.Object) createKey {
	return createKey{goType: reflect.TypeOf(obj), namespace: obj.GetNamespace(), name: obj.GetName()}
}

// seenCreate is the first event of an object of the name being created that arrived while the
// create was in flight (dropped, as its echo most likely is).
type seenCreate struct {
	seen bool
	uid  types.UID
	rv   string
}

// ownWrite is what one write of the operator did to an object's resourceVersion.
type ownWrite struct {
	replaced, produced string
	// inFlight: the write is sent and not answered yet; seen is the version of the first event
	// that arrived meanwhile (dropped: with the write's optimistic lock, the next version after
	// the replaced one is the write's own if it succeeds, and a failed write runs the reconcile
	// again anyway).
	inFlight bool
	seen     string
	// rerun: a reconcile skipped its write because it read the replaced version; the echo of
	// the produced version must run it again.
	rerun bool
}

func NewVersions() *Versions {
	return &Versions{writes: map[types.UID]ownWrite{}, creating: map[createKey]seenCreate{}}
}

// Writing records that a write of the object uid, with an optimistic lock on version replaced,
// is being sent: its echo may arrive before its answer. Wrote or Failed must follow.
func (v *Versions) Writing(uid types.UID, replaced string) {
	if v == nil || uid == "" {
		return
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	v.writes[uid] = ownWrite{replaced: replaced, inFlight: true}
}

// Failed forgets a write that did not happen. An event dropped while it was in flight was
// somebody else's; the failed write's reconcile runs again, so nothing is lost.
func (v *Versions) Failed(uid types.UID) {
	if v == nil {
		return
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	delete(v.writes, uid)
}

// Creating records that obj is being created: its echo may arrive before its answer.
// Created must follow.
func (v *Versions) Creating(obj client.Object) {
	if v == nil {
		return
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	v.creating[createKeyOf(obj)] = seenCreate{}
}

// Created records the answer to a create of obj (ok: obj is the created object, with its
// UID and resourceVersion). It returns false when an event dropped while the create was in flight
// was not the new object's: the caller must look again. A failed create's reconcile decides from
// the live object or runs again, so nothing dropped meanwhile is lost.
func (v *Versions) Created(obj client.Object, ok bool) bool {
	if v == nil {
		return true
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	key := createKeyOf(obj)
	c := v.creating[key]
	delete(v.creating, key)
	switch {
	case !ok:
		return true
	case c.seen:
		return c.uid == obj.GetUID() && c.rv == obj.GetResourceVersion()
	}
	if obj.GetUID() != "" {
		v.writes[obj.GetUID()] = ownWrite{produced: obj.GetResourceVersion()}
	}
	return true
}

// Wrote records that a write turned the object uid from version replaced into version produced
// (Writing came first). It returns false when an event that arrived while the write was in
// flight, and was dropped, carried another version than the write produced: most likely an event
// older than the write whose handler ran late (client-go updates the store first), but possibly
// somebody else's change, which the caller must reconcile again. The write is remembered all the
// same: its echo is still to come, and the copy it replaced, still in the store, must not be
// taken for a current one by the caller's next look.
func (v *Versions) Wrote(uid types.UID, replaced, produced string) bool {
	if v == nil || uid == "" {
		return true
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	w, ok := v.writes[uid]
	if !ok {
		// Forgotten in flight: the object's deletion went by (Forget) and runs the reconcile
		// again; remembering the write now would keep it for an object that is gone.
		return true
	}
	seenOther := w.inFlight && w.seen != "" && w.seen != produced
	switch {
	case produced == replaced:
		// The API server found nothing to change and raised no event: remembering the write
		// would take the current copy for a replaced one and wait for an echo that never comes.
		delete(v.writes, uid)
	case w.inFlight && w.seen == produced:
		delete(v.writes, uid) // the echo came first and went by: nothing left to wait for
	default:
		v.writes[uid] = ownWrite{replaced: replaced, produced: produced}
	}
	return !seenOther
}

// Superseded reports whether obj, as read from the cache, is a version the operator's own write
// already replaced; if so, the echo of that write will run the reconcile again. Once the cache
// shows another version the entry is forgotten.
func (v *Versions) Superseded(obj client.Object) bool {
	if v == nil {
		return false
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	w, ok := v.writes[obj.GetUID()]
	if !ok || w.inFlight {
		return false
	}
	if w.replaced != "" && w.replaced == obj.GetResourceVersion() {
		w.rerun = true
		v.writes[obj.GetUID()] = w
		return true
	}
	delete(v.writes, obj.GetUID())
	return false
}

// Echo reports whether an event carrying obj is only the echo of the operator's own last write
// of it, with no reconcile waiting for it. Any event moves the object past the remembered write,
// so the entry is forgotten.
func (v *Versions) Echo(obj client.Object) bool {
	if v == nil {
		return false
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	w, ok := v.writes[obj.GetUID()]
	if !ok {
		key := createKeyOf(obj)
		if c, creating := v.creating[key]; creating && !c.seen {
			v.creating[key] = seenCreate{seen: true, uid: obj.GetUID(), rv: obj.GetResourceVersion()}
			return true // most likely the echo of the create outrunning its answer; Created tells
		}
		return false
	}
	rv := obj.GetResourceVersion()
	switch {
	case rv == w.replaced:
		return false // an event of the version before the write: not an echo, and the write is still to come
	case w.inFlight && w.seen == "":
		w.seen = rv // most likely the echo outrunning the write's answer; Wrote tells
		v.writes[obj.GetUID()] = w
		return true
	case w.inFlight:
		return false
	case rv != w.produced:
		// Neither the version the write replaced nor its own: an event older than the write.
		// The watch is in order, but client-go updates the cache's store before it hands an event
		// to the handlers, so a reconcile may read, and write over, a version whose event (and
		// those before it) the filter has not judged yet. The write's echo is still to come:
		// forgetting the write here would take the replaced copy, still in the store, for a
		// current one, and write again into a conflict (the model, model_test.go, found it).
		return false
	}
	delete(v.writes, obj.GetUID())
	return !w.rerun
}

// EchoFilter is the watch filter that drops the echoes of the operator's own writes (Echo) and
// passes every other event: creations, deletions and changes by anybody else.
func EchoFilter(v *Versions) predicate.Predicate {
	return predicate.Funcs{
		CreateFunc: func(e event.CreateEvent) bool { return !v.Echo(e.Object) },
		UpdateFunc: func(e event.UpdateEvent) bool { return !v.Echo(e.ObjectNew) },
		DeleteFunc: func(e event.DeleteEvent) bool { v.Forget(e.Object); return true },
	}
}

// Forget drops what is remembered of a deleted object.
func (v *Versions) Forget(obj client.Object) {
	if v == nil {
		return
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	delete(v.writes, obj.GetUID())
}

// Decision is what a reconcile does with the copy of an object it read from the cache, once it
// knows whether what it decided differs from that copy (Next).
type Decision int

const (
	// Write: the copy is the cache's current one and differs from what the reconcile decided:
	// write, with the copy's resourceVersion as the optimistic lock (Writing, then Wrote or
	// Failed).
	Write Decision = iota
	// Unchanged: the copy is the cache's current one and already says what the reconcile
	// decided: nothing to write.
	Unchanged
	// Skip: the operator's own previous write replaced the copy (Superseded): the API server has
	// what that write sent, and that write's event runs the reconcile again on the fresh copy.
	Skip
	// RetryLater: the cache moved on since the copy was read. A write would meet an
	// optimistic-lock conflict, and "nothing to write" may be wrong: the event that moved the
	// cache may have been the echo of our own previous write, dropped (EchoFilter), which runs
	// nothing again (a route kept saying DNSConfigurationNotFound after dns-config came back:
	// CI). Look again shortly; anybody else's change raises an event of its own, and the retry
	// costs one reconcile.
	RetryLater
)

// Next is the one decision every write of the operator takes before it writes an object it read
// from the cache: read is the copy the reconcile decided from, cached the resourceVersion the
// cache holds now under its name ("" when it holds none), changed whether the reconcile's
// decision differs from read. The controllers (status writes and generated objects' writes) and
// the model of its interleavings (model_test.go) call it alike.
func (v *Versions) Next(read client.Object, cached string, changed bool) Decision {
	switch {
	case v.Superseded(read):
		return Skip
	case cached != "" && cached != read.GetResourceVersion():
		return RetryLater
	case changed:
		return Write
	}
	return Unchanged
}
