package controllers

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
)

// controllerOwner maps a generated object to its controlling owner of kind gk in the same
// namespace: what handler.EnqueueRequestForOwner does with OnlyControllerOwner, without asking the
// REST mapper on every event (at start-up with 10,000 DNSEndpoints that lookup alone allocated
// about 90 MB).
func controllerOwner(gk schema.GroupKind) handler.EventHandler {
	return handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
		return controllerOwnerOf(gk, o)
	})
}

func controllerOwnerOf(gk schema.GroupKind, o client.Object) []reconcile.Request {
	ref := metav1.GetControllerOfNoCopy(o)
	if ref == nil || ref.Kind != gk.Kind {
		return nil
	}
	if gv, err := schema.ParseGroupVersion(ref.APIVersion); err != nil || gv.Group != gk.Group {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: ref.Name}}}
}

// routingGK is the GroupKind of a routing.router.io kind.
func routingGK(kind string) schema.GroupKind {
	return schema.GroupKind{Group: routingv1alpha1.GroupVersion.Group, Kind: kind}
}
