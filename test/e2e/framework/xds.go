package framework

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/structpb"
)

// The xDS client below asks istiod what it would program into an ingress gateway's Envoy, without
// running Envoy: the last step between an Istio Gateway the operator writes and traffic, which the
// API server alone cannot show (istiod may reject, merge or drop servers).

const (
	listenerType = "type.googleapis.com/envoy.config.listener.v3.Listener"
	routeType    = "type.googleapis.com/envoy.config.route.v3.RouteConfiguration"
)

// XDSOptions describe the gateway proxy the client poses as.
type XDSOptions struct {
	// Address is istiod's plaintext xDS address (its --grpcAddr, 15010 in a cluster).
	Address string
	// Namespace and Pod name the gateway pod; istiod reads the namespace from the node id and
	// NAMESPACE, and with PILOT_SCOPE_GATEWAY_TO_NAMESPACE only selects Gateways of that namespace.
	Namespace, Pod string
	// IP is the pod's address (node id and INSTANCE_IPS); default 10.0.0.10.
	IP string
	// Labels are the pod's labels: istiod selects the Gateways whose selector they match, so
	// these decide what the client sees.
	Labels map[string]string
	// IstioVersion is sent as ISTIO_VERSION; istiod gates features by the proxy's version, and an
	// empty or old one gets configuration for old Envoys. Default "1.31.0", istiod's minor.
	IstioVersion string
	// OnSnapshot, if set, is called (on the receiving goroutine) with every new snapshot, at the
	// moment it arrives: benchmarks time changes by it rather than by polling.
	OnSnapshot func(XDSSnapshot)
}

// XDSSnapshot is the client's summary of what istiod last pushed.
type XDSSnapshot struct {
	// At is when the last response that changed the snapshot arrived.
	At time.Time
	// Listeners are the gateway's listeners (LDS), by name order.
	Listeners []XDSListener
	// Routes are the virtual hosts' domains of each route configuration (RDS) the HTTP filter
	// chains name; a name is absent until istiod answered it. VirtualHosts are the same route
	// configurations' virtual hosts whole.
	Routes       map[string][]string
	VirtualHosts map[string][]XDSVirtualHost
	// Pushes counts the responses received (both types).
	Pushes int
}

// XDSListener is one listener: the port it binds and its filter chains.
type XDSListener struct {
	Name         string
	Port         uint32
	FilterChains []XDSFilterChain
}

// XDSFilterChain is one filter chain of a listener.
type XDSFilterChain struct {
	// ServerNames are the SNI names the chain matches (filter_chain_match.server_names): the
	// hosts of a TLS-terminating Gateway server.
	ServerNames []string
	// SecretName is the SDS secret of its TLS transport socket ("kubernetes://<credentialName>"
	// for a Gateway server's credentialName); empty without TLS.
	SecretName string
	// RouteConfig is the RDS route configuration its HTTP connection manager uses, if any.
	RouteConfig string
}

// XDSVirtualHost is one virtual host of a route configuration.
type XDSVirtualHost struct {
	Name    string
	Domains []string
	// RedirectsToHTTPS: the virtual host sends every plain-HTTP request to HTTPS (require_tls ALL,
	// as istiod gives a Gateway server with httpsRedirect, or every route an HTTPS redirect).
	RedirectsToHTTPS bool
	// Routes counts its routes.
	Routes int
}

// summarizeVirtualHosts reads the virtual hosts of a route configuration.
func summarizeVirtualHosts(rc *routev3.RouteConfiguration) []XDSVirtualHost {
	var out []XDSVirtualHost
	for _, vh := range rc.VirtualHosts {
		redirects := vh.RequireTls == routev3.VirtualHost_ALL
		if !redirects && len(vh.Routes) > 0 {
			redirects = true
			for _, r := range vh.Routes {
				if rd := r.GetRedirect(); rd == nil || !rd.GetHttpsRedirect() && rd.GetSchemeRedirect() != "https" {
					redirects = false
				}
			}
		}
		out = append(out, XDSVirtualHost{Name: vh.Name, Domains: vh.Domains, RedirectsToHTTPS: redirects, Routes: len(vh.Routes)})
	}
	return out
}

