package testenv

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// FaultKind is one way a request through a FaultProxy can fail.
type FaultKind string

const (
	// FaultServerError answers 500 InternalError or 503 ServiceUnavailable (no Retry-After, so
	// client-go does not retry it by itself) with a metav1.Status body; the API server never
	// sees the request.
	FaultServerError FaultKind = "ServerError"
	// FaultTimeout holds the request for Faults.Hold, then answers 504 Timeout or cuts the
	// connection. Half of the writes it hits are forwarded first: the API server applies them
	// but the client never learns it, as behind a load balancer that gave up waiting.
	FaultTimeout FaultKind = "Timeout"
	// FaultConflict answers 409 Conflict to a POST, PUT or PATCH without forwarding it, as when
	// another writer changed the object in between.
	FaultConflict FaultKind = "Conflict"
	// FaultWatchCut cuts watch streams: a new watch is cut after a random 0.2–3 s, and at the
	// start of every burst each open watch is cut with probability Faults.Share (as when an API
	// server restarts).
	FaultWatchCut FaultKind = "WatchCut"
)

// AllFaults lists every kind of fault.
var AllFaults = []FaultKind{FaultServerError, FaultTimeout, FaultConflict, FaultWatchCut}

// Faults say which requests a FaultProxy fails. The zero value injects nothing.
type Faults struct {
	// Share is the probability (0–1) that a request arriving during a burst fails.
	Share float64
	// Kinds are the faults to choose from (uniformly among those that apply to the request);
	// empty means all.
	Kinds []FaultKind
	// Burst and Pause make the faults come in bursts: Burst long with faults, Pause long
	// without, repeated from the moment SetFaults is called. A zero Pause means no pauses.
	Burst, Pause time.Duration
	// Hold is how long FaultTimeout keeps a request before failing it (default 2 s).
	Hold time.Duration
	// Seed makes the choice of failed requests reproducible.
	Seed uint64
}

// Request is one request a FaultProxy handled.
type Request struct {
	Time time.Time
	// Verb is the Kubernetes verb (get, list, watch, create, update, patch, delete,
	// deletecollection) for resource requests, the lower-case HTTP method otherwise.
	Verb string
	// Resource is group/resource[/subresource] ("coordination.k8s.io/leases",
	// "routing.router.io/serviceroutes/status"; core resources have no group: "events"), or the
	// path of a non-resource request ("/apis").
	Resource, Namespace, Name string
	UserAgent                 string
	// Code is the status code the client got; 0 when the connection was cut.
	Code int
	// Fault is the fault injected; empty when the request went through untouched.
	Fault FaultKind

	group, kind string // for the details of an injected error's Status
}

// IsWrite reports whether the request changes state on the API server.
func (r Request) IsWrite() bool {
	switch r.Verb {
	case "create", "update", "patch", "delete", "deletecollection":
		return true
	}
	return false
}

// FaultProxy is a TLS reverse proxy on 127.0.0.1 in front of the test API server. It holds the
// admin credentials towards the API server, so its clients need only trust its certificate.
// It records every request and, when told, fails a share of them the way a real control plane
// under stress does (see FaultKind).
type FaultProxy struct {
	// URL is the proxy's address, https://127.0.0.1:PORT.
	URL string

	server *httptest.Server
	proxy  *httputil.ReverseProxy
	caPEM  []byte

	mu       sync.Mutex
	faults   Faults
	faultsOn time.Time
	rng      *rand.Rand
	requests []Request
	// watches are the open watch streams, to cut at the start of a burst.
	watches     map[*openWatch]struct{}
	stopCutting chan struct{}
}

type openWatch struct {
	cancel context.CancelFunc
	cut    bool // guarded by FaultProxy.mu
}

// StartFaultProxy starts a proxy to the API server of upstream, using upstream's credentials.
// Faults are off until SetFaults. Call Close when done.
func StartFaultProxy(upstream *rest.Config) (*FaultProxy, error) {
	target, err := url.Parse(upstream.Host)
	if err != nil {
		return nil, fmt.Errorf("parsing the API server address %q: %w", upstream.Host, err)
	}
	transport, err := rest.TransportFor(upstream)
	if err != nil {
		return nil, fmt.Errorf("building a transport to the API server: %w", err)
	}
	p := &FaultProxy{rng: rand.New(rand.NewPCG(1, 2)), watches: map[*openWatch]struct{}{}}
	p.proxy = &httputil.ReverseProxy{
		Rewrite:   func(pr *httputil.ProxyRequest) { pr.SetURL(target) },
		Transport: transport,
		// Watches stream: every event goes to the client at once.
		FlushInterval: -1,
		// A cut stream is the point of some faults, not worth a log line.
		ErrorLog: log.New(io.Discard, "", 0),
	}
	// HTTP/1.1 only: one request per connection at a time, so cutting a connection fails one
	// request rather than every stream multiplexed on it.
	p.server = httptest.NewUnstartedServer(http.HandlerFunc(p.serve))
	p.server.StartTLS()
	p.URL = p.server.URL
	p.caPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: p.server.Certificate().Raw})
	return p, nil
}

