package controllers

import (
	"k8s.io/apimachinery/pkg/api/meta"

	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
	"github.com/service-router/service-router-operator/internal/plan"
)

// One generated Istio Gateway must stay under etcd's request limit, so a Gateway admits the hosts
// of its oldest routes up to a byte budget (plan.AdmitHosts), records the cutoff in
// status.hostLimit, and the routes from the cutoff on report GatewayHostLimit and publish nothing
// (plan.Route reads the cutoff from the Gateway). plan.GatewayHosts decides the admitted hosts.

// setHostLimit writes the admission's cutoff into the Gateway's status: status.hostLimit and the
// HostLimit condition, both absent while every route fits.
func setHostLimit(gw *routingv1alpha1.Gateway, limit *routingv1alpha1.GatewayHostLimit) {
	gw.Status.HostLimit = limit
	if c := plan.HostLimitCondition(gw, limit); c != nil {
		meta.SetStatusCondition(&gw.Status.Conditions, *c)
	} else {
		meta.RemoveStatusCondition(&gw.Status.Conditions, routingv1alpha1.ConditionHostLimit)
	}
}