// PlainHTTPHosts reads the plain-HTTP listener on port as a Gateway's port-80 servers should make
// it: one filter chain, without server names or TLS, on a route configuration istiod answered.
// hosts maps every host a request's Host header can match (ports and "*" aside) to whether its
// virtual host redirects to HTTPS; unmatchable lists the domains no Host header can carry (a
// "namespace/host" of a Gateway server, which istiod 1.31 copies into the redirect virtual host of
// a host no VirtualService binds); problems lists what departs from that shape, and a port without
// a listener is one.
func (s XDSSnapshot) PlainHTTPHosts(port uint32) (hosts map[string]bool, unmatchable, problems []string) {
	l, ok := s.Listener(port)
	if !ok {
		return nil, nil, []string{fmt.Sprintf("no listener on %d", port)}
	}
	if len(l.FilterChains) != 1 {
		problems = append(problems, fmt.Sprintf("%s has %d filter chains, want one", l.Name, len(l.FilterChains)))
	}
	hosts = map[string]bool{}
	for i, fc := range l.FilterChains {
		if len(fc.ServerNames) > 0 || fc.SecretName != "" {
			problems = append(problems, fmt.Sprintf("chain %d of %s matches server names %v or terminates TLS (%q): plain HTTP has neither", i, l.Name, fc.ServerNames, fc.SecretName))
		}
		vhs, answered := s.VirtualHosts[fc.RouteConfig]
		if !answered {
			problems = append(problems, fmt.Sprintf("chain %d of %s: route configuration %q not answered", i, l.Name, fc.RouteConfig))
		}
		for _, vh := range vhs {
			for _, d := range vh.Domains {
				switch host := domainHost(d); {
				case strings.Contains(host, "/"):
					unmatchable = append(unmatchable, d)
				case host != "*":
					hosts[host] = vh.RedirectsToHTTPS
				}
			}
		}
	}
	return hosts, unmatchable, problems
}

// HostsWithOwnVirtualHost lists the server names on port whose chain's route configuration has a
// virtual host naming them, not only a catch-all "*": a host some VirtualService routes.
func (s XDSSnapshot) HostsWithOwnVirtualHost(port uint32) []string {
	var out []string
	if l, ok := s.Listener(port); ok {
		for _, fc := range l.FilterChains {
			for _, n := range fc.ServerNames {
				if slices.ContainsFunc(s.VirtualHosts[fc.RouteConfig], func(vh XDSVirtualHost) bool {
					return slices.ContainsFunc(vh.Domains, func(d string) bool { return domainHost(d) == n })
				}) {
					out = append(out, n)
				}
			}
		}
	}
	slices.Sort(out)
	return out
}

// Listener returns the listener binding port, if any.
func (s XDSSnapshot) Listener(port uint32) (XDSListener, bool) {
	for _, l := range s.Listeners {
		if l.Port == port {
			return l, true
		}
	}
	return XDSListener{}, false
}

// ServerNames maps every SNI name served on port to the SDS secret of its filter chain.
func (s XDSSnapshot) ServerNames(port uint32) map[string]string {
	out := map[string]string{}
	if l, ok := s.Listener(port); ok {
		for _, fc := range l.FilterChains {
			for _, n := range fc.ServerNames {
				out[n] = fc.SecretName
			}
		}
	}
	return out
}

