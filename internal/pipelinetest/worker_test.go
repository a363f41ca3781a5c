//go:build integration

package pipelinetest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/covmirror/covmirror/coverage"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

const (
	topic     = "orders"
	rawSink   = coverage.RawSink
	pgSink    = "warehouse" // the PostgreSQL table sink
	cacheSink = "cache"     // the Redis sink
)

// counts are what one seed's run did, for its report line.
type counts struct {
	acked, workerKills, serveKills, redisRestarts        atomic.Int64
	droppedRecords, failedWrites, redeliveries, lostAcks atomic.Int64
}

// pipeline is the pipeline a user wires: JetStream in, raw and the sinks
// out, coverage through serve's record API.
type pipeline struct {
	seed       uint64
	partitions int
	batches    uint64 // per partition, ids 0 to batches-1
	broker     *broker
	pg         *pgStore
	cache      *redisSink
	redis      *redisProc
	serve      *serveProc
	n          counts

	mu       sync.Mutex                     // guards answered
	answered map[destKey]*coverage.RangeSet // every batch a record call got a 200 for
}

// The steps of one message at which a worker may be killed: before raw's
// write, after it, after raw's record, after the ack, after the warehouse.
const killSteps = 5

// errKilled is a worker's simulated crash: its connection is closed and
// whatever it had not acked is delivered again after ackWait.
var errKilled = errors.New("worker killed")

// runWorker runs partition p's worker until stop is closed, starting a new
// incarnation after each kill. It returns only an unexpected failure.
func (pl *pipeline) runWorker(ctx context.Context, p int32, rng *rand.Rand, stop <-chan struct{}) error {
	for {
		err := pl.work(ctx, p, rng, stop)
		if !errors.Is(err, errKilled) {
			return err
		}
		pl.n.workerKills.Add(1)
		time.Sleep(time.Duration(rng.IntN(100)) * time.Millisecond)
	}
}

// work is one incarnation of a worker: its own connection and consumer
// handle, messages one at a time.
func (pl *pipeline) work(ctx context.Context, p int32, rng *rand.Rand, stop <-chan struct{}) error {
	nc, js, err := pl.broker.connect()
	if err != nil {
		return err
	}
	defer nc.Close()
	cons, err := js.Consumer(ctx, streamName, consumerName(p))
	if err != nil {
		return fmt.Errorf("partition %d: consumer: %w", p, err)
	}
	for {
		select {
		case <-stop:
			return nil
		default:
		}
		msgs, err := cons.Fetch(1, jetstream.FetchMaxWait(300*time.Millisecond))
		if err != nil {
			return fmt.Errorf("partition %d: fetch: %w", p, err)
		}
		for msg := range msgs.Messages() {
			killAt := -1
			if rng.IntN(25) == 0 {
				killAt = rng.IntN(killSteps)
			}
			if err := pl.process(ctx, p, msg, killAt); err != nil {
				return err
			}
		}
		if err := msgs.Error(); err != nil && !errors.Is(err, nats.ErrTimeout) && !errors.Is(err, jetstream.ErrNoMessages) {
			return fmt.Errorf("partition %d: fetch: %w", p, err)
		}
	}
}

// process is the pipeline's work for one message: raw (an idempotent
// upsert), raw's coverage, the ack (only once raw is durable), then each
// sink and its coverage. A record call that fails is dropped (a lag); a
// sink write that fails is not recorded (a gap) and the worker moves on.
// killAt is the step at which this incarnation dies, or -1.
func (pl *pipeline) process(ctx context.Context, p int32, msg jetstream.Msg, killAt int) error {
	if msg.Subject() != subject(p) {
		return fmt.Errorf("partition %d: a message of %s", p, msg.Subject())
	}
	batch, err := batchOf(msg.Headers())
	if err != nil {
		return err
	}
	if md, err := msg.Metadata(); err == nil && md.NumDelivered > 1 {
		pl.n.redeliveries.Add(1)
	}
	data := string(msg.Data())
	if killAt == 0 {
		return errKilled
	}
	if err := pl.pg.write(ctx, rawSink, p, batch, data); err != nil {
		// Not durable in raw: no ack, so the broker delivers it again.
		return fmt.Errorf("partition %d: %w", p, err)
	}
	if killAt == 1 {
		return errKilled
	}
	pl.recordOrDrop(ctx, rawSink, p, batch)
	if killAt == 2 {
		return errKilled
	}
	actx, cancel := context.WithTimeout(ctx, 5*time.Second)
	if err := msg.DoubleAck(actx); err != nil {
		pl.n.lostAcks.Add(1) // delivered again; raw's upsert and the records absorb it
	} else {
		pl.n.acked.Add(1)
	}
	cancel()
	if killAt == 3 {
		return errKilled
	}
	if err := pl.pg.write(ctx, pgSink, p, batch, data); err != nil {
		pl.n.failedWrites.Add(1)
	} else {
		pl.recordOrDrop(ctx, pgSink, p, batch)
	}
	if killAt == 4 {
		return errKilled
	}
	if err := pl.cache.write(ctx, p, batch, data); err != nil {
		pl.n.failedWrites.Add(1)
	} else {
		pl.recordOrDrop(ctx, cacheSink, p, batch)
	}
	return nil
}

