package benthos

import (
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/gapstate"
)

// TestPermanentRules: a status code is read from http_client's error text
// as Benthos v4 words it, a code in the body or the URL is not taken for
// the status, and a pattern matches the error.
func TestPermanentRules(t *testing.T) {
	p := permanence{codes: []int{400, 422}, patterns: []*regexp.Regexp{regexp.MustCompile(`violates check constraint`)}}
	for _, c := range []struct {
		err  string
		want string
	}{
		{"http://h/write: HTTP request returned unexpected response code (400): 400 Bad Request, Error: bad", "status code 400"},
		{"HTTP request returned unexpected response code (422): 422 Unprocessable Entity, Error: ", "status code 422"},
		{"HTTP request returned unexpected response code (503): 503 Service Unavailable, Error: 400 (400)", ""},
		{"http://h:400/write (400): connection refused", ""},
		{`ERROR: new row violates check constraint "qty" (SQLSTATE 23514)`, `error pattern "violates check constraint"`},
		{"context deadline exceeded", ""},
	} {
		if got := p.rule(errors.New(c.err)); got != c.want {
			t.Errorf("rule(%q) = %q, want %q", c.err, got, c.want)
		}
	}
}

// TestRefusalReasonIsAValidEvent: whatever a sink's error holds (a URL's
// password, a bearer token, control characters, any length), the reason
// is redacted, bounded and accepted by gapstate.
func TestRefusalReasonIsAValidEvent(t *testing.T) {
	body := "Authorization: Bearer tok-12345678\x00\x1b[31m" + strings.Repeat("é", 5000)
	err := errors.New("http://user:hunter2secret@lake/write: HTTP request returned unexpected response code (400): " + body)
	reason := refusal("lake", "status code 400", err)
	for _, secret := range []string{"hunter2secret", "tok-12345678"} {
		if strings.Contains(reason, secret) {
			t.Errorf("the reason holds %q: %s", secret, reason[:200])
		}
	}
	e := gapstate.Event{ID: gapstate.NewID(), Destination: coverage.Destination{Sink: "lake", Topic: "orders"}, Range: coverage.Range{Start: 1, End: 2},
		State: gapstate.Refused, Reason: reason, By: "test", At: time.Now().UTC()}
	if err := e.Validate(); err != nil {
		t.Fatalf("the reason is not a valid event's: %v", err)
	}
	if !strings.Contains(reason, `sink "lake"`) || !strings.Contains(reason, "status code 400") {
		t.Errorf("the reason %q does not name the sink and the rule", reason[:120])
	}
}
