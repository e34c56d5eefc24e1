package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	istionetworkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	externaldnsv1alpha1 "sigs.k8s.io/external-dns/apis/v1alpha1"

	"github.com/service-router/service-router-operator/internal/naming"
	"github.com/service-router/service-router-operator/test/e2e/framework"
)

// deleteTimeout bounds deleting what the demo created in a cluster and waiting until it is gone
// (within the 2 minutes `demo --down` waits for the demo).
const deleteTimeout = 90 * time.Second

// created is what the demo created in a cluster it did not start, in the order it created it.
// Every addition is written to the state directory, so that `demo --down` (or the next demo)
// deletes the objects should this process die before it does.
type created struct {
	Kubeconfig string      `json:"kubeconfig"`
	Objects    []objectRef `json:"objects"`

	file string
}

// objectRef names one object.
type objectRef struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Namespace  string `json:"namespace,omitempty"`
	Name       string `json:"name"`
}

func refOf(apiVersion, kind string, o client.Object) objectRef {
	return objectRef{APIVersion: apiVersion, Kind: kind, Namespace: o.GetNamespace(), Name: o.GetName()}
}

func (r objectRef) String() string {
	if r.Namespace == "" {
		return r.Kind + " " + r.Name
	}
	return r.Kind + " " + r.Namespace + "/" + r.Name
}

func (r objectRef) object() *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(r.APIVersion)
	u.SetKind(r.Kind)
	u.SetNamespace(r.Namespace)
	u.SetName(r.Name)
	return u
}

// add remembers an object the demo created.
func (c *created) add(r objectRef) error {
	c.Objects = append(c.Objects, r)
	data, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return err
	}
	tmp := c.file + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, c.file)
}

// readCreated reads what a demo remembered in file; nil when it created nothing.
func readCreated(file string) (*created, error) {
	data, err := os.ReadFile(file)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	c := &created{file: file}
	if err := json.Unmarshal(data, c); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return c, nil
}

// deleteAll deletes the objects, last created first, waits until they are gone and forgets them
// (removes the file). On failure it says what is left and keeps the file, for `demo --down`.
func (c *created) deleteAll() error {
	if len(c.Objects) == 0 {
		return c.forget()
	}
	names := make([]string, len(c.Objects))
	for i, r := range c.Objects {
		names[i] = r.String()
	}
	say("deleting what the demo created in the cluster (%d objects): %s", len(c.Objects), strings.Join(names, ", "))
	ctx, cancel := context.WithTimeout(context.Background(), deleteTimeout)
	defer cancel()
	start := time.Now()
	if err := c.delete(ctx); err != nil {
		fmt.Fprintf(os.Stderr, "demo: deleting what the demo created in the cluster: %v\n(they are listed in %s; `make demo-down` tries again)\n", err, c.file)
		return err
	}
	say("deleted them in %s: the cluster is as before the demo", time.Since(start).Round(100*time.Millisecond))
	return c.forget()
}

// forget removes the file.
func (c *created) forget() error {
	if err := os.Remove(c.file); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// delete deletes the objects and waits until they are gone. Deletion is in the foreground, so an
// object is gone only once what the operator generated for it (its owned objects) is gone too;
// namespaces go last.
func (c *created) delete(ctx context.Context) error {
	_, cl, err := newClient(c.Kubeconfig)
	if err != nil {
		return err
	}
	var errs []error
	for i := len(c.Objects) - 1; i >= 0; i-- {
		r := c.Objects[i]
		policy := metav1.DeletePropagationForeground
		if r.Kind == "Namespace" {
			policy = metav1.DeletePropagationBackground
		}
		if err := cl.Delete(ctx, r.object(), client.PropagationPolicy(policy)); err != nil && !gone(err) {
			errs = append(errs, fmt.Errorf("deleting %s: %w", r, err))
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	return framework.Poll(ctx, deleteTimeout, 200*time.Millisecond, "the objects the demo created, and what the operator generated for them, to be gone", func(ctx context.Context) (bool, string, error) {
		var left []string
		for _, r := range c.Objects {
			err := cl.Get(ctx, client.ObjectKey{Namespace: r.Namespace, Name: r.Name}, r.object())
			if err == nil {
				left = append(left, r.String())
			} else if !gone(err) {
				return false, "", err
			}
		}
		generated, err := generatedObjects(ctx, cl)
		left = append(left, generated...)
		return len(left) == 0 && err == nil, "still there: " + strings.Join(left, ", "), err
	})
}

// generatedObjects lists what the operator generated (labelled app.kubernetes.io/managed-by=
// service-router-operator): the DNSEndpoints and Istio Gateways. The demo runs only on a cluster
// without the operator's configuration, where the operator had generated nothing: once the samples
// are gone, the operator deletes what it generated for them, and the cluster is as before when
// none is left. Those of another namespace than their source (the gateway's address records, in
// the ingress namespace) have no owner reference: the operator deletes them itself.
func generatedObjects(ctx context.Context, cl client.Client) ([]string, error) {
	var out []string
	for kind, list := range map[string]client.ObjectList{"DNSEndpoint": &externaldnsv1alpha1.DNSEndpointList{}, "Istio Gateway": &istionetworkingv1.GatewayList{}} {
		err := cl.List(ctx, list, client.MatchingLabels{naming.LabelManagedBy: naming.ManagedByValue})
		if gone(err) {
			continue // the cluster lacks the kind
		}
		if err != nil {
			return nil, err
		}
		items, err := meta.ExtractList(list)
		if err != nil {
			return nil, err
		}
		for _, item := range items {
			if o, ok := item.(client.Object); ok {
				out = append(out, fmt.Sprintf("%s %s (generated)", kind, keyOf(o)))
			}
		}
	}
	return out, nil
}

// gone reports whether err says the object, or its kind, does not exist.
func gone(err error) bool { return apierrors.IsNotFound(err) || meta.IsNoMatchError(err) }

// deleteLeftovers deletes what a demo that died without cleaning up remembered in the state
// directory.
func deleteLeftovers(s state) error {
	c, err := readCreated(s.createdFile())
	if c == nil || err != nil {
		return err
	}
	return c.deleteAll()
}