// ChainProblems lists what the TLS listener on port should not hold, for a gateway whose every
// server names its hosts: a filter chain without server names (a catch-all, answering any SNI with one
// Gateway's certificate), a server name on two chains (which one Envoy takes is then an accident),
// or a chain whose route configuration has no virtual host for its server names (not answered
// yet, or routing them elsewhere). None for a port without a listener.
func (s XDSSnapshot) ChainProblems(port uint32) []string {
	l, ok := s.Listener(port)
	if !ok {
		return nil
	}
	var problems []string
	chainOf := map[string]int{}
	for i, fc := range l.FilterChains {
		if len(fc.ServerNames) == 0 {
			problems = append(problems, fmt.Sprintf("chain %d of %s has no server names (route configuration %q)", i, l.Name, fc.RouteConfig))
		}
		domains, answered := s.Routes[fc.RouteConfig]
		for _, n := range fc.ServerNames {
			if j, seen := chainOf[n]; seen {
				problems = append(problems, fmt.Sprintf("%s is on chains %d and %d of %s", n, j, i, l.Name))
			}
			chainOf[n] = i
			if !answered || !slices.ContainsFunc(domains, func(d string) bool { return domainMatches(d, n) }) {
				problems = append(problems, fmt.Sprintf("%s: chain %d's route configuration %q does not list it (domains %v)", n, i, fc.RouteConfig, domains))
			}
		}
	}
	return problems
}

// domainHost is a virtual host domain without its port ("host:*" and "host:80" are host).
func domainHost(domain string) string {
	host, _, _ := strings.Cut(domain, ":")
	return host
}

// domainMatches says whether a virtual host's domain takes host, as Envoy matches them: the same
// name (with any port), "*", or a wildcard "*.suffix" or "prefix*". istiod gives a gateway's
// HTTPS server without a VirtualService one virtual host for "*".
func domainMatches(domain, host string) bool {
	domain = domainHost(domain)
	switch {
	case domain == "*" || domain == host:
		return true
	case strings.HasPrefix(domain, "*"):
		return strings.HasSuffix(host, domain[1:])
	case strings.HasSuffix(domain, "*"):
		return strings.HasPrefix(host, domain[:len(domain)-1])
	}
	return false
}

// Domains returns every virtual host domain of the route configurations port's filter chains use.
func (s XDSSnapshot) Domains(port uint32) []string {
	var out []string
	if l, ok := s.Listener(port); ok {
		for _, fc := range l.FilterChains {
			out = append(out, s.Routes[fc.RouteConfig]...)
		}
	}
	return out
}

// XDSClient holds one ADS stream open to istiod and keeps the latest snapshot: istiod pushes every
// change on the stream, so a test reads or waits instead of asking again.
type XDSClient struct {
	opts   XDSOptions
	conn   *grpc.ClientConn
	cancel context.CancelFunc
	done   chan struct{}

	mu      sync.Mutex
	changed chan struct{} // closed and replaced on every new snapshot
	snap    XDSSnapshot
	err     error // why the stream ended
}

// DialXDS connects to istiod as the gateway opts describe and subscribes to its listeners (and
// their route configurations). It returns at once; Wait or Latest read what arrives.
func DialXDS(ctx context.Context, opts XDSOptions) (*XDSClient, error) {
	if opts.IP == "" {
		opts.IP = "10.0.0.10"
	}
	if opts.IstioVersion == "" {
		opts.IstioVersion = "1.31.0"
	}
	conn, err := grpc.NewClient(opts.Address, grpc.WithTransportCredentials(insecure.NewCredentials()),
		// a gateway with thousands of hosts gets listeners and routes of several MB
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(256<<20)))
	if err != nil {
		return nil, fmt.Errorf("xDS client for %s: %w", opts.Address, err)
	}
	sctx, cancel := context.WithCancel(ctx)
	stream, err := discoveryv3.NewAggregatedDiscoveryServiceClient(conn).StreamAggregatedResources(sctx)
	if err != nil {
		cancel()
		_ = conn.Close()
		return nil, fmt.Errorf("xDS stream to %s: %w", opts.Address, err)
	}
	c := &XDSClient{opts: opts, conn: conn, cancel: cancel, done: make(chan struct{}), changed: make(chan struct{}),
		snap: XDSSnapshot{Routes: map[string][]string{}}}
	node, err := c.node()
	if err != nil {
		cancel()
		_ = conn.Close()
		return nil, err
	}
	// State of the world over ADS, as istio-agent's Envoy speaks it to istiod: one request per
	// type, each answer ACKed with its version and nonce (istiod sends nothing more of a type
	// until the previous push of it is ACKed). Only the first request carries the node.
	if err := stream.Send(&discoveryv3.DiscoveryRequest{Node: node, TypeUrl: listenerType}); err != nil {
		cancel()
		_ = conn.Close()
		return nil, fmt.Errorf("xDS request to %s: %w", opts.Address, err)
	}
	go c.receive(stream)
	return c, nil
}

