//go:build cgo

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestQueryAckedEndsFromStdin: --acked-ends - reads the extents from
// standard input. Lag lists raw behind the source by its holes past its
// last batch, with no reference time: 30 of orders/0, whose extent [60,70)
// lies apart from the rows (raw must hold every batch up to it), and all 4
// of orders/1, which has no rows; the lake's lag is what raw's rows say. The PostgreSQL
// form printed for psql carries the extents as one quoted string literal,
// a topic with a quote included.
func TestQueryAckedEndsFromStdin(t *testing.T) {
	state := t.TempDir()
	global := []string{"--state", state, "--writer", "test"}
	run := func(stdin string, args ...string) string {
		t.Helper()
		f, err := os.Create(filepath.Join(t.TempDir(), "stdin"))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := f.WriteString(stdin); err != nil {
			t.Fatal(err)
		}
		if _, err := f.Seek(0, 0); err != nil {
			t.Fatal(err)
		}
		saved := os.Stdin
		os.Stdin = f
		defer func() { os.Stdin = saved }()
		var stdout, stderr bytes.Buffer
		if err := Run(context.Background(), append(global, args...), &stdout, &stderr); err != nil {
			t.Fatalf("covmirror %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
		}
		return stdout.String()
	}
	run("", "record", "--sink", "raw", "--topic", "orders", "--range", "10:20")
	run("", "record", "--sink", "raw", "--topic", "orders", "--range", "25:40")
	run("", "record", "--sink", "lake", "--topic", "orders", "--range", "10:35")
	run("", "checkpoint")
	acked := `[{"topic":"orders","partition":0,"start":60,"end":70},{"topic":"orders","partition":1,"start":3,"end":7}]`
	var lag []map[string]any
	if err := json.Unmarshal([]byte(run(acked, "query", "lag", "--json", "--acked-ends", "-")), &lag); err != nil {
		t.Fatal(err)
	}
	if len(lag) != 2 || lag[0]["sink"] != "lake" || lag[0]["batches_behind"] != 5.0 ||
		lag[1]["sink"] != "raw" || lag[1]["destinations"] != 2.0 || lag[1]["destinations_behind"] != 2.0 ||
		lag[1]["batches_behind"] != 34.0 || lag[1]["max_batches_behind"] != 30.0 || lag[1]["reference_last_recorded_at"] != nil {
		t.Fatalf("lag with acked extents: %v", lag)
	}
	text := run(`[{"topic":"it's","partition":0,"end":5}]`, "query", "gaps", "--sql", "--dialect", "postgres", "--acked-ends", "-")
	if want := `'[{"topic":"it''s","partition":0,"start":0,"end":5}]'`; !strings.Contains(text, want) || strings.Contains(text, "CAST($5") {
		t.Fatalf("the PostgreSQL form does not carry the extents as the literal %s in place of $5:\n%s", want, text)
	}
}
