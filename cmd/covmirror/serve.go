package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/gapmetrics"
	"github.com/covmirror/covmirror/iceberg"
	"github.com/covmirror/covmirror/local"
	"github.com/covmirror/covmirror/mirror"
	"github.com/covmirror/covmirror/object"
	"github.com/covmirror/covmirror/postgres"
	"github.com/covmirror/covmirror/replica"
	"github.com/covmirror/covmirror/sidecar"
	"github.com/covmirror/covmirror/sidecar/covmap"
)

func runServe(ctx context.Context, g *globals, args []string) error {
	fs := subFlags(g, "serve", "[--addr 127.0.0.1:9464] [--token-file PATH] [--allow-host NAME]... [--socket PATH] [--interval 30s] [--source NAME=REGIME]... [--sync] [--sinks a,b]")
	addr := fs.String("addr", "127.0.0.1:9464", "TCP listen address for the record API, the coverage map, /metrics and /debug/coverage (loopback by default; another address needs --token-file)")
	socket := fs.String("socket", "", "also serve the record API on a Unix socket at this path (mode 0600; a stale socket file is removed if nothing answers on it)")
	interval := fs.Duration("interval", mirror.DefaultInterval, "checkpoint interval")
	maxBody := fs.Int64("max-body", sidecar.DefaultMaxBodyBytes, "largest request body in bytes")
	mirrorEvery := fs.Duration("mirror-every", time.Minute, "with --durable object or postgres: copy the primary into the coverage table this often, so that the map, the gap metrics and any engine can read it (0: never)")
	flagSources := map[string]string{}
	fs.Func("source", "a source's regime, NAME=stored or NAME=broker-managed, repeatable (env COVMIRROR_SOURCES, comma-separated; config file source.NAME = REGIME): stored sources keep positions through PUT /v1/positions/NAME", func(kv string) error {
		return addSource(flagSources, kv)
	})
	guardFlags := addGuardFlags(fs, g)
	cfg := g.cfg
	if cfg == nil {
		cfg = &config{}
	}
	syncDefault, syncErr := parseBoolSetting("sync", cfg.value("sync", "COVMIRROR_SYNC", ""))
	fs.BoolVar(&g.localSync, "sync", syncDefault, "fsync the local tier's write-ahead log at every commit, so that a 200 survives a power loss too (off: a 200 survives a SIGKILL or OOM kill once its write-behind commit ran, within milliseconds; a power loss costs what was not synced) (env COVMIRROR_SYNC; config file sync)")
	sinks := sinksFlag(fs, cfg.value("sinks", "COVMIRROR_SINKS", ""), "the sinks the pipeline writes every topic to, comma-separated (env COVMIRROR_SINKS; config file sinks): the API, the map and the gap metrics plan their gaps in a topic they have no rows of (one lost on every destination), besides the sinks with rows")
	if err := parse(fs, args); err != nil {
		return err
	}
	if syncErr != nil {
		return usageError{fmt.Errorf("serve: %w", syncErr)}
	}
	if *interval <= 0 || *maxBody <= 0 || *mirrorEvery < 0 {
		return usageError{errors.New("serve: --interval and --max-body must be positive, --mirror-every not negative")}
	}
	sources, err := g.sources(flagSources)
	if err != nil {
		return usageError{fmt.Errorf("serve: %w", err)}
	}
	guard, err := guardFlags.resolve(g, *addr)
	if err != nil {
		return err
	}

	// The coverage table: the primary with --durable iceberg, the primary's
	// mirror with --durable object (the map and the gap metrics read it).
	table, err := g.openTable(ctx)
	if err != nil {
		return err
	}
	tier, closer, err := g.openPrimary(ctx, true)
	if err != nil {
		return err
	}
	defer closer.Close()
	var positions io.Closer
	var posStore coverage.PositionStore
	if slices.ContainsFunc(sources, func(s coverage.Source) bool { return s.Regime == coverage.Stored }) {
		if posStore, positions, err = g.openPositions(ctx, table, sources); err != nil {
			return err
		}
	}
	store, err := g.openLocal()
	if err != nil {
		return err
	}
	// The Mirror logs each failed checkpoint (and its retries) to the
	// logger; the loop itself never stops on one.
	m, err := mirror.New(mirror.Options{Local: store, Durable: tier, Writer: g.writer, Logger: g.logger, Interval: *interval, Positions: posStore})
	if err != nil {
		_ = store.Close()
		return err
	}
	srv, lns, err := startSidecar(ctx, g, m, store, tier, table, posStore, sources, *sinks, *maxBody, *addr, guard, *socket)
	if err != nil {
		return errors.Join(err, m.Close())
	}
	tcp := lns[0].Addr()
	fmt.Fprintf(g.stdout, "serving http://%s/metrics and http://%s/debug/coverage, the record API at http://%s/v1/", tcp, tcp, tcp)
	if *socket != "" {
		fmt.Fprintf(g.stdout, " and unix:%s", *socket)
	}
	fmt.Fprintf(g.stdout, "; checkpoint every %s\n", *interval)
	serveErr := make(chan error, len(lns))
	for _, ln := range lns {
		go func() { serveErr <- srv.Serve(ln) }()
	}
	if !g.primaryIsTable() && *mirrorEvery > 0 {
		go func() { // until SIGTERM
			if err := replica.ReplicateEvery(ctx, tier, table, *mirrorEvery, replica.Options{Writer: g.writer, Logger: g.logger}); err != nil {
				g.logger.Error("the mirror job did not start; the coverage table is not kept up to date", "err", err)
			}
		}()
	}
	runErr := m.Run(ctx) // until SIGTERM
	// Stop accepting, answer 503 to new writes, let requests in flight
	// finish; a record request not done when the window ends answers 503.
	// Then the final checkpoint carries every record answered 200.
	shutdownCtx, cancel := context.WithTimeout(context.Background(), shutdownWindow)
	defer cancel()
	shutErr := srv.Shutdown(shutdownCtx)
	if shutErr != nil {
		shutErr = fmt.Errorf("serve: requests still in flight %s after SIGTERM were left running: a record request among them answers 503 and its caller must retry it; every record answered 200 is in the final checkpoint: %w", shutdownWindow, shutErr)
	}
	err = errors.Join(runErr, shutErr, explainWriteFailure(shutdownCtx, tableOf(tier), m.Close()))
	if positions != nil {
		err = errors.Join(err, positions.Close())
	}
	for range lns {
		if serr := <-serveErr; serr != nil {
			err = errors.Join(err, serr)
		}
	}
	return err
}

