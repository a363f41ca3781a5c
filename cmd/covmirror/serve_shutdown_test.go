package main

import (
	"fmt"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestServeShutdownNamesUnansweredRequests: a request still in flight when
// SIGTERM's window ends makes serve's error say so and what to do, not only
// "context deadline exceeded".
func TestServeShutdownNamesUnansweredRequests(t *testing.T) {
	bin := buildBinary(t)
	p := startServe(t, bin, t.TempDir())
	conn, err := net.Dial("tcp", p.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	body := `[{"sink":"lake","topic":"orders","partition":0,"start":0,"end":1}]`
	// Headers and part of the body: the request stays in flight past the
	// shutdown window (the read timeout is 30s).
	fmt.Fprintf(conn, "POST /v1/records HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body[:10])
	time.Sleep(300 * time.Millisecond)
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	select {
	case err = <-done:
	case <-time.After(time.Minute):
		t.Fatalf("serve did not exit after SIGTERM; stderr %s", p.stderr.String())
	}
	if err == nil || !strings.Contains(p.stderr.String(), "still in flight") || !strings.Contains(p.stderr.String(), "retry") {
		t.Fatalf("serve: %v; stderr %s; want an error naming the unanswered requests", err, p.stderr.String())
	}
}
