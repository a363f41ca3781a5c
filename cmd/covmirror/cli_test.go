package main

import (
	"bytes"
	"context"
	"flag"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite the transcripts under testdata with the actual output")

// TestTranscripts runs each testdata/*.txt transcript against a fresh state
// directory. A transcript is a sequence of blocks:
//
//	$ covmirror ARGS...      the command (global --state is added)
//	expected stdout lines
//	? N                      optional: the expected exit status (default 0)
//	stderr: TEXT             optional: stderr must contain TEXT
//
// Regenerate expectations with: go test ./cmd/covmirror -run Transcripts -update
// Transcripts named query*.txt run the DuckDB queries: a build without cgo
// skips them.
func TestTranscripts(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.txt")
	if len(files) == 0 {
		t.Fatal("no transcripts under testdata")
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			if strings.HasPrefix(filepath.Base(file), "query") && !haveDuckDB {
				t.Skip("built without cgo: no DuckDB for the canned queries")
			}
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			state := t.TempDir()
			var out strings.Builder
			for _, block := range splitBlocks(string(data)) {
				if !strings.HasPrefix(block.command, "$ covmirror") {
					out.WriteString(block.raw)
					continue
				}
				args := append([]string{"--state", state, "--writer", "test"}, shellWords(t, strings.TrimPrefix(block.command, "$ covmirror"))...)
				var stdout, stderr bytes.Buffer
				err := Run(context.Background(), args, &stdout, &stderr)
				code := exitCode(err)
				if err != nil && code != 0 {
					stderr.WriteString(err.Error())
				}
				got := block.command + "\n" + stdout.String()
				if code != 0 {
					got += "? " + strconv.Itoa(code) + "\n"
				}
				for _, want := range block.stderr {
					got += "stderr: " + want + "\n"
					if !strings.Contains(stderr.String(), want) {
						t.Errorf("%s\nstderr %q lacks %q", block.command, stderr.String(), want)
					}
				}
				if !*update && got != block.raw {
					t.Errorf("%s:\n--- want\n%s--- got\n%s", file, block.raw, got)
				}
				out.WriteString(got)
			}
			if *update {
				if err := os.WriteFile(file, []byte(out.String()), 0o644); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

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

type block struct {
	command string   // the "$ covmirror ..." line, or "" for leading comments
	raw     string   // the block as written, command line included
	stderr  []string // expected stderr fragments
}

func splitBlocks(text string) []block {
	var blocks []block
	cur := block{}
	for _, line := range strings.SplitAfter(text, "\n") {
		if line == "" {
			continue
		}
		if strings.HasPrefix(line, "$ ") {
			if cur.raw != "" {
				blocks = append(blocks, cur)
			}
			cur = block{command: strings.TrimSpace(line)}
		}
		if s, ok := strings.CutPrefix(line, "stderr: "); ok {
			cur.stderr = append(cur.stderr, strings.TrimSpace(s))
		}
		cur.raw += line
	}
	if cur.raw != "" {
		blocks = append(blocks, cur)
	}
	return blocks
}

// lockedBuffer is a bytes.Buffer safe to read while a command writes it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
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
	var out lockedBuffer
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
// /metrics and /debug/coverage answer, a record made before is checkpointed
// by the final checkpoint, and the command returns nil.
func TestServe(t *testing.T) {
	state := t.TempDir()
	global := []string{"--state", state, "--writer", "test"}
	if err := Run(context.Background(), append(global, "record", "--sink", "lake", "--topic", "t", "--range", "1:4"), io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var out lockedBuffer
	done := make(chan error)
	go func() {
		done <- Run(ctx, append(global, "serve", "--addr", "127.0.0.1:0", "--interval", "1h"), &out, io.Discard)
	}()
	var base string
	for deadline := time.Now().Add(time.Minute); base == "" && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if f := strings.Fields(out.String()); len(f) > 1 {
			base = strings.TrimSuffix(f[1], "/metrics")
		}
	}
	get := func(path string) string {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %s", path, resp.Status)
		}
		return string(body)
	}
	if m := get("/metrics"); !strings.Contains(m, "covmirror_pending_batches 3") {
		t.Fatalf("/metrics lacks the pending batches:\n%s", m)
	}
	if d := get("/debug/coverage"); !strings.Contains(d, `"pending_batches": 3`) {
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
	if strings.TrimSpace(gaps.String()) != `[{"sink":"lake","topic":"t","partition":0,"start":4,"end":6}]` {
		t.Fatalf("after serve's final checkpoint, gaps %s", gaps.String())
	}
}
