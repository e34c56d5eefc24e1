package integration

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	istionetworkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	externaldnsv1alpha1 "sigs.k8s.io/external-dns/apis/v1alpha1"

	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
)

// shippedEditorRole is the name config/default gives config/rbac/editor_role.yaml.
const shippedEditorRole = "service-router-editor"

// namespaceEditor returns a client acting as a user who has only the built-in edit ClusterRole in
// namespace (a RoleBinding, as a platform grants an application team), with the shipped editor
// role installed so that it aggregates into edit, as it does in a cluster running the operator.
func namespaceEditor(t *testing.T, user, namespace string) client.Client {
	t.Helper()
	ctx := context.Background()
	roles := readManifests(t, filepath.Join(env.RepoRoot, "config", "rbac", "editor_role.yaml"))
	require.Len(t, roles, 1)
	editor := roles[0]
	editor.SetName(shippedEditorRole)
	if err := env.Client.Create(ctx, editor); err != nil && !apierrors.IsAlreadyExists(err) {
		require.NoError(t, err)
	}
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: user + "-edit", Namespace: namespace},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "edit"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
	}
	require.NoError(t, env.Client.Create(ctx, binding))

	// The aggregation controller copies the editor role's rules into edit asynchronously.
	waitFor(t, fmt.Sprintf("%s to be allowed to create ServiceRoutes in %s through the built-in edit role", user, namespace), func() string {
		review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User:               user,
			ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: namespace, Verb: "create", Group: routingv1alpha1.GroupVersion.Group, Resource: "serviceroutes"},
		}}
		if err := env.Client.Create(ctx, review); err != nil {
			return err.Error()
		}
		if !review.Status.Allowed {
			return "not allowed yet: " + review.Status.Reason
		}
		return ""
	})

	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	c, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	require.NoError(t, err)
	return c
}

// requireForbidden fails unless err is the API server's 403.
func requireForbidden(t *testing.T, err error, what string) {
	t.Helper()
	require.Error(t, err, "%s must be forbidden", what)
	require.True(t, apierrors.IsForbidden(err), "%s: want Forbidden, got %v", what, err)
}

// changeRecorder watches, through API watches from a listed resourceVersion (every change, not
// samples), the objects a tenant must not be able to affect: DNSEndpoints, Istio Gateways,
// ServiceRoutes and router.io Gateways of some namespaces. Any event at all is a change.
type changeRecorder struct {
	t      *testing.T
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.Mutex
	changes []string
	before  map[string]string // kind namespace/name → UID/resourceVersion at the start
}

var untouchableKinds = []client.ObjectList{
	&externaldnsv1alpha1.DNSEndpointList{}, &istionetworkingv1.GatewayList{},
	&routingv1alpha1.ServiceRouteList{}, &routingv1alpha1.GatewayList{},
}

// recordChanges starts the watches and returns once they are established.
func recordChanges(t *testing.T, namespaces ...string) *changeRecorder {
	t.Helper()
	wc, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	r := &changeRecorder{t: t, cancel: cancel, before: map[string]string{}}
	t.Cleanup(r.halt)
	for _, ns := range namespaces {
		for _, kind := range untouchableKinds {
			list := kind.DeepCopyObject().(client.ObjectList)
			require.NoError(t, wc.List(ctx, list, client.InNamespace(ns)))
			require.NoError(t, meta.EachListItem(list, func(o runtime.Object) error {
				obj := o.(client.Object)
				r.before[objectKey(obj)] = string(obj.GetUID()) + "/" + obj.GetResourceVersion()
				return nil
			}))
			w, err := wc.Watch(ctx, list, client.InNamespace(ns), &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: list.GetResourceVersion()}})
			require.NoError(t, err)
			r.wg.Add(1)
			go func() {
				defer r.wg.Done()
				defer w.Stop()
				for ev := range w.ResultChan() {
					if ctx.Err() != nil {
						return
					}
					if ev.Type == watch.Bookmark {
						continue
					}
					r.mu.Lock()
					if obj, ok := ev.Object.(client.Object); ok && ev.Type != watch.Error {
						r.changes = append(r.changes, fmt.Sprintf("%s %s (resourceVersion %s)", objectKey(obj), ev.Type, obj.GetResourceVersion()))
					} else {
						r.changes = append(r.changes, fmt.Sprintf("the watch of %T in %s ended: %v", list, ns, ev.Object))
					}
					r.mu.Unlock()
				}
			}()
		}
	}
	return r
}

func (r *changeRecorder) halt() {
	r.cancel()
	r.wg.Wait()
}

