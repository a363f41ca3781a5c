package object

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/internal/testseed"
)

// flakyBlobs wraps a real Blobs and, drawn from a seeded generator, fails
// a Get, refuses a Put with a spurious ErrPrecondition, or fails a Put
// before or after applying it (an answer lost on the way back).
type flakyBlobs struct {
	Blobs
	mu     sync.Mutex
	rng    *rand.Rand
	p      float64 // the chance of each fault
	counts map[string]int
}

var errInjected = errors.New("injected fault")

func (f *flakyBlobs) draw(what string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	hit := f.rng.Float64() < f.p
	if hit {
		f.counts[what]++
	}
	return hit
}

func (f *flakyBlobs) Get(ctx context.Context, key string) ([]byte, string, error) {
	if f.draw("get fails") {
		return nil, "", fmt.Errorf("get %s: %w", key, errInjected)
	}
	return f.Blobs.Get(ctx, key)
}

func (f *flakyBlobs) Put(ctx context.Context, key string, data []byte, ifMatch string) (string, error) {
	switch {
	case f.draw("spurious precondition"):
		return "", fmt.Errorf("%w: injected", ErrPrecondition)
	case f.draw("put fails before"):
		return "", fmt.Errorf("put %s before writing: %w", key, errInjected)
	}
	v, err := f.Blobs.Put(ctx, key, data, ifMatch)
	if err == nil && f.draw("put fails after") {
		return "", fmt.Errorf("put %s after writing: %w", key, errInjected)
	}
	return v, err
}

// TestFaultsNeverLead appends random checkpoints through flaky Blobs, with
// few attempts so that some Appends fail, and retries the failed ones
// later with MayHaveLanded. After every step the coverage holds no range
// that was never appended and every range whose Append returned nil; at
// the end, once the pending ones are appended, exactly what was appended.
//
// On the deltas layout a Fold through the same faults runs now and then
// between the steps, and once more without faults at the end.
func TestFaultsNeverLead(t *testing.T) {
	for _, layout := range []Layout{LayoutSinkObjects, LayoutDeltas} {
		t.Run(string(layout), func(t *testing.T) { faultsNeverLead(t, layout) })
	}
}

func faultsNeverLead(t *testing.T, layout Layout) {
	seed := testseed.Seed(t)
	rng := rand.New(rand.NewPCG(seed, 0))
	dir := t.TempDir()
	inner, err := OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer inner.Close()
	flaky := &flakyBlobs{Blobs: inner, rng: rand.New(rand.NewPCG(seed, 1)), p: 0.15, counts: map[string]int{}}
	s, err := Open(ctx, Options{Blobs: flaky, Layout: layout, MaxAttempts: 3, MinBackoff: time.Microsecond, MaxBackoff: time.Microsecond})
	if err != nil {
		t.Fatal(err)
	}
	clean := openDirStore(t, dir)
	attempted, committed := model{}, model{}
	var pending []durable.Checkpoint
	sinks := []string{"raw", "lake", "search"}
	failed := 0
	for step := range 300 {
		var c durable.Checkpoint
		if len(pending) > 0 && rng.IntN(3) == 0 {
			i := rng.IntN(len(pending))
			c = pending[i]
			pending = append(pending[:i], pending[i+1:]...)
		} else {
			c = durable.Checkpoint{Writer: fmt.Sprintf("pod-%d", rng.IntN(2)), Name: fmt.Sprintf("ck-%d", step)}
			for range 1 + rng.IntN(4) {
				d := coverage.Destination{Sink: sinks[rng.IntN(len(sinks))], Topic: "t", Partition: int32(rng.IntN(2))}
				start := uint64(rng.IntN(5000))
				c.Ranges = append(c.Ranges, coverage.DestinationRanges{Destination: d, Ranges: []coverage.Range{{Start: start, End: start + 1 + uint64(rng.IntN(5))}}})
			}
		}
		attempted.add(c)
		err := s.Append(ctx, c)
		switch {
		case err == nil:
			committed.add(c)
			if ok, err := clean.Landed(ctx, c.Writer, c.Name); !ok || err != nil {
				t.Fatalf("step %d: %s of %s returned nil, Landed says %v, %v", step, c.Name, c.Writer, ok, err)
			}
		case errors.Is(err, durable.ErrNameReused) || errors.Is(err, ErrCorruptObject):
			t.Fatalf("step %d: %v", step, err)
		default:
			failed++
			c.MayHaveLanded = true
			pending = append(pending, c)
		}
		if layout == LayoutDeltas && rng.IntN(5) == 0 {
			if _, err := s.Fold(ctx); err != nil {
				t.Logf("step %d: fold: %v", step, err) // faults may stop it; it must never lose a range
			}
		}
		checkBetween(t, fmt.Sprintf("step %d", step), clean, attempted, committed)
	}
	for _, c := range pending {
		if err := clean.Append(ctx, c); err != nil {
			t.Fatalf("pending %s: %v", c.Name, err)
		}
	}
	checkBetween(t, "at the end", clean, attempted, attempted)
	if layout == LayoutDeltas {
		if _, err := clean.Fold(ctx); err != nil {
			t.Fatalf("the last fold: %v", err)
		}
		checkBetween(t, "after the last fold", clean, attempted, attempted)
	}
	t.Logf("%d appends failed and were retried; faults %v; stats %+v", failed, flaky.counts, s.Stats())
	if failed == 0 || flaky.counts["put fails after"] == 0 {
		t.Fatalf("the faults did not bite: %d failed appends, %v", failed, flaky.counts)
	}
}

type model map[coverage.Destination]*coverage.RangeSet

func (m model) add(c durable.Checkpoint) {
	for _, dr := range c.Ranges {
		if m[dr.Destination] == nil {
			m[dr.Destination] = new(coverage.RangeSet)
		}
		for _, r := range dr.Ranges {
			_ = m[dr.Destination].Add(r)
		}
	}
}

// checkBetween fails unless tier's coverage is within upper (no lead) and
// holds lower (nothing acknowledged lost).
func checkBetween(t *testing.T, what string, tier durable.Tier, upper, lower model) {
	t.Helper()
	got, err := tier.Coverage(ctx, durable.Filter{})
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	for d, set := range got {
		for r := range set.All() {
			if u := upper[d]; u == nil || !u.ContainsRange(r) {
				t.Fatalf("%s: %s covers %v, never appended (a lead)", what, d, r)
			}
		}
	}
	for d, set := range lower {
		for r := range set.All() {
			if g := got[d]; g == nil || !g.ContainsRange(r) {
				t.Fatalf("%s: %s lacks %v, which an Append acknowledged", what, d, r)
			}
		}
	}
}
