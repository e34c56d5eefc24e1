package ownwrite

import "k8s.io/apimachinery/pkg/types"

// The steps of a write that the controllers take around Next and Versions, kept here so that
// the model of the write-echo interleavings (model_test.go) drives the same code the reconcilers
// run, not a copy of it: what a reconcile does with Next's decision (Decision.For) and with the
// answer to its write (Versions.Answered).

// Kind is which of the operator's writes a decision is for.
type Kind int

const (
	// StatusWrite: a status write (end and writeStatus in controllers/reconciler.go). A copy our
	// own previous write replaced is left: that write's echo runs the reconcile again.
	StatusWrite Kind = iota
	// ObjectWrite: a generated object's write (applyChanges in controllers/reconciler_apply.go),
	// decided for every object of a kind at once from the cache's copies. A copy our own previous
	// write replaced is looked at again shortly: another object of the same apply may depend on
	// what this one holds.
	ObjectWrite
)

// Step is what a reconcile does about one object once Next has decided.
type Step int

const (
	// Send the write, locked to the copy's resourceVersion (Writing, then Answered).
	Send Step = iota
	// Leave the object as it is, and ask for nothing.
	Leave
	// LookAgain shortly: the cache lags the API server (the controllers' errCacheLag).
	LookAgain
)

// For is the step a write of kind takes on decision d.
func (d Decision) For(kind Kind) Step {
	switch d {
	case Write:
		return Send
	case Skip:
		if kind == ObjectWrite {
			return LookAgain
		}
		return Leave
	case RetryLater:
		return LookAgain
	}
	return Leave
}

// Answered records the answer to the write of object uid that Writing announced (locked to
// version replaced): failed when the API server took nothing, otherwise the version produced. It
// says whether the reconcile must look again shortly: always after a failure (a conflict is the
// cache lagging; any other error is retried by the caller's queue), and after a success when an
// event of somebody else's change went by unseen while the write was in flight (Wrote).
func (v *Versions) Answered(uid types.UID, replaced, produced string, failed bool) (lookAgain bool) {
	if failed {
		v.Failed(uid)
		return true
	}
	return !v.Wrote(uid, replaced, produced)
}
