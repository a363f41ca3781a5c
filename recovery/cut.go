package recovery

// How a plan is cut to task size and to its task limit.

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/covmirror/covmirror/coverage"
)

// ErrPlanTruncated: the plan has more tasks than PlanOptions.MaxTasks; the
// tasks returned with it were taken in turn from every destination with
// work (see cut), so no destination's work waits behind another's.
var ErrPlanTruncated = errors.New("the plan is longer than its task limit")

// gapCursor is what is left of one destination's gaps: gaps[0] from start.
type gapCursor struct {
	gaps  []Task
	start uint64
}

// take is the cursor's next task of at most maxBatches (zero: no limit).
func (c *gapCursor) take(maxBatches uint64) Task {
	g := c.gaps[0]
	end := g.Range.End
	if maxBatches > 0 && end-c.start > maxBatches {
		end = c.start + maxBatches
	}
	t := Task{Destination: g.Destination, Range: coverage.Range{Start: c.start, End: end}, Kind: g.Kind}
	if c.start = end; end == g.Range.End {
		if c.gaps = c.gaps[1:]; len(c.gaps) > 0 {
			c.start = c.gaps[0].Range.Start
		}
	}
	return t
}

// cut splits gap-sized tasks, sorted by destination and batch, into tasks
// of at most maxBatches (zero: no limit), stopping at maxTasks (zero or
// negative: no limit) with ErrPlanTruncated. Past maxTasks a plan would
// otherwise hold only its first destinations' work (an over-reported
// extent's hole in raw fills it, and a sink's replay sorted after raw is
// never reached): so tasks are taken in turn, one from each destination
// with work left, in destination order (every destination's first task,
// then every one's second, ...), and returned sorted by destination and
// batch.
func cut(gaps []Task, maxBatches uint64, maxTasks int) ([]Task, error) {
	if maxTasks <= 0 {
		// No limit: every task is taken, each gap's in turn, already in
		// order.
		return cutAll(gaps, maxBatches), nil
	}
	var live []*gapCursor
	for i := 0; i < len(gaps); {
		j := i + 1
		for j < len(gaps) && gaps[j].Destination == gaps[i].Destination {
			j++
		}
		live = append(live, &gapCursor{gaps: gaps[i:j], start: gaps[i].Range.Start})
		i = j
	}
	var out []Task
	for len(live) > 0 {
		kept := live[:0]
		for k, c := range live {
			if maxTasks > 0 && len(out) == maxTasks {
				sortTasks(out)
				return out, fmt.Errorf("recovery: plan: %w: these are %d tasks, taken in turn from every destination with work, and %s batches more are planned after them: recover these and plan again",
					ErrPlanTruncated, maxTasks, batchesLeft(append(kept, live[k:]...)))
			}
			out = append(out, c.take(maxBatches))
			if len(c.gaps) > 0 {
				kept = append(kept, c)
			}
		}
		live = kept
	}
	sortTasks(out)
	return out, nil
}

// sortTasks orders tasks by destination and batch.
func sortTasks(tasks []Task) {
	slices.SortFunc(tasks, func(a, b Task) int {
		if c := a.Destination.Compare(b.Destination); c != 0 {
			return c
		}
		return cmp.Compare(a.Range.Start, b.Range.Start)
	})
}

// batchesLeft sums the batches the cursors have left, saying "more than"
// where the sum passes uint64.
func batchesLeft(cs []*gapCursor) string {
	var sum uint64
	for _, c := range cs {
		for i, g := range c.gaps {
			n := g.Range.Len()
			if i == 0 {
				n = g.Range.End - c.start
			}
			if sum > math.MaxUint64-n {
				return fmt.Sprintf("more than %d", uint64(math.MaxUint64))
			}
			sum += n
		}
	}
	return strconv.FormatUint(sum, 10)
}

// cutAll is cut without a task limit: gaps, in order, each split into
// tasks of at most maxBatches (zero: no limit).
func cutAll(gaps []Task, maxBatches uint64) []Task {
	out := make([]Task, 0, len(gaps))
	for _, g := range gaps {
		c := gapCursor{gaps: []Task{g}, start: g.Range.Start}
		for len(c.gaps) > 0 {
			out = append(out, c.take(maxBatches))
		}
	}
	return out
}
