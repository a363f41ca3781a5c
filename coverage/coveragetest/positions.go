package coveragetest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/covmirror/covmirror/coverage"
)

// PositionHarness tells RunPositions how to get position stores of one
// backend.
type PositionHarness struct {
	// Open returns a new, empty store configured with sources. The suite
	// closes it.
	Open func(t *testing.T, sources ...coverage.Source) coverage.PositionStore
	// Seed fixes the randomized scenario; zero takes the test run's seed
	// (-seed or COVMIRROR_SEED), else a fresh one.
	Seed uint64
	// Light runs the scenarios with a fifth of their operations, for
	// backends where every save is a catalog commit.
	Light bool
}

func (h PositionHarness) ops(n int) int {
	if h.Light {
		return max(n/5, 4)
	}
	return n
}

// RunPositions runs every stored-position scenario against the backend.
func RunPositions(t *testing.T, h PositionHarness) {
	t.Run("Regimes", func(t *testing.T) { testRegimes(t, h) })
	t.Run("UnionOfWriters", func(t *testing.T) { testPositionUnion(t, h) })
	t.Run("NeverBeyondRawGap", func(t *testing.T) { testNeverBeyondRawGap(t, h) })
	t.Run("Batches", func(t *testing.T) { testBatches(t, h) })
}

var (
	fileSet = coverage.Source{Name: "landing-files", Regime: coverage.Stored}
	kafka   = coverage.Source{Name: "orders-kafka", Regime: coverage.BrokerManaged}
)

func openPositions(t *testing.T, h PositionHarness) coverage.PositionStore {
	t.Helper()
	s := h.Open(t, fileSet, kafka)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func testRegimes(t *testing.T, h PositionHarness) {
	s := openPositions(t, h)
	ctx := context.Background()
	cases := []struct {
		name string
		p    coverage.Position
		want error
	}{
		{"broker-managed", coverage.Position{Source: kafka.Name, Cursor: []byte("offset=42"), Batch: 42}, coverage.ErrBrokerManaged},
		{"unknown source", coverage.Position{Source: "nope", Cursor: []byte("x"), Batch: 1}, coverage.ErrUnknownSource},
		{"empty cursor", coverage.Position{Source: fileSet.Name, Batch: 1}, coverage.ErrInvalidPosition},
		{"negative partition", coverage.Position{Source: fileSet.Name, Partition: -2, Cursor: []byte("x")}, coverage.ErrInvalidPosition},
	}
	for _, c := range cases {
		err := s.SavePosition(ctx, c.p)
		var ce *coverage.Error
		if !errors.Is(err, c.want) || !errors.As(err, &ce) {
			t.Errorf("%s: %v, want a *coverage.Error matching %v", c.name, err, c.want)
		}
	}
	if _, err := s.Positions(ctx, kafka.Name, 0); !errors.Is(err, coverage.ErrBrokerManaged) {
		t.Errorf("positions of a broker-managed source: %v, want ErrBrokerManaged", err)
	}
	if ps, err := s.Positions(ctx, fileSet.Name, 0); err != nil || len(ps) != 0 {
		t.Errorf("refused saves stored %v, %v", ps, err)
	}
}

func testPositionUnion(t *testing.T, h PositionHarness) {
	s := openPositions(t, h)
	ctx := context.Background()
	var wg sync.WaitGroup
	for w := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for b := range h.ops(50) {
				p := coverage.Position{Source: fileSet.Name, Partition: 1, Cursor: fmt.Appendf(nil, "w%d-%03d", w, b), Batch: uint64(b)}
				if err := s.SavePosition(ctx, p); err != nil {
					t.Error(err)
					return
				}
				_ = s.SavePosition(ctx, p) // a retry stores nothing new
			}
		}()
	}
	wg.Wait()
	ps, err := s.Positions(ctx, fileSet.Name, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 2*h.ops(50) {
		t.Fatalf("two writers saved %d distinct positions, store keeps %d", 2*h.ops(50), len(ps))
	}
	for i := 1; i < len(ps); i++ {
		if coverage.ComparePositions(ps[i-1], ps[i]) >= 0 {
			t.Fatalf("positions out of order at %d: %+v then %+v", i, ps[i-1], ps[i])
		}
	}
	if other, _ := s.Positions(ctx, fileSet.Name, 2); len(other) != 0 {
		t.Fatalf("partition 2 sees partition 1's positions: %v", other)
	}
}

