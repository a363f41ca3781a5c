package benthos

import (
	"fmt"
	"sync"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/gapstate"
)

// metaReplay is the metadata key of a replay message: the token of its
// piece of a task, which the covmirror output reports back, so that the
// covmirror_plan input learns which of the piece's batches reached an
// output (raw held them) once the message is acknowledged.
const metaReplay = "covmirror_replay"

// piece is one message of the covmirror_plan input: a task's range, or
// the part of it sized to the sink's timeout.
type piece struct {
	d    coverage.Destination
	r    coverage.Range
	seen coverage.RangeSet // batches that reached a covmirror output
	// failed says why a message of the piece was not a batch read from
	// raw (a failed read, ids that do not parse): then what the piece
	// lacks is not judged.
	failed error
}

// replays are the pieces in flight in this process, by token.
var replays struct {
	mu     sync.Mutex
	pieces map[string]*piece
	pace   map[string]pace // by where coverage goes and sink
	// outputs counts the connected covmirror outputs by where they
	// record: a piece is judged only while one records where the plan
	// input does, since without one nothing reports what reached a sink
	// (a stream that only lists the plan would find every batch lacking).
	outputs map[string]int
}

// joinReplays counts a connected output (by d.where()); leave undoes it.
func joinReplays(d destination) (leave func()) {
	replays.mu.Lock()
	defer replays.mu.Unlock()
	if replays.outputs == nil {
		replays.outputs = map[string]int{}
	}
	replays.outputs[d.where()]++
	var once sync.Once
	return func() {
		once.Do(func() {
			replays.mu.Lock()
			defer replays.mu.Unlock()
			if replays.outputs[d.where()]--; replays.outputs[d.where()] <= 0 {
				delete(replays.outputs, d.where())
			}
		})
	}
}

// outputsRecording reports whether a covmirror output records where d
// says.
func outputsRecording(d destination) bool {
	replays.mu.Lock()
	defer replays.mu.Unlock()
	return replays.outputs[d.where()] > 0
}

// pace is what a sink's covmirror output observed: per message, and the
// timeout a write must finish within.
type pace struct {
	perMessage, timeout time.Duration
}

func startPiece(d coverage.Destination, r coverage.Range) string {
	token := gapstate.NewID()
	replays.mu.Lock()
	defer replays.mu.Unlock()
	if replays.pieces == nil {
		replays.pieces = map[string]*piece{}
	}
	replays.pieces[token] = &piece{d: d, r: r}
	return token
}

// endPiece forgets the piece and returns it (nil if unknown).
func endPiece(token string) *piece {
	replays.mu.Lock()
	defer replays.mu.Unlock()
	p := replays.pieces[token]
	delete(replays.pieces, token)
	return p
}

// missing is what the piece lacks: the batches of its range no message
// brought to an output.
func (p *piece) missing() []coverage.Range {
	want, _ := coverage.NewRangeSet(p.r)
	gaps := coverage.Gaps(&want, &p.seen)
	return gaps.Ranges()
}

// replayRead reports a replay message (one with metaReplay) to its
// piece: its batch reached this output, or, for a message with an error
// (raw's read of it failed) or ids that do not parse, that the piece's
// batches are not all accounted for. The error it returns is the failed
// read's: such a message carries no batch to write.
func (o *output) replayRead(m *service.Message, k batchKey, keyErr error) error {
	token, ok := m.MetaGet(metaReplay)
	if !ok {
		return nil
	}
	readErr := m.GetError()
	replays.mu.Lock()
	defer replays.mu.Unlock()
	p := replays.pieces[token]
	if p == nil {
		return readErr // not this process's piece, or ended
	}
	switch {
	case readErr != nil:
		p.failed = fmt.Errorf("a read of raw failed: %w", readErr)
	case keyErr != nil:
		p.failed = keyErr
	case k.d == p.d && k.id >= p.r.Start && k.id < p.r.End:
		_ = p.seen.Add(coverage.Range{Start: k.id, End: k.id + 1})
	}
	if readErr != nil {
		return fmt.Errorf("the replay's read of raw failed, nothing to write: %w", readErr)
	}
	return nil
}

// observePace keeps the time a write of n messages took, for the plan
// input to size the next pieces of a replay to this sink to the timeout.
// A write the timeout cut short wrote maybe half its messages: its pace
// is taken as twice as slow, never faster than the last, so that the next
// pieces are a quarter of it at most.
func (o *output) observePace(batch service.MessageBatch, n int, took time.Duration, timedOut bool) {
	if n == 0 || o.timeout <= 0 {
		return
	}
	if _, ok := batch[0].MetaGet(metaReplay); !ok {
		return
	}
	sink, err := o.sink.TryString(batch[0])
	if err != nil {
		return
	}
	key := o.dest.where() + "\x00" + sink
	per := took / time.Duration(n)
	replays.mu.Lock()
	defer replays.mu.Unlock()
	if replays.pace == nil {
		replays.pace = map[string]pace{}
	}
	old, ok := replays.pace[key]
	switch {
	case timedOut:
		per = max(2*per, old.perMessage)
	case ok:
		per = (old.perMessage*3 + per) / 4 // smoothed: one slow write does not halve the pieces
	}
	replays.pace[key] = pace{perMessage: per, timeout: o.timeout}
}

// pieceSize is how many batches of a task for sink the plan input hands
// a child at once: at most limit, and no more than half the sink's
// timeout fits at the pace its output observed.
func pieceSize(where, sink string, limit uint64) uint64 {
	replays.mu.Lock()
	p, ok := replays.pace[where+"\x00"+sink]
	replays.mu.Unlock()
	if !ok || p.perMessage <= 0 {
		return limit
	}
	fit := uint64(p.timeout / 2 / p.perMessage)
	return max(1, min(limit, fit))
}
