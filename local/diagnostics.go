package local

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/covmirror/covmirror/coverage"
)

// Diagnostics is what this pod believes about its coverage (docs/design.md's
// "Diagnostics"): per destination the covered ranges, the gaps against the
// reference sink, and how far the local view has drifted from the last
// checkpoint. It describes this pod only; nothing outside the pod may act on
// it.
type Diagnostics struct {
	Dir              string     `json:"dir"`
	Reference        string     `json:"reference"`
	At               time.Time  `json:"at"`
	LastCheckpointID uint64     `json:"last_checkpoint_id"`
	LastCheckpointAt *time.Time `json:"last_checkpoint_at,omitempty"`
	InFlight         *string    `json:"checkpoint_in_flight,omitempty"`
	PendingRanges    int        `json:"pending_ranges"`
	PendingBatches   uint64     `json:"pending_batches"`
	// Failed is the store's failure (health.go): once set, every write
	// returns it and the process must restart to go on. Empty when healthy.
	Failed string `json:"failed,omitempty"`
	// UnpersistedKeys counts staged writes not yet in Pebble: records
	// covered in memory (their sinks acknowledged them) that a crash now
	// would lose, which costs a replay.
	UnpersistedKeys int `json:"unpersisted_keys"`
	// LastWriteError is the last failed Pebble write, while writes fail;
	// WriteFailures counts the consecutive failures.
	LastWriteError   string     `json:"last_write_error,omitempty"`
	LastWriteErrorAt *time.Time `json:"last_write_error_at,omitempty"`
	WriteFailures    int        `json:"write_failures,omitempty"`
	// LastBackgroundError is the last error of Pebble's own background work
	// (a flush or compaction it retries).
	LastBackgroundError string                   `json:"last_background_error,omitempty"`
	Destinations        []DestinationDiagnostics `json:"destinations"`
	// States are the gap states kept here, shipped to the durable tier or
	// pending; never coverage.
	States []StateDiagnostics `json:"states"`
}

// DestinationDiagnostics is one destination's part of Diagnostics.
type DestinationDiagnostics struct {
	Destination    coverage.Destination `json:"destination"`
	Covered        []coverage.Range     `json:"covered"`
	CoveredBatches uint64               `json:"covered_batches"`
	// Gaps are the reference sink's ranges of the same topic and partition
	// that this destination lacks; empty for the reference itself.
	Gaps       []coverage.Range `json:"gaps"`
	GapBatches uint64           `json:"gap_batches"`
	// Pending are the covered ranges not yet in a committed checkpoint.
	Pending        []coverage.Range `json:"pending"`
	PendingBatches uint64           `json:"pending_batches"`
	// OldestPending is when the oldest pending record was made.
	OldestPending    *time.Time `json:"oldest_pending,omitempty"`
	OldestPendingAge string     `json:"oldest_pending_age,omitempty"`
}

// Diagnostics returns the store's diagnostics.
func (s *Store) Diagnostics(ctx context.Context) (Diagnostics, error) {
	if err := ctx.Err(); err != nil {
		return Diagnostics{}, coverage.StoreError("diagnostics", err)
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return Diagnostics{}, coverage.StoreError("diagnostics", coverage.ErrClosed)
	}
	now := s.opts.Now().UTC()
	out := Diagnostics{Dir: s.opts.Dir, Reference: s.opts.Reference, At: now, LastCheckpointID: s.ckpt.lastID,
		Destinations: []DestinationDiagnostics{}, States: s.statesLocked()}
	if !s.ckpt.lastAt.IsZero() {
		at := s.ckpt.lastAt
		out.LastCheckpointAt = &at
	}
	if err := s.health.failed(); err != nil {
		out.Failed = err.Error()
	}
	// A key in flight and staged again since is one unpersisted key.
	out.UnpersistedKeys, out.WriteFailures = len(s.w.ops), s.w.failures
	for key := range s.w.inFlight {
		if _, staged := s.w.ops[key]; !staged {
			out.UnpersistedKeys++
		}
	}
	if s.w.lastErr != nil {
		at := s.w.lastAt.UTC()
		out.LastWriteError, out.LastWriteErrorAt = s.w.lastErr.Error(), &at
	}
	out.LastBackgroundError = s.health.lastBackgroundError()
	if s.ckpt.inFlight != nil {
		name := s.ckpt.inFlight.Name()
		out.InFlight = &name
	}
	for _, d := range s.sortedDestinationsLocked() {
		st := s.dests[d]
		dd := DestinationDiagnostics{Destination: d, Covered: st.covered.Ranges(), CoveredBatches: st.covered.Batches(),
			Gaps: []coverage.Range{}}
		if d.Sink != s.opts.Reference {
			if ref := s.dests[d.WithSink(s.opts.Reference)]; ref != nil {
				gaps := coverage.Gaps(&ref.covered, &st.covered)
				dd.Gaps, dd.GapBatches = gaps.Ranges(), gaps.Batches()
			}
		}
		pending := st.pending.set()
		pending.Union(&st.inFlight)
		dd.Pending, dd.PendingBatches = pending.Ranges(), pending.Batches()
		if !pending.IsEmpty() && !st.pendingSince.IsZero() {
			since := st.pendingSince.UTC()
			dd.OldestPending = &since
			dd.OldestPendingAge = now.Sub(since).Round(time.Millisecond).String()
		}
		out.PendingRanges += pending.Len()
		out.PendingBatches += dd.PendingBatches
		out.Destinations = append(out.Destinations, dd)
	}
	return out, nil
}

// PendingBatches is the number of recorded batches not yet in a committed
// checkpoint: Diagnostics' total, without building the per-destination
// report. It costs one step per destination.
func (s *Store) PendingBatches() uint64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var n uint64
	for _, st := range s.dests {
		n += st.pending.batches + st.inFlight.Batches()
	}
	return n
}

// Handler serves Diagnostics as JSON, for a pod to mount on its debug port:
// while the pod runs, Pebble's lock keeps every other process out of the
// directory, so this is how an operator inspects it. A failed store is
// served with status 503, so that a probe notices, and the same body.
func (s *Store) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		diag, err := s.Diagnostics(r.Context())
		if err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		if diag.Failed != "" {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(diag)
	})
}

// Err says why the store takes no records: coverage.ErrClosed after Close,
// its failure (health.go) once it failed; nil while it is open and healthy.
// It reads two fields, for a readiness probe asked every few seconds.
func (s *Store) Err() error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.recordableLocked()
}