// recordOrDrop records one batch of sink after its write returned; a
// failed call (serve down or killed mid-call) is dropped, as a pipeline
// that does not block on covmirror drops it: a lag recovery must find.
func (pl *pipeline) recordOrDrop(ctx context.Context, sink string, p int32, batch uint64) {
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := pl.record(rctx, recordEntry{Sink: sink, Topic: topic, Partition: p, Start: batch, End: batch + 1}); err != nil {
		pl.n.droppedRecords.Add(1)
	}
}

// record records entries through serve and keeps, after a 200, what it
// recorded: a 200 promises the records survive a SIGKILL of serve.
func (pl *pipeline) record(ctx context.Context, entries ...recordEntry) error {
	if err := pl.serve.record(ctx, entries...); err != nil {
		return err
	}
	pl.mu.Lock()
	defer pl.mu.Unlock()
	if pl.answered == nil {
		pl.answered = map[destKey]*coverage.RangeSet{}
	}
	for _, e := range entries {
		k := destKey{e.Sink, e.Partition}
		if pl.answered[k] == nil {
			pl.answered[k] = &coverage.RangeSet{}
		}
		if err := pl.answered[k].Add(coverage.Range{Start: e.Start, End: e.End}); err != nil {
			return err
		}
	}
	return nil
}

// produce publishes every batch of every partition, interleaved.
func (pl *pipeline) produce(ctx context.Context) error {
	for b := range pl.batches {
		for p := range int32(pl.partitions) {
			if err := pl.broker.publish(ctx, p, b); err != nil {
				return fmt.Errorf("publish %s/%d/%d: %w", topic, p, b, err)
			}
		}
	}
	return nil
}

// chaos kills serve (SIGKILL, restarted on the same --state after a
// pause) and Redis (SIGKILL, restarted on its append-only file) when the
// broker has acked a seeded number of batches; its last event kills
// both a few batches before the end of the stream and leaves them down
// until the broker has every message acked, so the stream's tail is in
// raw and acked while no coverage of it was recorded.
func (pl *pipeline) chaos(ctx context.Context, rng *rand.Rand, done <-chan struct{}) error {
	total := int64(pl.partitions) * int64(pl.batches)
	type event struct {
		at    int64
		serve bool
		down  time.Duration
	}
	var events []event
	for range 3 + rng.IntN(2) {
		events = append(events, event{at: total/10 + rng.Int64N(total*3/4), serve: true, down: time.Duration(rng.IntN(400)) * time.Millisecond})
	}
	for range 2 {
		events = append(events, event{at: total/10 + rng.Int64N(total*3/4), down: time.Duration(200+rng.IntN(800)) * time.Millisecond})
	}
	finalAt := total - 2 - rng.Int64N(10)
	for {
		next := -1
		for i, e := range events {
			if next < 0 || e.at < events[next].at {
				next = i
			}
		}
		at := finalAt
		if next >= 0 {
			at = events[next].at
		}
		for pl.n.acked.Load() < at {
			select {
			case <-done:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(5 * time.Millisecond):
			}
		}
		if next < 0 {
			pl.n.serveKills.Add(1)
			pl.n.redisRestarts.Add(1)
			return errors.Join(pl.serve.kill(), pl.redis.kill())
		}
		e := events[next]
		events = append(events[:next], events[next+1:]...)
		if e.serve {
			pl.n.serveKills.Add(1)
			if err := pl.serve.kill(); err != nil {
				return err
			}
			time.Sleep(e.down)
			if err := pl.serve.start(); err != nil {
				return err
			}
			continue
		}
		pl.n.redisRestarts.Add(1)
		if err := pl.redis.kill(); err != nil {
			return err
		}
		time.Sleep(e.down)
		if err := pl.redis.start(); err != nil {
			return err
		}
	}
}
