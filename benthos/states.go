package benthos

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/gapstate"
	"github.com/covmirror/covmirror/sidecar/client"
	"github.com/covmirror/covmirror/tier"
)

// stateWriter records gap states for the covmirror_plan input: into the
// durable tier the pod settings name (as `covmirror unrecoverable` does,
// beside a running pod), or through a running pod's POST /v1/states.
// It opens its tier or client at the first record and keeps it until
// close.
type stateWriter struct {
	dest destination
	log  *slog.Logger

	mu       sync.Mutex
	store    durable.StateStore
	noStates error // the tier keeps no states: not opened again
	c        *client.Client
	closer   io.Closer
}

func (w *stateWriter) record(ctx context.Context, entries []client.StateEntry) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if s := w.dest.sidecar; s != nil {
		if w.c == nil {
			c, err := newClient(*s, w.log)
			if err != nil {
				return err
			}
			w.c = c
		}
		_, err := w.c.RecordStates(ctx, entries)
		return err
	}
	if w.noStates != nil {
		return w.noStates
	}
	if w.store == nil {
		t, closer, err := tier.Open(ctx, w.dest.pod.Tier, true)
		if err != nil {
			return err
		}
		store, err := durable.StatesOf(t)
		if err != nil {
			_ = closer.Close()
			w.noStates = err
			return err
		}
		w.store, w.closer = store, closer
	}
	at := time.Now().UTC()
	events := make([]gapstate.Event, len(entries))
	for i, e := range entries {
		events[i] = gapstate.Event{ID: gapstate.NewID(), Destination: e.Destination, Range: e.Range, State: e.State, Reason: e.Reason, By: w.dest.pod.Tier.Writer, At: at}
	}
	return w.store.AppendStates(ctx, events)
}

func (w *stateWriter) close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	var err error
	if w.c != nil {
		err = w.c.Close()
	}
	if w.closer != nil {
		err = errors.Join(err, w.closer.Close())
	}
	w.c, w.store, w.closer = nil, nil, nil
	return err
}
