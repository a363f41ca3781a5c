package fleetsim

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/covmirror/covmirror/object"
)

func newS3(t *testing.T, opts S3Options) *S3 {
	t.Helper()
	s, err := NewS3(opts)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// CheckStore, the check an operator runs against a bucket before the
// object tier writes there, passes on the simulated one: its races of 32
// writers resolve to exactly one winner each.
func TestS3PassesCheckStore(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newS3(t, S3Options{Seed: 7})
		r, err := object.CheckStore(context.Background(), s, 32)
		if err != nil {
			t.Fatalf("%v\n%s", err, r)
		}
		if r.IfMatch.Won != 1 || r.IfMatch.Refused != 31 || r.Create.Won != 1 || r.Create.Refused != 31 {
			t.Fatalf("races: %+v %+v", r.IfMatch, r.Create)
		}
		if s.Stats().Preconditions < 62+3 {
			t.Fatalf("412s counted: %d, want at least 65", s.Stats().Preconditions)
		}
	})
}

// Two Puts with the same If-Match that overlap both pass a check at
// their start; on S3 the first to complete wins and the other gets a 412.
// The bigger body completes later (its transfer time), so it loses
// however it was started.
func TestS3PreconditionCheckedAtCompletion(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		// A fixed latency, so the transfer time alone orders completion.
		s := newS3(t, S3Options{MinLatency: 50 * time.Millisecond, MaxLatency: 50 * time.Millisecond, Bandwidth: 1e6})
		v0, err := s.Put(ctx, "k", []byte("zero"), "")
		if err != nil {
			t.Fatal(err)
		}
		big, small := make([]byte, 100_000), []byte("small")
		var wg sync.WaitGroup
		var bigErr, smallErr error
		var smallV string
		began := time.Now()
		wg.Go(func() { _, bigErr = s.Put(ctx, "k", big, v0) })
		time.Sleep(10 * time.Millisecond) // the big one started first
		wg.Go(func() { smallV, smallErr = s.Put(ctx, "k", small, v0) })
		wg.Wait()
		if smallErr != nil || !errors.Is(bigErr, object.ErrPrecondition) {
			t.Fatalf("small Put: %v; big Put: %v; want the small one to win and the big one refused", smallErr, bigErr)
		}
		// 50 ms + 100,000 bytes at 1 MB/s.
		if took := time.Since(began); took != 150*time.Millisecond {
			t.Fatalf("the big Put took %v, want 150ms", took)
		}
		data, v, err := s.Get(ctx, "k")
		if err != nil || string(data) != "small" || v != smallV {
			t.Fatalf("Get: %q %s %v; want the winner's bytes at %s", data, v, err, smallV)
		}
	})
}

// Each refusal the object tier relies on, one at a time, and a Get that
// sees the object as it was after its latency, not at its start.
func TestS3Conditions(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		s := newS3(t, S3Options{Seed: 1})
		if _, _, err := s.Get(ctx, "k"); !errors.Is(err, object.ErrNotFound) {
			t.Fatalf("Get of a missing key: %v", err)
		}
		if _, err := s.Put(ctx, "k", []byte("a"), `"v9"`); !errors.Is(err, object.ErrPrecondition) {
			t.Fatalf("If-Match on a missing key: %v", err)
		}
		v1, err := s.Put(ctx, "k", []byte("a"), "")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Put(ctx, "k", []byte("b"), ""); !errors.Is(err, object.ErrPrecondition) {
			t.Fatalf("create of an existing key: %v", err)
		}
		v2, err := s.Put(ctx, "k", []byte("b"), v1)
		if err != nil || v2 == v1 {
			t.Fatalf("If-Match the current version: %s %v", v2, err)
		}
		if _, err := s.Put(ctx, "k", []byte("c"), v1); !errors.Is(err, object.ErrPrecondition) {
			t.Fatalf("If-Match a stale version: %v", err)
		}
		// A Get started before a Put completes sees the Put if it
		// completes within the Get's latency.
		var data []byte
		done := make(chan struct{})
		go func() {
			defer close(done)
			data, _, err = s.Get(ctx, "k")
		}()
		if _, err := s.Put(ctx, "k", []byte("d"), v2); err != nil {
			t.Fatal(err)
		}
		<-done
		if err != nil || (string(data) != "b" && string(data) != "d") {
			t.Fatalf("concurrent Get: %q %v", data, err)
		}
		// A cancelled Put changes nothing.
		cctx, cancel := context.WithTimeout(ctx, time.Millisecond)
		defer cancel()
		if _, err := s.Put(cctx, "k", []byte("e"), ""); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("cancelled Put: %v", err)
		}
		if keys, err := s.List(ctx, ""); err != nil || len(keys) != 1 {
			t.Fatalf("List: %v %v", keys, err)
		}
		if err := s.Delete(ctx, "k"); err != nil || s.Objects() != 0 {
			t.Fatalf("Delete: %v, %d objects left", err, s.Objects())
		}
		st := s.Stats()
		if st.Preconditions != 3 || st.NotFound != 1 || st.Puts != 7 {
			t.Fatalf("counters: %+v", st)
		}
	})
}

// Latencies are drawn in [MinLatency, MaxLatency], the same ones for the
// same seed, and other ones for another.
func TestS3LatencyFromSeed(t *testing.T) {
	draw := func(seed uint64) []time.Duration {
		var out []time.Duration
		synctest.Test(t, func(t *testing.T) {
			s := newS3(t, S3Options{Seed: seed})
			for i := range 50 {
				began := time.Now()
				if _, err := s.Put(context.Background(), fmt.Sprintf("k%d", i%3), nil, ""); err != nil && !errors.Is(err, object.ErrPrecondition) {
					t.Fatal(err)
				}
				out = append(out, time.Since(began))
			}
		})
		return out
	}
	a, b, c := draw(1), draw(1), draw(2)
	same := 0
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("seed 1 drew %v then %v for request %d", a[i], b[i], i)
		}
		if a[i] < DefaultMinLatency || a[i] > DefaultMaxLatency {
			t.Fatalf("latency %v outside [%v, %v]", a[i], DefaultMinLatency, DefaultMaxLatency)
		}
		if a[i] == c[i] {
			same++
		}
	}
	if same > 5 {
		t.Fatalf("seeds 1 and 2 drew %d of 50 latencies alike", same)
	}
}
