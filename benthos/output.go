package benthos

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/internal/redact"
	"github.com/covmirror/covmirror/sidecar/client"
)

// OutputName is the covmirror output's name in a stream's config.
const OutputName = "covmirror"

// The output's metrics, each by sink.
const (
	metricRecorded      = "covmirror_recorded_batches"
	metricWriteFailures = "covmirror_write_failures"
	metricNotRecorded   = "covmirror_unrecorded_batches"
	metricRefused       = "covmirror_refused_batches"
)

// DefaultTimeout is the output's timeout by default: how long a sink
// other than raw may take over a write before it counts as failed.
const DefaultTimeout = time.Minute

// OutputSpec is the covmirror output's config spec.
func OutputSpec() *service.ConfigSpec {
	return service.NewConfigSpec().
		Beta().
		Categories("Utility").
		Summary("Writes each batch through a child output (one sink) and records covmirror coverage for exactly the messages the child acknowledged.").
		Description(`
Put one `+"`covmirror`"+` output per sink under a `+"`broker`"+`: raw with `+"`reference: true`"+` first (`+"`pattern: fan_out_sequential`"+`), then every other sink without, in a `+"`fan_out`"+` after raw, so that a sink is written only once raw holds the batch. A message's batch is recorded only after the child's write returned, and only when the child acknowledged that message (a batch error's failed messages, and every message of any other error, are not).

A failed write to raw fails the message, so that the source is acknowledged only once raw holds it and its coverage is recorded (the input or the broker delivers it again). A failed write to any other sink is logged, counted (`+"`"+metricWriteFailures+"`"+`) and acknowledged: the source moves on and the missing batches are a gap for recovery (see the `+"`covmirror_plan`"+` input), not a stalled pipeline.

A message's `+"`topic`"+`, `+"`partition`"+` and `+"`batch_id`"+` that do not parse are an error for that message: raw fails it without writing it, any other sink writes it and records nothing (`+"`"+metricNotRecorded+"`"+`). Processors on the child that drop messages make coverage claim them: filter before this output instead. A child that acknowledges a message its sink does not hold is refused: a `+"`fallback`"+` (a dead-letter output's acknowledgement would be the sink's coverage), `+"`drop_on`"+`, and a `+"`switch`"+` that drops what no case matches (set `+"`strict_mode: true`"+` or end with a case without a check).`).
		Fields(
			service.NewInterpolatedStringField("sink").Description("The sink's name in coverage (`raw` for raw).").Examples("raw", "lake", `${! meta("sink") }`),
			service.NewInterpolatedStringField("topic").Description("The message's topic.").Example(`${! meta("kafka_topic") }`),
			service.NewInterpolatedStringField("partition").Description("The message's partition, 0 to 2147483647.").Example(`${! meta("kafka_partition") }`),
			service.NewInterpolatedStringField("batch_id").Description("The message's batch id in its partition, 0 to 9223372036854775806 (a Kafka offset, a sequence number).").Example(`${! meta("kafka_offset") }`),
			service.NewBoolField("reference").Default(false).Description("True for raw: a failed write fails the message (it is delivered again) instead of being acknowledged as a gap. Required for a `sink` of `raw`."),
			service.NewOutputField("output").Description("The sink's output: each batch is written through it, and what it acknowledges is recorded."),
			service.NewDurationField("timeout").Default(DefaultTimeout.String()).
				Description("How long a write to a sink other than raw may take before it counts as failed (a gap, acknowledged), so that a sink that is down or stalled never holds the stream back; `0s`: no limit. A write to raw is never cut short."),
			permanentField(),
			podField(),
			sidecarField(),
			service.NewOutputMaxInFlightField(),
			service.NewBatchPolicyField("batching"),
		)
}

// output is one covmirror output: one sink's child and its recorder.
type output struct {
	sink, topic, partition, batchID *service.InterpolatedString
	reference                       bool
	timeout                         time.Duration
	child                           *service.OwnedOutput
	dest                            destination
	res                             *service.Resources
	log                             logger

	perm                                 permanence
	recorded, writeFailures, notRecorded *service.MetricCounter
	refused                              *service.MetricCounter

	mu     sync.Mutex
	primed bool
	rec    recorder // nil until Connect
	leave  func()   // undoes joinReplays; nil until Connect
}

