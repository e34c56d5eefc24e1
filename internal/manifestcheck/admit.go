// Package manifestcheck is what the API server would do with a manifest before storing it, so that
// `kubectl router plan` refuses what the API server refuses: the operator's kinds decoded, defaulted
// and validated against the CRDs the cluster serves with kube-apiserver's own code
// (k8s.io/apiextensions-apiserver), the metadata of Namespaces and Services validated, and with
// --delete the objects looked up. It reads the CRDs and, where the objects plan predicts from do not
// say, whether an object exists; it writes nothing.
package manifestcheck

import (
	"context"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metavalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/service-router/service-router-operator/apis/cluster/v1alpha1"
)

// RefusedError says the API server would refuse manifests (or, with --delete, find no object for
// them): plan predicts nothing, since nothing would happen. Errors are the API server's own, one
// per manifest, worded as it words them.
type RefusedError struct{ Errors []error }

func (e *RefusedError) Error() string {
	lines := make([]string, len(e.Errors))
	for i, err := range e.Errors {
		lines[i] = "  " + err.Error()
	}
	return fmt.Sprintf("the API server would refuse %d manifest(s), so plan predicts nothing:\n%s", len(e.Errors), strings.Join(lines, "\n"))
}

func refused(errs []error) error {
	if len(errs) == 0 {
		return nil
	}
	return &RefusedError{Errors: errs}
}

var (
	namespaceGK = schema.GroupKind{Kind: "Namespace"}
	serviceGK   = schema.GroupKind{Kind: "Service"}
)

// Existing are the objects that exist, as plan reads them (preview's World).
type Existing interface {
	// Object is the live object of a kind, namespace and name (nil: none), and whether that
	// answer is definite: false when the objects do not hold every object of that kind and name.
	Object(gk schema.GroupKind, namespace, name string) (obj client.Object, definite bool)
}

// Admit returns objs as the API server would store them, or a *RefusedError naming each one it
// would refuse. Applying: the operator's kinds are decoded (unknown fields refused, defaults
// applied) and validated against the CRDs the cluster serves; Namespaces and Services, which plan
// reads only for their names, labels and annotations, get the API server's metadata validation
// (their other fields are validated by kube-apiserver code no plugin can import: `kubectl apply
// --dry-run=server` checks them); kinds the operator does not read change no prediction and are
// not checked. Deleting: each object of a kind plan reads must exist, as `kubectl delete -f` says.
func Admit(ctx context.Context, c client.Reader, existing Existing, objs []*unstructured.Unstructured, del bool, namespace string) ([]*unstructured.Unstructured, error) {
	if del {
		errs, err := notFound(ctx, c, existing, objs, namespace)
		if err != nil {
			return nil, err
		}
		return objs, refused(errs)
	}
	schemas, err := ReadSchemas(ctx, c, objs)
	if err != nil {
		return nil, err
	}
	return schemas.Admit(ctx, existing, objs, namespace)
}

// Admit is the apply half of Admit, with the CRDs' schemas at hand.
func (s Schemas) Admit(ctx context.Context, existing Existing, objs []*unstructured.Unstructured, namespace string) ([]*unstructured.Unstructured, error) {
	out := make([]*unstructured.Unstructured, len(objs))
	var errs []error
	for i, u := range objs {
		var err error
		out[i], err = s.admitOne(ctx, existing, u, namespace)
		if err != nil {
			errs = append(errs, err)
		}
	}
	if err := refused(errs); err != nil {
		return nil, err
	}
	return out, nil
}

func (s Schemas) admitOne(ctx context.Context, existing Existing, u *unstructured.Unstructured, namespace string) (*unstructured.Unstructured, error) {
	gvk := u.GroupVersionKind()
	switch gk := gvk.GroupKind(); {
	case ours(gk.Group):
		crd, ok := s[gvk]
		if !ok {
			return nil, &meta.NoKindMatchError{GroupKind: gk, SearchedVersions: []string{gvk.Version}}
		}
		return crd.admit(ctx, existing, u, namespace)
	case gk == namespaceGK:
		return u, invalid(u, metavalidation.ValidateObjectMetaAccessor(u, false, metavalidation.ValidateNamespaceName, field.NewPath("metadata")))
	case gk == serviceGK:
		u = placed(u, namespace, true)
		return u, invalid(u, metavalidation.ValidateObjectMetaAccessor(u, true, metavalidation.NameIsDNS1035Label, field.NewPath("metadata")))
	}
	return u, nil
}

