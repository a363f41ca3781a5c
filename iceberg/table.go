package iceberg

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	ice "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
)

// Snapshot summary properties every covmirror commit sets.
const (
	SummaryWriter     = "covmirror.writer"
	SummaryCheckpoint = "covmirror.checkpoint"
	// SummaryPayload binds the checkpoint name to what the commit carries
	// (a digest of the writer, destinations, ranges and row count).
	SummaryPayload = "covmirror.payload"
	// SummaryVersion is the covmirror version that wrote the commit
	// (package version's Info.String): which build wrote a row. Lookups
	// never read it, so writers of different versions share a table.
	SummaryVersion = "covmirror.version"
)

// Table kinds, in the table property covmirror.schema.
const (
	KindCoverage  = "coverage/2"
	KindPositions = "positions/2"
	KindStates    = "gap_states/1"
)

// Options configures Open. Zero values are documented defaults.
type Options struct {
	// Namespace of the coverage table. Zero value: [DefaultNamespace].
	Namespace []string
	// Name of the coverage table. Zero value: DefaultTableName.
	Name string
	// CommitTimeout bounds how long one append keeps retrying conflicting
	// or failing commits. Zero value: DefaultCommitTimeout.
	CommitTimeout time.Duration
	// Logger receives retries and recoveries. Zero value: discard.
	Logger *slog.Logger
}

// Options' defaults.
const (
	DefaultNamespace     = "covmirror"
	DefaultTableName     = "coverage"
	DefaultCommitTimeout = 2 * time.Minute
)

// EnsureDefaults fills in zero values.
func (o *Options) EnsureDefaults() {
	if len(o.Namespace) == 0 {
		o.Namespace = []string{DefaultNamespace}
	}
	if o.Name == "" {
		o.Name = DefaultTableName
	}
	if o.CommitTimeout == 0 {
		o.CommitTimeout = DefaultCommitTimeout
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
}

// Validate reports unusable options.
func (o *Options) Validate() error {
	for _, part := range append(append([]string{}, o.Namespace...), o.Name) {
		if part == "" || strings.ContainsAny(part, ".\x00") {
			return fmt.Errorf("iceberg: namespace and table names must be non-empty and contain no dot: %q.%q", o.Namespace, o.Name)
		}
	}
	if o.CommitTimeout < 0 {
		return fmt.Errorf("iceberg: Options.CommitTimeout is negative")
	}
	return nil
}

// Table is the coverage table in raw's catalog: the durable tier. It is a
// log of covered ranges; a reader unions its rows. Safe for concurrent use.
type Table struct {
	cat   catalog.Catalog
	ident table.Identifier
	opts  Options

	mu     sync.Mutex
	cached *table.Table // metadata after this process's last load or commit

	conflicts    atomic.Uint64 // commit attempts that lost to another writer
	lastConflict atomic.Int64  // when the last one lost, in Unix ns; 0: never

	// gap is the gap_states table beside a coverage table (states.go);
	// zero for the tables it opens and for the positions table.
	gap gapStates
}

// CommitConflicts is how many commit attempts of this Table lost to
// another writer (the table moved under them) and were retried
// (durable.ConflictCounter).
func (t *Table) CommitConflicts() uint64 { return t.conflicts.Load() }

var _ durable.ConflictCounter = (*Table)(nil)

// Open opens the coverage table, creating the namespace and the table if
// missing. An existing table with an incompatible schema fails with
// ErrIncompatibleTable and is left as it is.
//
// It opens the gap_states table beside it too, creating it when missing:
// that is how a deployment made before gap states gains it. A failure
// there (a catalog that lets this process read but not create tables, an
// incompatible table of that name) does not fail Open: it is logged, and
// AppendStates and States try again and return it.
func Open(ctx context.Context, cat catalog.Catalog, opts Options) (*Table, error) {
	order, err := CoverageSortOrder()
	if err != nil {
		return nil, err
	}
	named := opts
	named.EnsureDefaults()
	if named.Name == StatesTableName {
		return nil, fmt.Errorf("iceberg: the coverage table cannot be named %q: that is the gap states table beside it; choose another Options.Name", StatesTableName)
	}
	t, err := openTable(ctx, cat, opts, opts.Name, CoverageSchema(), CoverageSpec(), order, KindCoverage)
	if err != nil {
		return nil, err
	}
	t.gap.enabled = true
	if _, err := t.statesTable(ctx); err != nil {
		t.opts.Logger.Warn("the gap states table could not be opened; recording or reading refused, unrecoverable or waived ranges will try again", "table", t.Name(), "err", err)
	}
	return t, nil
}

// openTable opens or creates the table name in opts.Namespace with schema,
// spec and sort order, refusing an existing table whose schema is
// incompatible. An existing table keeps the sort order it has: covmirror
// never alters a table.
func openTable(ctx context.Context, cat catalog.Catalog, opts Options, name string, schema *ice.Schema, spec ice.PartitionSpec, order table.SortOrder, kind string) (*Table, error) {
	opts.EnsureDefaults()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	if name == "" {
		name = opts.Name
	}
	t := &Table{cat: cat, ident: append(append(table.Identifier{}, opts.Namespace...), name), opts: opts}
	if err := cat.CreateNamespace(ctx, opts.Namespace, nil); err != nil && !errors.Is(err, catalog.ErrNamespaceAlreadyExists) {
		if exists, checkErr := cat.CheckNamespaceExists(ctx, opts.Namespace); checkErr != nil || !exists {
			return nil, fmt.Errorf("%w: creating namespace %s: %w", coverage.ErrUnavailable, strings.Join(opts.Namespace, "."), err)
		}
	}
	tbl, err := cat.LoadTable(ctx, t.ident)
	if errors.Is(err, catalog.ErrNoSuchTable) {
		tbl, err = t.create(ctx, schema, spec, order, kind)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: loading table %s: %w", coverage.ErrUnavailable, t.Name(), err)
	}
	if err := checkSchema(t.Name(), tbl.Schema(), schema); err != nil {
		return nil, err
	}
	if err := checkSpec(t.Name(), tbl, spec, kind); err != nil {
		return nil, err
	}
	return t, nil
}

func (t *Table) create(ctx context.Context, schema *ice.Schema, spec ice.PartitionSpec, order table.SortOrder, kind string) (*table.Table, error) {
	props := ice.Properties{
		table.PropertyFormatVersion:    "2",
		table.ManifestMergeEnabledKey:  "true",
		table.ManifestMinMergeCountKey: "20",
		"covmirror.schema":             kind,
		// The name column's bounds are the whole name in each file
		// (one key per file), so SinkOf reads even a hashed key's name.
		table.MetricsModeColumnConfPrefix + "." + ColSink:   "full",
		table.MetricsModeColumnConfPrefix + "." + ColSource: "full",
		// Bound the metadata file: it is rewritten on every commit.
		table.MetadataDeleteAfterCommitEnabledKey: "true",
		table.MetadataPreviousVersionsMaxKey:      "20",
		table.WriteTargetFileSizeBytesKey:         "134217728",
	}
	if kind == KindCoverage {
		// Other engines writing to the table keep covmirror's row groups.
		props[table.ParquetRowGroupLimitKey] = strconv.Itoa(RowGroupRows)
	}
	tbl, err := t.cat.CreateTable(ctx, t.ident, schema,
		catalog.WithPartitionSpec(&spec),
		catalog.WithSortOrder(order),
		catalog.WithProperties(props))
	if errors.Is(err, catalog.ErrTableAlreadyExists) {
		return t.cat.LoadTable(ctx, t.ident) // another process created it first
	}
	return tbl, err
}

// Name is the table's dotted identifier.
func (t *Table) Name() string { return strings.Join(t.ident, ".") }

// Load returns the table's current metadata from the catalog.
func (t *Table) Load(ctx context.Context) (*table.Table, error) {
	tbl, err := t.cat.LoadTable(ctx, t.ident)
	if err != nil {
		return nil, fmt.Errorf("%w: loading table %s: %w", coverage.ErrUnavailable, t.Name(), err)
	}
	t.remember(tbl)
	return tbl, nil
}

// remember caches tbl as the newest metadata this process has seen. A
// commit based on stale metadata conflicts and is retried on a fresh load,
// so the cache only saves a round trip when this process is the only writer.
func (t *Table) remember(tbl *table.Table) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.cached = tbl
}

