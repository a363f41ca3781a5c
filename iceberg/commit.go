package iceberg

import (
	"context"
	"errors"
	"fmt"
	iofs "io/fs"
	"iter"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	ice "github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/internal/backoff"
	"github.com/covmirror/covmirror/internal/version"
)

// Every write of this package goes through this file: data files are
// written once and verified (writeVerified), then committed by one retry
// loop (run) that, after an unknown outcome, looks the commit up by its
// stamp (lookup) before trying again.

// stamp binds a commit's name to what it carries, in the snapshot summary:
// the same writer and name with another payload is ErrNameReused, as an
// idempotency key is in a payment API.
type stamp struct {
	name, writer string
	payload      string // digest of what the commit carries
}

func (s stamp) props() ice.Properties {
	return ice.Properties{SummaryWriter: s.writer, SummaryCheckpoint: s.name, SummaryPayload: s.payload,
		SummaryVersion: version.Get().String()}
}

// lookup reports whether a snapshot of tbl carries s's writer and name. The
// same writer and name with another payload is ErrNameReused.
func lookup(tbl *table.Table, s stamp) (bool, error) {
	for _, snap := range tbl.Metadata().Snapshots() {
		if snap.Summary == nil {
			continue
		}
		p := snap.Summary.Properties
		if p[SummaryCheckpoint] != s.name || p[SummaryWriter] != s.writer {
			continue
		}
		if p[SummaryPayload] != s.payload {
			return false, fmt.Errorf("%w: %s wrote %q to %s as snapshot %d with payload %s, now %s: give every distinct write its own name",
				durable.ErrNameReused, s.writer, s.name, strings.Join(tbl.Identifier(), "."), snap.SnapshotID, p[SummaryPayload], s.payload)
		}
		return true, nil
	}
	return false, nil
}

// commitLoop is how every commit of this package lands: data files are
// written once by the caller, then commit runs until it succeeds. A
// conflict (the table moved) is retried on the metadata reload fetches
// (the catalog's pointer and the metadata file it names, nothing else: the
// data files are not written again, only the snapshot that adds them),
// after a full-jitter pause, so that writers that lost together do not
// retry together; any other failure is retried after a capped backoff, and only
// once reload shows that the failed-looking commit did not land after all
// (an answer lost mid-flight). A reload that fails leaves the caller's
// metadata in hand for the next attempt, unless its error is ErrNameReused.
// The loop ends when ctx ends, when timeout passes (ErrCommitTimeout), or
// on an error final says no retry can mend.
type commitLoop struct {
	what    string        // names the commit and its table in errors and logs
	timeout time.Duration // Options.CommitTimeout
	commit  func() error
	reload  func() (landed bool, err error)
	final   func(error) bool // optional
}

func (t *Table) run(ctx context.Context, l commitLoop) error {
	deadline := time.Now().Add(l.timeout)
	conflicts := 0 // in this loop: the full-jitter schedule's attempt
	for attempt := 1; ; attempt++ {
		err := l.commit()
		if err == nil {
			return nil
		}
		if l.final != nil && l.final(err) {
			return err
		}
		if errors.Is(err, iofs.ErrPermission) {
			// No retry mends a permission the process lacks: look once
			// whether the commit landed anyway (a cleanup after it may be
			// what failed), and otherwise say so at once rather than after
			// CommitTimeout.
			if landed, rerr := l.reload(); rerr == nil && landed {
				return nil
			}
			return fmt.Errorf("iceberg: %s: %w (the process may not write there: fix the permissions of the warehouse or catalog; retrying cannot)", l.what, err)
		}
		if ctx.Err() != nil {
			return fmt.Errorf("iceberg: %s: %w", l.what, ctx.Err())
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%w: %s after %d attempts: %w", ErrCommitTimeout, l.what, attempt, err)
		}
		conflict := isConflict(err)
		t.opts.Logger.Debug("commit retry", "commit", l.what, "attempt", attempt, "conflict", conflict, "err", err)
		// A conflict is retried after a full-jitter pause (the table moved:
		// a retry at once meets the writers that moved it, a herd);
		// anything else, and a reload that fails, after an equal-jitter one.
		if conflict {
			conflicts++
			t.conflicts.Add(1)
			t.lastConflict.Store(time.Now().UnixNano())
			if err := backoff.Sleep(ctx, backoff.FullJitter(conflicts, conflictMinBackoff, conflictMaxBackoff)); err != nil {
				return err
			}
		} else if err := backoff.Sleep(ctx, backoff.EqualJitter(attempt, commitMinBackoff, commitMaxBackoff)); err != nil {
			return err
		}
		paused := !conflict // with the failure schedule
		landedAnyway, err := l.reload()
		if errors.Is(err, durable.ErrNameReused) {
			return err
		}
		if err != nil {
			if ctx.Err() != nil || time.Now().After(deadline) {
				return err
			}
			if !paused {
				if err := backoff.Sleep(ctx, backoff.EqualJitter(attempt, commitMinBackoff, commitMaxBackoff)); err != nil {
					return err
				}
			}
			continue
		}
		// Landed is landed, after a conflict too: an earlier attempt whose
		// answer was lost (and whose lookup failed) may be what moved the
		// table. Committing again would put its files in the table twice.
		if landedAnyway {
			return nil
		}
	}
}

