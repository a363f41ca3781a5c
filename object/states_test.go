package object

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/gapstate"
	"github.com/covmirror/covmirror/internal/testseed"
)

var stateAt = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// someEvents are n valid events of partitions 0 and 1 of two sinks.
func someEvents(rng *rand.Rand, n int) []gapstate.Event {
	out := make([]gapstate.Event, n)
	for i := range out {
		start := uint64(rng.IntN(1000))
		out[i] = gapstate.Event{
			ID:          gapstate.NewID(),
			Destination: coverage.Destination{Sink: []string{"raw", "lake"}[rng.IntN(2)], Topic: "orders", Partition: int32(rng.IntN(2))},
			Range:       coverage.Range{Start: start, End: start + 1 + uint64(rng.IntN(9))},
			State:       gapstate.States[rng.IntN(len(gapstate.States))],
			Reason:      fmt.Sprintf("reason %d", rng.IntN(100)),
			By:          "pod-a",
			At:          stateAt.Add(time.Duration(rng.IntN(1e6)) * time.Microsecond),
		}
	}
	return out
}

// statesModel is the events by ID.
type statesModel map[string]gapstate.Event

func (m statesModel) add(events []gapstate.Event) {
	for _, e := range events {
		m[e.ID] = e
	}
}

// checkStates reads s's states and requires every one to be in upper, as
// it was appended, once, and every one of lower to be there.
func checkStates(t *testing.T, what string, s durable.StateStore, upper, lower statesModel) {
	t.Helper()
	got, err := s.States(ctx, durable.Filter{})
	if err != nil {
		t.Fatalf("%s: States: %v", what, err)
	}
	seen := map[string]bool{}
	for _, e := range got {
		want, ok := upper[e.ID]
		switch {
		case seen[e.ID]:
			t.Fatalf("%s: event %q read twice", what, e.ID)
		case !ok:
			t.Fatalf("%s: event %q was never appended: %+v", what, e.ID, e)
		case e.Destination != want.Destination || e.Range != want.Range || e.State != want.State ||
			e.Reason != want.Reason || e.By != want.By || !e.At.Equal(want.At):
			t.Fatalf("%s: event %q reads as %+v, appended as %+v", what, e.ID, e, want)
		}
		seen[e.ID] = true
	}
	for id := range lower {
		if !seen[id] {
			t.Fatalf("%s: event %q, appended, is missing", what, id)
		}
	}
}

// stateKeys lists the gap-state objects of b.
func stateKeys(t *testing.T, b Blobs) []string {
	t.Helper()
	keys, err := b.List(ctx, statesDir)
	if err != nil {
		t.Fatal(err)
	}
	return keys
}

