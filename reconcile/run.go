package reconcile

import (
	"cmp"
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
	"github.com/covmirror/covmirror/recovery"
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
	// Failed says the sink's check failed: none of its rows are reported.
	Failed bool `json:"failed"`
}

// Report is one reconcile's outcome.
type Report struct {
	// Seed and Sample replay a sampled run: give them as Options.
	Seed   uint64 `json:"seed"`
	Sample int    `json:"sample"`
	// Checked holds one entry per selected sink, in sink order.
	Checked []Checked `json:"checked"`
	// Absent are the claimed-absent ranges of the sinks whose checks all
	// succeeded, ordered by sink, topic, partition and start.
	Absent []Row `json:"absent"`
	// Failures are the failed sinks' errors (each a *CheckError), in
	// sink order.
	Failures []error `json:"-"`
}

// Run reconciles each selected sink: it reads the sink's committed coverage
// from tier, asks the sink's checker about it (in full, or Options.Sample
// pieces per destination), and reports the ranges claimed but not held. It
// only reads tier. A sink whose check fails contributes no rows; its
// *CheckError is in Report.Failures, and Run returns the report with them
// joined as its error. Any other error (options, the tier, ctx) returns no
// report.
func Run(ctx context.Context, tier durable.Tier, checkers map[string]Checker, opts Options) (Report, error) {
	opts.EnsureDefaults()
	if err := opts.Validate(); err != nil {
		return Report{}, err
	}
	sinks := opts.Sinks
	if len(sinks) == 0 {
		sinks = slices.Sorted(maps.Keys(checkers))
	} else {
		sinks = slices.Clone(sinks)
		slices.Sort(sinks)
		sinks = slices.Compact(sinks)
	}
	for _, s := range sinks {
		if checkers[s] == nil {
			return Report{}, fmt.Errorf("reconcile: sink %q has no checker: give one, or leave it out of the sinks", s)
		}
	}
	limit := rate.NewLimiter(rate.Limit(opts.MaxChecksPerSecond), 1)
	rep := Report{Seed: opts.Seed, Sample: opts.Sample, Checked: []Checked{}, Absent: []Row{}}
	for _, sink := range sinks {
		cov, err := tier.Coverage(ctx, durable.Filter{Sink: sink, Topic: opts.Topic, Partition: opts.Partition})
		if err != nil {
			return Report{}, fmt.Errorf("reconcile: reading sink %q's coverage from %s: %w", sink, tier.Name(), err)
		}
		rows, checked, err := runSink(ctx, sink, cov, checkers[sink], limit, &opts)
		if err != nil {
			var ce *CheckError
			if !errors.As(err, &ce) {
				return Report{}, err
			}
			opts.Logger.Warn("reconcile: check failed; nothing of the sink is reported absent", "sink", sink, "err", err)
			checked.Failed = true
			rep.Failures = append(rep.Failures, err)
			rows = nil
		}
		rep.Checked = append(rep.Checked, checked)
		rep.Absent = append(rep.Absent, rows...)
	}
	return rep, errors.Join(rep.Failures...)
}

func runSink(ctx context.Context, sink string, cov map[coverage.Destination]*coverage.RangeSet, c Checker, limit *rate.Limiter, opts *Options) ([]Row, Checked, error) {
	checked := Checked{Sink: sink}
	dests := slices.SortedFunc(maps.Keys(cov), func(a, b coverage.Destination) int {
		return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
	var rows []Row
	for _, d := range dests {
		checked.Destinations++
		ps := sample(pieces(cov[d].Ranges(), opts.MaxBatchesPerCheck), opts.Sample, rand.New(rand.NewPCG(opts.Seed, destSeed(d))))
		absent := new(coverage.RangeSet)
		for _, p := range ps {
			if err := limit.Wait(ctx); err != nil {
				return nil, checked, fmt.Errorf("reconcile: sink %q: %w", sink, err)
			}
			asked := []coverage.Range{p}
			held, err := c.Held(ctx, d, asked)
			if err == nil && held == nil {
				err = fmt.Errorf("%w: the checker returned no set", ErrBadAnswer)
			}
			if err == nil {
				err = within(held, asked)
			}
			if err != nil {
				if ctx.Err() != nil {
					return nil, checked, fmt.Errorf("reconcile: sink %q: %w", sink, ctx.Err())
				}
				return nil, checked, &CheckError{Sink: sink, Destination: d, Ranges: asked, Err: err}
			}
			checked.Checks++
			checked.Batches += p.Len()
			ref, _ := coverage.NewRangeSet(p) // p is valid: a piece of a committed range
			gaps := coverage.Gaps(&ref, held)
			absent.Union(&gaps)
		}
		for r := range absent.All() {
			rows = append(rows, Row{Sink: sink, Topic: d.Topic, Partition: d.Partition, Start: r.Start, End: r.End, Kind: KindClaimedAbsent})
		}
	}
	return rows, checked, nil
}

// destSeed gives each destination its own sample stream of the one seed,
// so adding a destination leaves the others' samples as they were.
func destSeed(d coverage.Destination) uint64 {
	h := fnv.New64a()
	fmt.Fprintf(h, "%s\x00%s\x00%d", d.Sink, d.Topic, d.Partition)
	return h.Sum64()
}

// Tasks turns a report's claimed-absent rows into recovery tasks for the
// recovery worker (recovery.Recover): a replay (recovery.KindReplay) into
// each sink, which dedup absorbs where the sink did hold the batches. A row
// of the reference sink itself (reference; zero value coverage.RawSink)
// cannot be replayed from the reference: it becomes a
// recovery.KindVerifyReference task. Nothing is retracted.
func Tasks(r Report, reference string) []recovery.Task {
	if reference == "" {
		reference = coverage.RawSink
	}
	out := make([]recovery.Task, 0, len(r.Absent))
	for _, row := range r.Absent {
		kind := recovery.KindReplay
		if row.Sink == reference {
			kind = recovery.KindVerifyReference
		}
		out = append(out, recovery.Task{
			Destination: coverage.Destination{Sink: row.Sink, Topic: row.Topic, Partition: row.Partition},
			Range:       coverage.Range{Start: row.Start, End: row.End},
			Kind:        kind,
		})
	}
	return out
}
