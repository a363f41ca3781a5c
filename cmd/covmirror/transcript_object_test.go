package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// scratchKey is check-store's scratch prefix, named by the time and a
// random suffix.
var scratchKey = regexp.MustCompile(`covmirror-check-store/[0-9]{8}T[0-9]{6}Z-[0-9a-f]+/`)

// TestObjectTranscripts runs the transcripts under testdata/object in the
// format TestTranscripts reads, with what differs from run to run written
// as placeholders: the state directory as $STATE (the sink objects live
// under it, and the commands name them) and check-store's scratch prefix
// as SCRATCH. Blocks that run a query are skipped in a build without cgo.
// Regenerate with: go test ./cmd/covmirror -run ObjectTranscripts -update
func TestObjectTranscripts(t *testing.T) {
	files, _ := filepath.Glob("testdata/object/*.txt")
	if len(files) == 0 {
		t.Fatal("no transcripts under testdata/object")
	}
	if *update && !haveDuckDB {
		t.Skip("built without cgo: -update would drop the query blocks' output")
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			state := t.TempDir()
			normalize := func(s string) string {
				return scratchKey.ReplaceAllString(strings.ReplaceAll(s, state, "$STATE"), "covmirror-check-store/SCRATCH/")
			}
			var out strings.Builder
			for _, block := range splitBlocks(string(data)) {
				words := shellWords(t, strings.TrimPrefix(block.command, "$ covmirror"))
				if !strings.HasPrefix(block.command, "$ covmirror") || (!haveDuckDB && slices.Contains(words, "query")) {
					out.WriteString(block.raw)
					continue
				}
				args := append([]string{"--state", state, "--writer", "test"}, words...)
				var stdout, stderr bytes.Buffer
				err := Run(context.Background(), args, &stdout, &stderr)
				code := exitCode(err)
				if err != nil && code != 0 {
					stderr.WriteString(err.Error())
				}
				got := block.command + "\n" + normalize(stdout.String())
				if code != 0 {
					got += "? " + strconv.Itoa(code) + "\n"
				}
				for _, want := range block.stderr {
					got += "stderr: " + want + "\n"
					if !strings.Contains(normalize(stderr.String()), want) {
						t.Errorf("%s\nstderr %q lacks %q", block.command, normalize(stderr.String()), want)
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
