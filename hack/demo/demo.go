package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	istionetworkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	clusterv1alpha1 "github.com/service-router/service-router-operator/apis/cluster/v1alpha1"
	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
	"github.com/service-router/service-router-operator/test/e2e/framework"
)

// samples is what the demo needs to know about the applied samples.
type samples struct {
	objects []*unstructured.Unstructured

	region, cluster, domain, envLetter string
	// controller is the ExternalDNS controller of the cluster's region: the one the demo runs.
	controller string
	// otherControllers are the DNSConfiguration's other controllers (other regions' zones).
	otherControllers []string
	// gateway is the sample Gateway; ingressController its spec.controller, ingressNamespace the
	// namespace its ingress Service is read from (spec.ingressNamespace, default its own).
	gatewayNamespace, gatewayName, ingressController, ingressNamespace string
	routes                                                             []client.ObjectKey
}

func readSamples(dir string) (*samples, error) {
	objs, err := framework.ReadKustomization(dir)
	if err != nil {
		return nil, err
	}
	s := &samples{objects: objs}
	var controllers []map[string]any
	for _, o := range objs {
		switch o.GetKind() {
		case "ClusterIdentity":
			s.region, _, _ = unstructured.NestedString(o.Object, "spec", "region")
			s.cluster, _, _ = unstructured.NestedString(o.Object, "spec", "cluster")
			s.domain, _, _ = unstructured.NestedString(o.Object, "spec", "domain")
			s.envLetter, _, _ = unstructured.NestedString(o.Object, "spec", "environmentLetter")
		case "DNSConfiguration":
			list, _, _ := unstructured.NestedSlice(o.Object, "spec", "externalDNSControllers")
			for _, c := range list {
				if m, ok := c.(map[string]any); ok {
					controllers = append(controllers, m)
				}
			}
		case "Gateway":
			if s.gatewayName == "" {
				s.gatewayNamespace, s.gatewayName = o.GetNamespace(), o.GetName()
				s.ingressController, _, _ = unstructured.NestedString(o.Object, "spec", "controller")
				s.ingressNamespace, _, _ = unstructured.NestedString(o.Object, "spec", "ingressNamespace")
				if s.ingressNamespace == "" {
					s.ingressNamespace = s.gatewayNamespace
				}
			}
		case "ServiceRoute":
			s.routes = append(s.routes, client.ObjectKeyFromObject(o))
		}
	}
	for _, c := range controllers {
		name, _ := c["name"].(string)
		if region, _ := c["region"].(string); region == s.region && s.controller == "" {
			s.controller = name
		} else {
			s.otherControllers = append(s.otherControllers, name)
		}
	}
	switch {
	case s.region == "" || s.domain == "":
		return nil, fmt.Errorf("%s: no ClusterIdentity with a region and a domain", dir)
	case s.controller == "":
		return nil, fmt.Errorf("%s: the DNSConfiguration has no ExternalDNS controller for the cluster's region %q", dir, s.region)
	case s.gatewayName == "" || s.ingressController == "":
		return nil, fmt.Errorf("%s: no Gateway", dir)
	case len(s.routes) == 0:
		return nil, fmt.Errorf("%s: no ServiceRoute", dir)
	}
	return s, nil
}

// demo is the running demo.
type demo struct {
	st      state
	td      *framework.Teardown
	samples *samples
	// lbIPs are the ingress load balancer's IPv4 addresses: the demo's --load-balancer-ip, or
	// on a cluster whose ingress Service exists, the addresses its status has.
	lbIPs []string
	took  time.Duration
	// gatewayAPI: the sample Gateway is switched to backend GatewayAPI.
	gatewayAPI bool
	// existing is set on a cluster the demo did not start (--kubeconfig).
	existing *existing

	cluster  *framework.Cluster
	zone     *framework.BindServer
	edns     *framework.ExternalDNS
	operator *framework.Operator
}

// step runs one stage, printing what it does and how long it took.
func step(what string, fn func() error) error {
	fmt.Printf("==> %s ...", what)
	start := time.Now()
	if err := fn(); err != nil {
		fmt.Println(" failed")
		return err
	}
	fmt.Printf(" done (%s)\n", time.Since(start).Round(100*time.Millisecond))
	return nil
}

