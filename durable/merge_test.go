package durable

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/internal/testseed"
)

// digestByRangeSets is Digest as first written, merging through a
// RangeSet per destination: the reference the faster Digest must agree
// with on every input, since a changed digest refuses stored names.
func digestByRangeSets(kind, writer string, ranges []coverage.DestinationRanges, rows int64) string {
	var buf []byte
	str := func(s string) { buf = append(binary.BigEndian.AppendUint64(buf, uint64(len(s))), s...) }
	num := func(n uint64) { buf = binary.BigEndian.AppendUint64(buf, n) }
	str(kind)
	str(writer)
	merged := map[coverage.Destination]*coverage.RangeSet{}
	var dests []coverage.Destination
	for _, dr := range ranges {
		set := merged[dr.Destination]
		if set == nil {
			set = new(coverage.RangeSet)
			merged[dr.Destination] = set
			dests = append(dests, dr.Destination)
		}
		for _, r := range dr.Ranges {
			_ = set.Add(r)
		}
	}
	slices.SortFunc(dests, coverage.Destination.Compare)
	for _, d := range dests {
		str(d.Sink)
		str(d.Topic)
		num(uint64(uint32(d.Partition)))
		for _, r := range merged[d].Ranges() {
			num(r.Start)
			num(r.End)
		}
	}
	num(uint64(rows))
	sum := sha256.Sum256(buf)
	return hex.EncodeToString(sum[:16])
}

// TestMergeRangesMatchesRangeSets: for random checkpoints (destinations
// repeated and out of order, ranges overlapping, touching, invalid, or
// already merged), MergeRanges holds what a RangeSet per destination
// holds, leaves its input alone, and Digest equals the reference digest.
func TestMergeRangesMatchesRangeSets(t *testing.T) {
	seed := testseed.Seed(t)
	rng := rand.New(rand.NewPCG(seed, seed))
	dests := []coverage.Destination{{Sink: "lake", Topic: "a"}, {Sink: "lake", Topic: "a", Partition: 1}, {Sink: "lake", Topic: "b"}, {Sink: "raw", Topic: "a"}}
	for i := range 5000 {
		var in []coverage.DestinationRanges
		for range rng.IntN(6) {
			dr := coverage.DestinationRanges{Destination: dests[rng.IntN(len(dests))]}
			for range rng.IntN(5) {
				start := rng.Uint64N(40)
				dr.Ranges = append(dr.Ranges, coverage.Range{Start: start, End: start + rng.Uint64N(6)})
			}
			in = append(in, dr)
		}
		if rng.IntN(3) == 0 {
			in = MergeRanges(in) // an already merged input takes the no-copy path
		}
		before := slices.Clone(in)
		for j := range before {
			before[j].Ranges = slices.Clone(in[j].Ranges)
		}
		got := MergeRanges(in)
		for j := range in {
			if in[j].Destination != before[j].Destination || !slices.Equal(in[j].Ranges, before[j].Ranges) {
				t.Fatalf("case %d: MergeRanges modified its input", i)
			}
		}
		want := map[coverage.Destination]*coverage.RangeSet{}
		for _, dr := range in {
			if want[dr.Destination] == nil {
				want[dr.Destination] = new(coverage.RangeSet)
			}
			for _, r := range dr.Ranges {
				_ = want[dr.Destination].Add(r)
			}
		}
		if len(got) != len(want) {
			t.Fatalf("case %d: %d destinations from %v, want %d", i, len(got), before, len(want))
		}
		for j, dr := range got {
			if j > 0 && got[j-1].Destination.Compare(dr.Destination) >= 0 {
				t.Fatalf("case %d: destinations out of order: %v", i, got)
			}
			if w := want[dr.Destination]; w == nil || (len(dr.Ranges)+w.Len() > 0 && !slices.Equal(dr.Ranges, w.Ranges())) {
				t.Fatalf("case %d: %s merged to %v, a RangeSet holds %v (input %v)", i, dr.Destination, dr.Ranges, w, before)
			}
		}
		rows := rng.Int64N(100)
		if got, want := Digest("append", "pod-a", in, rows), digestByRangeSets("append", "pod-a", in, rows); got != want {
			t.Fatalf("case %d: Digest(%v) = %s, the reference gives %s", i, before, got, want)
		}
	}
}
