package lite

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/gapstate"
	"github.com/covmirror/covmirror/internal/settings"
	"github.com/covmirror/covmirror/local"
)

// TestInspectURLDiagnosticsEchoNoSecret: an address that is not the pod
// may answer 200 with diagnostics-shaped JSON echoing the request (its
// Authorization header, the URL's password) in any text field: neither
// the table nor --json prints the token or the password, whole.
func TestInspectURLDiagnosticsEchoNoSecret(t *testing.T) {
	tok, pw := randomToken(t), randomToken(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		echo := "echo of " + r.Header.Get("Authorization") + " " + r.Header.Get("X-Pw")
		if _, p, ok := r.BasicAuth(); ok {
			echo += " " + p
		}
		bare := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		_ = json.NewEncoder(w).Encode(local.Diagnostics{Dir: echo, Reference: "raw", Failed: echo, LastWriteError: echo,
			States: []local.StateDiagnostics{{Event: gapstate.Event{ID: "x", Destination: coverage.Destination{Sink: "lake", Topic: "t"},
				Range: coverage.Range{Start: 0, End: 1}, State: gapstate.Refused, Reason: bare + " " + pw, By: bare}}}})
	}))
	defer srv.Close()
	url := strings.Replace(srv.URL, "http://", "http://ops:"+pw+"@", 1) + "/debug/coverage"
	for _, asJSON := range []bool{false, true} {
		path := filepath.Join(t.TempDir(), "token")
		if err := os.WriteFile(path, []byte(tok+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		var out, errOut bytes.Buffer
		sh := &Shell{Prog: "covmirror-lite", Table: Table(), Stdout: &out, Stderr: &errOut,
			Summary: func(name string) string { return Summaries[name] }}
		sh.Set = settings.New(sh.Table, nil)
		sh.Set.Register(flag.NewFlagSet("g", flag.ContinueOnError), "")
		args := []string{"--url", url, "--token-file", path}
		if asJSON {
			args = append(args, "--json")
		}
		if err := Inspect(context.Background(), sh, t.TempDir(), args); err != nil {
			t.Fatalf("--json %v: %v", asJSON, err)
		}
		if !strings.Contains(out.String(), "echo of") {
			t.Fatalf("--json %v: the echo is not printed, so the test shows nothing:\n%s", asJSON, out.String())
		}
		if s := out.String() + errOut.String(); strings.Contains(s, tok) || strings.Contains(s, pw) {
			t.Errorf("--json %v: a secret is printed:\n%s", asJSON, s)
		}
	}
}
