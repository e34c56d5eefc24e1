package framework

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// ReadKustomization returns the objects of the resource files a kustomization.yaml lists (for
// example config/samples), in the order listed. Only plain `resources:` entries that are files
// are supported: it is for applying samples, not a kustomize replacement.
func ReadKustomization(dir string) ([]*unstructured.Unstructured, error) {
	data, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
	if err != nil {
		return nil, err
	}
	var k struct {
		Resources []string `json:"resources"`
	}
	if err := yaml.Unmarshal(data, &k); err != nil {
		return nil, fmt.Errorf("%s/kustomization.yaml: %w", dir, err)
	}
	if len(k.Resources) == 0 {
		return nil, fmt.Errorf("%s/kustomization.yaml lists no resources", dir)
	}
	var objs []*unstructured.Unstructured
	for _, r := range k.Resources {
		more, err := ReadManifests(filepath.Join(dir, r))
		if err != nil {
			return nil, err
		}
		objs = append(objs, more...)
	}
	return objs, nil
}

// ReadManifests reads the objects of a YAML file holding one or more documents.
func ReadManifests(path string) ([]*unstructured.Unstructured, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var objs []*unstructured.Unstructured
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		var obj map[string]any
		if err := dec.Decode(&obj); err != nil {
			if errors.Is(err, io.EOF) {
				return objs, nil
			}
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if len(obj) == 0 {
			continue // an empty document (comments only)
		}
		u := &unstructured.Unstructured{Object: obj}
		if u.GetKind() == "" || u.GetName() == "" {
			return nil, fmt.Errorf("%s: a document without kind or metadata.name", path)
		}
		objs = append(objs, u)
	}
}

// CreateAll creates the objects in order, creating their namespaces first when missing.
func CreateAll(ctx context.Context, c client.Client, objs []*unstructured.Unstructured) error {
	for _, obj := range objs {
		if ns := obj.GetNamespace(); ns != "" {
			if err := EnsureNamespace(ctx, c, ns); err != nil {
				return err
			}
		}
		if err := c.Create(ctx, obj); err != nil {
			return fmt.Errorf("creating %s %s: %w", obj.GetKind(), objectKey(obj), err)
		}
	}
	return nil
}

// EnsureNamespace creates the namespace unless it exists.
func EnsureNamespace(ctx context.Context, c client.Client, name string) error {
	err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s: %w", name, err)
	}
	return nil
}

func objectKey(obj client.Object) string {
	if obj.GetNamespace() == "" {
		return obj.GetName()
	}
	return obj.GetNamespace() + "/" + obj.GetName()
}

// IngressService describes the LoadBalancer Service of an Istio ingress gateway, as a cloud
// provider would have provisioned it.
type IngressService struct {
	Namespace string
	Name      string
	// Controller is the Gateway's spec.controller: the Service is labelled istio=<Controller>,
	// which is how the operator finds it.
	Controller string
	// IPs are the load balancer addresses written to status.loadBalancer.ingress.
	IPs []string
}

// CreateIngressService creates the Service (type LoadBalancer, port 443) and sets its load balancer
// addresses through the status subresource: no cloud controller runs here to do it.
func CreateIngressService(ctx context.Context, c client.Client, s IngressService) (*corev1.Service, error) {
	if err := EnsureNamespace(ctx, c, s.Namespace); err != nil {
		return nil, err
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: s.Namespace,
			Name:      s.Name,
			Labels:    map[string]string{"istio": s.Controller},
		},
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeLoadBalancer,
			Selector: map[string]string{"istio": s.Controller},
			Ports:    []corev1.ServicePort{{Name: "https", Port: 443, TargetPort: intstr.FromInt32(8443), Protocol: corev1.ProtocolTCP}},
		},
	}
	if err := c.Create(ctx, svc); err != nil {
		return nil, fmt.Errorf("creating Service %s: %w", objectKey(svc), err)
	}
	for _, ip := range s.IPs {
		svc.Status.LoadBalancer.Ingress = append(svc.Status.LoadBalancer.Ingress, corev1.LoadBalancerIngress{IP: ip})
	}
	if err := c.Status().Update(ctx, svc); err != nil {
		return nil, fmt.Errorf("setting the load balancer status of Service %s: %w", objectKey(svc), err)
	}
	return svc, nil
}

// Poll calls check every interval until it reports done, returns an error, or timeout passes.
// check also describes the state it saw; the timeout error quotes the last description, so that
// a failure says what was waited for and what was there instead.
func Poll(ctx context.Context, timeout, interval time.Duration, what string, check func(ctx context.Context) (done bool, state string, err error)) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	start := time.Now()
	var state string
	err := waitFor(ctx, interval, nil, func(ctx context.Context) (bool, error) {
		done, s, err := check(ctx)
		if s != "" {
			state = s
		}
		if err != nil && ctx.Err() != nil {
			return false, nil // the deadline interrupted the check itself
		}
		return done, err
	})
	if err != nil {
		msg := fmt.Sprintf("waiting %s for %s: %v", time.Since(start).Round(time.Millisecond), what, err)
		if state != "" {
			msg += "\nlast seen: " + strings.TrimSpace(state)
		}
		return errors.New(msg)
	}
	return nil
}

// Change reads obj afresh (by its name and namespace), applies change and updates it, again from a
// fresh read whenever the update meets a conflict: the operator and the control plane write the
// objects the tests change (their status, their finalizers), so a test's single Get and Update can
// lose a race on a busy machine. obj holds the object as written.
func Change[T client.Object](ctx context.Context, c client.Client, obj T, change func(T)) error {
	return changeWith(ctx, c, obj, change, func() error { return c.Update(ctx, obj) })
}

// ChangeStatus is Change for the status subresource (a test standing in for the controller that
// writes it: a load balancer's address, a Deployment's readiness).
func ChangeStatus[T client.Object](ctx context.Context, c client.Client, obj T, change func(T)) error {
	return changeWith(ctx, c, obj, change, func() error { return c.Status().Update(ctx, obj) })
}

func changeWith[T client.Object](ctx context.Context, c client.Client, obj T, change func(T), update func() error) error {
	key := client.ObjectKeyFromObject(obj)
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := c.Get(ctx, key, obj); err != nil {
			return err
		}
		change(obj)
		return update()
	})
}
