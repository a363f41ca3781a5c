package durable

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/covmirror/covmirror/coverage"
)

// Tier is a durable tier: where checkpoints land and where a rebalancing
// owner, the recovery planner and the queries read committed coverage.
// Implementations are safe for concurrent use by many processes.
type Tier interface {
	// Name names the tier in logs and errors: a table or a URL.
	Name() string

	// Append commits the checkpoint's ranges, so that every later Coverage
	// includes them. It returns nil only once they are durable; an error
	// means they may or may not be. With MayHaveLanded set, an earlier
	// attempt may have landed, and the tier looks for it (as Landed does)
	// before it writes. The same writer and name with other ranges is
	// ErrNameReused, and nothing is written. A tier without a transaction
	// across destinations may return a *PartialError: then exactly its
	// Landed destinations are durable (all their ranges), and the others
	// certainly are not; the caller marks only the landed ones committed.
	Append(ctx context.Context, c Checkpoint) error

	// Coverage returns the committed coverage of every destination the
	// filter selects, each merged over every append.
	Coverage(ctx context.Context, f Filter) (map[coverage.Destination]*coverage.RangeSet, error)

	// Landed reports whether writer's checkpoint of that name was
	// committed: the check after an append of unknown outcome. Another
	// writer's checkpoint of the same name is not this one. A tier that
	// keeps a bounded history of names documents the bound; past it Landed
	// may answer false, which costs a duplicate append (harmless: a union).
	Landed(ctx context.Context, writer, name string) (bool, error)
}

// Checkpoint is one append: the ranges of one checkpoint of one writer.
type Checkpoint struct {
	// Name is the checkpoint's unique name; an append of unknown outcome
	// is looked for by it before it is tried again.
	Name string
	// Writer names the pod or job that writes it.
	Writer string
	// Ranges are the covered ranges, per destination.
	Ranges []coverage.DestinationRanges
	// MayHaveLanded says an earlier attempt of this checkpoint may have
	// landed (its outcome was unknown, or its process stopped): the tier
	// is searched for Name before anything is written.
	MayHaveLanded bool
}

// Validate reports a checkpoint no tier can hold: a missing name or
// writer, or a range Record would refuse.
func (c *Checkpoint) Validate() error {
	if c.Name == "" || c.Writer == "" {
		return fmt.Errorf("%w: a checkpoint needs a name and a writer (got %q, %q)", ErrInvalidCheckpoint, c.Name, c.Writer)
	}
	for _, dr := range c.Ranges {
		for _, r := range dr.Ranges {
			if err := coverage.ValidateRecord(dr.Destination, r); err != nil {
				return err
			}
		}
	}
	return nil
}

// Rows is how many ranges the checkpoint carries.
func (c *Checkpoint) Rows() int64 {
	n := 0
	for _, dr := range c.Ranges {
		n += len(dr.Ranges)
	}
	return int64(n)
}

// Filter selects destinations; empty fields match everything, and the
// fields combine by AND.
type Filter struct {
	Sink      string
	Topic     string
	Partition *int32
	// Partitions, when not empty, selects only the destinations of these
	// partitions, of every sink (in any order; a partition listed twice is
	// selected once). Empty (nil or of length zero) restricts nothing: a
	// caller with no partitions to read must not read at all. Tiers restrict
	// their read by it where their layout allows, and match it after the
	// read otherwise.
	Partitions []coverage.TopicPartition
}

// Match reports whether the filter selects d. It scans Partitions; a tier
// matching many destinations against many partitions uses Matcher.
func (f Filter) Match(d coverage.Destination) bool {
	if !f.matchNames(d) {
		return false
	}
	if len(f.Partitions) == 0 {
		return true
	}
	tp := d.TopicPartition()
	for _, p := range f.Partitions {
		if p == tp {
			return true
		}
	}
	return false
}

// Matcher is Match with Partitions indexed once: the same answers, each in
// constant time.
func (f Filter) Matcher() func(coverage.Destination) bool {
	if len(f.Partitions) <= 8 {
		return f.Match
	}
	set := f.PartitionSet()
	return func(d coverage.Destination) bool {
		_, ok := set[d.TopicPartition()]
		return ok && f.matchNames(d)
	}
}

// PartitionSet is Partitions as a set; nil when they restrict nothing.
func (f Filter) PartitionSet() map[coverage.TopicPartition]struct{} {
	if len(f.Partitions) == 0 {
		return nil
	}
	set := make(map[coverage.TopicPartition]struct{}, len(f.Partitions))
	for _, tp := range f.Partitions {
		set[tp] = struct{}{}
	}
	return set
}

func (f Filter) matchNames(d coverage.Destination) bool {
	return (f.Sink == "" || f.Sink == d.Sink) && (f.Topic == "" || f.Topic == d.Topic) &&
		(f.Partition == nil || *f.Partition == d.Partition)
}

// LastWrite is when a destination's coverage last grew, and by whom (the
// writer's clock).
type LastWrite struct {
	Writer string
	At     time.Time
}

// LastWriter is the optional capability of a tier that keeps, per
// destination, its last write: how far behind each destination's writers
// are. The sink objects and the PostgreSQL rows keep it; the coverage
// table keeps a time per row instead.
type LastWriter interface {
	LastWrites(ctx context.Context, f Filter) (map[coverage.Destination]LastWrite, error)
}

// Expirer is the optional capability of a tier that accumulates snapshots
// (the coverage table) to expire old ones, so that commit latency stays
// flat as checkpoints accumulate. Expiry never changes what is covered. It
// returns how many snapshots it removed.
type Expirer interface {
	ExpireSnapshots(ctx context.Context, o ExpireOptions) (int, error)
}

