package recovery

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"runtime/metrics"
	"testing"
	"time"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
)

// readersDeployment is topics x partitions x 5 sinks (raw and four
// others): raw covers [0,1000) of every partition, each other sink all of
// it but one hole of 5 batches, so there are 4 gaps per partition.
func readersDeployment(topics, partitions int) *mapTier {
	r := rand.New(rand.NewPCG(1, 2))
	m := newMapTier(nil)
	for ti := range topics {
		topic := fmt.Sprintf("topic-%03d", ti)
		for p := range int32(partitions) {
			raw, _ := coverage.NewRangeSet(coverage.Range{Start: 0, End: 1000})
			m.put(coverage.Destination{Sink: coverage.RawSink, Topic: topic, Partition: p}, &raw)
			for _, sink := range []string{"lake", "search", "index", "archive"} {
				hole := 1 + uint64(r.IntN(990))
				set, _ := coverage.NewRangeSet(coverage.Range{Start: 0, End: hole}, coverage.Range{Start: hole + 5, End: 1000})
				m.put(coverage.Destination{Sink: sink, Topic: topic, Partition: p}, &set)
			}
		}
	}
	return m
}

// measured is one reader's cost: wall time, bytes allocated, and the heap's
// peak above where it started.
type measured struct {
	took       time.Duration
	alloc      uint64
	peak       uint64
	n, results int
}

// measure runs fn, sampling the live heap every millisecond for its peak.
func (m *measured) measure(fn func() int) {
	runtime.GC()
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(sample)
	base := sample[0].Value.Uint64()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	stop, done := make(chan struct{}), make(chan uint64)
	go func() {
		s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		var peak uint64
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			metrics.Read(s)
			peak = max(peak, s[0].Value.Uint64())
			select {
			case <-stop:
				done <- peak
				return
			case <-tick.C:
			}
		}
	}()
	start := time.Now()
	m.results = fn()
	m.took += time.Since(start)
	runtime.ReadMemStats(&after)
	close(stop)
	if peak := <-done; peak > base {
		m.peak = max(m.peak, peak-base)
	}
	m.alloc += after.TotalAlloc - before.TotalAlloc
	m.n++
}

func (m *measured) report(b *testing.B, name string) {
	n := float64(m.n)
	b.ReportMetric(m.took.Seconds()*1e3/n, name+"-ms")
	b.ReportMetric(float64(m.alloc)/n/(1<<20), name+"-alloc-MiB")
	b.ReportMetric(float64(m.peak)/(1<<20), name+"-peak-MiB")
}

// BenchmarkReaders times the readers at 200 topics x 500 partitions x 5
// sinks (500,000 destinations, 400,000 gaps): the plan and the gaps of one
// partition, read through a filter of it, and the gaps and the plan of
// everything; and, at 200 x 100 x 5 (100,000 destinations, 80,000 gaps,
// where the former planner takes seconds rather than minutes), the former
// way (every destination planned, then filtered) beside today's for one
// partition and for everything, with the ratios:
//
//	go test ./recovery -run '^$' -bench Readers -benchtime 1x
func BenchmarkReaders(b *testing.B) {
	one := TopicPartition{Topic: "topic-042", Partition: 7}
	onePlan := func(t durable.Tier) func() int {
		return func() int {
			tasks, err := Plan(ctx, t, PlanOptions{Select: durable.Filter{Partitions: []TopicPartition{one}}})
			if err != nil {
				b.Fatal(err)
			}
			return len(tasks)
		}
	}
	oneGaps := func(t durable.Tier) func() int {
		return func() int {
			p := one.Partition
			gaps, err := CommittedGaps(ctx, t, GapsFilter{Topic: one.Topic, Partition: &p})
			if err != nil {
				b.Fatal(err)
			}
			return len(gaps)
		}
	}
	allGaps := func(t durable.Tier) func() int {
		return func() int {
			gaps, err := CommittedGaps(ctx, t, GapsFilter{})
			if err != nil {
				b.Fatal(err)
			}
			return len(gaps)
		}
	}
	allPlan := func(t durable.Tier) func() int {
		return func() int {
			tasks, err := Plan(ctx, t, PlanOptions{MaxTasks: -1})
			if err != nil {
				b.Fatal(err)
			}
			return len(tasks)
		}
	}
	formerly := func(t *mapTier, only func(coverage.Destination) bool) func() int {
		return func() int {
			all, err := t.Coverage(ctx, durable.Filter{})
			if err != nil {
				b.Fatal(err)
			}
			tasks, err := oldPlanCoverage(all, PlanOptions{Reference: coverage.RawSink, MaxBatches: DefaultMaxBatches, MaxTasks: -1, Only: only})
			if err != nil {
				b.Fatal(err)
			}
			return len(tasks)
		}
	}
	oneOnly := durable.Filter{Partitions: []TopicPartition{one}}.Match

	b.Run("destinations=500000", func(b *testing.B) {
		tier := readersDeployment(200, 500)
		lister := listingTier{tier}
		var m [5]measured
		allPlan(tier)() // not measured: the heap grows to the plan's size once
		for range b.N {
			m[0].measure(onePlan(lister))
			m[1].measure(oneGaps(lister))
			m[2].measure(onePlan(tier))
			m[4].measure(allPlan(tier))
			m[3].measure(allGaps(tier))
		}
		if m[0].results != 4 || m[1].results != 4 || m[3].results != 400_000 || m[4].results != 400_000 {
			b.Fatalf("%d, %d, %d and %d tasks or gaps, want 4, 4, 400000, 400000", m[0].results, m[1].results, m[3].results, m[4].results)
		}
		m[0].report(b, "plan-one")
		m[1].report(b, "gaps-one")
		m[2].report(b, "plan-one-topic-read")
		m[3].report(b, "gaps-all")
		m[4].report(b, "plan-all")
		b.ReportMetric(200*500*5, "destinations")
	})
	b.Run("destinations=100000", func(b *testing.B) {
		tier := readersDeployment(200, 100)
		lister := listingTier{tier}
		var m [4]measured
		allPlan(tier)()
		for range b.N {
			m[0].measure(onePlan(lister))
			m[1].measure(formerly(tier, oneOnly))
			m[2].measure(allPlan(tier))
			m[3].measure(formerly(tier, nil))
		}
		if m[0].results != m[1].results || m[2].results != m[3].results {
			b.Fatalf("one partition: %d tasks, formerly %d; everything: %d, formerly %d", m[0].results, m[1].results, m[2].results, m[3].results)
		}
		m[0].report(b, "plan-one")
		m[1].report(b, "formerly-plan-one")
		m[2].report(b, "plan-all")
		m[3].report(b, "formerly-plan-all")
		b.ReportMetric(m[1].took.Seconds()/m[0].took.Seconds(), "plan-one-speedup")
		b.ReportMetric(m[3].took.Seconds()/m[2].took.Seconds(), "plan-all-speedup")
		b.ReportMetric(float64(m[3].alloc)/float64(m[2].alloc), "plan-all-alloc-ratio")
	})
}
