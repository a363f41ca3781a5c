package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/covmirror/covmirror/internal/logtest"

	"github.com/cockroachdb/datadriven"

	"github.com/covmirror/covmirror/gapstate"
	"github.com/covmirror/covmirror/internal/childproc"
)

// TestTranscripts runs the datadriven transcripts under testdata (and
// testdata/object), each file against a fresh state directory:
//
//	run                      or "run stderr": show stderr as well
//	covmirror ARGS...        the command (--state and --writer are added)
//	----
//	stdout, then "? N" for a non-zero exit status and "error: MESSAGE"
//
// What differs from run to run is written as a placeholder: the state
// directory as $STATE, the Go version as $GOVERSION, check-store's
// scratch prefix as SCRATCH, a gap state's event ID as $ID, its time as
// $AT and --by's default as $USER@$HOST. Log
// lines are left out. A query block is skipped in a build without cgo.
// Regenerate with: go test ./cmd/covmirror -run Transcripts -rewrite
func TestTranscripts(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.txt")
	more, _ := filepath.Glob("testdata/object/*.txt")
	files = append(files, more...)
	if len(files) == 0 {
		t.Fatal("no transcripts under testdata")
	}
	for _, file := range files {
		t.Run(strings.TrimPrefix(file, "testdata/"), func(t *testing.T) {
			state := t.TempDir()
			normalize := func(s string) string {
				s = strings.ReplaceAll(strings.ReplaceAll(s, state, "$STATE"), runtime.Version(), "$GOVERSION")
				s = scratchKey.ReplaceAllString(s, "covmirror-check-store/SCRATCH/")
				s = eventID.ReplaceAllString(s, "$$ID")
				s = strings.ReplaceAll(s, gapstate.DefaultBy(), "$USER@$HOST")
				return decidedAt.ReplaceAllString(s, "$$AT")
			}
			datadriven.RunTest(t, file, func(t *testing.T, d *datadriven.TestData) string {
				if d.Cmd != "run" {
					d.Fatalf(t, "unknown directive %q: use run", d.Cmd)
				}
				line, ok := strings.CutPrefix(strings.TrimSpace(d.Input), "covmirror")
				if !ok {
					d.Fatalf(t, "the input is a covmirror command line, not %q", d.Input)
				}
				words := shellWords(t, line)
				if !haveDuckDB && slices.Contains(words, "query") {
					return d.Expected // no DuckDB in this build
				}
				var stdout, stderr bytes.Buffer
				err := Run(context.Background(), append([]string{"--state", state, "--writer", "test"}, words...), &stdout, &stderr)
				var out strings.Builder
				out.WriteString(normalize(stdout.String()))
				if code := exitCode(err); code != 0 {
					fmt.Fprintf(&out, "? %d\nerror: %s\n", code, normalize(err.Error()))
				}
				if d.HasArg("stderr") {
					for _, l := range strings.SplitAfter(normalize(stderr.String()), "\n") {
						if l != "" && !strings.HasPrefix(l, "time=") {
							out.WriteString("stderr: " + l)
						}
					}
				}
				return out.String()
			})
		})
	}
}

// eventID is a gap state event's ID (gapstate.NewID), and decidedAt its
// time, in text or JSON.
var (
	eventID   = regexp.MustCompile(`\b[0-9a-f]{32}\b`)
	decidedAt = regexp.MustCompile(`\b20[0-9]{2}-[0-9]{2}-[0-9]{2}T[0-9:.]+Z`)
)

// scratchKey is check-store's scratch prefix, named by the time and a
// random suffix.
var scratchKey = regexp.MustCompile(`covmirror-check-store/[0-9]{8}T[0-9]{6}Z-[0-9a-f]+/`)

