//go:build integration

package pipelinetest

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/covmirror/covmirror/coverage"
)

// maxRounds bounds the recovery loop: a verify-reference round, the
// replays it uncovers, and the empty plan fit in three; more means the
// loop does not converge.
const maxRounds = 6

// task is one row of `covmirror plan --json`.
type task struct {
	Sink      string `json:"sink"`
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Start     uint64 `json:"start"`
	End       uint64 `json:"end"`
	Kind      string `json:"kind"`
}

// recoverAll is the documented recovery loop, with serve stopped between
// rounds: the broker's acked positions into `covmirror plan --json
// --acked-ends -`; each task replayed from raw through a started serve
// (verify-reference: record raw's coverage of exactly the batches raw
// holds; replay: write the sink, record it), a checkpoint, serve stopped;
// until the plan is empty. It returns the rounds that had tasks.
func (pl *pipeline) recoverAll(t *testing.T, ctx context.Context, extents []byte) int {
	t.Helper()
	for round := 1; round <= maxRounds; round++ {
		out, err := pl.serve.cli(ctx, extents, "plan", "--json", "--acked-ends", "-")
		if err != nil {
			t.Fatalf("seed %d: recovery round %d: %v", pl.seed, round, err)
		}
		var tasks []task
		if err := json.Unmarshal(out, &tasks); err != nil {
			t.Fatalf("seed %d: plan --json printed %q: %v", pl.seed, out, err)
		}
		if len(tasks) == 0 {
			return round - 1
		}
		t.Logf("seed %d: recovery round %d: %d tasks, the first: %v", pl.seed, round, len(tasks), tasks[:min(len(tasks), 20)])
		if err := pl.serve.start(); err != nil {
			t.Fatal(err)
		}
		for _, tk := range tasks {
			if err := pl.runTask(ctx, tk); err != nil {
				t.Fatalf("seed %d: recovery round %d: task %+v: %v", pl.seed, round, tk, err)
			}
		}
		if err := pl.serve.checkpoint(ctx); err != nil {
			t.Fatalf("seed %d: recovery round %d: %v", pl.seed, round, err)
		}
		if err := pl.serve.stop(); err != nil {
			t.Fatal(err)
		}
		pl.checkNoLead(t, ctx, fmt.Sprintf("after recovery round %d", round))
	}
	t.Fatalf("seed %d: the recovery loop did not converge: the plan still has tasks after %d rounds", pl.seed, maxRounds)
	return 0
}

// runTask reads the task's range from raw and records, for the sink, the
// batches it then holds: for raw itself (verify-reference) the batches raw
// holds, for another sink those written to it.
func (pl *pipeline) runTask(ctx context.Context, tk task) error {
	if tk.Topic != topic {
		return fmt.Errorf("a task of a topic the pipeline never wrote")
	}
	rows, err := pl.pg.read(ctx, rawSink, tk.Partition, tk.Start, tk.End)
	if err != nil {
		return err
	}
	batches := slices.Sorted(maps.Keys(rows))
	switch {
	case tk.Kind == "verify-reference" && tk.Sink == rawSink:
	case tk.Kind == "replay" && tk.Sink == pgSink:
		for _, b := range batches {
			if err := pl.pg.write(ctx, pgSink, tk.Partition, b, rows[b]); err != nil {
				return err
			}
		}
	case tk.Kind == "replay" && tk.Sink == cacheSink:
		for _, b := range batches {
			if err := pl.cache.write(ctx, tk.Partition, b, rows[b]); err != nil {
				return err
			}
		}
	default:
		return fmt.Errorf("a task of kind %q for sink %q, which this pipeline does not have", tk.Kind, tk.Sink)
	}
	var entries []recordEntry
	for _, b := range batches {
		if n := len(entries); n > 0 && entries[n-1].End == b {
			entries[n-1].End++
			continue
		}
		entries = append(entries, recordEntry{Sink: tk.Sink, Topic: topic, Partition: tk.Partition, Start: b, End: b + 1})
	}
	if len(entries) == 0 {
		return nil
	}
	return pl.record(ctx, entries...)
}

// destKey is a (sink, partition) of the one topic.
type destKey struct {
	sink      string
	partition int32
}

