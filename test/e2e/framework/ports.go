package framework

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
)

// handedOut remembers the ports this process returned so that two components started in the same
// run never get the same port, even if the kernel offers it twice.
var (
	portsMu   sync.Mutex
	handedOut = map[int]bool{}
)

func claim(port int) bool {
	portsMu.Lock()
	defer portsMu.Unlock()
	if handedOut[port] {
		return false
	}
	handedOut[port] = true
	return true
}

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago: the kernel picks it when
// binding port 0, and the listener is closed before returning. Another process may take it before
// the caller binds it, so starters check that their process really listens and retry otherwise.
func FreePort() (int, error) {
	for range 50 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, fmt.Errorf("picking a free TCP port: %w", err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		_ = l.Close()
		if claim(port) {
			return port, nil
		}
	}
	return 0, fmt.Errorf("no unused TCP port on 127.0.0.1 after 50 attempts")
}

// FreeTCPUDPPort returns a port on 127.0.0.1 that is free for both TCP and UDP, as a DNS server
// needs.
func FreeTCPUDPPort() (int, error) {
	for range 50 {
		tl, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, fmt.Errorf("picking a free TCP port: %w", err)
		}
		port := tl.Addr().(*net.TCPAddr).Port
		ul, err := net.ListenPacket("udp", fmt.Sprintf("127.0.0.1:%d", port))
		_ = tl.Close()
		if err != nil {
			continue
		}
		_ = ul.Close()
		if claim(port) {
			return port, nil
		}
	}
	return 0, fmt.Errorf("no port free for both TCP and UDP on 127.0.0.1 after 50 attempts")
}

// startRetryingPort calls start, which picks a free port for the process it starts, up to three
// times while it fails with errPortInUse (another process took the port between picking and
// binding), and registers the started process's Stop with c (when not nil).
func startRetryingPort[T interface{ Stop() error }](ctx context.Context, c Cleanup, start func() (T, error)) (T, error) {
	var errs []error
	for range 3 {
		started, err := start()
		if err == nil {
			if c != nil {
				c.Cleanup(func() { _ = started.Stop() })
			}
			return started, nil
		}
		errs = append(errs, err)
		if ctx.Err() != nil || !errors.Is(err, errPortInUse) {
			break
		}
	}
	var zero T
	return zero, errors.Join(errs...)
}
