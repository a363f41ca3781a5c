package sidecar

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestBodyFailuresOverTheWire: through a real listener and net/http's
// own body reader (timeouts from ReadTimeout, a body cut short by the
// client's close, a chunked body past MaxBodyBytes), a body read whole
// before decoding is still classified by the transport: 408 timeout, 408
// body-read, 413, with no entry named and nothing recorded.
func TestBodyFailuresOverTheWire(t *testing.T) {
	p := newPod(t, func(o *Options) {
		o.ReadTimeout = 300 * time.Millisecond
		o.MaxBodyBytes = 4096
	})
	ln, err := ListenTCP("127.0.0.1:0", false, nil)
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = p.srv.Serve(ln) }()
	defer func() { _ = p.srv.Shutdown(ctx) }()
	entry := `{"sink":"lake","topic":"orders","partition":0,"start":0,"end":10}`
	head := func(extra string) string {
		return "POST /v1/records HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n" + extra + "\r\n"
	}
	for _, c := range []struct {
		name string
		send func(c *net.TCPConn) error
		code int
		rule string
	}{
		{"stalls", func(c *net.TCPConn) error {
			_, err := fmt.Fprintf(c, "%s[%s,{\"sink\":\"la", head("Content-Length: 1000\r\n"), entry)
			return err // and waits past ReadTimeout
		}, 408, "timeout"},
		{"cut short", func(c *net.TCPConn) error {
			if _, err := fmt.Fprintf(c, "%s[%s,{\"sink\":\"la", head("Content-Length: 1000\r\n"), entry); err != nil {
				return err
			}
			return c.CloseWrite()
		}, 408, "body-read"},
		{"too large", func(c *net.TCPConn) error {
			body := "[" + strings.Repeat(entry+",", 100) + entry + "]"
			_, err := fmt.Fprintf(c, "%s%x\r\n%s\r\n0\r\n\r\n", head("Transfer-Encoding: chunked\r\n"), len(body), body)
			return err
		}, 413, "body-too-large"},
	} {
		t.Run(c.name, func(t *testing.T) {
			conn, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			if err := c.send(conn.(*net.TCPConn)); err != nil {
				t.Fatal(err)
			}
			_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				t.Fatalf("no answer: %v", err)
			}
			defer resp.Body.Close()
			var a apiError
			if err := json.NewDecoder(resp.Body).Decode(&a); err != nil {
				t.Fatalf("%d: the answer is not JSON: %v", resp.StatusCode, err)
			}
			if resp.StatusCode != c.code || a.Rule != c.rule || a.Entry != nil {
				t.Fatalf("%d %+v; want %d rule %s and no entry", resp.StatusCode, a, c.code, c.rule)
			}
		})
	}
	if st := localState(t, p.local); len(st) != 0 {
		t.Errorf("a body that failed recorded %v", st)
	}
}