func openOn(t *testing.T, b Blobs, attempts int) *Tier {
	t.Helper()
	s, err := Open(ctx, Options{Blobs: b, MaxAttempts: attempts, MinBackoff: time.Microsecond, MaxBackoff: time.Microsecond})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestStatesFaultsNeverInvent appends random batches of events through
// flaky Blobs (failed reads, spurious refusals, writes failing before or
// after they land), retrying the failed ones later. After every step a
// clean reader finds every event whose append returned nil, and none that
// was never appended, each once; the faulty Tier's own reads, when they
// succeed, the same.
func TestStatesFaultsNeverInvent(t *testing.T) {
	seed := testseed.Seed(t)
	rng := rand.New(rand.NewPCG(seed, 0))
	dir := t.TempDir()
	inner, err := OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer inner.Close()
	flaky := &flakyBlobs{Blobs: inner, rng: rand.New(rand.NewPCG(seed, 1)), p: 0.2, counts: map[string]int{}}
	s := openOn(t, flaky, 2)
	clean := openDirStore(t, dir)
	attempted, committed := statesModel{}, statesModel{}
	var pending [][]gapstate.Event
	failed := 0
	for step := range 200 {
		var batch []gapstate.Event
		if len(pending) > 0 && rng.IntN(3) == 0 {
			i := rng.IntN(len(pending))
			batch = pending[i]
			pending = slices.Delete(pending, i, i+1)
		} else {
			batch = someEvents(rng, 1+rng.IntN(4))
		}
		attempted.add(batch)
		if err := s.AppendStates(ctx, batch); err != nil {
			if errors.Is(err, ErrCorruptObject) || errors.Is(err, gapstate.ErrInvalidEvent) {
				t.Fatalf("step %d: %v", step, err)
			}
			failed++
			pending = append(pending, batch)
		} else {
			committed.add(batch)
		}
		checkStates(t, fmt.Sprintf("step %d", step), clean, attempted, committed)
		if got, err := s.States(ctx, durable.Filter{}); err == nil {
			checkStates(t, fmt.Sprintf("step %d, through the faults", step), staticStates(got), attempted, committed)
		}
	}
	for _, batch := range pending {
		if err := clean.AppendStates(ctx, batch); err != nil {
			t.Fatal(err)
		}
	}
	checkStates(t, "at the end", clean, attempted, attempted)
	t.Logf("%d appends failed and were retried; faults %v; stats %+v", failed, flaky.counts, s.Stats())
	if failed == 0 || flaky.counts["put fails after"] == 0 {
		t.Fatalf("the faults did not bite: %d failed appends, %v", failed, flaky.counts)
	}
}

// staticStates is a StateStore answering with events it was given.
type staticStates []gapstate.Event

func (staticStates) AppendStates(context.Context, []gapstate.Event) error { return nil }
func (s staticStates) States(context.Context, durable.Filter) ([]gapstate.Event, error) {
	return s, nil
}

// lossyBlobs is Blobs that, while armed, applies a Put and loses its
// answer, or writes only the first bytes of it (a store whose writes are
// not atomic, cut short) and fails.
type lossyBlobs struct {
	Blobs
	mu         sync.Mutex
	loseAnswer int // Puts left to apply and then fail
	tear       int // Puts left to cut short
}

func (b *lossyBlobs) Put(ctx context.Context, key string, data []byte, ifMatch string) (string, error) {
	b.mu.Lock()
	lose := b.loseAnswer > 0
	tear := b.tear > 0 && !lose
	if lose {
		b.loseAnswer--
	} else if tear {
		b.tear--
	}
	b.mu.Unlock()
	if tear {
		if _, err := b.Blobs.Put(ctx, key, data[:len(data)/2], ifMatch); err != nil {
			return "", err
		}
		return "", fmt.Errorf("put %s: cut short: %w", key, errInjected)
	}
	v, err := b.Blobs.Put(ctx, key, data, ifMatch)
	if err == nil && lose {
		return "", fmt.Errorf("put %s: the answer was lost: %w", key, errInjected)
	}
	return v, err
}

// TestStatesAnswerLostOneCopy: a write whose answer was lost is retried,
// by the Tier and then by the caller, and leaves one object: every event
// once.
func TestStatesAnswerLostOneCopy(t *testing.T) {
	rng := rand.New(rand.NewPCG(testseed.Seed(t), 2))
	inner := openTestDir(t)
	b := &lossyBlobs{Blobs: inner, loseAnswer: 1}
	events := someEvents(rng, 3)
	m := statesModel{}
	m.add(events)
	if err := openOn(t, b, 4).AppendStates(ctx, events); err != nil {
		t.Fatalf("an append whose first answer was lost, retried by the Tier: %v", err)
	}
	// With one attempt the caller sees the error and appends again.
	more := someEvents(rng, 2)
	m.add(more)
	b.loseAnswer = 1
	s := openOn(t, b, 1)
	if err := s.AppendStates(ctx, more); !errors.Is(err, errInjected) {
		t.Fatalf("one attempt, answer lost: %v, want the injected error", err)
	}
	for range 2 {
		if err := s.AppendStates(ctx, more); err != nil {
			t.Fatalf("the caller's retry: %v", err)
		}
	}
	if keys := stateKeys(t, inner); len(keys) != 2 {
		t.Fatalf("two appends retried left %d objects, want 2: %q", len(keys), keys)
	}
	checkStates(t, "after the retries", openOn(t, inner, 1), m, m)
}

// TestStatesTornWriteNeverRead: a write cut short leaves bytes that no
// reader takes as events, nor as none: States fails, naming the object.
// So does an object under a key whose bytes are other, valid, events. The
// writer's retry replaces the torn bytes, and every event reads back.
func TestStatesTornWriteNeverRead(t *testing.T) {
	rng := rand.New(rand.NewPCG(testseed.Seed(t), 3))
	inner := openTestDir(t)
	b := &lossyBlobs{Blobs: inner, tear: 1}
	events := someEvents(rng, 4)
	m := statesModel{}
	m.add(events)
	s := openOn(t, b, 1)
	if err := s.AppendStates(ctx, events); !errors.Is(err, errInjected) {
		t.Fatalf("a torn write: %v, want the injected error", err)
	}
	reader := openOn(t, inner, 1)
	got, err := reader.States(ctx, durable.Filter{})
	if !errors.Is(err, ErrCorruptObject) || !strings.Contains(err.Error(), statesDir) || got != nil {
		t.Fatalf("States over a torn object = %v, %v; want ErrCorruptObject naming it, no events", got, err)
	}
	if err := openOn(t, b, 2).AppendStates(ctx, events); err != nil {
		t.Fatalf("the retry over the torn object: %v", err)
	}
	checkStates(t, "after the retry", reader, m, m)
	checkStates(t, "by a new reader", openOn(t, inner, 1), m, m)

	// Valid events under a key that names other bytes: refused whole.
	part, err := encodeStates(events[:2])
	if err != nil {
		t.Fatal(err)
	}
	whole, _ := encodeStates(events)
	if _, err := inner.Put(ctx, statesKey("", events[0].ID, append(whole, ' ')), part, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := openOn(t, inner, 1).States(ctx, durable.Filter{}); !errors.Is(err, ErrCorruptObject) {
		t.Fatalf("States over events under another payload's key: %v, want ErrCorruptObject", err)
	}
}

// laggingBlobs lists only the keys created before the last hide Puts,
// as an eventually consistent listing may, and, with gone set, answers a
// Get of a listed key as missing.
type laggingBlobs struct {
	Blobs
	mu     sync.Mutex
	recent []string
	hide   int
	gone   bool
}

func (b *laggingBlobs) Put(ctx context.Context, key string, data []byte, ifMatch string) (string, error) {
	v, err := b.Blobs.Put(ctx, key, data, ifMatch)
	if err == nil {
		b.mu.Lock()
		b.recent = append(b.recent, key)
		b.mu.Unlock()
	}
	return v, err
}

func (b *laggingBlobs) List(ctx context.Context, prefix string) ([]string, error) {
	keys, err := b.Blobs.List(ctx, prefix)
	b.mu.Lock()
	defer b.mu.Unlock()
	hidden := b.recent[max(0, len(b.recent)-b.hide):]
	return slices.DeleteFunc(keys, func(k string) bool { return slices.Contains(hidden, k) }), err
}

func (b *laggingBlobs) Get(ctx context.Context, key string) ([]byte, string, error) {
	if b.gone {
		return nil, "", fmt.Errorf("get %s: %w", key, ErrNotFound)
	}
	return b.Blobs.Get(ctx, key)
}

// TestStatesListingLags: a listing that lags the writes makes States lag
// (the newest events are missing until it catches up), never invent; a
// listed object whose read says it is missing is an error, not an empty
// answer. A key not of the tier's shape under gap_states/ is left alone.
func TestStatesListingLags(t *testing.T) {
	rng := rand.New(rand.NewPCG(testseed.Seed(t), 4))
	b := &laggingBlobs{Blobs: openTestDir(t), hide: 2}
	s := openOn(t, b, 1)
	all, listed := statesModel{}, statesModel{}
	var batches [][]gapstate.Event
	for i := range 6 {
		batch := someEvents(rng, 1+rng.IntN(3))
		batches = append(batches, batch)
		if err := s.AppendStates(ctx, batch); err != nil {
			t.Fatal(err)
		}
		all.add(batch)
		if i >= 2 {
			listed.add(batches[i-2])
		}
		checkStates(t, fmt.Sprintf("append %d, the last two unlisted", i), s, all, listed)
	}
	b.hide = 0
	checkStates(t, "listing caught up", s, all, all)
	if _, err := b.Blobs.Put(ctx, statesDir+"README", []byte("not ours"), ""); err != nil {
		t.Fatal(err)
	}
	checkStates(t, "with a foreign key", s, all, all)
	b.gone = true
	if got, err := openOn(t, b, 1).States(ctx, durable.Filter{}); !errors.Is(err, ErrNotFound) || got != nil {
		t.Fatalf("States when a listed object reads as missing = %v, %v; want ErrNotFound, no events", got, err)
	}
}

// TestStatesFilterAndAt: States matches the filter after the read
// (Partitions included), and keeps At in UTC to the microsecond.
func TestStatesFilterAndAt(t *testing.T) {
	s := openOn(t, openTestDir(t), 1)
	rng := rand.New(rand.NewPCG(testseed.Seed(t), 5))
	events := someEvents(rng, 40)
	events[0].At = time.Date(2026, 3, 1, 13, 0, 0, 123456789, time.FixedZone("X", 3600))
	if err := s.AppendStates(ctx, events); err != nil {
		t.Fatal(err)
	}
	one := int32(1)
	for _, f := range []durable.Filter{{}, {Sink: "lake"}, {Topic: "orders", Partition: &one}, {Topic: "users"},
		{Partitions: []coverage.TopicPartition{{Topic: "orders", Partition: 0}}}, {Sink: "raw", Partitions: []coverage.TopicPartition{{Topic: "orders", Partition: 1}, {Topic: "x", Partition: 0}}}} {
		got, err := s.States(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		want := 0
		for _, e := range events {
			if f.Match(e.Destination) {
				want++
			}
		}
		for _, e := range got {
			if !f.Match(e.Destination) {
				t.Fatalf("States(%+v) returned %v", f, e.Destination)
			}
			if e.ID == events[0].ID && (!e.At.Equal(events[0].At.Truncate(time.Microsecond)) || e.At.Location() != time.UTC) {
				t.Fatalf("At %v read back as %v, want UTC to the microsecond", events[0].At, e.At)
			}
		}
		if len(got) != want {
			t.Fatalf("States(%+v): %d events, want %d", f, len(got), want)
		}
	}
}
