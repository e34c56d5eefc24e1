package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/service-router/service-router-operator/apis/cluster/v1alpha1"
	"github.com/service-router/service-router-operator/internal/ingress"
	operatorscheme "github.com/service-router/service-router-operator/internal/scheme"
	"github.com/service-router/service-router-operator/test/e2e/framework"
)

// The existing-cluster mode (--kubeconfig, `make demo-on-cluster`): the operator runs in the
// user's cluster, installed with the Helm chart; the demo starts only BIND and ExternalDNS on this
// machine, applies the samples and, unless the cluster has one, the ingress Service, and deletes
// exactly what it created when it stops.

// operatorLabel selects the chart's Deployment (its selector labels).
const operatorLabel = "app.kubernetes.io/name"

// operatorName is the chart's name, the value of operatorLabel.
const operatorName = "service-router-operator"

// demoLoadBalancerClass is the spec.loadBalancerClass of the ingress Service the demo creates: no
// load balancer implementation (k3s' servicelb, MetalLB, cloud-provider-kind) takes a Service of a
// class it does not know, so the address the demo writes into its status stays.
const demoLoadBalancerClass = "router.io/demo"

// helmInstall is how docs/INSTALLATION.md installs the operator.
const helmInstall = "helm install service-router-operator charts/service-router-operator --namespace service-router-system --create-namespace -f values-$CLUSTER.yaml (docs/INSTALLATION.md#helm)"

// existing is what the demo knows of a cluster it did not start.
type existing struct {
	kubeconfig string
	// operator is the operator's Deployment (namespace/name).
	operator client.ObjectKey
	created  *created
}

// connect builds a Cluster from the kubeconfig, checks that the operator runs there and that the
// cluster has none of the samples' configuration: it changes nothing.
func (d *demo) connect(ctx context.Context) error {
	raw, err := clientcmd.LoadFromFile(d.existing.kubeconfig)
	if err != nil {
		return fmt.Errorf("reading --kubeconfig: %w", err)
	}
	kubeContext := raw.CurrentContext
	server := ""
	if c := raw.Contexts[kubeContext]; c != nil && raw.Clusters[c.Cluster] != nil {
		server = raw.Clusters[c.Cluster].Server
	}
	return step(fmt.Sprintf("connecting to the cluster of %s (context %q, %s) and checking the operator runs there", d.existing.kubeconfig, kubeContext, server), func() error {
		config, c, err := newClient(d.existing.kubeconfig)
		if err != nil {
			return err
		}
		d.cluster = &framework.Cluster{Name: kubeContext, Config: config, Client: c, Kubeconfig: d.existing.kubeconfig}
		if err := d.findOperator(ctx); err != nil {
			return err
		}
		return d.refuseConfigured(ctx)
	})
}

// newClient is a client for the cluster of kubeconfig with the scheme the e2e framework uses: the
// operator's plus client-go's (apps/v1 for the operator's Deployment).
func newClient(kubeconfig string) (*rest.Config, client.Client, error) {
	config, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, nil, err
	}
	scheme := operatorscheme.New()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	c, err := client.New(config, client.Options{Scheme: scheme})
	return config, c, err
}

// findOperator finds the operator's Deployment, Available with a pod, in any namespace.
func (d *demo) findOperator(ctx context.Context) error {
	var list appsv1.DeploymentList
	if err := d.cluster.Client.List(ctx, &list, client.MatchingLabels{operatorLabel: operatorName}); err != nil {
		return fmt.Errorf("listing the Deployments labelled %s=%s: %w", operatorLabel, operatorName, err)
	}
	var seen []string
	for _, dep := range list.Items {
		if available(&dep) {
			d.existing.operator = client.ObjectKeyFromObject(&dep)
			return nil
		}
		seen = append(seen, fmt.Sprintf("%s/%s (%d of %d replicas available)", dep.Namespace, dep.Name, dep.Status.AvailableReplicas, dep.Status.Replicas))
	}
	found := "there is none"
	if len(seen) > 0 {
		found = "found only " + strings.Join(seen, ", ")
	}
	return fmt.Errorf("the operator does not run in this cluster: no Deployment labelled %s=%s is Available in any namespace (%s). "+
		"This mode is for a cluster with the operator installed by its Helm chart: %s, then kubectl -n service-router-system rollout status deployment/service-router-operator; "+
		"or run `make demo`, which needs no cluster", operatorLabel, operatorName, found, helmInstall)
}

