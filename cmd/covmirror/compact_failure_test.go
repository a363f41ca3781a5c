package main

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/covmirror/covmirror/internal/logtest"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/iceberg"
	"github.com/covmirror/covmirror/internal/tabletest"
)

// TestCompactFailures: with a warehouse that refuses new files, a one-shot
// compact exits 1 naming the directory, and compact --every logs each
// failed run, runs again on schedule and stops cleanly when cancelled.
func TestCompactFailures(t *testing.T) {
	state := t.TempDir()
	for _, r := range []string{"1:2", "3:4"} { // two small files: something to compact
		mustRun(t, state, "record", "--sink", "lake", "--topic", "t", "--range", r)
		mustRun(t, state, "checkpoint")
	}
	data := breakWarehouse(t, state)

	_, _, err := runCLI(t, state, "compact")
	if exitCode(err) != 1 || !strings.Contains(err.Error(), "the warehouse directory "+data+" refuses new files") {
		t.Fatalf("one-shot compact into an unwritable warehouse: exit %d, %v", exitCode(err), err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	var stderr logtest.Buffer
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, []string{"--state", state, "--writer", "test", "compact", "--every", "20ms"}, &logtest.Buffer{}, &stderr)
	}()
	const want = 3
	for deadline := time.Now().Add(2 * time.Minute); strings.Count(stderr.String(), "level=ERROR") < want && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("compact --every after cancel: %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("compact --every did not stop after cancel")
	}
	if n := strings.Count(stderr.String(), "level=ERROR"); n < want {
		t.Fatalf("%d failed runs logged, want at least %d: a failed run must not end the schedule\n%s", n, want, stderr.String())
	}
}

// TestCompactLeavesACorruptSink: a row another engine filed under lake's
// key leaves lake as it is; search is compacted, the maintenance runs, the
// report says so, and the command exits 1 naming the row.
func TestCompactLeavesACorruptSink(t *testing.T) {
	state := t.TempDir()
	for _, r := range []string{"1:2", "3:4"} {
		for _, sink := range []string{"lake", "search"} {
			mustRun(t, state, "record", "--sink", sink, "--topic", "t", "--range", r)
		}
		mustRun(t, state, "checkpoint")
	}
	table := tabletest.EmbeddedTableIn(t, state)
	row := tabletest.Valid("other", "t", 0, 0, 5)
	lakeKey := iceberg.PathKey("lake")
	row.SinkKey = &lakeKey
	if err := tabletest.AppendForeign(t, table, row); err != nil {
		t.Fatal(err)
	}
	stdout, _, err := runCLI(t, state, "compact")
	if exitCode(err) != 1 || !errors.Is(err, coverage.ErrCorrupt) || !strings.Contains(err.Error(), `filed under sink "lake" holds a row of other/t/0`) {
		t.Fatalf("compact with a corrupt sink: exit %d, %v", exitCode(err), err)
	}
	for _, want := range []string{"compacted 1 sink(s)", "1 sink(s) left as they are", "expired "} {
		if !strings.Contains(stdout, want) {
			t.Errorf("the report lacks %q:\n%s", want, stdout)
		}
	}
}
