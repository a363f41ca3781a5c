package recovery

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
)

// randomCoverage is a few topics' coverage where sinks wrote only some
// partitions, some partitions lack raw's rows, and coverage has holes.
func randomCoverage(r *rand.Rand) map[coverage.Destination]*coverage.RangeSet {
	all := map[coverage.Destination]*coverage.RangeSet{}
	for _, topic := range []string{"a", "b", "c"} {
		for p := range int32(6) {
			for _, sink := range []string{"raw", "lake", "search", "index"} {
				if r.IntN(4) == 0 {
					continue // never wrote this partition
				}
				set := new(coverage.RangeSet)
				for range 1 + r.IntN(4) {
					start := uint64(r.IntN(300))
					_ = set.Add(coverage.Range{Start: start, End: start + 1 + uint64(r.IntN(80))})
				}
				all[coverage.Destination{Sink: sink, Topic: topic, Partition: p}] = set
			}
		}
	}
	return all
}

func randomExtents(r *rand.Rand) []coverage.Extent {
	var es []coverage.Extent
	for range r.IntN(4) {
		start := uint64(r.IntN(100))
		es = append(es, coverage.Extent{Topic: []string{"a", "b", "c", "d"}[r.IntN(4)], Partition: int32(r.IntN(8)), Start: start, End: start + uint64(r.IntN(500))})
	}
	valid, _ := coverage.ValidateExtents(es)
	return valid
}

func randomSelect(r *rand.Rand) durable.Filter {
	var f durable.Filter
	if r.IntN(3) == 0 {
		f.Sink = []string{"raw", "lake", "search", "absent"}[r.IntN(4)]
	}
	switch r.IntN(4) {
	case 0:
		f.Topic = []string{"a", "b", "d"}[r.IntN(3)]
	case 1:
		p := int32(r.IntN(7))
		f.Partition = &p
		if r.IntN(2) == 0 {
			f.Topic = []string{"a", "b"}[r.IntN(2)]
		}
	default:
		for range 1 + r.IntN(5) {
			tp := TopicPartition{Topic: []string{"a", "b", "c", "d"}[r.IntN(4)], Partition: int32(r.IntN(8))}
			f.Partitions = append(f.Partitions, tp)
			if r.IntN(3) == 0 {
				f.Partitions = append(f.Partitions, tp)
			}
		}
	}
	return f
}

// TestSelectedPlansMatchWholePlan: a plan of a selection, read through it,
// is the whole plan's tasks of the selected destinations (the former
// planner's, filtered before the cut), with and without a SinkLister.
func TestSelectedPlansMatchWholePlan(t *testing.T) {
	seed := testSeed(t)
	r := rand.New(rand.NewPCG(seed, 0))
	for round := range 40 {
		all := randomCoverage(r)
		tiers := map[string]durable.Tier{"plain": newMapTier(all), "lister": listingTier{newMapTier(all)}}
		for range 10 {
			opts := PlanOptions{Extents: randomExtents(r), Select: randomSelect(r), MaxTasks: -1}
			if r.IntN(2) == 0 {
				opts.Sinks = []string{"archive", "lake"}[:1+r.IntN(2)]
			}
			if r.IntN(3) == 0 {
				opts.MaxBatches, opts.MaxTasks = 1+uint64(r.IntN(50)), 1+r.IntN(30)
			}
			model := opts
			model.EnsureDefaults()
			model.Only = opts.Select.Match
			want, wantErr := oldPlanCoverage(all, model)
			what := fmt.Sprintf("round %d, select %+v, sinks %v, extents %v, max %d/%d", round, opts.Select, opts.Sinks, opts.Extents, opts.MaxBatches, opts.MaxTasks)
			for name, tier := range tiers {
				got, err := Plan(ctx, tier, opts)
				if !errors.Is(err, ErrPlanTruncated) && err != nil || (err == nil) != (wantErr == nil) {
					t.Fatalf("%s, %s tier: error %v, want %v", what, name, err, wantErr)
				}
				if !slices.Equal(got, want) {
					t.Fatalf("%s, %s tier:\n got %v\nwant %v", what, name, got, want)
				}
			}
			got, err := PlanCoverage(all, model)
			if (err == nil) != (wantErr == nil) || !slices.Equal(got, want) {
				t.Fatalf("%s, PlanCoverage: %v (%v), want %v (%v)", what, got, err, want, wantErr)
			}
		}
	}
}

