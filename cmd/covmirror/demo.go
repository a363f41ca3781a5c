package main

import (
	"context"
	"crypto/rand"
	"fmt"
	mrand "math/rand/v2"
	"os"
	"path/filepath"
	"strings"

	"github.com/covmirror/covmirror/compaction"
	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/iceberg"
	"github.com/covmirror/covmirror/internal/sim"
	"github.com/covmirror/covmirror/local"
	"github.com/covmirror/covmirror/mirror"
	"github.com/covmirror/covmirror/recovery"
)

// demoRun is one run of the demo: the simulated pipeline, the shared
// durable tier, and what the run prints.
type demoRun struct {
	g         *globals
	dir       string
	namespace string // the demo's own namespace in a configured catalog
	// primary is the durable tier the pods checkpoint into and the new
	// owner and the recovery worker read: the coverage table, or with
	// --durable object the sink objects, with postgres the coverage rows,
	// which the table then mirrors.
	primary      durable.Tier
	primaryName  string // as the story names it
	primaryFlags string // the global flags that name the primary, for "Next:"
	table        *iceberg.Table
	p            *sim.Pipeline
	out          *sim.Outages
	every        int // batches between checkpoints
	compactEvery int // checkpoints between compactions
	checkpoints  int
}

func (d *demoRun) say(format string, a ...any) { fmt.Fprintf(d.g.stdout, format+"\n", a...) }

// runDemo is the main job on embedded defaults, in a fresh state directory:
// a pipeline with raw and three sinks, one of them down now and then; its
// owner pod killed mid-stream and a second taking over from the durable
// tier; scheduled compaction (with --durable object, the sink objects
// mirrored into the coverage table instead); the recovery worker planning
// from the gaps; and a verdict checked against the simulated sinks' own
// contents.
func runDemo(ctx context.Context, g *globals, args []string) error {
	fs := subFlags(g, "demo", "[--seed N] [--batches N] [--durable iceberg|object]")
	seed := fs.Uint64("seed", 1, "seed of the simulation: the same seed replays the same run")
	batches := fs.Int("batches", 400, "batches per partition the source produces")
	tier := fs.String("durable", g.durable, "the durable tier, as the global --durable: iceberg, object (sink objects in a directory under the run's state, mirrored into the coverage table) or postgres (a fresh schema of its own in --postgres-url, mirrored likewise)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *batches < 100 {
		return usageError{fmt.Errorf("demo: --batches must be at least 100")}
	}
	if err := parseDurable(*tier); err != nil {
		return usageError{fmt.Errorf("demo: %w", err)}
	}
	if err := os.MkdirAll(g.state, 0o755); err != nil {
		return fmt.Errorf("demo: state directory: %w", err)
	}
	dir, err := os.MkdirTemp(g.state, "demo-")
	if err != nil {
		return fmt.Errorf("demo: state directory: %w", err)
	}
	dg := *g
	dg.state = dir
	dg.durable = *tier
	// The sink objects always go to the run's own directory, never to a
	// configured object.url: the demo writes nowhere it was not given.
	dg.object = objectSettings{}
	if len(g.props) > 0 {
		// A configured catalog: a fresh table of the demo's own in it.
		dg.namespace = "covmirror_demo_" + strings.ToLower(rand.Text()[:8])
	}
	table, err := dg.openTable(ctx)
	if err != nil {
		return err
	}
	r := mrand.New(mrand.NewPCG(*seed, *seed))
	d := &demoRun{g: g, dir: dir, primary: table, primaryName: "the coverage table", table: table, every: 50, compactEvery: 3,
		p: sim.NewPipeline("orders", 2, "lake", "warehouse", "search")}
	if !dg.primaryIsTable() {
		if dg.durable == durablePostgres {
			// A fresh schema of the demo's own in the configured database.
			dg.postgres.schema = "covmirror_demo_" + strings.ToLower(rand.Text()[:8])
		}
		primary, closer, err := dg.openPrimary(ctx, true)
		if err != nil {
			return err
		}
		defer closer.Close()
		d.primary, d.primaryName, d.primaryFlags = primary, dg.primaryNoun(), " --durable object"
		if dg.durable == durablePostgres {
			d.primaryFlags = " --durable postgres --postgres-url URL --postgres-schema " + dg.postgres.schema
		}
	}
	if len(g.props) > 0 {
		d.namespace = dg.namespace
	}
	d.out = sim.NewOutages(r, *batches)
	d.p.Sinks[1].Down = d.out.IsDown
	killAt := *batches/2 + r.IntN(*batches/4)
	if killAt%d.every == 0 {
		killAt++ // mid-way between checkpoints
	}
	switch {
	case dg.durable == durablePostgres:
		d.say("covmirror demo, seed %d. State: %s; coverage rows in %s, mirrored into the coverage table %s in %s.",
			*seed, dir, d.primary.Name(), table.Name(), catalogName(g))
	case d.mirrored():
		d.say("covmirror demo, seed %d. State: %s; sink objects under %s, mirrored into the coverage table %s in %s.",
			*seed, dir, filepath.Join(dir, "objects"), table.Name(), catalogName(g))
	default:
		d.say("covmirror demo, seed %d. State: %s; coverage table %s in %s.", *seed, dir, table.Name(), catalogName(g))
	}
	return d.run(ctx, uint64(killAt), uint64(*batches))
}

func catalogName(g *globals) string {
	if len(g.props) == 0 {
		return "the embedded SQLite catalog"
	}
	return "the configured " + g.props["type"] + " catalog"
}

func (d *demoRun) run(ctx context.Context, killAt, batches uint64) error {
	p := d.p
	maintenance := "compaction"
	if d.mirrored() {
		maintenance = d.primaryName + " mirrored into the coverage table"
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
	if err := showGaps(ctx, d.g.stdout, d.primary, d.primaryName); err != nil {
		return err
	}

	d.say("\n5. The warehouse is back. The recovery worker plans from %s alone and replays from raw:", d.primaryName)
	d.out.Step = -1
	if err := d.recoverGaps(ctx); err != nil {
		return err
	}
	if err := showGaps(ctx, d.g.stdout, d.primary, d.primaryName); err != nil {
		return err
	}
	if err := d.compact(ctx); err != nil {
		return err
	}
	return d.verdict(ctx, batches)
}

// owner opens a pod: its own local tier under the demo's directory, the
// shared coverage table.
func (d *demoRun) owner(name string) (*mirror.Mirror, *local.Store, error) {
	l, err := local.Open(local.Options{Dir: filepath.Join(d.dir, name), Logger: d.g.logger})
	if err != nil {
		return nil, nil, err
	}
	m, err := mirror.New(mirror.Options{Local: l, Durable: d.primary, Writer: name, Logger: d.g.logger})
	if err != nil {
		_ = l.Close()
		return nil, nil, err
	}
	return m, l, nil
}

// step ingests batch b of every partition, checkpointing and compacting on
// schedule.
func (d *demoRun) step(ctx context.Context, m *mirror.Mirror, pod string, b uint64) error {
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
func (d *demoRun) compact(ctx context.Context) error {
	if d.mirrored() {
		return d.mirror(ctx)
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
func (d *demoRun) resume(ctx context.Context, m *mirror.Mirror, part int32) error {
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
func (d *demoRun) recoverGaps(ctx context.Context) error {
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