func available(dep *appsv1.Deployment) bool {
	for _, c := range dep.Status.Conditions {
		if c.Type == appsv1.DeploymentAvailable {
			return c.Status == corev1.ConditionTrue && dep.Status.AvailableReplicas > 0
		}
	}
	return false
}

// refuseConfigured fails when the cluster has a ClusterIdentity or a DNSConfiguration (the
// operator's configuration, which the samples would replace) or any object of the samples.
func (d *demo) refuseConfigured(ctx context.Context) error {
	c := d.cluster.Client
	var found []string
	var ids clusterv1alpha1.ClusterIdentityList
	if err := c.List(ctx, &ids); err != nil {
		return fmt.Errorf("listing ClusterIdentities (are the operator's CRDs installed? %s): %w", helmInstall, err)
	}
	for _, id := range ids.Items {
		found = append(found, "ClusterIdentity "+id.Name)
	}
	var cfgs clusterv1alpha1.DNSConfigurationList
	if err := c.List(ctx, &cfgs); err != nil {
		return fmt.Errorf("listing DNSConfigurations: %w", err)
	}
	for _, cfg := range cfgs.Items {
		found = append(found, "DNSConfiguration "+cfg.Name)
	}
	for _, o := range d.samples.objects {
		err := c.Get(ctx, client.ObjectKeyFromObject(o), o.DeepCopy())
		if err == nil && o.GetKind() != "ClusterIdentity" && o.GetKind() != "DNSConfiguration" {
			found = append(found, o.GetKind()+" "+keyOf(o))
		} else if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("reading %s %s: %w", o.GetKind(), keyOf(o), err)
		}
	}
	if len(found) > 0 {
		return fmt.Errorf("the cluster already has %s: this mode applies config/samples, a cluster's whole configuration, so it runs only on a cluster without the operator's configuration. "+
			"It changed nothing. Use a new kind or k3s cluster, or `make demo`, which starts a control plane of its own", strings.Join(found, ", "))
	}
	return nil
}

// applyToCluster creates the samples' namespaces that do not exist, the samples, and the ingress
// Service unless the cluster has one; it remembers each object it creates, in the state
// directory too, and deletes them when the demo stops.
func (d *demo) applyToCluster(ctx context.Context) error {
	s := d.samples
	d.existing.created = &created{Kubeconfig: d.existing.kubeconfig, file: d.st.createdFile()}
	d.td.Cleanup(func() { _ = d.existing.created.deleteAll() })
	err := step(fmt.Sprintf("applying config/samples (%d objects) to the cluster, remembering what the demo creates in %s", len(s.objects), d.st.createdFile()), func() error {
		return d.createSamples(ctx)
	})
	if err != nil {
		return err
	}
	svc, err := d.ingressService(ctx)
	if err != nil {
		return err
	}
	if svc == nil {
		return step(fmt.Sprintf("creating the ingress LoadBalancer Service %s/%s (istio=%s, loadBalancerClass %s so that no load balancer takes it, address %s)",
			s.ingressNamespace, s.ingressController, s.ingressController, demoLoadBalancerClass, d.lbIP()), func() error {
			return d.createIngressService(ctx)
		})
	}
	return d.useIngressService(ctx, svc)
}

// createSamples creates the namespaces the samples need that do not exist yet, then the samples.
func (d *demo) createSamples(ctx context.Context) error {
	c := d.cluster.Client
	for _, ns := range d.samples.namespaces() {
		obj := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}
		err := c.Create(ctx, obj)
		if apierrors.IsAlreadyExists(err) {
			continue
		}
		if err != nil {
			return fmt.Errorf("creating namespace %s: %w", ns, err)
		}
		if err := d.existing.created.add(refOf("v1", "Namespace", obj)); err != nil {
			return err
		}
	}
	for _, o := range d.samples.objects {
		if err := c.Create(ctx, o); err != nil {
			return fmt.Errorf("creating %s %s: %w", o.GetKind(), keyOf(o), err)
		}
		if err := d.existing.created.add(refOf(o.GetAPIVersion(), o.GetKind(), o)); err != nil {
			return err
		}
	}
	return nil
}

// ingressService returns the ingress Service the operator would use (ingress.SelectService among
// the Services labelled istio=<controller> in the ingress namespace), or nil.
func (d *demo) ingressService(ctx context.Context) (*corev1.Service, error) {
	s := d.samples
	var list corev1.ServiceList
	if err := d.cluster.Client.List(ctx, &list, client.InNamespace(s.ingressNamespace), client.MatchingLabels{"istio": s.ingressController}); err != nil {
		return nil, err
	}
	return ingress.SelectService(list.Items), nil
}

