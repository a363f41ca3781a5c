package reconcile

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"maps"
	"math/rand/v2"
	"slices"

	"golang.org/x/time/rate"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
)

// KindClaimedAbsent is the kind of a Row: covered in the durable tier, not
// held by the sink.
const KindClaimedAbsent = "claimed-absent"

// Row is one claimed-absent range, in the shape of the gaps' rows.
type Row struct {
	Sink      string `json:"sink"`
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Start     uint64 `json:"start"`
	End       uint64 `json:"end"`
	Kind      string `json:"kind"`
}

// Checked is what was asked of one sink.
type Checked struct {
	Sink         string `json:"sink"`
	Destinations int    `json:"destinations"`
	Checks       int    `json:"checks"`
	Batches      uint64 `json:"batches"`
	// Failed says some check of the sink failed, or the sink has no
	// committed coverage to check: the failed destinations' rows are not
	// reported (FailedDestinations counts them); the others' are.
	Failed             bool `json:"failed"`
	FailedDestinations int  `json:"failed_destinations"`
}

// Report is one reconcile's outcome.
type Report struct {
	// Seed, Sample and MaxBatchesPerCheck are the options the run used. A
	// run given the same three as Options, over the same committed
	// coverage, asks the same pieces; once coverage has grown (or with
	// another MaxBatchesPerCheck) the pieces are numbered anew and the
	// sample differs.
	Seed               uint64 `json:"seed"`
	Sample             int    `json:"sample"`
	MaxBatchesPerCheck uint64 `json:"max_batches_per_check"`
	// Checked holds one entry per selected sink, in sink order.
	Checked []Checked `json:"checked"`
	// Absent are the claimed-absent ranges of every destination whose
	// checks all succeeded, ordered by sink, topic, partition and start.
	Absent []Row `json:"absent"`
	// Failures are the errors of the failed destinations (each a
	// *CheckError) and of the selected sinks without committed coverage
	// (each a *NoCoverageError), in sink order.
	Failures []error `json:"-"`

	// committed is the coverage Run read, every sink's under the topic and
	// partition filter: Tasks clips replays to the reference's.
	committed map[coverage.Destination]*coverage.RangeSet
	// asked is what each destination whose checks all succeeded was asked
	// about (all of its coverage, or the sample): Metrics forgets an
	// earlier absence only where a run asked again.
	asked map[coverage.Destination]*coverage.RangeSet
}

// ErrNoChecker: a sink Options.Sinks selects has no checker, a mistake
// in the run's options or configuration.
var ErrNoChecker = errors.New("has no checker")

// ErrNoCoverage: a selected sink has no committed coverage in the durable
// tier (under the run's topic and partition), so nothing of it can be
// checked: most often a misspelt sink name.
var ErrNoCoverage = errors.New("the sink has no committed coverage in the durable tier")

// NoCoverageError is a selected sink without committed coverage: it names
// the sink and the sinks that have some. It wraps ErrNoCoverage.
type NoCoverageError struct {
	Sink  string
	Sinks []string // the sinks with committed coverage under the filter, sorted
}

func (e *NoCoverageError) Error() string {
	return fmt.Sprintf("reconcile: sink %q: %v (under the run's topic and partition), which has coverage of the sinks [%s]: name the sink its coverage is recorded under",
		e.Sink, ErrNoCoverage, coverage.Names(e.Sinks))
}

func (e *NoCoverageError) Unwrap() error { return ErrNoCoverage }

// Run reconciles each selected sink: it reads the committed coverage from
// tier, asks each sink's checker about it (in full, or Options.Sample
// pieces per destination), and reports the ranges claimed but not held. It
// only reads tier. A destination whose check fails contributes no rows, and
// the sink's other destinations are still checked and reported; each
// failure (a *CheckError, or a *NoCoverageError for a selected sink without
// coverage) is in Report.Failures, and Run returns the report with them
// joined as its error. Any other error (options, the tier, ctx) returns no
// report.
func Run(ctx context.Context, tier durable.Tier, checkers map[string]Checker, opts Options) (Report, error) {
	opts.EnsureDefaults()
	if err := opts.Validate(); err != nil {
		return Report{}, err
	}
	sinks, err := Selected(opts.Sinks, checkers)
	if err != nil {
		return Report{}, err
	}
	all, err := tier.Coverage(ctx, durable.Filter{Topic: opts.Topic, Partition: opts.Partition})
	if err != nil {
		return Report{}, fmt.Errorf("reconcile: reading the committed coverage from %s: %w", tier.Name(), err)
	}
	bySink := map[string]map[coverage.Destination]*coverage.RangeSet{}
	for d, set := range all {
		if bySink[d.Sink] == nil {
			bySink[d.Sink] = map[coverage.Destination]*coverage.RangeSet{}
		}
		bySink[d.Sink][d] = set
	}
	limit := rate.NewLimiter(rate.Limit(opts.MaxChecksPerSecond), 1)
	rep := Report{Seed: opts.Seed, Sample: opts.Sample, MaxBatchesPerCheck: opts.MaxBatchesPerCheck,
		Checked: []Checked{}, Absent: []Row{}, committed: all, asked: map[coverage.Destination]*coverage.RangeSet{}}
	for _, sink := range sinks {
		cov := bySink[sink]
		if len(cov) == 0 {
			err := &NoCoverageError{Sink: sink, Sinks: slices.Sorted(maps.Keys(bySink))}
			opts.Logger.Warn("reconcile: sink has no committed coverage", "sink", sink, "err", err)
			rep.Checked = append(rep.Checked, Checked{Sink: sink, Failed: true})
			rep.Failures = append(rep.Failures, err)
			continue
		}
		rows, checked, failures, err := runSink(ctx, sink, cov, checkers[sink], limit, &opts, rep.asked)
		if err != nil {
			return Report{}, err
		}
		for _, f := range failures {
			opts.Logger.Warn("reconcile: check failed; nothing of the destination is reported absent", "sink", sink, "err", f)
		}
		checked.Failed = len(failures) > 0
		checked.FailedDestinations = len(failures)
		rep.Failures = append(rep.Failures, failures...)
		rep.Checked = append(rep.Checked, checked)
		rep.Absent = append(rep.Absent, rows...)
	}
	return rep, errors.Join(rep.Failures...)
}

