package local

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/internal/testseed"
)

// releaseModel is what the writers were told was recorded and what the
// durable tier (a model of one) committed.
type releaseModel struct {
	mu       sync.Mutex
	recorded map[coverage.Destination]*coverage.RangeSet
	durable  map[coverage.Destination]*coverage.RangeSet
}

func addTo(m map[coverage.Destination]*coverage.RangeSet, d coverage.Destination, r coverage.Range) {
	if m[d] == nil {
		m[d] = new(coverage.RangeSet)
	}
	_ = m[d].Add(r)
}

// missing is what the model recorded for d and set lacks.
func missingFrom(recorded, set *coverage.RangeSet) coverage.RangeSet {
	if recorded == nil {
		return coverage.RangeSet{}
	}
	if set == nil {
		set = new(coverage.RangeSet)
	}
	return coverage.Gaps(recorded, set)
}

// TestReleaseRacesAgainstModel runs writers, a checkpointer (whose durable
// commits fail or land partly at random) and a releaser at once on one
// store, against a model: every release drops only destinations whose
// records, as of its start, the durable tier holds; no acknowledged record
// is ever lost (each is in the durable tier or still in the store); the
// store never marks checkpointed what the durable tier lacks; and once
// everything is checkpointed, releasing every partition leaves no key of
// theirs in Pebble.
func TestReleaseRacesAgainstModel(t *testing.T) {
	seed := testseed.Seed(t)
	s := openTemp(t, Options{})
	m := &releaseModel{recorded: map[coverage.Destination]*coverage.RangeSet{}, durable: map[coverage.Destination]*coverage.RangeSet{}}
	var parts []coverage.TopicPartition
	for _, topic := range []string{"a", "b"} {
		for p := range int32(4) {
			parts = append(parts, coverage.TopicPartition{Topic: topic, Partition: p})
		}
	}
	sinks := []string{"raw", "s3"}
	ops := 400
	if testing.Short() {
		ops = 150
	}
	errs := make(chan error, 16)
	// report keeps the first errors and drops the rest: a goroutine never
	// blocks on it, whatever it holds.
	report := func(err error) {
		select {
		case errs <- err:
		default:
		}
	}
	var wg, releaser sync.WaitGroup
	stop := make(chan struct{})
	writing := make(chan struct{}) // closed when the writers are done

	for w := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(seed, uint64(10+w)))
			for range ops {
				tp := parts[r.IntN(len(parts))]
				d := coverage.Destination{Sink: sinks[r.IntN(len(sinks))], Topic: tp.Topic, Partition: tp.Partition}
				start := r.Uint64N(300)
				rg := coverage.Range{Start: start, End: start + 1 + r.Uint64N(8)}
				if err := s.Record(ctx, d, rg); err != nil {
					report(fmt.Errorf("record %s %s: %w", d, rg, err))
					return
				}
				m.mu.Lock()
				addTo(m.recorded, d, rg)
				m.mu.Unlock()
				if r.IntN(16) == 0 { // let releases fall between records
					time.Sleep(time.Duration(r.IntN(300)) * time.Microsecond)
				}
			}
		}()
	}

	var checkpointer sync.WaitGroup
	checkpointer.Add(1)
	go func() {
		defer checkpointer.Done()
		r := rand.New(rand.NewPCG(seed, 1))
		for {
			select {
			case <-stop:
				return
			default:
			}
			cp, err := s.BeginCheckpoint(ctx)
			if err != nil {
				report(err)
				return
			}
			if cp == nil {
				time.Sleep(100 * time.Microsecond) // nothing pending: let the writers run
				continue
			}
			var landed []coverage.Destination
			m.mu.Lock()
			for _, dr := range cp.Ranges {
				// The durable commit fails, lands partly or lands whole.
				if r.IntN(5) == 0 {
					continue
				}
				landed = append(landed, dr.Destination)
				for _, rg := range dr.Ranges {
					addTo(m.durable, dr.Destination, rg)
				}
			}
			m.mu.Unlock()
			switch {
			case len(landed) == 0:
				err = s.AbortCheckpoint(ctx, cp)
			case len(landed) == len(cp.Ranges):
				err = s.CommitCheckpoint(ctx, cp)
			default:
				err = s.CommitLanded(ctx, cp, landed)
			}
			if err != nil {
				report(err)
				return
			}
		}
	}()

	var released, retained, releases int
	releaser.Add(1)
	go func() {
		defer releaser.Done()
		r := rand.New(rand.NewPCG(seed, 2))
		// Until the writers are done, and a few times after (until one
		// drops something, so that a machine where the writers outran
		// every release still checks one).
		for after := 0; after < 5 || released == 0 && after < 1000; releases++ {
			select {
			case <-writing:
				after++
			default:
			}
			time.Sleep(time.Duration(r.IntN(500)) * time.Microsecond)
			var some []coverage.TopicPartition
			for range 1 + r.IntN(3) {
				some = append(some, parts[r.IntN(len(parts))])
			}
			// What was acknowledged before the release began.
			before := map[coverage.Destination]coverage.RangeSet{}
			m.mu.Lock()
			for d, set := range m.recorded {
				before[d] = set.Clone()
			}
			m.mu.Unlock()
			res, err := s.Release(ctx, some)
			if err != nil {
				report(err)
				return
			}
			released += len(res.Released)
			retained += len(res.Retained)
			m.mu.Lock()
			for _, d := range res.Released {
				b := before[d]
				if lack := missingFrom(&b, m.durable[d]); !lack.IsEmpty() {
					report(fmt.Errorf("released %s while the durable tier lacked %s of what was recorded before the release", d, lack.String()))
				}
			}
			m.mu.Unlock()
		}
	}()

	wg.Wait()
	close(writing)
	releaser.Wait()
	close(stop)
	checkpointer.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	t.Logf("%d destinations released, %d retained over %d releases", released, retained, releases)
	if released == 0 {
		t.Fatal("no release dropped anything: the test exercised nothing")
	}

	// Nothing acknowledged was lost, and nothing checkpointed leads.
	s.mu.Lock()
	for d, rec := range m.recorded {
		union := new(coverage.RangeSet)
		if st := s.dests[d]; st != nil {
			union.Union(&st.covered)
			if lead := missingFrom(&st.checkpointed, m.durable[d]); !lead.IsEmpty() {
				t.Errorf("%s: checkpointed %s that the durable tier lacks", d, lead.String())
			}
		}
		if dur := m.durable[d]; dur != nil {
			union.Union(dur)
		}
		if lost := missingFrom(rec, union); !lost.IsEmpty() {
			t.Errorf("%s: recorded %s is neither in the durable tier nor in the store", d, lost.String())
		}
	}
	s.mu.Unlock()

	// Checkpoint the rest, then release everything: nothing is left.
	for range 2 { // a first round may land a leftover only
		if cp := checkpointAll(t, s); cp != nil {
			for _, dr := range cp.Ranges {
				for _, rg := range dr.Ranges {
					addTo(m.durable, dr.Destination, rg)
				}
			}
		}
	}
	for d, rec := range m.recorded {
		if lost := missingFrom(rec, m.durable[d]); !lost.IsEmpty() {
			t.Errorf("%s: recorded %s is not in the durable tier after the last checkpoint", d, lost.String())
		}
	}
	res, err := s.Release(ctx, parts)
	if err != nil || len(res.Retained) != 0 {
		t.Fatalf("release of everything checkpointed: %+v, %v", res, err)
	}
	if err := s.scan([]byte{kindCovered}, []byte{kindPendingSince + 1}, func(k, _ []byte) error {
		return fmt.Errorf("key %x left after releasing every partition", k)
	}); err != nil {
		t.Fatal(err)
	}
	dir := s.Dir()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s2 := openTemp(t, Options{Dir: dir})
	defer s2.Close()
	if ds := destinations(t, s2); len(ds) != 0 {
		t.Fatalf("destinations after reopening: %v", ds)
	}
}
