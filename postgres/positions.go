package postgres

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
)

const (
	// MaxCursorLen bounds a stored position's cursor, in bytes; the
	// source name and the cursor together are bounded further by
	// maxPositionKeyBytes.
	MaxCursorLen = 64 << 10

	// maxPositionKeyBytes bounds a position's source name and cursor
	// together: they are in the positions table's primary key, and a
	// btree row past about 2.7 kB (8 kB pages; random bytes do not
	// compress) fails its INSERT, which in a batch or a checkpoint's
	// transaction would fail every position with it, at every checkpoint.
	maxPositionKeyBytes = 2600

	// MaxPositionsPerPartition is how many positions a partition keeps:
	// its highest by (batch, cursor). A save deletes the ones below them,
	// in its transaction.
	MaxPositionsPerPartition = 256
)

// Positions keeps stored source positions as a coverage.PositionStore in
// the positions table of the tier's schema: one row per distinct
// (source, partition, batch, cursor), so positions saved by concurrent
// owners are all kept (union, never last-write-wins) and a retried save
// adds nothing.
//
// # Bound
//
// Each partition keeps its highest MaxPositionsPerPartition positions.
// coverage.ResumePosition chooses the greatest stored batch that raw's
// coverage reaches without a gap, so dropping the lowest can only make it
// choose an earlier one or none: a lag, which costs a replay, never a
// lead. A save deletes only positions that at least that many positions it
// sees rank above, so concurrent saves never drop one of the highest.
//
// Positions is safe for concurrent use, and any number of them, in any
// number of processes, may share one schema.
type Positions struct {
	tier  *Tier
	gate  *coverage.PositionGate
	table string
}

var _ coverage.PositionStore = (*Positions)(nil)

// OpenPositions opens the tier's schema as Open does (creating what is
// missing) and returns a Positions for the configured sources. Every
// source needs a name and a regime, and names must be unique; only Stored
// sources' positions are kept.
func OpenPositions(ctx context.Context, opts Options, sources ...coverage.Source) (*Positions, error) {
	gate, err := coverage.NewPositionGate(sources)
	if err != nil {
		return nil, err
	}
	t, err := Open(ctx, opts)
	if err != nil {
		return nil, err
	}
	return &Positions{tier: t, gate: gate, table: pgx.Identifier{t.opts.Schema, "positions"}.Sanitize()}, nil
}

// Name names the location: server, database and schema.
func (p *Positions) Name() string { return p.tier.Name() }

// SavePosition implements coverage.PositionStore.
func (p *Positions) SavePosition(ctx context.Context, pos coverage.Position) error {
	const op = "save position"
	if err := p.checkPosition(ctx, pos); err != nil {
		return err
	}
	now := p.tier.opts.Now()
	err := p.tier.inTx(ctx, func(tx pgx.Tx) (bool, error) {
		return true, p.save(ctx, tx, pos, now)
	})
	if err != nil {
		dest := coverage.Destination{Topic: pos.Source, Partition: pos.Partition}
		return coverage.DestinationError(op, dest, fmt.Errorf("%w: %s: %w", coverage.ErrUnavailable, p.tier.Name(), err))
	}
	return nil
}

var _ coverage.PositionBatcher = (*Positions)(nil)

// SavePositions implements coverage.PositionBatcher: every position this
// store keeps is saved in one transaction, all or none; a position it
// refuses (checkPosition) fails alone, before it.
func (p *Positions) SavePositions(ctx context.Context, ps []coverage.Position) []error {
	const op = "save position"
	errs := make([]error, len(ps))
	var keep []int
	for i, pos := range ps {
		if errs[i] = p.checkPosition(ctx, pos); errs[i] == nil {
			keep = append(keep, i)
		}
	}
	if len(keep) == 0 {
		return errs
	}
	// One order for every writer's transactions, so that two batches over
	// the same partitions wait for each other rather than deadlock.
	slices.SortFunc(keep, func(a, b int) int {
		return cmp.Or(strings.Compare(ps[a].Source, ps[b].Source), cmp.Compare(ps[a].Partition, ps[b].Partition), coverage.ComparePositions(ps[a], ps[b]))
	})
	now := p.tier.opts.Now()
	err := p.tier.inTx(ctx, func(tx pgx.Tx) (bool, error) {
		for _, i := range keep {
			if err := p.save(ctx, tx, ps[i], now); err != nil {
				return true, fmt.Errorf("save position %s/%d at batch %d: %w", ps[i].Source, ps[i].Partition, ps[i].Batch, err)
			}
		}
		return true, nil
	})
	if err != nil {
		for _, i := range keep {
			dest := coverage.Destination{Topic: ps[i].Source, Partition: ps[i].Partition}
			errs[i] = coverage.DestinationError(op, dest, fmt.Errorf("%w: %s: %w", coverage.ErrUnavailable, p.tier.Name(), err))
		}
	}
	return errs
}

