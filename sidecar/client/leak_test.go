package client

import (
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
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

// randomText is n bytes of visible ASCII.
func randomText(r *rand.Rand, n int, alphabet string) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[r.IntN(len(alphabet))]
	}
	return string(b)
}

// TestEchoedTokenAtEveryOffset: an address that is not the pod echoes the
// request, Authorization header included, with the token at every offset
// of its answer around the two places an answer is cut (the message's 200
// bytes, the error answer's 64 KiB read bound), in a plain answer and in a
// JSON one, refused (400) and retried (503); no piece of the token of 8
// bytes or more reaches the error or the retry log.
func TestEchoedTokenAtEveryOffset(t *testing.T) {
	seed := testseed.Seed(t)
	r := rand.New(rand.NewPCG(seed, 0))
	token := randomText(r, 24+r.IntN(40), "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~+/")
	filler := randomText(r, maxErrorBody+1024, "abcdefghij klmnopqrstuvwxyz.")
	var off atomic.Int64
	var status atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body := filler[:off.Load()] + "Authorization: " + req.Header.Get("Authorization") + "\r\n" + filler
		w.WriteHeader(int(status.Load()))
		if req.URL.Query().Get("sink") == "json" {
			fmt.Fprintf(w, `{"error":%q,"rule":%q}`, body[:min(len(body), 4096)], req.Header.Get("Authorization"))
			return
		}
		_, _ = w.Write([]byte(body))
	}))
	defer srv.Close()
	var logs logBuffer
	c, err := New(Options{Address: srv.URL, Token: token, MaxAttempts: 2, Logger: logs.logger()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.minWait, c.maxWait = 0, 0
	var offsets []int
	for o := 0; o <= 260; o++ {
		offsets = append(offsets, o)
	}
	for o := maxErrorBody - 100 - len(token); o <= maxErrorBody+8; o++ {
		offsets = append(offsets, o)
	}
	for _, code := range []int{http.StatusBadRequest, http.StatusServiceUnavailable, http.StatusOK} {
		status.Store(int64(code))
		for _, kind := range []string{"plain", "json"} {
			for _, o := range offsets {
				off.Store(int64(o))
				_, err := c.Gaps(ctx, GapsQuery{Filter: Filter{Sink: kind}})
				if err == nil {
					t.Fatalf("HTTP %d, %s, offset %d: no error", code, kind, o)
				}
				for what, out := range map[string]string{"error": err.Error(), "log": logs.String()} {
					if p, bad := leaked(out, token); bad {
						t.Fatalf("HTTP %d, %s answer, token at offset %d: %q of the token is in the %s:\n%s\n%s", code, kind, o, p, what, out, testseed.Replay(t, seed))
					}
				}
			}
		}
	}
}

// TestSuccessAnswerIsBounded: a 2xx answer past Options.MaxAnswer (a 96
// MiB cursor, past the 64 MiB default) is ErrBadAnswer, read once: not
// decoded, not retried.
func TestSuccessAnswerIsBounded(t *testing.T) {
	var requests atomic.Int64
	cursor := strings.Repeat("c", 96<<20)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		requests.Add(1)
		fmt.Fprintf(w, `{"found":true,"cursor":%q,"raw_end":1}`, cursor)
	}))
	defer srv.Close()
	c, err := New(Options{Address: srv.URL, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.minWait, c.maxWait = 0, 0
	pos, err := c.Position(ctx, "files", 0)
	if !errors.Is(err, ErrBadAnswer) {
		t.Fatalf("a 96 MiB answer: %v (cursor of %d bytes accepted)", err, len(pos.Cursor))
	}
	if !strings.Contains(err.Error(), "MaxAnswer") {
		t.Errorf("the error does not name the bound: %v", err)
	}
	if n := requests.Load(); n != 1 {
		t.Errorf("%d requests: an answer past the bound was asked again", n)
	}
}
