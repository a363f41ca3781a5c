package local

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"

	"github.com/covmirror/covmirror/coverage"
)

// checkpointAll begins and commits a checkpoint, as a durable commit that
// succeeded would.
func checkpointAll(t testing.TB, s *Store) *Checkpoint {
	t.Helper()
	cp, err := s.BeginCheckpoint(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if cp != nil {
		if err := s.CommitCheckpoint(ctx, cp); err != nil {
			t.Fatal(err)
		}
	}
	return cp
}

func destinations(t testing.TB, s *Store) []coverage.Destination {
	t.Helper()
	ds, err := s.Destinations(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return ds
}

// keysOf lists the store's keys of d, of every kind, read from Pebble.
func keysOf(t testing.TB, s *Store, d coverage.Destination) [][]byte {
	t.Helper()
	var out [][]byte
	for _, kind := range []byte{kindCovered, kindCheckpointed, kindPendingSince} {
		p := destinationPrefix(nil, kind, d)
		if err := s.scan(p, prefixSuccessor(slices.Clone(p)), func(k, _ []byte) error {
			out = append(out, bytes.Clone(k))
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// TestReleaseDropsOnlyCheckpointed: a release drops the state of a
// partition's destinations of every sink once all of it is checkpointed,
// keeps a destination with anything pending or in flight, leaves other
// partitions alone, and what it dropped is gone from Pebble, from
// Diagnostics and from a reopened store.
func TestReleaseDropsOnlyCheckpointed(t *testing.T) {
	s := openTemp(t, Options{})
	raw0 := coverage.Destination{Sink: "raw", Topic: "orders", Partition: 0}
	s30 := raw0.WithSink("s3")
	raw1 := coverage.Destination{Sink: "raw", Topic: "orders", Partition: 1}
	// A topic whose name extends the other's: a prefix delete of
	// orders/0 must not touch it.
	other := coverage.Destination{Sink: "raw", Topic: "orders\x01", Partition: 0}
	for _, d := range []coverage.Destination{raw0, s30, raw1, other} {
		record(t, s, d, 0, 10)
		record(t, s, d, 20, 30)
	}
	checkpointAll(t, s)
	record(t, s, raw1, 30, 40) // pending: raw1 is kept

	res, err := s.Release(ctx, []coverage.TopicPartition{{Topic: "orders", Partition: 0}, {Topic: "orders", Partition: 1}, {Topic: "gone", Partition: 3}})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.Released, []coverage.Destination{raw0, s30}) || !slices.Equal(res.Retained, []coverage.Destination{raw1}) {
		t.Fatalf("release: %+v; want raw0 and s3/0 released, raw1 retained", res)
	}
	if ds := destinations(t, s); !slices.Equal(ds, []coverage.Destination{raw1, other}) {
		t.Fatalf("destinations after the release: %v", ds)
	}
	for _, d := range []coverage.Destination{raw0, s30} {
		if keys := keysOf(t, s, d); len(keys) != 0 {
			t.Fatalf("%s still has keys in Pebble: %x", d, keys)
		}
		if c, _ := s.Covered(ctx, d); !c.IsEmpty() {
			t.Fatalf("%s still covered: %s", d, c.String())
		}
	}
	if keys := keysOf(t, s, other); len(keys) != 4 { // two covered, two checkpointed
		t.Fatalf("%s has %d keys after another topic's release, want 4", other, len(keys))
	}
	diag, err := s.Diagnostics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, dd := range diag.Destinations {
		if dd.Destination.Topic == "orders" && dd.Destination.Partition == 0 {
			t.Fatalf("diagnostics list released %s", dd.Destination)
		}
	}

	// In flight is not committed: kept until the commit.
	cp, err := s.BeginCheckpoint(ctx)
	if err != nil || cp == nil {
		t.Fatal(cp, err)
	}
	if res, err := s.Release(ctx, []coverage.TopicPartition{{Topic: "orders", Partition: 1}}); err != nil || len(res.Released) != 0 {
		t.Fatalf("release with the checkpoint in flight: %+v, %v; want raw1 retained", res, err)
	}
	if err := s.CommitCheckpoint(ctx, cp); err != nil {
		t.Fatal(err)
	}
	if res, err := s.Release(ctx, []coverage.TopicPartition{{Topic: "orders", Partition: 1}}); err != nil || !slices.Equal(res.Released, []coverage.Destination{raw1}) {
		t.Fatalf("release after the commit: %+v, %v", res, err)
	}

	// A record after the release starts the destination afresh, pending.
	record(t, s, raw0, 50, 60)
	if p := pendingOf(t, s)[raw0]; !slices.Equal(p, []coverage.Range{{Start: 50, End: 60}}) {
		t.Fatalf("pending of a released destination recorded again: %v", p)
	}
	cp = checkpointAll(t, s)
	if !equalRanges(rangesOf(cp), map[coverage.Destination][]coverage.Range{raw0: {{Start: 50, End: 60}}}) {
		t.Fatalf("checkpoint after the release: %v", rangesOf(cp))
	}

	dir := s.Dir()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s2 := openTemp(t, Options{Dir: dir})
	defer s2.Close()
	if ds := destinations(t, s2); !slices.Equal(ds, []coverage.Destination{raw0, other}) {
		t.Fatalf("destinations after reopening: %v", ds)
	}
	if c, _ := s2.Covered(ctx, raw0); c.String() != "{[50,60)}" {
		t.Fatalf("raw0 after reopening: %s", c.String())
	}
}

func TestReleaseBadInput(t *testing.T) {
	s := openTemp(t, Options{})
	defer s.Close()
	d := coverage.Destination{Sink: "raw", Topic: "orders"}
	record(t, s, d, 0, 1)
	checkpointAll(t, s)
	for _, parts := range [][]coverage.TopicPartition{
		{{Topic: "", Partition: 0}},
		{{Topic: "orders", Partition: 0}, {Topic: "orders", Partition: -1}},
		{{Topic: "a\x00b", Partition: 0}},
		{{Topic: strings.Repeat("x", coverage.MaxNameLen+1)}},
	} {
		if _, err := s.Release(ctx, parts); !errors.Is(err, coverage.ErrInvalidDestination) {
			t.Fatalf("release of %q: %v; want ErrInvalidDestination", parts, err)
		}
	}
	if ds := destinations(t, s); len(ds) != 1 {
		t.Fatalf("a refused release dropped something: %v", ds)
	}
	if res, err := s.Release(ctx, nil); err != nil || len(res.Released)+len(res.Retained) != 0 {
		t.Fatalf("release of nothing: %+v, %v", res, err)
	}
}

// TestReleaseOnAFailedDiskDropsNothing: a release whose delete cannot be
// written fails, says nothing was released, and keeps the destinations.
func TestReleaseOnAFailedDiskDropsNothing(t *testing.T) {
	inj := &injector{}
	s := openTemp(t, Options{Dir: "/store", FS: errorfs.Wrap(vfs.NewMem(), inj), CommitDelay: -1})
	defer s.Close()
	d := coverage.Destination{Sink: "raw", Topic: "orders"}
	record(t, s, d, 0, 10)
	checkpointAll(t, s)
	inj.set(true)
	res, err := s.Release(ctx, []coverage.TopicPartition{{Topic: "orders"}})
	if !errors.Is(err, coverage.ErrUnavailable) || !strings.Contains(err.Error(), "nothing was released") || len(res.Released) != 0 {
		t.Fatalf("release on a full disk: %+v, %v; want ErrUnavailable saying nothing was released", res, err)
	}
	if c, _ := s.Covered(ctx, d); c.String() != "{[0,10)}" {
		t.Fatalf("covered after a failed release: %s", c.String())
	}
}

// TestKillBeforeTheDeleteLeavesCommittedRanges: a process killed after
// the checkpoint that precedes a release, and before the release's delete,
// reopens with the ranges checkpointed and nothing pending (the kill keeps
// what was handed to the operating system); the next release drops them.
func TestKillBeforeTheDeleteLeavesCommittedRanges(t *testing.T) {
	mem := vfs.NewCrashableMem()
	s := openTemp(t, Options{Dir: "/store", FS: mem})
	d := coverage.Destination{Sink: "raw", Topic: "orders"}
	record(t, s, d, 0, 10)
	checkpointAll(t, s)
	// A kill: every write handed to the operating system survives.
	killed := mem.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 100, RNG: rand.New(rand.NewPCG(1, 2))})
	if res, err := s.Release(ctx, []coverage.TopicPartition{{Topic: "orders"}}); err != nil || len(res.Released) != 1 {
		t.Fatal(res, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s2 := openTemp(t, Options{Dir: "/store", FS: killed})
	defer s2.Close()
	if c, _ := s2.Covered(ctx, d); c.String() != "{[0,10)}" {
		t.Fatalf("covered after the kill: %s", c.String())
	}
	if p := pendingOf(t, s2); len(p) != 0 {
		t.Fatalf("the kill left pending ranges: %v", p)
	}
	if res, err := s2.Release(ctx, []coverage.TopicPartition{{Topic: "orders"}}); err != nil || len(res.Released) != 1 {
		t.Fatalf("release again after the kill: %+v, %v", res, err)
	}
	if ds := destinations(t, s2); len(ds) != 0 {
		t.Fatalf("destinations after releasing again: %v", ds)
	}
}