func newOutput(conf *service.ParsedConfig, res *service.Resources) (service.BatchOutput, service.BatchPolicy, int, error) {
	var batching service.BatchPolicy
	o := &output{res: res, log: logger{res.Logger()}}
	for _, f := range []struct {
		name string
		v    **service.InterpolatedString
	}{{"sink", &o.sink}, {"topic", &o.topic}, {"partition", &o.partition}, {"batch_id", &o.batchID}} {
		v, err := conf.FieldInterpolatedString(f.name)
		if err != nil {
			return nil, batching, 0, err
		}
		*f.v = v
	}
	var err error
	if o.reference, err = conf.FieldBool("reference"); err != nil {
		return nil, batching, 0, err
	}
	if s, ok := o.sink.Static(); ok && s == coverage.RawSink && !o.reference {
		// Acknowledging a failed write to raw would move the source on
		// before raw holds the message.
		return nil, batching, 0, fmt.Errorf("covmirror: sink %q without reference: true: a failed write to raw would be acknowledged and the source move on without it; give reference: true", s)
	}
	if o.timeout, err = conf.FieldDuration("timeout"); err != nil {
		return nil, batching, 0, err
	}
	if o.timeout < 0 {
		return nil, batching, 0, errors.New("covmirror: timeout must not be negative (0s: no limit)")
	}
	if o.perm, err = parsePermanence(conf, o.reference); err != nil {
		return nil, batching, 0, err
	}
	if o.dest, err = parseDestination(conf); err != nil {
		return nil, batching, 0, err
	}
	if s := o.dest.sidecar; s != nil {
		c, err := newClient(*s, nil) // checks the address now: a config error
		if err != nil {
			return nil, batching, 0, err
		}
		_ = c.Close()
	} else if err := checkPod(o.dest.pod); err != nil {
		return nil, batching, 0, err
	}
	maxInFlight, err := conf.FieldMaxInFlight()
	if err != nil {
		return nil, batching, 0, err
	}
	if batching, err = conf.FieldBatchPolicy("batching"); err != nil {
		return nil, batching, 0, err
	}
	childConf, err := conf.FieldAny("output")
	if err != nil {
		return nil, batching, 0, err
	}
	if err := checkChild(childConf, "output"); err != nil {
		return nil, batching, 0, err
	}
	if o.child, err = conf.FieldOutput("output"); err != nil {
		return nil, batching, 0, err
	}
	m := res.Metrics()
	o.recorded, o.writeFailures, o.notRecorded = m.NewCounter(metricRecorded, "sink"), m.NewCounter(metricWriteFailures, "sink"), m.NewCounter(metricNotRecorded, "sink")
	o.refused = m.NewCounter(metricRefused, "sink")
	return o, batching, maxInFlight, nil
}

// Connect primes the child and takes the process's pod (starting it for
// the first output), or connects to the running pod the sidecar names.
func (o *output) Connect(ctx context.Context) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.rec != nil {
		return nil
	}
	if !o.primed {
		// A child never primed never closes: Close would wait for it until
		// the shutdown timeout (a replay of an empty plan writes nothing).
		if err := o.child.Prime(); err != nil {
			return fmt.Errorf("covmirror: starting the sink's output: %w", err)
		}
		o.primed = true
	}
	var rec recorder
	var err error
	if s := o.dest.sidecar; s != nil {
		rec, err = connectSidecar(ctx, *s, newSlog(o.log.l))
	} else {
		rec, err = acquirePod(o.dest.pod, newSlog(o.log.l))
	}
	if err != nil {
		// Benthos logs it as it is: a tier's error may quote a DSN or a
		// catalog's echo of its credentials.
		return redact.Error(err)
	}
	o.rec, o.leave = rec, joinReplays(o.dest)
	return nil
}

// Close closes the child, then gives the pod back: the last output to
// close shuts it down after its final checkpoint.
func (o *output) Close(ctx context.Context) error {
	o.mu.Lock()
	rec := o.rec
	o.rec = nil
	if o.leave != nil {
		o.leave()
		o.leave = nil
	}
	if !o.primed {
		_ = o.child.Prime() // else its Close waits for it until ctx ends
		o.primed = true
	}
	o.mu.Unlock()
	cctx := ctx
	if !o.reference && o.timeout > 0 {
		// A stalled sink's writes still in flight hold its Close too: cut
		// short, they are gaps like any write that timed out.
		var cancel context.CancelFunc
		cctx, cancel = context.WithTimeout(ctx, o.timeout)
		defer cancel()
	}
	err := o.child.Close(cctx)
	if err != nil && cctx.Err() != nil && ctx.Err() == nil {
		o.log.Warnf("covmirror: the sink's output did not close within the timeout (%s); its writes still in flight are not recorded: %v", o.timeout, err)
		err = nil
	}
	if rec != nil {
		err = errors.Join(err, rec.release())
	}
	return err
}