// start brings everything up and waits until the DNS chain of every ServiceRoute resolves.
func start(ctx context.Context, td *framework.Teardown, st state, o options) (*demo, error) {
	begin := time.Now()
	s, err := readSamples(o.samples)
	if err != nil {
		return nil, err
	}
	d := &demo{st: st, td: td, samples: s, lbIPs: []string{o.lbIP}, gatewayAPI: o.backend == string(routingv1alpha1.BackendGatewayAPI)}
	if o.kubeconfig != "" {
		d.existing = &existing{kubeconfig: o.kubeconfig}
	}
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	for _, stage := range d.stages() {
		if err := stage(ctx); err != nil {
			return nil, err
		}
	}
	d.took = time.Since(begin)
	return d, nil
}

// stages are the steps of start, in order: on a local control plane, or on a cluster the demo
// did not start (existing.go), where the operator already runs and publication is not verified.
func (d *demo) stages() []func(context.Context) error {
	if d.existing != nil {
		return []func(context.Context) error{d.connect, d.startZone, d.startExternalDNS, d.applyToCluster, d.skipVerification, d.converge}
	}
	return []func(context.Context) error{d.startControlPlane, d.startZone, d.startExternalDNS, d.startOperator, d.applySamples, d.switchBackend, d.verifyZone, d.converge, d.published}
}

func (d *demo) startControlPlane(ctx context.Context) error {
	crds := "router.io, DNSEndpoint, Istio"
	if d.gatewayAPI {
		crds += ", Gateway API standard channel"
	}
	err := step(fmt.Sprintf("starting a control plane on 127.0.0.1 (etcd, kube-apiserver, kube-controller-manager) with the CRDs (%s)", crds), func() (err error) {
		s := d.samples
		d.cluster, err = framework.StartCluster(ctx, d.td, framework.ClusterOptions{Name: s.cluster + "-" + s.region, ControllerManager: true, GatewayAPICRDs: d.gatewayAPI})
		return err
	})
	if err != nil {
		return err
	}
	// Recorded as soon as they exist, for `demo --down` should this process die.
	return d.st.recordChildren()
}

func (d *demo) startZone(ctx context.Context) error {
	s := d.samples
	err := step(fmt.Sprintf("starting BIND 9 (named) serving zone %s for region %s", s.domain, s.region), func() (err error) {
		d.zone, err = framework.StartBind(ctx, d.td, framework.BindOptions{Name: s.region, Zone: s.domain})
		return err
	})
	if err != nil {
		return err
	}
	return d.st.recordChildren()
}

func (d *demo) startExternalDNS(ctx context.Context) error {
	s := d.samples
	opts := framework.ExternalDNSOptions{
		Name:      s.controller,
		OwnerID:   s.controller,
		TXTPrefix: s.region + "-" + s.envLetter + "-" + s.cluster + "-",
		LogLevel:  "info",
	}
	what := fmt.Sprintf("starting ExternalDNS %s (--source=crd --provider=rfc2136, annotation and label filters, txt registry)", s.controller)
	if d.existing != nil {
		opts.Kubeconfig = d.existing.kubeconfig // the user's: it watches their cluster
		what = fmt.Sprintf("starting ExternalDNS %s on this machine, watching the cluster with %s (--source=crd --provider=rfc2136, annotation and label filters, txt registry)", s.controller, d.existing.kubeconfig)
	}
	err := step(what, func() (err error) {
		// The framework selects by label as well as by annotation, as
		// docs/EXTERNALDNS-INTEGRATION.md recommends.
		d.edns, err = d.cluster.StartExternalDNS(ctx, d.td, opts.ForBind(d.zone))
		return err
	})
	if err != nil {
		return err
	}
	return d.st.recordChildren()
}

func (d *demo) startOperator(ctx context.Context) error {
	err := step("starting the operator (bin/manager)", func() (err error) {
		d.operator, err = d.cluster.StartOperator(ctx, d.td, framework.OperatorOptions{})
		return err
	})
	if err != nil {
		return err
	}
	return d.st.recordChildren()
}

// applySamples creates the samples and the ingress Service on the demo's own control plane.
func (d *demo) applySamples(ctx context.Context) error {
	s := d.samples
	return step(fmt.Sprintf("applying config/samples (%d objects) and the ingress LoadBalancer Service %s/%s (istio=%s, address %s)",
		len(s.objects), s.ingressNamespace, s.ingressController, s.ingressController, d.lbIP()), func() error {
		if err := framework.CreateAll(ctx, d.cluster.Client, s.objects); err != nil {
			return err
		}
		_, err := framework.CreateIngressService(ctx, d.cluster.Client, framework.IngressService{
			Namespace: s.ingressNamespace, Name: s.ingressController, Controller: s.ingressController, IPs: d.lbIPs,
		})
		return err
	})
}