// StartFaultProxy starts a FaultProxy in front of this control plane with admin credentials.
func (e *Env) StartFaultProxy() (*FaultProxy, error) { return StartFaultProxy(e.Config) }

// Close stops the proxy and cuts every connection through it.
func (p *FaultProxy) Close() {
	p.FaultsOff()
	p.server.CloseClientConnections()
	p.server.Close()
}

// Config returns a REST config for a client of the proxy (no credentials: the proxy has them).
func (p *FaultProxy) Config() *rest.Config {
	return &rest.Config{Host: p.URL, TLSClientConfig: rest.TLSClientConfig{CAData: p.caPEM}}
}

// WriteKubeconfig writes a kubeconfig for a process that should talk to the API server through
// the proxy.
func (p *FaultProxy) WriteKubeconfig(path string) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["proxy"] = &clientcmdapi.Cluster{Server: p.URL, CertificateAuthorityData: p.caPEM}
	cfg.AuthInfos["proxy"] = &clientcmdapi.AuthInfo{}
	cfg.Contexts["proxy"] = &clientcmdapi.Context{Cluster: "proxy", AuthInfo: "proxy"}
	cfg.CurrentContext = "proxy"
	return clientcmd.WriteToFile(*cfg, path)
}

// SetFaults replaces the faults injected from now on; the burst cycle starts now.
func (p *FaultProxy) SetFaults(f Faults) {
	if len(f.Kinds) == 0 {
		f.Kinds = AllFaults
	}
	if f.Hold <= 0 {
		f.Hold = 2 * time.Second
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.faults, p.faultsOn = f, time.Now()
	p.rng = rand.New(rand.NewPCG(f.Seed, f.Seed^0x9e3779b97f4a7c15))
	if p.stopCutting != nil {
		close(p.stopCutting)
		p.stopCutting = nil
	}
	if f.Share > 0 && slices.Contains(f.Kinds, FaultWatchCut) {
		p.stopCutting = make(chan struct{})
		go p.cutWatchesEachBurst(f.Burst+f.Pause, p.stopCutting)
	}
}

// cutWatchesEachBurst cuts a share of the open watches now and at the start of every burst.
func (p *FaultProxy) cutWatchesEachBurst(cycle time.Duration, stop <-chan struct{}) {
	var tick <-chan time.Time
	if cycle > 0 {
		ticker := time.NewTicker(cycle)
		defer ticker.Stop()
		tick = ticker.C
	}
	for {
		p.mu.Lock()
		for w := range p.watches {
			if !w.cut && p.rng.Float64() < p.faults.Share {
				w.cut = true
				w.cancel()
			}
		}
		p.mu.Unlock()
		select {
		case <-stop:
			return
		case <-tick:
		}
	}
}

// FaultsOff stops injecting faults; requests in flight finish as decided.
func (p *FaultProxy) FaultsOff() { p.SetFaults(Faults{}) }

// Requests returns the requests handled so far, in the order they finished.
func (p *FaultProxy) Requests() []Request {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Request(nil), p.requests...)
}

// Summary counts the requests by user agent, verb, resource and outcome, one line each, for
// test logs.
func Summary(requests []Request) string {
	counts := map[string]int{}
	for _, r := range requests {
		outcome := fmt.Sprint(r.Code)
		if r.Fault != "" {
			outcome += " injected " + string(r.Fault)
		}
		ua, _, _ := strings.Cut(r.UserAgent, " ")
		counts[fmt.Sprintf("%-40s %-16s %-50s %s", ua, r.Verb, r.Resource, outcome)]++
	}
	lines := make([]string, 0, len(counts))
	for k, n := range counts {
		lines = append(lines, fmt.Sprintf("%6d %s", n, k))
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// choose decides the fault for a request; "" forwards it untouched.
func (p *FaultProxy) choose(r *http.Request, info Request) FaultKind {
	p.mu.Lock()
	defer p.mu.Unlock()
	f := p.faults
	if f.Share <= 0 {
		return ""
	}
	if f.Pause > 0 && time.Since(p.faultsOn)%(f.Burst+f.Pause) >= f.Burst {
		return ""
	}
	if p.rng.Float64() >= f.Share {
		return ""
	}
	var applicable []FaultKind
	for _, k := range f.Kinds {
		switch {
		case k == FaultConflict && r.Method != http.MethodPost && r.Method != http.MethodPut && r.Method != http.MethodPatch:
		case k == FaultWatchCut && info.Verb != "watch":
		default:
			applicable = append(applicable, k)
		}
	}
	if len(applicable) == 0 {
		return ""
	}
	return applicable[p.rng.IntN(len(applicable))]
}

func (p *FaultProxy) coin() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.rng.IntN(2) == 0
}

func (p *FaultProxy) holdFor() time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.faults.Hold
}

func (p *FaultProxy) watchCutAfter() time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	return 200*time.Millisecond + time.Duration(p.rng.Int64N(int64(2800*time.Millisecond)))
}