// WriteBatch writes batch through the child and records what it
// acknowledged (doc.go states the rules).
func (o *output) WriteBatch(ctx context.Context, batch service.MessageBatch) error {
	o.mu.Lock()
	rec := o.rec
	o.mu.Unlock()
	if rec == nil {
		return service.ErrNotConnected
	}
	keys := make([]batchKey, len(batch))
	failed := make([]error, len(batch)) // why a message is not recorded
	sub := make(service.MessageBatch, 0, len(batch))
	at := make([]int, 0, len(batch)) // sub's index in batch
	for i, m := range batch {
		keys[i], failed[i] = o.key(m)
		if failed[i] != nil {
			o.notRecorded.Incr(1, keys[i].sinkLabel())
			o.log.Errorf("covmirror: %v", failed[i])
		}
		if err := o.replayRead(m, keys[i], failed[i]); err != nil {
			failed[i] = cmp.Or(failed[i], err)
			continue // a replay's failed read of raw: nothing to write
		}
		if failed[i] != nil && o.reference {
			continue // never written: raw fails it, and it comes again
		}
		sub, at = append(sub, m), append(at, i)
	}
	if len(sub) > 0 {
		wctx := ctx
		if !o.reference && o.timeout > 0 {
			var cancel context.CancelFunc
			wctx, cancel = context.WithTimeout(ctx, o.timeout)
			defer cancel()
		}
		began := time.Now()
		errs, werr := writeThrough(wctx, o.child, sub)
		timedOut := werr != nil && wctx.Err() != nil && ctx.Err() == nil
		if timedOut {
			werr = fmt.Errorf("the write did not finish within the timeout (%s): %w", o.timeout, werr)
		}
		if ctx.Err() == nil {
			o.observePace(batch, len(sub), time.Since(began), timedOut)
		}
		var refused []client.StateEntry
		if !o.reference && werr != nil && !timedOut {
			refused = o.refusals(wctx, sub, at, keys, failed, errs, werr)
		}
		var entries []coverage.Entry
		var ids []int
		unacked := 0
		for j, i := range at {
			switch {
			case errs[j] != nil:
				unacked++
				failed[i] = fmt.Errorf("sink %q did not acknowledge the message: %w", truncate(keys[i].d.Sink), errs[j])
				o.writeFailures.Incr(1, keys[i].sinkLabel())
			case failed[i] == nil:
				entries, ids = append(entries, coverage.Entry{Destination: keys[i].d, Range: coverage.Range{Start: keys[i].id, End: keys[i].id + 1}}), append(ids, i)
			}
		}
		if unacked > 0 && !o.reference {
			if timedOut {
				o.log.Warnf("covmirror: sink %s: %d of %d messages were not acknowledged within the timeout (%s); the sink may hold them: acknowledged, they stay a gap until a replay rewrites them: %v", o.sinkName(batch), unacked, len(sub), o.timeout, werr)
			} else {
				o.log.Warnf("covmirror: sink %s: %d of %d messages were not written; acknowledged, they are a gap for recovery: %v", o.sinkName(batch), unacked, len(sub), werr)
			}
		}
		o.recordRefused(ctx, rec, batch, refused)
		if len(entries) > 0 {
			if err := rec.record(ctx, coalesce(entries)); err != nil {
				err = fmt.Errorf("recording coverage after the sink's acknowledgement: %w", err)
				for _, i := range ids {
					failed[i] = err
					o.notRecorded.Incr(1, keys[i].sinkLabel())
				}
				o.log.Errorf("covmirror: sink %s: %d written messages are not recorded (a gap, replayed later): %v", o.sinkName(batch), len(ids), err)
			} else {
				for _, i := range ids {
					o.recorded.Incr(1, keys[i].sinkLabel())
				}
			}
		}
	}
	if !o.reference {
		return nil // the failures are gaps: acknowledged
	}
	return refFailure(batch, failed)
}

// refFailure is raw's answer: nil when every message is written and
// recorded, else a batch error naming each message that is not.
func refFailure(batch service.MessageBatch, failed []error) error {
	var berr *service.BatchError
	for i, err := range failed {
		if err == nil {
			continue
		}
		// Redacted: Benthos logs the batch error as it is, and a sink's
		// error may quote a credential.
		err = redact.Error(err)
		if berr == nil {
			berr = service.NewBatchError(batch, fmt.Errorf("covmirror: raw: %w", err))
		}
		berr.Failed(i, err)
	}
	if berr == nil {
		return nil
	}
	return berr
}

// sinkName is the batch's sink for a log line, quoted.
func (o *output) sinkName(batch service.MessageBatch) string {
	if s, ok := o.sink.Static(); ok {
		return strconv.Quote(s)
	}
	if len(batch) > 0 {
		if s, err := o.sink.TryString(batch[0]); err == nil {
			// A message's text: quoted and short in a log line.
			return strconv.Quote(truncate(s))
		}
	}
	return "(interpolated)"
}

// writeThrough writes batch through child and says why each message is
// not acknowledged (nil: acknowledged): all nil on nil; on a
// *service.BatchError the error it names for each message (a message it
// does not name, or names twice with one error, is not acknowledged, with
// the batch error); on any other error that error for every message.
func writeThrough(ctx context.Context, child *service.OwnedOutput, batch service.MessageBatch) ([]error, error) {
	idx := batch.Index()
	err := child.WriteBatch(ctx, batch)
	errs := make([]error, len(batch))
	if err == nil {
		return errs, nil
	}
	var berr *service.BatchError
	if !errors.As(err, &berr) {
		for i := range errs {
			errs[i] = err
		}
		return errs, err
	}
	seen := make([]bool, len(batch))
	berr.WalkMessagesIndexedBy(idx, func(i int, _ *service.Message, merr error) bool {
		if i >= 0 && i < len(batch) {
			seen[i] = true
			if merr != nil && errs[i] == nil {
				errs[i] = merr
			}
		}
		return true
	})
	for i := range errs {
		if !seen[i] {
			errs[i] = err
		}
	}
	return errs, err
}
