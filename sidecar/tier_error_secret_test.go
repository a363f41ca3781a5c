package sidecar

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
)

// echoingTier is a durable tier whose reads fail with what a catalog or a
// store that echoes its request says: the request's credentials.
type echoingTier struct{ durable.Tier }

const echoedSecret = "Zq81fa77EchoedSecret"

func (echoingTier) Coverage(context.Context, durable.Filter) (map[coverage.Destination]*coverage.RangeSet, error) {
	return nil, errors.New(`catalog answered 403: {"headers":{"Authorization":["Bearer ` + echoedSecret + `"]}} at https://u:` + echoedSecret + `@catalog/v1 with password=` + echoedSecret)
}

// TestTierErrorsAreRedactedInAnswersAndLogs: a durable tier's error is a
// server's text; the answer and the log line a 5xx writes carry it with
// every credential shape redacted.
func TestTierErrorsAreRedactedInAnswersAndLogs(t *testing.T) {
	var logs bytes.Buffer
	p := newPod(t, func(o *Options) {
		o.Durable = echoingTier{o.Durable}
		o.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	})
	a := p.do(t, http.MethodGet, "/v1/gaps", "", nil)
	if a.code < 500 {
		t.Fatalf("GET /v1/gaps over a failing tier: %d %s", a.code, a.raw)
	}
	if !strings.Contains(a.raw, "catalog answered 403") {
		t.Fatalf("the tier's error is not in the answer, so the test shows nothing: %s", a.raw)
	}
	for what, text := range map[string]string{"answer": a.raw, "log": logs.String()} {
		if strings.Contains(text, echoedSecret[:8]) {
			t.Errorf("the %s holds the echoed secret: %s", what, text)
		}
	}
}
