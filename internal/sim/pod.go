package sim

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/internal/demo"
	"github.com/covmirror/covmirror/local"
	"github.com/covmirror/covmirror/mirror"
	"github.com/covmirror/covmirror/recovery"
)

// pod is one pipeline pod: its local tier on its own (in-memory, crashable)
// disk, behind the filesystem faults, and its Mirror into the shared table.
type pod struct {
	name  string
	mem   *vfs.MemFS
	local *local.Store
	m     *mirror.Mirror
	fails int // local failures in a row; a supervisor restarts the pod at 3
}

const podDir = "/covmirror"

// openPod opens name's local tier on mem and a Mirror over it. Opening is
// retried; a disk that keeps failing the open is opened without faults
// (noted), since a pod that cannot start tests nothing.
func (w *world) openPod(name string, mem *vfs.MemFS) (*pod, error) {
	opts := local.Options{Dir: podDir, FS: errorfs.Wrap(mem, w.f.fs()), CommitDelay: -1, RecoverCorrupt: true, Logger: w.cfg.Logger}
	l, err := local.Open(opts)
	for attempt := 1; err != nil && attempt < 5; attempt++ {
		// Each attempt is a new process: the disk as the last one left it
		// (a killed process loses no written data), no locks held.
		mem = mem.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 100, RNG: rand.New(rand.NewPCG(1, 1))})
		opts.FS = errorfs.Wrap(mem, w.f.fs())
		l, err = local.Open(opts)
	}
	if err != nil {
		w.note("%s: local open failed 5 times (%v); opened without filesystem faults", name, err)
		mem = mem.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 100, RNG: rand.New(rand.NewPCG(1, 1))})
		opts.FS = mem
		if l, err = local.Open(opts); err != nil {
			return nil, fmt.Errorf("%s: the local tier does not open after a crash, even without faults: %w", name, err)
		}
	}
	m, err := mirror.New(mirror.Options{Local: l, Durable: w.table, Writer: name, Logger: w.cfg.Logger})
	if err != nil {
		_ = l.Close()
		return nil, err
	}
	return &pod{name: name, mem: mem, local: l, m: m}, nil
}

// newPod starts a new owner on a fresh disk.
func (w *world) newPod(ctx context.Context) error {
	w.pods++
	p, err := w.openPod(fmt.Sprintf("pod-%d", w.pods), vfs.NewCrashableMem())
	if err != nil {
		return err
	}
	w.pod = p
	w.note("%s starts on a fresh disk", p.name)
	return nil
}

// kill stops the pod without a final checkpoint. Its disk stays as it is.
func (p *pod) kill() { _ = p.local.Close() }

// crash models the pod's machine losing power: its disk keeps what was
// synced and a random share of what was not; the pod restarts on it.
func (w *world) crash(ctx context.Context) error {
	old := w.pod
	clone := old.mem.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: w.r.IntN(101), RNG: rand.New(rand.NewPCG(w.r.Uint64(), 0))})
	old.kill()
	p, err := w.openPod(old.name, clone)
	if err != nil {
		return err
	}
	w.pod = p
	w.note("%s crashed and restarted", p.name)
	return nil
}

// replayer replays from the simulated raw and verifies raw by reading it.
// A replay overlapping batches raw has lost (lost, by raw's destination)
// fails with a *recovery.UnrecoverableError naming them, one overlapping
// batches its sink refuses (refuses) with a *recovery.RefusedError naming
// those; either writes nothing.
type replayer struct {
	p       *demo.Pipeline
	refuses map[coverage.Destination]*coverage.RangeSet
	lost    map[coverage.Destination]*coverage.RangeSet
}

func (w *world) replayer() replayer { return replayer{p: w.p, refuses: w.refuses, lost: w.rawLost} }

func (r replayer) Replay(_ context.Context, t recovery.Task) error {
	if lost := within(r.lost[r.p.Destination(t.Destination.Partition)], t.Range); len(lost) > 0 {
		return &recovery.UnrecoverableError{Ranges: lost, Reason: "raw's retention expired them (simulated)"}
	}
	if refused := within(r.refuses[t.Destination], t.Range); len(refused) > 0 {
		return &recovery.RefusedError{Reason: "400: the row violates a constraint (simulated)", Ranges: refused}
	}
	return r.p.Replay(t.Destination, t.Range)
}

// within is set's ranges cut to r; none for a nil set.
func within(set *coverage.RangeSet, r coverage.Range) []coverage.Range {
	if set == nil {
		return nil
	}
	one, _ := coverage.NewRangeSet(r) // a task's range is valid
	lacks := coverage.Gaps(&one, set)
	in := coverage.Gaps(&one, &lacks)
	return in.Ranges()
}

// VerifyReference implements recovery.ReferenceVerifier: what of the task's
// range raw really holds.
func (r replayer) VerifyReference(_ context.Context, t recovery.Task) ([]coverage.Range, error) {
	task, err := coverage.NewRangeSet(t.Range)
	if err != nil {
		return nil, err
	}
	lacks := coverage.Gaps(&task, r.p.Raw.Holds(t.Destination))
	held := coverage.Gaps(&task, &lacks)
	return held.Ranges(), nil
}

// extents are the source's acked extents: per partition, from batch 0 to
// the batch after the last one acked.
func (w *world) extents() []coverage.Extent {
	var out []coverage.Extent
	for part := range w.p.Partitions {
		if end := w.p.AckedEnd[part]; end > 0 {
			out = append(out, coverage.Extent{Topic: w.p.Topic, Partition: part, End: end})
		}
	}
	return out
}

// plan is recovery.Plan from a view of the durable tier and its gap
// states: the faulty ones, as the recovery worker sees them, or the true
// ones.
func (w *world) plan(ctx context.Context, t durable.Tier, states durable.StateStore, maxBatches uint64) ([]recovery.Task, error) {
	events, err := states.States(ctx, durable.Filter{})
	if err != nil {
		return nil, err
	}
	tasks, err := recovery.Plan(ctx, noStates{t}, recovery.PlanOptions{MaxBatches: maxBatches, Sinks: w.p.SinkNames(), Extents: w.extents(), States: events})
	if errors.Is(err, recovery.ErrNoReference) {
		return nil, fmt.Errorf("%w (raw's records may all have been lost; the source's acked ends were given)", err)
	}
	return tasks, err
}

// recoverTasks is recovery.RecoverStates through the pod, recording
// refusals and losses in the faulty state store.
func (w *world) recoverTasks(ctx context.Context, tasks []recovery.Task, states durable.StateStore) (recovery.Outcome, error) {
	out, err := recovery.RecoverStates(ctx, tasks, w.replayer(), w.pod.m, recovery.RecoverOptions{States: states, By: "sim-recovery", Now: w.now})
	w.res.Ops["states: held by recovery"] += out.Held
	return out, err
}
