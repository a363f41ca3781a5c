// Package podtest is the test environment the planner's and the gap
// metrics' tests share: a coverage table in a fresh embedded catalog behind
// a catalog that can be switched off, and pods checkpointing into it. It is
// for tests only.
package podtest

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

// FlakyCatalog is the real catalog with a switch that makes loading tables
// fail, as an unreachable catalog does, and another that loads them through
// a second catalog instead (a read-only connection to the same SQLite file),
// so that commits meet a real database refusing writes.
type FlakyCatalog struct {
	catalog.Catalog
	Down    atomic.Bool
	Through atomic.Pointer[catalog.Catalog]
}

// ErrDown is what a FlakyCatalog that is down answers.
var ErrDown = errors.New("dial tcp 127.0.0.1:5432: connect: connection refused")

// LoadTable loads through the catalog the switches name.
func (c *FlakyCatalog) LoadTable(ctx context.Context, id table.Identifier) (*table.Table, error) {
	if c.Down.Load() {
		return nil, ErrDown
	}
	if other := c.Through.Load(); other != nil {
		// The table commits through the catalog that loaded it.
		return (*other).LoadTable(ctx, id)
	}
	return c.Catalog.LoadTable(ctx, id)
}

// Env is a coverage table and the catalog it was opened through.
type Env struct {
	Props     map[string]string
	Namespace string
	Cat       *FlakyCatalog
	Table     *iceberg.Table
}

// New is a coverage table in a fresh embedded catalog.
func New(t *testing.T) *Env {
	t.Helper()
	props, err := iceberg.EmbeddedProps(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return NewWith(t, props, "covmirror")
}

// NewWith is a coverage table in namespace of the catalog props configure.
func NewWith(t *testing.T, props map[string]string, namespace string) *Env {
	t.Helper()
	cat, err := iceberg.OpenCatalog(context.Background(), "", props)
	if err != nil {
		t.Fatal(err)
	}
	flaky := &FlakyCatalog{Catalog: cat}
	tbl, err := iceberg.Open(context.Background(), flaky, iceberg.Options{Namespace: []string{namespace}})
	if err != nil {
		t.Fatal(err)
	}
	return &Env{Props: props, Namespace: namespace, Cat: flaky, Table: tbl}
}

// Owner opens a pod: its own local tier in dir (a fresh one for ""), the
// shared table.
func (e *Env) Owner(t testing.TB, dir, writer string) *mirror.Mirror {
	t.Helper()
	if dir == "" {
		dir = t.TempDir()
	}
	l, err := local.Open(local.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	m, err := mirror.New(mirror.Options{Local: l, Durable: e.Table, Writer: writer, Interval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// Record records [start, end) of d through m.
func Record(t *testing.T, m *mirror.Mirror, d coverage.Destination, start, end uint64) {
	t.Helper()
	if err := m.Record(context.Background(), d, coverage.Range{Start: start, End: end}); err != nil {
		t.Fatal(err)
	}
}

// Committed is d's committed coverage in tier.
func Committed(t *testing.T, tier durable.Tier, d coverage.Destination) []coverage.Range {
	t.Helper()
	all, err := tier.Coverage(context.Background(), durable.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if set := all[d]; set != nil {
		return set.Ranges()
	}
	return nil
}

// AppendAt commits ranges (sink, topic, partition, start, end) into tbl and
// returns wall-clock bounds around the commit: its rows' recorded_at lies
// between them.
func AppendAt(t *testing.T, tbl *iceberg.Table, name string, rows ...any) (before, after time.Time) {
	t.Helper()
	var drs []coverage.DestinationRanges
	for i := 0; i+4 < len(rows); i += 5 {
		d := coverage.Destination{Sink: rows[i].(string), Topic: rows[i+1].(string), Partition: int32(rows[i+2].(int))}
		drs = append(drs, coverage.DestinationRanges{Destination: d,
			Ranges: []coverage.Range{{Start: uint64(rows[i+3].(int)), End: uint64(rows[i+4].(int))}}})
	}
	before = time.Now().Truncate(time.Microsecond) // recorded_at is stored in microseconds
	if err := tbl.Append(context.Background(), durable.Checkpoint{Name: name, Writer: "test", Ranges: drs}); err != nil {
		t.Fatal(err)
	}
	after = time.Now()
	time.Sleep(20 * time.Millisecond) // commits' bounds do not overlap
	return before, after
}
