package mirror

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/iceberg"
	"github.com/covmirror/covmirror/internal/faultio"
	"github.com/covmirror/covmirror/internal/testseed"
	"github.com/covmirror/covmirror/local"
)

// TestPodsOnOneTable: 8 pods, each its own catalog connection and local
// tier, record random ranges (half of them to destinations every pod
// shares) and checkpoint on one table in a SQLite catalog, three callers per
// pod at once (so that checkpoints join), while the warehouse fails
// random writes (some carried out and reported failed). Against a model:
// after every successful Checkpoint, joined or not, everything the pod
// recorded before the call is in the table; the table never holds a
// range no pod recorded; once faults stop, every recorded range lands.
func TestPodsOnOneTable(t *testing.T) {
	seed := testseed.Seed(t)
	const pods, rounds = 8, 4
	props, err := iceberg.EmbeddedProps(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	inj := faultio.New(seed,
		faultio.Rule{Op: faultio.Write, Prob: 0.01},
		faultio.Rule{Op: faultio.Close, Prob: 0.01, AfterSuccess: true})
	type pod struct {
		m      *Mirror
		tbl    *iceberg.Table
		rng    *rand.Rand
		mu     sync.Mutex
		record []coverage.DestinationRanges // the model: what it recorded, in order
	}
	all := make([]*pod, pods)
	for i := range all {
		inner, err := iceberg.OpenCatalog(ctx, "", props)
		if err != nil {
			t.Fatal(err)
		}
		tbl, err := iceberg.Open(ctx, faultio.WrapCatalog(inner, inj), iceberg.Options{CommitTimeout: 20 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		l, err := local.Open(local.Options{Dir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		m, err := New(Options{Local: l, Durable: tbl, Writer: fmt.Sprintf("pod-%d", i)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = m.Close() })
		all[i] = &pod{m: m, tbl: tbl, rng: rand.New(rand.NewPCG(seed, uint64(i)))}
	}
	recordSome := func(i int, p *pod) {
		p.mu.Lock()
		defer p.mu.Unlock()
		for range 1 + p.rng.IntN(4) {
			d := coverage.Destination{Sink: "lake", Topic: "orders", Partition: int32(i)}
			if p.rng.IntN(2) == 0 {
				d = coverage.Destination{Sink: "shared", Topic: "orders", Partition: int32(p.rng.IntN(2))}
			}
			start := p.rng.Uint64N(10_000)
			r := coverage.Range{Start: start, End: start + 1 + p.rng.Uint64N(5)}
			if err := p.m.Record(ctx, d, r); err != nil {
				t.Error(err)
				return
			}
			p.record = append(p.record, coverage.DestinationRanges{Destination: d, Ranges: []coverage.Range{r}})
		}
	}
	// holds reports the first of ranges the table lacks.
	holds := func(tbl *iceberg.Table, want []coverage.DestinationRanges) (string, error) {
		got, err := tbl.Coverage(ctx, durable.Filter{})
		if err != nil {
			return "", err
		}
		for _, dr := range want {
			for _, r := range dr.Ranges {
				if set := got[dr.Destination]; set == nil || !set.ContainsRange(r) {
					return fmt.Sprintf("%s %s", dr.Destination, r), nil
				}
			}
		}
		return "", nil
	}
	var wg sync.WaitGroup
	var joined, failed sync.Map
	for i, p := range all {
		for caller := range 3 {
			wg.Go(func() {
				for round := range rounds {
					recordSome(i, p)
					p.mu.Lock()
					before := append([]coverage.DestinationRanges(nil), p.record...)
					p.mu.Unlock()
					sum, err := p.m.Checkpoint(ctx)
					if err != nil {
						failed.Store(fmt.Sprintf("%d/%d/%d", i, caller, round), err)
						continue // under faults; the model check below is for successes
					}
					if sum.Joined {
						joined.Store(fmt.Sprintf("%d/%d/%d", i, caller, round), true)
					}
					// Reading through another pod's table: the tier, not the cache.
					missing, err := holds(all[(i+1)%pods].tbl, before)
					if err != nil {
						continue // a faulty read says nothing about the table
					}
					if missing != "" {
						t.Errorf("seed %d: pod %d's checkpoint returned (joined %v) without %s, recorded before it", seed, i, sum.Joined, missing)
					}
				}
			})
		}
	}
	wg.Wait()
	inj.Clear()
	var want []coverage.DestinationRanges
	for i, p := range all {
		if _, err := p.m.Checkpoint(ctx); err != nil {
			t.Fatalf("seed %d: pod %d's checkpoint after the faults stopped: %v", seed, i, err)
		}
		want = append(want, p.record...)
	}
	if missing, err := holds(all[0].tbl, want); err != nil || missing != "" {
		t.Fatalf("seed %d: after every pod's last checkpoint the table lacks %s (%v)", seed, missing, err)
	}
	// Never a lead: everything in the table was recorded by some pod.
	model := map[coverage.Destination]*coverage.RangeSet{}
	for _, dr := range want {
		if model[dr.Destination] == nil {
			model[dr.Destination] = &coverage.RangeSet{}
		}
		for _, r := range dr.Ranges {
			if err := model[dr.Destination].Add(r); err != nil {
				t.Fatal(err)
			}
		}
	}
	got, err := all[0].tbl.Coverage(ctx, durable.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	for d, set := range got {
		for r := range set.All() {
			if m := model[d]; m == nil || !m.ContainsRange(r) {
				t.Fatalf("seed %d: the table claims %s %s, which no pod recorded", seed, d, r)
			}
		}
	}
	count := func(m *sync.Map) (n int) {
		m.Range(func(any, any) bool { n++; return true })
		return n
	}
	var conflicts uint64
	for _, p := range all {
		conflicts += p.tbl.CommitConflicts()
	}
	t.Logf("seed %d: %d checkpoints joined another's commit, %d failed under %d injected faults, %d commit conflicts",
		seed, count(&joined), count(&failed), len(inj.Events()), conflicts)
}
