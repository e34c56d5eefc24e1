package controllers

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/service-router/service-router-operator/apis/cluster/v1alpha1"
	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
	"github.com/service-router/service-router-operator/internal/decide"
	"github.com/service-router/service-router-operator/internal/ingress"
)

// fetch reads the object a request names from the cache. ok is false when it is gone or being
// deleted: there is nothing to reconcile (the garbage collector removes what it controls).
func fetch[T client.Object](ctx context.Context, c client.Reader, key client.ObjectKey, obj T) (ok bool, err error) {
	if err := c.Get(ctx, key, obj); err != nil {
		return false, client.IgnoreNotFound(err)
	}
	return obj.GetDeletionTimestamp().IsZero(), nil
}

// getSingletons reads the ClusterIdentity and the DNSConfiguration; nil for one that does not exist.
func getSingletons(ctx context.Context, c client.Reader) (*clusterv1alpha1.ClusterIdentity, *clusterv1alpha1.DNSConfiguration, error) {
	identity, err := getIdentity(ctx, c)
	if err != nil {
		return nil, nil, err
	}
	configuration, err := getConfiguration(ctx, c)
	return identity, configuration, err
}

// getIdentity reads the ClusterIdentity singleton from the cache; nil when it does not exist.
func getIdentity(ctx context.Context, c client.Reader) (*clusterv1alpha1.ClusterIdentity, error) {
	ci := &clusterv1alpha1.ClusterIdentity{}
	return getOptional(ctx, c, clusterv1alpha1.ClusterIdentityName, ci)
}

// getConfiguration reads the DNSConfiguration singleton from the cache; nil when it does not exist.
func getConfiguration(ctx context.Context, c client.Reader) (*clusterv1alpha1.DNSConfiguration, error) {
	cfg := &clusterv1alpha1.DNSConfiguration{}
	return getOptional(ctx, c, clusterv1alpha1.DNSConfigurationName, cfg)
}

// getOptional reads a cluster-scoped singleton; nil (not an error) when it does not exist. A
// failed read is an error, never "absent": nothing may be removed on an unreadable input.
func getOptional[T client.Object](ctx context.Context, c client.Reader, name string, obj T) (T, error) {
	var none T
	if err := c.Get(ctx, client.ObjectKey{Name: name}, obj); err != nil {
		if apierrors.IsNotFound(err) {
			return none, nil
		}
		return none, fmt.Errorf("reading %T %s: %w", obj, name, err)
	}
	return obj, nil
}

// policyInForce returns the oldest DNSPolicy of a namespace, nil when there is none. A namespace
// should have one policy; when it has several, the oldest decides and the others report
// DuplicatePolicy.
func policyInForce(ctx context.Context, c client.Reader, namespace string) (*routingv1alpha1.DNSPolicy, error) {
	list := &routingv1alpha1.DNSPolicyList{}
	if err := c.List(ctx, list, client.InNamespace(namespace)); err != nil {
		return nil, fmt.Errorf("listing DNSPolicies in %s: %w", namespace, err)
	}
	policies := make([]*routingv1alpha1.DNSPolicy, len(list.Items))
	for i := range list.Items {
		policies[i] = &list.Items[i]
	}
	oldest, _ := decide.Oldest(policies)
	return oldest, nil
}

// +kubebuilder:rbac:groups="",resources=services,verbs=get;list;watch

// ingressService finds the ingress LoadBalancer Service of an Istio ingress controller in the
// ingress namespace a platform chose (see package ingress for the rule); nil when there is none.
// Services of other namespaces are never read.
func ingressService(ctx context.Context, c client.Reader, namespace, controller string) (*corev1.Service, error) {
	list := &corev1.ServiceList{}
	if err := c.List(ctx, list, client.InNamespace(namespace), client.MatchingFields{indexServiceIstio: ingressServiceKey(namespace, controller)}); err != nil {
		return nil, fmt.Errorf("listing ingress Services labelled istio=%s in %s: %w", controller, namespace, err)
	}
	return ingress.SelectService(list.Items), nil
}

// getNamespace reads a namespace's metadata from the cache. A namespace that holds an object the
// operator reconciles exists: when the cache does not show it yet, that is cache lag, never an
// empty set of labels or annotations (which could remove records).
func getNamespace(ctx context.Context, c client.Reader, name string) (*metav1.PartialObjectMetadata, error) {
	ns := namespaceMetadata()
	switch err := c.Get(ctx, client.ObjectKey{Name: name}, ns); {
	case apierrors.IsNotFound(err):
		return nil, errCacheLag
	case err != nil:
		return nil, fmt.Errorf("reading namespace %s: %w", name, err)
	}
	return ns, nil
}

// namespacesListing returns the names of the namespaces whose router.io/applications annotation
// lists application.
func namespacesListing(ctx context.Context, c client.Reader, application string) ([]string, error) {
	list := &metav1.PartialObjectMetadataList{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "NamespaceList"}}
	if err := c.List(ctx, list, client.MatchingFields{indexNamespaceApplication: application}); err != nil {
		return nil, fmt.Errorf("listing namespaces that own application %s: %w", application, err)
	}
	names := make([]string, len(list.Items))
	for i := range list.Items {
		names[i] = list.Items[i].Name
	}
	return names, nil
}

// listItems returns pointers to a list's items (no copies: the items are the caller's).
func listItems[T any](items []T) []*T {
	out := make([]*T, len(items))
	for i := range items {
		out[i] = &items[i]
	}
	return out
}
