package controllers

import (
	"context"
	"fmt"
	"time"

	istionetworkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	externaldnsv1alpha1 "sigs.k8s.io/external-dns/apis/v1alpha1"

	"github.com/service-router/service-router-operator/internal/metrics"
	"github.com/service-router/service-router-operator/internal/naming"
)

// CacheOptions restricts the informer caches to what the operator manages, so that memory follows
// the operator's objects rather than the cluster's size: DNSEndpoints and Istio Gateways carrying
// the managed-by label (objects of others never enter the cache; a name collision with one is
// detected at create time), and Services carrying an istio label (ingress gateways). Managed
// fields are stripped from every cached object.
func CacheOptions() cache.Options {
	managed := labels.SelectorFromSet(labels.Set{naming.LabelManagedBy: naming.ManagedByValue})
	hasIstioLabel, err := labels.NewRequirement(naming.IngressServiceSelector, selection.Exists, nil)
	if err != nil {
		panic(err) // a constant requirement; cannot fail
	}
	return cache.Options{
		DefaultTransform: cache.TransformStripManagedFields(),
		ByObject: map[client.Object]cache.ByObject{
			&externaldnsv1alpha1.DNSEndpoint{}: {Label: managed},
			&istionetworkingv1.Gateway{}:       {Label: managed},
			&corev1.Service{}:                  {Label: labels.NewSelector().Add(*hasIstioLabel)},
		},
	}
}

// Options tune the controllers.
type Options struct {
	// ConflictRetryInterval is how often an object blocked by an ownership conflict checks
	// again whether the foreign object is gone (it is not in the cache, so its deletion raises no
	// event). Default one minute.
	ConflictRetryInterval time.Duration
}

// Setup registers the field indexes and the six controllers with the manager, each instrumented
// for the per-controller health metrics, and the collector of the resource-state metrics.
func Setup(ctx context.Context, mgr ctrl.Manager, opts Options) error {
	if opts.ConflictRetryInterval <= 0 {
		opts.ConflictRetryInterval = time.Minute
	}
	if err := addIndexes(ctx, mgr.GetFieldIndexer()); err != nil {
		return fmt.Errorf("registering field indexes: %w", err)
	}
	c, apiReader := mgr.GetClient(), mgr.GetAPIReader()
	recorder := mgr.GetEventRecorder("service-router-operator")
	ingressConflicts := metrics.NewConflictSet()
	setups := []struct {
		name  string
		setup func(ctrl.Manager) error
	}{
		{"clusteridentity", (&ClusterIdentityReconciler{Client: c, Recorder: recorder}).SetupWithManager},
		{"dnsconfiguration", (&DNSConfigurationReconciler{Client: c, Recorder: recorder}).SetupWithManager},
		{"dnspolicy", (&DNSPolicyReconciler{Client: c, Recorder: recorder}).SetupWithManager},
		{"serviceroute", (&ServiceRouteReconciler{Client: c, APIReader: apiReader, Recorder: recorder, ConflictRetry: opts.ConflictRetryInterval}).SetupWithManager},
		{"gateway", (&GatewayReconciler{Client: c, APIReader: apiReader, Recorder: recorder, ConflictRetry: opts.ConflictRetryInterval}).SetupWithManager},
		{"ingressdns", (&IngressDNSReconciler{Client: c, APIReader: apiReader, Recorder: recorder, ConflictRetry: opts.ConflictRetryInterval, Conflicts: ingressConflicts}).SetupWithManager},
	}
	for _, s := range setups {
		if err := s.setup(mgr); err != nil {
			return fmt.Errorf("setting up the %s controller: %w", s.name, err)
		}
	}
	if err := mgr.Add(metrics.NewStateCollector(c, ingressConflicts)); err != nil {
		return fmt.Errorf("adding the state metrics collector: %w", err)
	}
	return nil
}
