package fleetbench

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/internal/catalogtest"
	"github.com/covmirror/covmirror/internal/fleetsim"
	"github.com/covmirror/covmirror/object"
	"github.com/covmirror/covmirror/postgres"
)

// A scenario is one tier at one pod count and interval.
type scenario struct {
	name string
	// about says, for the report, what runs and why at this size.
	about string
	// realTime runs outside a synctest bubble (a real server).
	realTime bool
	// setup fills in the tier (OpenTier, Stats, Compactor) of o for the
	// test, registering cleanups with t.
	setup func(t *testing.T, o *fleetsim.Options)
	opts  fleetsim.Options
}

// fullShare is a pod's share of the fleet's partitions at 500 pods: the
// pod-count baselines own what one pod of the full fleet owns.
const fullShare = fleetsim.DefaultTopics * fleetsim.DefaultPartitionsPerTopic / fleetsim.DefaultPods

// The tier under test is a parameter of each scenario: a new write path
// (the object tier's per-pod checkpoint objects, folded by one compactor)
// is a new setup, its fold the Compactor, beside these. Today's object
// tier runs at 1, 16 and 64 pods, not 500: every pod rewrites all five
// sink objects, each holding every partition's ranges, so each handle
// caches five objects of the whole fleet (gigabytes at 500 pods), and one
// object takes one write per read-to-write window (about 8 a second over
// simulated S3) against the 50 to 500 a second 500 pods offer.
var scenarios = []scenario{
	{name: "object-N=1-1s", about: "baseline: one pod on today's object tier (one object per sink) over simulated S3",
		setup: objectTier(fleetsim.S3Options{}), opts: fleetsim.Options{Pods: 1, PartitionsPerPod: fullShare, Rounds: 60}},
	{name: "object-zero-N=16-1s", about: "today's object tier, S3 without latency: BenchmarkPodsOneTable's object baseline",
		setup: objectTier(fleetsim.S3Options{NoLatency: true}), opts: fleetsim.Options{Pods: 16, PartitionsPerPod: fullShare, Rounds: 10}},
	{name: "object-N=16-1s", about: "today's object tier at a pod count it finishes: every pod rewrites all 5 sink objects",
		setup: objectTier(fleetsim.S3Options{}), opts: fleetsim.Options{Pods: 16, PartitionsPerPod: fullShare, Rounds: 30}},
	{name: "object-N=64-10s", about: "today's object tier, 64 pods at 10 s",
		setup: objectTier(fleetsim.S3Options{}), opts: fleetsim.Options{Pods: 64, PartitionsPerPod: fullShare, Interval: 10 * time.Second, Rounds: 6}},
	{name: "deltas-N=500-1s", about: "the object tier's deltas layout: a write-once object per checkpoint, folded every second by one folder that commits the table every 10 s",
		setup: deltasTier(fleetsim.S3Options{}), opts: fleetsim.Options{Pods: 500, Rounds: 20, CompactEvery: time.Second}},
	{name: "deltas-N=500-10s", about: "the deltas layout, 500 pods at 10 s, folded every 10 s",
		setup: deltasTier(fleetsim.S3Options{}), opts: fleetsim.Options{Pods: 500, Interval: 10 * time.Second, Rounds: 6, CompactEvery: 10 * time.Second}},
	{name: "deltas-N=1000-10s", about: "the deltas layout, 1,000 pods at 10 s, folded every 10 s",
		setup: deltasTier(fleetsim.S3Options{}), opts: fleetsim.Options{Pods: 1000, Interval: 10 * time.Second, Rounds: 6, CompactEvery: 10 * time.Second}},
	{name: "table-N=500-1s", about: "the coverage table as primary (simulated catalog commit), 500 pods at 1 s",
		setup: catalogTable, opts: fleetsim.Options{Pods: 500, Rounds: 30}},
	{name: "table-N=500-10s", about: "the coverage table as primary (simulated catalog commit), 500 pods at 10 s",
		setup: catalogTable, opts: fleetsim.Options{Pods: 500, Interval: 10 * time.Second, Rounds: 6}},
	{name: "table-N=1000-10s", about: "the coverage table as primary, 1,000 pods at 10 s",
		setup: catalogTable, opts: fleetsim.Options{Pods: 1000, Interval: 10 * time.Second, Rounds: 6}},
	{name: "postgres-N=500-1s", about: "PostgreSQL for real (127.0.0.1:5432), real time: 500 pods at 1 s over 8 pools of 4 connections", realTime: true,
		setup: postgresTier, opts: fleetsim.Options{Pods: 500, Rounds: 5}},
	{name: "postgres-N=1000-10s", about: "PostgreSQL for real, real time: 1,000 pods at 10 s over 8 pools of 4 connections", realTime: true,
		setup: postgresTier, opts: fleetsim.Options{Pods: 1000, Interval: 10 * time.Second, Rounds: 3}},
	{name: "postgres-N=500-10s", about: "PostgreSQL for real (127.0.0.1:5432), real time: 500 pods over 8 pools of 4 connections", realTime: true,
		setup: postgresTier, opts: fleetsim.Options{Pods: 500, Interval: 10 * time.Second, Rounds: 3}},
	{name: "pgdeltas-N=500-1s", about: "PostgreSQL's deltas layout for real, real time: a row of the blobs table per checkpoint, folded every second by one folder", realTime: true,
		setup: postgresDeltas, opts: fleetsim.Options{Pods: 500, Rounds: 10, CompactEvery: time.Second}},
	{name: "pgdeltas-N=500-1s-fold10s", about: "PostgreSQL's deltas layout for real, real time: 500 pods at 1 s, folded every 10 s", realTime: true,
		setup: postgresDeltas, opts: fleetsim.Options{Pods: 500, Rounds: 20, CompactEvery: 10 * time.Second}},
	{name: "pgdeltas-N=1000-10s", about: "PostgreSQL's deltas layout for real, real time: 1,000 pods at 10 s, folded every 10 s", realTime: true,
		setup: postgresDeltas, opts: fleetsim.Options{Pods: 1000, Interval: 10 * time.Second, Rounds: 3, CompactEvery: 10 * time.Second}},
	{name: "pgdeltas-N=500-10s", about: "PostgreSQL's deltas layout for real, real time: 500 pods at 10 s, folded every 10 s", realTime: true,
		setup: postgresDeltas, opts: fleetsim.Options{Pods: 500, Interval: 10 * time.Second, Rounds: 3, CompactEvery: 10 * time.Second}},
}

