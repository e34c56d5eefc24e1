package controllers

import (
	"context"
	"fmt"
	"time"

	istionetworkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	clusterv1alpha1 "github.com/service-router/service-router-operator/apis/cluster/v1alpha1"
	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
	"github.com/service-router/service-router-operator/internal/desired"
	"github.com/service-router/service-router-operator/internal/ingress"
	"github.com/service-router/service-router-operator/internal/metrics"
	"github.com/service-router/service-router-operator/internal/plan"
)

// GatewayReconciler generates the Istio Gateway of each Gateway, with the hostnames of the Ready
// ServiceRoutes that reference it, and reports the ingress load balancer address.
type GatewayReconciler struct {
	client.Client
	// APIReader reads past the cache, only to check who owns an Istio Gateway whose name is taken.
	APIReader client.Reader
	Recorder  events.EventRecorder
	// ConflictRetry is how soon an ownership conflict is checked again.
	ConflictRetry time.Duration
}

// +kubebuilder:rbac:groups=routing.router.io,resources=gateways/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=networking.istio.io,resources=gateways,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=services,verbs=get;list;watch

func (r *GatewayReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	gw := &routingv1alpha1.Gateway{}
	if err := r.Get(ctx, req.NamespacedName, gw); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !gw.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil // the garbage collector removes the Istio Gateway it controls
	}
	in, err := r.gather(ctx, gw)
	if err != nil {
		return ctrl.Result{}, err
	}
	p := plan.Gateway(in)

	var result ctrl.Result
	if p.SyncIstio {
		conflict, err := r.syncIstioGateway(ctx, gw, p)
		if err != nil {
			return finish(ctrl.Result{}, err)
		}
		if conflict {
			result.RequeueAfter = r.ConflictRetry
			p.Outcome = plan.Outcome{Phase: string(routingv1alpha1.PhaseFailed), Reason: routingv1alpha1.ReasonOwnershipConflict,
				Message: fmt.Sprintf("Istio Gateway %s/%s exists and is not managed by this Gateway; it was left untouched", gw.Namespace, gw.Name)}
		}
	}
	original := gw.DeepCopy()
	gw.Status.Phase = routingv1alpha1.Phase(p.Phase)
	gw.Status.TargetHostname = p.Target
	gw.Status.LoadBalancerIP = p.LoadBalancerIP
	gw.Status.Hosts = int32(len(p.Hosts))
	gw.Status.ObservedGeneration = gw.Generation
	previous := setReady(&gw.Status.Conditions, gw.Generation, p.Outcome)
	changed := !equality.Semantic.DeepEqual(original.Status, gw.Status)
	return finish(result, writeStatus(ctx, r.Client, r.Recorder, gw, original, changed, previous, p.Outcome))
}

func (r *GatewayReconciler) gather(ctx context.Context, gw *routingv1alpha1.Gateway) (plan.GatewayInputs, error) {
	in := plan.GatewayInputs{Gateway: gw}
	var err error
	if in.Identity, err = getIdentity(ctx, r); err != nil {
		return in, err
	}
	routes := &routingv1alpha1.ServiceRouteList{}
	if err := r.List(ctx, routes, client.MatchingFields{indexRouteGateway: client.ObjectKeyFromObject(gw).String()}); err != nil {
		return in, fmt.Errorf("listing ServiceRoutes of the gateway: %w", err)
	}
	for i := range routes.Items {
		route := &routes.Items[i]
		if route.Status.Hostname != "" && route.DeletionTimestamp.IsZero() && meta.IsStatusConditionTrue(route.Status.Conditions, conditionReady) {
			in.Hosts = append(in.Hosts, route.Status.Hostname)
		}
	}
	svc, err := ingressService(ctx, r, gw.Spec.Controller)
	if err != nil || svc == nil {
		return in, err
	}
	addrs := ingress.ServiceAddresses(svc)
	in.Service, in.ServiceName = &addrs, client.ObjectKeyFromObject(svc).String()
	return in, nil
}

