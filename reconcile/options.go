package reconcile

import (
	"fmt"
	"log/slog"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/covmirror/covmirror/coverage"
)

// Options' defaults, each defined here once.
const (
	// DefaultMaxChecksPerSecond is Options.MaxChecksPerSecond's zero value:
	// few enough that a reconcile never loads a sink.
	DefaultMaxChecksPerSecond = 10
	// DefaultMaxBatchesPerCheck is Options.MaxBatchesPerCheck's zero value.
	DefaultMaxBatchesPerCheck = 10_000
)

// Options configures Run. The zero value of every field is a documented
// default; EnsureDefaults fills them in and Validate checks the result.
type Options struct {
	// Sinks selects the sinks to reconcile; each must have a checker, and
	// one without committed coverage (under Topic and Partition) is a
	// failure (NoCoverageError), never a clean report. Zero value: every
	// sink with a checker.
	Sinks []string
	// Topic and Partition narrow the destinations, as durable.Filter.
	// Zero values: all.
	Topic     string
	Partition *int32
	// Sample is how many pieces of each destination's committed coverage
	// are checked, chosen at random from Seed; a piece is a committed range,
	// or a part of MaxBatchesPerCheck batches of a longer one. Zero value:
	// every piece (a full check).
	Sample int
	// Seed seeds the sample; the report says which seed was used. The same
	// Seed, Sample and MaxBatchesPerCheck over the same committed coverage
	// ask the same pieces; coverage that has grown numbers its pieces anew,
	// so the sample differs. Zero value: a fresh seed from the clock.
	Seed uint64
	// MaxChecksPerSecond bounds the calls to a checker, over all sinks.
	// Zero value: DefaultMaxChecksPerSecond.
	MaxChecksPerSecond float64
	// MaxBatchesPerCheck bounds the batches one checker call is asked
	// about: a longer committed range is asked in pieces. Zero value:
	// DefaultMaxBatchesPerCheck.
	MaxBatchesPerCheck uint64
	// Logger receives a line per failed destination, and per sink without
	// coverage. Zero value: discard.
	Logger *slog.Logger
}

// EnsureDefaults fills in the zero-valued fields with their defaults.
func (o *Options) EnsureDefaults() {
	if o.Seed == 0 {
		o.Seed = uint64(time.Now().UnixNano()) | 1
	}
	if o.MaxChecksPerSecond == 0 {
		o.MaxChecksPerSecond = DefaultMaxChecksPerSecond
	}
	if o.MaxBatchesPerCheck == 0 {
		o.MaxBatchesPerCheck = DefaultMaxBatchesPerCheck
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
}

// Validate reports options Run cannot work with.
func (o *Options) Validate() error {
	switch {
	case o.Sample < 0:
		return fmt.Errorf("reconcile: sample %d is negative: give a positive count of ranges per destination, or zero for a full check", o.Sample)
	case !(o.MaxChecksPerSecond >= 0): // NaN too; zero is the default
		return fmt.Errorf("reconcile: max checks per second %v is not a positive number (zero for %d)", o.MaxChecksPerSecond, DefaultMaxChecksPerSecond)
	}
	for _, s := range o.Sinks {
		if err := (coverage.Destination{Sink: s, Topic: "t"}).Validate(); err != nil {
			return fmt.Errorf("reconcile: sink %q: %w", s, err)
		}
	}
	return nil
}

// pieceSet is a destination's committed ranges seen as pieces of at most
// max batches each, numbered from zero in batch order, without building
// them: a sample of a few pieces of a huge range allocates only the few.
type pieceSet struct {
	ranges []coverage.Range
	max    uint64
	ends   []uint64 // ends[i]: the pieces of ranges[:i+1]
}

// newPieceSet numbers ranges' pieces; more than 2^64-1 of them is an error
// (a MaxBatchesPerCheck far too small for the coverage).
func newPieceSet(ranges []coverage.Range, max uint64) (pieceSet, error) {
	ps := pieceSet{ranges: ranges, max: max, ends: make([]uint64, len(ranges))}
	var total uint64
	for i, r := range ranges {
		n := r.Len() / max
		if r.Len()%max != 0 {
			n++
		}
		if total > math.MaxUint64-n {
			return pieceSet{}, fmt.Errorf("reconcile: committed coverage is more than %d pieces of %d batches: raise MaxBatchesPerCheck", uint64(math.MaxUint64), max)
		}
		total += n
		ps.ends[i] = total
	}
	return ps, nil
}

func (ps pieceSet) total() uint64 {
	if len(ps.ends) == 0 {
		return 0
	}
	return ps.ends[len(ps.ends)-1]
}

// piece is piece number i.
func (ps pieceSet) piece(i uint64) coverage.Range {
	k, _ := slices.BinarySearch(ps.ends, i+1)
	before := uint64(0)
	if k > 0 {
		before = ps.ends[k-1]
	}
	r := ps.ranges[k]
	s := r.Start + (i-before)*ps.max
	e := r.End
	if e-s > ps.max {
		e = s + ps.max
	}
	return coverage.Range{Start: s, End: e}
}

// sample is the numbers of n pieces drawn by rng, in order (every piece
// when n is zero or covers them: nil then, see all). Floyd's algorithm
// draws n distinct numbers with n draws and a set of n, whatever the
// total.
func (ps pieceSet) sample(n int, rng *rand.Rand) []uint64 {
	total := ps.total()
	if n == 0 || uint64(n) >= total {
		return nil
	}
	picked := make(map[uint64]bool, n)
	for j := total - uint64(n); j < total; j++ {
		k := rng.Uint64N(j + 1)
		if picked[k] {
			k = j
		}
		picked[k] = true
	}
	return slices.Sorted(maps.Keys(picked))
}
