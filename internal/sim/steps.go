package sim

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/covmirror/covmirror/compaction"
	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/iceberg"
	"github.com/covmirror/covmirror/internal/demo"
	"github.com/covmirror/covmirror/recovery"
)

// localFailed counts a failure of the pod's local tier; after three in a
// row its supervisor restarts it (a crash: no final checkpoint).
func (w *world) localFailed(ctx context.Context, err error) error {
	w.pod.fails++
	if w.pod.fails < 3 {
		return nil
	}
	w.note("%s: local tier failing (%v): restarted", w.pod.name, err)
	w.res.Ops["restart"]++
	return w.crash(ctx)
}

func (w *world) ingest(ctx context.Context) error {
	part := int32(w.r.IntN(int(w.p.Partitions)))
	b := w.p.AckedEnd[part] // the simulated stream starts at batch 0, as a broker's offsets do
	var lost error
	w.p.RecordFailed = func(err error) error { lost = err; w.res.Ops["record lost"]++; return nil }
	acked, err := w.p.Ingest(ctx, w.pod.m, part, b)
	if err != nil {
		return fmt.Errorf("ingest of batch %d of partition %d: %w", b, part, err)
	}
	w.note("ingest %d/%d: acked %v, a record lost: %v", part, b, acked, lost != nil)
	if lost != nil {
		return w.localFailed(ctx, lost)
	}
	w.pod.fails = 0
	return nil
}

func (w *world) outage(context.Context) error {
	s := w.p.Sinks[w.r.IntN(len(w.p.Sinks))]
	w.down[s.Name] = !w.down[s.Name]
	w.note("%s down: %v", s.Name, w.down[s.Name])
	return nil
}

func (w *world) checkpoint(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	err := w.pod.m.Sync(ctx)
	w.note("%s checkpoint: %v", w.pod.name, errText(err))
	return nil
}

// compact compacts the coverage table: the tier, or the object tier's
// replica.
func (w *world) compact(ctx context.Context) error {
	w.fold(ctx)
	res, err := compaction.Compact(ctx, w.ice, compaction.Options{Job: "sim-compaction", Logger: w.cfg.Logger})
	if errors.Is(err, compaction.ErrNotSetEqual) {
		return err
	}
	w.note("compaction: %d files into %d: %v", res.FilesRead, res.FilesWritten, errText(err))
	return nil
}

// rebalance hands the partitions to a new owner on a fresh disk: the old
// pod closes (a final checkpoint) or dies, and the new one resumes from the
// durable tier alone, recovering what each assignment says.
func (w *world) rebalance(ctx context.Context) error {
	old := w.pod
	if w.r.IntN(2) == 0 {
		w.note("%s closes: %v", old.name, errText(old.m.Close()))
	} else {
		old.kill()
		w.note("%s dies", old.name)
	}
	w.pod = nil
	if err := w.newPod(ctx); err != nil {
		return err
	}
	for part := range w.p.Partitions {
		var assignments []recovery.Assignment
		var err error
		for range 3 {
			opts := recovery.ResumeOptions{Sinks: w.p.SinkNames(), Extents: w.extents()}
			if assignments, err = recovery.Resume(ctx, w.table, w.p.Topic, part, opts); err == nil {
				break
			}
		}
		if err != nil {
			w.note("resume of partition %d failed: %v", part, err)
			continue
		}
		for _, a := range assignments {
			tasks, err := a.Tasks(0, 0) // one task per range: no cut
			if err != nil {
				return err
			}
			out, err := w.recoverTasks(ctx, tasks, w.states)
			w.note("resume %s %s %v: %d done, %d held: %v", a.Destination, a.Kind, a.Replay, out.Done, out.Held, errText(err))
		}
	}
	return nil
}

// recover is the recovery worker's round: plan from the durable tier, recover
// through the pod, as far as the sinks and faults let it.
func (w *world) recover(ctx context.Context) error {
	tasks, err := w.plan(ctx, w.table, w.states, 1+uint64(w.r.IntN(30)))
	if err != nil {
		w.note("plan: %v", err)
		return nil
	}
	out, err := w.recoverTasks(ctx, tasks, w.states)
	w.note("recover: %d of %d tasks done, %d held: %v", out.Done, len(tasks), out.Held, errText(err))
	return nil
}

// check is the invariant, after every step, against the stores' contents.
func (w *world) check(ctx context.Context) error {
	replica, err := w.readReplica(ctx)
	if err != nil {
		return err
	}
	committed, err := w.truth.Coverage(ctx, durable.Filter{})
	if err != nil {
		return fmt.Errorf("reading the durable tier without faults: %w", err)
	}
	if err := w.p.CheckClaims("the durable tier ("+w.cfg.Durable+")", committed); err != nil {
		return err
	}
	if err := checkReplica(replica, committed); err != nil {
		return err
	}
	if err := w.checkStates(ctx, committed); err != nil {
		return err
	}
	diag, err := w.pod.local.Diagnostics(ctx)
	if err != nil {
		w.note("%s: no diagnostics: %v", w.pod.name, err)
		return nil
	}
	claims := map[coverage.Destination]*coverage.RangeSet{}
	for _, dd := range diag.Destinations {
		covered, err := coverage.NewRangeSet(dd.Covered...)
		if err != nil {
			return fmt.Errorf("%s's local tier reports %s covered: %w", w.pod.name, dd.Destination, err)
		}
		pending, err := coverage.NewRangeSet(dd.Pending...)
		if err != nil {
			return fmt.Errorf("%s's local tier reports %s pending: %w", w.pod.name, dd.Destination, err)
		}
		claims[dd.Destination] = &covered
		checkpointed := coverage.Gaps(&covered, &pending)
		inTable := committed[dd.Destination]
		if inTable == nil {
			inTable = new(coverage.RangeSet)
		}
		if extra := coverage.Gaps(&checkpointed, inTable); !extra.IsEmpty() {
			return fmt.Errorf("%w: %s's local tier marks %s of %s checkpointed, which the durable tier lacks (it has %s)",
				demo.ErrLeads, w.pod.name, extra.String(), dd.Destination, inTable)
		}
	}
	return w.p.CheckClaims(w.pod.name+"'s local tier", claims)
}