// shutdownWindow is how long SIGTERM waits for requests in flight.
const shutdownWindow = 10 * time.Second

// startSidecar builds the record API with /metrics, /debug/coverage and the
// mounts of serveMounts, and opens its listeners: TCP first, then the
// socket.
func startSidecar(ctx context.Context, g *globals, m *mirror.Mirror, store *local.Store, tier durable.Tier, table *iceberg.Table, positions coverage.PositionStore,
	sources []coverage.Source, sinks []string, maxBody int64, addr string, guard guardSettings, socket string) (*sidecar.Server, []net.Listener, error) {
	reg := prometheus.NewRegistry()
	// The source extents the pipeline reports (PUT /v1/extents), kept in
	// memory: the gaps routes, the map and the gap metrics look for raw's
	// holes over the same ones. Declared starts (--stream-start) fill in
	// an extent reported without a start.
	extents := sidecar.NewExtentBook(0)
	gaps, _ := gapmetrics.New(gapmetrics.Options{Table: table, Logger: g.logger, Extents: extents.Extents, Sinks: sinks}) // fails only without a table
	reg.MustRegister(m.Collector(), gaps)
	go func() { _ = gaps.Run(ctx) }() // per-sink gaps from the table every 2m, until SIGTERM
	extra := map[string]http.Handler{
		"/metrics":        promhttp.HandlerFor(reg, promhttp.HandlerOpts{}),
		"/debug/coverage": store.Handler(),
	}
	// The coverage map: GET / (the page) and GET /v1/map (its data).
	// "GET /{$}" matches the root alone, so other unknown GETs stay the
	// record API's JSON 404.
	coverageMap, err := covmap.Handler(covmap.Options{Source: covmap.TableSource{Table: table, Extents: extents.Extents, Sinks: sinks},
		Pending: covmap.LocalPending{Store: store}, Logger: g.logger})
	if err != nil {
		return nil, nil, fmt.Errorf("serve: coverage map: %w", err)
	}
	extra["GET /{$}"], extra["GET /v1/map"] = coverageMap, coverageMap
	opts := sidecar.Options{Mirror: m, Local: store, Durable: tier, Positions: positions, Sources: sources,
		MaxBodyBytes: maxBody, Extra: extra, Logger: g.logger, Starts: g.starts, Extents: extents, Sinks: sinks}
	guard.options(&opts)
	srv, err := sidecar.New(opts)
	if err != nil {
		return nil, nil, fmt.Errorf("serve: %w", err)
	}
	if err := reg.Register(srv.Collector()); err != nil {
		return nil, nil, fmt.Errorf("serve: registering the record API's metrics: %w", err)
	}
	ln, err := guard.listen(g, addr)
	if err != nil {
		return nil, nil, err
	}
	lns := []net.Listener{ln}
	if socket != "" {
		uln, err := sidecar.ListenUnix(socket)
		if err != nil {
			_ = ln.Close()
			return nil, nil, fmt.Errorf("serve: %w", err)
		}
		lns = append(lns, uln)
	}
	return srv, lns, nil
}

