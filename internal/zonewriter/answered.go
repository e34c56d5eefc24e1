package zonewriter

import (
	"context"
	"errors"
	"io"
	"net"
	"syscall"
)

// DidNotAnswer says err is a zone's silence rather than its answer: a timeout, a connection
// refused, reset or cut in the middle. A zone that answers, even to refuse (an RFC 2136 rcode, a
// TSIG error, a Resource Manager status such as 403 or 429), answers quickly and may answer
// another kind of request; one that does not answer costs every request its timeout, whatever
// the request.
func DidNotAnswer(err error) bool {
	if err == nil {
		return false
	}
	var netErr net.Error
	return errors.As(err, &netErr) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, io.EOF) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET)
}
