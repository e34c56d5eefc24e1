package routerplan

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	clusterv1alpha1 "github.com/service-router/service-router-operator/apis/cluster/v1alpha1"
	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
	"github.com/service-router/service-router-operator/internal/naming"
)

// ReadManifests reads the objects of the given files, directories (their .yaml, .yml and .json
// files, not recursively, as kubectl -f does) or "-" (stdin). Multi-document YAML and List
// objects are split into their items.
func ReadManifests(paths []string, stdin io.Reader) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	for _, p := range paths {
		if p == "-" {
			objs, err := decodeAll(stdin, "stdin")
			if err != nil {
				return nil, err
			}
			out = append(out, objs...)
			continue
		}
		files, err := manifestFiles(p)
		if err != nil {
			return nil, err
		}
		for _, f := range files {
			objs, err := readFile(f)
			if err != nil {
				return nil, err
			}
			out = append(out, objs...)
		}
	}
	return out, nil
}

func manifestFiles(path string) ([]string, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !info.IsDir() {
		return []string{path}, nil
	}
	entries, err := os.ReadDir(path)
	if err != nil {
		return nil, err
	}
	var files []string
	for _, e := range entries {
		switch strings.ToLower(filepath.Ext(e.Name())) {
		case ".yaml", ".yml", ".json":
			if !e.IsDir() {
				files = append(files, filepath.Join(path, e.Name()))
			}
		}
	}
	return files, nil
}

func readFile(path string) ([]*unstructured.Unstructured, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return decodeAll(f, path)
}

func decodeAll(r io.Reader, source string) ([]*unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bufio.NewReader(r), 4096)
	var out []*unstructured.Unstructured
	for doc := 1; ; doc++ {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, fmt.Errorf("%s: document %d: %w", source, doc, err)
		}
		// Integers as int64, as the API server decodes the JSON kubectl sends (its validation
		// messages name the type: "integer", not "number").
		obj := map[string]any{}
		if err := utiljson.Unmarshal(raw, &obj); err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", source, doc, err)
		}
		if len(obj) == 0 {
			continue // an empty document
		}
		u := &unstructured.Unstructured{Object: obj}
		if u.GetKind() == "" || u.GetAPIVersion() == "" {
			return nil, fmt.Errorf("%s: document %d has no apiVersion or kind", source, doc)
		}
		if u.IsList() {
			if err := u.EachListItem(func(item runtime.Object) error {
				out = append(out, item.(*unstructured.Unstructured))
				return nil
			}); err != nil {
				return nil, fmt.Errorf("%s: document %d: %w", source, doc, err)
			}
			continue
		}
		out = append(out, u)
	}
}

// Change says what overlaying one manifest did to the world.
type Change struct {
	Kind   string `json:"kind"`
	Object string `json:"object"`
	// Action is create, change, unchanged, delete, absent (a deletion of an object that does not
	// exist: Overlay alone; plan refuses those first, see Admit) or ignored (a kind the operator
	// does not read).
	Action string `json:"action"`
	Note   string `json:"note,omitempty"`
}

// previewUID marks the objects a manifest creates: they have no UID yet.
const previewUID = "preview:"

func isPreviewUID(uid types.UID) bool { return strings.HasPrefix(string(uid), previewUID) }

// Overlay changes w as applying objs would (`kubectl apply -f`), or deleting them when del
// (`kubectl delete -f`), for every kind the operator reads. A changed object keeps its UID,
// creation time and status (the operator's decisions read status only of Gateways and routes,
// which the operator writes itself); a created one is the youngest of all (created at now), so
// it loses every "oldest wins" question to the objects that exist. Objects without a namespace
// are put in namespace (kubectl's --namespace or the context's). Labels and annotations of a
// Namespace or Service are merged over the existing ones, as kubectl apply keeps what others set.
func Overlay(w *World, objs []*unstructured.Unstructured, del bool, namespace string, now time.Time) ([]Change, error) {
	var changes []Change
	for _, u := range objs {
		c, err := overlayOne(w, u, del, namespace, now)
		if err != nil {
			return changes, fmt.Errorf("%s %s: %w", u.GetKind(), u.GetName(), err)
		}
		changes = append(changes, c)
	}
	// An object created in a namespace that neither exists nor is created by the manifests: the
	// API server refuses it (the preview still shows what it would do).
	for i, c := range changes {
		ns, _, namespaced := strings.Cut(c.Object, "/")
		if _, exists := w.Namespaces[ns]; namespaced && c.Action == "create" && !exists {
			changes[i].Note = "namespace " + ns + " does not exist: applying this fails unless it is created first"
		}
	}
	return changes, nil
}