// testNeverBeyondRawGap has two owners of one partition write raw batches in
// random order, some failing, and save a position after each raw write, while
// a third goroutine resolves the resume position. No resolution may pass a
// raw gap, and the final one must be the furthest safe position.
func testNeverBeyondRawGap(t *testing.T, h PositionHarness) {
	s := openPositions(t, h)
	cov := coverage.NewInMemory()
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(seedOrClock(t, h.Seed), 0))
	rawDest := coverage.Destination{Sink: coverage.RawSink, Topic: fileSet.Name, Partition: 0}
	batches := h.ops(200)
	order := rng.Perm(batches)
	failed := map[int]bool{}
	for range 3 {
		failed[rng.IntN(batches)] = true
	}
	// Owners hold step for reading around each (raw write, save) pair so
	// they run concurrently with each other; the resolver holds it for
	// writing, so that the raw coverage it checks against is the one the
	// resolution saw. (Raw's first covered batch can move down when a late
	// write lands below it, so a later snapshot would not do.)
	var step sync.RWMutex
	var wg sync.WaitGroup
	for w := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < batches; i += 2 {
				step.RLock()
				b := uint64(order[i])
				err := ownerStep(ctx, s, cov, rawDest, b, failed[order[i]])
				step.RUnlock()
				if err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	done := make(chan struct{})
	var resolver sync.WaitGroup
	resolver.Add(1)
	go func() {
		defer resolver.Done()
		for {
			select {
			case <-done:
				return
			default:
			}
			step.Lock()
			p, ok, err := coverage.ResumePosition(ctx, s, cov, coverage.RawSink, fileSet.Name, 0)
			if err == nil && ok {
				err = checkNoGapBelow(ctx, cov, rawDest, p)
			}
			step.Unlock()
			if err != nil {
				t.Error(err)
				return
			}
		}
	}()
	wg.Wait()
	close(done)
	resolver.Wait()
	p, ok, err := coverage.ResumePosition(ctx, s, cov, coverage.RawSink, fileSet.Name, 0)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := cov.Covered(ctx, rawDest)
	first, _ := raw.First()
	if want := first.End - 1; !ok || p.Batch != want {
		t.Fatalf("resume at %+v (ok %v), want batch %d: the end of raw's first run %s (failed %v)", p, ok, want, first, failed)
	}
	if err := checkNoGapBelow(ctx, cov, rawDest, p); err != nil {
		t.Fatal(err)
	}
}

// ownerStep writes raw batch b and then saves the position after it, or,
// when the raw write failed, does neither.
func ownerStep(ctx context.Context, s coverage.PositionStore, cov coverage.Store, rawDest coverage.Destination, b uint64, failed bool) error {
	if failed {
		return nil
	}
	if err := cov.Record(ctx, rawDest, coverage.Range{Start: b, End: b + 1}); err != nil {
		return err
	}
	return s.SavePosition(ctx, coverage.Position{Source: fileSet.Name, Cursor: fmt.Appendf(nil, "file-%04d", b), Batch: b})
}

func checkNoGapBelow(ctx context.Context, cov coverage.Store, rawDest coverage.Destination, p coverage.Position) error {
	raw, err := cov.Covered(ctx, rawDest)
	if err != nil {
		return err
	}
	first, ok := raw.First()
	if !ok || p.Batch < first.Start {
		return nil // behind raw's coverage: lagging, safe
	}
	if !raw.ContainsRange(coverage.Range{Start: first.Start, End: p.Batch + 1}) {
		return fmt.Errorf("resume position %+v is beyond a raw gap: raw covers %v", p, raw.String())
	}
	return nil
}

func seedOrClock(t *testing.T, s uint64) uint64 {
	return seed(t, Harness{Seed: s})
}
