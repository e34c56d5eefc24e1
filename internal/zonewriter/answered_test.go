package zonewriter

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"syscall"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
)

func TestDidNotAnswer(t *testing.T) {
	timeout := &net.OpError{Op: "read", Net: "tcp", Err: &timeoutError{}}
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"no error", nil, false},
		{"a read that timed out", fmt.Errorf("asking 127.0.0.1:53: %w", timeout), true},
		{"the context's deadline", fmt.Errorf("listing: %w", context.DeadlineExceeded), true},
		{"a connection cut in the middle", fmt.Errorf("writing the heartbeat: %w", io.EOF), true},
		{"a connection refused", fmt.Errorf("dial: %w", &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}), true},
		{"an RFC 2136 refusal: an answer", fmt.Errorf("update: %w", rcodeError(5)), false},
		{"a TSIG error: an answer", errors.New("dns: bad authentication"), false},
		{"Resource Manager's 403: an answer", &azcore.ResponseError{StatusCode: http.StatusForbidden, ErrorCode: "AuthorizationFailed"}, false},
		{"the value changed: an answer", ErrChanged, false},
	}
	for _, tt := range tests {
		if got := DidNotAnswer(tt.err); got != tt.want {
			t.Errorf("%s: DidNotAnswer(%v) = %v, want %v", tt.name, tt.err, got, tt.want)
		}
	}
}

type timeoutError struct{}

func (*timeoutError) Error() string   { return "i/o timeout" }
func (*timeoutError) Timeout() bool   { return true }
func (*timeoutError) Temporary() bool { return true }