func overlayOne(w *World, u *unstructured.Unstructured, del bool, namespace string, now time.Time) (Change, error) {
	gvk := u.GroupVersionKind()
	c := Change{Kind: gvk.Kind, Object: u.GetName()}
	namespaced := func() {
		if u.GetNamespace() == "" {
			u.SetNamespace(namespace)
		}
		c.Object = u.GetNamespace() + "/" + u.GetName()
	}
	var err error
	switch {
	case gvk.GroupKind() == identityGK:
		if u.GetName() != clusterv1alpha1.ClusterIdentityName {
			return ignored(c, "the operator reads only ClusterIdentity "+clusterv1alpha1.ClusterIdentityName), nil
		}
		w.Identity, c.Action, err = overlaySingleton(w.Identity, u, del, now, func(o *clusterv1alpha1.ClusterIdentity) *clusterv1alpha1.ClusterIdentitySpec { return &o.Spec })
	case gvk.GroupKind() == configurationGK:
		if u.GetName() != clusterv1alpha1.DNSConfigurationName {
			return ignored(c, "the operator reads only DNSConfiguration "+clusterv1alpha1.DNSConfigurationName), nil
		}
		w.Configuration, c.Action, err = overlaySingleton(w.Configuration, u, del, now, func(o *clusterv1alpha1.DNSConfiguration) *clusterv1alpha1.DNSConfigurationSpec { return &o.Spec })
	case gvk.GroupKind() == policyGK:
		namespaced()
		w.Policies, c.Action, err = overlayList(w.Policies, u, del, now, func(o *routingv1alpha1.DNSPolicy) *routingv1alpha1.DNSPolicySpec { return &o.Spec })
	case gvk.GroupKind() == routeGK:
		namespaced()
		w.Routes, c.Action, err = overlayList(w.Routes, u, del, now, func(o *routingv1alpha1.ServiceRoute) *routingv1alpha1.ServiceRouteSpec { return &o.Spec })
	case gvk.GroupKind() == gatewayGK:
		namespaced()
		w.Gateways, c.Action, err = overlayList(w.Gateways, u, del, now, func(o *routingv1alpha1.Gateway) *routingv1alpha1.GatewaySpec { return &o.Spec })
		if c.Action == "delete" {
			w.DeletedGateways = append(w.DeletedGateways, types.NamespacedName{Namespace: u.GetNamespace(), Name: u.GetName()})
		}
	case gvk.GroupKind() == namespaceGK:
		c.Action = overlayNamespace(w, u, del)
	case gvk.GroupKind() == serviceGK:
		namespaced()
		obj := &corev1.Service{}
		if err := convert(u.Object, obj); err != nil {
			return c, err
		}
		c.Action = overlayService(w, obj, del, now)
		if c.Action == "absent" { // Admit found it in the cluster: a Service without the istio label
			return ignored(c, "not labelled "+naming.IngressServiceSelector+": not read by the operator"), nil
		}
	case gvk.Group == "externaldns.k8s.io" || gvk.Group == "networking.istio.io" && gvk.Kind == "Gateway":
		return ignored(c, "generated by the operator: plan predicts it from its inputs"), nil
	case gvk.Group == gwv1.GroupName:
		// Usually a tenant's HTTPRoute or the platform's own Gateway: the operator reads only the
		// Gateway API objects it generated (managed-by label), which plan predicts.
		return ignored(c, "the operator reads only the Gateway API objects it generates; plan predicts those from its inputs"), nil
	default:
		return ignored(c, "not read by the operator"), nil
	}
	return c, err
}

func ignored(c Change, note string) Change {
	c.Action, c.Note = "ignored", note
	return c
}

func convert(content map[string]any, obj any) error {
	return runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(content, obj, true)
}

// object is the typed pointer of a kind the preview overlays.
type object[T any] interface {
	*T
	client.Object
}

// overlaySingleton overlays a cluster-scoped singleton (nil: it does not exist).
func overlaySingleton[T any, P object[T], S any](live P, u *unstructured.Unstructured, del bool, now time.Time, spec func(P) *S) (P, string, error) {
	list, action, err := overlayList([]P{live}, u, del, now, spec)
	if live == nil {
		list = slices.DeleteFunc(list, func(p P) bool { return p == nil })
	}
	if len(list) == 0 {
		return nil, action, err
	}
	return list[0], action, err
}

