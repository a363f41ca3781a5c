package reconcile

import (
	"fmt"
	"log/slog"
	"math/rand/v2"
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
	// Sinks selects the sinks to reconcile; each must have a checker.
	// Zero value: every sink with a checker.
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
	// Seed seeds the sample, so a sampled run can be replayed; the report
	// says which seed was used. Zero value: a fresh seed from the clock.
	Seed uint64
	// MaxChecksPerSecond bounds the calls to a checker, over all sinks.
	// Zero value: DefaultMaxChecksPerSecond.
	MaxChecksPerSecond float64
	// MaxBatchesPerCheck bounds the batches one checker call is asked
	// about: a longer committed range is asked in pieces. Zero value:
	// DefaultMaxBatchesPerCheck.
	MaxBatchesPerCheck uint64
	// Logger receives a line per failed sink. Zero value: discard.
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
	case !(o.MaxChecksPerSecond > 0): // NaN too
		return fmt.Errorf("reconcile: max checks per second %v is not a positive number (zero for %d)", o.MaxChecksPerSecond, DefaultMaxChecksPerSecond)
	}
	for _, s := range o.Sinks {
		if err := (coverage.Destination{Sink: s, Topic: "t"}).Validate(); err != nil {
			return fmt.Errorf("reconcile: sink %q: %w", s, err)
		}
	}
	return nil
}

// sample returns n of ranges (all when n is zero or covers them), in order,
// drawn by rng.
func sample(ranges []coverage.Range, n int, rng *rand.Rand) []coverage.Range {
	if n == 0 || n >= len(ranges) {
		return ranges
	}
	idx := rng.Perm(len(ranges))[:n]
	pick := make([]bool, len(ranges))
	for _, i := range idx {
		pick[i] = true
	}
	out := make([]coverage.Range, 0, n)
	for i, r := range ranges {
		if pick[i] {
			out = append(out, r)
		}
	}
	return out
}

// pieces cuts ranges into ranges of at most max batches.
func pieces(ranges []coverage.Range, max uint64) []coverage.Range {
	var out []coverage.Range
	for _, r := range ranges {
		for s := r.Start; s < r.End; {
			e := r.End
			if e-s > max {
				e = s + max
			}
			out = append(out, coverage.Range{Start: s, End: e})
			s = e
		}
	}
	return out
}