// createIngressService creates the Service as framework.CreateIngressService does, with the demo's
// load balancer class, and writes the demo's address into its status.
func (d *demo) createIngressService(ctx context.Context) error {
	s, c := d.samples, d.cluster.Client
	class := demoLoadBalancerClass
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: s.ingressNamespace, Name: s.ingressController, Labels: map[string]string{"istio": s.ingressController}},
		Spec: corev1.ServiceSpec{
			Type:              corev1.ServiceTypeLoadBalancer,
			LoadBalancerClass: &class,
			Selector:          map[string]string{"istio": s.ingressController},
			Ports:             []corev1.ServicePort{{Name: "https", Port: 443, TargetPort: intstr.FromInt32(8443), Protocol: corev1.ProtocolTCP}},
		},
	}
	if err := c.Create(ctx, svc); err != nil {
		return fmt.Errorf("creating Service %s/%s: %w", svc.Namespace, svc.Name, err)
	}
	if err := d.existing.created.add(refOf("v1", "Service", svc)); err != nil {
		return err
	}
	for _, ip := range d.lbIPs {
		svc.Status.LoadBalancer.Ingress = append(svc.Status.LoadBalancer.Ingress, corev1.LoadBalancerIngress{IP: ip})
	}
	if err := c.Status().Update(ctx, svc); err != nil {
		return fmt.Errorf("setting the load balancer status of Service %s/%s: %w", svc.Namespace, svc.Name, err)
	}
	return nil
}

// useIngressService leaves the cluster's own ingress Service untouched and takes the IPv4
// addresses its load balancer reports, waiting for them if it has none yet.
func (d *demo) useIngressService(ctx context.Context, svc *corev1.Service) error {
	key := client.ObjectKeyFromObject(svc)
	timeout := time.Until(deadlineOf(ctx))
	if len(ingress.ServiceAddresses(svc).IPv4) == 0 {
		say("the gateway has no address yet: Service %s has no IPv4 address in status.loadBalancer; waiting for its load balancer to give it one (until the --timeout, %s from now)",
			key, timeout.Round(time.Second))
	}
	return step(fmt.Sprintf("using the cluster's ingress Service %s (left untouched) and the address its load balancer reports", key), func() error {
		return framework.Poll(ctx, timeout, time.Second, "an IPv4 address on Service "+key.String(), func(ctx context.Context) (bool, string, error) {
			if err := d.cluster.Client.Get(ctx, key, svc); err != nil {
				return false, "", err
			}
			addrs := ingress.ServiceAddresses(svc)
			d.lbIPs = addrs.IPv4
			return len(addrs.IPv4) > 0, fmt.Sprintf("status.loadBalancer %+v", svc.Status.LoadBalancer.Ingress), nil
		})
	})
}

func deadlineOf(ctx context.Context) time.Time {
	if deadline, ok := ctx.Deadline(); ok {
		return deadline
	}
	return time.Now().Add(5 * time.Minute)
}

// skipVerification says why the routes' publication is not verified in this mode.
func (d *demo) skipVerification(context.Context) error {
	say("not verifying zone %s: %s", d.samples.region, d.existing.whyUnverified(d.zone.Port))
	return nil
}

func (e *existing) whyUnverified(port int) string {
	return fmt.Sprintf("the operator runs in a pod of the cluster, and BIND runs on this machine's 127.0.0.1:%d, which the pod cannot reach; "+
		"so the DNSConfiguration gets no verification settings and every zone stays Unverified (the dig answers are the check)", port)
}

// operatorDiagnostics tells where the operator's log is.
func (e *existing) operatorDiagnostics() string {
	return fmt.Sprintf("--- the operator runs in the cluster: kubectl --kubeconfig=%s -n %s logs deployment/%s ---", e.kubeconfig, e.operator.Namespace, e.operator.Name)
}

// namespaces are the namespaces the samples and the ingress Service live in, in order.
func (s *samples) namespaces() []string {
	var out []string
	for _, o := range s.objects {
		if ns := o.GetNamespace(); ns != "" && !slices.Contains(out, ns) {
			out = append(out, ns)
		}
	}
	if !slices.Contains(out, s.ingressNamespace) {
		out = append(out, s.ingressNamespace)
	}
	return out
}

func keyOf(o client.Object) string {
	if o.GetNamespace() == "" {
		return o.GetName()
	}
	return o.GetNamespace() + "/" + o.GetName()
}
