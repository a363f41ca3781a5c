package client

import (
	"bufio"
	"net"
	"strings"
	"testing"
)

// TestATransportErrorIsBounded: a server that is not the pod answers with
// a status line of 1 MiB (net/http reads up to 10 MiB of an answer's
// head, and its error quotes what it could not parse): the error and each
// retry's log line stay short, the retry and the sentinel as before.
func TestATransportErrorIsBounded(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					if l, err := r.ReadString('\n'); err != nil || l == "\r\n" {
						break
					}
				}
				_, _ = c.Write([]byte("HTTP/1.1 2" + strings.Repeat("0", 1<<20) + " OK\r\n\r\n"))
			}()
		}
	}()
	var logs logBuffer
	cl, err := New(Options{Address: ln.Addr().String(), MaxAttempts: 2, Logger: logs.logger()})
	if err != nil {
		t.Fatal(err)
	}
	cl.minWait, cl.maxWait = 0, 0
	_, err = cl.Gaps(ctx, GapsQuery{})
	if err == nil {
		t.Fatal("no error")
	}
	if n := len(err.Error()); n > 4096 {
		t.Errorf("the error is %d bytes: %.200s...", n, err)
	}
	if n := len(logs.String()); n > 4096 {
		t.Errorf("the retry's log line is %d bytes", n)
	}
	if !strings.Contains(logs.String(), "retrying") {
		t.Errorf("no retry logged: %s", logs.String())
	}
}
