package benthos

import (
	"log/slog"
	"net"
	"strings"
	"testing"

	"github.com/covmirror/covmirror/pod"
	"github.com/covmirror/covmirror/tier"
)

// TestPodStartErrorSaysWhatFailed: a pod that does not start for another
// reason than the state's lock (raw's PostgreSQL is down) is not blamed
// on a running serve holding the lock.
func TestPodStartErrorSaysWhatFailed(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close() // nothing listens there now
	opts := pod.Options{Addr: "127.0.0.1:0", Tier: tier.Settings{Kind: tier.Postgres, State: t.TempDir(), Writer: "test",
		Postgres: tier.PostgresSettings{URL: "postgres://u@" + addr + "/test"}}}
	rec, err := acquirePod(opts, slog.New(slog.DiscardHandler))
	if err == nil {
		_ = rec.release()
		t.Fatal("a pod on a PostgreSQL nobody listens on started")
	}
	if strings.Contains(err.Error(), "holds its lock") {
		t.Fatalf("a pod that could not reach PostgreSQL: %v: blamed on the state's lock", err)
	}
}