func (p *FaultProxy) serve(w http.ResponseWriter, r *http.Request) {
	info := requestInfo(r)
	info.UserAgent = r.UserAgent()
	info.Fault = p.choose(r, info)
	rec := &statusRecorder{ResponseWriter: w}
	defer func() {
		// A cut connection (http.ErrAbortHandler) is recorded with code 0 and passed on.
		v := recover()
		if v != nil {
			rec.code = 0
		}
		info.Time, info.Code = time.Now(), rec.code
		p.mu.Lock()
		p.requests = append(p.requests, info)
		p.mu.Unlock()
		if v != nil {
			panic(v)
		}
	}()

	switch info.Fault {
	case "":
		if info.Verb != "watch" {
			p.proxy.ServeHTTP(rec, r)
			return
		}
		ctx, cancel := context.WithCancel(r.Context())
		defer cancel()
		w := &openWatch{cancel: cancel}
		p.mu.Lock()
		p.watches[w] = struct{}{}
		p.mu.Unlock()
		defer func() {
			p.mu.Lock()
			delete(p.watches, w)
			if w.cut {
				info.Fault = FaultWatchCut
			}
			p.mu.Unlock()
		}()
		p.proxy.ServeHTTP(rec, r.WithContext(ctx))
	case FaultServerError:
		if p.coin() {
			writeStatus(rec, http.StatusInternalServerError, metav1.StatusReasonInternalError,
				"Internal error occurred: injected by the fault proxy", info)
		} else {
			writeStatus(rec, http.StatusServiceUnavailable, metav1.StatusReasonServiceUnavailable,
				"the server is currently unable to handle the request (injected by the fault proxy)", info)
		}
	case FaultConflict:
		writeStatus(rec, http.StatusConflict, metav1.StatusReasonConflict,
			fmt.Sprintf("Operation cannot be fulfilled on %s %q: the object has been modified; please apply your changes to the latest version and try again (injected by the fault proxy)", info.Resource, info.Name), info)
	case FaultTimeout:
		if info.IsWrite() && p.coin() {
			// Applied upstream, answer lost.
			p.proxy.ServeHTTP(httptest.NewRecorder(), r)
		}
		select {
		case <-time.After(p.holdFor()):
		case <-r.Context().Done():
		}
		if p.coin() {
			panic(http.ErrAbortHandler)
		}
		writeStatus(rec, http.StatusGatewayTimeout, metav1.StatusReasonTimeout,
			"the server was unable to return a response in the time allotted (injected by the fault proxy)", info)
	case FaultWatchCut:
		ctx, cancel := context.WithCancel(r.Context())
		defer cancel()
		timer := time.AfterFunc(p.watchCutAfter(), cancel)
		defer timer.Stop()
		p.proxy.ServeHTTP(rec, r.WithContext(ctx))
	}
}

// writeStatus answers with a metav1.Status body, as the API server does for errors.
func writeStatus(w http.ResponseWriter, code int, reason metav1.StatusReason, message string, info Request) {
	status := metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   metav1.StatusFailure, Code: int32(code), Reason: reason, Message: message,
		Details: &metav1.StatusDetails{Name: info.Name, Group: info.group, Kind: info.kind},
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(status)
}

// statusRecorder remembers the status code written through it and keeps streaming working.
type statusRecorder struct {
	http.ResponseWriter
	code int
}

func (s *statusRecorder) WriteHeader(code int) {
	if s.code == 0 {
		s.code = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(b []byte) (int, error) {
	if s.code == 0 {
		s.code = http.StatusOK
	}
	return s.ResponseWriter.Write(b)
}

func (s *statusRecorder) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// requestInfo names the Kubernetes verb and resource of a request from its method and path.
func requestInfo(r *http.Request) Request {
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	var group string
	var rest []string
	switch {
	case len(parts) >= 3 && parts[0] == "api":
		rest = parts[2:]
	case len(parts) >= 4 && parts[0] == "apis":
		group, rest = parts[1], parts[3:]
	default:
		return Request{Verb: strings.ToLower(r.Method), Resource: r.URL.Path}
	}
	var info Request
	if rest[0] == "namespaces" && len(rest) >= 3 {
		info.Namespace, rest = rest[1], rest[2:]
	}
	info.Resource, info.group, info.kind = rest[0], group, rest[0]
	if len(rest) >= 2 {
		info.Name = rest[1]
	}
	if len(rest) >= 3 {
		info.Resource += "/" + strings.Join(rest[2:], "/")
	}
	if group != "" {
		info.Resource = group + "/" + info.Resource
	}
	switch r.Method {
	case http.MethodGet:
		switch {
		case info.Name != "":
			info.Verb = "get"
		case r.URL.Query().Get("watch") == "true" || r.URL.Query().Get("watch") == "1":
			info.Verb = "watch"
		default:
			info.Verb = "list"
		}
	case http.MethodPost:
		info.Verb = "create"
	case http.MethodPut:
		info.Verb = "update"
	case http.MethodPatch:
		info.Verb = "patch"
	case http.MethodDelete:
		info.Verb = "delete"
		if info.Name == "" {
			info.Verb = "deletecollection"
		}
	default:
		info.Verb = strings.ToLower(r.Method)
	}
	return info
}
