package testenv

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
)

func TestRequestInfo_NamesVerbAndResource(t *testing.T) {
	tests := []struct {
		method, target string
		want           Request
	}{
		{"GET", "/api/v1/namespaces/ns/services/web", Request{Verb: "get", Resource: "services", Namespace: "ns", Name: "web"}},
		{"GET", "/api/v1/services?watch=true", Request{Verb: "watch", Resource: "services"}},
		{"GET", "/api/v1/namespaces/ns/services", Request{Verb: "list", Resource: "services", Namespace: "ns"}},
		{"GET", "/api/v1/namespaces/ns", Request{Verb: "get", Resource: "namespaces", Name: "ns"}},
		{"PUT", "/api/v1/namespaces/ns/services/web/status", Request{Verb: "update", Resource: "services/status", Namespace: "ns", Name: "web"}},
		{"POST", "/apis/events.k8s.io/v1/namespaces/ns/events", Request{Verb: "create", Resource: "events.k8s.io/events", Namespace: "ns"}},
		{"PATCH", "/apis/routing.router.io/v1alpha1/namespaces/ns/serviceroutes/r/status", Request{Verb: "patch", Resource: "routing.router.io/serviceroutes/status", Namespace: "ns", Name: "r"}},
		{"DELETE", "/apis/externaldns.k8s.io/v1alpha1/namespaces/ns/dnsendpoints/e", Request{Verb: "delete", Resource: "externaldns.k8s.io/dnsendpoints", Namespace: "ns", Name: "e"}},
		{"DELETE", "/apis/externaldns.k8s.io/v1alpha1/namespaces/ns/dnsendpoints", Request{Verb: "deletecollection", Resource: "externaldns.k8s.io/dnsendpoints", Namespace: "ns"}},
		{"GET", "/apis/cluster.router.io/v1alpha1/clusteridentities/cluster", Request{Verb: "get", Resource: "cluster.router.io/clusteridentities", Name: "cluster"}},
		{"GET", "/apis", Request{Verb: "get", Resource: "/apis"}},
		{"GET", "/apis/routing.router.io/v1alpha1", Request{Verb: "get", Resource: "/apis/routing.router.io/v1alpha1"}},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.target, func(t *testing.T) {
			got := requestInfo(httptest.NewRequest(tt.method, tt.target, nil))
			got.group, got.kind = "", ""
			if got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

// TestFaultProxy_ForwardsCountsAndInjectsConflicts: with faults off every request reaches the
// upstream and is counted; with conflicts on every write gets a 409 client-go recognises as a
// Conflict, and reads still go through.
func TestFaultProxy_ForwardsCountsAndInjectsConflicts(t *testing.T) {
	var upstreamHits atomic.Int32
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		upstreamHits.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Success"}`))
	}))
	defer upstream.Close()
	p, err := StartFaultProxy(&rest.Config{Host: upstream.URL})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	cfg := p.Config()
	cfg.GroupVersion = &schema.GroupVersion{Version: "v1"}
	cfg.APIPath = "/api"
	cfg.NegotiatedSerializer = scheme.Codecs.WithoutConversion()
	c, err := rest.RESTClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := c.Get().Resource("services").Namespace("ns").Name("web").Do(ctx).Error(); err != nil {
		t.Fatalf("get through a proxy without faults: %v", err)
	}

	p.SetFaults(Faults{Share: 1, Kinds: []FaultKind{FaultConflict}})
	err = c.Put().Resource("services").Namespace("ns").Name("web").Body([]byte("{}")).Do(ctx).Error()
	if !apierrors.IsConflict(err) {
		t.Fatalf("update with conflicts on: got %v, want a Conflict", err)
	}
	if err := c.Get().Resource("services").Namespace("ns").Name("web").Do(ctx).Error(); err != nil {
		t.Fatalf("a get is not a write and must pass: %v", err)
	}
	p.FaultsOff()
	if err := c.Put().Resource("services").Namespace("ns").Name("web").Body([]byte("{}")).Do(ctx).Error(); err != nil {
		t.Fatalf("update with faults off: %v", err)
	}

	if n := upstreamHits.Load(); n != 3 {
		t.Errorf("upstream saw %d requests, want 3 (the conflict is never forwarded)", n)
	}
	// The proxy records a request when its handler returns, which can be just after the client
	// has read the answer; so the last entry may take a moment to appear.
	want := "get services|update services Conflict|get services|update services"
	var recorded string
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		var got []string
		for _, r := range p.Requests() {
			got = append(got, strings.TrimSpace(r.Verb+" "+r.Resource+" "+string(r.Fault)))
		}
		if recorded = strings.Join(got, "|"); recorded == want {
			break
		}
	}
	if recorded != want {
		t.Errorf("recorded %q, want %q", recorded, want)
	}
}
