package sidecar

import (
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/mirror"
)

// DefaultMaxExtents is NewExtentBook's bound when given zero: the
// partitions one pod keeps reported extents of.
const DefaultMaxExtents = 100_000

// ErrTooManyExtents: a report would make an ExtentBook hold more
// partitions than its bound; nothing of it was kept.
var ErrTooManyExtents = errors.New("too many partitions with reported source extents")

// ExtentBook is the source acked extents a pipeline reported to this pod
// (PUT /v1/extents), kept in memory only: per (topic, partition) the lowest
// start and the highest end ever reported, so a report only ever widens
// what is kept and a stale or reordered report changes nothing. A restart
// forgets them until the pipeline reports again; until then holes are
// looked for as without extents (a lag: nothing is claimed, a stretch at a
// stream's edge is just not looked at).
//
// An over-reported end is lag-safe: extents only widen where raw's holes
// are looked for (mirror.ReferenceHoles), a batch raw's coverage lacks
// there is verify-reference work (raw is read back and only what it holds
// is recorded), and the sinks' gaps are measured against raw's committed
// coverage, never against the extent. So it costs a verification and can
// neither hide a gap nor claim a batch. Safe for concurrent use.
type ExtentBook struct {
	max  int
	mu   sync.Mutex
	byTP map[mirror.TopicPartition]coverage.Extent
}

// NewExtentBook returns an empty book holding at most maxPartitions
// partitions (zero: DefaultMaxExtents): the topics are the callers'.
func NewExtentBook(maxPartitions int) *ExtentBook {
	if maxPartitions <= 0 {
		maxPartitions = DefaultMaxExtents
	}
	return &ExtentBook{max: maxPartitions, byTP: map[mirror.TopicPartition]coverage.Extent{}}
}

// Report widens the book by es, validated first (coverage.ValidateExtents);
// an invalid report, or one past the bound, keeps nothing.
func (b *ExtentBook) Report(es []coverage.Extent) error {
	valid, err := coverage.ValidateExtents(es)
	if err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	fresh := 0
	for _, e := range valid {
		if _, ok := b.byTP[mirror.TopicPartition{Topic: e.Topic, Partition: e.Partition}]; !ok {
			fresh++
		}
	}
	if len(b.byTP)+fresh > b.max {
		return fmt.Errorf("%w: %d kept and %d new, past the bound of %d: report the partitions this pod owns", ErrTooManyExtents, len(b.byTP), fresh, b.max)
	}
	for _, e := range valid {
		tp := mirror.TopicPartition{Topic: e.Topic, Partition: e.Partition}
		b.byTP[tp] = widenExtent(b.byTP[tp], e)
	}
	return nil
}

// Extents is what the book holds, sorted by topic and partition. A nil
// book holds none.
func (b *ExtentBook) Extents() []coverage.Extent {
	return b.With(nil)
}

// With is the book widened by es, which must be valid, without keeping
// them: the extents a request gave, and the book's for every other
// partition.
func (b *ExtentBook) With(es []coverage.Extent) []coverage.Extent {
	all := map[mirror.TopicPartition]coverage.Extent{}
	if b != nil {
		b.mu.Lock()
		maps.Copy(all, b.byTP)
		b.mu.Unlock()
	}
	for _, e := range es {
		tp := mirror.TopicPartition{Topic: e.Topic, Partition: e.Partition}
		all[tp] = widenExtent(all[tp], e)
	}
	out := slices.Collect(maps.Values(all))
	slices.SortFunc(out, func(a, b coverage.Extent) int {
		if c := strings.Compare(a.Topic, b.Topic); c != 0 {
			return c
		}
		return int(a.Partition) - int(b.Partition)
	})
	return out
}

// widenExtent is the smallest extent holding both; a zero old is none. An
// empty e adds nothing but its partition.
func widenExtent(old, e coverage.Extent) coverage.Extent {
	if old.Topic == "" || old.Start >= old.End {
		return e
	}
	if e.Start >= e.End {
		return old
	}
	old.Start, old.End = min(old.Start, e.Start), max(old.End, e.End)
	return old
}

// extentsPut is PUT /v1/extents: the body is the JSON array of
// --acked-ends; the book keeps it (see ExtentBook). GET answers what the
// book holds.
func (s *Server) extentsRoute(w http.ResponseWriter, r *http.Request) {
	if !s.methods(w, r, http.MethodGet, http.MethodPut) {
		return
	}
	if r.Method != http.MethodPut {
		writeJSON(w, http.StatusOK, s.opts.Extents.Extents())
		return
	}
	if s.shuttingDown(w, r) {
		return
	}
	es, ok := s.bodyExtents(w, r)
	if !ok {
		return
	}
	if err := s.opts.Extents.Report(es); err != nil {
		rule := "invalid-extent"
		if errors.Is(err, ErrTooManyExtents) {
			rule = "too-many-extents"
		}
		s.fail(w, r, http.StatusBadRequest, apiError{Error: err.Error() + "; nothing was kept", Rule: rule})
		return
	}
	writeJSON(w, http.StatusOK, s.opts.Extents.Extents())
}