// isConflict reports a commit that certainly did not land because the table
// moved under it: iceberg-go's ErrCommitFailed, or the SQL catalog's
// requirement check ("requirement failed: branch main has changed").
func isConflict(err error) bool {
	if errors.Is(err, table.ErrCommitFailed) || errors.Is(err, table.ErrCommitDiverged) {
		return true
	}
	msg := err.Error()
	return strings.Contains(msg, "requirement failed") || strings.Contains(msg, "has changed") ||
		strings.Contains(msg, "database is locked")
}

// The pause before retry attempt n (from 1) of a commit that failed
// without a conflict: backoff.EqualJitter between these.
const (
	commitMinBackoff = 100 * time.Millisecond
	commitMaxBackoff = 5 * time.Second
)

// The pause before the n-th retry (from 1) of a commit after conflicts:
// backoff.FullJitter between these. The first waits up to about one
// commit's time on a SQL catalog, spreading the writers that lost to one
// commit over the next; the cap keeps a writer that keeps losing within
// a few seconds of the table (BenchmarkPodsOneTable measures them).
const (
	conflictMinBackoff = 100 * time.Millisecond
	conflictMaxBackoff = 2 * time.Second
)

// writeVerified writes rec into tbl's data location with iceberg-go's
// writer and checks the result before anything may commit it: the files'
// record counts per partition equal rec's rows per partition, and every
// file is in the table's FileIO with its recorded size. iceberg-go's
// writer can return without an error and without one partition's file
// (when that partition's directory cannot be made, say); its nil is not
// trusted. Any mismatch is ErrUnverifiedWrite and nothing is committed.
func writeVerified(ctx context.Context, tbl *table.Table, what string, rec arrow.RecordBatch, opts ...table.WriteRecordOption) ([]ice.DataFile, error) {
	ident := strings.Join(tbl.Identifier(), ".")
	want, keyOf, err := rowsPerPartition(tbl, rec)
	if err != nil {
		return nil, err
	}
	records := func(yield func(arrow.RecordBatch, error) bool) { yield(rec, nil) }
	var files []ice.DataFile
	for df, err := range table.WriteRecords(ctx, tbl, rec.Schema(), iter.Seq2[arrow.RecordBatch, error](records), opts...) {
		if err != nil {
			return nil, fmt.Errorf("%w: writing data files of %s to %s: %w", coverage.ErrUnavailable, what, ident, err)
		}
		files = append(files, df)
	}
	got := map[string]int64{}
	for _, df := range files {
		got[keyOf(df)] += df.Count()
	}
	for key, n := range want {
		if got[key] != n {
			return nil, fmt.Errorf("%w: %s to %s: partition %s got %d rows in data files, %d were written; retry later, and if it persists look at the warehouse path of that partition",
				ErrUnverifiedWrite, what, ident, key, got[key], n)
		}
	}
	for key, n := range got {
		if _, ok := want[key]; !ok {
			return nil, fmt.Errorf("%w: %s to %s: partition %s has %d rows in data files and none were written to it", ErrUnverifiedWrite, what, ident, key, n)
		}
	}
	fs, err := tbl.FS(ctx)
	if err != nil {
		return nil, fmt.Errorf("%w: the FileIO of %s: %w", coverage.ErrUnavailable, ident, err)
	}
	for _, df := range files {
		if err := checkFile(fs, df); err != nil {
			return nil, fmt.Errorf("%w: %s to %s: %w", ErrUnverifiedWrite, what, ident, err)
		}
	}
	return files, nil
}

