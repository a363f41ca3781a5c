package pod

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/fleet"
	"github.com/covmirror/covmirror/gapmetrics"
	"github.com/covmirror/covmirror/iceberg"
	"github.com/covmirror/covmirror/internal/versionmetric"
	"github.com/covmirror/covmirror/local"
	"github.com/covmirror/covmirror/mirror"
	"github.com/covmirror/covmirror/sidecar"
	"github.com/covmirror/covmirror/sidecar/covmap"
	"github.com/covmirror/covmirror/tier"
)

// Pod is a running pod: Start it, Run it until its context ends (or call
// Shutdown), then read nothing more from it.
type Pod struct {
	opts      Options
	table     *iceberg.Table
	tier      durable.Tier
	closer    io.Closer // the tier's
	positions io.Closer // nil without stored sources
	mirror    *mirror.Mirror
	srv       *sidecar.Server
	lns       []net.Listener
	serveErr  chan error
	// cancel stops the background jobs (the fleet role: gap metrics,
	// replica loop), and fleetDone is closed once they returned and the
	// lease was released.
	cancel     context.CancelFunc
	fleet      *fleet.Role // nil with FleetNever
	fleetDone  chan struct{}
	leaseBlobs io.Closer // the lease's store, with FleetElected on Object
	// The metrics listener (health.go), with Options.MetricsAddr: nil
	// otherwise.
	metrics    http.Handler // the registry's, on the metrics listener and with MetricsOnAPI on the API
	ready      *readiness
	metricsSrv *sidecar.ReadOnly
	metricsLn  net.Listener
	metricsErr chan error
	shutdown   sync.Once
	err        error
}

// Start opens the pod's tiers and listeners and starts serving; ctx bounds
// the background jobs, which Shutdown also stops. On an error everything
// opened is closed again.
func Start(ctx context.Context, opts Options) (_ *Pod, err error) {
	opts.EnsureDefaults()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	p := &Pod{opts: opts}
	var undo []io.Closer
	defer func() {
		if err != nil {
			for _, c := range slices.Backward(undo) {
				err = errors.Join(err, c.Close())
			}
		}
	}()
	// The coverage table: the durable tier with Kind Iceberg, its replica
	// otherwise (the map and the gap metrics read it).
	if p.table, err = tier.OpenTable(ctx, opts.Tier); err != nil {
		return nil, err
	}
	if p.tier, p.closer, err = tier.Open(ctx, opts.Tier, true); err != nil {
		return nil, err
	}
	undo = append(undo, p.closer)
	var positions coverage.PositionStore
	if slices.ContainsFunc(opts.Sources, func(s coverage.Source) bool { return s.Regime == coverage.Stored }) {
		if positions, p.positions, err = tier.OpenPositions(ctx, opts.Tier, p.table, opts.Sources); err != nil {
			return nil, err
		}
		undo = append(undo, p.positions)
	}
	store, err := local.Open(local.Options{Dir: opts.Tier.LocalDir(), Logger: opts.Logger, Sync: opts.Sync})
	if err != nil {
		return nil, err
	}
	// The Mirror logs each failed checkpoint (and its retries); the loop
	// never stops on one.
	p.mirror, err = mirror.New(mirror.Options{Local: store, Durable: p.tier, Writer: opts.Tier.Writer, Logger: opts.Logger, Interval: opts.Interval, Positions: positions})
	if err != nil {
		_ = store.Close()
		return nil, err
	}
	undo = append(undo, closeFunc(p.mirror.Close))
	bg, cancel := context.WithCancel(ctx)
	undo = append(undo, closeFunc(func() error { cancel(); return nil }))
	undo = append(undo, closeFunc(func() error {
		if p.leaseBlobs != nil {
			return p.leaseBlobs.Close()
		}
		return nil
	}))
	if err := p.startSidecar(bg, store, positions); err != nil {
		return nil, err
	}
	p.cancel = cancel
	p.serveErr = make(chan error, len(p.lns))
	for _, ln := range p.lns {
		go func() { p.serveErr <- p.srv.Serve(ln) }()
	}
	if p.metricsSrv != nil {
		p.metricsErr = make(chan error, 1)
		go func() { p.metricsErr <- p.metricsSrv.Serve(p.metricsLn) }()
	}
	p.fleetDone = make(chan struct{})
	go func() {
		defer close(p.fleetDone)
		if p.fleet != nil {
			_ = p.fleet.Run(bg) // until shutdown; releases the lease
		}
	}()
	return p, nil
}

// closeFunc is a func as an io.Closer.
type closeFunc func() error

func (f closeFunc) Close() error { return f() }

// Addr is the TCP listener's address.
func (p *Pod) Addr() net.Addr { return p.lns[0].Addr() }

// Mirror is the pod's Mirror, for a program that records in-process.
func (p *Pod) Mirror() *mirror.Mirror { return p.mirror }

// Run checkpoints every Options.Interval until ctx ends, then shuts the
// pod down in the order doc.go states, and returns what failed.
func (p *Pod) Run(ctx context.Context) error {
	runErr := p.mirror.Run(ctx)
	return errors.Join(runErr, p.Shutdown())
}

// Shutdown shuts the pod down (doc.go's order) once; later calls return
// the first's result. Run calls it when its context ends: to stop a pod
// that is running, end that context. Call it directly only for a pod that
// was started and never run.
func (p *Pod) Shutdown() error {
	p.shutdown.Do(func() { p.err = p.stop() })
	return p.err
}

