package mirror

import (
	"context"
	"errors"
	"math"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/iceberg"
	"github.com/covmirror/covmirror/local"
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

// shortCommitTimeout reopens the table with a 300 ms commit timeout: a
// commit refused for a reason other than a conflict is retried on fresh
// metadata until the timeout, which tests of outages keep short.
func (e *env) shortCommitTimeout(t *testing.T) {
	t.Helper()
	tbl, err := iceberg.Open(ctx, e.cat, iceberg.Options{Namespace: []string{e.namespace}, CommitTimeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	e.table = tbl
}

// owner opens a pod: its own local tier in dir, the shared table.
func (e *env) owner(t testing.TB, dir, writer string) *Mirror {
	t.Helper()
	if dir == "" {
		dir = t.TempDir()
	}
	l, err := local.Open(local.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	m, err := New(Options{Local: l, Durable: e.table, Writer: writer, Interval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func record(t *testing.T, m *Mirror, d coverage.Destination, start, end uint64) {
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

func TestSyncCommitsPendingAndOnlyThenMarks(t *testing.T) {
	e := newEnv(t)
	m := e.owner(t, "", "pod-a")
	defer m.Close()
	d := coverage.Destination{Sink: "lake", Topic: "orders"}
	record(t, m, d, 1, 5)
	record(t, m, d, 9, 12)
	if got := committed(t, e, d); got != nil {
		t.Fatalf("committed before any checkpoint: %v", got)
	}
	if err := m.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if got := committed(t, e, d); !slices.Equal(got, []coverage.Range{rg(1, 5), rg(9, 12)}) {
		t.Fatalf("committed %v", got)
	}
	if s := m.Stats(); s.PendingBatches != 0 || s.Checkpoints != 1 || s.Records != 2 {
		t.Fatalf("stats %+v", s)
	}
	if err := m.Sync(ctx); err != nil { // nothing pending: no commit
		t.Fatal(err)
	}
	tbl, _ := e.table.Load(ctx)
	if n := len(tbl.Metadata().Snapshots()); n != 1 {
		t.Fatalf("%d snapshots after one checkpoint and an empty one", n)
	}
}

// TestCatalogUnreachable: checkpoints fail with a clear error while records
// keep landing locally; once the catalog is back one Sync catches up.
func TestCatalogUnreachable(t *testing.T) {
	e := newEnv(t)
	m := e.owner(t, "", "pod-a")
	defer m.Close()
	d := coverage.Destination{Sink: "lake", Topic: "orders"}
	record(t, m, d, 1, 10)
	e.cat.down.Store(true)
	err := m.Sync(ctx)
	if !errors.Is(err, coverage.ErrUnavailable) || !strings.Contains(err.Error(), "connection refused") || !strings.Contains(err.Error(), "covmirror.coverage") {
		t.Fatalf("sync with the catalog down: %v", err)
	}
	record(t, m, d, 10, 20)
	record(t, m, d, 30, 40)
	if err := m.Sync(ctx); err == nil {
		t.Fatal("second sync with the catalog down succeeded")
	}
	if s := m.Stats(); s.ConsecutiveFailures != 2 || s.PendingBatches != 29 || s.LastError == "" {
		t.Fatalf("stats while down: %+v", s)
	}
	e.cat.down.Store(false)
	if err := m.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if got := committed(t, e, d); !slices.Equal(got, []coverage.Range{rg(1, 20), rg(30, 40)}) {
		t.Fatalf("after recovery the table holds %v", got)
	}
	if s := m.Stats(); s.ConsecutiveFailures != 0 || s.PendingBatches != 0 {
		t.Fatalf("stats after recovery: %+v", s)
	}
}

// TestSQLiteCatalogUnwritable: while the catalog's SQLite file can only be
// opened read-only, checkpoints fail with SQLite's own error (data files
// are written, the commit is refused), records keep landing locally, and
// once the file is writable again the next Sync carries everything.
func TestSQLiteCatalogUnwritable(t *testing.T) {
	e := newEnv(t)
	dsn := strings.TrimPrefix(e.props["uri"], "file:")
	path, _, _ := strings.Cut(dsn, "?")
	readOnly, err := iceberg.OpenCatalog(ctx, "", map[string]string{
		"type": "sql", "uri": "file:" + path + "?mode=ro&_pragma=busy_timeout(30000)",
		"sql.driver": e.props["sql.driver"], "sql.dialect": e.props["sql.dialect"],
		"warehouse": e.props["warehouse"],
	})
	if err != nil {
		t.Fatal(err)
	}
	e.shortCommitTimeout(t)
	outageScenario(t, e, outage{
		what: "the catalog read-only",
		begin: func(t *testing.T) {
			e.cat.through.Store(&readOnly)
			// The table keeps the metadata it last committed, bound to the
			// writable connection; a real file turning read-only would
			// fail that one too.
			if _, err := e.table.Load(ctx); err != nil {
				t.Fatal(err)
			}
		},
		wantErr: "readonly database",
		during: func(t *testing.T, m *Mirror) int {
			// Commits refused and reloads failing too: an error, not a crash.
			e.cat.down.Store(true)
			defer e.cat.down.Store(false)
			if err := m.Sync(ctx); !errors.Is(err, coverage.ErrUnavailable) {
				t.Fatalf("sync with the catalog read-only and then unreachable: %v", err)
			}
			return 1
		},
		end: func(t *testing.T) {
			e.cat.through.Store(nil)
			if _, err := e.table.Load(ctx); err != nil {
				t.Fatal(err)
			}
		},
	})
}

// outage is a way for the catalog to fail and come back.
type outage struct {
	what       string
	begin, end func(t *testing.T)
	wantErr    string                            // in the failed checkpoint's error
	during     func(t *testing.T, m *Mirror) int // optional: more failing Syncs; returns how many
}

// outageScenario: an owner checkpoints, the catalog fails; checkpoints fail
// with a clear error while records keep landing locally and the table keeps
// what it had; once the catalog is back one Sync carries everything.
func outageScenario(t *testing.T, e *env, o outage) {
	t.Helper()
	outageOn(t, e.table, e.owner(t, "", "pod-a"), o)
}

// outageOn is outageScenario on any durable tier, m an owner with nothing
// recorded that checkpoints into it.
func outageOn(t *testing.T, tier durable.Tier, m *Mirror, o outage) {
	t.Helper()
	defer m.Close()
	d := coverage.Destination{Sink: "lake", Topic: "orders"}
	record(t, m, d, 1, 10)
	if err := m.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	o.begin(t)
	record(t, m, d, 10, 20)
	err := m.Sync(ctx)
	if err == nil || !strings.Contains(err.Error(), o.wantErr) || !strings.Contains(err.Error(), tier.Name()) {
		t.Fatalf("sync with %s: %v", o.what, err)
	}
	t.Logf("what the operator sees: %v", err)
	record(t, m, d, 30, 40)
	if err := m.Sync(ctx); err == nil {
		t.Fatalf("second sync with %s succeeded", o.what)
	}
	failures := uint64(2)
	if o.during != nil {
		failures += uint64(o.during(t, m))
	}
	if s := m.Stats(); s.ConsecutiveFailures != failures || s.PendingBatches != 20 {
		t.Fatalf("stats with %s: %+v", o.what, s)
	}
	// Where the table can be read meanwhile, it holds what it held.
	if all, err := tier.Coverage(ctx, durable.Filter{}); err == nil && !slices.Equal(all[d].Ranges(), []coverage.Range{rg(1, 10)}) {
		t.Fatalf("with %s the table holds %v", o.what, all[d])
	}
	o.end(t)
	if err := m.Sync(ctx); err != nil {
		t.Fatalf("sync once %s is over: %v", o.what, err)
	}
	all, err := tier.Coverage(ctx, durable.Filter{})
	if err != nil {
		t.Fatalf("reading %s once %s is over: %v", tier.Name(), o.what, err)
	}
	if got := all[d]; got == nil || !slices.Equal(got.Ranges(), []coverage.Range{rg(1, 20), rg(30, 40)}) {
		t.Fatalf("once %s is over %s holds %v", o.what, tier.Name(), got)
	}
	if s := m.Stats(); s.ConsecutiveFailures != 0 || s.PendingBatches != 0 {
		t.Fatalf("stats after recovery: %+v", s)
	}
}

// TestResumedCheckpointIsNotAppendedTwice: a process that committed to the
// table and died before marking the checkpoint leaves it in flight; the next
// Sync finds it in the table by name and only marks it.
func TestResumedCheckpointIsNotAppendedTwice(t *testing.T) {
	e := newEnv(t)
	dir := t.TempDir()
	l, err := local.Open(local.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	d := coverage.Destination{Sink: "lake", Topic: "orders"}
	_ = l.Record(ctx, d, rg(1, 10))
	cp, _ := l.BeginCheckpoint(ctx)
	if err := e.table.Append(ctx, durable.Checkpoint{Name: cp.Name(), Writer: "pod-a", Ranges: cp.Ranges}); err != nil {
		t.Fatal(err)
	}
	_ = l.Record(ctx, d, rg(20, 30))
	_ = l.Close() // dies before CommitCheckpoint

	m := e.owner(t, dir, "pod-a")
	defer m.Close()
	if err := m.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	tbl, _ := e.table.Load(ctx)
	if n := len(tbl.Metadata().Snapshots()); n != 2 {
		t.Fatalf("%d snapshots: want the first checkpoint once and the second", n)
	}
	if got := committed(t, e, d); !slices.Equal(got, []coverage.Range{rg(1, 10), rg(20, 30)}) {
		t.Fatalf("committed %v", got)
	}
	if s := m.Stats(); s.PendingBatches != 0 {
		t.Fatalf("pending after catching up: %d", s.PendingBatches)
	}
}

func TestRunCheckpointsAndStopsOnCancel(t *testing.T) {
	e := newEnv(t)
	m := e.owner(t, "", "pod-a")
	defer m.Close()
	d := coverage.Destination{Sink: "lake", Topic: "orders"}
	record(t, m, d, 1, 2)
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error)
	go func() { done <- m.Run(runCtx) }()
	for m.Stats().Checkpoints == 0 {
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run after cancel: %v", err)
	}
	if got := committed(t, e, d); !slices.Equal(got, []coverage.Range{rg(1, 2)}) {
		t.Fatalf("committed %v", got)
	}
}

func TestNextBackoff(t *testing.T) {
	interval, maxBackoff := 30*time.Second, 5*time.Minute
	var got []time.Duration
	for f := uint64(1); f <= 8; f++ {
		got = append(got, NextBackoff(interval, maxBackoff, f))
	}
	want := []time.Duration{3 * time.Second, 6 * time.Second, 12 * time.Second, 24 * time.Second, 48 * time.Second,
		96 * time.Second, 192 * time.Second, 5 * time.Minute}
	if !slices.Equal(got, want) {
		t.Fatalf("backoff %v, want %v", got, want)
	}
	// No cap (MaxBackoff MaxInt64, which Options.Validate admits): the wait
	// after many failures stays positive, never a tight loop.
	for f := uint64(1); f <= 100; f++ {
		if d := NextBackoff(interval, math.MaxInt64, f); d < time.Millisecond {
			t.Fatalf("NextBackoff(30s, MaxInt64, %d) = %v", f, d)
		}
	}
}

func TestCollectorGathers(t *testing.T) {
	e := newEnv(t)
	m := e.owner(t, "", "pod-a")
	defer m.Close()
	reg := prometheus.NewRegistry()
	if err := reg.Register(m.Collector()); err != nil {
		t.Fatal(err)
	}
	record(t, m, coverage.Destination{Sink: "lake", Topic: "orders"}, 1, 4)
	_ = m.Sync(ctx)
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	values := map[string]float64{}
	for _, f := range families {
		if len(f.Metric) == 1 && f.Metric[0].Counter != nil {
			values[f.GetName()] = f.Metric[0].Counter.GetValue()
		}
	}
	if values["covmirror_records_total"] != 1 || values["covmirror_checkpoints_total"] != 1 || values["covmirror_checkpointed_batches_total"] != 3 {
		t.Fatalf("metrics %v", values)
	}
}

// TestExpiryKeepsCoverage: periodic snapshot expiry bounds the snapshot
// list and never changes what is covered.
func TestExpiryKeepsCoverage(t *testing.T) {
	e := newEnv(t)
	m := e.owner(t, "", "pod-a")
	defer m.Close()
	m.opts.ExpireEvery = 5
	m.opts.Expire = durable.ExpireOptions{OlderThan: time.Millisecond, RetainLast: 3}
	d := coverage.Destination{Sink: "lake", Topic: "orders"}
	var want []coverage.Range
	for i := range uint64(12) {
		record(t, m, d, i*3, i*3+2)
		want = append(want, rg(i*3, i*3+2))
		time.Sleep(2 * time.Millisecond)
		if err := m.Sync(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if got := committed(t, e, d); !slices.Equal(got, want) {
		t.Fatalf("after expiry the table covers %v, want %v", got, want)
	}
	tbl, _ := e.table.Load(ctx)
	if n := len(tbl.Metadata().Snapshots()); n > 5 {
		t.Fatalf("%d snapshots after 12 checkpoints with expiry every 5 keeping 3", n)
	}
}
