package fleetsim

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/covmirror/covmirror/object"
)

// S3Options configures NewS3. Every zero value is a documented default.
type S3Options struct {
	// Seed fixes every request's latency: the n-th request of a kind on a
	// key takes the same time in every run with this seed.
	Seed uint64

	// MinLatency and MaxLatency bound the latency drawn, uniformly, for
	// each request: the time to its first byte. Zero values:
	// DefaultMinLatency and DefaultMaxLatency.
	MinLatency, MaxLatency time.Duration

	// Bandwidth is each request's transfer rate in bytes a second, added
	// to its latency: a request of n bytes takes latency + n/Bandwidth.
	// Zero value: DefaultBandwidth.
	Bandwidth float64

	// NoLatency makes every request instant (no latency, no transfer
	// time): the store as fast as a local map, to compare with a local
	// directory.
	NoLatency bool
}

// S3Options' defaults: S3 Standard's time to first byte for small objects
// within a region, and one connection's throughput.
const (
	DefaultMinLatency = 20 * time.Millisecond
	DefaultMaxLatency = 100 * time.Millisecond
	DefaultBandwidth  = 80e6
)

// EnsureDefaults fills in zero values.
func (o *S3Options) EnsureDefaults() {
	if o.MinLatency == 0 && o.MaxLatency == 0 {
		o.MinLatency, o.MaxLatency = DefaultMinLatency, DefaultMaxLatency
	}
	if o.Bandwidth == 0 {
		o.Bandwidth = DefaultBandwidth
	}
}

// Validate reports options NewS3 cannot work with.
func (o *S3Options) Validate() error {
	if o.MinLatency < 0 || o.MaxLatency < o.MinLatency {
		return fmt.Errorf("fleetsim: S3Options.MinLatency %v and MaxLatency %v: need 0 <= MinLatency <= MaxLatency", o.MinLatency, o.MaxLatency)
	}
	if !(o.Bandwidth > 0) {
		return fmt.Errorf("fleetsim: S3Options.Bandwidth %v: it must be positive bytes a second", o.Bandwidth)
	}
	return nil
}

// S3 is a simulated S3 bucket, an object.Blobs meant for a testing/synctest
// bubble, where its waits pass in fake time. Every request takes a latency
// drawn from the seed plus its bytes over the bandwidth. A Put's
// precondition is checked when the Put completes, against the key's
// version at that instant, as S3 does: two Puts with the same If-Match
// that overlap both pass the check at their start, and the first to
// complete wins while the other gets a 412. A Get returns the object as it
// was when its first byte left (after the latency), then takes the
// transfer time.
//
// It is safe for concurrent use; a request whose context ends while it
// waits fails with the context's error and changes nothing.
type S3 struct {
	opts S3Options

	mu      sync.Mutex
	objects map[string]s3Object
	next    uint64            // the last version handed out
	seq     map[string]uint64 // per kind and key: requests so far, for the latency draw

	stats s3Counters
}

type s3Object struct {
	data    []byte
	version string
}

type s3Counters struct {
	gets, puts, lists, deletes, preconditions, notFound atomic.Int64
	bytesIn, bytesOut                                   atomic.Int64
	getTime, putTime                                    atomic.Int64 // nanoseconds, summed
}

// S3Stats counts what an S3 served since NewS3.
type S3Stats struct {
	Gets, Puts, Lists, Deletes int64
	// Preconditions are Puts refused with a 412: another writer's Put
	// completed first.
	Preconditions int64
	// NotFound are Gets of a missing key.
	NotFound int64
	// BytesIn is what Puts carried in; BytesOut what Gets carried out.
	BytesIn, BytesOut int64
	// GetTime and PutTime are the summed durations of every Get and Put.
	GetTime, PutTime time.Duration
}

// Requests is every request of every kind.
func (s S3Stats) Requests() int64 { return s.Gets + s.Puts + s.Lists + s.Deletes }

// Window is the mean read-to-write window of one conditional update: a
// Get and a Put, each of its mean duration. One key updated by readers
// that re-read on a 412 takes at most one update per Window.
func (s S3Stats) Window() time.Duration {
	if s.Gets == 0 || s.Puts == 0 {
		return 0
	}
	return s.GetTime/time.Duration(s.Gets) + s.PutTime/time.Duration(s.Puts)
}

// Sub is s minus an earlier o: what was served in between.
func (s S3Stats) Sub(o S3Stats) S3Stats {
	return S3Stats{Gets: s.Gets - o.Gets, Puts: s.Puts - o.Puts, Lists: s.Lists - o.Lists, Deletes: s.Deletes - o.Deletes,
		Preconditions: s.Preconditions - o.Preconditions, NotFound: s.NotFound - o.NotFound,
		BytesIn: s.BytesIn - o.BytesIn, BytesOut: s.BytesOut - o.BytesOut, GetTime: s.GetTime - o.GetTime, PutTime: s.PutTime - o.PutTime}
}

var _ object.Blobs = (*S3)(nil)

// NewS3 returns an empty simulated bucket.
func NewS3(opts S3Options) (*S3, error) {
	opts.EnsureDefaults()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	return &S3{opts: opts, objects: map[string]s3Object{}, seq: map[string]uint64{}}, nil
}

// Name names the bucket.
func (s *S3) Name() string { return fmt.Sprintf("sim-s3://seed-%d", s.opts.Seed) }

