package redact

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"testing"

	"github.com/covmirror/covmirror/internal/testseed"
)

// TestErrorDropsARequestURLsQuery: net/http's error quotes the request's
// URL whole; a key in its query under a name no shape knows (?code=,
// ?sig=) is in no message Error gives, wrapped or not, and the error is
// still the transport's.
func TestErrorDropsARequestURLsQuery(t *testing.T) {
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
	ln.Close() // refused from now on
	for _, param := range []string{"code", "sig", "key", "X-Amz-Signature"} {
		target := "http://" + addr + "/held/orders?" + param + "=" + string(key) + "&start=0#" + string(key)
		req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, target, nil)
		if err != nil {
			t.Fatal(err)
		}
		_, doErr := http.DefaultClient.Do(req)
		if doErr == nil {
			t.Fatal("a request to a closed port succeeded")
		}
		for _, e := range []error{doErr, fmt.Errorf("GET for [0, 10): %w", doErr)} {
			got := Error(e)
			if p, bad := leaked(got.Error(), string(key)); bad {
				t.Fatalf("?%s=: %q of the key is in %q\n%s", param, p, got, testseed.Replay(t, seed))
			}
			var ne net.Error
			if !errors.As(got, &ne) {
				t.Fatalf("?%s=: %v no longer wraps the transport's error", param, got)
			}
		}
	}
}
