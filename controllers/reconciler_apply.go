package controllers

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/service-router/service-router-operator/internal/apply"
	"github.com/service-router/service-router-operator/internal/core"
	"github.com/service-router/service-router-operator/internal/ownwrite"
)

// The write step of every reconciler: the only code that creates, updates or deletes generated
// objects.

// applyChanges makes the API server match the desired objects: apply.Diff against the current
// ones (the cache's copies) decides the writes. It is the only code that creates, updates or
// deletes generated objects. A create that finds the name taken reads the live object past the
// cache (the cache holds only managed objects) to tell cache lag, adoption and conflict apart.
// Errors of single objects do not stop the others; cache lag comes back as errCacheLag.
func applyChanges[T client.Object](ctx context.Context, w base, k apply.Kind[T], desired, current []T, n core.Notice[T]) (core.Written[T], error) {
	ch := apply.Diff(k, desired, current)
	updating := make(map[types.UID]bool, len(ch.Update))
	for _, obj := range ch.Update {
		updating[obj.GetUID()] = true
	}
	for _, obj := range current {
		cached, err := w.Cached.Version(ctx, obj)
		if err != nil {
			return core.Written[T]{}, err
		}
		// A copy our last write replaced (the API server has what that write sent, whatever this
		// reconcile decides from the copy), or a cache that moved on since the copy was read (an
		// echo of our write may have gone by meanwhile: an object left alone as "already as
		// desired" might not be): look again shortly.
		if w.Versions.Next(obj, cached, updating[obj.GetUID()]).For(ownwrite.ObjectWrite) == ownwrite.LookAgain {
			return core.Written[T]{}, errCacheLag
		}
	}
	out := core.Written[T]{Applied: ch.Unchanged, Conflicts: ch.Conflicts}
	defer func() {
		for _, obj := range out.Applied {
			w.Deletions.Forget(apply.Key(obj)) // wanted again: a held deletion is cancelled
		}
	}()
	var errs []error
	for _, obj := range ch.Update {
		uid, replaced := obj.GetUID(), obj.GetResourceVersion()
		w.Versions.Writing(uid, replaced)
		err := w.Writer.Update(ctx, obj)
		lookAgain := w.Versions.Answered(uid, replaced, obj.GetResourceVersion(), err != nil)
		if err != nil {
			errs = append(errs, writeError("updating", k.Name, obj, err))
			continue
		}
		if lookAgain {
			errs = append(errs, errCacheLag) // somebody else's change went by unseen: look again
		}
		out.Applied = append(out.Applied, obj)
		w.event(n.Target, obj, n.Reason, "Update", "updated %s %s: %s", k.Name, apply.Key(obj), n.Describe(obj))
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
			w.event(n.Target, created, n.Reason, "Create", "created %s %s: %s", k.Name, apply.Key(obj), n.Describe(obj))
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
		w.event(n.Target, nil, n.Reason, "Delete", "deleted %s %s: %s", k.Name, apply.Key(obj), n.Describe(obj))
	}
	return out, errors.Join(errs...)
}

// applyWith is the operator's core.Apply: applyChanges with b's writer, memory of its own writes,
// guard and event recorder.
func applyWith[T client.Object](b base) core.Apply[T] {
	return func(ctx context.Context, k apply.Kind[T], desired, current []T, n core.Notice[T]) (core.Written[T], error) {
		return applyChanges(ctx, b, k, desired, current, n)
	}
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
