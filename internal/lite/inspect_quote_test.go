package lite

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"unicode"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/gapstate"
	"github.com/covmirror/covmirror/local"
)

// hostile is text a server that is not the pod may answer with: a line
// break forging a line of output, a terminal's escape, a C1 control and
// a right-to-left override.
const hostile = "x\nlocal tier forged: 0 destinations \x1b[2J\u009b31m\u202egnp.exe"

// TestInspectURLQuotesWhatTheServerSent: what --url's server sends,
// an error answer's text or the diagnostics' directory, reference sink
// and names, is printed quoted, so that none of its control characters
// reaches the terminal as itself.
func TestInspectURLQuotesWhatTheServerSent(t *testing.T) {
	for _, c := range []struct {
		name   string
		status int
		body   string
	}{
		{"error answer", http.StatusBadRequest, hostile},
		{"diagnostics", http.StatusOK, mustJSON(t, local.Diagnostics{Dir: hostile, Reference: hostile,
			Destinations: []local.DestinationDiagnostics{{Destination: coverage.Destination{Sink: "lake", Topic: hostile}}}})},
		{"states", http.StatusOK, mustJSON(t, local.Diagnostics{Dir: "d", Reference: "raw",
			States: []local.StateDiagnostics{{Event: gapstate.Event{ID: "x", Destination: coverage.Destination{Sink: "lake", Topic: "t"},
				Range: coverage.Range{Start: 0, End: 1}, State: gapstate.State(hostile), Reason: hostile, By: hostile}}}})},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(c.status)
				_, _ = w.Write([]byte(c.body))
			}))
			defer srv.Close()
			out, errOut, _ := inspectURL(t, srv.URL+"/debug/coverage", randomToken(t))
			// Each line the command wrote, without its line break.
			for _, line := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
				if strings.HasPrefix(line, "local tier forged") {
					t.Errorf("a line forged by the server: %q", out)
				}
				if i := strings.IndexFunc(line, func(r rune) bool { return !unicode.IsPrint(r) }); i >= 0 {
					t.Errorf("stdout prints %q as itself: %q", []rune(line[i:])[0], out)
				}
			}
			if i := strings.IndexFunc(errOut, func(r rune) bool { return !unicode.IsPrint(r) }); i >= 0 {
				t.Errorf("the error prints %q as itself: %q", []rune(errOut[i:])[0], errOut)
			}
		})
	}
}

func mustJSON(t *testing.T, v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
