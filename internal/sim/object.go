package sim

import (
	"context"
	"path/filepath"
	"time"

	"github.com/covmirror/covmirror/object"
)

// openObject opens the object tier in Dir/objects twice, as two processes
// would: through the faults for the pods, and without them for the
// checks.
func (w *world) openObject(ctx context.Context) error {
	dir := filepath.Join(w.cfg.Dir, "objects")
	faulty, err := object.OpenDir(dir)
	if err != nil {
		return err
	}
	w.closers = append(w.closers, func() error { _ = faulty.Close(); return nil })
	clean, err := object.OpenDir(dir)
	if err != nil {
		return err
	}
	w.closers = append(w.closers, func() error { _ = clean.Close(); return nil })
	// The layout is drawn: the pods write deltas, folded at the
	// compaction steps, or sink objects; the checks read both.
	layout := object.LayoutSinkObjects
	if w.r.IntN(2) == 0 {
		layout = object.LayoutDeltas
	}
	// Short backoffs: the faults are drawn, not raced, so waiting longer
	// only slows the run.
	if w.table, err = object.Open(ctx, object.Options{Blobs: &faultBlobs{Blobs: faulty, f: w.f}, Logger: w.cfg.Logger, Layout: layout,
		MaxAttempts: w.f.rates.ObjectMaxAttempts, MinBackoff: time.Millisecond, MaxBackoff: 10 * time.Millisecond}); err != nil {
		return err
	}
	if w.truth, err = object.Open(ctx, object.Options{Blobs: clean, Logger: w.cfg.Logger}); err != nil {
		return err
	}
	w.note("durable tier: objects in the %s layout, MaxAttempts %d; the coverage table is their replica", layout, w.f.rates.ObjectMaxAttempts)
	return nil
}

// fold folds the object tier's deltas, through the faults, when the run
// writes the deltas layout (a compaction step's share of the object tier).
func (w *world) fold(ctx context.Context) {
	t, ok := w.table.(*object.Tier)
	if !ok || t.Layout() != object.LayoutDeltas {
		return
	}
	res, err := t.Fold(ctx)
	w.note("fold: %+v: %v", res, errText(err))
}
