package sim

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"

	"github.com/covmirror/covmirror/object"
)

// drawObjectRates draws the object backend's fault rates and the store's
// MaxAttempts from a stream of the seed's own: the step stream, and so
// the iceberg runs of the same seed, stay as they were.
func drawObjectRates(seed uint64, rates *Rates) {
	r := rand.New(rand.NewPCG(seed, 0x0b2))
	p := func(max float64) float64 {
		if r.IntN(4) == 0 {
			return 0 // this fault absent for the whole run
		}
		return r.Float64() * max
	}
	// A checkpoint reads and writes each of its sinks' objects (three at
	// most here) and, after a write of unknown outcome, lists and reads
	// them all; these maxima fail a good share of the operations.
	rates.ObjectGet, rates.ObjectPut, rates.ObjectPutLost = p(0.1), p(0.15), p(0.15)
	rates.ObjectPrecond, rates.ObjectList = p(0.15), p(0.15)
	// The store retries a sink's write up to MaxAttempts: at the default (object.DefaultMaxAttempts)
	// faults almost never reach the Mirror; at 1 every one does,
	// and the checkpoint stays pending, its retry marked MayHaveLanded.
	rates.ObjectMaxAttempts = []int{1, 1, 2, 3, 8, object.DefaultMaxAttempts}[r.IntN(6)]
}

var errObjectDown = errors.New("sim: injected object store fault")

// faultBlobs is the sink objects' location with the faults an object store
// shows: reads and listings that fail, writes refused with an error of
// unknown outcome (nothing written), writes applied whose answer is lost,
// and a precondition failure although nothing changed (a spurious 412:
// the Store must re-read, re-merge and try again). It draws from the
// faults' object stream: the Store calls it from the step's goroutine
// alone, so a seed replays the same faults at the same calls.
type faultBlobs struct {
	object.Blobs
	f *faults
}

func (b *faultBlobs) Get(ctx context.Context, key string) ([]byte, string, error) {
	if b.f.draw(b.f.objRnd, "object get failed", b.f.rates.ObjectGet) {
		return nil, "", fmt.Errorf("get %s: %w", key, errors.Join(errObjectDown, errors.New("read tcp: connection reset by peer")))
	}
	return b.Blobs.Get(ctx, key)
}

func (b *faultBlobs) Put(ctx context.Context, key string, data []byte, ifMatch string) (string, error) {
	if b.f.draw(b.f.objRnd, "object put refused", b.f.rates.ObjectPut) {
		return "", fmt.Errorf("put %s: %w", key, errors.Join(errObjectDown, errors.New("503 Slow Down")))
	}
	if b.f.draw(b.f.objRnd, "object put spurious precondition", b.f.rates.ObjectPrecond) {
		return "", fmt.Errorf("put %s: %w (injected: nothing was written)", key, object.ErrPrecondition)
	}
	version, err := b.Blobs.Put(ctx, key, data, ifMatch)
	if err == nil && b.f.draw(b.f.objRnd, "object put landed, answer lost", b.f.rates.ObjectPutLost) {
		return "", fmt.Errorf("put %s: %w", key, errors.Join(errObjectDown, errors.New("unexpected EOF")))
	}
	return version, err
}

func (b *faultBlobs) List(ctx context.Context, prefix string) ([]string, error) {
	if b.f.draw(b.f.objRnd, "object list failed", b.f.rates.ObjectList) {
		return nil, fmt.Errorf("list %s: %w", prefix, errors.Join(errObjectDown, errors.New("dial tcp: connect: connection refused")))
	}
	return b.Blobs.List(ctx, prefix)
}