// parseRegime reads a source regime as configured.
func parseRegime(s string) (coverage.Regime, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "stored":
		return coverage.Stored, nil
	case "broker-managed":
		return coverage.BrokerManaged, nil
	}
	return 0, fmt.Errorf("regime %q: use stored or broker-managed", s)
}

func addSource(sources map[string]string, kv string) error {
	name, regime, ok := strings.Cut(kv, "=")
	name = strings.TrimSpace(name)
	if !ok || name == "" {
		return fmt.Errorf("source %q is not NAME=stored or NAME=broker-managed", kv)
	}
	if _, err := parseRegime(regime); err != nil {
		return fmt.Errorf("source %s: %w", name, err)
	}
	if _, dup := sources[name]; dup {
		return fmt.Errorf("source %s is declared twice", name)
	}
	sources[name] = strings.TrimSpace(regime)
	return nil
}

// sources are the declared sources, whole from the first of the flags,
// COVMIRROR_SOURCES and the configuration file that has any.
func (g *globals) sources(fromFlags map[string]string) ([]coverage.Source, error) {
	chosen := fromFlags
	if len(chosen) == 0 {
		if env := os.Getenv("COVMIRROR_SOURCES"); env != "" {
			chosen = map[string]string{}
			for _, kv := range strings.Split(env, ",") {
				if err := addSource(chosen, kv); err != nil {
					return nil, fmt.Errorf("COVMIRROR_SOURCES: %w", err)
				}
			}
		}
	}
	if len(chosen) == 0 && g.cfg != nil {
		chosen = g.cfg.sources
	}
	out := make([]coverage.Source, 0, len(chosen))
	for _, name := range slices.Sorted(maps.Keys(chosen)) {
		regime, err := parseRegime(chosen[name])
		if err != nil {
			return nil, fmt.Errorf("source %s: %w", name, err)
		}
		out = append(out, coverage.Source{Name: name, Regime: regime})
	}
	if _, err := coverage.SourceRegimes(out); err != nil {
		return nil, err
	}
	return out, nil
}

// openPositions opens the stored sources' positions beside the primary's
// coverage: the positions table in raw's catalog, a positions object per
// source under object.url, or the positions table in postgres.url.
func (g *globals) openPositions(ctx context.Context, table *iceberg.Table, sources []coverage.Source) (coverage.PositionStore, io.Closer, error) {
	if g.durable == durablePostgres {
		opts, err := g.postgresOptions()
		if err != nil {
			return nil, nil, err
		}
		p, err := postgres.OpenPositions(ctx, opts, sources...)
		if err != nil {
			return nil, nil, fmt.Errorf("serve: opening the positions table: %w", err)
		}
		return p, p, nil
	}
	if g.durable == durableObject {
		b, err := g.openBlobs(ctx)
		if err != nil {
			return nil, nil, err
		}
		p, err := object.OpenPositions(ctx, object.Options{Blobs: b, Logger: g.logger}, sources...)
		if err != nil {
			return nil, nil, fmt.Errorf("serve: opening the positions objects: %w", err)
		}
		closer := io.Closer(p)
		if c, ok := b.(io.Closer); ok {
			closer = closers{p, c}
		}
		return p, closer, nil
	}
	p, err := iceberg.OpenPositions(ctx, table.Catalog(), iceberg.Options{Namespace: []string{g.namespace}, Logger: g.logger}, "", g.writer, sources...)
	if err != nil {
		return nil, nil, fmt.Errorf("serve: opening the positions table: %w", err)
	}
	return p, p, nil
}

// closers closes each in order and joins their errors.
type closers []io.Closer

func (cs closers) Close() error {
	var errs []error
	for _, c := range cs {
		errs = append(errs, c.Close())
	}
	return errors.Join(errs...)
}
