package reconcile

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/recovery"
)

// ErrClaimedAbsent: a reconcile found batches committed coverage claims
// that a sink does not hold.
var ErrClaimedAbsent = errors.New("coverage claims batches the sink does not hold")

// Verdict is a run's outcome as one error: nil for a clean report; else
// what was claimed but absent (wrapping ErrClaimedAbsent, and saying what
// to do) joined with runErr, Run's error (the failed checks).
func Verdict(rep Report, runErr error) error {
	if len(rep.Absent) == 0 {
		return runErr
	}
	var batches uint64
	var sinks []string
	for _, r := range rep.Absent {
		batches += r.End - r.Start
		if !slices.Contains(sinks, r.Sink) {
			sinks = append(sinks, r.Sink)
		}
	}
	absent := fmt.Errorf("%w: %d ranges (%d batches) of the sinks %s: a sink lost data after acknowledging it; replay them (reconcile --tasks prints the recovery worker's tasks) and find what removed them (a restore, a truncation, a lifecycle rule)",
		ErrClaimedAbsent, len(rep.Absent), batches, coverage.Names(sinks))
	return errors.Join(absent, runErr)
}

// Summary is one run as a JSON line: the report, its failures' messages,
// and when it ran.
type Summary struct {
	At time.Time `json:"at"`
	Report
	Failures []string `json:"failures"`
	Seconds  float64  `json:"seconds"`
}

// WriteJSON writes the run that began at start as one JSON line.
func WriteJSON(w io.Writer, rep Report, start time.Time) error {
	s := Summary{At: start.UTC(), Report: rep, Failures: []string{}, Seconds: time.Since(start).Seconds()}
	for _, f := range rep.Failures {
		s.Failures = append(s.Failures, f.Error())
	}
	return json.NewEncoder(w).Encode(s)
}

// WriteText writes the report for a reader: a line per claimed-absent
// range, a line per sink checked, and the seed that repeats the sample.
func WriteText(w io.Writer, rep Report) {
	for _, r := range rep.Absent {
		// Destination's form quotes a name a terminal would act on, or
		// that would make sink/topic/partition ambiguous.
		d := coverage.Destination{Sink: r.Sink, Topic: r.Topic, Partition: r.Partition}
		fmt.Fprintf(w, "%s [%d,%d) claimed but absent: %d batches\n", d, r.Start, r.End, r.End-r.Start)
	}
	for _, c := range rep.Checked {
		fmt.Fprintf(w, "sink %q: %d destinations, %d checks, %d batches checked", c.Sink, c.Destinations, c.Checks, c.Batches)
		switch {
		case c.Failed && c.FailedDestinations == 0:
			fmt.Fprint(w, "; no committed coverage to check (below)")
		case c.Failed:
			fmt.Fprintf(w, "; %d destinations failed (nothing of them is reported absent)", c.FailedDestinations)
		}
		fmt.Fprintln(w)
	}
	if len(rep.Absent) == 0 && len(rep.Failures) == 0 {
		fmt.Fprintln(w, "no claimed-absent batches: every sink holds what its committed coverage claims, of what was checked")
	}
	WriteSeed(w, rep)
}

// WriteSeed writes the line that says how to repeat the run's sample.
func WriteSeed(w io.Writer, rep Report) {
	if rep.Sample == 0 {
		fmt.Fprintln(w, "full check: no sample")
		return
	}
	fmt.Fprintf(w, "sampled %d pieces per destination with seed %d: --seed %d --sample %d --max-batches-per-check %d asks the same pieces of the same coverage\n",
		rep.Sample, rep.Seed, rep.Seed, rep.Sample, rep.MaxBatchesPerCheck)
}

// The formats a Job prints a run in.
const (
	FormatText  = "text"  // WriteText
	FormatJSON  = "json"  // WriteJSON
	FormatTasks = "tasks" // the tasks' rows as one JSON array, the report as text on Stderr
)

// Job is one reconcile as a command runs it, once or on a schedule: Run,
// the metrics, the output and the verdict.
type Job struct {
	Tier     durable.Tier
	Checkers map[string]Checker
	Options  Options
	// Metrics, when given, observes every run.
	Metrics *Metrics
	// Format is FormatText, FormatJSON or FormatTasks; zero: FormatText.
	Format string
	// Reference is what FormatTasks's replays read from; zero:
	// coverage.RawSink.
	Reference      string
	Stdout, Stderr io.Writer
}

// Once runs one reconcile and prints it; its error is the Verdict, or
// Run's error when nothing was checked.
func (j *Job) Once(ctx context.Context) error {
	start := time.Now()
	rep, err := Run(ctx, j.Tier, j.Checkers, j.Options)
	if j.Metrics != nil && ctx.Err() == nil { // a run cut by shutdown is no failed run
		j.Metrics.Observe(rep, err, time.Now())
	}
	if rep.Checked == nil {
		return err // nothing was checked
	}
	switch j.Format {
	case FormatJSON:
		err = errors.Join(WriteJSON(j.Stdout, rep, start), err)
	case FormatTasks:
		WriteText(j.Stderr, rep)
		err = errors.Join(json.NewEncoder(j.Stdout).Encode(recovery.GapsOf(Tasks(rep, j.Reference, 0), recovery.GapsFilter{})), err)
		if ref := cmp.Or(j.Reference, coverage.RawSink); len(rep.Absent) > 0 && !rep.covers(ref) {
			// Tasks clipped every replay to nothing: say so, or the
			// recovery worker is handed an empty list in silence.
			err = errors.Join(fmt.Errorf("reconcile: the reference %q %w, so no replay could be planned from it: name the sink replays read from (--reference; raw by default)", ref, ErrNoCoverage), err)
		}
	default:
		WriteText(j.Stdout, rep)
	}
	return Verdict(rep, err)
}