// switchBackend moves the sample Gateway to the Gateway API backend when --backend says so.
func (d *demo) switchBackend(ctx context.Context) error {
	if !d.gatewayAPI {
		return nil
	}
	s := d.samples
	return step(fmt.Sprintf("switching Gateway %s/%s to backend GatewayAPI, and reporting address %s on the generated Gateway API Gateway as Istio would (no Istio runs here)", s.gatewayNamespace, s.gatewayName, d.lbIP()), func() error {
		return d.useGatewayAPI(ctx)
	})
}

func (d *demo) verifyZone(ctx context.Context) error {
	s := d.samples
	return step(fmt.Sprintf("verifying zone %s: DNSConfiguration %s gets verification.nameservers 127.0.0.1:%d", s.region, s.controller, d.zone.Port), func() error {
		return d.setVerification(ctx)
	})
}

func (d *demo) converge(ctx context.Context) error {
	return step("waiting for the ServiceRoutes to be Active and their hostnames to resolve in the zone", func() error {
		return d.waitConverged(ctx)
	})
}

func (d *demo) published(ctx context.Context) error {
	return step(fmt.Sprintf("waiting for the operator to find every ServiceRoute Published in zone %s", d.samples.region), func() error {
		return d.waitPublished(ctx)
	})
}

// prefixed returns every item with prefix in front.
func prefixed(prefix string, items []string) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = prefix + it
	}
	return out
}

// lbIP is the load balancer address as the demo prints it.
func (d *demo) lbIP() string { return strings.Join(d.lbIPs, ", ") }

// operatorDiagnostics tells what the operator logged, for failure messages.
func (d *demo) operatorDiagnostics() string {
	if d.operator != nil {
		return d.operator.Diagnostics()
	}
	return d.existing.operatorDiagnostics()
}

// waitConverged waits until every sample ServiceRoute is Active and its hostname answers the CNAME
// to its target and the target's A record with the load balancer address.
func (d *demo) waitConverged(ctx context.Context) error {
	routes, err := d.routes(ctx)
	if err != nil {
		return err
	}
	if d.gatewayAPI {
		err = d.waitListeners(ctx, routes)
	} else {
		err = d.waitIstioHosts(ctx, routes)
	}
	if err != nil {
		return fmt.Errorf("%w\n%s", err, d.operatorDiagnostics())
	}
	diag := []func() string{d.operatorDiagnostics, d.edns.Diagnostics, d.zone.Diagnostics}
	for _, r := range routes {
		want := framework.Resolves(append([]string{"CNAME " + r.Status.TargetHostname + "."}, prefixed("A ", d.lbIPs)...)...)
		if _, err := framework.Converge(ctx, d.zone.Query(r.Status.Hostname, "A"), want, time.Minute, 100*time.Millisecond, diag...); err != nil {
			return err
		}
	}
	return nil
}

// waitIstioHosts waits until the generated Istio Gateway lists every route's namespace-scoped host.
func (d *demo) waitIstioHosts(ctx context.Context, routes []*routingv1alpha1.ServiceRoute) error {
	var hosts []string
	for _, r := range routes {
		hosts = append(hosts, r.Namespace+"/"+r.Status.Hostname) // the default namespace-scoped Istio hosts
	}
	slices.Sort(hosts)
	key := client.ObjectKey{Namespace: d.samples.gatewayNamespace, Name: d.samples.gatewayName}
	return framework.Poll(ctx, time.Minute, 100*time.Millisecond, fmt.Sprintf("the Istio Gateway %s to serve %v", key, hosts), func(ctx context.Context) (bool, string, error) {
		gw := &istionetworkingv1.Gateway{}
		if err := d.cluster.Client.Get(ctx, key, gw); err != nil {
			return false, err.Error(), client.IgnoreNotFound(err)
		}
		var got []string
		for _, srv := range gw.Spec.Servers {
			got = append(got, srv.Hosts...)
		}
		return slices.Equal(got, hosts), fmt.Sprintf("hosts %v", got), nil
	})
}