// admit decodes and validates one custom resource as the API server would create it, or update
// the live object of that name.
func (s *crdSchema) admit(ctx context.Context, existing Existing, u *unstructured.Unstructured, namespace string) (*unstructured.Unstructured, error) {
	u = placed(u, namespace, s.namespaced)
	if err := s.decode(u); err != nil {
		return nil, err
	}
	unstructured.RemoveNestedField(u.Object, "status") // the status subresource: a create or update drops it after decoding
	current, _ := existing.Object(u.GroupVersionKind().GroupKind(), u.GetNamespace(), u.GetName())
	var old *unstructured.Unstructured
	if current != nil {
		content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(current)
		if err != nil {
			return nil, err
		}
		old = &unstructured.Unstructured{Object: content}
		old.SetGroupVersionKind(u.GroupVersionKind())
		unstructured.RemoveNestedField(old.Object, "status")
	}
	return u, invalid(u, s.validate(ctx, u, old))
}

// invalid is the API server's 422 for an object's field errors.
func invalid(u *unstructured.Unstructured, errs field.ErrorList) error {
	if len(errs) == 0 {
		return nil
	}
	return apierrors.NewInvalid(u.GroupVersionKind().GroupKind(), u.GetName(), errs)
}

// placed is a copy of u where kubectl and the API server put it: a namespaced object
// without a namespace in the command's, a cluster-scoped one in none.
func placed(u *unstructured.Unstructured, namespace string, namespaced bool) *unstructured.Unstructured {
	u = u.DeepCopy()
	switch {
	case !namespaced:
		u.SetNamespace("")
	case u.GetNamespace() == "":
		u.SetNamespace(namespace)
	}
	return u
}

// notFound is what `kubectl delete -f` reports for the manifests whose object does not exist,
// among the kinds plan reads (the others it may not read, and their deletion predicts nothing).
func notFound(ctx context.Context, c client.Reader, existing Existing, objs []*unstructured.Unstructured, namespace string) ([]error, error) {
	var errs []error
	for _, u := range objs {
		gk := u.GroupVersionKind().GroupKind()
		var resource schema.GroupResource
		switch {
		case crdNames[gk] != "":
			resource = resourceOf(gk)
		case gk == namespaceGK, gk == serviceGK:
			resource = schema.GroupResource{Resource: strings.ToLower(gk.Kind) + "s"}
		default:
			continue
		}
		u = placed(u, namespace, gk.Group != clusterv1alpha1.GroupVersion.Group && gk != namespaceGK)
		exists, err := existsIn(ctx, c, existing, u)
		if err != nil {
			return nil, err
		}
		if !exists {
			errs = append(errs, apierrors.NewNotFound(resource, u.GetName()))
		}
	}
	return errs, nil
}

// existsIn answers from the objects plan predicts from where they hold every object of the kind
// and name, and otherwise (a Service not labelled istio, a singleton's kind under another name)
// asks the cluster.
func existsIn(ctx context.Context, c client.Reader, existing Existing, u *unstructured.Unstructured) (bool, error) {
	if obj, definite := existing.Object(u.GroupVersionKind().GroupKind(), u.GetNamespace(), u.GetName()); definite {
		return obj != nil, nil
	}
	obj := &metav1.PartialObjectMetadata{}
	obj.SetGroupVersionKind(u.GroupVersionKind())
	switch err := c.Get(ctx, client.ObjectKeyFromObject(u), obj); {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("reading %s %s: %w", u.GetKind(), client.ObjectKeyFromObject(u), err)
	}
	return true, nil
}
