package demo

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"log/slog"
	mrand "math/rand/v2"
	"os"
	"path/filepath"
	"strings"

	"github.com/covmirror/covmirror/compaction"
	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/iceberg"
	"github.com/covmirror/covmirror/internal/lite"
	"github.com/covmirror/covmirror/local"
	"github.com/covmirror/covmirror/mirror"
	"github.com/covmirror/covmirror/recovery"
	"github.com/covmirror/covmirror/tier"
)

// DefaultBatches is Options.Batches' default; MinBatches its least.
const (
	DefaultBatches = 400
	MinBatches     = 100
)

// Options configure a run of the demo.
type Options struct {
	// Seed seeds the simulation: the same seed replays the same run.
	Seed uint64
	// Batches is how many batches per partition the source produces;
	// zero: DefaultBatches.
	Batches int
	// Tier is the durable tier to run on. The run makes a directory of its
	// own under Tier.State and keeps everything there: the local tiers,
	// the embedded catalog and the sink objects (never a configured
	// Object.URL). A configured catalog gets a fresh namespace, a
	// PostgreSQL tier a fresh schema, of the run's own.
	Tier tier.Settings
	// Out gets the story.
	Out io.Writer
	// Logger gets the libraries' log lines; nil: discarded.
	Logger *slog.Logger
	// ShowGaps prints the committed gaps of primary (over names it): the
	// command line's DuckDB query, which this package does not link; nil:
	// the gaps the planner computes, printed as a table.
	ShowGaps func(ctx context.Context, w io.Writer, primary durable.Tier, over string) error
}

