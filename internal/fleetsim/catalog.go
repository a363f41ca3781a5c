package fleetsim

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/gapstate"
	"github.com/covmirror/covmirror/internal/backoff"
)

// Catalog simulates the coverage table's commits through its catalog: a
// compare-and-swap of the table's metadata pointer.
//
// Of the two models at hand, this is a durable.Tier wrapper, not
// iceberg-go's SQL catalog on SQLite: the SQL catalog does real file I/O
// (the SQLite file, the metadata and data files), which runs inside a
// synctest bubble but takes no fake time, so a commit's window would be
// the machine's real speed under load, not the modelled one, and each
// commit's real CPU (building manifests, writing Parquet) at hundreds of
// pods would dominate the run. The wrapper keeps what limits one table:
// every commit is one optimistic swap of one pointer. An Append takes
// the commit latency (drawn from CommitLatency's range), then succeeds
// only if no other commit completed meanwhile, else it counts a conflict
// and retries after the real table's full-jitter pause (100 ms doubling
// to 2 s, as package iceberg's commit loop), until CommitTimeout. What it
// commits goes into Inner. The data files the real table writes once
// before the loop are not modelled.
type Catalog struct {
	opts CatalogOptions

	mu      sync.Mutex
	version uint64 // the metadata pointer: bumped by every commit

	conflicts, commits atomic.Uint64
	draws              atomic.Uint64
	won                atomic.Int64 // the summed latency of the attempts that landed, in nanoseconds
}

// CatalogOptions configures NewCatalog. Every zero value but Inner's is a
// documented default.
type CatalogOptions struct {
	// Inner holds what commits carry and answers Coverage and Landed.
	// Required: NewMemTier gives one.
	Inner durable.Tier
	// Seed fixes the commit latencies drawn.
	Seed uint64
	// MinCommit and MaxCommit bound one commit's latency: the metadata
	// load, the new metadata's write and the pointer swap. Zero values:
	// 100 ms and 500 ms.
	MinCommit, MaxCommit time.Duration
	// CommitTimeout is how long one Append retries conflicts. Zero value:
	// 2 minutes, iceberg.DefaultCommitTimeout.
	CommitTimeout time.Duration
}

// EnsureDefaults fills in zero values.
func (o *CatalogOptions) EnsureDefaults() {
	if o.MinCommit == 0 && o.MaxCommit == 0 {
		o.MinCommit, o.MaxCommit = 100*time.Millisecond, 500*time.Millisecond
	}
	if o.CommitTimeout == 0 {
		o.CommitTimeout = 2 * time.Minute
	}
}

// Validate reports options NewCatalog cannot work with.
func (o *CatalogOptions) Validate() error {
	if o.Inner == nil {
		return errors.New("fleetsim: CatalogOptions.Inner is nil: give the tier commits land in (NewMemTier)")
	}
	if o.MinCommit < 0 || o.MaxCommit < o.MinCommit || o.CommitTimeout < 0 {
		return fmt.Errorf("fleetsim: CatalogOptions: need 0 <= MinCommit (%v) <= MaxCommit (%v) and CommitTimeout (%v) >= 0",
			o.MinCommit, o.MaxCommit, o.CommitTimeout)
	}
	return nil
}

// The pause before the n-th retry after conflicts: package iceberg's.
const (
	conflictMinBackoff = 100 * time.Millisecond
	conflictMaxBackoff = 2 * time.Second
)

// ErrCommitTimeout: an Append lost every commit attempt until
// CommitTimeout; nothing was committed, and the caller keeps its ranges
// pending, as with the real table.
var ErrCommitTimeout = errors.New("commit timed out: every attempt lost to another writer")

var (
	_ durable.Tier            = (*Catalog)(nil)
	_ durable.ConflictCounter = (*Catalog)(nil)
)

// NewCatalog returns a simulated table over opts.Inner.
func NewCatalog(opts CatalogOptions) (*Catalog, error) {
	opts.EnsureDefaults()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	return &Catalog{opts: opts}, nil
}

// Name names the table.
func (c *Catalog) Name() string { return "sim-catalog table over " + c.opts.Inner.Name() }

// CommitConflicts counts the commit attempts that lost to another writer.
func (c *Catalog) CommitConflicts() uint64 { return c.conflicts.Load() }

// Commits counts the commits that landed: the table's snapshots, none
// expired.
func (c *Catalog) Commits() uint64 { return c.commits.Load() }

// Window is the mean latency of the commit attempts that landed: one
// pointer takes at most one commit per Window. Attempts that lost were
// longer on average (a long window meets more commits), so the mean over
// all attempts would understate the bound.
func (c *Catalog) Window() time.Duration {
	n := c.commits.Load()
	if n == 0 {
		return 0
	}
	return time.Duration(c.won.Load() / int64(n))
}

func (c *Catalog) latency() time.Duration {
	span := uint64(c.opts.MaxCommit - c.opts.MinCommit)
	n := c.draws.Add(1)
	return c.opts.MinCommit + time.Duration(mix(c.opts.Seed^mix(n))%(span+1))
}

