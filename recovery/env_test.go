package recovery

// The test environment mirror's own tests use: a coverage table in a fresh
// embedded catalog behind a catalog that can be switched off, and pods
// checkpointing into it.

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/iceberg"
	"github.com/covmirror/covmirror/local"
	"github.com/covmirror/covmirror/mirror"
)

var ctx = context.Background()

func rg(start, end uint64) coverage.Range { return coverage.Range{Start: start, End: end} }

// flakyCatalog is the real catalog with a switch that makes loading tables
// fail, as an unreachable catalog does, and another that loads them through
// a second catalog instead (a read-only connection to the same SQLite file),
// so that commits meet a real database refusing writes.
type flakyCatalog struct {
	catalog.Catalog
	down    atomic.Bool
	through atomic.Pointer[catalog.Catalog]
}

var errDown = errors.New("dial tcp 127.0.0.1:5432: connect: connection refused")

func (c *flakyCatalog) LoadTable(ctx context.Context, id table.Identifier) (*table.Table, error) {
	if c.down.Load() {
		return nil, errDown
	}
	if other := c.through.Load(); other != nil {
		// The table commits through the catalog that loaded it.
		return (*other).LoadTable(ctx, id)
	}
	return c.Catalog.LoadTable(ctx, id)
}

type env struct {
	props     map[string]string
	namespace string
	cat       *flakyCatalog
	table     *iceberg.Table
}

// newEnv is a coverage table in a fresh embedded catalog.
func newEnv(t *testing.T) *env {
	t.Helper()
	props, err := iceberg.EmbeddedProps(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return newEnvWith(t, props, "covmirror")
}

func newEnvWith(t *testing.T, props map[string]string, namespace string) *env {
	t.Helper()
	cat, err := iceberg.OpenCatalog(ctx, "", props)
	if err != nil {
		t.Fatal(err)
	}
	flaky := &flakyCatalog{Catalog: cat}
	tbl, err := iceberg.Open(ctx, flaky, iceberg.Options{Namespace: []string{namespace}})
	if err != nil {
		t.Fatal(err)
	}
	return &env{props: props, namespace: namespace, cat: flaky, table: tbl}
}

// owner opens a pod: its own local tier in dir, the shared table.
func (e *env) owner(t testing.TB, dir, writer string) *mirror.Mirror {
	t.Helper()
	if dir == "" {
		dir = t.TempDir()
	}
	l, err := local.Open(local.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	m, err := mirror.New(mirror.Options{Local: l, Durable: e.table, Writer: writer, Interval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func record(t *testing.T, m *mirror.Mirror, d coverage.Destination, start, end uint64) {
	t.Helper()
	if err := m.Record(ctx, d, rg(start, end)); err != nil {
		t.Fatal(err)
	}
}

func committed(t *testing.T, e *env, d coverage.Destination) []coverage.Range {
	t.Helper()
	all, err := e.table.Coverage(ctx, durable.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if set := all[d]; set != nil {
		return set.Ranges()
	}
	return nil
}

// appendAt commits ranges (sink, topic, partition, start, end) into t and
// returns wall-clock bounds around the commit: its rows' recorded_at lies
// between them.
func appendAt(t *testing.T, tbl *iceberg.Table, name string, rows ...any) (before, after time.Time) {
	t.Helper()
	var drs []coverage.DestinationRanges
	for i := 0; i+4 < len(rows); i += 5 {
		d := coverage.Destination{Sink: rows[i].(string), Topic: rows[i+1].(string), Partition: int32(rows[i+2].(int))}
		drs = append(drs, coverage.DestinationRanges{Destination: d,
			Ranges: []coverage.Range{rg(uint64(rows[i+3].(int)), uint64(rows[i+4].(int)))}})
	}
	before = time.Now().Truncate(time.Microsecond) // recorded_at is stored in microseconds
	if err := tbl.Append(ctx, durable.Checkpoint{Name: name, Writer: "test", Ranges: drs}); err != nil {
		t.Fatal(err)
	}
	after = time.Now()
	time.Sleep(20 * time.Millisecond) // commits' bounds do not overlap
	return before, after
}