// Stats returns the counters.
func (s *S3) Stats() S3Stats {
	c := &s.stats
	return S3Stats{Gets: c.gets.Load(), Puts: c.puts.Load(), Lists: c.lists.Load(), Deletes: c.deletes.Load(),
		Preconditions: c.preconditions.Load(), NotFound: c.notFound.Load(), BytesIn: c.bytesIn.Load(), BytesOut: c.bytesOut.Load(),
		GetTime: time.Duration(c.getTime.Load()), PutTime: time.Duration(c.putTime.Load())}
}

// Objects is how many objects the bucket holds.
func (s *S3) Objects() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.objects)
}

// latency draws the latency of the next request of kind on key: a hash of
// the seed, the kind, the key and how many such requests came before, so
// that the draw does not depend on how requests to other keys interleave.
func (s *S3) latency(kind byte, key string) time.Duration {
	if s.opts.NoLatency || s.opts.MaxLatency == s.opts.MinLatency {
		if s.opts.NoLatency {
			return 0
		}
		return s.opts.MinLatency
	}
	s.mu.Lock()
	id := string(kind) + key
	n := s.seq[id]
	s.seq[id] = n + 1
	s.mu.Unlock()
	h := fnv.New64a()
	var buf [17]byte
	binary.LittleEndian.PutUint64(buf[:8], s.opts.Seed)
	binary.LittleEndian.PutUint64(buf[8:16], n)
	buf[16] = kind
	_, _ = h.Write(buf[:])
	_, _ = h.Write([]byte(key))
	span := uint64(s.opts.MaxLatency - s.opts.MinLatency)
	return s.opts.MinLatency + time.Duration(mix(h.Sum64())%(span+1))
}

// mix is splitmix64's finalizer: FNV's low bits alone are poorly spread.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}

// transfer is the time n bytes take at the bandwidth.
func (s *S3) transfer(n int) time.Duration {
	if s.opts.NoLatency {
		return 0
	}
	return time.Duration(float64(n) / s.opts.Bandwidth * float64(time.Second))
}

// wait sleeps d, or until ctx ends.
func wait(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Get returns the object as it was after the request's latency, once its
// bytes have transferred.
func (s *S3) Get(ctx context.Context, key string) ([]byte, string, error) {
	start := time.Now()
	defer func() { s.stats.getTime.Add(int64(time.Since(start))) }()
	s.stats.gets.Add(1)
	if err := wait(ctx, s.latency('g', key)); err != nil {
		return nil, "", err
	}
	s.mu.Lock()
	o, ok := s.objects[key]
	s.mu.Unlock()
	if !ok {
		s.stats.notFound.Add(1)
		return nil, "", fmt.Errorf("sim-s3 get %s: %w", key, object.ErrNotFound)
	}
	if err := wait(ctx, s.transfer(len(o.data))); err != nil {
		return nil, "", err
	}
	s.stats.bytesOut.Add(int64(len(o.data)))
	return slices.Clone(o.data), o.version, nil
}

// Put uploads data, then checks ifMatch (empty: If-None-Match: *) against
// the key's version at completion, and writes only if it holds.
func (s *S3) Put(ctx context.Context, key string, data []byte, ifMatch string) (string, error) {
	start := time.Now()
	defer func() { s.stats.putTime.Add(int64(time.Since(start))) }()
	s.stats.puts.Add(1)
	body := slices.Clone(data) // the caller may reuse its buffer once Put returns
	if err := wait(ctx, s.latency('p', key)+s.transfer(len(body))); err != nil {
		return "", err
	}
	s.stats.bytesIn.Add(int64(len(body)))
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, exists := s.objects[key]
	switch {
	case ifMatch == "" && exists:
		s.stats.preconditions.Add(1)
		return "", fmt.Errorf("sim-s3 put %s (If-None-Match: *): the key exists: %w", key, object.ErrPrecondition)
	case ifMatch != "" && (!exists || cur.version != ifMatch):
		s.stats.preconditions.Add(1)
		return "", fmt.Errorf("sim-s3 put %s (If-Match %s): the key is at %q: %w", key, ifMatch, cur.version, object.ErrPrecondition)
	}
	s.next++
	v := fmt.Sprintf("\"v%d\"", s.next)
	s.objects[key] = s3Object{data: body, version: v}
	return v, nil
}

// List returns the keys under prefix as they were after the request's
// latency.
func (s *S3) List(ctx context.Context, prefix string) ([]string, error) {
	s.stats.lists.Add(1)
	if err := wait(ctx, s.latency('l', prefix)); err != nil {
		return nil, err
	}
	s.mu.Lock()
	var keys []string
	n := 0
	for k := range s.objects {
		if strings.HasPrefix(k, prefix) {
			keys = append(keys, k)
			n += len(k)
		}
	}
	s.mu.Unlock()
	slices.Sort(keys)
	s.stats.bytesOut.Add(int64(n))
	return keys, nil
}

// Delete removes key after the request's latency; a missing key is no
// error.
func (s *S3) Delete(ctx context.Context, key string) error {
	s.stats.deletes.Add(1)
	if err := wait(ctx, s.latency('d', key)); err != nil {
		return err
	}
	s.mu.Lock()
	delete(s.objects, key)
	s.mu.Unlock()
	return nil
}