// rowsPerPartition counts rec's rows per partition of tbl's spec, and
// returns how to key a data file the same way. Partition values are
// computed with the spec's own transforms; a source column of a type this
// cannot read puts every row and file under one key (the total is then
// what is checked).
func rowsPerPartition(tbl *table.Table, rec arrow.RecordBatch) (map[string]int64, func(ice.DataFile) string, error) {
	spec := tbl.Spec()
	type field struct {
		id  int
		col arrow.Array
		tf  ice.Transform
	}
	var fields []field
	whole := false
	for _, pf := range spec.Fields() {
		src, ok := tbl.Schema().FindFieldByID(pf.SourceID())
		idx := rec.Schema().FieldIndices(src.Name)
		if !ok || len(idx) != 1 || !readable(rec.Column(idx[0])) {
			whole = true
			break
		}
		fields = append(fields, field{id: pf.FieldID, col: rec.Column(idx[0]), tf: pf.Transform})
	}
	want := map[string]int64{}
	if whole || len(fields) == 0 {
		want["*"] = rec.NumRows()
		return want, func(ice.DataFile) string { return "*" }, nil
	}
	var b strings.Builder
	for row := range int(rec.NumRows()) {
		b.Reset()
		for _, f := range fields {
			lit := literalAt(f.col, row)
			var v any
			if lit != nil {
				if out := f.tf.Apply(ice.Optional[ice.Literal]{Valid: true, Val: lit}); out.Valid {
					v = out.Val.Any()
				}
			}
			fmt.Fprintf(&b, "%d=%v/", f.id, v)
		}
		want[b.String()]++
	}
	return want, func(df ice.DataFile) string {
		var b strings.Builder
		p := df.Partition()
		for _, f := range fields {
			fmt.Fprintf(&b, "%d=%v/", f.id, p[f.id])
		}
		return b.String()
	}, nil
}

func readable(col arrow.Array) bool {
	switch col.(type) {
	case *array.String, *array.Int32, *array.Int64, *array.Boolean, *array.Binary:
		return true
	}
	return false
}

// literalAt is the value of col at row as an Iceberg literal, or nil for a
// null or a type it does not read.
func literalAt(col arrow.Array, row int) ice.Literal {
	if col.IsNull(row) {
		return nil
	}
	switch c := col.(type) {
	case *array.String:
		return ice.NewLiteral(c.Value(row))
	case *array.Int32:
		return ice.NewLiteral(c.Value(row))
	case *array.Int64:
		return ice.NewLiteral(c.Value(row))
	case *array.Boolean:
		return ice.NewLiteral(c.Value(row))
	case *array.Binary:
		return ice.NewLiteral(c.Value(row))
	}
	return nil
}

// checkFile checks that df is in fs with its recorded size.
func checkFile(fs icebergio.IO, df ice.DataFile) error {
	var info iofs.FileInfo
	var err error
	if st, ok := fs.(icebergio.StatIO); ok {
		info, err = st.Stat(df.FilePath())
	} else {
		var f icebergio.File
		if f, err = fs.Open(df.FilePath()); err == nil {
			info, err = f.Stat()
			_ = f.Close()
		}
	}
	if err != nil {
		return fmt.Errorf("data file %s is not readable: %w", df.FilePath(), err)
	}
	if info.Size() != df.FileSizeBytes() {
		return fmt.Errorf("data file %s holds %d bytes, its metadata says %d", df.FilePath(), info.Size(), df.FileSizeBytes())
	}
	return nil
}