// Append commits c: one swap of the table's pointer, retried on conflict.
func (c *Catalog) Append(ctx context.Context, cp durable.Checkpoint) error {
	if err := cp.Validate(); err != nil {
		return err
	}
	deadline := time.Now().Add(c.opts.CommitTimeout)
	for attempt := 1; ; attempt++ {
		c.mu.Lock()
		base := c.version
		c.mu.Unlock()
		took := c.latency()
		if err := wait(ctx, took); err != nil {
			return fmt.Errorf("sim-catalog: append %q of %q: %w", cp.Name, cp.Writer, err)
		}
		c.mu.Lock()
		if c.version == base {
			// The swap: the inner tier is in memory and never waits, so
			// holding the lock across it keeps the swap atomic.
			err := c.opts.Inner.Append(ctx, cp)
			if err == nil {
				c.version++
				c.commits.Add(1)
				c.won.Add(int64(took))
			}
			c.mu.Unlock()
			return err
		}
		c.mu.Unlock()
		c.conflicts.Add(1)
		if time.Now().After(deadline) {
			return fmt.Errorf("sim-catalog: append %q of %q after %d attempts: %w", cp.Name, cp.Writer, attempt, ErrCommitTimeout)
		}
		if err := backoff.Sleep(ctx, backoff.FullJitter(attempt, conflictMinBackoff, conflictMaxBackoff)); err != nil {
			return err
		}
	}
}

// Coverage reads the committed coverage.
func (c *Catalog) Coverage(ctx context.Context, f durable.Filter) (map[coverage.Destination]*coverage.RangeSet, error) {
	return c.opts.Inner.Coverage(ctx, f)
}

var _ durable.StateStore = (*Catalog)(nil)

// AppendStates appends to Inner's gap states, or says Inner keeps none
// (durable.ErrNoStates). Not a commit of the coverage table: the real
// tier keeps states in a table of their own, whose commits never meet
// the coverage table's, so none is modelled.
func (c *Catalog) AppendStates(ctx context.Context, events []gapstate.Event) error {
	s, err := durable.StatesOf(c.opts.Inner)
	if err != nil {
		return err
	}
	return s.AppendStates(ctx, events)
}

// States reads Inner's gap states.
func (c *Catalog) States(ctx context.Context, f durable.Filter) ([]gapstate.Event, error) {
	s, err := durable.StatesOf(c.opts.Inner)
	if err != nil {
		return nil, err
	}
	return s.States(ctx, f)
}

// Landed looks for a committed checkpoint.
func (c *Catalog) Landed(ctx context.Context, writer, name string) (bool, error) {
	return c.opts.Inner.Landed(ctx, writer, name)
}

// MemTier is a durable tier in memory: coverage per destination by union,
// each writer's names bound to their payload digest, and gap states by
// ID. It is what the simulated catalog commits into. Safe for concurrent
// use.
type MemTier struct {
	mu     sync.Mutex
	cov    map[coverage.Destination]*coverage.RangeSet
	names  map[[2]string]string // (writer, name) -> digest
	states map[string]gapstate.Event
}

var (
	_ durable.Tier       = (*MemTier)(nil)
	_ durable.StateStore = (*MemTier)(nil)
)

// NewMemTier returns an empty tier.
func NewMemTier() *MemTier {
	return &MemTier{cov: map[coverage.Destination]*coverage.RangeSet{}, names: map[[2]string]string{}, states: map[string]gapstate.Event{}}
}

// AppendStates adds the events not there yet, by ID: a union, never an
// overwrite. At is kept in UTC to the microsecond, as every tier keeps it.
func (m *MemTier) AppendStates(_ context.Context, events []gapstate.Event) error {
	if err := durable.ValidateStates(events); err != nil {
		return fmt.Errorf("memory tier: %w", err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, e := range events {
		if _, ok := m.states[e.ID]; !ok {
			e.At = e.At.UTC().Truncate(time.Microsecond)
			m.states[e.ID] = e
		}
	}
	return nil
}

// States returns the events of the destinations f selects.
func (m *MemTier) States(_ context.Context, f durable.Filter) ([]gapstate.Event, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := []gapstate.Event{}
	match := f.Matcher()
	for _, e := range m.states {
		if match(e.Destination) {
			out = append(out, e)
		}
	}
	return out, nil
}

// Name names the tier.
func (m *MemTier) Name() string { return "memory" }

// Append merges c's ranges by union.
func (m *MemTier) Append(_ context.Context, c durable.Checkpoint) error {
	if err := c.Validate(); err != nil {
		return err
	}
	merged := durable.MergeRanges(c.Ranges)
	digest := durable.Digest("append", c.Writer, merged, c.Rows())
	m.mu.Lock()
	defer m.mu.Unlock()
	id := [2]string{c.Writer, c.Name}
	if d, ok := m.names[id]; ok {
		if d != digest {
			return fmt.Errorf("memory tier: %q of %q: %w", c.Name, c.Writer, durable.ErrNameReused)
		}
		return nil
	}
	m.names[id] = digest
	for _, dr := range merged {
		for _, r := range dr.Ranges {
			set := m.cov[dr.Destination]
			if set == nil {
				set = &coverage.RangeSet{}
				m.cov[dr.Destination] = set
			}
			if err := set.Add(r); err != nil {
				return err // validated above: cannot happen
			}
		}
	}
	return nil
}

// Coverage returns a copy of the selected destinations' coverage.
func (m *MemTier) Coverage(_ context.Context, f durable.Filter) (map[coverage.Destination]*coverage.RangeSet, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[coverage.Destination]*coverage.RangeSet{}
	for d, set := range m.cov {
		if f.Match(d) {
			c := set.Clone()
			out[d] = &c
		}
	}
	return out, nil
}

// Landed reports whether writer appended name.
func (m *MemTier) Landed(_ context.Context, writer, name string) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.names[[2]string{writer, name}]
	return ok, nil
}
