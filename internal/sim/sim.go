package sim

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"time"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/iceberg"
	"github.com/covmirror/covmirror/internal/demo"
	"github.com/covmirror/covmirror/internal/faultio"
)

// Config is one simulation run.
type Config struct {
	// Seed draws everything: the steps, the fault rates, the faults. The
	// same seed replays the same sequence of steps; which file operation a
	// fault strikes may vary with Pebble's and iceberg-go's goroutines.
	Seed uint64
	// Steps is how many random steps run with faults on, before faults
	// stop and recovery runs to quiescence. Zero value: 150.
	Steps int
	// Dir holds the catalog, the warehouse and the sink objects (the
	// pods' local tiers are in memory). Required: a fresh directory.
	Dir string
	// Durable is the durable tier the pods checkpoint into: "iceberg" (the
	// coverage table), "object" (one object per sink, in a directory
	// under Dir) or "postgres" (PostgreSQL tables in a fresh schema on
	// PostgresURL, dropped when the run ends). On the last two the
	// coverage table is the tier's replica. Zero value: "iceberg".
	Durable string
	// PostgresURL is the server the "postgres" tier runs on. Zero value:
	// $COVMIRROR_TEST_POSTGRES_URL, else
	// postgres://postgres@127.0.0.1:5432/test?sslmode=disable.
	PostgresURL string
	// Logger receives what the libraries log. Zero value: discard.
	Logger *slog.Logger
	// Trace, when set, receives a line per step and outcome, as it happens.
	Trace func(line string)
}

// Result is what a run did.
type Result struct {
	Steps   int            // steps run, the final recovery's included
	Batches uint64         // batches acked to the source
	Ops     map[string]int // steps by kind
	Faults  map[string]int // faults injected, by kind
	Rates   Rates          // the fault rates the seed drew
	Durable string         // the durable tier it ran on
}

// Failure is a run's failed check: its seed, the step, what was wrong, and
// the last steps that led there.
type Failure struct {
	Seed    uint64
	Durable string
	Step    int
	Err     error
	Trace   []string
}

func (f *Failure) Error() string {
	return fmt.Sprintf("sim: seed %d on %s, step %d: %v\nreplay: go test ./internal/sim -run TestSimulation -seed %d -durable %s -v\nlast steps:\n  %s",
		f.Seed, f.Durable, f.Step, f.Err, f.Seed, f.Durable, strings.Join(f.Trace, "\n  "))
}

func (f *Failure) Unwrap() error { return f.Err }

// world is everything a run has: the pipeline's stores, the durable tier
// (the faulty view the pods use, and the true one the checks read), the
// coverage table (the tier itself, or the replica of the primary: the
// object or PostgreSQL tier), the pod.
type world struct {
	cfg      Config
	r        *rand.Rand
	p        *demo.Pipeline
	f        *faults
	table    durable.Tier   // through the faults: what the pods use
	truth    durable.Tier   // the same tier, no faults: what the checks read
	ice      *iceberg.Table // the coverage table through the faults: the tier itself, or the replica
	iceTruth *iceberg.Table // the same table, no faults
	replica  bool           // the table is the replica of the primary (the object or PostgreSQL tier)
	closers  []func() error // the primary's resources, closed last first
	pod      *pod
	// The gap states: the store through the faults (the pods' and the
	// recovery worker's) and without them (the checks'); the batches each
	// sink refuses for ever and those raw's destination has lost (the
	// replayer's answers), until an operator fixes them; the decisions'
	// clock.
	states      durable.StateStore
	statesTruth durable.StateStore
	refuses     map[coverage.Destination]*coverage.RangeSet
	rawLost     map[coverage.Destination]*coverage.RangeSet
	clock       time.Time
	pods        int
	down        map[string]bool // sinks in an outage
	res         Result
	step        int
	trace       []string
}

// Run runs one simulation. A failed invariant is a *Failure naming the seed;
// other errors are the simulation's own (a catalog that cannot be opened).
func Run(ctx context.Context, cfg Config) (_ Result, err error) {
	if cfg.Steps == 0 {
		cfg.Steps = 150
	}
	if cfg.Dir == "" {
		return Result{}, errors.New("sim: Config.Dir is empty: give the run a fresh directory")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	switch cfg.Durable {
	case "":
		cfg.Durable = "iceberg"
	case "iceberg", "object", "postgres":
	default:
		return Result{}, fmt.Errorf("sim: Config.Durable %q: want iceberg, object or postgres", cfg.Durable)
	}
	r := rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x5eed))
	w := &world{cfg: cfg, r: r, p: demo.NewPipeline("orders", 1+int32(r.IntN(2)), "lake", "warehouse", "search"),
		f: newFaults(cfg.Seed, drawRates(r)), down: map[string]bool{},
		res: Result{Ops: map[string]int{}, Durable: cfg.Durable}}
	switch cfg.Durable {
	case "object":
		drawObjectRates(cfg.Seed, &w.f.rates)
	case "postgres":
		drawTierRates(cfg.Seed, &w.f.rates)
	}
	drawStateRates(cfg.Seed, &w.f.rates)
	for _, s := range append(w.p.Sinks, w.p.Raw) {
		rate := w.f.rates.SinkWrite
		if s == w.p.Raw {
			rate = w.f.rates.RawWrite
		}
		name := s.Name
		s.Down = func() bool { return w.down[name] || w.f.sim(w.r, name+" write refused", rate) }
	}
	defer func() {
		// A schema left behind is the simulation's own failure.
		if cerr := w.close(); cerr != nil && err == nil {
			err = fmt.Errorf("sim: closing the durable tier: %w", cerr)
		}
	}()
	if err := w.open(ctx); err != nil {
		return w.res, err
	}
	err = w.run(ctx)
	w.res.Faults, w.res.Rates = w.f.Counts(), w.f.rates
	w.res.Steps = w.step
	for part := range w.p.Partitions {
		w.res.Batches += w.p.AckedEnd[part]
	}
	return w.res, err
}

