package controllers

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	externaldnsv1alpha1 "sigs.k8s.io/external-dns/apis/v1alpha1"

	"github.com/service-router/service-router-operator/internal/apply"
	"github.com/service-router/service-router-operator/internal/plan"
)

// The write step of every reconciler: the only code that creates, updates or deletes generated
// objects.

// notice says where a write's events go and how they read.
type notice[T client.Object] struct {
	// target receives the events; none are emitted when it is nil.
	target runtime.Object
	reason string
	// describe summarises an object for the event note.
	describe func(T) string
}

// written says what an apply did.
type written[T client.Object] struct {
	// Applied are the desired objects that now exist as desired.
	Applied []T
	// Conflicts are desired objects whose name is taken by a foreign object, left untouched.
	Conflicts []apply.Conflict
	// HeldUntil is when the earliest deletion held back by the mass-deletion guard may proceed
	// (zero when none was held). The objects still exist.
	HeldUntil time.Time
}

// applyChanges makes the API server match the desired objects: apply.Diff against the current
// ones (the cache's copies) decides the writes. It is the only code that creates, updates or
// deletes generated objects. A create that finds the name taken reads the live object past the
// cache (the cache holds only managed objects) to tell cache lag, adoption and conflict apart.
// Errors of single objects do not stop the others; cache lag comes back as errCacheLag.
func applyChanges[T client.Object](ctx context.Context, w base, k apply.Kind[T], desired, current []T, n notice[T]) (written[T], error) {
	for _, obj := range current {
		if w.Versions.Superseded(obj) {
			// A copy our last write replaced: the API server has what that write sent, whatever
			// this reconcile decides from the copy; that write's event runs it again.
			return written[T]{}, errCacheLag
		}
	}
	ch := apply.Diff(k, desired, current)
	out := written[T]{Applied: ch.Unchanged, Conflicts: ch.Conflicts}
	defer func() {
		for _, obj := range out.Applied {
			w.Deletions.Forget(apply.Key(obj)) // wanted again: a held deletion is cancelled
		}
	}()
	var errs []error
	for _, obj := range ch.Update {
		uid, replaced := obj.GetUID(), obj.GetResourceVersion()
		w.Versions.Writing(uid, replaced)
		if err := w.Writer.Update(ctx, obj); err != nil {
			w.Versions.Failed(uid)
			errs = append(errs, writeError("updating", k.Name, obj, err))
			continue
		}
		if !w.Versions.Wrote(uid, replaced, obj.GetResourceVersion()) {
			errs = append(errs, errCacheLag) // somebody else's change went by unseen: look again
		}
		out.Applied = append(out.Applied, obj)
		w.event(n.target, obj, n.reason, "Update", "updated %s %s: %s", k.Name, apply.Key(obj), n.describe(obj))
	}
	for _, obj := range ch.Create {
		created, conflict, err := create(ctx, w, k, obj)
		switch {
		case err != nil:
			errs = append(errs, err)
		case conflict != nil:
			out.Conflicts = append(out.Conflicts, *conflict)
		default:
			out.Applied = append(out.Applied, obj)
			w.event(n.target, created, n.reason, "Create", "created %s %s: %s", k.Name, apply.Key(obj), n.describe(obj))
		}
	}
	for _, obj := range ch.Delete {
		if until, held := w.Deletions.Hold(apply.Key(obj), time.Now()); held {
			if out.HeldUntil.IsZero() || until.Before(out.HeldUntil) {
				out.HeldUntil = until
			}
			continue
		}
		uid := obj.GetUID()
		if err := w.Client.Delete(ctx, obj, client.Preconditions{UID: &uid}); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, writeError("deleting", k.Name, obj, err))
			continue
		}
		w.event(n.target, nil, n.reason, "Delete", "deleted %s %s: %s", k.Name, apply.Key(obj), n.describe(obj))
	}
	return out, errors.Join(errs...)
}

// create creates obj. When the name is taken it reads the live object and decides: ours (the
// cache is behind: errCacheLag), adoptable (taken over in place) or foreign (a conflict).
func create[T client.Object](ctx context.Context, w base, k apply.Kind[T], obj T) (T, *apply.Conflict, error) {
	created := obj.DeepCopyObject().(T)
	w.Versions.Creating(created)
	err := w.Writer.Create(ctx, created)
	if !w.Versions.Created(created, err == nil) {
		return created, nil, errCacheLag // somebody else's change went by unseen: look again
	}
	if !apierrors.IsAlreadyExists(err) {
		if err != nil {
			return created, nil, writeError("creating", k.Name, obj, err)
		}
		return created, nil, nil
	}
	live := obj.DeepCopyObject().(T)
	if err := w.APIReader.Get(ctx, client.ObjectKeyFromObject(obj), live); err != nil {
		return created, nil, fmt.Errorf("reading the existing %s %s: %w", k.Name, apply.Key(obj), err)
	}
	switch apply.Taken(k, live) {
	case apply.TakenByUs:
		return created, nil, errCacheLag
	case apply.TakenAdoptable:
		adopted := k.Merge(live, obj)
		if err := w.Client.Update(ctx, adopted, fieldOwner); err != nil {
			return created, nil, writeError("adopting", k.Name, obj, err)
		}
		return adopted, nil, nil
	}
	conflict := apply.ConflictOf(k, obj)
	return created, &conflict, nil
}

// writeError wraps a write failure; an optimistic-lock or UID-precondition conflict means the
// cache is behind the API server, which a short retry settles.
func writeError(verb, kind string, obj client.Object, err error) error {
	if apierrors.IsConflict(err) {
		return errCacheLag
	}
	return fmt.Errorf("%s %s %s: %w", verb, kind, apply.Key(obj), err)
}

func (w base) event(target, related runtime.Object, reason, action, note string, args ...any) {
	if target != nil {
		w.Recorder.Eventf(target, related, "Normal", reason, action, note, args...)
	}
}

// describeRecords summarises an endpoint's records for events: "api.example.com CNAME aks01.example.com".
func describeRecords(ep *externaldnsv1alpha1.DNSEndpoint) string {
	var parts []string
	for _, r := range ep.Spec.Endpoints {
		parts = append(parts, fmt.Sprintf("%s %s %s", r.DNSName, r.RecordType, strings.Join(r.Targets, ",")))
	}
	return strings.Join(parts, "; ")
}

// result is what the write step found, for the owner's outcome (plan.AfterWrite): kind names the
// generated objects and owner the kind whose status reports them.
func (w written[T]) result(kind, owner string) plan.Written {
	keys := make([]string, len(w.Conflicts))
	for i, c := range w.Conflicts {
		keys[i] = c.Key
	}
	return plan.Written{Kind: kind, Owner: owner, Conflicts: keys, HeldUntil: w.HeldUntil}
}