// checkPosition refuses, before any I/O, a position this store does not
// keep (a source not configured as stored, a closed store) or cannot
// hold.
func (p *Positions) checkPosition(ctx context.Context, pos coverage.Position) error {
	if err := p.gate.CheckSave(ctx, pos, MaxCursorLen); err != nil {
		return err
	}
	if strings.IndexByte(pos.Source, 0) >= 0 {
		// Refused here, not by the server: a save in a checkpoint's
		// transaction would fail the checkpoint, and every one after it.
		return coverage.DestinationError("save position", coverage.Destination{Topic: pos.Source, Partition: pos.Partition}, fmt.Errorf("%w: source name %q has a NUL byte, which PostgreSQL text cannot hold", coverage.ErrInvalidPosition, pos.Source))
	}
	if n := len(pos.Source) + len(pos.Cursor); n > maxPositionKeyBytes {
		// Refused here, as the NUL above: the server's "index row size
		// exceeds" would fail the whole batch or checkpoint, every time.
		return coverage.DestinationError("save position", coverage.Destination{Topic: pos.Source, Partition: pos.Partition}, fmt.Errorf("%w: source name and cursor of %d bytes together, past the %d that the positions table's key holds: keep cursors short (an offset, a file name), not the data they point to", coverage.ErrInvalidPosition, n, maxPositionKeyBytes))
	}
	return nil
}