// shellWords splits a command line as a POSIX shell does for quoting alone:
// '...' and "..." (no escapes) group characters, and adjacent parts join.
func shellWords(t *testing.T, line string) []string {
	var words []string
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(line); i++ {
		switch c := line[i]; c {
		case ' ', '\t':
			if inWord {
				words, inWord = append(words, cur.String()), false
				cur.Reset()
			}
		case '\'', '"':
			end := strings.IndexByte(line[i+1:], c)
			if end < 0 {
				t.Fatalf("unterminated %c in %q", c, line)
			}
			cur.WriteString(line[i+1 : i+1+end])
			i += end + 1
			inWord = true
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words
}

// TestCompactScheduleStopsOnCancel runs compact --every until its context
// is cancelled, as SIGTERM does, and expects a clean stop and one JSON line
// per run.
func TestCompactScheduleStopsOnCancel(t *testing.T) {
	state := t.TempDir()
	global := []string{"--state", state, "--writer", "test"}
	for _, args := range [][]string{{"record", "--sink", "lake", "--topic", "t", "--range", "1:2"}, {"checkpoint"}} {
		if err := Run(context.Background(), append(global, args...), io.Discard, io.Discard); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	var out logtest.Buffer
	done := make(chan error)
	go func() { done <- Run(ctx, append(global, "compact", "--every", "20ms", "--json"), &out, io.Discard) }()
	for deadline := time.Now().Add(2 * time.Minute); strings.Count(out.String(), "\n") < 3 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("scheduled compaction after cancel: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) < 3 || !strings.HasPrefix(lines[0], `{"at":`) {
		t.Fatalf("want one JSON line per run, got %q", out.String())
	}
}

// TestServe runs serve until its context is cancelled, as SIGTERM does:
// /metrics on the metrics listener and /debug/coverage on the API's
// answer (and /metrics on the API's does not, without --metrics-on-api),
// a record made before is checkpointed by the final checkpoint, and the
// command returns nil.
func TestServe(t *testing.T) {
	state := t.TempDir()
	global := []string{"--state", state, "--writer", "test"}
	if err := Run(context.Background(), append(global, "record", "--sink", "lake", "--topic", "t", "--range", "1:4"), io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var out logtest.Buffer
	done := make(chan error)
	go func() {
		done <- Run(ctx, append(global, "serve", "--addr", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0", "--interval", "1h"), &out, io.Discard)
	}()
	var api, metrics string
	for deadline := time.Now().Add(time.Minute); api == "" && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if strings.Contains(out.String(), "\n") {
			var err error
			if api, metrics, err = childproc.ParseServeLine(out.String()); err != nil || metrics == "" {
				t.Fatalf("serve's first line: %v (metrics listener %q)", err, metrics)
			}
		}
	}
	get := func(base, path string, want int) string {
		resp, err := http.Get("http://" + base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != want {
			t.Fatalf("GET %s on %s: %s, want %d", path, base, resp.Status, want)
		}
		return string(body)
	}
	if m := get(metrics, "/metrics", http.StatusOK); !strings.Contains(m, "covmirror_pending_batches 3") {
		t.Fatalf("/metrics lacks the pending batches:\n%s", m)
	}
	get(api, "/metrics", http.StatusNotFound)
	get(metrics, "/healthz", http.StatusOK)
	if d := get(api, "/debug/coverage", http.StatusOK); !strings.Contains(d, `"pending_batches": 3`) {
		t.Fatalf("/debug/coverage:\n%s", d)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("serve after cancel: %v", err)
	}
	var gaps bytes.Buffer
	if err := Run(context.Background(), append(global, "record", "--sink", "raw", "--topic", "t", "--range", "1:6"), io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	if err := Run(context.Background(), append(global, "checkpoint"), io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	if err := Run(context.Background(), append(global, "gaps", "--json"), &gaps, io.Discard); err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(gaps.String()) != `[{"sink":"lake","topic":"t","partition":0,"start":4,"end":6,"kind":"replay"}]` {
		t.Fatalf("after serve's final checkpoint, gaps %s", gaps.String())
	}
}