// waitListeners waits until the ListenerSets generated beside the Gateway hold a listener for
// every route's hostname, and the classic Istio Gateway is gone.
func (d *demo) waitListeners(ctx context.Context, routes []*routingv1alpha1.ServiceRoute) error {
	var hosts []string
	for _, r := range routes {
		hosts = append(hosts, r.Status.Hostname)
	}
	slices.Sort(hosts)
	key := client.ObjectKey{Namespace: d.samples.gatewayNamespace, Name: d.samples.gatewayName}
	return framework.Poll(ctx, time.Minute, 100*time.Millisecond, fmt.Sprintf("ListenerSets for %v and no Istio Gateway %s", hosts, key), func(ctx context.Context) (bool, string, error) {
		sets := &gwv1.ListenerSetList{}
		if err := d.cluster.Client.List(ctx, sets, client.InNamespace(key.Namespace)); err != nil {
			return false, "", err
		}
		var got []string
		for _, s := range sets.Items {
			for _, l := range s.Spec.Listeners {
				if l.Hostname != nil && !slices.Contains(got, string(*l.Hostname)) {
					got = append(got, string(*l.Hostname))
				}
			}
		}
		slices.Sort(got)
		err := d.cluster.Client.Get(ctx, key, &istionetworkingv1.Gateway{})
		return slices.Equal(got, hosts) && apierrors.IsNotFound(err), fmt.Sprintf("listener hostnames %v, Istio Gateway: %v", got, err), nil
	})
}

// useGatewayAPI switches the sample Gateway to backend GatewayAPI and, standing in for the Gateway
// API implementation, writes the load balancer address into the generated Gateway's status.
func (d *demo) useGatewayAPI(ctx context.Context) error {
	key := client.ObjectKey{Namespace: d.samples.gatewayNamespace, Name: d.samples.gatewayName}
	err := retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		gw := &routingv1alpha1.Gateway{}
		if err := d.cluster.Client.Get(ctx, key, gw); err != nil {
			return err
		}
		gw.Spec.Backend = routingv1alpha1.BackendGatewayAPI
		return d.cluster.Client.Update(ctx, gw)
	})
	if err != nil {
		return err
	}
	generated := &gwv1.Gateway{}
	err = framework.Poll(ctx, time.Minute, 100*time.Millisecond, "the generated Gateway API Gateway "+key.String(), func(ctx context.Context) (bool, string, error) {
		err := d.cluster.Client.Get(ctx, key, generated)
		return err == nil, fmt.Sprint(err), client.IgnoreNotFound(err)
	})
	if err != nil {
		return err
	}
	return retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		if err := d.cluster.Client.Get(ctx, key, generated); err != nil {
			return err
		}
		ip := gwv1.IPAddressType
		generated.Status.Addresses = []gwv1.GatewayStatusAddress{{Type: &ip, Value: d.lbIPs[0]}}
		return d.cluster.Client.Status().Update(ctx, generated)
	})
}

// setVerification gives the cluster's own controller verification settings: the demo's BIND is
// its zone's authoritative server. The operator writes the DNSConfiguration's status meanwhile: an
// update that meets its write (409) reads again and retries, as kubectl edit would.
func (d *demo) setVerification(ctx context.Context) error {
	return retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		cfg := &clusterv1alpha1.DNSConfiguration{}
		if err := d.cluster.Client.Get(ctx, client.ObjectKey{Name: clusterv1alpha1.DNSConfigurationName}, cfg); err != nil {
			return err
		}
		for i, c := range cfg.Spec.ExternalDNSControllers {
			if c.Name == d.samples.controller {
				cfg.Spec.ExternalDNSControllers[i].Verification = &clusterv1alpha1.ZoneVerification{Nameservers: []string{fmt.Sprintf("127.0.0.1:%d", d.zone.Port)}}
			}
		}
		return d.cluster.Client.Update(ctx, cfg)
	})
}