// objectTier is today's object tier over one simulated bucket, a handle
// per pod as separate processes have.
func objectTier(s3 fleetsim.S3Options) func(t *testing.T, o *fleetsim.Options) {
	return func(t *testing.T, o *fleetsim.Options) {
		s3.Seed = o.Seed
		s, err := fleetsim.NewS3(s3)
		if err != nil {
			t.Fatal(err)
		}
		o.OpenTier = func(ctx context.Context, _ int) (durable.Tier, error) {
			return object.Open(ctx, object.Options{Blobs: s})
		}
		o.Stats = fleetsim.S3Counters(s)
	}
}

// commitEvery is how often the committer commits the table: once per
// interval of the replica job it stands for.
const commitEvery = 10 * time.Second

// deltasTier is the object tier's deltas layout over one simulated bucket,
// a handle per pod. The compactor is the fleet role's work: a fold each
// run, and at most every commitEvery the table's one committer, which reads the
// folded primary and commits it to the simulated catalog in one commit
// (the replica job). Extra reports the folds and the table's commits.
func deltasTier(s3 fleetsim.S3Options) func(t *testing.T, o *fleetsim.Options) {
	return func(t *testing.T, o *fleetsim.Options) {
		s3.Seed = o.Seed
		s, err := fleetsim.NewS3(s3)
		if err != nil {
			t.Fatal(err)
		}
		o.OpenTier = func(ctx context.Context, _ int) (durable.Tier, error) {
			return object.Open(ctx, object.Options{Blobs: s, Layout: object.LayoutDeltas})
		}
		o.Stats = fleetsim.S3Counters(s)
		// The folder writes many bases at once: S3 takes far more
		// requests in parallel than one key's window allows in series.
		folder, err := object.Open(context.Background(), object.Options{Blobs: s, Layout: object.LayoutDeltas, Parallel: 64})
		if err != nil {
			t.Fatal(err)
		}
		table, err := fleetsim.NewCatalog(fleetsim.CatalogOptions{Inner: fleetsim.NewMemTier(), Seed: o.Seed})
		if err != nil {
			t.Fatal(err)
		}
		var runs, commits int
		var last time.Time
		o.Compactor = func(ctx context.Context) error {
			runs++
			if _, err := folder.Fold(ctx); err != nil {
				return err
			}
			if time.Since(last) < commitEvery {
				return nil
			}
			last = time.Now()
			all, err := folder.Coverage(ctx, durable.Filter{})
			if err != nil {
				return err
			}
			c := durable.Checkpoint{Writer: "committer", Name: fmt.Sprintf("commit-%d", runs)}
			for d, set := range all {
				c.Ranges = append(c.Ranges, coverage.DestinationRanges{Destination: d, Ranges: set.Ranges()})
			}
			if err := table.Append(ctx, c); err != nil {
				return err
			}
			commits++
			return nil
		}
		o.Extra = func() map[string]float64 {
			return map[string]float64{"folds": float64(runs), "table-commits": float64(commits)}
		}
	}
}