// ConflictCounter is the optional capability of a tier whose appends
// commit optimistically (the coverage table) to count the commit attempts
// that lost to another writer and were retried. Many writers on one table
// show as a rising count per checkpoint; the remedy is a primary that
// does not serialize writers (object or PostgreSQL) with the table as its
// replica. Conflicts never change what is covered: a lost attempt is
// retried until it lands or the append fails.
type ConflictCounter interface {
	CommitConflicts() uint64
}

// ExpireOptions says which snapshots ExpireSnapshots removes: those older
// than OlderThan, always keeping the last RetainLast. A commit of unknown
// outcome can only be recognized while its snapshot is retained: keep
// OlderThan well above the longest checkpoint retry window.
type ExpireOptions struct {
	OlderThan  time.Duration // zero value: DefaultExpireOlderThan
	RetainLast int           // zero value: DefaultRetainLast
}

// ExpireOptions' defaults.
const (
	DefaultExpireOlderThan = 15 * time.Minute
	DefaultRetainLast      = 20
)

// EnsureDefaults fills in zero values.
func (o *ExpireOptions) EnsureDefaults() {
	if o.OlderThan == 0 {
		o.OlderThan = DefaultExpireOlderThan
	}
	if o.RetainLast == 0 {
		o.RetainLast = DefaultRetainLast
	}
}

// Validate reports unusable options. A negative OlderThan would reach into
// the future and expire every snapshot but the last RetainLast, those a
// commit of unknown outcome is recognized by among them.
func (o *ExpireOptions) Validate() error {
	if o.OlderThan < 0 || o.RetainLast < 0 {
		return fmt.Errorf("durable: ExpireOptions.OlderThan %s and RetainLast %d must not be negative", o.OlderThan, o.RetainLast)
	}
	return nil
}

// PartialError is an Append that committed the ranges of some of the
// checkpoint's destinations and not of the others, which it certainly did
// not write (a sink object that cannot be read is never overwritten): one
// broken destination must not hold every other one's checkpoints back. The
// checkpoint as a whole has not landed (Landed answers false for its name):
// the caller marks the Landed destinations committed and keeps the others
// pending, for a later checkpoint under another name.
type PartialError struct {
	// Landed are the destinations whose ranges are durable.
	Landed []coverage.Destination
	// Err is why the others were not written; it names them.
	Err error
}

func (e *PartialError) Error() string {
	return fmt.Sprintf("%v (the checkpoint's other %d destinations landed)", e.Err, len(e.Landed))
}

func (e *PartialError) Unwrap() error { return e.Err }

var (
	// ErrNameReused: a writer appended a name it had already appended with
	// other ranges. A name is an idempotency key bound to what it wrote:
	// nothing was written; give every distinct checkpoint its own name.
	ErrNameReused = errors.New("name already committed with another payload")

	// ErrInvalidCheckpoint: a checkpoint without a name or a writer.
	ErrInvalidCheckpoint = errors.New("invalid checkpoint")
)

// Digest is the payload digest a tier binds a checkpoint's name to: kind
// (what wrote it: "append", a backend's own kinds), writer, each
// destination's ranges merged and in canonical order, and the row count.
// Two checkpoints with the same name and digest carry the same coverage.
func Digest(kind, writer string, ranges []coverage.DestinationRanges, rows int64) string {
	// The bytes are gathered and hashed once: many small writes cost more
	// than the hashing.
	merged := MergeRanges(ranges)
	size := 24 + len(kind) + len(writer)
	for _, dr := range merged {
		size += 24 + len(dr.Destination.Sink) + len(dr.Destination.Topic) + 16*len(dr.Ranges)
	}
	buf := make([]byte, 0, size)
	str := func(s string) { buf = append(binary.BigEndian.AppendUint64(buf, uint64(len(s))), s...) }
	num := func(n uint64) { buf = binary.BigEndian.AppendUint64(buf, n) }
	str(kind)
	str(writer)
	for _, dr := range merged {
		str(dr.Destination.Sink)
		str(dr.Destination.Topic)
		num(uint64(uint32(dr.Destination.Partition)))
		for _, r := range dr.Ranges {
			num(r.Start)
			num(r.End)
		}
	}
	num(uint64(rows))
	sum := sha256.Sum256(buf)
	return hex.EncodeToString(sum[:16])
}

// MergeRanges returns ranges with one entry per destination, in
// destination order, each destination's ranges merged as by
// coverage.Normalize (invalid ones dropped). A destination listed without
// ranges keeps an entry with none. When ranges are already in that form
// it returns them as they are, without a copy: the caller must not modify
// the result.
func MergeRanges(ranges []coverage.DestinationRanges) []coverage.DestinationRanges {
	merged := true
	for i, dr := range ranges {
		if (i > 0 && ranges[i-1].Destination.Compare(dr.Destination) >= 0) || !coverage.IsNormalized(dr.Ranges) {
			merged = false
			break
		}
	}
	if merged {
		return ranges
	}
	byDest := make(map[coverage.Destination]int, len(ranges))
	out := make([]coverage.DestinationRanges, 0, len(ranges))
	for _, dr := range ranges {
		i, ok := byDest[dr.Destination]
		if !ok {
			i = len(out)
			byDest[dr.Destination] = i
			out = append(out, coverage.DestinationRanges{Destination: dr.Destination})
		}
		out[i].Ranges = append(out[i].Ranges, dr.Ranges...)
	}
	for i := range out {
		out[i].Ranges = coverage.Normalize(out[i].Ranges)
	}
	slices.SortFunc(out, func(a, b coverage.DestinationRanges) int { return a.Destination.Compare(b.Destination) })
	return out
}
