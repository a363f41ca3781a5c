package lease_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/covmirror/covmirror/internal/catalogtest"
	"github.com/covmirror/covmirror/lease"
)

// TestPostgresNeverLogsAnEchoedPassword: a server that quotes the
// password it was sent in its error: the lease's log of the failed attempt
// holds no piece of it.
func TestPostgresNeverLogsAnEchoedPassword(t *testing.T) {
	const secret = "Lq3wEchoedLeasePassword"
	addr := catalogtest.EchoPasswordServer(t)
	var logs bytes.Buffer
	l, err := lease.NewPostgres("postgres://u:"+secret+"@"+addr+"/db?sslmode=disable", "deploy",
		lease.Options{Role: "fleet", Holder: "a", TTL: pgTTL, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if _, err := l.Acquire(ctx); err == nil {
		t.Fatal("took the lease from a server that refuses every password")
	}
	if !strings.Contains(logs.String(), "password authentication failed") {
		t.Fatalf("the server's message is not in the logs, so the test shows nothing: %s", logs.String())
	}
	if strings.Contains(logs.String(), secret[:8]) {
		t.Errorf("the password is in the lease's logs: %s", logs.String())
	}
}
