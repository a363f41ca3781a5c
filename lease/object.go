package lease

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/covmirror/covmirror/object"
)

// Dir is the directory of the lease objects in a Blobs location, beside
// the object tier's "sinks/" and "positions/", which it never lists.
const Dir = "leases/"

// record is the lease object's content. The holder's clock appears
// nowhere: a contender times the version it sees by its own.
type record struct {
	Holder string `json:"holder"`
	// Token tells two contenders with one holder name apart.
	Token string `json:"token"`
	// Renewals counts the holder's writes, so that each renewal is a new
	// version even where a version is a digest of the bytes.
	Renewals uint64 `json:"renewals"`
	// TTLMillis is the holder's TTL: a contender waits the longer of its
	// own and this one.
	TTLMillis int64 `json:"ttl_ms"`
	// Released: the holder gave the lease up (Close); take it at once.
	Released bool `json:"released,omitempty"`
}

// objectBackend is the lease as one object under a conditional write.
type objectBackend struct {
	opts  Options
	blobs object.Blobs
	key   string
	token string
	// What this contender wrote last: the version it renews on.
	mine    record
	version string
	// The version a contender is waiting out, and since when by its own
	// clock.
	seen    string
	seenAt  time.Time
	seenTTL time.Duration
}

// NewObject returns a contender for the lease object Dir+Role in blobs,
// which the caller keeps open until Close returns.
func NewObject(blobs object.Blobs, opts Options) (Lease, error) {
	opts.EnsureDefaults()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	if blobs == nil {
		return nil, errors.New("lease: NewObject: the Blobs are nil")
	}
	var tok [8]byte
	_, _ = rand.Read(tok[:])
	b := &objectBackend{opts: opts, blobs: blobs, key: Dir + opts.Role, token: hex.EncodeToString(tok[:])}
	return newDriver(opts, b), nil
}

func (b *objectBackend) name() string {
	return fmt.Sprintf("%s/%s", trimSlash(b.blobs.Name()), b.key)
}

func trimSlash(s string) string {
	for len(s) > 0 && s[len(s)-1] == '/' {
		s = s[:len(s)-1]
	}
	return s
}

func (b *objectBackend) next(released bool) record {
	return record{Holder: b.opts.Holder, Token: b.token, Renewals: b.mine.Renewals + 1,
		TTLMillis: b.opts.TTL.Milliseconds(), Released: released}
}

// put writes rec conditionally and, on success, makes it this contender's.
func (b *objectBackend) put(ctx context.Context, rec record, ifMatch string) error {
	data, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	v, err := b.blobs.Put(ctx, b.key, data, ifMatch)
	if err != nil {
		return err
	}
	b.mine, b.version = rec, v
	return nil
}

func (b *objectBackend) try(ctx context.Context) (bool, error) {
	data, v, err := b.blobs.Get(ctx, b.key)
	if errors.Is(err, object.ErrNotFound) {
		return b.take(ctx, "")
	}
	if err != nil {
		return false, fmt.Errorf("lease: reading %s: %w", b.name(), err)
	}
	var rec record
	if json.Unmarshal(data, &rec) != nil {
		// Not a lease this code wrote: waited out like any holder's.
		rec = record{}
	}
	if rec.Token == b.token || rec.Released {
		// Ours (a renewal of unknown outcome that landed, a holding this
		// contender gave up), or given up: no one is waiting on it.
		b.mine.Renewals = rec.Renewals
		return b.take(ctx, v)
	}
	now := time.Now()
	if v != b.seen {
		b.seen, b.seenAt = v, now
		b.seenTTL = max(b.opts.TTL, time.Duration(rec.TTLMillis)*time.Millisecond)
		return false, nil
	}
	if now.Sub(b.seenAt) < b.seenTTL {
		return false, nil
	}
	b.opts.Logger.Info("lease: taking over a lease unrenewed for its TTL", "lease", b.name(), "holder", b.opts.Holder,
		"previous_holder", rec.Holder, "ttl", b.seenTTL.String())
	b.mine.Renewals = rec.Renewals
	return b.take(ctx, v)
}

// take writes the lease as this contender's over version v ("" creates).
func (b *objectBackend) take(ctx context.Context, v string) (bool, error) {
	err := b.put(ctx, b.next(false), v)
	b.seen = ""
	if errors.Is(err, object.ErrPrecondition) {
		return false, nil // another contender wrote first
	}
	if err != nil {
		return false, fmt.Errorf("lease: writing %s: %w", b.name(), err)
	}
	return true, nil
}

func (b *objectBackend) renew(ctx context.Context) (bool, error) {
	err := b.put(ctx, b.next(false), b.version)
	if err == nil {
		return false, nil
	}
	if !errors.Is(err, object.ErrPrecondition) {
		return false, fmt.Errorf("lease: renewing %s: %w", b.name(), err)
	}
	// Refused: someone else's write, or an earlier renewal of unknown
	// outcome of ours that landed after all.
	data, v, gerr := b.blobs.Get(ctx, b.key)
	var rec record
	if gerr == nil && json.Unmarshal(data, &rec) == nil && rec.Token == b.token && !rec.Released {
		b.mine, b.version = rec, v
		return false, errors.New("lease: a renewal of unknown outcome had landed; renewing again")
	}
	return true, fmt.Errorf("lease: %s was taken over: %w", b.name(), err)
}

func (b *objectBackend) drop(ctx context.Context, release bool) error {
	if !release || b.version == "" {
		return nil
	}
	err := b.put(ctx, b.next(true), b.version)
	b.version = ""
	if errors.Is(err, object.ErrPrecondition) {
		return nil // taken over already: nothing to give up
	}
	if err != nil {
		return fmt.Errorf("lease: releasing %s (a contender takes it over after its TTL): %w", b.name(), err)
	}
	return nil
}
