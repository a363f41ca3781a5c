package object

import (
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"syscall"
)

// httpFault is what faultTransport does to one request.
type httpFault uint8

const (
	faultNone httpFault = iota
	// Answered without forwarding: the store never saw the request.
	fault412 // 412 PreconditionFailed
	fault409 // 409 ConditionalRequestConflict
	fault500 // 500 InternalError
	fault503 // 503 SlowDown
	faultResetBefore
	faultTimeoutBefore
	// Forwarded and applied by the store, then the answer is lost or
	// replaced: the write landed, the client cannot know it.
	fault500After
	faultResetAfter
	faultTimeoutAfter
	faultCount
)

var faultNames = [...]string{"none", "412 before", "409 before", "500 before", "503 before",
	"reset before", "timeout before", "500 after", "reset after", "timeout after"}

func (f httpFault) String() string { return faultNames[f] }

// forwarded: the store received and applied the request.
func (f httpFault) forwarded() bool { return f == faultNone || f >= fault500After }

// faultTransport injects HTTP faults into a client's requests: decide
// picks a fault for each request (from a seeded generator in the random
// tests), and every injected fault is recorded.
type faultTransport struct {
	next   http.RoundTripper
	mu     sync.Mutex
	decide func(*http.Request) httpFault
	events []httpFault
}

func newFaultTransport(decide func(*http.Request) httpFault) *faultTransport {
	return &faultTransport{next: http.DefaultTransport, decide: decide}
}

// seeded picks, for each PUT, a fault with probability p from seed.
func seeded(seed uint64, p float64) func(*http.Request) httpFault {
	rng := rand.New(rand.NewPCG(seed, seed^0x5eed))
	return func(r *http.Request) httpFault {
		if r.Method != http.MethodPut || rng.Float64() >= p {
			return faultNone
		}
		return httpFault(1 + rng.IntN(int(faultCount)-1))
	}
}

// once injects f into the next request of method, then nothing.
func once(method string, f httpFault) func(*http.Request) httpFault {
	done := false
	return func(r *http.Request) httpFault {
		if done || r.Method != method {
			return faultNone
		}
		done = true
		return f
	}
}

// last is the fault injected into the last request.
func (ft *faultTransport) last() httpFault {
	ft.mu.Lock()
	defer ft.mu.Unlock()
	if len(ft.events) == 0 {
		return faultNone
	}
	return ft.events[len(ft.events)-1]
}

func (ft *faultTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	ft.mu.Lock()
	f := ft.decide(r)
	ft.events = append(ft.events, f)
	ft.mu.Unlock()
	reset := &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}
	timeout := &net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}
	switch f {
	case fault412:
		return errorResponse(r, http.StatusPreconditionFailed, "PreconditionFailed"), nil
	case fault409:
		return errorResponse(r, http.StatusConflict, "ConditionalRequestConflict"), nil
	case fault500:
		return errorResponse(r, http.StatusInternalServerError, "InternalError"), nil
	case fault503:
		return errorResponse(r, http.StatusServiceUnavailable, "SlowDown"), nil
	case faultResetBefore:
		return nil, reset
	case faultTimeoutBefore:
		return nil, timeout
	}
	rsp, err := ft.next.RoundTrip(r)
	if err != nil || f == faultNone {
		return rsp, err
	}
	_, _ = io.Copy(io.Discard, rsp.Body)
	_ = rsp.Body.Close()
	switch f {
	case fault500After:
		return errorResponse(r, http.StatusInternalServerError, "InternalError"), nil
	case faultResetAfter:
		return nil, reset
	default: // faultTimeoutAfter
		return nil, timeout
	}
}

func errorResponse(r *http.Request, status int, code string) *http.Response {
	if r.Body != nil {
		_, _ = io.Copy(io.Discard, r.Body)
		_ = r.Body.Close()
	}
	body := fmt.Sprintf(`<?xml version="1.0" encoding="UTF-8"?><Error><Code>%s</Code><Message>injected</Message></Error>`, code)
	return &http.Response{
		Status: fmt.Sprintf("%d %s", status, http.StatusText(status)), StatusCode: status,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header:        http.Header{"Content-Type": {"application/xml"}},
		Body:          io.NopCloser(strings.NewReader(body)),
		ContentLength: int64(len(body)), Request: r,
	}
}
