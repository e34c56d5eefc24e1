// Package apply computes the writes that turn the objects the operator generated into the ones it
// wants, for any generated kind (route DNSEndpoints, gateway address DNSEndpoints, Istio
// Gateways). It is the safety core of every write: objects of others are never touched, only
// owned objects are deleted (with a UID precondition), and an object the cache does not show yet
// is told apart from someone else's. It is pure: the controllers execute the result.
package apply

import (
	"maps"
	"slices"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Ownership says who an existing object belongs to, as far as one owner is concerned.
type Ownership int

const (
	// Foreign objects belong to someone else (another owner, another tool or a person); they are
	// never updated or deleted.
	Foreign Ownership = iota
	// Owned objects carry the operator's managed-by label and this owner's controller reference.
	Owned
	// Adoptable objects are foreign objects a platform admin marked for takeover (see
	// naming.AnnotationAdopt); the first write takes them over in place, keeping their UID.
	Adoptable
)

// Kind tells Diff how to judge and change objects of one generated kind.
type Kind[T client.Object] struct {
	// Name is the kind's name, for messages.
	Name string
	// Ownership classifies an existing object for the owner the diff is computed for.
	Ownership func(T) Ownership
	// UpToDate reports whether current already has everything desired sets.
	UpToDate func(current, desired T) bool
	// Merge returns a copy of current carrying desired's labels, annotations, owner references
	// and spec (labels and annotations others added are kept).
	Merge func(current, desired T) T
}

// Changes are the writes that make current equal to desired.
type Changes[T client.Object] struct {
	// Create are desired objects with no object of their name in current. Creating one may still
	// find the name taken (the cache holds only managed objects): see Taken.
	Create []T
	// Update are current objects changed to what is desired (owned, or adoptable and now
	// adopted), ready to be written with their resourceVersion as an optimistic lock.
	Update []T
	// Delete are owned objects nothing desires any more; delete them with a UID precondition so
	// that an object re-created under the same name in the meantime survives.
	Delete []T
	// Unchanged are desired objects that already exist as desired.
	Unchanged []T
	// Conflicts are desired objects whose name is taken by a foreign object, left untouched.
	Conflicts []Conflict
}

// Conflict names an object the operator wants to write but does not own.
type Conflict struct {
	// Key is namespace/name.
	Key string
	// Why says what makes it foreign, for status messages.
	Why string
}

// Empty reports whether the changes write nothing.
func (c Changes[T]) Empty() bool {
	return len(c.Create) == 0 && len(c.Update) == 0 && len(c.Delete) == 0
}

// Diff compares the desired objects with the current ones (what the cache holds for this owner)
// and returns the writes. A current object that is not desired is deleted only when it is owned
// and has a UID; foreign ones are left alone whatever their name.
func Diff[T client.Object](k Kind[T], desired, current []T) Changes[T] {
	var out Changes[T]
	byKey := make(map[string]T, len(current))
	for _, obj := range current {
		byKey[Key(obj)] = obj
	}
	for _, want := range desired {
		key := Key(want)
		existing, found := byKey[key]
		delete(byKey, key)
		switch {
		case !found:
			out.Create = append(out.Create, want)
		case k.Ownership(existing) == Foreign:
			out.Conflicts = append(out.Conflicts, Conflict{Key: key, Why: foreignWhy(k.Name)})
		case k.Ownership(existing) == Owned && k.UpToDate(existing, want):
			out.Unchanged = append(out.Unchanged, want)
		default: // owned and different, or adoptable
			out.Update = append(out.Update, k.Merge(existing, want))
		}
	}
	for _, key := range slices.Sorted(maps.Keys(byKey)) {
		stale := byKey[key]
		if k.Ownership(stale) == Owned && stale.GetUID() != "" {
			out.Delete = append(out.Delete, stale)
		}
	}
	return out
}

// Verdict is what to do when a create finds its name taken.
type Verdict int

const (
	// TakenByUs: the object is ours and the cache has not seen it yet; retry shortly.
	TakenByUs Verdict = iota
	// TakenAdoptable: the object is marked for adoption; update it in place.
	TakenAdoptable
	// TakenByOther: the object is someone else's; leave it and report a conflict.
	TakenByOther
)

// Taken judges the live object (read from the API server, past the cache) that made a create
// fail with AlreadyExists.
func Taken[T client.Object](k Kind[T], live T) Verdict {
	switch k.Ownership(live) {
	case Owned:
		return TakenByUs
	case Adoptable:
		return TakenAdoptable
	}
	return TakenByOther
}

// ConflictOf is the conflict reported for an object whose name is taken by someone else.
func ConflictOf[T client.Object](k Kind[T], obj T) Conflict {
	return Conflict{Key: Key(obj), Why: foreignWhy(k.Name)}
}

func foreignWhy(kind string) string {
	return kind + " exists and is not managed by this owner"
}

// Key is an object's namespace/name (name alone for cluster-scoped objects).
func Key(obj client.Object) string {
	if obj.GetNamespace() == "" {
		return obj.GetName()
	}
	return obj.GetNamespace() + "/" + obj.GetName()
}
