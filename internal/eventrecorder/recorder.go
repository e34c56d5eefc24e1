// Package eventrecorder records Kubernetes Events (events.k8s.io/v1) with memory and concurrency
// bounds. client-go's events broadcaster, which controller-runtime's manager uses, starts two
// goroutines per event and keeps a copy of every event it sent for six minutes to fold repeats
// into a series: a burst of changes reaching thousands of routes (a sync of 10,000 routes sends
// 20,000 events) holds tens of megabytes and thousands of goroutines. This recorder has a bounded
// queue (events beyond it are dropped and counted, as client-go drops them when its queue is
// full), a fixed number of senders, and a bounded cache of recent events for the series.
//
// Events are sent as client-go sends them: the same name scheme, reporting controller and
// instance, regarding and related references; a repeat of an event (same type, reason, action,
// regarding and related object) within six minutes increments the series of the first one.
package eventrecorder

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	eventsv1client "k8s.io/client-go/kubernetes/typed/events/v1"
	"k8s.io/client-go/tools/reference"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/utils/lru"
	ctrl "sigs.k8s.io/controller-runtime"
)

// Settings bound the recorder.
type Settings struct {
	// Queue is how many events may wait to be sent; more are dropped.
	Queue int
	// Senders send events in parallel.
	Senders int
	// Series is how many recent events are remembered to fold repeats into a series.
	Series int
	// SeriesWindow is how long a repeat still joins the series of the first event.
	SeriesWindow time.Duration
	// PerSecond and Burst limit how fast events are sent (PerSecond 0: no limit). A change
	// reaching thousands of routes then writes their DNS records at the speed of the API server
	// while its events trail behind; what does not fit in the queue meanwhile is dropped.
	PerSecond float32
	Burst     int
}

// DefaultSettings: client-go's series window, four senders, 4,096 recent events (client-go's
// core/v1 recorder remembers as many), bursts of 100 and then at most 5 events per second, with
// 250 waiting: far more than a cluster at rest produces, while during a change reaching thousands
// of routes the events take about 2 % of the API server's writes instead of the 6–9 % that 20 per
// second took from the records, and trail them by at most 50 s (docs/DEVELOPMENT.md#scale).
var DefaultSettings = Settings{Queue: 250, Senders: 4, Series: 4096, SeriesWindow: 6 * time.Minute, PerSecond: 5, Burst: 100}

// maxNoteLength is the API's limit on an event's note.
const maxNoteLength = 1024

// Recorder implements k8s.io/client-go/tools/events.EventRecorder. Start it (it is a manager
// Runnable) for the events to be sent.
type Recorder struct {
	client     eventsv1client.EventsGetter
	scheme     *runtime.Scheme
	controller string
	instance   string
	settings   Settings
	now        func() time.Time

	queue   chan *eventsv1.Event
	limiter flowcontrol.RateLimiter // nil: no limit
	dropped atomic.Int64

	mu     sync.Mutex
	recent *lru.Cache // seriesKey (string) → *sent
}

// sent is what the recorder remembers of an event it created, to extend its series.
type sent struct {
	namespace, name string
	count           int32
	last            time.Time
}

// seriesKey is what makes two events the same occurrence (client-go's rule: type, action, reason,
// regarding and related object; the note is not part of it), as one compact string.
func seriesKey(ev *eventsv1.Event) string {
	ref := func(r *corev1.ObjectReference) string {
		switch {
		case r == nil:
			return ""
		case r.UID != "":
			return string(r.UID)
		}
		return r.Kind + "/" + r.Namespace + "/" + r.Name
	}
	return strings.Join([]string{ev.Type, ev.Action, ev.Reason, ref(&ev.Regarding), ref(ev.Related)}, "\x00")
}

// New returns a recorder sending with client, naming itself reportingController.
func New(client eventsv1client.EventsGetter, scheme *runtime.Scheme, reportingController string, s Settings) *Recorder {
	hostname, _ := os.Hostname()
	r := &Recorder{client: client, scheme: scheme, controller: reportingController, instance: reportingController + "-" + hostname,
		settings: s, now: time.Now, queue: make(chan *eventsv1.Event, s.Queue), recent: lru.New(s.Series)}
	if s.PerSecond > 0 {
		r.limiter = flowcontrol.NewTokenBucketRateLimiter(s.PerSecond, max(s.Burst, 1))
	}
	return r
}

