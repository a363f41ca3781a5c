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
	fs := subFlags(g, "serve", "[--addr "+pod.DefaultAddr+"] [--token-file PATH] [--allow-host NAME]... [--socket PATH] [--interval 30s] [--source NAME=REGIME]... [--sync] [--sinks a,b] [--replicate-every 1m] [--fleet every|elected|never] [--fleet-ttl 30s]")
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
	opts := pod.Options{Tier: g.tier, Addr: set.String("addr"), Socket: set.String("socket"), Interval: interval, MaxBodyBytes: maxBody,
		ReplicateEvery: every, Sources: sources, Sinks: set.List("sinks"), Starts: g.starts, AllowedHosts: set.List("allow-hosts"),
		Sync: set.Bool("sync"), Fleet: fleetMode, FleetTTL: fleetTTL, Logger: g.logger}
	if path := set.String("token-file"); path != "" {
		if opts.Token, err = readToken(path); err != nil {
			return err
		}
	}
	p, err := pod.Start(ctx, opts) // an --addr others reach without a token: exit status 2
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	tcp := p.Addr()
	fmt.Fprintf(g.stdout, "serving http://%s/metrics and http://%s/debug/coverage, the record API at http://%s/v1/", tcp, tcp, tcp)
	if opts.Socket != "" {
		fmt.Fprintf(g.stdout, " and unix:%s", opts.Socket)
	}
	fmt.Fprintf(g.stdout, "; checkpoint every %s\n", interval)
	if err := p.Run(ctx); err != nil { // until SIGTERM
		return fmt.Errorf("serve: %w", err)
	}
	return nil
}

// readToken reads a token file; an unusable one is a usage error.
func readToken(path string) (string, error) { return lite.ReadToken(path) }