// waitPublished waits until every sample ServiceRoute's zones are Published (they publish into
// the cluster's own, verified zone).
func (d *demo) waitPublished(ctx context.Context) error {
	err := framework.Poll(ctx, time.Minute, 100*time.Millisecond, "the sample ServiceRoutes to be Published", func(ctx context.Context) (bool, string, error) {
		var states []string
		done := true
		for _, key := range d.samples.routes {
			r := &routingv1alpha1.ServiceRoute{}
			if err := d.cluster.Client.Get(ctx, key, r); err != nil {
				return false, "", err
			}
			c := meta.FindStatusCondition(r.Status.Conditions, routingv1alpha1.ConditionPublished)
			if c == nil || c.Status != metav1.ConditionTrue {
				done = false
			}
			states = append(states, fmt.Sprintf("%s: %s %s", key, r.Status.Published, zonesLine(r.Status.Zones)))
		}
		return done, strings.Join(states, "; "), nil
	})
	if err != nil {
		err = fmt.Errorf("%w\n%s", err, d.operatorDiagnostics())
	}
	return err
}

// zonesLine renders zones as "external-dns-weu=Published (CNAME … → A …)".
func zonesLine(zones []routingv1alpha1.ZoneStatus) string {
	var parts []string
	for _, z := range zones {
		part := z.Controller + "=" + string(z.State)
		if z.Answer != "" {
			part += " (" + z.Answer + ")"
		}
		parts = append(parts, part)
	}
	return strings.Join(parts, ", ")
}

// routes waits until every sample ServiceRoute is Active with its hostnames in status, and
// returns them.
func (d *demo) routes(ctx context.Context) ([]*routingv1alpha1.ServiceRoute, error) {
	var out []*routingv1alpha1.ServiceRoute
	err := framework.Poll(ctx, time.Minute, 100*time.Millisecond, "the sample ServiceRoutes to be Active", func(ctx context.Context) (bool, string, error) {
		out = out[:0]
		var states []string
		for _, key := range d.samples.routes {
			r := &routingv1alpha1.ServiceRoute{}
			if err := d.cluster.Client.Get(ctx, key, r); err != nil {
				return false, "", err
			}
			states = append(states, fmt.Sprintf("%s: phase %q, %s", key, r.Status.Phase, readyMessage(r.Status.Conditions)))
			if r.Status.Phase != routingv1alpha1.PhaseActive || r.Status.Hostname == "" || r.Status.TargetHostname == "" {
				return false, strings.Join(states, "; "), nil
			}
			out = append(out, r)
		}
		return true, strings.Join(states, "; "), nil
	})
	if err != nil {
		err = fmt.Errorf("%w\n%s", err, d.operatorDiagnostics())
	}
	return out, err
}

// watch waits for ctx to end, or fails when one of the demo's processes exits by itself.
func (d *demo) watch(ctx context.Context) error {
	ticker := time.NewTicker(time.Second)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-ticker.C:
		}
		switch {
		case d.operator != nil && !d.operator.Running():
			return fmt.Errorf("the operator exited\n%s", d.operator.Diagnostics())
		case !d.edns.Running():
			return fmt.Errorf("ExternalDNS exited\n%s", d.edns.Diagnostics())
		case !d.zone.Running():
			return errors.New("named exited\n" + d.zone.Diagnostics())
		}
	}
}

// writeExploreFiles writes an admin kubeconfig (on the demo's own control plane) and a shell file
// exporting it (or the user's, on their cluster) and the DNS port.
func (d *demo) writeExploreFiles() error {
	if d.existing == nil {
		if err := d.cluster.Env.WriteAdminKubeconfig(d.st.kubeconfig(), "demo-user"); err != nil {
			return err
		}
	}
	env := fmt.Sprintf("# Source this file to explore the running demo.\nexport KUBECONFIG=%s\nexport DEMO_DNS_PORT=%d\nexport DEMO_ZONE=%s\n",
		d.kubeconfig(), d.zone.Port, d.zone.Zone)
	return os.WriteFile(d.st.envFile(), []byte(env), 0o644)
}

// kubeconfig is the kubeconfig the user explores the cluster with.
func (d *demo) kubeconfig() string {
	if d.existing != nil {
		return d.existing.kubeconfig
	}
	return d.st.kubeconfig()
}

func readyMessage(conds []metav1.Condition) string {
	for _, c := range conds {
		if c.Type == "Ready" {
			return fmt.Sprintf("Ready=%s %s", c.Status, c.Reason)
		}
	}
	return "no Ready condition yet"
}

// otherController reports whether name is a controller the demo runs no ExternalDNS for.
func (s *samples) otherController(name string) bool { return slices.Contains(s.otherControllers, name) }