// catalogTable is one coverage table whose commits are the simulated
// catalog's pointer swaps; every pod commits to it.
func catalogTable(t *testing.T, o *fleetsim.Options) {
	c, err := fleetsim.NewCatalog(fleetsim.CatalogOptions{Inner: fleetsim.NewMemTier(), Seed: o.Seed})
	if err != nil {
		t.Fatal(err)
	}
	o.OpenTier = func(context.Context, int) (durable.Tier, error) { return c, nil }
	o.Stats = fleetsim.CatalogCounters(c)
}

// postgresPools is how many postgres.Tier handles (each a pool of pgx's
// default size) the pods share: a handle per pod would pass the server's
// max_connections at this pod count.
const postgresPools = 8

// postgresTier is the PostgreSQL tier in a fresh schema, dropped after.
func postgresTier(t *testing.T, o *fleetsim.Options) { postgresLayout(t, o, postgres.LayoutRows) }

// postgresDeltas is the PostgreSQL tier's deltas layout in a fresh schema:
// the pods' handles as postgresTier's, and the fleet role's fold job on a
// handle of its own, as the elected pod's process has.
func postgresDeltas(t *testing.T, o *fleetsim.Options) {
	tiers := postgresLayout(t, o, postgres.LayoutDeltas)
	folder := tiers[len(tiers)-1]
	var runs int
	var res object.FoldResult
	var lag, maxLag time.Duration
	o.Compactor = func(ctx context.Context) error {
		runs++
		start := time.Now()
		r, err := folder.FoldDeltas(ctx)
		res.Deltas, res.Bases, res.Left = res.Deltas+r.Deltas, res.Bases+r.Bases, res.Left+r.Left
		took := time.Since(start)
		lag += took
		maxLag = max(maxLag, took)
		return err
	}
	stats := o.Stats
	o.Stats = func() fleetsim.Counters {
		c := stats()
		for _, tier := range tiers {
			s := tier.Blobs().Stats()
			c.Requests += s.Gets + s.Puts + s.Lists + s.Deletes
			c.BytesWritten += s.BytesIn
			c.BytesRead += s.BytesOut
		}
		return c
	}
	o.Extra = func() map[string]float64 {
		mean := 0.0
		if runs > 0 {
			mean = lag.Seconds() / float64(runs)
		}
		// What the pods' handles wrote (their deltas), apart from the
		// folder's bases: a checkpoint's own bytes.
		var podPuts, podBytes int64
		for _, tier := range tiers[:postgresPools] {
			s := tier.Blobs().Stats()
			podPuts, podBytes = podPuts+s.Puts, podBytes+s.BytesIn
		}
		perDelta := 0.0
		if podPuts > 0 {
			perDelta = float64(podBytes) / float64(podPuts)
		}
		return map[string]float64{"folds": float64(runs), "deltas-folded": float64(res.Deltas), "bases-written": float64(res.Bases),
			"fold-mean-s": mean, "fold-max-s": maxLag.Seconds(), "delta-B": perDelta}
	}
}

// postgresLayout opens the handles of the PostgreSQL tier in layout on a
// fresh schema, dropped after: postgresPools for the pods, one for the
// final check's reader and one for a folder.
func postgresLayout(t *testing.T, o *fleetsim.Options, layout postgres.Layout) []*postgres.Tier {
	ctx := context.Background()
	admin, err := pgxpool.New(ctx, catalogtest.PostgresURL())
	if err == nil {
		err = admin.Ping(ctx)
	}
	if err != nil {
		t.Fatal(catalogtest.Unreachable(err))
	}
	schema := catalogtest.Namespace()
	t.Cleanup(func() {
		if _, err := admin.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE"); err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
		admin.Close()
	})
	tiers := make([]*postgres.Tier, postgresPools+2) // then the final check's reader, and a folder
	for i := range tiers {
		if tiers[i], err = postgres.Open(ctx, postgres.Options{URL: catalogtest.PostgresURL(), Schema: schema, Layout: layout}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(tiers[i].Close)
	}
	o.OpenTier = func(_ context.Context, pod int) (durable.Tier, error) {
		if pod < 0 {
			return tiers[postgresPools], nil
		}
		return tiers[pod%postgresPools], nil
	}
	o.Stats = func() fleetsim.Counters {
		var retries int64
		for _, tier := range tiers {
			retries += tier.Retries()
		}
		return fleetsim.Counters{LostRaces: retries}
	}
	return tiers
}

func find(name string) (scenario, error) {
	for _, s := range scenarios {
		if s.name == name {
			return s, nil
		}
	}
	return scenario{}, fmt.Errorf("no scenario %q", name)
}
