package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/covmirror/covmirror/compaction"
	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/reconcile"
	"github.com/covmirror/covmirror/sidecar"
	"github.com/covmirror/covmirror/tier"
)

// runReconcile composes package reconcile: the checkers from the
// configuration, a Job run once or on a schedule, and its metrics.
func runReconcile(ctx context.Context, g *globals, args []string) error {
	fs := subFlags(g, "reconcile", "[--sink a,b] [--topic T] [--partition P] [--sample N [--seed S]] [--max-checks-per-second R] [--max-batches-per-check N] [--every D [--metrics-addr ADDR]] [--json | --tasks [--reference raw]]")
	var opts reconcile.Options
	fs.Func("sink", "only these sinks, comma-separated (default: every sink with a checker)", func(v string) (err error) { opts.Sinks, err = parseSinks(v); return err })
	fs.StringVar(&opts.Topic, "topic", "", "only this topic")
	var partition partitionFlag
	fs.Var(&partition, "partition", "only this partition, 0 to 2147483647 (default: all)")
	fs.IntVar(&opts.Sample, "sample", 0, "check this many pieces of each destination's coverage, chosen from --seed (0: all of it)")
	fs.Uint64Var(&opts.Seed, "seed", 0, "the sample's seed, printed by every sampled run so that it can be repeated (0: a fresh one; a full check draws none)")
	fs.Float64Var(&opts.MaxChecksPerSecond, "max-checks-per-second", reconcile.DefaultMaxChecksPerSecond, "most checker calls per second, over all sinks")
	fs.Uint64Var(&opts.MaxBatchesPerCheck, "max-batches-per-check", reconcile.DefaultMaxBatchesPerCheck, "most batches one checker call is asked about")
	every := fs.Duration("every", 0, "run as a scheduled job, once per this interval, until SIGTERM; zero: once")
	metricsAddr := fs.String("metrics-addr", "", "with --every: serve /metrics here: PORT (loopback), :PORT (every interface) or HOST:PORT; an address other hosts reach needs --token-file")
	asJSON := fs.Bool("json", false, "print each run as one JSON line: the report, its claimed-absent rows as {sink, topic, partition, start, end, kind}")
	asTasks := fs.Bool("tasks", false, "print the replay tasks as covmirror plan --json does, for the recovery worker (the report goes to stderr)")
	job := reconcile.Job{Format: reconcile.FormatText, Stdout: g.stdout, Stderr: g.stderr}
	fs.StringVar(&job.Reference, "reference", coverage.RawSink, "with --tasks: the sink replays read from")
	if err := parse(fs, args); err != nil {
		return err
	}
	opts.Logger, opts.Partition = g.logger, partition.P
	cfgs, err := reconcile.ParseConfig(g.set.Map(reconcile.ConfigPrefix))
	if err = errors.Join(g.set.Err(), opts.Validate(), err); err == nil && (*every < 0 || opts.MaxBatchesPerCheck == 0 || (*asJSON && *asTasks) || (*metricsAddr != "" && *every == 0)) {
		err = errors.New("reconcile: --every must not be negative, --max-batches-per-check must be positive, --json and --tasks exclude each other, --metrics-addr needs --every")
	} else if err == nil && len(cfgs) == 0 {
		err = errors.New("reconcile: no checker is configured: give reconcile.SINK.kind and its keys in the configuration file (--config)")
	}
	if err != nil {
		return usageError{Err: err}
	}
	primary, closer, err := tier.Open(ctx, g.tier, false)
	if err != nil {
		return err
	}
	defer closer.Close()
	var build reconcile.BuildOptions
	if reconcile.NeedsCatalog(cfgs) {
		if build.Catalog, err = tier.Catalog(ctx, g.tier, primary); err != nil {
			return err
		}
	}
	checkers, err := reconcile.Build(cfgs, build)
	if err != nil {
		return usageError{Err: err}
	}
	defer checkers.Close()
	sinks, err := reconcile.Selected(opts.Sinks, checkers.Checkers) // before a schedule starts
	if err != nil {
		return usageError{Err: err}
	}
	job.Tier, job.Checkers, job.Options, job.Metrics = primary, checkers.Checkers, opts, reconcile.NewMetrics(*every, sinks)
	if *asJSON {
		job.Format = reconcile.FormatJSON
	} else if *asTasks {
		job.Format = reconcile.FormatTasks
	}
	if *every == 0 {
		return job.Once(ctx)
	}
	if *metricsAddr != "" {
		var token string
		if path := g.set.String("token-file"); path != "" {
			if token, err = readToken(path); err != nil {
				return err
			}
		}
		ln, err := sidecar.ListenTCP(*metricsAddr, token != "", g.logger)
		if err != nil {
			return fmt.Errorf("reconcile --metrics-addr: %w", err)
		}
		srv := reconcile.MetricsServer(job.Metrics, token, g.logger)
		go func() { _ = srv.Serve(ln) }()
		defer srv.Close()
		fmt.Fprintf(g.stdout, "serving http://%s/metrics\n", ln.Addr())
	}
	return compaction.RunEvery(ctx, *every, 0.1, g.logger, job.Once) // until SIGTERM
}
