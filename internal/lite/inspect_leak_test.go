package lite

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/covmirror/covmirror/internal/testseed"
)

// leaked is the first piece of secret in out: the secret whole, or a
// prefix of it of 8 bytes or more.
func leaked(out, secret string) (string, bool) {
	for n := len(secret); n >= 8; n-- {
		if strings.Contains(out, secret[:n]) {
			return secret[:n], true
		}
	}
	return "", false
}

// TestInspectURLEchoAtEveryOffset: a server that echoes the request's
// Authorization header at every offset of its error answer around the
// 4,096 bytes inspect reads leaves no piece of the token of 8 bytes or
// more in inspect's output.
func TestInspectURLEchoAtEveryOffset(t *testing.T) {
	seed := testseed.Seed(t)
	r := rand.New(rand.NewPCG(seed, 0))
	tok := randomToken(t)
	filler := make([]byte, 2*maxErrorAnswer)
	for i := range filler {
		filler[i] = "abcdefghij klmnop"[r.IntN(17)]
	}
	var off atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		w.WriteHeader(http.StatusBadGateway)
		fmt.Fprintf(w, "%sAuthorization: %s\r\n%s", filler[:off.Load()], req.Header.Get("Authorization"), filler)
	}))
	defer srv.Close()
	for o := maxErrorAnswer - 60 - len(tok); o <= maxErrorAnswer+8; o++ {
		off.Store(int64(o))
		out, errOut, err := inspectURL(t, srv.URL+"/debug/coverage", tok)
		if err == nil {
			t.Fatalf("offset %d: a 502 was no error", o)
		}
		if p, bad := leaked(out+errOut, tok); bad {
			t.Fatalf("token at offset %d: %q of it is printed:\n%s\n%s", o, p, errOut, testseed.Replay(t, seed))
		}
	}
}

// TestInspectURLUnparsablePassword: a URL whose password holds a raw %
// (url.Parse refuses it, and its error quotes the URL whole) is a usage
// error that never echoes the password, at any offset of the password.
func TestInspectURLUnparsablePassword(t *testing.T) {
	seed := testseed.Seed(t)
	r := rand.New(rand.NewPCG(seed, 0))
	pw := []byte(randomToken(t))
	for at := range len(pw) {
		p := append([]byte(nil), pw...)
		p[at] = "%#/?"[r.IntN(4)]
		url := "http://ops:" + string(p) + "@127.0.0.1:1/debug/coverage"
		out, errOut, err := inspectURL(t, url, "tok-"+string(pw))
		if err == nil {
			continue // it parsed: then it was refused by the connection, checked below
		}
		for _, secret := range []string{string(p[:at]), string(p[at+1:])} {
			if len(secret) >= 8 {
				if piece, bad := leaked(out+errOut, secret); bad {
					t.Fatalf("password %q: %q of it is printed: %s\n%s", p, piece, errOut, testseed.Replay(t, seed))
				}
			}
		}
	}
}

// TestInspectURLStatusControlCharacters: a server's status text is printed
// quoted, its control characters escaped, never raw on the terminal.
func TestInspectURLStatusControlCharacters(t *testing.T) {
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
			_, _ = bufio.NewReader(c).ReadString('\n')
			_, _ = c.Write([]byte("HTTP/1.1 502 Bad\x1b[2J\x07Gateway\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"))
			_ = c.Close()
		}
	}()
	_, errOut, err := inspectURL(t, "http://"+ln.Addr().String()+"/debug/coverage", randomToken(t))
	if err == nil || strings.ContainsAny(errOut, "\x1b\x07") {
		t.Fatalf("inspect --url: %v; printed %q: the status text's control characters are raw", err, errOut)
	}
}