// TestPlanOfOnePartitionReadsOnlyIt: a plan or the gaps of one partition
// read the tier through a filter of that partition alone (a SinkLister
// names its topic's sinks), or without SinkLister, of its topic.
func TestPlanOfOnePartitionReadsOnlyIt(t *testing.T) {
	all := randomCoverage(rand.New(rand.NewPCG(testSeed(t), 0)))
	tp := TopicPartition{Topic: "b", Partition: 3}
	ref, _ := coverage.NewRangeSet(rg(0, 10))
	all[coverage.Destination{Sink: "raw", Topic: tp.Topic, Partition: tp.Partition}] = &ref
	one := durable.Filter{Partitions: []TopicPartition{tp}}
	lister := listingTier{newMapTier(all)}
	if _, err := Plan(ctx, lister, PlanOptions{Select: one}); err != nil {
		t.Fatal(err)
	}
	p := tp.Partition
	if _, err := CommittedGaps(ctx, lister, GapsFilter{Sink: "lake", Topic: tp.Topic, Partition: &p}); err != nil {
		t.Fatal(err)
	}
	wantReads := []durable.Filter{one, {Topic: tp.Topic, Partition: &p}}
	if !reflect.DeepEqual(lister.reads, wantReads) {
		t.Errorf("reads %+v, want %+v", lister.reads, wantReads)
	}
	for _, f := range lister.reads {
		for d := range all {
			if f.Match(d) != (d.TopicPartition() == tp) {
				t.Errorf("read %+v selects %s: %v", f, d, f.Match(d))
			}
		}
	}
	if want := [][]string{{"b"}, {"b"}}; !reflect.DeepEqual(lister.lists, want) {
		t.Errorf("sinks listed of %q, want %q", lister.lists, want)
	}
	plain := newMapTier(all)
	if _, err := Plan(ctx, plain, PlanOptions{Select: one}); err != nil {
		t.Fatal(err)
	}
	if want := []durable.Filter{{Topic: "b"}}; !reflect.DeepEqual(plain.reads, want) {
		t.Errorf("without a SinkLister: reads %+v, want %+v", plain.reads, want)
	}
}

// TestSelectedPlanNoReference: a selection with rows but none of the
// reference is one whole hole while the tier has the reference's rows
// elsewhere, and ErrNoReference when it has none at all.
func TestSelectedPlanNoReference(t *testing.T) {
	lake := coverage.Destination{Sink: "lake", Topic: "a", Partition: 1}
	raw := coverage.Destination{Sink: "raw", Topic: "b", Partition: 0}
	set := func(r coverage.Range) *coverage.RangeSet { s, _ := coverage.NewRangeSet(r); return &s }
	sel := PlanOptions{Select: durable.Filter{Partitions: []TopicPartition{lake.TopicPartition()}}}
	for _, withRef := range []bool{true, false} {
		all := map[coverage.Destination]*coverage.RangeSet{lake: set(rg(10, 20))}
		if withRef {
			all[raw] = set(rg(0, 5))
		}
		for name, tier := range map[string]durable.Tier{"plain": newMapTier(all), "lister": listingTier{newMapTier(all)}} {
			tasks, err := Plan(ctx, tier, sel)
			if !withRef {
				if !errors.Is(err, ErrNoReference) {
					t.Errorf("%s tier without the reference's rows: %v, %v; want ErrNoReference", name, tasks, err)
				}
				continue
			}
			want := []Task{{Destination: lake.WithSink("raw"), Range: rg(10, 20), Kind: KindVerifyReference}}
			if err != nil || !slices.Equal(tasks, want) {
				t.Errorf("%s tier: %v, %v; want %v", name, tasks, err, want)
			}
		}
	}
}

// TestResumePartitionsMatchesResume: ResumePartitions reads once, through
// a filter of exactly the partitions asked for, and returns for each what
// Resume of it alone returns.
func TestResumePartitionsMatchesResume(t *testing.T) {
	seed := testSeed(t)
	r := rand.New(rand.NewPCG(seed, 1))
	for round := range 40 {
		all := randomCoverage(r)
		opts := ResumeOptions{Sinks: []string{"lake", "search", "archive", "raw"}[:1+r.IntN(4)], Extents: randomExtents(r)}
		var tps []TopicPartition
		for range r.IntN(12) {
			tps = append(tps, TopicPartition{Topic: []string{"a", "b", "c", "d"}[r.IntN(4)], Partition: int32(r.IntN(8))})
		}
		if len(tps) > 0 && r.IntN(3) == 0 {
			tps = append(tps, tps[0])
		}
		tier := newMapTier(all)
		got, err := ResumePartitions(ctx, tier, tps, opts)
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		wantReads := []durable.Filter{{Partitions: tps}}
		if len(tps) == 0 {
			wantReads = nil
		}
		if !reflect.DeepEqual(tier.reads, wantReads) {
			t.Fatalf("round %d: reads %+v, want one of exactly %v", round, tier.reads, tps)
		}
		if len(got) != len(uniqTPs(tps)) {
			t.Fatalf("round %d: %d partitions resumed, asked for %v", round, len(got), tps)
		}
		for _, tp := range tps {
			want, err := Resume(ctx, tier, tp.Topic, tp.Partition, opts)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got[tp], want) {
				t.Fatalf("round %d, %s/%d:\n got %+v\nwant %+v", round, tp.Topic, tp.Partition, got[tp], want)
			}
		}
	}
	if _, err := ResumePartitions(ctx, newMapTier(nil), []TopicPartition{{Topic: "a", Partition: -1}}, ResumeOptions{Sinks: []string{"lake"}}); !errors.Is(err, coverage.ErrInvalidDestination) {
		t.Errorf("a negative partition: %v, want ErrInvalidDestination", err)
	}
}

func uniqTPs(tps []TopicPartition) []TopicPartition {
	s := slices.Clone(tps)
	slices.SortFunc(s, compareTopicPartition)
	return slices.Compact(s)
}