// node is the Envoy node istio-agent would send for a router (gateway) pod.
func (c *XDSClient) node() (*corev3.Node, error) {
	o := c.opts
	labels := map[string]any{}
	for k, v := range o.Labels {
		labels[k] = v
	}
	meta, err := structpb.NewStruct(map[string]any{
		"LABELS":       labels,
		"NAMESPACE":    o.Namespace,
		"INSTANCE_IPS": o.IP,
		// istiod's cluster name out of cluster too ("Kubernetes"): the proxy's services and
		// secrets are looked up in the cluster of that id.
		"CLUSTER_ID":    "Kubernetes",
		"ISTIO_VERSION": o.IstioVersion,
		"WORKLOAD_NAME": o.Pod,
		"NODE_NAME":     "node",
		// Not UNPRIVILEGED_POD: istiod would drop the listeners below 1024, and without a pod
		// behind the Service it binds the Gateway's port itself (443, not a targetPort).
		"SERVICE_ACCOUNT": "default",
		"MESH_ID":         "cluster.local",
	})
	if err != nil {
		return nil, err
	}
	return &corev3.Node{
		// type~ip~pod.namespace~dns suffix: "router" makes istiod build gateway listeners.
		Id:       fmt.Sprintf("router~%s~%s.%s~%s.svc.cluster.local", o.IP, o.Pod, o.Namespace, o.Namespace),
		Cluster:  fmt.Sprintf("%s.%s", o.Pod, o.Namespace),
		Metadata: meta,
	}, nil
}

// receive reads pushes until the stream ends, ACKing each and asking for the route
// configurations the listeners name.
func (c *XDSClient) receive(stream grpc.BidiStreamingClient[discoveryv3.DiscoveryRequest, discoveryv3.DiscoveryResponse]) {
	defer close(c.done)
	var routeNames []string // the RDS names last requested
	for {
		resp, err := stream.Recv()
		if err != nil {
			c.finish(err)
			return
		}
		at := time.Now()
		c.mu.Lock()
		next := c.snap
		c.mu.Unlock()
		next.At, next.Pushes = at, next.Pushes+1
		ack := &discoveryv3.DiscoveryRequest{TypeUrl: resp.TypeUrl, VersionInfo: resp.VersionInfo, ResponseNonce: resp.Nonce}
		switch resp.TypeUrl {
		case listenerType:
			listeners, names, err := summarizeListeners(resp.Resources)
			if err != nil {
				c.finish(err)
				return
			}
			next.Listeners = listeners
			if err := stream.Send(ack); err != nil {
				c.finish(err)
				return
			}
			// A changed set of route names is a new RDS subscription (the whole set, as SotW has it).
			if !slices.Equal(names, routeNames) {
				routeNames = names
				if err := stream.Send(&discoveryv3.DiscoveryRequest{TypeUrl: routeType, ResourceNames: names}); err != nil {
					c.finish(err)
					return
				}
			}
		case routeType:
			routes, vhosts := map[string][]string{}, map[string][]XDSVirtualHost{}
			for _, a := range resp.Resources {
				rc := &routev3.RouteConfiguration{}
				if err := a.UnmarshalTo(rc); err != nil {
					c.finish(err)
					return
				}
				var domains []string
				for _, vh := range rc.VirtualHosts {
					domains = append(domains, vh.Domains...)
				}
				routes[rc.Name], vhosts[rc.Name] = domains, summarizeVirtualHosts(rc)
			}
			next.Routes, next.VirtualHosts = routes, vhosts
			ack.ResourceNames = routeNames // a SotW ACK repeats the subscription
			if err := stream.Send(ack); err != nil {
				c.finish(err)
				return
			}
		default:
			// Nothing else was asked for; ACK so that istiod does not hold the stream.
			if err := stream.Send(ack); err != nil {
				c.finish(err)
				return
			}
			continue
		}
		c.mu.Lock()
		c.snap = next
		close(c.changed)
		c.changed = make(chan struct{})
		c.mu.Unlock()
		if c.opts.OnSnapshot != nil {
			c.opts.OnSnapshot(next)
		}
	}
}