// EnsureDefaults fills in the zero fields' defaults.
func (o *Options) EnsureDefaults() {
	if o.Batches == 0 {
		o.Batches = DefaultBatches
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Out == nil {
		o.Out = io.Discard
	}
	if o.ShowGaps == nil {
		o.ShowGaps = showGapsInGo
	}
	o.Tier.EnsureDefaults()
}

// Validate checks the options after EnsureDefaults.
func (o *Options) Validate() error {
	if o.Batches < MinBatches {
		return fmt.Errorf("demo: --batches must be at least %d", MinBatches)
	}
	return o.Tier.Validate()
}

// run is one run of the demo: the simulated pipeline, the shared durable
// tier, and what the run prints.
type run struct {
	opts Options
	dir  string
	// primary is the durable tier the pods checkpoint into and the new
	// owner and the recovery worker read: the coverage table, or with
	// Kind Object the sink objects, with Postgres the coverage rows,
	// which the table then replicates.
	primary      durable.Tier
	primaryName  string        // as the story names it
	settings     tier.Settings // the run's own, for the closing commands
	table        *iceberg.Table
	p            *Pipeline
	out          *Outages
	every        int // batches between checkpoints
	compactEvery int // checkpoints between compactions
	checkpoints  int
}

func (d *run) say(format string, a ...any) { fmt.Fprintf(d.opts.Out, format+"\n", a...) }

// Run is the main job on embedded defaults, in a fresh state directory:
// a pipeline with raw and three sinks, one of them down now and then; its
// owner pod killed mid-stream and a second taking over from the durable
// tier; scheduled compaction (with a replica table, replication into it
// instead); the recovery worker planning from the gaps; and a verdict
// checked against the simulated sinks' own contents.
func Run(ctx context.Context, opts Options) error {
	opts.EnsureDefaults()
	if err := opts.Validate(); err != nil {
		return err
	}
	if err := os.MkdirAll(opts.Tier.State, 0o755); err != nil {
		return fmt.Errorf("demo: state directory: %w", err)
	}
	dir, err := os.MkdirTemp(opts.Tier.State, "demo-")
	if err != nil {
		return fmt.Errorf("demo: state directory: %w", err)
	}
	ts := opts.Tier
	ts.State = dir
	// The sink objects always go to the run's own directory, never to a
	// configured object.url: the demo writes nowhere it was not given.
	ts.Object = tier.ObjectSettings{}
	configured := len(ts.CatalogProps) > 0
	if configured {
		// A configured catalog: a fresh table of the demo's own in it.
		ts.Namespace = "covmirror_demo_" + strings.ToLower(rand.Text()[:8])
	}
	table, err := tier.OpenTable(ctx, ts)
	if err != nil {
		return err
	}
	r := mrand.New(mrand.NewPCG(opts.Seed, opts.Seed))
	d := &run{opts: opts, dir: dir, primary: table, primaryName: "the coverage table", table: table, every: 50, compactEvery: 3,
		p: NewPipeline("orders", 2, "lake", "warehouse", "search")}
	if !ts.TableIsPrimary() {
		if ts.Kind == tier.Postgres {
			// A fresh schema of the demo's own in the configured database.
			ts.Postgres.Schema = "covmirror_demo_" + strings.ToLower(rand.Text()[:8])
		}
		primary, closer, err := tier.Open(ctx, ts, true)
		if err != nil {
			return err
		}
		defer closer.Close()
		d.primary, d.primaryName = primary, ts.Noun()
	}
	d.settings = ts
	batches := opts.Batches
	d.out = NewOutages(r, batches)
	d.p.Sinks[1].Down = d.out.IsDown
	killAt := batches/2 + r.IntN(batches/4)
	if killAt%d.every == 0 {
		killAt++ // mid-way between checkpoints
	}
	catalog := "the embedded SQLite catalog"
	if configured {
		catalog = "the configured " + ts.CatalogProps["type"] + " catalog"
	}
	switch {
	case ts.Kind == tier.Postgres:
		d.say("covmirror demo, seed %d. State: %s; coverage rows in %s, replicated into the coverage table %s in %s.",
			opts.Seed, dir, d.primary.Name(), table.Name(), catalog)
	case d.replicated():
		d.say("covmirror demo, seed %d. State: %s; sink objects under %s, replicated into the coverage table %s in %s.",
			opts.Seed, dir, filepath.Join(dir, "objects"), table.Name(), catalog)
	default:
		d.say("covmirror demo, seed %d. State: %s; coverage table %s in %s.", opts.Seed, dir, table.Name(), catalog)
	}
	return d.run(ctx, uint64(killAt), uint64(batches))
}

func (d *run) run(ctx context.Context, killAt, batches uint64) error {
	p := d.p
	maintenance := "compaction"
	if d.replicated() {
		maintenance = d.primaryName + " replicated into the coverage table"
	}
	d.say("\n1. pod-a owns topic %s, partitions 0-%d. Each batch goes to raw, the source is acked, then to lake, warehouse\n   (down now and then) and search; each write is recorded after its ack. A checkpoint into %s every %d batches,\n   %s every %d checkpoints.",
		p.Topic, p.Partitions-1, d.primaryName, d.every, maintenance, d.compactEvery)
	a, aLocal, err := d.owner("pod-a")
	if err != nil {
		return err
	}
	for b := uint64(1); b <= killAt; b++ {
		if err := d.step(ctx, a, "pod-a", b); err != nil {
			return err
		}
	}
	lost := a.Stats().PendingBatches
	_ = aLocal.Close() // killed: no final checkpoint, and its disk is gone with it
	d.say("\n2. pod-a is killed after batch %d. %d batch-writes it recorded since its last checkpoint were only on its disk.", killAt, lost)
	if err := d.checkClaims(ctx); err != nil {
		return err
	}

	d.say("\n3. pod-b takes over, reading only %s (never pod-a's disk), and replays what it is told:", d.primaryName)
	b, _, err := d.owner("pod-b")
	if err != nil {
		return err
	}
	d.out.Step = int(killAt)
	for part := range p.Partitions {
		if err := d.resume(ctx, b, part); err != nil {
			return err
		}
	}
	for batch := killAt + 1; batch <= batches; batch++ {
		if err := d.step(ctx, b, "pod-b", batch); err != nil {
			return err
		}
	}
	if err := b.Close(); err != nil { // the final checkpoint
		return err
	}
	d.say("\n4. The stream is done. The warehouse refused %d writes during its outages; committed gaps:", p.Sinks[1].Fails)
	if err := d.opts.ShowGaps(ctx, d.opts.Out, d.primary, d.primaryName); err != nil {
		return err
	}

	d.say("\n5. The warehouse is back. The recovery worker plans from %s alone and replays from raw:", d.primaryName)
	d.out.Step = -1
	if err := d.recoverGaps(ctx); err != nil {
		return err
	}
	if err := d.opts.ShowGaps(ctx, d.opts.Out, d.primary, d.primaryName); err != nil {
		return err
	}
	if err := d.compact(ctx); err != nil {
		return err
	}
	return d.verdict(ctx, batches)
}

// owner opens a pod: its own local tier under the demo's directory, the
// shared coverage table.
func (d *run) owner(name string) (*mirror.Mirror, *local.Store, error) {
	// Where `covmirror --state DIR/NAME inspect` looks: the closing
	// commands inspect a pod as an operator would.
	l, err := local.Open(local.Options{Dir: lite.LocalDir(filepath.Join(d.dir, name)), Logger: d.opts.Logger})
	if err != nil {
		return nil, nil, err
	}
	m, err := mirror.New(mirror.Options{Local: l, Durable: d.primary, Writer: name, Logger: d.opts.Logger})
	if err != nil {
		_ = l.Close()
		return nil, nil, err
	}
	return m, l, nil
}

// step ingests batch b of every partition, checkpointing and compacting on
// schedule.
func (d *run) step(ctx context.Context, m *mirror.Mirror, pod string, b uint64) error {
	d.out.Step = int(b)
	if err := d.p.Process(ctx, m, b); err != nil {
		return err
	}
	if b%uint64(d.every) != 0 {
		return nil
	}
	pending := m.Stats().PendingBatches
	if err := m.Sync(ctx); err != nil {
		return err
	}
	d.checkpoints++
	d.say("   batch %3d: %s checkpoint, %d batch-writes committed", b, pod, pending)
	if err := d.checkClaims(ctx); err != nil {
		return err
	}
	if d.checkpoints%d.compactEvery == 0 {
		return d.compact(ctx)
	}
	return nil
}

// compact compacts the coverage table; with the sink objects primary it
// mirrors them into the table instead (a mirror writes each sink's rows
// afresh: there is nothing to compact).
func (d *run) compact(ctx context.Context) error {
	if d.replicated() {
		return d.replicate(ctx)
	}
	res, err := compaction.Compact(ctx, d.table, compaction.Options{})
	if err != nil {
		return err
	}
	d.say("   compaction: %d data files into %d, set-equal", res.FilesRead, res.FilesWritten)
	return nil
}

// resume is a new owner's takeover of one partition: the replay work the
// table gives for each sink, replayed from raw and recorded after each ack.
func (d *run) resume(ctx context.Context, m *mirror.Mirror, part int32) error {
	assignments, err := recovery.Resume(ctx, d.primary, d.p.Topic, part, recovery.ResumeOptions{
		Sinks: d.p.SinkNames(), Extents: []coverage.Extent{{Topic: d.p.Topic, Partition: part, Start: 1, End: d.p.Acked[part] + 1}}})
	if err != nil {
		return err
	}
	for _, a := range assignments {
		replay := coverage.RangeSet{}
		for _, r := range a.Replay {
			_ = replay.Add(r)
		}
		failed := 0
		for _, r := range a.Replay {
			err := coverage.WriteThenRecord(ctx, m, a.Destination, r, func(context.Context) error { return d.p.Replay(a.Destination, r) })
			if err != nil {
				failed++
			}
		}
		note := ""
		if failed > 0 {
			note = fmt.Sprintf(" (%d refused: still down)", failed)
		}
		d.say("   %s: replay %s%s", a.Destination, replay.String(), note)
	}
	return nil
}

// recoverGaps is the single recovery worker: plan, replay task by task,
// record each after its ack, checkpoint; again while tasks remain.
func (d *run) recoverGaps(ctx context.Context) error {
	w, _, err := d.owner("recovery")
	if err != nil {
		return err
	}
	defer w.Close()
	tasks, err := recovery.Plan(ctx, d.primary, recovery.PlanOptions{MaxBatches: 25})
	if err != nil {
		return err
	}
	done, err := recovery.Recover(ctx, tasks, recovery.ReplayFunc(func(_ context.Context, t recovery.Task) error {
		return d.p.Replay(t.Destination, t.Range)
	}), w)
	if err != nil {
		return err
	}
	if err := w.Sync(ctx); err != nil {
		return err
	}
	d.say("   %d replay tasks of at most 25 batches, each recorded after the sink's ack, then a checkpoint.", done)
	return nil
}
