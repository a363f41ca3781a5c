package reconcile_test

import (
	"bufio"
	"context"
	"math/rand/v2"
	"net"
	"strings"
	"testing"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/internal/testseed"
	"github.com/covmirror/covmirror/reconcile"
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

// TestHTTPURLPasswordNeverPrinted: an HTTP checker's URL with a password
// holding %, /, # or ? at every offset (which url.Parse refuses, or reads
// as a path or fragment) is refused by the configuration, and by NewHTTP,
// and neither error shows a piece of the password of 8 bytes or more.
func TestHTTPURLPasswordNeverPrinted(t *testing.T) {
	seed := testseed.Seed(t)
	r := rand.New(rand.NewPCG(seed, 0))
	const letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	base := make([]byte, 24+r.IntN(16))
	for i := range base {
		base[i] = letters[r.IntN(len(letters))]
	}
	for at := range len(base) {
		pw := append([]byte(nil), base...)
		pw[at] = "%#/?"[r.IntN(4)]
		tmpl := "http://ops:" + string(pw) + "@127.0.0.1:1/held/{topic}/{partition}?start={start}&end={end}"
		_, cfgErr := configOf(t, "s.kind = http", "s.url = "+tmpl)
		_, newErr := reconcile.NewHTTP(tmpl, reconcile.HTTPOptions{})
		for what, err := range map[string]error{"the configuration": cfgErr, "NewHTTP": newErr} {
			if err == nil {
				t.Fatalf("%s took the template with a password, %q", what, pw)
			}
			for _, piece := range []string{string(pw[:at]), string(pw[at+1:]), string(pw)} {
				if p, bad := leaked(err.Error(), piece); bad {
					t.Fatalf("%s: %q of the password %q is in the error: %v\n%s", what, p, pw, err, testseed.Replay(t, seed))
				}
			}
		}
	}
}

// TestHTTPStatusControlCharacters: a service's status text is printed
// quoted, its control characters escaped.
func TestHTTPStatusControlCharacters(t *testing.T) {
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
	chk, err := reconcile.NewHTTP("http://"+ln.Addr().String()+"/held/{topic}?start={start}&end={end}&p={partition}", reconcile.HTTPOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = chk.Held(context.Background(), coverage.Destination{Sink: "lake", Topic: "orders"}, []coverage.Range{{Start: 0, End: 10}})
	if err == nil || strings.ContainsAny(err.Error(), "\x1b\x07") {
		t.Fatalf("Held: %v: the status text's control characters are printed raw", err)
	}
}

// TestHTTPQueryKeyNeverPrinted: a service's key in the template's query
// (Azure Functions' ?code=, a signature's ?sig=), in a form no shape of a
// credential matches, is in no error: neither NewHTTP's refusal of the
// template nor a request that fails on the transport (net/http's error
// quotes the URL whole).
func TestHTTPQueryKeyNeverPrinted(t *testing.T) {
	seed := testseed.Seed(t)
	r := rand.New(rand.NewPCG(seed, 0))
	const letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	key := make([]byte, 24+r.IntN(16))
	for i := range key {
		key[i] = letters[r.IntN(len(letters))]
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // refused from now on: the request fails on the transport
	for _, param := range []string{"code", "sig", "key", "X-Amz-Signature"} {
		query := "?" + param + "=" + string(key) + "&start={start}&end={end}&p={partition}"
		_, refused := reconcile.NewHTTP("http://{topic}.example/held"+query, reconcile.HTTPOptions{})
		chk, err := reconcile.NewHTTP("http://"+addr+"/held/{topic}"+query, reconcile.HTTPOptions{})
		if err != nil {
			t.Fatal(err)
		}
		_, failed := chk.Held(context.Background(), coverage.Destination{Sink: "lake", Topic: "orders"}, []coverage.Range{{Start: 0, End: 10}})
		for what, err := range map[string]error{"NewHTTP's refusal": refused, "Held on a refused connection": failed} {
			if err == nil {
				t.Fatalf("%s: no error", what)
			}
			if p, bad := leaked(err.Error(), string(key)); bad {
				t.Fatalf("%s: %q of the key in ?%s= is in the error: %v\n%s", what, p, param, err, testseed.Replay(t, seed))
			}
		}
	}
}
