package object

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/internal/testseed"
)

// batchBlobs is BatchBlobs over another Blobs: each batch call runs the
// one-key calls in turn, so the inner handle's faults strike key by key,
// and, drawn from rng with chance p, the whole call fails before it runs
// (nothing done) or after (done, the answer lost: every put's outcome
// unknown). refuse, when set, refuses every put of a key it matches, as
// a condition that does not hold.
type batchBlobs struct {
	Blobs
	mu     sync.Mutex
	rng    *rand.Rand
	p      float64
	refuse func(key string) bool
	// calls counts the batch calls; singles the one-key calls made
	// through the handle itself (not the batch calls' own).
	calls, singles atomic.Int64
}

var _ BatchBlobs = (*batchBlobs)(nil)

func (b *batchBlobs) fault() bool {
	if b.rng == nil {
		return false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.rng.Float64() < b.p
}

func (b *batchBlobs) Get(ctx context.Context, key string) ([]byte, string, error) {
	b.singles.Add(1)
	return b.Blobs.Get(ctx, key)
}

func (b *batchBlobs) Put(ctx context.Context, key string, data []byte, ifMatch string) (string, error) {
	b.singles.Add(1)
	return b.Blobs.Put(ctx, key, data, ifMatch)
}

func (b *batchBlobs) Delete(ctx context.Context, key string) error {
	b.singles.Add(1)
	return b.Blobs.Delete(ctx, key)
}

func (b *batchBlobs) GetMany(ctx context.Context, keys []string) (map[string]Object, error) {
	b.calls.Add(1)
	if b.fault() {
		return nil, fmt.Errorf("get %d keys: %w", len(keys), errInjected)
	}
	out := map[string]Object{}
	for _, k := range keys {
		data, version, err := b.Blobs.Get(ctx, k)
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out[k] = Object{Data: data, Version: version}
	}
	return out, nil
}

func (b *batchBlobs) PutMany(ctx context.Context, puts []PutRequest) ([]string, error) {
	b.calls.Add(1)
	if b.fault() {
		return nil, fmt.Errorf("put %d keys: %w", len(puts), errInjected)
	}
	out := make([]string, len(puts))
	for i, p := range puts {
		if b.refuse != nil && b.refuse(p.Key) {
			continue
		}
		v, err := b.Blobs.Put(ctx, p.Key, p.Data, p.IfMatch)
		if errors.Is(err, ErrPrecondition) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	if b.fault() {
		return nil, fmt.Errorf("put %d keys, the answer lost: %w", len(puts), errInjected)
	}
	return out, nil
}

func (b *batchBlobs) DeleteMany(ctx context.Context, keys []string) error {
	b.calls.Add(1)
	if b.fault() {
		return fmt.Errorf("delete %d keys: %w", len(keys), errInjected)
	}
	for _, k := range keys {
		if err := b.Blobs.Delete(ctx, k); err != nil {
			return err
		}
	}
	if b.fault() {
		return fmt.Errorf("delete %d keys, the answer lost: %w", len(keys), errInjected)
	}
	return nil
}

// TestFleetRaceBatchedFolds: raceFleet with every handle a BatchBlobs, so
// that the two folders fold through batch calls that fail whole, before
// or after they ran, beside the inner handles' faults key by key.
func TestFleetRaceBatchedFolds(t *testing.T) {
	seed := testseed.Seed(t)
	dir := dirFleet(t.TempDir())
	raceFleet(t, seed, fleetRace{writers: 32, per: 8, landed: true,
		open: func(t *testing.T, i int, rng *rand.Rand, p float64) Blobs {
			inner := dir(t, i, rng, p)
			if i == 0 {
				return &batchBlobs{Blobs: inner}
			}
			return &batchBlobs{Blobs: inner, rng: rand.New(rand.NewPCG(rng.Uint64(), 3)), p: p}
		}})
}

// TestBatchedFoldLeavesWhatARefusedBaseHolds: a fold through batch calls
// whose every write of one topic's bases is refused deletes exactly the
// deltas that touch only the other topics; the rest stay, whole, and the
// coverage read is the union of every checkpoint throughout. Once the
// writes go through, the next fold folds what was left. The fold makes
// no one-key call but the fold log's, and a batch call per run of
// batchKeys keys, not one per key.
func TestBatchedFoldLeavesWhatARefusedBaseHolds(t *testing.T) {
	seed := testseed.Seed(t)
	inner, err := OpenDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = inner.Close() })
	blocked := baseKey("", "clicks", 0)
	blocked = blocked[:strings.LastIndexByte(blocked, '/')+1] // every group of the topic
	b := &batchBlobs{Blobs: inner, refuse: func(key string) bool { return strings.HasPrefix(key, blocked) }}
	tier, err := Open(ctx, Options{Blobs: b, Layout: LayoutDeltas, MaxAttempts: 2, MinBackoff: 1000, MaxBackoff: 10_000})
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(seed, 1))
	all := model{}
	touchesBlocked := map[string]bool{}
	const n = 300
	for i := range n {
		c := spread(rng, fmt.Sprintf("pod-%d", i%7), fmt.Sprintf("ck-%d", i))
		if err := tier.Append(ctx, c); err != nil {
			t.Fatal(err)
		}
		all.add(c)
		for _, dr := range c.Ranges {
			touchesBlocked[c.Writer+"/"+c.Name] = touchesBlocked[c.Writer+"/"+c.Name] || dr.Destination.Topic == "clicks"
		}
	}
	check := func(when string) {
		t.Helper()
		got, err := tier.Coverage(ctx, durable.Filter{})
		if err != nil {
			t.Fatal(err)
		}
		if err := all.within(got, all); err != nil {
			t.Fatalf("seed %d, %s: %v", seed, when, err)
		}
	}
	calls, singles := b.calls.Load(), b.singles.Load()
	res, err := tier.Fold(ctx)
	if err != nil {
		t.Fatalf("seed %d: %v", seed, err)
	}
	wantLeft := 0
	for _, blocked := range touchesBlocked {
		if blocked {
			wantLeft++
		}
	}
	if wantLeft == 0 || wantLeft == n {
		t.Fatalf("seed %d: %d of %d checkpoints touch the refused topic: the test needs some of each", seed, wantLeft, n)
	}
	if res.Left != wantLeft || res.Deltas != n-wantLeft {
		t.Fatalf("seed %d: the fold folded %d and left %d deltas; want %d folded, %d left (%+v)", seed, res.Deltas, res.Left, n-wantLeft, wantLeft, res)
	}
	// The fold log's Put is the one one-key call (Lists are not counted).
	if got := b.singles.Load() - singles; got != 1 {
		t.Fatalf("seed %d: the fold made %d one-key calls, want 1 (the fold log)", seed, got)
	}
	// Reads, writes (two attempts at the refused) and deletes of n deltas
	// and the bases: a handful of batch calls, not one per key.
	if got := b.calls.Load() - calls; got > 12 {
		t.Fatalf("seed %d: the fold made %d batch calls for %d deltas, want at most 12", seed, got, n)
	}
	left, err := tier.listDeltas(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range left {
		d, err := tier.readDelta(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		if !touchesBlocked[d.Writer+"/"+d.Name] {
			t.Fatalf("seed %d: %q of %q was left, but none of its bases was refused", seed, d.Name, d.Writer)
		}
	}
	if len(left) != wantLeft {
		t.Fatalf("seed %d: %d deltas left, want %d", seed, len(left), wantLeft)
	}
	check("after the fold with refused bases")
	b.refuse = nil
	if res, err = tier.Fold(ctx); err != nil || res.Deltas != wantLeft || res.Left != 0 {
		t.Fatalf("seed %d: the second fold: %+v, %v; want the %d left folded", seed, res, err, wantLeft)
	}
	check("after the second fold")
}
