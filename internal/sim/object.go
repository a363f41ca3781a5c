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
	// Short backoffs: the faults are drawn, not raced, so waiting longer
	// only slows the run.
	if w.table, err = object.Open(ctx, object.Options{Blobs: &faultBlobs{Blobs: faulty, f: w.f}, Logger: w.cfg.Logger,
		MaxAttempts: w.f.rates.ObjectMaxAttempts, MinBackoff: time.Millisecond, MaxBackoff: 10 * time.Millisecond}); err != nil {
		return err
	}
	if w.truth, err = object.Open(ctx, object.Options{Blobs: clean, Logger: w.cfg.Logger}); err != nil {
		return err
	}
	w.note("durable tier: sink objects, MaxAttempts %d; the coverage table is their replica", w.f.rates.ObjectMaxAttempts)
	return nil
}
