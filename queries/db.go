package queries

import (
	"cmp"
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go/table"
	duckdb "github.com/duckdb/duckdb-go/v2"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/iceberg"
)

// Binding says how the coverage relation was bound.
type Binding string

const (
	// ReadParquet: a view over read_parquet of the snapshot's data files.
	ReadParquet Binding = "read_parquet"
	// Scan: the rows of an iceberg-go scan, appended into a DuckDB table.
	Scan Binding = "scan"
)

// DB is an in-memory DuckDB database with the coverage relations bound to
// one snapshot of the coverage table, attached to the process's one DuckDB
// instance (see openDuckDB). Not safe for concurrent use; DBs are
// independent of each other.
type DB struct {
	db       *sql.DB
	conn     *sql.Conn
	catalog  string // its database in the shared instance (openDuckDB)
	snapshot int64
	binding  Binding
	tier     string // the durable tier's name, when OpenTier bound it
	// extents are what acked_extents holds, when extentsBound.
	extents      []coverage.Extent
	extentsBound bool
	// sinks are what named_sinks holds, when sinksBound.
	sinks      []namedRow
	sinksBound bool
}

// Options configures Open. The zero value is the default.
type Options struct {
	// Binding forces a binding of the coverage relation. Zero value:
	// ReadParquet when every data file is a local path, Scan otherwise,
	// chosen per snapshot when it is bound.
	Binding Binding
}

// EnsureDefaults fills in zero values. There is none to fill: the zero
// Binding is chosen from the data files at bind time.
func (o *Options) EnsureDefaults() {}

// Validate reports options Open and OpenSnapshot cannot use (OpenTier
// takes only the zero Binding or FromTier, and says so itself).
func (o *Options) Validate() error {
	if o.Binding != "" && o.Binding != ReadParquet && o.Binding != Scan {
		return fmt.Errorf("queries: unknown binding %q: use %q or %q", o.Binding, ReadParquet, Scan)
	}
	return nil
}

// Open binds the current snapshot of t's table.
func Open(ctx context.Context, t *iceberg.Table, opts Options) (*DB, error) {
	tbl, err := t.Load(ctx)
	if err != nil {
		return nil, err
	}
	q, err := OpenSnapshot(ctx, tbl, opts)
	if err != nil {
		return nil, err
	}
	// The table's gap states, where it keeps them (read after the
	// snapshot: a state is never coverage, so a later one only sorts
	// gaps the snapshot has).
	if err := q.bindStatesOf(ctx, any(t)); err != nil {
		_ = q.Close()
		return nil, err
	}
	return q, nil
}

// OpenSnapshot binds the current snapshot of already loaded metadata. It
// fails with iceberg.ErrDeleteFiles if the snapshot has delete files.
func OpenSnapshot(ctx context.Context, tbl *table.Table, opts Options) (*DB, error) {
	opts.EnsureDefaults()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	tasks, err := iceberg.DataFiles(ctx, tbl)
	if err != nil {
		return nil, fmt.Errorf("queries: %w", err)
	}
	db, conn, catalog, err := openDuckDB(ctx)
	if err != nil {
		return nil, err
	}
	q := &DB{db: db, conn: conn, catalog: catalog}
	if s := tbl.CurrentSnapshot(); s != nil {
		q.snapshot = s.SnapshotID
	}
	if err := q.bind(ctx, tbl, tasks, opts.Binding); err != nil {
		_ = q.Close()
		return nil, fmt.Errorf("queries: binding %s: %w", tbl.Identifier(), err)
	}
	return q, nil
}

// Snapshot is the bound snapshot's id; 0 for a table without snapshots.
func (q *DB) Snapshot() int64 { return q.snapshot }

// Binding says how the coverage relation was bound.
func (q *DB) Binding() Binding { return q.binding }

const coverageColumns = `sink VARCHAR, topic VARCHAR, "partition" INTEGER, range_start BIGINT, range_end BIGINT, writer VARCHAR, checkpoint_id VARCHAR, recorded_at TIMESTAMPTZ`

