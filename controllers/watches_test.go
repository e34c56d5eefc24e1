package controllers

import (
	"testing"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	externaldnsv1alpha1 "sigs.k8s.io/external-dns/apis/v1alpha1"
)

func TestControllerOwnerOf_OnlyTheControllingRouteInTheSameNamespace(t *testing.T) {
	route := routingGK("ServiceRoute")
	owned := func(refs ...metav1.OwnerReference) *externaldnsv1alpha1.DNSEndpoint {
		return &externaldnsv1alpha1.DNSEndpoint{ObjectMeta: metav1.ObjectMeta{Name: "ep", Namespace: "app", OwnerReferences: refs}}
	}
	yes := true
	ref := func(apiVersion, kind string, controller *bool) metav1.OwnerReference {
		return metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: "api-route", UID: "u", Controller: controller}
	}
	tests := []struct {
		name string
		obj  *externaldnsv1alpha1.DNSEndpoint
		want []reconcile.Request
	}{
		{"controlled by a route", owned(ref("routing.router.io/v1alpha1", "ServiceRoute", &yes)),
			[]reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: "app", Name: "api-route"}}}},
		{"owned but not controlled", owned(ref("routing.router.io/v1alpha1", "ServiceRoute", nil)), nil},
		{"controlled by another kind", owned(ref("routing.router.io/v1alpha1", "Gateway", &yes)), nil},
		{"same kind in another group", owned(ref("other.io/v1", "ServiceRoute", &yes)), nil},
		{"no owner", owned(), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, controllerOwnerOf(route, tt.obj))
		})
	}
}