// Eventf queues an event about regarding (related may be nil). It never blocks: when the queue is
// full the event is dropped and counted.
func (r *Recorder) Eventf(regarding, related runtime.Object, eventtype, reason, action, note string, args ...any) {
	log := ctrl.Log.WithName("events")
	ref, err := reference.GetReference(r.scheme, regarding)
	if err != nil {
		log.Error(err, "cannot reference the object of an event; not recording it", "reason", reason)
		return
	}
	var relatedRef *corev1.ObjectReference
	if related != nil {
		relatedRef, _ = reference.GetReference(r.scheme, related) // an event without its related object still says enough
	}
	now := metav1.MicroTime{Time: r.now()}
	namespace := ref.Namespace
	if namespace == "" {
		namespace = metav1.NamespaceDefault // events about cluster-scoped objects
	}
	message := fmt.Sprintf(note, args...)
	if len(message) > maxNoteLength {
		message = message[:maxNoteLength]
	}
	ev := &eventsv1.Event{
		ObjectMeta:          metav1.ObjectMeta{Name: fmt.Sprintf("%v.%x", ref.Name, now.UnixNano()), Namespace: namespace},
		EventTime:           now,
		ReportingController: r.controller,
		ReportingInstance:   r.instance,
		Action:              action,
		Reason:              reason,
		Regarding:           *ref,
		Related:             relatedRef,
		Note:                message,
		Type:                eventtype,
	}
	select {
	case r.queue <- ev:
	default:
		if n := r.dropped.Add(1); n == 1 || n%1000 == 0 {
			log.Info("event queue full; events are dropped", "dropped", n)
		}
	}
}

// Dropped is the number of events dropped because the queue was full.
func (r *Recorder) Dropped() int64 { return r.dropped.Load() }

// Start sends queued events until ctx ends.
func (r *Recorder) Start(ctx context.Context) error {
	var wg sync.WaitGroup
	for range max(r.settings.Senders, 1) {
		wg.Go(func() {
			for {
				select {
				case <-ctx.Done():
					return
				case ev := <-r.queue:
					if r.limiter != nil && r.limiter.Wait(ctx) != nil {
						return // stopped while waiting
					}
					r.send(ctx, ev)
				}
			}
		})
	}
	wg.Wait()
	return nil
}

// NeedLeaderElection: every replica may record events (standbys reconcile nothing, so they send
// none).
func (r *Recorder) NeedLeaderElection() bool { return false }

// send creates the event, or extends the series of the same event sent within the window.
func (r *Recorder) send(ctx context.Context, ev *eventsv1.Event) {
	key := seriesKey(ev)
	now := ev.EventTime.Time
	r.mu.Lock()
	var repeat sent
	if v, ok := r.recent.Get(key); ok {
		if s := v.(*sent); now.Sub(s.last) < r.settings.SeriesWindow {
			s.count++
			s.last = now
			repeat = *s
		}
	}
	r.mu.Unlock()
	log := ctrl.Log.WithName("events")
	if repeat.count > 1 {
		patch, _ := json.Marshal(map[string]any{"series": eventsv1.EventSeries{Count: repeat.count, LastObservedTime: metav1.MicroTime{Time: now}}})
		_, err := r.client.Events(repeat.namespace).Patch(ctx, repeat.name, types.MergePatchType, patch, metav1.PatchOptions{})
		if err == nil {
			return
		}
		if !apierrors.IsNotFound(err) {
			log.V(1).Info("cannot update an event series", "event", repeat.name, "error", err.Error())
			return
		}
		// The first event is gone (expired): this one starts anew.
	}
	created, err := r.client.Events(ev.Namespace).Create(ctx, ev, metav1.CreateOptions{})
	if err != nil {
		log.V(1).Info("cannot record an event", "reason", ev.Reason, "regarding", ev.Regarding.Name, "error", err.Error())
		return
	}
	r.mu.Lock()
	r.recent.Add(key, &sent{namespace: created.Namespace, name: created.Name, count: 1, last: now})
	r.mu.Unlock()
}