// quiesce is recovery with faults off: checkpoint, plan, recover, until
// the plan has nothing left that raw can serve; then every sink must hold
// every batch raw holds, and the durable tier must say so.
func (w *world) quiesce(ctx context.Context) error {
	// A local tier that failed on a fault stays failed (it says to restart
	// the process); ingests restart it after three failures in a row, but
	// one that failed in a checkpoint late in the run may still be down.
	// Its supervisor's health probe restarts it.
	if diag, err := w.pod.local.Diagnostics(ctx); err == nil && diag.Failed != "" {
		w.note("%s: local tier failed (%s): restarted", w.pod.name, diag.Failed)
		w.res.Ops["restart"]++
		if err := w.crash(ctx); err != nil {
			return err
		}
	}
	if err := w.fixAndReopen(ctx); err != nil {
		return err
	}
	for round := 1; ; round++ {
		w.step++
		if err := w.pod.m.Sync(ctx); err != nil {
			return fmt.Errorf("checkpoint with faults off: %w", err)
		}
		if err := w.check(ctx); err != nil {
			return err
		}
		tasks, err := w.plan(ctx, w.truth, w.statesTruth, 0)
		if err != nil {
			return fmt.Errorf("plan with faults off: %w", err)
		}
		var work []recovery.Task
		for _, t := range tasks {
			if t.Kind == recovery.KindVerifyReference {
				if held, _ := w.replayer().VerifyReference(ctx, t); len(held) == 0 {
					continue // a hole raw has nothing of: nothing to recover
				}
			}
			work = append(work, t)
		}
		w.note("quiesce round %d: %d tasks, %d with work", round, len(tasks), len(work))
		if len(work) == 0 {
			break
		}
		if round == 10 {
			return fmt.Errorf("recovery does not quiesce: after 10 rounds the plan still has %v", work)
		}
		if out, err := w.recoverTasks(ctx, work, w.statesTruth); err != nil || out.Held > 0 {
			return fmt.Errorf("recovery with faults off, every state reopened: %d of %d done, %d held: %v", out.Done, len(work), out.Held, errText(err))
		}
	}
	committed, err := w.truth.Coverage(ctx, durable.Filter{})
	if err != nil {
		return err
	}
	if problems := w.p.Incomplete(committed, 0); len(problems) > 0 {
		return fmt.Errorf("after recovery with faults off: %v", problems)
	}
	if err := w.checkNoneHeld(ctx); err != nil {
		return err
	}
	if err := w.checkDataFiles(ctx); err != nil {
		return err
	}
	if err := w.finalReplica(ctx); err != nil {
		return err
	}
	// The faults are gone: whatever they left in the coverage table (the
	// tier, or the replica), a compaction must now go through, or the
	// table grows for ever.
	res, err := compaction.Compact(ctx, w.ice, compaction.Options{Job: "sim-compaction", Logger: w.cfg.Logger})
	w.note("final compaction: %d files into %d: %v", res.FilesRead, res.FilesWritten, errText(err))
	if err != nil {
		return fmt.Errorf("compaction of the coverage table with faults off: %w", err)
	}
	return nil
}

// checkDataFiles fails if the coverage table lists a data file twice: a
// commit applied twice. Its coverage is still right (a union), but every
// later rewrite of that sink (compaction, replication) is refused.
func (w *world) checkDataFiles(ctx context.Context) error {
	tbl, err := w.iceTruth.Load(ctx)
	if err != nil {
		return fmt.Errorf("loading the coverage table without faults: %w", err)
	}
	tasks, err := iceberg.DataFiles(ctx, tbl)
	if err != nil {
		return fmt.Errorf("listing the coverage table's data files without faults: %w", err)
	}
	seen := map[string]int{}
	for _, t := range tasks {
		if seen[t.File.FilePath()]++; seen[t.File.FilePath()] == 2 {
			return fmt.Errorf("the coverage table lists data file %s twice: a commit was applied twice (%s)",
				filepath.Base(t.File.FilePath()), committedTwice(tbl))
		}
	}
	return nil
}

// committedTwice names the commits whose writer and name are in more than
// one snapshot of tbl.
func committedTwice(tbl *table.Table) string {
	count := map[string]int{}
	for _, snap := range tbl.Metadata().Snapshots() {
		if snap.Summary != nil && snap.Summary.Properties[iceberg.SummaryCheckpoint] != "" {
			count[snap.Summary.Properties[iceberg.SummaryWriter]+" "+snap.Summary.Properties[iceberg.SummaryCheckpoint]]++
		}
	}
	var twice []string
	for _, k := range sortedKinds(count) {
		if count[k] > 1 {
			twice = append(twice, fmt.Sprintf("%s in %d snapshots", k, count[k]))
		}
	}
	if len(twice) == 0 {
		return "no commit name is in two snapshots"
	}
	return strings.Join(twice, ", ")
}

func errText(err error) string {
	if err == nil {
		return "ok"
	}
	return err.Error()
}