// held is what every sink really holds, read from the stores themselves,
// with each payload checked against what the producer published.
func (pl *pipeline) held(ctx context.Context) (map[destKey]*coverage.RangeSet, error) {
	out := map[destKey]*coverage.RangeSet{}
	add := func(k destKey, rows map[uint64]string) error {
		s := &coverage.RangeSet{}
		for b, data := range rows {
			if want := payload(k.partition, b); data != want {
				return fmt.Errorf("%s/%s/%d batch %d holds %q, the producer published %q", k.sink, topic, k.partition, b, data, want)
			}
			if err := s.Add(coverage.Range{Start: b, End: b + 1}); err != nil {
				return err
			}
		}
		out[k] = s
		return nil
	}
	cache, err := pl.cache.contents(ctx)
	if err != nil {
		return nil, err
	}
	for p := range int32(pl.partitions) {
		for _, sink := range []string{rawSink, pgSink} {
			rows, err := pl.pg.read(ctx, sink, p, 0, 1<<63)
			if err != nil {
				return nil, err
			}
			if err := add(destKey{sink, p}, rows); err != nil {
				return nil, err
			}
		}
		if err := add(destKey{cacheSink, p}, cache[p]); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// committed is the committed coverage, from `covmirror query coverage
// --json` on serve's state.
func (pl *pipeline) committed(ctx context.Context) (map[destKey]*coverage.RangeSet, error) {
	out, err := pl.serve.cli(ctx, nil, "query", "coverage", "--json")
	if err != nil {
		return nil, err
	}
	var rows []recordEntry
	if err := json.Unmarshal(out, &rows); err != nil {
		return nil, fmt.Errorf("query coverage --json printed %q: %w", out, err)
	}
	cov := map[destKey]*coverage.RangeSet{}
	for _, r := range rows {
		k := destKey{r.Sink, r.Partition}
		if r.Topic != topic {
			return nil, fmt.Errorf("committed coverage of a topic the pipeline never wrote: %+v", r)
		}
		if cov[k] == nil {
			cov[k] = &coverage.RangeSet{}
		}
		if err := cov[k].Add(coverage.Range{Start: r.Start, End: r.End}); err != nil {
			return nil, fmt.Errorf("committed coverage row %+v: %w", r, err)
		}
	}
	return cov, nil
}

// checkNoLead fails the test, loudly and with the seed, if committed
// coverage claims a batch its sink does not hold: silent loss.
func (pl *pipeline) checkNoLead(t *testing.T, ctx context.Context, when string) {
	t.Helper()
	held, err := pl.held(ctx)
	if err != nil {
		t.Fatalf("seed %d: %s: %v", pl.seed, when, err)
	}
	cov, err := pl.committed(ctx)
	if err != nil {
		t.Fatalf("seed %d: %s: %v", pl.seed, when, err)
	}
	for k, c := range cov {
		h := held[k]
		if h == nil {
			h = &coverage.RangeSet{}
		}
		if lead := coverage.Gaps(c, h); !lead.IsEmpty() {
			t.Errorf("LEAD, seed %d, %s: committed coverage of %s/%s/%d claims %v, which the sink does not hold (it holds %v): silent loss",
				pl.seed, when, k.sink, topic, k.partition, lead.String(), h.String())
		}
	}
}

// checkAnsweredKept fails the test if committed coverage lacks a batch a
// record call got a 200 for: serve lost an answered record when it was
// killed. Not a lead (a lag a replay covers), but a broken promise of the
// record API with serve --sync, and at the stream's end one no plan would
// find without the broker's acked positions. Without --sync a SIGKILL may
// lose the records of the last CommitDelay (documented), so it is checked
// only for a serve run with --sync.
func (pl *pipeline) checkAnsweredKept(t *testing.T, ctx context.Context, when string) {
	t.Helper()
	cov, err := pl.committed(ctx)
	if err != nil {
		t.Fatalf("seed %d: %s: %v", pl.seed, when, err)
	}
	pl.mu.Lock()
	defer pl.mu.Unlock()
	failed := false
	defer func() {
		if failed {
			var warnings []string
			for l := range strings.Lines(pl.serve.stderr.String()) {
				if strings.Contains(l, "level=WARN") || strings.Contains(l, "level=ERROR") {
					warnings = append(warnings, l)
				}
			}
			if len(warnings) == 0 {
				t.Logf("seed %d: serve logged no warning or error in any of its runs", pl.seed)
				return
			}
			t.Logf("seed %d: serve's warnings and errors (all its runs), the last 30 of %d:\n%s", pl.seed, len(warnings), strings.Join(warnings[max(0, len(warnings)-30):], ""))
		}
	}()
	for k, a := range pl.answered {
		c := cov[k]
		if c == nil {
			c = &coverage.RangeSet{}
		}
		if lost := coverage.Gaps(a, c); !lost.IsEmpty() {
			failed = true
			t.Errorf("seed %d: %s: committed coverage of %s/%s/%d lacks %v, recorded with a 200 before serve was killed: the 200 did not survive the SIGKILL",
				pl.seed, when, k.sink, topic, k.partition, lost.String())
		}
	}
}

// checkFinal: every published batch is in raw and every sink, committed
// coverage is exactly what each sink holds, and `gaps` finds nothing.
func (pl *pipeline) checkFinal(t *testing.T, ctx context.Context, extents []byte) {
	t.Helper()
	pl.checkNoLead(t, ctx, "at the end")
	held, err := pl.held(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cov, err := pl.committed(ctx)
	if err != nil {
		t.Fatal(err)
	}
	published, _ := coverage.NewRangeSet(coverage.Range{Start: 0, End: pl.batches})
	for p := range int32(pl.partitions) {
		for _, sink := range []string{rawSink, pgSink, cacheSink} {
			k := destKey{sink, p}
			if missing := coverage.Gaps(&published, held[k]); !missing.IsEmpty() {
				t.Errorf("seed %d: %s/%s/%d lacks published batches %v after recovery converged (the plan was empty)", pl.seed, sink, topic, p, missing.String())
			}
			c := cov[k]
			if c == nil {
				c = &coverage.RangeSet{}
			}
			if lag := coverage.Gaps(held[k], c); !lag.IsEmpty() {
				t.Errorf("seed %d: committed coverage of %s/%s/%d lacks %v, which the sink holds, after recovery converged", pl.seed, sink, topic, p, lag.String())
			}
		}
	}
	out, err := pl.serve.cli(ctx, extents, "gaps", "--json", "--acked-ends", "-")
	if err != nil {
		t.Fatalf("seed %d: %v", pl.seed, err)
	}
	var gaps []task
	if err := json.Unmarshal(out, &gaps); err != nil || len(gaps) != 0 {
		t.Errorf("seed %d: after recovery, covmirror gaps --json printed %s (%v): want []", pl.seed, out, err)
	}
}
