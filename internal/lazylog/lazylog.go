// Package lazylog defers the key/value pairs a logger is given until it logs.
//
// controller-runtime gives every reconcile a logger carrying the request's names and a reconcile
// ID (two WithValues calls), whether the reconcile logs or not. zap encodes such values when they
// are attached, cloning its encoder and a buffer each time: at thousands of reconciles a second
// that was 6 % of everything the operator allocated during a fan-out, for lines that are almost
// never written. A lazy sink keeps the pairs in a slice and hands them to the real sink only
// when a line is actually written.
package lazylog

import "github.com/go-logr/logr"

// New returns a logger that writes through base's sink, attaching the values given with
// WithValues only when a line is written.
func New(base logr.Logger) logr.Logger {
	sink := base.GetSink()
	if sink == nil {
		return base
	}
	if cd, ok := sink.(logr.CallDepthLogSink); ok {
		sink = cd.WithCallDepth(1) // the lazy sink's Info or Error, between the logger and the sink
	}
	return logr.New(&lazySink{base: sink})
}

type lazySink struct {
	base   logr.LogSink
	values []any
}

var (
	_ logr.LogSink          = (*lazySink)(nil)
	_ logr.CallDepthLogSink = (*lazySink)(nil)
)

// Init is called by logr.New with the sink's runtime info; the base sink was initialised when its
// own logger was made.
func (s *lazySink) Init(logr.RuntimeInfo) {}

func (s *lazySink) Enabled(level int) bool { return s.base.Enabled(level) }

func (s *lazySink) Info(level int, msg string, keysAndValues ...any) {
	s.withValues().Info(level, msg, keysAndValues...)
}

func (s *lazySink) Error(err error, msg string, keysAndValues ...any) {
	s.withValues().Error(err, msg, keysAndValues...)
}

// withValues is the base sink with the deferred values attached.
func (s *lazySink) withValues() logr.LogSink {
	if len(s.values) == 0 {
		return s.base
	}
	return s.base.WithValues(s.values...)
}

func (s *lazySink) WithValues(keysAndValues ...any) logr.LogSink {
	values := make([]any, 0, len(s.values)+len(keysAndValues))
	values = append(append(values, s.values...), keysAndValues...)
	return &lazySink{base: s.base, values: values}
}

func (s *lazySink) WithName(name string) logr.LogSink {
	return &lazySink{base: s.base.WithName(name), values: s.values}
}

// WithCallDepth passes the depth on (the lazy sink's own frame is counted once, in New), so that
// a sink reporting the caller reports the caller of the logger.
func (s *lazySink) WithCallDepth(depth int) logr.LogSink {
	base := s.base
	if cd, ok := base.(logr.CallDepthLogSink); ok {
		base = cd.WithCallDepth(depth)
	}
	return &lazySink{base: base, values: s.values}
}