// contendedFor is how long after a lost commit attempt an append loads
// fresh metadata before its first attempt instead of using the cache:
// among other writers the cached metadata is stale by their commits since
// this process's last one, so a first attempt on it loses for certain.
const contendedFor = 10 * time.Minute

// base is the metadata an append builds its first attempt on: the cache
// while this Table has not lost a commit attempt for contendedFor (alone
// on the table, the cache is current and saves a catalog round trip), a
// fresh load otherwise. A fresh load that fails falls back on the cache:
// the commit loop reloads and retries through the catalog's outage, where
// failing here would fail the append before its first attempt.
func (t *Table) base(ctx context.Context) (*table.Table, error) {
	if last := t.lastConflict.Load(); last != 0 && time.Since(time.Unix(0, last)) < contendedFor {
		tbl, err := t.Load(ctx)
		if err == nil {
			return tbl, nil
		}
		t.opts.Logger.Debug("fresh load before a contended append failed; building on the cached metadata", "table", t.Name(), "err", err)
	}
	return t.recent(ctx)
}

func (t *Table) recent(ctx context.Context) (*table.Table, error) {
	t.mu.Lock()
	tbl := t.cached
	t.mu.Unlock()
	if tbl != nil {
		return tbl, nil
	}
	return t.Load(ctx)
}

// Catalog is the catalog the table lives in.
func (t *Table) Catalog() catalog.Catalog { return t.cat }

// Identifier is the table's identifier in its catalog.
func (t *Table) Identifier() table.Identifier { return append(table.Identifier{}, t.ident...) }

// Landed reports whether writer's checkpoint of that name is in the table:
// the check a writer makes after a commit of unknown outcome, or for a
// checkpoint resumed after a restart. Another writer's checkpoint of the
// same name is not this one.
func (t *Table) Landed(ctx context.Context, writer, checkpoint string) (bool, error) {
	tbl, err := t.Load(ctx)
	if err != nil {
		return false, err
	}
	for _, snap := range tbl.Metadata().Snapshots() {
		if snap.Summary != nil && snap.Summary.Properties[SummaryCheckpoint] == checkpoint &&
			snap.Summary.Properties[SummaryWriter] == writer {
			return true, nil
		}
	}
	return false, nil
}

// The coverage table is a durable tier.
var _ durable.Tier = (*Table)(nil)
