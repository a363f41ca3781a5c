//go:build integration

package pipelinetest

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/covmirror/covmirror/internal/testseed"
)

var seedFlag = flag.Uint64("seed", 0, "replay one seed of TestPipelineJetStreamPostgresRedis (0: three fresh seeds)")

const (
	seedsPerRun = 3
	partitions  = 3
	batches     = 150 // per partition
)

// TestPipelineJetStreamPostgresRedis runs the pipeline end to end on
// several seeds: NATS JetStream in, raw and the warehouse in PostgreSQL,
// the cache in a Redis, coverage through a real serve; serve, the workers
// and Redis killed mid-stream, then recovery from raw with the broker's
// acked positions. At the end every published batch is in every sink and
// committed coverage is exactly what each sink holds; never, at any check,
// more.
func TestPipelineJetStreamPostgresRedis(t *testing.T) {
	bin := buildCovmirror(t)
	runs := seedsPerRun
	if *seedFlag != 0 {
		runs = 1
	}
	for range runs {
		t.Run("seed", func(t *testing.T) {
			seed := testseed.Seed(t, *seedFlag, "go test -tags integration ./internal/pipelinetest -run TestPipelineJetStreamPostgresRedis -v -seed SEED")
			runPipeline(t, bin, seed)
		})
	}
}

func runPipeline(t *testing.T, bin string, seed uint64) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	rng := rand.New(rand.NewPCG(seed, 0x70697065))
	redis := startRedis(t)
	pl := &pipeline{seed: seed, partitions: partitions, batches: batches,
		broker: startBroker(t, ctx, partitions), pg: openPostgres(t, ctx), redis: redis,
		cache: newRedisSink(redis), serve: newServe(bin, t.TempDir())}
	t.Cleanup(func() { _ = pl.cache.c.Close() })
	// Odd seeds run serve with --sync, even ones with its default, whose
	// 200 may be lost to a SIGKILL within the write-behind's CommitDelay.
	pl.serve.sync = seed%2 == 1
	t.Logf("seed %d: serve --sync %v", seed, pl.serve.sync)
	if err := pl.serve.start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pl.serve.kill() })

	// The stream: producer, one worker per partition, chaos.
	stop, chaosDone := make(chan struct{}), make(chan error, 1)
	var wg sync.WaitGroup
	errs := make(chan error, partitions+1)
	for p := range int32(partitions) {
		wrng := rand.New(rand.NewPCG(seed, uint64(p)+1))
		wg.Go(func() {
			if err := pl.runWorker(ctx, p, wrng, stop); err != nil {
				errs <- err
			}
		})
	}
	go func() { chaosDone <- pl.chaos(ctx, rng, ctx.Done()) }()
	if err := pl.produce(ctx); err != nil {
		t.Fatal(err)
	}
	// Every message acked, and the last event (serve and Redis down over
	// the stream's tail) has happened: stop the workers between messages.
	if err := <-chaosDone; err != nil {
		t.Fatalf("seed %d: %v", seed, err)
	}
	for !pl.allDrained(t, ctx) {
		select {
		case err := <-errs:
			t.Fatalf("seed %d: %v", seed, err)
		case <-ctx.Done():
			t.Fatalf("seed %d: the workers did not get every message acked: %v", seed, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
	close(stop)
	wg.Wait()
	close(errs)
	if err := errors.Join(drain(errs)...); err != nil {
		t.Fatalf("seed %d: %v", seed, err)
	}

	// The pod comes back (Redis on its append-only file, serve on its
	// state) and is stopped: SIGTERM's final checkpoint carries what it
	// had pending. Nothing committed may claim more than a sink holds.
	if err := errors.Join(pl.redis.start(), pl.serve.start()); err != nil {
		t.Fatal(err)
	}
	// A fresh client for the checks and the recovery: the workers' client
	// saw Redis down, and go-redis then answers every call with the last
	// dial error (its pool's circuit breaker) until a probe, once a second,
	// reaches the restarted Redis. The workers are stopped, so nothing else
	// uses the old one.
	_ = pl.cache.c.Close()
	pl.cache = newRedisSink(pl.redis)
	if err := pl.serve.stop(); err != nil {
		t.Fatal(err)
	}
	pl.checkNoLead(t, ctx, "before recovery")
	if pl.serve.sync {
		pl.checkAnsweredKept(t, ctx, "before recovery")
	}

	acked, err := pl.broker.ackedExtents(ctx, partitions)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range acked {
		if e.End != batches {
			t.Fatalf("seed %d: the broker's ack floor of partition %d is batch %d, want every one of %d batches acked", seed, e.Partition, e.End, batches)
		}
	}
	extents, err := json.Marshal(acked)
	if err != nil {
		t.Fatal(err)
	}
	failedBefore := t.Failed()
	rounds := pl.recoverAll(t, ctx, extents)
	pl.checkFinal(t, ctx, extents)
	verdict := "every batch in every sink, committed coverage equal to what each sink holds"
	if t.Failed() && !failedBefore {
		verdict = "FAILED (see above)"
	} else if t.Failed() {
		verdict = "checks before recovery FAILED (see above); " + verdict
	}
	t.Logf("seed %d: published %d batches (%d partitions x %d); serve killed %d times, workers killed %d times, Redis restarted %d times; %d record calls dropped, %d sink writes failed, %d redeliveries, %d acks lost; recovery rounds %d; final check: %s",
		seed, partitions*batches, partitions, batches, pl.n.serveKills.Load(), pl.n.workerKills.Load(), pl.n.redisRestarts.Load(),
		pl.n.droppedRecords.Load(), pl.n.failedWrites.Load(), pl.n.redeliveries.Load(), pl.n.lostAcks.Load(), rounds, verdict)
}

// allDrained is whether the broker has every message of every partition
// acked.
func (pl *pipeline) allDrained(t *testing.T, ctx context.Context) bool {
	t.Helper()
	for p := range int32(pl.partitions) {
		ok, err := pl.broker.drained(ctx, p)
		if err != nil {
			t.Fatalf("seed %d: %v", pl.seed, err)
		}
		if !ok {
			return false
		}
	}
	return true
}

func drain(errs <-chan error) []error {
	var out []error
	for err := range errs {
		out = append(out, err)
	}
	return out
}
