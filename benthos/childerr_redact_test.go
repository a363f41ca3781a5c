package benthos_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/covmirror/covmirror/internal/logtest"
)

// TestChildErrorsAreLoggedRedacted: a sink's output failing with an error
// that quotes a credential (a driver's DSN, a URL's token) is logged by
// the covmirror output, for a sink (a gap) and for raw (the batch error
// Benthos logs and retries), with the credential redacted.
func TestChildErrorsAreLoggedRedacted(t *testing.T) {
	const secret = "ChildPw7secretTail"
	for _, reference := range []bool{false, true} {
		sink := "lake"
		if reference {
			sink = "raw"
		}
		child := obj{"reject": "writing to postgres://writer:" + secret + "@db/lake failed, token=" + secret}
		out := covmirrorOutput(sink, reference, t.TempDir(), child)
		b := env(t).NewStreamBuilder()
		if err := b.SetYAML(stream(t, generate(1, 1), out)); err != nil {
			t.Fatal(err)
		}
		logs := new(logtest.Buffer)
		b.SetLogger(slog.New(slog.NewTextHandler(logs, nil)))
		s, err := b.Build()
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 4*time.Second)
		_ = s.Run(ctx) // returns at ctx's end without stopping the stream
		cancel()
		_ = s.StopWithin(time.Minute) // closes the output: the process's pod
		if !strings.Contains(logs.String(), "failed, token=") {
			t.Fatalf("reference %v: the child's error is not logged, so the test shows nothing:\n%s", reference, logs.String())
		}
		if strings.Contains(logs.String(), secret[:8]) {
			t.Errorf("reference %v: the credential is logged:\n%s", reference, logs.String())
		}
	}
}