// ingressService finds the ingress LoadBalancer Service of an Istio ingress controller (see
// package ingress for the rule); nil when there is none.
func ingressService(ctx context.Context, c client.Reader, controller string) (*corev1.Service, error) {
	list := &corev1.ServiceList{}
	if err := c.List(ctx, list, client.MatchingFields{indexServiceIstio: controller}); err != nil {
		return nil, fmt.Errorf("listing ingress Services labelled istio=%s: %w", controller, err)
	}
	return ingress.SelectService(list.Items), nil
}

// syncIstioGateway makes the generated Istio Gateway match the plan (none when it has no hosts).
// It reports a conflict, and changes nothing, when an Istio Gateway of that name is not the
// operator's.
func (r *GatewayReconciler) syncIstioGateway(ctx context.Context, gw *routingv1alpha1.Gateway, p plan.GatewayPlan) (conflict bool, err error) {
	key := client.ObjectKeyFromObject(gw)
	current := &istionetworkingv1.Gateway{}
	err = r.Get(ctx, key, current) // the cache holds only Istio Gateways with the managed-by label
	found := err == nil
	if err != nil && !apierrors.IsNotFound(err) {
		return false, fmt.Errorf("reading Istio Gateway: %w", err)
	}
	var want *istionetworkingv1.Gateway
	if len(p.Hosts) > 0 {
		want = desired.IstioGateway(gw, p.Hosts)
	}
	switch {
	case found && !desired.OwnedBy(current, "Gateway", gw.Name):
		return want != nil, nil
	case found && want == nil:
		if err := r.Delete(ctx, current, client.Preconditions{UID: &current.UID}); err != nil && !apierrors.IsNotFound(err) {
			return false, fmt.Errorf("deleting Istio Gateway %s: %w", key, err)
		}
		r.Recorder.Eventf(gw, current, "Normal", p.Reason, "Delete", "deleted Istio Gateway %s: no hosts left", key)
	case found && !desired.IstioGatewayUpToDate(current, want):
		updated := current.DeepCopy()
		desired.MergeMeta(updated, want)
		want.Spec.DeepCopyInto(&updated.Spec)
		if err := r.Update(ctx, updated, fieldOwner); err != nil {
			return false, fmt.Errorf("updating Istio Gateway %s: %w", key, err)
		}
		r.Recorder.Eventf(gw, updated, "Normal", p.Reason, "Update", "updated Istio Gateway %s: %d host(s)", key, len(p.Hosts))
	case !found && want != nil:
		err := r.Create(ctx, want.DeepCopy(), fieldOwner)
		if apierrors.IsAlreadyExists(err) {
			live := &istionetworkingv1.Gateway{}
			if err := r.APIReader.Get(ctx, key, live); err != nil {
				return false, fmt.Errorf("reading existing Istio Gateway %s: %w", key, err)
			}
			if desired.OwnedBy(live, "Gateway", gw.Name) {
				return false, errCacheLag
			}
			return true, nil
		}
		if err != nil {
			return false, fmt.Errorf("creating Istio Gateway %s: %w", key, err)
		}
		r.Recorder.Eventf(gw, want, "Normal", p.Reason, "Create", "created Istio Gateway %s: %d host(s)", key, len(p.Hosts))
	}
	return false, nil
}

// SetupWithManager registers the controller: the hosts follow the referencing ServiceRoutes
// (status included: only Ready routes count), the address follows the ingress Services, and the
// target hostname follows the ClusterIdentity.
func (r *GatewayReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("gateway").
		For(&routingv1alpha1.Gateway{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Owns(&istionetworkingv1.Gateway{}).
		Watches(&routingv1alpha1.ServiceRoute{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
			return []reconcile.Request{{NamespacedName: plan.GatewayRef(o.(*routingv1alpha1.ServiceRoute))}}
		})).
		Watches(&corev1.Service{}, handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
			controller := o.GetLabels()[ingressLabel]
			if controller == "" {
				return nil
			}
			return requestsFor(ctx, r, &routingv1alpha1.GatewayList{}, client.MatchingFields{indexGatewayController: controller})
		})).
		Watches(&clusterv1alpha1.ClusterIdentity{}, handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, _ client.Object) []reconcile.Request {
			return requestsFor(ctx, r, &routingv1alpha1.GatewayList{})
		}), specChanges).
		Complete(metrics.Instrument("gateway", r))
}