// save inserts pos in tx and drops the partition's positions past the
// bound. checkPosition refused a source name with a NUL.
func (p *Positions) save(ctx context.Context, tx pgx.Tx, pos coverage.Position, now time.Time) error {
	tag, err := tx.Exec(ctx, "INSERT INTO "+p.table+" (source, partition, batch, cursor, saved_at) VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING",
		pos.Source, pos.Partition, int64(pos.Batch), pos.Cursor, now)
	if err != nil {
		return fmt.Errorf("insert: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return nil // saved before
	}
	_, err = tx.Exec(ctx, "DELETE FROM "+p.table+` WHERE source = $1 AND partition = $2 AND (batch, cursor) <
		(SELECT batch, cursor FROM `+p.table+` WHERE source = $1 AND partition = $2 ORDER BY batch DESC, cursor DESC OFFSET $3 LIMIT 1)`,
		pos.Source, pos.Partition, MaxPositionsPerPartition-1)
	if err != nil {
		return fmt.Errorf("drop the positions past the bound: %w", err)
	}
	return nil
}

// SharesTier reports whether t is the durable tier in this store's own
// database and schema, so that AppendWithPositions can write both.
func (p *Positions) SharesTier(t durable.Tier) bool {
	tier, ok := t.(*Tier)
	return ok && tier.name == p.tier.name
}

// AppendWithPositions appends the checkpoint c to t and saves the
// positions ps in one transaction: a pod's raw coverage and the source
// positions it allows commit together, or neither does. t must be this
// store's own tier (SharesTier), else nothing is written and the error
// says so. A position this store refuses whatever happens (a source not
// configured as stored, an invalid position) is left out and returned in
// refused; the rest are saved with the checkpoint.
func (p *Positions) AppendWithPositions(ctx context.Context, t durable.Tier, c durable.Checkpoint, ps []coverage.Position) (saved int, refused []error, err error) {
	if !p.SharesTier(t) {
		return 0, nil, fmt.Errorf("postgres: positions in %s cannot be saved in the transaction of %s, another store", p.tier.Name(), t.Name())
	}
	keep := make([]coverage.Position, 0, len(ps))
	for _, pos := range ps {
		if err := p.checkPosition(ctx, pos); err != nil {
			if errors.Is(err, coverage.ErrClosed) || ctx.Err() != nil {
				return 0, nil, err
			}
			refused = append(refused, err)
			continue
		}
		keep = append(keep, pos)
	}
	now := p.tier.opts.Now()
	if tier := t.(*Tier); tier.opts.Layout == LayoutDeltas {
		return p.appendDeltaWithPositions(ctx, tier, c, keep, refused)
	}
	err = t.(*Tier).appendWith(ctx, c, func(tx pgx.Tx) error {
		for _, pos := range keep {
			if err := p.save(ctx, tx, pos, now); err != nil {
				return fmt.Errorf("save position %s/%d at batch %d: %w", pos.Source, pos.Partition, pos.Batch, err)
			}
		}
		return nil
	})
	if err != nil {
		return 0, refused, err
	}
	return len(keep), refused, nil
}

// appendDeltaWithPositions is AppendWithPositions in the deltas layout,
// whose checkpoint is a blob written outside any transaction: the
// checkpoint first, then the positions in one transaction of their own.
// A position is never saved before the coverage that allows it (it may
// lag, never lead); positions that fail after the checkpoint landed are
// an error, and the caller appends again (found landed) with them.
func (p *Positions) appendDeltaWithPositions(ctx context.Context, t *Tier, c durable.Checkpoint, keep []coverage.Position, refused []error) (int, []error, error) {
	if err := t.Append(ctx, c); err != nil {
		return 0, refused, err
	}
	if len(keep) == 0 {
		return 0, refused, nil
	}
	// In one order, as SavePositions does, so that two writers' batches
	// over the same partitions wait for each other rather than deadlock.
	slices.SortFunc(keep, func(a, b coverage.Position) int {
		return cmp.Or(strings.Compare(a.Source, b.Source), cmp.Compare(a.Partition, b.Partition), coverage.ComparePositions(a, b))
	})
	now := p.tier.opts.Now()
	err := t.inTx(ctx, func(tx pgx.Tx) (bool, error) {
		for _, pos := range keep {
			if err := p.save(ctx, tx, pos, now); err != nil {
				return false, fmt.Errorf("save position %s/%d at batch %d: %w", pos.Source, pos.Partition, pos.Batch, err)
			}
		}
		return true, nil
	})
	if err != nil {
		return 0, refused, fmt.Errorf("postgres: checkpoint %q of %q landed in %s, its positions did not (append it again with them): %w", c.Name, c.Writer, t.name, err)
	}
	return len(keep), refused, nil
}

// Positions implements coverage.PositionStore: the positions kept for the
// source's partition, ordered by coverage.ComparePositions (bytea compares
// as bytes.Compare does).
func (p *Positions) Positions(ctx context.Context, source string, partition int32) ([]coverage.Position, error) {
	const op = "positions"
	if err := p.gate.Check(ctx, op, source, partition); err != nil {
		return nil, err
	}
	dest := coverage.Destination{Topic: source, Partition: partition}
	if strings.IndexByte(source, 0) >= 0 {
		return []coverage.Position{}, nil // never stored: a save refuses a NUL
	}
	var out []coverage.Position
	err := p.tier.read(ctx, func(tx pgx.Tx) error {
		out = []coverage.Position{}
		rows, err := tx.Query(ctx, "SELECT batch, cursor FROM "+p.table+" WHERE source = $1 AND partition = $2 ORDER BY batch, cursor", source, partition)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var batch int64
			var cursor []byte
			if err := rows.Scan(&batch, &cursor); err != nil {
				return err
			}
			if batch < 0 {
				return fmt.Errorf("%w: %s holds a negative batch %d", coverage.ErrCorrupt, p.tier.Name(), batch)
			}
			out = append(out, coverage.Position{Source: source, Partition: partition, Cursor: cursor, Batch: uint64(batch)})
		}
		return rows.Err()
	})
	if errors.Is(err, coverage.ErrCorrupt) {
		return nil, coverage.DestinationError(op, dest, err)
	}
	if err != nil {
		return nil, coverage.DestinationError(op, dest, fmt.Errorf("%w: %s: %w", coverage.ErrUnavailable, p.tier.Name(), err))
	}
	return out, nil
}

// Close implements coverage.PositionStore: later calls fail with
// coverage.ErrClosed. It closes the pool if OpenPositions opened it.
func (p *Positions) Close() error {
	if p.gate.Close() {
		p.tier.Close()
	}
	return nil
}
