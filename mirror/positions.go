package mirror

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
)

// ErrNoPositionStore: SavePosition on a Mirror without Options.Positions.
var ErrNoPositionStore = errors.New("mirror: no position store configured (Options.Positions)")

type positionKey struct {
	source    string
	partition int32
}

// positionBuffer holds the newest position per (source, partition) until the
// next Sync saves it. Losing it in a crash is a lag: the source resumes from
// an older durable position and raw's dedup absorbs the replay.
type positionBuffer struct {
	mu  sync.Mutex
	buf map[positionKey]coverage.Position
}

// put keeps p unless a position with a greater (Batch, Cursor) is buffered:
// positions of one partition only move forward, and the store keeps every
// saved one anyway (ResumePosition chooses among them against raw).
func (b *positionBuffer) put(p coverage.Position) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.buf == nil {
		b.buf = map[positionKey]coverage.Position{}
	}
	k := positionKey{p.Source, p.Partition}
	if old, ok := b.buf[k]; ok && coverage.ComparePositions(old, p) > 0 {
		return
	}
	p.Cursor = slices.Clone(p.Cursor)
	b.buf[k] = p
}

// take empties the buffer and returns what it held, ordered.
func (b *positionBuffer) take() []coverage.Position {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]coverage.Position, 0, len(b.buf))
	for _, p := range b.buf {
		out = append(out, p)
	}
	clear(b.buf)
	slices.SortFunc(out, func(a, b coverage.Position) int {
		if a.Source != b.Source {
			if a.Source < b.Source {
				return -1
			}
			return 1
		}
		return int(a.Partition) - int(b.Partition)
	})
	return out
}

// SavePosition buffers pos, the newest position of a stored source's
// partition, for the next Sync to save after its coverage commit. Call it
// only after raw durably holds every batch up to pos.Batch; the source
// resolves it later with coverage.ResumePosition, which never returns a
// position past a gap in raw's committed coverage. The position store's
// regime checks (unknown, broker-managed) apply when Sync saves; check the
// source's regime before calling.
func (m *Mirror) SavePosition(ctx context.Context, pos coverage.Position) error {
	dest := coverage.Destination{Topic: pos.Source, Partition: pos.Partition}
	if m.opts.Positions == nil {
		return coverage.DestinationError("save position", dest, ErrNoPositionStore)
	}
	if err := ctx.Err(); err != nil {
		return coverage.DestinationError("save position", dest, err)
	}
	if err := pos.Validate(); err != nil {
		return coverage.DestinationError("save position", dest, err)
	}
	if pos.Batch > coverage.MaxBatchEnd {
		return coverage.DestinationError("save position", dest, fmt.Errorf("%w: batch %d is past %d", coverage.ErrInvalidPosition, pos.Batch, uint64(coverage.MaxBatchEnd)))
	}
	m.positions.put(pos)
	return nil
}

// permanent reports a refusal that no retry changes.
func permanent(err error) bool {
	return errors.Is(err, coverage.ErrBrokerManaged) || errors.Is(err, coverage.ErrUnknownSource) || errors.Is(err, coverage.ErrInvalidPosition)
}

// flushPositions saves the buffered positions, in one batch where the
// store can (coverage.PositionBatcher: one write per source, not one per
// partition); each one that fails goes back into the buffer (unless a
// newer one arrived meanwhile), and the failures are returned together.
// Called holding syncTurn.
func (m *Mirror) flushPositions(ctx context.Context) (int, error) {
	if m.opts.Positions == nil {
		return 0, nil
	}
	saved := 0
	var errs []error
	ps := m.positions.take()
	for i, err := range coverage.SavePositions(ctx, m.opts.Positions, ps) {
		p := ps[i]
		if err != nil {
			errs = append(errs, err)
			if permanent(err) {
				// Retrying would fail every checkpoint from now on; the
				// source resumes from an older position (a lag).
				m.opts.Logger.Error("source position refused by the position store; dropped", "source", p.Source, "partition", p.Partition, "err", err)
				continue
			}
			m.positions.put(p)
			continue
		}
		saved++
	}
	if len(errs) > 0 {
		return saved, fmt.Errorf("saving source positions (kept for the next checkpoint): %w", errors.Join(errs...))
	}
	return saved, nil
}

// positionCheckpointer is the optional capability of a position store that
// lives in the durable tier's own database (package postgres): it appends
// a checkpoint and saves source positions in one transaction, so raw's
// coverage and the positions it allows commit together.
type positionCheckpointer interface {
	SharesTier(t durable.Tier) bool
	AppendWithPositions(ctx context.Context, t durable.Tier, c durable.Checkpoint, ps []coverage.Position) (saved int, refused []error, err error)
}

// appendCheckpoint appends c, with the buffered positions in the same transaction
// when the position store can (a leftover found landed still commits
// them); on failure the positions go back into the buffer, unless a newer
// one arrived meanwhile. Called holding syncTurn.
func (m *Mirror) appendCheckpoint(ctx context.Context, c durable.Checkpoint, sum *CheckpointSummary) error {
	pc, ok := m.opts.Positions.(positionCheckpointer)
	if !ok || !pc.SharesTier(m.opts.Durable) {
		return m.opts.Durable.Append(ctx, c)
	}
	ps := m.positions.take()
	if len(ps) == 0 {
		return m.opts.Durable.Append(ctx, c)
	}
	saved, refused, err := pc.AppendWithPositions(ctx, m.opts.Durable, c, ps)
	if err != nil {
		for _, p := range ps {
			m.positions.put(p)
		}
		return err
	}
	for _, r := range refused {
		// Retrying would fail every checkpoint from now on; the source
		// resumes from an older position (a lag).
		m.opts.Logger.Error("source position refused by the position store; dropped", "err", r)
	}
	sum.Positions += saved
	return nil
}