func (q *DB) bind(ctx context.Context, tbl *table.Table, tasks []table.FileScanTask, want Binding) error {
	paths, local := localPaths(tasks)
	if want == Scan {
		local = false
	} else if want == ReadParquet && !local {
		return fmt.Errorf("read_parquet needs a local warehouse; the data files are at %s", tasks[0].File.FilePath())
	}
	for _, ddl := range []string{extentsDDL, namedSinksDDL, statesDDL} {
		if _, err := q.conn.ExecContext(ctx, ddl); err != nil {
			return err
		}
	}
	q.extentsBound, q.sinksBound = true, true // empty, as none are given
	switch {
	case len(tasks) == 0:
		q.binding = cmp.Or(want, ReadParquet)
		if _, err := q.conn.ExecContext(ctx, `CREATE TABLE coverage (`+coverageColumns+`)`); err != nil {
			return err
		}
	case local:
		q.binding = ReadParquet
		quoted := make([]string, len(paths))
		for i, p := range paths {
			quoted[i] = "'" + strings.ReplaceAll(p, "'", "''") + "'"
		}
		// Paths hold sink names, hence hive_partitioning off: the columns
		// come from the files, never from the path.
		view := `CREATE VIEW coverage AS SELECT sink, topic, "partition", range_start, range_end, writer, checkpoint_id, recorded_at
			FROM read_parquet([` + strings.Join(quoted, ", ") + `], hive_partitioning = false, union_by_name = true)`
		if _, err := q.conn.ExecContext(ctx, view); err != nil {
			return err
		}
	default:
		q.binding = Scan
		if err := q.appendScan(ctx, tbl); err != nil {
			return err
		}
	}
	if err := q.checkRows(ctx); err != nil {
		return err
	}
	return q.bindMetadata(ctx, tbl, tasks)
}

// checkRows refuses a coverage relation holding a row that the Go readers
// refuse as coverage.ErrCorrupt: a null where the queries read, an empty
// sink or topic, a negative partition or start, or an end at or before its
// start. Another engine can append such a row, and the queries would take
// it as coverage or count its batches twice. (The Go readers also refuse
// names that are not UTF-8 or too long; the queries show those as they
// are.)
func (q *DB) checkRows(ctx context.Context) error {
	// The condition alone first: its columns are read for every row, and
	// a string column more (writer, checkpoint_id) costs a tenth of a
	// gaps query. The row's writer and checkpoint are fetched only when
	// there is a row to show.
	const invalid = `sink IS NULL OR topic IS NULL OR "partition" IS NULL OR range_start IS NULL OR range_end IS NULL
   OR sink = '' OR topic = '' OR "partition" < 0 OR range_start < 0 OR range_end <= range_start`
	found, err := q.RunSQL(ctx, `SELECT EXISTS (SELECT 1 FROM coverage WHERE `+invalid+`)`, Params{})
	if err != nil {
		return err
	}
	if ok, _ := found.Rows[0][0].(bool); !ok {
		return nil
	}
	res, err := q.RunSQL(ctx, `SELECT sink, topic, "partition", range_start, range_end, writer, checkpoint_id FROM coverage WHERE `+invalid+` LIMIT 1`, Params{})
	if err != nil {
		return err
	}
	if len(res.Rows) == 0 {
		return fmt.Errorf("%w: the coverage table holds a row that is not a valid range of a destination, and a second read did not find it", coverage.ErrCorrupt)
	}
	shown := make([]string, len(res.Rows[0]))
	for i, v := range res.Rows[0] {
		shown[i] = "NULL"
		if v != nil {
			shown[i] = fmt.Sprintf("%q", fmt.Sprint(v))
		}
	}
	return fmt.Errorf("%w: the coverage table holds a row that is not a valid range of a destination (sink %s, topic %s, partition %s, range_start %s, range_end %s; writer %s, checkpoint %s); rows of the coverage table are written only by covmirror: remove it, or roll back the snapshot that added it, before querying",
		coverage.ErrCorrupt, shown[0], shown[1], shown[2], shown[3], shown[4], shown[5], shown[6])
}

// localPaths are the tasks' files as local paths, if every one is local.
func localPaths(tasks []table.FileScanTask) ([]string, bool) {
	paths := make([]string, 0, len(tasks))
	for _, task := range tasks {
		p := task.File.FilePath()
		switch {
		case strings.HasPrefix(p, "file:"):
			u, err := url.Parse(p)
			if err != nil {
				return nil, false
			}
			p = u.Path // as iceberg-go's local file IO reads it
		case !strings.HasPrefix(p, "/"):
			return nil, false
		}
		paths = append(paths, p)
	}
	return paths, true
}

