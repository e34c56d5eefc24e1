package controllers

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	externaldnsv1alpha1 "sigs.k8s.io/external-dns/apis/v1alpha1"

	"github.com/service-router/service-router-operator/internal/desired"
)

// errCacheLag asks for a retry: the API server has an object the cache has not seen yet.
var errCacheLag = errors.New("the object exists but is not in the cache yet; retrying")

// endpointSyncer makes a set of DNSEndpoints the operator owns equal to a desired set.
type endpointSyncer struct {
	client client.Client
	// apiReader reads from the API server directly. It is used only when a create finds the
	// name taken by an object the cache does not hold (the cache only holds managed objects), to
	// tell an unmanaged object (a conflict) from cache lag.
	apiReader client.Reader
	recorder  events.EventRecorder
}

// syncResult says what a sync did.
type syncResult struct {
	// Applied are the desired endpoints that now exist as desired.
	Applied []*externaldnsv1alpha1.DNSEndpoint
	// Conflicts name the desired endpoints whose name is taken by an object the operator does
	// not own; those objects were left untouched.
	Conflicts []string
}

// sync creates missing endpoints, updates changed ones and deletes owned ones that are not
// desired. current are the endpoints the cache holds for this owner; owns says whether an
// existing object belongs to this owner (it is never called for unmanaged objects). Events about
// each change go to eventTarget (none when nil) with the given reason.
func (s endpointSyncer) sync(ctx context.Context, want, current []*externaldnsv1alpha1.DNSEndpoint,
	owns func(*externaldnsv1alpha1.DNSEndpoint) bool, eventTarget runtime.Object, reason string) (syncResult, error) {
	var res syncResult
	byName := map[string]*externaldnsv1alpha1.DNSEndpoint{}
	for _, ep := range current {
		byName[ep.Namespace+"/"+ep.Name] = ep
	}
	var errs []error
	for _, w := range want {
		key := w.Namespace + "/" + w.Name
		existing, found := byName[key]
		delete(byName, key)
		switch {
		case found && !owns(existing):
			res.Conflicts = append(res.Conflicts, key)
		case found && desired.EndpointUpToDate(existing, w):
			res.Applied = append(res.Applied, w)
		case found:
			updated := existing.DeepCopy()
			desired.MergeMeta(updated, w)
			updated.Spec = *w.Spec.DeepCopy()
			if err := s.client.Update(ctx, updated, fieldOwner); err != nil {
				errs = append(errs, fmt.Errorf("updating DNSEndpoint %s: %w", key, err))
				continue
			}
			res.Applied = append(res.Applied, w)
			s.event(eventTarget, updated, reason, "Update", "updated DNSEndpoint %s: %s", key, describeRecords(w))
		default:
			conflict, err := s.create(ctx, w, owns)
			switch {
			case err != nil:
				errs = append(errs, err)
			case conflict:
				res.Conflicts = append(res.Conflicts, key)
			default:
				res.Applied = append(res.Applied, w)
				s.event(eventTarget, w, reason, "Create", "created DNSEndpoint %s: %s", key, describeRecords(w))
			}
		}
	}
	for key, stale := range byName {
		if !owns(stale) {
			continue
		}
		if err := s.client.Delete(ctx, stale, client.Preconditions{UID: &stale.UID}); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("deleting DNSEndpoint %s: %w", key, err))
			continue
		}
		s.event(eventTarget, nil, reason, "Delete", "deleted DNSEndpoint %s: %s", key, describeRecords(stale))
	}
	slices.Sort(res.Conflicts)
	return res, errors.Join(errs...)
}

// create creates w; when the name is taken it reports a conflict unless the existing object is
// one this owner owns (then the cache is behind and the caller retries).
func (s endpointSyncer) create(ctx context.Context, w *externaldnsv1alpha1.DNSEndpoint, owns func(*externaldnsv1alpha1.DNSEndpoint) bool) (conflict bool, err error) {
	err = s.client.Create(ctx, w.DeepCopy(), fieldOwner)
	if !apierrors.IsAlreadyExists(err) {
		if err != nil {
			return false, fmt.Errorf("creating DNSEndpoint %s/%s: %w", w.Namespace, w.Name, err)
		}
		return false, nil
	}
	live := &externaldnsv1alpha1.DNSEndpoint{}
	if err := s.apiReader.Get(ctx, client.ObjectKeyFromObject(w), live); err != nil {
		return false, fmt.Errorf("reading existing DNSEndpoint %s/%s: %w", w.Namespace, w.Name, err)
	}
	if desired.IsManaged(live) && owns(live) {
		return false, errCacheLag
	}
	return true, nil
}

func (s endpointSyncer) event(target, related runtime.Object, reason, action, note string, args ...any) {
	if target != nil {
		s.recorder.Eventf(target, related, "Normal", reason, action, note, args...)
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
