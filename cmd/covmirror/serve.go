package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/internal/lite"
	"github.com/covmirror/covmirror/pod"
)

// runServe parses serve's settings and runs the pod (package pod) until
// SIGTERM.
func runServe(ctx context.Context, g *globals, args []string) error {
	fs := subFlags(g, "serve", "[--addr "+pod.DefaultAddr+"] [--token-file PATH] [--allow-host NAME]... [--socket PATH] [--metrics-listen "+pod.DefaultMetricsAddr+"] [--metrics-token-file PATH] [--metrics-on-api] [--interval 30s] [--source NAME=REGIME]... [--sync] [--sinks a,b] [--replicate-every 1m] [--fleet every|elected|never] [--fleet-ttl 30s]")
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := g.set.Err(); err != nil {
		return usageError{Err: fmt.Errorf("serve: %w", err)}
	}
	set := g.set
	interval, maxBody, every := set.Duration("interval"), set.Int64("max-body"), set.Duration("replicate-every")
	if interval <= 0 || maxBody <= 0 || every < 0 {
		return usageError{Err: errors.New("serve: --interval and --max-body must be positive, --replicate-every not negative")}
	}
	readyAge := set.Duration("ready.max-checkpoint-age")
	if readyAge < 0 {
		return usageError{Err: errors.New("serve: --ready-max-checkpoint-age must not be negative (0s: three checkpoint intervals)")}
	}
	if every == 0 {
		every = pod.Never
	}
	fleetMode, fleetTTL := set.String("fleet"), set.Duration("fleet-ttl")
	if err := pod.ParseFleet(fleetMode); err != nil {
		return usageError{Err: fmt.Errorf("serve: --%w", err)}
	}
	if fleetTTL <= 0 {
		return usageError{Err: errors.New("serve: --fleet-ttl must be positive")}
	}
	sources, err := coverage.ParseSources(set.Map("source"))
	if err != nil {
		return usageError{Err: fmt.Errorf("serve: %w", err)}
	}
	topicSinks, err := lite.TopicSinks(set.Map("topic-sinks"))
	if err != nil {
		return usageError{Err: fmt.Errorf("serve: --topic-sinks: %w", err)}
	}
	opts := pod.Options{Tier: g.tier, Addr: set.String("addr"), Socket: set.String("socket"), Interval: interval, MaxBodyBytes: maxBody,
		ReplicateEvery: every, Sources: sources, Sinks: set.List("sinks"), TopicSinks: topicSinks, Starts: g.starts, AllowedHosts: set.List("allow-hosts"),
		Sync: set.Bool("sync"), Fleet: fleetMode, FleetTTL: fleetTTL, Logger: g.logger,
		MetricsAddr: set.String("metrics.listen"), MetricsOnAPI: set.Bool("metrics.on-api"), ReadyMaxCheckpointAge: readyAge}
	if path := set.String("token-file"); path != "" {
		if opts.Token, err = readToken(path); err != nil {
			return err
		}
	}
	if path := set.String("metrics.token-file"); path != "" {
		if opts.MetricsToken, err = readToken(path); err != nil {
			return err
		}
		if opts.MetricsAddr == "" {
			return usageError{Err: errors.New("serve: --metrics-token-file without --metrics-listen: the token is for the metrics listener's /metrics")}
		}
		if opts.MetricsToken == opts.Token {
			return usageError{Err: errors.New("serve: --metrics-token-file holds the record API's token (--token-file): give the metrics listener a token of its own, so that whoever scrapes the metrics cannot record coverage")}
		}
	}
	p, err := pod.Start(ctx, opts) // an --addr others reach without a token: exit status 2
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	fmt.Fprintln(g.stdout, p.Banner()) // the record API's base first, then the coverage map's URL
	if err := p.Run(ctx); err != nil { // until SIGTERM
		return fmt.Errorf("serve: %w", err)
	}
	return nil
}

// readToken reads a token file; an unusable one is a usage error.
func readToken(path string) (string, error) { return lite.ReadToken(path) }