// appendScan streams an iceberg-go scan into a DuckDB table.
func (q *DB) appendScan(ctx context.Context, tbl *table.Table) error {
	if _, err := q.conn.ExecContext(ctx, `CREATE TABLE coverage (`+coverageColumns+`)`); err != nil {
		return err
	}
	_, records, err := tbl.Scan().ToArrowRecords(ctx)
	if err != nil {
		return fmt.Errorf("%w: scanning: %w", coverage.ErrUnavailable, err)
	}
	return q.appendTo(ctx, "coverage", func(add func(...driver.Value) error) error {
		for rec, err := range records {
			if err != nil {
				return fmt.Errorf("%w: scanning: %w", coverage.ErrUnavailable, err)
			}
			err = appendRecord(rec, add)
			rec.Release()
			if err != nil {
				return err
			}
		}
		return nil
	})
}

func appendRecord(rec arrow.RecordBatch, add func(...driver.Value) error) error {
	cols := map[string]arrow.Array{}
	for i, f := range rec.Schema().Fields() {
		cols[f.Name] = rec.Column(i)
	}
	sink, okS := cols[iceberg.ColSink].(*array.String)
	topic, okT := cols[iceberg.ColTopic].(*array.String)
	partition, okP := cols[iceberg.ColPartition].(*array.Int32)
	start, okA := cols[iceberg.ColRangeStart].(*array.Int64)
	end, okB := cols[iceberg.ColRangeEnd].(*array.Int64)
	writer, okW := cols[iceberg.ColWriter].(*array.String)
	checkpoint, okC := cols[iceberg.ColCheckpointID].(*array.String)
	recordedAt, okR := cols[iceberg.ColRecordedAt].(*array.Timestamp)
	if !(okS && okT && okP && okA && okB && okW && okC && okR) {
		return fmt.Errorf("%w: scan returned columns %s", iceberg.ErrIncompatibleTable, rec.Schema())
	}
	unit := recordedAt.DataType().(*arrow.TimestampType).Unit
	columns := []arrow.Array{sink, topic, partition, start, end, writer, checkpoint, recordedAt}
	nulls := 0
	for _, c := range columns {
		nulls += c.NullN()
	}
	values := make([]driver.Value, len(columns))
	for i := range int(rec.NumRows()) {
		values[0], values[1], values[2], values[3] = sink.Value(i), topic.Value(i), partition.Value(i), start.Value(i)
		values[4], values[5], values[6], values[7] = end.Value(i), writer.Value(i), checkpoint.Value(i), recordedAt.Value(i).ToTime(unit)
		if nulls > 0 {
			// A null stays NULL, for checkRows to see, not Value's zero.
			for k, c := range columns {
				if c.IsNull(i) {
					values[k] = nil
				}
			}
		}
		if err := add(values...); err != nil {
			return err
		}
	}
	return nil
}

// bindMetadata fills coverage_files and coverage_snapshots.
func (q *DB) bindMetadata(ctx context.Context, tbl *table.Table, tasks []table.FileScanTask) error {
	if _, err := q.conn.ExecContext(ctx, `CREATE TABLE coverage_files (sink VARCHAR, file_path VARCHAR, record_count BIGINT, file_size_in_bytes BIGINT)`); err != nil {
		return err
	}
	if _, err := q.conn.ExecContext(ctx, `CREATE TABLE coverage_snapshots (snapshot_id BIGINT, committed_at TIMESTAMPTZ, operation VARCHAR)`); err != nil {
		return err
	}
	err := q.appendTo(ctx, "coverage_files", func(add func(...driver.Value) error) error {
		for _, task := range tasks {
			sink, _ := iceberg.SinkOf(task.File)
			if err := add(sink, task.File.FilePath(), task.File.Count(), task.File.FileSizeBytes()); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	return q.appendTo(ctx, "coverage_snapshots", func(add func(...driver.Value) error) error {
		for _, s := range tbl.Metadata().Snapshots() {
			op := ""
			if s.Summary != nil {
				op = string(s.Summary.Operation)
			}
			if err := add(s.SnapshotID, time.UnixMilli(s.TimestampMs).UTC(), op); err != nil {
				return err
			}
		}
		return nil
	})
}

// appendTo runs fill with a DuckDB appender on the named table.
func (q *DB) appendTo(ctx context.Context, name string, fill func(add func(...driver.Value) error) error) error {
	return q.conn.Raw(func(raw any) error {
		conn, ok := raw.(driver.Conn)
		if !ok {
			return fmt.Errorf("DuckDB connection is a %T", raw)
		}
		app, err := duckdb.NewAppender(conn, q.catalog, "", name)
		if err != nil {
			return err
		}
		if err := fill(app.AppendRow); err != nil {
			_ = app.Close()
			return err
		}
		return app.Close()
	})
}