func (p *Pod) stop() error {
	if p.ready != nil {
		p.ready.draining.Store(true) // /readyz says so until the listener closes, last
	}
	p.cancel()
	<-p.fleetDone
	if p.leaseBlobs != nil {
		_ = p.leaseBlobs.Close()
	}
	window := p.opts.ShutdownWindow
	shutdownCtx, cancel := context.WithTimeout(context.Background(), window)
	defer cancel()
	shutErr := p.srv.Shutdown(shutdownCtx)
	if shutErr != nil {
		shutErr = fmt.Errorf("requests still in flight %s after the shutdown began were left running: a record request among them answers 503 and its caller must retry it; every record answered 200 is in the final checkpoint: %w", window, shutErr)
	}
	err := errors.Join(shutErr, tier.ExplainWriteFailure(shutdownCtx, p.tier, p.mirror.Close()))
	if p.positions != nil {
		err = errors.Join(err, p.positions.Close())
	}
	for range p.lns {
		if serr := <-p.serveErr; serr != nil {
			err = errors.Join(err, serr)
		}
	}
	err = errors.Join(err, p.closer.Close())
	if p.metricsSrv != nil {
		// Last, so that a scrape during the final checkpoint still answers.
		// A scrape cut short by the exit is no failure of the pod's.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if p.metricsSrv.Shutdown(ctx) != nil {
			_ = p.metricsSrv.Close()
		}
		err = errors.Join(err, <-p.metricsErr)
	}
	return err
}

// startSidecar builds the record API with /debug/coverage, the coverage
// map and, with Options.MetricsOnAPI, /metrics, and opens the listeners:
// the metrics listener, then the API's TCP one, then its socket.
func (p *Pod) startSidecar(ctx context.Context, store *local.Store, positions coverage.PositionStore) error {
	o := p.opts
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	for _, c := range o.Collectors {
		if err := reg.Register(c); err != nil {
			return fmt.Errorf("pod: Options.Collectors: %w", err)
		}
	}
	// The source extents the pipeline reports (PUT /v1/extents), kept in
	// memory: the gaps routes, the map and the gap metrics look for raw's
	// holes over the same ones. Declared starts fill in an extent
	// reported without a start.
	extents := sidecar.NewExtentBook(0)
	reg.MustRegister(p.mirror.Collector(), versionmetric.Collector())
	// Per-sink gaps from the table, refreshed by the fleet role where this
	// pod does the fleet work (Options.Fleet).
	gaps := gapmetrics.Options{Table: p.table, Logger: o.Logger, Extents: extents.Extents, Sinks: o.Sinks, TopicSinks: o.TopicSinks, Interval: gapmetrics.DefaultInterval}
	var err error
	if p.fleet, err = p.startFleet(ctx, reg, gaps); err != nil {
		return err
	}
	p.metrics = promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
	extra := map[string]http.Handler{"/debug/coverage": store.Handler()}
	if o.MetricsOnAPI {
		extra["/metrics"] = p.metrics // behind the record API's token
	}
	// The coverage map: GET / (the page) and GET /v1/map (its data).
	// "GET /{$}" matches the root alone, so other unknown GETs stay the
	// record API's JSON 404.
	coverageMap, err := covmap.Handler(covmap.Options{Source: covmap.TableSource{Table: p.table, Extents: extents.Extents, Sinks: o.Sinks, TopicSinks: o.TopicSinks},
		Pending: covmap.LocalPending{Store: store}, Logger: o.Logger})
	if err != nil {
		return fmt.Errorf("coverage map: %w", err)
	}
	extra["GET /{$}"], extra["GET /v1/map"] = coverageMap, coverageMap
	hosts := slices.Clone(o.AllowedHosts)
	if host, _, err := net.SplitHostPort(o.Addr); err == nil && host != "" && net.ParseIP(host) == nil {
		hosts = append(hosts, host)
	}
	opts := sidecar.Options{Mirror: p.mirror, Local: store, Durable: p.tier, Positions: positions, Sources: o.Sources,
		MaxBodyBytes: o.MaxBodyBytes, Extra: extra, Logger: o.Logger, Starts: o.Starts, Extents: extents, Sinks: o.Sinks, TopicSinks: o.TopicSinks,
		Token: o.Token, AllowedHosts: hosts}
	if o.Token != "" {
		opts.PublicPaths = []string{"/"} // the map's page holds no data and asks for the token itself
	}
	if p.srv, err = sidecar.New(opts); err != nil {
		return err
	}
	if err := reg.Register(p.srv.Collector()); err != nil {
		return fmt.Errorf("registering the record API's metrics: %w", err)
	}
	if err := p.startMetricsListener(store); err != nil {
		return err
	}
	ln, err := sidecar.ListenTCP(o.Addr, o.Token != "", o.Logger)
	if err != nil {
		p.closeMetricsListener()
		return err
	}
	p.lns = []net.Listener{ln}
	if o.Socket != "" {
		uln, err := sidecar.ListenUnix(o.Socket)
		if err != nil {
			_ = ln.Close()
			p.closeMetricsListener()
			return err
		}
		p.lns = append(p.lns, uln)
	}
	return nil
}