// requireNoChange waits quietly for a moment (the operator reacts to an event within
// milliseconds; what it has not done by then it does not do), stops the watches, and fails if
// anything changed, or if a final list differs from the first in any UID or resourceVersion.
func (r *changeRecorder) requireNoChange(quiet time.Duration, namespaces ...string) {
	r.t.Helper()
	time.Sleep(quiet)
	r.halt()
	after := map[string]string{}
	for _, ns := range namespaces {
		for _, kind := range untouchableKinds {
			list := kind.DeepCopyObject().(client.ObjectList)
			require.NoError(r.t, env.Client.List(context.Background(), list, client.InNamespace(ns)))
			require.NoError(r.t, meta.EachListItem(list, func(o runtime.Object) error {
				obj := o.(client.Object)
				after[objectKey(obj)] = string(obj.GetUID()) + "/" + obj.GetResourceVersion()
				return nil
			}))
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	require.Empty(r.t, r.changes, "the tenant changed objects outside its namespace")
	require.Equal(r.t, r.before, after, "UIDs and resourceVersions outside the tenant's namespace")
}

// requireNothingPublishedIn fails if namespace holds a DNSEndpoint or an Istio Gateway.
func requireNothingPublishedIn(t *testing.T, namespace string) {
	t.Helper()
	eps := &externaldnsv1alpha1.DNSEndpointList{}
	require.NoError(t, env.Client.List(context.Background(), eps, client.InNamespace(namespace)))
	var names []string
	for _, ep := range eps.Items {
		names = append(names, ep.Name)
	}
	require.Empty(t, names, "DNSEndpoints in %s", namespace)
	igs := &istionetworkingv1.GatewayList{}
	require.NoError(t, env.Client.List(context.Background(), igs, client.InNamespace(namespace)))
	require.Empty(t, igs.Items, "Istio Gateways in %s", namespace)
}

// waitRouteReason waits until the route's Ready condition, for its current generation, has reason
// and returns the route.
func waitRouteReason(t *testing.T, c client.Reader, ns, name, reason string) *routingv1alpha1.ServiceRoute {
	t.Helper()
	route := &routingv1alpha1.ServiceRoute{}
	waitFor(t, fmt.Sprintf("ServiceRoute %s/%s to be %s", ns, name, reason), func() string {
		if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, route); err != nil {
			return err.Error()
		}
		ready := meta.FindStatusCondition(route.Status.Conditions, "Ready")
		switch {
		case ready == nil:
			return "no Ready condition"
		case ready.ObservedGeneration != route.Generation:
			return fmt.Sprintf("Ready observedGeneration %d, generation %d", ready.ObservedGeneration, route.Generation)
		case ready.Reason != reason:
			return fmt.Sprintf("Ready=%s %s: %s", ready.Status, ready.Reason, ready.Message)
		}
		return ""
	})
	return route
}

// loadBalancerService is a LoadBalancer Service labelled as an Istio ingress gateway of controller.
func loadBalancerService(namespace, name, controller string) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: map[string]string{"istio": controller}},
		Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{{Name: "https", Port: 443}}},
	}
}

// annotateNamespace sets (value != "") or removes a namespace's annotation, as the platform does.
func annotateNamespace(t *testing.T, name, key, value string) {
	t.Helper()
	updateNamespace(t, name, func(ns *corev1.Namespace) {
		if value == "" {
			delete(ns.Annotations, key)
			return
		}
		if ns.Annotations == nil {
			ns.Annotations = map[string]string{}
		}
		ns.Annotations[key] = value
	})
}

// labelNamespace sets (value != "") or removes a namespace's label, as the platform does.
func labelNamespace(t *testing.T, name, key, value string) {
	t.Helper()
	updateNamespace(t, name, func(ns *corev1.Namespace) {
		if value == "" {
			delete(ns.Labels, key)
			return
		}
		if ns.Labels == nil {
			ns.Labels = map[string]string{}
		}
		ns.Labels[key] = value
	})
}

func updateNamespace(t *testing.T, name string, mutate func(*corev1.Namespace)) {
	t.Helper()
	require.NoError(t, retryOnConflict(func() error {
		ns := &corev1.Namespace{}
		if err := env.Client.Get(context.Background(), client.ObjectKey{Name: name}, ns); err != nil {
			return err
		}
		mutate(ns)
		return env.Client.Update(context.Background(), ns)
	}))
}

// istioHostsOf returns the hosts of a generated Istio Gateway (nil when it does not exist).
func istioHostsOf(t *testing.T, namespace, name string) []string {
	t.Helper()
	ig := &istionetworkingv1.Gateway{}
	err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: name}, ig)
	if apierrors.IsNotFound(err) {
		return nil
	}
	require.NoError(t, err)
	hosts := istioHosts(ig)
	slices.Sort(hosts)
	return hosts
}