// Selected is the sinks a run with Options.Sinks sinks checks, sorted and
// once each: every sink with a checker when sinks is empty. A sink without
// a checker is an error wrapping ErrNoChecker; a command checks this before
// a schedule starts, where Run's refusal would only be logged every run.
func Selected(sinks []string, checkers map[string]Checker) ([]string, error) {
	if len(sinks) == 0 {
		return slices.Sorted(maps.Keys(checkers)), nil
	}
	sinks = slices.Compact(slices.Sorted(slices.Values(sinks)))
	for _, s := range sinks {
		if checkers[s] == nil {
			return nil, fmt.Errorf("reconcile: sink %q %w: configure reconcile.%[1]s.kind and its keys, or leave it out of the sinks", s, ErrNoChecker)
		}
	}
	return sinks, nil
}

// runSink checks each destination of one sink: a destination whose check
// fails is one of failures and adds no rows; the others' rows are kept,
// and what they were asked is put in asked. Only an ended ctx is err.
func runSink(ctx context.Context, sink string, cov map[coverage.Destination]*coverage.RangeSet, c Checker, limit *rate.Limiter, opts *Options, asked map[coverage.Destination]*coverage.RangeSet) (rows []Row, checked Checked, failures []error, err error) {
	checked = Checked{Sink: sink}
	for _, d := range slices.SortedFunc(maps.Keys(cov), compareDest) {
		checked.Destinations++
		absent, dAsked, err := checkDest(ctx, d, cov[d], c, limit, opts, &checked)
		if err != nil {
			if ce := (*CheckError)(nil); errors.As(err, &ce) {
				failures = append(failures, err)
				continue
			}
			return nil, checked, nil, err
		}
		asked[d] = dAsked
		for r := range absent.All() {
			rows = append(rows, Row{Sink: sink, Topic: d.Topic, Partition: d.Partition, Start: r.Start, End: r.End, Kind: KindClaimedAbsent})
		}
	}
	return rows, checked, failures, nil
}

// checkDest asks c about d's committed coverage (its pieces, or a sample of
// them) and returns what it does not hold, and what it was asked. A failed check is a
// *CheckError; an ended ctx, checked after every check so that a checker
// returning a partial answer as ctx ends is never believed, is ctx's error.
func checkDest(ctx context.Context, d coverage.Destination, cov *coverage.RangeSet, c Checker, limit *rate.Limiter, opts *Options, checked *Checked) (absent, asked *coverage.RangeSet, err error) {
	ps, err := newPieceSet(cov.Ranges(), opts.MaxBatchesPerCheck)
	if err != nil {
		return nil, nil, &CheckError{Sink: d.Sink, Destination: d, Ranges: cov.Ranges(), Err: err}
	}
	picked := ps.sample(opts.Sample, rand.New(rand.NewPCG(opts.Seed, destSeed(d))))
	n := ps.total()
	if picked != nil {
		n = uint64(len(picked))
	}
	absent, asked = new(coverage.RangeSet), new(coverage.RangeSet)
	for i := range n {
		p := ps.piece(i)
		if picked != nil {
			p = ps.piece(picked[i])
		}
		if err := limit.Wait(ctx); err != nil {
			return nil, nil, fmt.Errorf("reconcile: sink %q: %w", d.Sink, err)
		}
		held, err := c.Held(ctx, d, []coverage.Range{p})
		if ctx.Err() != nil {
			return nil, nil, fmt.Errorf("reconcile: sink %q: %w", d.Sink, ctx.Err())
		}
		if err == nil && held == nil {
			err = fmt.Errorf("%w: the checker returned no set", ErrBadAnswer)
		}
		if err == nil {
			err = within(held, []coverage.Range{p})
		}
		if err != nil {
			return nil, nil, &CheckError{Sink: d.Sink, Destination: d, Ranges: []coverage.Range{p}, Err: err}
		}
		checked.Checks++
		checked.Batches += p.Len()
		ref, _ := coverage.NewRangeSet(p) // p is valid: a piece of a committed range
		gaps := coverage.Gaps(&ref, held)
		absent.Union(&gaps)
		asked.Union(&ref)
	}
	return absent, asked, nil
}

// destSeed gives each destination its own sample stream of the one seed,
// so adding a destination leaves the others' samples as they were.
func destSeed(d coverage.Destination) uint64 {
	h := fnv.New64a()
	fmt.Fprintf(h, "%s\x00%s\x00%d", d.Sink, d.Topic, d.Partition)
	return h.Sum64()
}
