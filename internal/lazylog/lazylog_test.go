package lazylog

import (
	"strings"
	"testing"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
)

// countingSink counts WithValues calls on the sink it wraps.
type countingSink struct {
	logr.LogSink
	withValues *int
}

func (c countingSink) WithValues(kv ...any) logr.LogSink {
	*c.withValues++
	return countingSink{c.LogSink.WithValues(kv...), c.withValues}
}

func (c countingSink) WithName(name string) logr.LogSink {
	return countingSink{c.LogSink.WithName(name), c.withValues}
}

func TestLazy_ValuesReachTheSinkOnlyWhenALineIsWritten(t *testing.T) {
	var lines []string
	var withValues int
	base := funcr.New(func(prefix, args string) { lines = append(lines, prefix+" "+args) }, funcr.Options{Verbosity: 0})
	log := New(logr.New(countingSink{base.GetSink(), &withValues}))

	for i := range 1000 {
		reconcile := log.WithName("serviceroute").WithValues("namespace", "app", "name", "web").WithValues("reconcileID", i)
		reconcile.V(1).Info("not written: verbosity 0")
		if i == 999 {
			reconcile.Info("written", "extra", true)
			reconcile.Error(nil, "failed")
		}
	}
	if withValues != 2 {
		t.Errorf("the sink's WithValues was called %d times for 1,000 reconciles and 2 lines, want 2", withValues)
	}
	if len(lines) != 2 {
		t.Fatalf("got %d lines, want 2: %q", len(lines), lines)
	}
	for _, l := range lines {
		for _, want := range []string{`serviceroute`, `"namespace"="app"`, `"name"="web"`, `"reconcileID"=999`} {
			if !strings.Contains(l, want) {
				t.Errorf("line %q lacks %s", l, want)
			}
		}
	}
	if !strings.Contains(lines[0], `"extra"=true`) {
		t.Errorf("line %q lacks the values given with the line", lines[0])
	}
}

func TestLazy_ReportsTheCallerOfTheLogger(t *testing.T) {
	var line string
	log := New(funcr.New(func(_, args string) { line = args }, funcr.Options{LogCaller: funcr.All}))
	log.WithValues("k", "v").Info("here")
	if !strings.Contains(line, `"file"="lazylog_test.go"`) {
		t.Errorf("caller is not the test: %s", line)
	}
	log.WithValues("k", "v").WithCallDepth(0).Error(nil, "here")
	if !strings.Contains(line, `"file"="lazylog_test.go"`) {
		t.Errorf("caller after WithCallDepth is not the test: %s", line)
	}
}
