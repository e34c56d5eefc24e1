package framework

import (
	"context"
	"fmt"
	"net"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
)

// fixtureADS is an xDS server of the test's own, speaking state of the world over ADS as istiod
// does: it answers the listener request with listeners[0] and each route request with the route
// configurations it names; a value sent on next pushes listeners[1]. It records every request.
type fixtureADS struct {
	discoveryv3.UnimplementedAggregatedDiscoveryServiceServer
	listeners [2][]*listenerv3.Listener
	routes    []*routev3.RouteConfiguration
	next      chan struct{}
	requests  chan *discoveryv3.DiscoveryRequest
}

func (f *fixtureADS) StreamAggregatedResources(stream grpc.BidiStreamingServer[discoveryv3.DiscoveryRequest, discoveryv3.DiscoveryResponse]) error {
	var mu sync.Mutex // one Send at a time
	send := func(typeURL, nonce string, resources []proto.Message) error {
		resp := &discoveryv3.DiscoveryResponse{TypeUrl: typeURL, VersionInfo: nonce, Nonce: nonce}
		for _, m := range resources {
			a, err := anypb.New(m)
			if err != nil {
				return err
			}
			resp.Resources = append(resp.Resources, a)
		}
		mu.Lock()
		defer mu.Unlock()
		return stream.Send(resp)
	}
	asMessages := func(ls []*listenerv3.Listener) (out []proto.Message) {
		for _, l := range ls {
			out = append(out, l)
		}
		return out
	}
	go func() {
		select {
		case <-f.next:
			_ = send(listenerType, "lds-1", asMessages(f.listeners[1]))
		case <-stream.Context().Done():
		}
	}()
	rds := 0
	for {
		req, err := stream.Recv()
		if err != nil {
			return nil
		}
		f.requests <- req
		switch {
		case req.ResponseNonce != "": // an ACK
		case req.TypeUrl == listenerType:
			err = send(listenerType, "lds-0", asMessages(f.listeners[0]))
		case req.TypeUrl == routeType:
			var routes []proto.Message
			for _, r := range f.routes {
				if slices.Contains(req.ResourceNames, r.Name) {
					routes = append(routes, r)
				}
			}
			err = send(routeType, fmt.Sprintf("rds-%d", rds), routes)
			rds++
		}
		if err != nil {
			return err
		}
	}
}

// httpsChain is a filter chain as istiod builds one per Gateway server: SNI names, the SDS secret
// of the server's credentialName, an HTTP connection manager on an RDS route configuration.
func httpsChain(t *testing.T, secret, routeConfig string, names ...string) *listenerv3.FilterChain {
	t.Helper()
	hcm, err := anypb.New(&hcmv3.HttpConnectionManager{RouteSpecifier: &hcmv3.HttpConnectionManager_Rds{Rds: &hcmv3.Rds{RouteConfigName: routeConfig}}})
	if err != nil {
		t.Fatal(err)
	}
	fc := &listenerv3.FilterChain{
		FilterChainMatch: &listenerv3.FilterChainMatch{ServerNames: names},
		Filters:          []*listenerv3.Filter{{Name: "envoy.filters.network.http_connection_manager", ConfigType: &listenerv3.Filter_TypedConfig{TypedConfig: hcm}}},
	}
	if secret != "" {
		tls, err := anypb.New(&tlsv3.DownstreamTlsContext{CommonTlsContext: &tlsv3.CommonTlsContext{
			TlsCertificateSdsSecretConfigs: []*tlsv3.SdsSecretConfig{{Name: secret}}}})
		if err != nil {
			t.Fatal(err)
		}
		fc.TransportSocket = &corev3.TransportSocket{Name: "envoy.transport_sockets.tls", ConfigType: &corev3.TransportSocket_TypedConfig{TypedConfig: tls}}
	}
	return fc
}

func listenerOn(name string, port uint32, chains ...*listenerv3.FilterChain) *listenerv3.Listener {
	return &listenerv3.Listener{Name: name, FilterChains: chains, Address: &corev3.Address{Address: &corev3.Address_SocketAddress{
		SocketAddress: &corev3.SocketAddress{Address: "0.0.0.0", PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: port}}}}}
}

