package bench

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// requestKey identifies one series of kube-apiserver's apiserver_request_total that the benchmark
// reports: a resource (with its group and subresource), a verb and the response code; or, with
// Storage set, one series of its etcd_requests_total: what the API server asked etcd (Verb is the
// operation: "get", "update", "create", ...), for the same writes.
type requestKey struct {
	Resource string // "serviceroutes/status", "gateways.networking.istio.io", "events.events.k8s.io"
	Verb     string
	Code     string
	Storage  bool
}

// requests are the apiserver_request_total (and etcd_requests_total) counters at one moment.
type requests map[requestKey]float64

// writeVerbs are the verbs that change something.
var writeVerbs = map[string]bool{"POST": true, "PUT": true, "PATCH": true, "DELETE": true, "APPLY": true, "DELETECOLLECTION": true}

// scrapeRequests reads kube-apiserver's own request counters from its /metrics endpoint (the
// admin client may read it): the authoritative count of what every client wrote.
func scrapeRequests(ctx context.Context, cfg *rest.Config) (requests, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	raw, err := cs.Discovery().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading kube-apiserver /metrics: %w", err)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(string(raw)))
	if err != nil {
		return nil, fmt.Errorf("parsing kube-apiserver /metrics: %w", err)
	}
	out := requests{}
	for _, m := range families["apiserver_request_total"].GetMetric() {
		l := labels(m)
		resource := groupResource(l)
		if s := l["subresource"]; s != "" {
			resource += "/" + s
		}
		out[requestKey{Resource: resource, Verb: l["verb"], Code: l["code"]}] += m.GetCounter().GetValue()
	}
	for _, m := range families["etcd_requests_total"].GetMetric() {
		l := labels(m)
		out[requestKey{Resource: groupResource(l), Verb: l["operation"], Storage: true}] += m.GetCounter().GetValue()
	}
	return out, nil
}

// groupResource names a series' resource with its group, as "serviceroutes.routing.router.io"
// (a core resource has no group: "events").
func groupResource(l map[string]string) string {
	if g := l["group"]; g != "" {
		return l["resource"] + "." + g
	}
	return l["resource"]
}

// labels returns a series' labels by name.
func labels(m *dto.Metric) map[string]string {
	l := map[string]string{}
	for _, p := range m.GetLabel() {
		l[p.GetName()] = p.GetValue()
	}
	return l
}

// since is what was written between before and r.
func (r requests) since(before requests) requests {
	out := requests{}
	for k, v := range r {
		if d := v - before[k]; d > 0 {
			out[k] = d
		}
	}
	return out
}

// write says whether the key counts writes (not reads, not storage requests).
func (k requestKey) write() bool { return !k.Storage && writeVerbs[k.Verb] }

// total counts the writes matching keep.
func (r requests) total(keep func(requestKey) bool) float64 {
	n := 0.0
	for k, v := range r {
		if k.write() && keep(k) {
			n += v
		}
	}
	return n
}

// conflicts counts the writes refused with 409 Conflict (optimistic lock or AlreadyExists).
func (r requests) conflicts() float64 {
	return r.total(func(k requestKey) bool { return k.Code == "409" })
}

// byResource sums the successful writes by resource ("serviceroutes/status" → count).
func (r requests) byResource() map[string]float64 {
	out := map[string]float64{}
	for k, v := range r {
		if k.write() && k.Code != "409" {
			out[k.Resource] += v
		}
	}
	return out
}

// reads sums the read requests (GET, LIST, WATCH: a watch counts once, when it opens) by
// resource and verb ("serviceroutes.routing.router.io LIST" → count).
func (r requests) reads() map[string]float64 {
	out := map[string]float64{}
	for k, v := range r {
		if !k.Storage && !writeVerbs[k.Verb] {
			out[k.Resource+" "+k.Verb] += v
		}
	}
	return out
}

// storageOps sums the API server's etcd requests by operation, for the resources the benchmark's
// routes touch ("update" → count): the work behind the writes, retries included.
func (r requests) storageOps() map[string]float64 {
	out := map[string]float64{}
	for k, v := range r {
		if k.Storage && (k.Resource == resRoutes || k.Resource == resEndpoints) {
			out[k.Verb] += v
		}
	}
	return out
}

// resources lists the resources written, sorted.
func (r requests) resources() []string {
	return slices.Sorted(maps.Keys(r.byResource()))
}

const (
	resRoutes          = "serviceroutes.routing.router.io"
	resRouteStatus     = "serviceroutes.routing.router.io/status"
	resEndpoints       = "dnsendpoints.externaldns.k8s.io"
	resIstioGateways   = "gateways.networking.istio.io"
	resGatewayStatus   = "gateways.routing.router.io/status"
	resEvents          = "events.events.k8s.io"
	resCoreEvents      = "events"
	resClusterIdentity = "clusteridentities.cluster.router.io"
)

// of counts the successful writes of one resource.
func (r requests) of(resource string) float64 {
	return r.total(func(k requestKey) bool { return k.Resource == resource && k.Code != "409" })
}

// conflictsOf counts the 409 answers on one resource.
func (r requests) conflictsOf(resource string) float64 {
	return r.total(func(k requestKey) bool { return k.Resource == resource && k.Code == "409" })
}

// apiServerCPUProfile saves a CPU profile of kube-apiserver over the next d to
// $SCALE_PPROF_DIR/apiserver-cpu-<phase>-<routes>.pb.gz (its /debug/pprof, which the admin may
// read): where the API server's time goes in a phase of the floor and the same phase of the
// operator.
func (w *world) apiServerCPUProfile(phase string, routes int, d time.Duration) {
	dir := os.Getenv("SCALE_PPROF_DIR")
	if dir == "" {
		return
	}
	cs, err := kubernetes.NewForConfig(w.cfg)
	if err != nil {
		return
	}
	raw, err := cs.Discovery().RESTClient().Get().AbsPath("/debug/pprof/profile").Param("seconds", strconv.Itoa(int(d.Seconds()))).
		Timeout(d + 30*time.Second).DoRaw(w.ctx)
	if err != nil {
		w.t.Logf("profiling kube-apiserver: %v", err)
		return
	}
	_ = os.WriteFile(filepath.Join(dir, fmt.Sprintf("apiserver-cpu-%s-%d.pb.gz", phase, routes)), raw, 0o644)
}