// overlayList overlays u on the objects of its kind: replaced in place (the manifest decides the
// spec, the cluster the identity and status), added (new, the youngest), or removed. spec is
// where the kind keeps its spec.
func overlayList[T any, P object[T], S any](list []P, u *unstructured.Unstructured, del bool, now time.Time, spec func(P) *S) ([]P, string, error) {
	obj := P(new(T))
	content := maps.Clone(u.Object)
	delete(content, "status") // the status subresource: the API server drops it from a create or an update
	if err := convert(content, obj); err != nil {
		return list, "", err
	}
	i := slices.IndexFunc(list, func(o P) bool {
		return o != nil && o.GetNamespace() == obj.GetNamespace() && o.GetName() == obj.GetName()
	})
	switch {
	case del && i < 0:
		return list, "absent", nil
	case del:
		return slices.Delete(slices.Clone(list), i, i+1), "delete", nil
	case i < 0:
		obj.SetUID(types.UID(previewUID + key(obj)))
		obj.SetCreationTimestamp(metav1.NewTime(now))
		obj.SetGeneration(1)
		return append(slices.Clone(list), obj), "create", nil
	}
	live := list[i]
	action := "unchanged"
	generation := live.GetGeneration()
	if !equality.Semantic.DeepEqual(spec(live), spec(obj)) {
		action, generation = "change", generation+1
	}
	withStatus := live.DeepCopyObject().(P)
	*spec(withStatus) = *spec(obj)
	withStatus.SetGeneration(generation)
	withStatus.SetLabels(mergeMaps(live.GetLabels(), obj.GetLabels()))
	withStatus.SetAnnotations(mergeMaps(live.GetAnnotations(), obj.GetAnnotations()))
	out := slices.Clone(list)
	out[i] = withStatus
	return out, action, nil
}

func mergeMaps(live, manifest map[string]string) map[string]string {
	if len(live) == 0 && len(manifest) == 0 {
		return nil
	}
	out := make(map[string]string, len(live)+len(manifest))
	maps.Copy(out, live)
	maps.Copy(out, manifest)
	return out
}

// overlayNamespace sets a namespace's labels and annotations, or removes the namespace with
// everything in it (the namespace controller deletes its objects).
func overlayNamespace(w *World, u *unstructured.Unstructured, del bool) string {
	name := u.GetName()
	live, exists := w.Namespaces[name]
	if del {
		if !exists {
			return "absent"
		}
		delete(w.Namespaces, name)
		other := func(o metav1.Object) bool { return o.GetNamespace() == name }
		w.Policies = slices.DeleteFunc(w.Policies, func(o *routingv1alpha1.DNSPolicy) bool { return other(o) })
		w.Routes = slices.DeleteFunc(w.Routes, func(o *routingv1alpha1.ServiceRoute) bool { return other(o) })
		w.Gateways = slices.DeleteFunc(w.Gateways, func(o *routingv1alpha1.Gateway) bool {
			gone := other(o)
			if gone {
				w.DeletedGateways = append(w.DeletedGateways, types.NamespacedName{Namespace: o.Namespace, Name: o.Name})
			}
			return gone
		})
		w.Services = slices.DeleteFunc(w.Services, func(o *corev1.Service) bool { return other(o) })
		return "delete"
	}
	if w.Namespaces == nil {
		w.Namespaces = map[string]Namespace{}
	}
	labels := mergeMaps(live.Labels, u.GetLabels())
	if labels == nil {
		labels = map[string]string{}
	}
	labels[corev1.LabelMetadataName] = name // the API server sets it on every namespace
	next := Namespace{Labels: labels, Annotations: mergeMaps(live.Annotations, u.GetAnnotations())}
	w.Namespaces[name] = next
	switch {
	case !exists:
		return "create"
	case equality.Semantic.DeepEqual(live, next):
		return "unchanged"
	}
	return "change"
}

// overlayService overlays a Service; only those labelled istio are read by the operator. The
// load balancer status comes from the cluster.
func overlayService(w *World, svc *corev1.Service, del bool, now time.Time) string {
	i := slices.IndexFunc(w.Services, func(o *corev1.Service) bool { return o.Namespace == svc.Namespace && o.Name == svc.Name })
	switch {
	case del && i < 0:
		return "absent"
	case del:
		w.Services = slices.Delete(w.Services, i, i+1)
		return "delete"
	}
	action := "create"
	if i >= 0 {
		live := w.Services[i]
		svc.UID, svc.CreationTimestamp, svc.Status = live.UID, live.CreationTimestamp, live.Status
		svc.Labels = mergeMaps(live.Labels, svc.Labels)
		action = "change"
		if equality.Semantic.DeepEqual(live.Spec, svc.Spec) && equality.Semantic.DeepEqual(live.Labels, svc.Labels) {
			action = "unchanged"
		}
		w.Services = slices.Delete(w.Services, i, i+1)
	} else {
		svc.UID, svc.CreationTimestamp = types.UID(previewUID+key(svc)), metav1.NewTime(now)
	}
	if _, ingress := svc.Labels[naming.IngressServiceSelector]; ingress {
		w.Services = append(w.Services, svc)
	}
	return action
}
