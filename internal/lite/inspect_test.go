package lite

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/covmirror/covmirror/internal/settings"
	"github.com/covmirror/covmirror/local"
)

// inspectURL runs inspect --url url with a token file holding tok, as
// covmirror-lite's command line would.
func inspectURL(t *testing.T, url, tok string) (stdout, stderr string, err error) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(path, []byte(tok+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	sh := &Shell{Prog: "covmirror-lite", Table: Table(), Stdout: &out, Stderr: &errOut,
		Summary: func(name string) string { return Summaries[name] }}
	sh.Set = settings.New(sh.Table, nil)
	sh.Set.Register(flag.NewFlagSet("g", flag.ContinueOnError), "")
	err = Inspect(context.Background(), sh, t.TempDir(), []string{"--url", url, "--token-file", path})
	if err != nil {
		errOut.WriteString(err.Error())
	}
	return out.String(), errOut.String(), err
}

func randomToken(t *testing.T) string {
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(uint64(seed), 0))
	const letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	b := make([]byte, 24+r.IntN(16))
	for i := range b {
		b[i] = letters[r.IntN(len(letters))]
	}
	return string(b)
}

// TestInspectURLRedirectKeepsTheToken: a redirect is no answer of the
// pod's debug handler. Go's client drops the Authorization header only for
// another host name, so a redirect to another port of the same host (any
// local user's listener) would carry the token there: inspect follows none.
func TestInspectURLRedirectKeepsTheToken(t *testing.T) {
	tok := randomToken(t)
	var leaked atomic.Value
	leaked.Store("")
	thief := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		leaked.Store(r.Header.Get("Authorization"))
		_ = json.NewEncoder(w).Encode(local.Diagnostics{Dir: "thief"})
	}))
	defer thief.Close()
	pod := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, thief.URL+"/debug/coverage", http.StatusFound)
	}))
	defer pod.Close()
	out, errOut, err := inspectURL(t, pod.URL+"/debug/coverage", tok)
	if got := leaked.Load().(string); strings.Contains(got, tok) {
		t.Errorf("a redirect to %s carried the token there", thief.URL)
	}
	if err == nil || ExitCode(err) != 1 || !strings.Contains(errOut, "302") || strings.Contains(out+errOut, tok) {
		t.Errorf("inspect --url answered by a redirect: %v, %q %q; want exit 1 naming the 302, no token", err, out, errOut)
	}
}

// TestInspectURLEchoedToken: an address that is not the pod (a proxy's
// error page) may echo the request's headers: the answer inspect prints
// never carries the token, nor a password in the URL.
func TestInspectURLEchoedToken(t *testing.T) {
	tok := randomToken(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusBadGateway)
		fmt.Fprintf(w, "bad gateway for request with Authorization: %s", r.Header.Get("Authorization"))
	}))
	defer srv.Close()
	url := strings.Replace(srv.URL, "http://", "http://ops:hunter2hunter2@", 1) + "/debug/coverage"
	out, errOut, err := inspectURL(t, url, tok)
	if err == nil || ExitCode(err) != 1 || !strings.Contains(errOut, "502") {
		t.Fatalf("inspect --url answered 502: %v, %q %q; want exit 1 naming the 502", err, out, errOut)
	}
	if strings.Contains(out+errOut, tok) || strings.Contains(out+errOut, "hunter2hunter2") {
		t.Errorf("inspect printed a secret: %q %q", out, errOut)
	}
}

// TestInspectURLHugeAnswer: a 200 of more than maxDiagnosticsBody is
// refused after that many bytes, not read into memory whole.
func TestInspectURLHugeAnswer(t *testing.T) {
	var sent atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.WriteString(w, `{"dir":"`)
		chunk := strings.Repeat("a", 64<<10)
		for total := int64(n); total <= 4*maxDiagnosticsBody; {
			n, err := io.WriteString(w, chunk)
			total += int64(n)
			sent.Store(total)
			if err != nil {
				return
			}
		}
		_, _ = io.WriteString(w, `"}`)
	}))
	defer srv.Close()
	out, errOut, err := inspectURL(t, srv.URL, randomToken(t))
	if err == nil || ExitCode(err) != 1 || !strings.Contains(errOut, "larger than") {
		t.Errorf("inspect --url answered %d bytes: %v, %q; want exit 1 saying the answer is too large", sent.Load(), err, errOut)
	}
	if len(out) > 0 {
		t.Errorf("inspect printed %d bytes of a refused answer", len(out))
	}
}

// TestInspectURLStalledAnswer: a server that sends its headers and then
// nothing does not hold inspect forever: it gives up after inspectTimeout.
func TestInspectURLStalledAnswer(t *testing.T) {
	defer func(d time.Duration) { inspectTimeout = d }(inspectTimeout)
	inspectTimeout = 50 * time.Millisecond
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, `{"dir":`)
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	done := make(chan error, 1)
	var errOut string
	go func() {
		var err error
		_, errOut, err = inspectURL(t, srv.URL, randomToken(t))
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || ExitCode(err) != 1 || !strings.Contains(errOut, "Timeout") {
			t.Errorf("inspect --url of a stalled answer: %v, %q; want exit 1", err, errOut)
		}
	case <-time.After(20 * time.Second): // a hang, not a time asserted: the timeout is 50ms
		t.Fatal("inspect --url still waits for a stalled answer")
	}
}
