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
	"github.com/covmirror/covmirror/recovery"
)

// DefaultMaxExtents is NewExtentBook's bound when given zero: the
// partitions one pod keeps reported extents of.
const DefaultMaxExtents = 100_000

// MaxExtentBytes bounds an ExtentBook's topic names, in bytes, counting
// each kept partition's topic once: 8 MiB, what one request body may hold
// (DefaultMaxBodyBytes), so a full book, which every /v1/gaps and /v1/plan
// copies and GET /v1/extents lists, costs about what one request may.
const MaxExtentBytes = 8 << 20

// ErrTooManyExtents: a report would make an ExtentBook hold more
// partitions, or more bytes of topic names, than its bounds; nothing of it
// was kept. DELETE /v1/extents (ExtentBook.Forget) makes room.
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
// are looked for (recovery.ReferenceHoles), a batch raw's coverage lacks
// there is verify-reference work (raw is read back and only what it holds
// is recorded), and the sinks' gaps are measured against raw's committed
// coverage, never against the extent. So it costs a verification and can
// neither hide a gap nor claim a batch. Safe for concurrent use.
type ExtentBook struct {
	max   int
	mu    sync.Mutex
	byTP  map[recovery.TopicPartition]coverage.Extent
	bytes int // of the kept partitions' topic names
}

// NewExtentBook returns an empty book holding at most maxPartitions
// partitions (zero: DefaultMaxExtents): the topics are the callers'.
func NewExtentBook(maxPartitions int) *ExtentBook {
	if maxPartitions <= 0 {
		maxPartitions = DefaultMaxExtents
	}
	return &ExtentBook{max: maxPartitions, byTP: map[recovery.TopicPartition]coverage.Extent{}}
}

// Report widens the book by es, validated first (coverage.ValidateExtents);
// an invalid report, or one past a bound (the partitions, MaxExtentBytes),
// keeps nothing.
func (b *ExtentBook) Report(es []coverage.Extent) error {
	_, err := b.report(es)
	return err
}

// report is Report, saying how many partitions' kept extents it changed.
func (b *ExtentBook) report(es []coverage.Extent) (int, error) {
	valid, err := coverage.ValidateExtents(es)
	if err != nil {
		return 0, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	fresh, freshBytes := 0, 0
	seen := map[recovery.TopicPartition]bool{}
	for _, e := range valid {
		tp := recovery.TopicPartition{Topic: e.Topic, Partition: e.Partition}
		if _, ok := b.byTP[tp]; !ok && !seen[tp] {
			seen[tp] = true
			fresh++
			freshBytes += len(e.Topic)
		}
	}
	if len(b.byTP)+fresh > b.max {
		return 0, fmt.Errorf("%w: %d kept and %d new, past the bound of %d: report the partitions this pod owns, or forget others with DELETE /v1/extents", ErrTooManyExtents, len(b.byTP), fresh, b.max)
	}
	if b.bytes+freshBytes > MaxExtentBytes {
		return 0, fmt.Errorf("%w: %d bytes of topic names kept and %d new, past the bound of %d: report the partitions this pod owns, or forget others with DELETE /v1/extents", ErrTooManyExtents, b.bytes, freshBytes, MaxExtentBytes)
	}
	changed := 0
	for _, e := range valid {
		tp := recovery.TopicPartition{Topic: e.Topic, Partition: e.Partition}
		old, ok := b.byTP[tp]
		if n := widenExtent(old, e); !ok || n != old {
			b.byTP[tp] = n
			changed++
		}
	}
	b.bytes += freshBytes
	return changed, nil
}

// Forget drops the kept extents of topic's partition (nil: of all its
// partitions; topic "": every extent), so that an extent reported wrongly
// (a head rather than a committed position, a stream since restarted)
// stops being looked over; the pipeline reports the right one again. It
// returns how many it dropped.
func (b *ExtentBook) Forget(topic string, partition *int32) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := 0
	for tp := range b.byTP {
		if topic == "" || tp.Topic == topic && (partition == nil || tp.Partition == *partition) {
			delete(b.byTP, tp)
			b.bytes -= len(tp.Topic)
			n++
		}
	}
	return n
}

// Len is how many partitions the book holds.
func (b *ExtentBook) Len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.byTP)
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
	all := map[recovery.TopicPartition]coverage.Extent{}
	if b != nil {
		b.mu.Lock()
		maps.Copy(all, b.byTP)
		b.mu.Unlock()
	}
	for _, e := range es {
		tp := recovery.TopicPartition{Topic: e.Topic, Partition: e.Partition}
		all[tp] = widenExtent(all[tp], e)
	}
	out := slices.AppendSeq(make([]coverage.Extent, 0, len(all)), maps.Values(all))
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

// extentsAnswer is PUT's and DELETE's answer on /v1/extents: a summary,
// never the book (which may hold megabytes).
type extentsAnswer struct {
	// Extents is how many partitions the book holds now.
	Extents int `json:"extents"`
	// Changed is how many partitions' extents the PUT widened or added.
	Changed *int `json:"changed,omitempty"`
	// Forgotten is how many the DELETE dropped.
	Forgotten *int `json:"forgotten,omitempty"`
}

// extentsRoute is /v1/extents. PUT: the body is the JSON array of
// --acked-ends; the book keeps it (see ExtentBook) and answers a summary.
// GET lists what the book holds (bounded by its bounds). DELETE
// ?topic=T&partition=P forgets that partition's extent (topic alone: all
// its partitions; neither: every extent).
func (s *Server) extentsRoute(w http.ResponseWriter, r *http.Request) {
	if !s.methods(w, r, http.MethodGet, http.MethodPut, http.MethodDelete) {
		return
	}
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		writeJSON(w, http.StatusOK, s.opts.Extents.Extents())
		return
	case http.MethodDelete:
		s.forgetExtents(w, r)
		return
	}
	if s.shuttingDown(w, r) {
		return
	}
	es, ok := s.bodyExtents(w, r)
	if !ok {
		return
	}
	changed, err := s.opts.Extents.report(es)
	if err != nil {
		rule := "invalid-extent"
		if errors.Is(err, ErrTooManyExtents) {
			rule = "too-many-extents"
		}
		s.fail(w, r, http.StatusBadRequest, apiError{Error: err.Error() + "; nothing was kept", Rule: rule})
		return
	}
	writeJSON(w, http.StatusOK, extentsAnswer{Extents: s.opts.Extents.Len(), Changed: &changed})
}

// forgetExtents is DELETE /v1/extents?topic=&partition=.
func (s *Server) forgetExtents(w http.ResponseWriter, r *http.Request) {
	q, ok := s.query(w, r)
	if !ok {
		return
	}
	part, err := queryPartition(q.Get("partition"))
	if err == nil && part != nil && q.Get("topic") == "" {
		err = errors.New("partition= without topic=: name the topic whose partition's extent to forget (no parameters forgets every extent)")
	}
	if err != nil {
		s.fail(w, r, http.StatusBadRequest, apiError{Error: err.Error(), Rule: "query"})
		return
	}
	n := s.opts.Extents.Forget(q.Get("topic"), part)
	writeJSON(w, http.StatusOK, extentsAnswer{Extents: s.opts.Extents.Len(), Forgotten: &n})
}