// TestDialXDS_SummarisesEveryChainAndFollowsPushes: against a fixture ADS server, the client sends
// a gateway's node, keeps every filter chain of every listener (a catch-all chain without server
// names and two chains for one name included: nothing is collapsed), asks for exactly the route
// configurations the chains name, ACKs each push with its nonce, and takes a later push whole.
func TestDomainMatches(t *testing.T) {
	for _, tc := range []struct {
		domain, host string
		want         bool
	}{
		{"*", "a.example.com", true}, {"a.example.com", "a.example.com", true}, {"a.example.com:*", "a.example.com", true},
		{"*.example.com", "a.example.com", true}, {"a.*", "a.example.com", true},
		{"b.example.com", "a.example.com", false}, {"*.example.org", "a.example.com", false},
	} {
		if got := domainMatches(tc.domain, tc.host); got != tc.want {
			t.Errorf("domainMatches(%q, %q) = %v, want %v", tc.domain, tc.host, got, tc.want)
		}
	}
}

func TestDialXDS_SummarisesEveryChainAndFollowsPushes(t *testing.T) {
	https := listenerOn("0.0.0.0_8443", 8443,
		httpsChain(t, "kubernetes://cert-a", "https.443.a", "a.example.com", "b.example.com"),
		httpsChain(t, "kubernetes://cert-b", "https.443.b", "b.example.com"),
		httpsChain(t, "", "https.443.catchall"))
	plain := listenerOn("0.0.0.0_8080", 8080, httpsChain(t, "", "http.8080"))
	fixture := &fixtureADS{
		listeners: [2][]*listenerv3.Listener{{https, plain}, {plain}},
		next:      make(chan struct{}),
		routes: []*routev3.RouteConfiguration{
			{Name: "https.443.a", VirtualHosts: []*routev3.VirtualHost{{Name: "a", Domains: []string{"a.example.com", "b.example.com"}}}},
			{Name: "https.443.b", VirtualHosts: []*routev3.VirtualHost{{Name: "b", Domains: []string{"b.example.com"}}}},
			{Name: "https.443.catchall", VirtualHosts: []*routev3.VirtualHost{{Name: "all", Domains: []string{"*"}}}},
			{Name: "http.8080", VirtualHosts: []*routev3.VirtualHost{
				{Name: "a.example.com:80", Domains: []string{"a.example.com", "a.example.com:*"}, RequireTls: routev3.VirtualHost_ALL},
				{Name: "b.example.com:80", Domains: []string{"b.example.com"}, Routes: []*routev3.Route{
					{Action: &routev3.Route_Redirect{Redirect: &routev3.RedirectAction{SchemeRewriteSpecifier: &routev3.RedirectAction_HttpsRedirect{HttpsRedirect: true}}}}}},
				{Name: "team/d.example.com:80", Domains: []string{"team/d.example.com"}, RequireTls: routev3.VirtualHost_ALL},
				{Name: "c.example.com:80", Domains: []string{"c.example.com"}, Routes: []*routev3.Route{
					{Action: &routev3.Route_Route{Route: &routev3.RouteAction{ClusterSpecifier: &routev3.RouteAction_Cluster{Cluster: "outbound|80||c"}}}}}},
			}},
			{Name: "not-asked-for"},
		},
		requests: make(chan *discoveryv3.DiscoveryRequest, 100),
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	server := grpc.NewServer()
	discoveryv3.RegisterAggregatedDiscoveryServiceServer(server, fixture)
	go func() { _ = server.Serve(l) }()
	t.Cleanup(server.Stop)

	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	c, err := DialXDS(ctx, XDSOptions{Address: l.Addr().String(), Namespace: "aks-istio-ingress", Pod: "gw-0", Labels: map[string]string{"istio": "gw"}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close() }()
	snap, err := c.Wait(ctx, 10*time.Second, func(s XDSSnapshot) bool { return len(s.Routes) == 4 })
	if err != nil {
		t.Fatal(err)
	}
	wantChains := []XDSFilterChain{
		{ServerNames: []string{"a.example.com", "b.example.com"}, SecretName: "kubernetes://cert-a", RouteConfig: "https.443.a"},
		{ServerNames: []string{"b.example.com"}, SecretName: "kubernetes://cert-b", RouteConfig: "https.443.b"},
		{RouteConfig: "https.443.catchall"},
	}
	if got, _ := snap.Listener(8443); !reflect.DeepEqual(got.FilterChains, wantChains) {
		t.Errorf("8443's chains = %+v, want %+v", got.FilterChains, wantChains)
	}
	if got, _ := snap.Listener(8080); len(got.FilterChains) != 1 || got.FilterChains[0].RouteConfig != "http.8080" || got.FilterChains[0].SecretName != "" {
		t.Errorf("8080's chains = %+v, want one plain-HTTP chain on http.8080", got.FilterChains)
	}
	wantProblems := []string{
		`b.example.com is on chains 0 and 1 of 0.0.0.0_8443`,
		`chain 2 of 0.0.0.0_8443 has no server names (route configuration "https.443.catchall")`,
	}
	if got := snap.ChainProblems(8443); !slices.Equal(got, wantProblems) {
		t.Errorf("ChainProblems(8443) = %q, want %q", got, wantProblems)
	}
	// The plain-HTTP listener: one chain, its hosts with whether each redirects (require_tls ALL,
	// or every route an HTTPS redirect) or serves.
	hosts, unmatchable, problems := snap.PlainHTTPHosts(8080)
	if want := map[string]bool{"a.example.com": true, "b.example.com": true, "c.example.com": false}; !reflect.DeepEqual(hosts, want) || len(problems) > 0 {
		t.Errorf("PlainHTTPHosts(8080) = %v, %q; want %v and no problem", hosts, problems, want)
	}
	if !slices.Equal(unmatchable, []string{"team/d.example.com"}) {
		t.Errorf("PlainHTTPHosts(8080)'s unmatchable domains = %q, want the namespace-qualified one", unmatchable)
	}
	if _, _, problems := snap.PlainHTTPHosts(8443); len(problems) == 0 {
		t.Error("PlainHTTPHosts(8443), a TLS listener of three chains, found nothing wrong")
	}
	if got := snap.HostsWithOwnVirtualHost(8443); !slices.Equal(got, []string{"a.example.com", "b.example.com", "b.example.com"}) {
		t.Errorf("HostsWithOwnVirtualHost(8443) = %v: the catch-all's chain names no host", got)
	}
	if got := snap.Routes["https.443.catchall"]; !slices.Equal(got, []string{"*"}) {
		t.Errorf("the catch-all's domains = %v", got)
	}
	if _, ok := snap.Routes["not-asked-for"]; ok {
		t.Error("a route configuration no chain names was asked for")
	}

	// The requests: the node first, the routes the chains name, every push ACKed with its nonce.
	first := <-fixture.requests
	if first.Node.GetId() != "router~10.0.0.10~gw-0.aks-istio-ingress~aks-istio-ingress.svc.cluster.local" {
		t.Errorf("the first request's node id = %q", first.Node.GetId())
	}
	// The second push drops the HTTPS listener; the client takes it whole, and asks for the one
	// route configuration left.
	fixture.next <- struct{}{}
	snap, err = c.Wait(ctx, 10*time.Second, func(s XDSSnapshot) bool { return len(s.Listeners) == 1 && len(s.Routes) == 1 })
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := snap.Listener(8443); ok {
		t.Error("the HTTPS listener stayed after a push without it")
	}
	var acked []string
	var routeNames [][]string
	for deadline := time.After(5 * time.Second); len(acked) < 4; {
		select {
		case r := <-fixture.requests:
			if r.ResponseNonce != "" {
				acked = append(acked, r.ResponseNonce)
			} else if r.TypeUrl == routeType {
				routeNames = append(routeNames, r.ResourceNames)
			}
		case <-deadline:
			t.Fatalf("pushes ACKed: %v, want lds-0, rds-0, lds-1 and rds-1", acked)
		}
	}
	slices.Sort(acked)
	if !slices.Equal(acked, []string{"lds-0", "lds-1", "rds-0", "rds-1"}) {
		t.Errorf("pushes ACKed: %v, want lds-0, lds-1, rds-0 and rds-1", acked)
	}
	want := [][]string{{"http.8080", "https.443.a", "https.443.b", "https.443.catchall"}, {"http.8080"}}
	if !reflect.DeepEqual(routeNames, want) {
		t.Errorf("route configurations asked for = %v, want %v", routeNames, want)
	}
}