// open opens the catalog, the table through the faults and without them,
// the object or PostgreSQL tier if the run is on one, and the first pod.
func (w *world) open(ctx context.Context) error {
	props, err := iceberg.EmbeddedProps(filepath.Join(w.cfg.Dir, "catalog"))
	if err != nil {
		return err
	}
	inner, err := iceberg.OpenCatalog(ctx, "", props)
	if err != nil {
		return err
	}
	opts := iceberg.Options{CommitTimeout: 2 * time.Second, Logger: w.cfg.Logger}
	truth, err := iceberg.Open(ctx, inner, opts)
	if err != nil {
		return err
	}
	faulty := faultio.WrapCatalog(&faultCatalog{Catalog: inner, f: w.f}, w.f.ware)
	if w.ice, err = iceberg.Open(ctx, faulty, opts); err != nil {
		return err
	}
	w.iceTruth, w.replica = truth, w.cfg.Durable != "iceberg"
	switch w.cfg.Durable {
	case "object":
		err = w.openObject(ctx)
	case "postgres":
		err = w.openPostgres(ctx)
	default:
		w.table, w.truth = w.ice, truth
	}
	if err != nil {
		return err
	}
	w.openStates()
	w.f.set(true)
	return w.newPod(ctx)
}

func (w *world) close() error {
	if w.pod != nil {
		w.pod.kill()
	}
	var errs []error
	for i := len(w.closers) - 1; i >= 0; i-- {
		errs = append(errs, w.closers[i]())
	}
	return errors.Join(errs...)
}

// run is the random steps with faults on, then recovery to quiescence with
// them off, checking the invariant after every step.
func (w *world) run(ctx context.Context) error {
	for w.step = 1; w.step <= w.cfg.Steps; w.step++ {
		if err := w.randomStep(ctx); err != nil {
			return w.fail(err)
		}
		if err := w.check(ctx); err != nil {
			return w.fail(err)
		}
	}
	w.f.set(false)
	clear(w.down)
	w.note("faults stop; recovery to quiescence")
	if err := w.quiesce(ctx); err != nil {
		return w.fail(err)
	}
	return nil
}

// randomStep draws one step and runs it. Steps fail often (that is the
// point of the faults); only a broken invariant or an unexpected error
// fails the run.
func (w *world) randomStep(ctx context.Context) error {
	type op struct {
		weight int
		name   string
		run    func(context.Context) error
	}
	// The table is compacted where it is the tier; where it is the
	// primary's replica it is mostly replicated into, and compacted less.
	compact, replicate := 3, 0
	if w.replica {
		compact, replicate = 1, 3
	}
	ops := []op{
		{40, "ingest", w.ingest},
		{5, "outage", w.outage},
		{12, "checkpoint", w.checkpoint},
		{compact, "compact", w.compact},
		{replicate, "replicate", w.replicate},
		{4, "crash", w.crash},
		{3, "rebalance", w.rebalance},
		{5, "recover", w.recover},
		{4, "states", w.stateStep},
	}
	total := 0
	for _, o := range ops {
		total += o.weight
	}
	n := w.r.IntN(total)
	for _, o := range ops {
		if n -= o.weight; n < 0 {
			w.res.Ops[o.name]++
			return o.run(ctx)
		}
	}
	return nil
}

// note adds a line to the trace a failure prints (the last 40 are kept).
func (w *world) note(format string, a ...any) {
	line := fmt.Sprintf("%3d ", w.step) + fmt.Sprintf(format, a...)
	if w.cfg.Trace != nil {
		w.cfg.Trace(line)
	}
	w.trace = append(w.trace, line)
	if len(w.trace) > 40 {
		w.trace = w.trace[len(w.trace)-40:]
	}
}

func (w *world) fail(err error) error {
	return &Failure{Seed: w.cfg.Seed, Durable: w.cfg.Durable, Step: w.step, Err: err, Trace: w.trace}
}

// Summary is a one-line account of a result: steps, batches, faults.
func (r Result) Summary() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %d steps, %d batches acked; faults:", r.Durable, r.Steps, r.Batches)
	for _, k := range sortedKinds(r.Faults) {
		fmt.Fprintf(&b, " %s=%d", k, r.Faults[k])
	}
	return b.String()
}
