package bench

import (
	"fmt"
	"io"
	"sync"
	"time"

	toolscache "k8s.io/client-go/tools/cache"

	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
	istionetworkingv1 "istio.io/client-go/pkg/apis/networking/v1"
)

// gatewayTimeline records when the benchmark's cache saw the generated Istio Gateway and the
// router.io Gateway's status change (SCALE_TIMELINE=1): where the time between the last route
// settling and the final Istio Gateway goes.
type gatewayTimeline struct {
	mu     sync.Mutex
	events []timelineEvent
}

type timelineEvent struct {
	at   time.Time
	what string
}

// watchGateways adds the timeline's handlers to the world's informers.
func (w *world) watchGateways(tl *gatewayTimeline) {
	record := func(what string) {
		tl.mu.Lock()
		tl.events = append(tl.events, timelineEvent{at: time.Now(), what: what})
		tl.mu.Unlock()
	}
	istio, err := w.cache.GetInformer(w.ctx, &istionetworkingv1.Gateway{})
	must(w.t, err)
	_, err = istio.AddEventHandler(toolscache.ResourceEventHandlerFuncs{UpdateFunc: func(_, o any) {
		if ig, ok := o.(*istionetworkingv1.Gateway); ok {
			hosts := 0
			for _, s := range ig.Spec.Servers {
				hosts += len(s.Hosts)
			}
			record(fmt.Sprintf("Istio Gateway written: %d hosts", hosts))
		}
	}})
	must(w.t, err)
	router, err := w.cache.GetInformer(w.ctx, &routingv1alpha1.Gateway{})
	must(w.t, err)
	_, err = router.AddEventHandler(toolscache.ResourceEventHandlerFuncs{UpdateFunc: func(_, o any) {
		if gw, ok := o.(*routingv1alpha1.Gateway); ok {
			admitted := int32(-1)
			if gw.Status.HostLimit != nil {
				admitted = gw.Status.HostLimit.Admitted
			}
			record(fmt.Sprintf("Gateway status written: hosts %d, host limit admitted %d", gw.Status.Hosts, admitted))
		}
	}})
	must(w.t, err)
}

// note records a point of the benchmark's own (routes settled, converged).
func (tl *gatewayTimeline) note(what string) {
	tl.mu.Lock()
	tl.events = append(tl.events, timelineEvent{at: time.Now(), what: what})
	tl.mu.Unlock()
}

// print writes the events from since on, relative to origin.
func (tl *gatewayTimeline) print(out io.Writer, since, origin time.Time) {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	for _, e := range tl.events {
		if !e.at.Before(since) {
			fmt.Fprintf(out, "  %+8.1f s  %s\n", e.at.Sub(origin).Seconds(), e.what)
		}
	}
}
