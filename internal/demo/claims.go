package demo

import (
	"errors"
	"fmt"
	"slices"

	"github.com/covmirror/covmirror/coverage"
)

// ErrLeads is the loss the design forbids: coverage claiming a batch its
// sink does not hold.
var ErrLeads = errors.New("VERDICT FAILED: coverage leads the sink")

// CheckClaims fails with ErrLeads if claimed (committed coverage read from
// the table, or a local tier's view, per destination) claims a batch a
// store does not hold. what names whose claim it is.
func (p *Pipeline) CheckClaims(what string, claimed map[coverage.Destination]*coverage.RangeSet) error {
	for _, dest := range slices.SortedFunc(func(yield func(coverage.Destination) bool) {
		for d := range claimed {
			if !yield(d) {
				return
			}
		}
	}, coverage.Destination.Compare) {
		if dest.Topic != p.Topic {
			continue
		}
		store := p.Store(dest.Sink)
		if store == nil {
			return fmt.Errorf("%w: %s has coverage of an unknown sink %s", ErrLeads, what, dest)
		}
		if extra := coverage.Gaps(claimed[dest], store.Holds(dest)); !extra.IsEmpty() {
			return fmt.Errorf("%w: %s claims %s of %s, which the sink does not hold (it holds %s)",
				ErrLeads, what, extra.String(), dest, store.Holds(dest))
		}
	}
	return nil
}

// Incomplete lists what keeps the run from being complete: a sink lacking
// a batch raw holds, or committed coverage of a destination short of what
// raw holds. With full, every partition must also hold and be acked up to
// batch full.
func (p *Pipeline) Incomplete(committed map[coverage.Destination]*coverage.RangeSet, full uint64) []string {
	var problems []string
	for part := range p.Partitions {
		raw := p.Destination(part)
		held := p.Raw.Holds(raw)
		if full > 0 {
			all := coverage.Range{Start: 1, End: full + 1}
			if !held.ContainsRange(all) || p.Acked[part] != full {
				problems = append(problems, fmt.Sprintf("raw %s holds %s, acked to %d", raw, held, p.Acked[part]))
			}
		}
		for _, name := range p.SinkNames() {
			dest := raw.WithSink(name)
			if missing := coverage.Gaps(held, p.Store(name).Holds(dest)); !missing.IsEmpty() {
				problems = append(problems, fmt.Sprintf("%s lacks %s", dest, missing.String()))
			}
			c := committed[dest]
			if c == nil {
				c = new(coverage.RangeSet)
			}
			if missing := coverage.Gaps(held, c); !missing.IsEmpty() {
				problems = append(problems, fmt.Sprintf("committed coverage of %s lacks %s of what raw holds (it has %s)", dest, missing.String(), c))
			}
		}
	}
	return problems
}

// Dups is how many repeated batch-writes the sinks' dedup absorbed: the
// price of coverage lagging.
func (p *Pipeline) Dups() uint64 {
	var n uint64
	for _, s := range p.Sinks {
		n += s.Dups
	}
	return n
}