func (c *XDSClient) finish(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.err = err
	close(c.changed)
}

// summarizeListeners reads the listeners of a push and the route configuration names they use.
func summarizeListeners(resources []*anypb.Any) ([]XDSListener, []string, error) {
	var out []XDSListener
	routes := map[string]bool{}
	for _, a := range resources {
		l := &listenerv3.Listener{}
		if err := a.UnmarshalTo(l); err != nil {
			return nil, nil, fmt.Errorf("decoding a listener: %w", err)
		}
		sl := XDSListener{Name: l.Name, Port: l.GetAddress().GetSocketAddress().GetPortValue()}
		for _, fc := range l.FilterChains {
			sfc := XDSFilterChain{ServerNames: fc.GetFilterChainMatch().GetServerNames()}
			if ts := fc.GetTransportSocket().GetTypedConfig(); ts != nil {
				tls := &tlsv3.DownstreamTlsContext{}
				if err := ts.UnmarshalTo(tls); err == nil {
					if sds := tls.GetCommonTlsContext().GetTlsCertificateSdsSecretConfigs(); len(sds) > 0 {
						sfc.SecretName = sds[0].Name
					}
				}
			}
			for _, f := range fc.Filters {
				hcm := &hcmv3.HttpConnectionManager{}
				if tc := f.GetTypedConfig(); tc != nil && tc.MessageIs(hcm) {
					if err := tc.UnmarshalTo(hcm); err != nil {
						return nil, nil, fmt.Errorf("decoding listener %s's HTTP connection manager: %w", l.Name, err)
					}
					if name := hcm.GetRds().GetRouteConfigName(); name != "" {
						sfc.RouteConfig = name
						routes[name] = true
					}
				}
			}
			sl.FilterChains = append(sl.FilterChains, sfc)
		}
		out = append(out, sl)
	}
	slices.SortFunc(out, func(a, b XDSListener) int { return strings.Compare(a.Name, b.Name) })
	names := make([]string, 0, len(routes))
	for n := range routes {
		names = append(names, n)
	}
	slices.Sort(names)
	return out, names, nil
}

// Latest returns the last snapshot and, once the stream ended, why.
func (c *XDSClient) Latest() (XDSSnapshot, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.snap, c.err
}

// Wait waits until ok holds on a snapshot (the current one or a later push) and returns it; after
// timeout, or when the stream ends, it returns the last snapshot with an error.
func (c *XDSClient) Wait(ctx context.Context, timeout time.Duration, ok func(XDSSnapshot) bool) (XDSSnapshot, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		c.mu.Lock()
		snap, err, changed := c.snap, c.err, c.changed
		c.mu.Unlock()
		if ok(snap) {
			return snap, nil
		}
		if err != nil {
			return snap, fmt.Errorf("xDS stream to %s ended: %w", c.opts.Address, err)
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return snap, fmt.Errorf("after %d pushes from %s: %w", snap.Pushes, c.opts.Address, ctx.Err())
		}
	}
}

// Close ends the stream and the connection.
func (c *XDSClient) Close() error {
	c.cancel()
	<-c.done
	err := c.conn.Close()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil && !errors.Is(c.err, context.Canceled) && !strings.Contains(c.err.Error(), "context canceled") {
		return errors.Join(err, c.err)
	}
	return err
}
