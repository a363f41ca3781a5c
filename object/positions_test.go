package object

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/coverage/coveragetest"
	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/internal/testseed"
)

var stored = coverage.Source{Name: "landing-files", Regime: coverage.Stored}

// openDirPositions opens a DirBlobs on dir and Positions on it, as another
// process would.
func openDirPositions(t testing.TB, dir string, opts Options, sources ...coverage.Source) *Positions {
	t.Helper()
	blobs, err := OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = blobs.Close() })
	opts.Blobs = blobs
	p, err := OpenPositions(ctx, opts, sources...)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestPositionsConformance runs the suite with every store a new client on
// one directory; each gets its own prefix, so that each starts empty.
func TestPositionsConformance(t *testing.T) {
	dir := t.TempDir()
	var n atomic.Int64
	coveragetest.RunPositions(t, coveragetest.PositionHarness{Open: func(t *testing.T, sources ...coverage.Source) coverage.PositionStore {
		return openDirPositions(t, dir, Options{Prefix: fmt.Sprintf("run-%d/", n.Add(1))}, sources...)
	}})
}

// keptModel is the reference for the bounds: the highest positions of a
// partition, at most MaxPositionsPerPartition within
// MaxPositionBytesPerPartition cursor bytes, the highest always kept.
func keptModel(all []coverage.Position) []coverage.Position {
	all = slices.Clone(all)
	slices.SortFunc(all, coverage.ComparePositions)
	all = slices.CompactFunc(all, func(a, b coverage.Position) bool { return coverage.ComparePositions(a, b) == 0 })
	var kept []coverage.Position
	size := 0
	for i := len(all) - 1; i >= 0 && len(kept) < MaxPositionsPerPartition; i-- {
		if size += len(all[i].Cursor); len(kept) > 0 && size > MaxPositionBytesPerPartition {
			break
		}
		kept = append(kept, all[i])
	}
	slices.Reverse(kept)
	return kept
}

func checkPositions(t *testing.T, what string, s coverage.PositionStore, source string, partition int32, want []coverage.Position) {
	t.Helper()
	got, err := s.Positions(ctx, source, partition)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if len(got) != len(want) {
		t.Fatalf("%s: partition %d keeps %d positions, want %d", what, partition, len(got), len(want))
	}
	for i := range got {
		if coverage.ComparePositions(got[i], want[i]) != 0 || got[i].Source != source || got[i].Partition != partition {
			t.Fatalf("%s: partition %d position %d is %+v, want batch %d cursor %q", what, partition, i, got[i], want[i].Batch, want[i].Cursor)
		}
	}
}

// TestPositionsConcurrentClients: four clients, each with its own DirBlobs
// behind faults (lost answers, spurious refusals, failed reads), save
// positions into one source's object concurrently, each save twice. The
// result is the union, bounded: partition 0 gets more than the bound.
func TestPositionsConcurrentClients(t *testing.T) {
	seed := testseed.Seed(t)
	rng := rand.New(rand.NewPCG(seed, 0))
	dir := t.TempDir()
	const clients = 4
	saves := make([][]coverage.Position, clients)
	want := map[int32][]coverage.Position{}
	for c := range clients {
		for i := range 100 + rng.IntN(40) {
			part := int32(min(i%3, 1) ^ 1) // partition 0 twice as often as 1
			// Some batches are shared between clients, with distinct cursors.
			pos := coverage.Position{Source: stored.Name, Partition: part, Batch: uint64(rng.IntN(300)), Cursor: fmt.Appendf(nil, "c%d-%d", c, i)}
			saves[c] = append(saves[c], pos)
			want[part] = append(want[part], pos)
		}
	}
	if len(keptModel(want[0])) != MaxPositionsPerPartition {
		t.Fatalf("partition 0 gets %d positions, not past the bound", len(want[0]))
	}
	var wg sync.WaitGroup
	faults := make([]*flakyBlobs, clients)
	for c := range clients {
		inner, err := OpenDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		defer inner.Close()
		faults[c] = &flakyBlobs{Blobs: inner, rng: rand.New(rand.NewPCG(seed, uint64(c+1))), p: 0.05, counts: map[string]int{}}
		p, err := OpenPositions(ctx, Options{Blobs: faults[c], MinBackoff: time.Microsecond, MaxBackoff: time.Millisecond}, stored)
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, pos := range saves[c] {
				for range 2 {
					if err := p.SavePosition(ctx, pos); err != nil {
						t.Errorf("client %d: %v", c, err)
						return
					}
				}
			}
			t.Logf("client %d: stats %+v, faults %v", c, p.Stats(), faults[c].counts)
		}()
	}
	wg.Wait()
	clean := openDirPositions(t, dir, Options{}, stored)
	for part, all := range want {
		checkPositions(t, "after the clients", clean, stored.Name, part, keptModel(all))
	}
}

// TestPositionsByteBound: long cursors are pruned by their bytes, lowest
// first, whatever order they were saved in.
func TestPositionsByteBound(t *testing.T) {
	p := openDirPositions(t, t.TempDir(), Options{}, stored)
	var all []coverage.Position
	for _, b := range rand.New(rand.NewPCG(1, 2)).Perm(40) {
		pos := coverage.Position{Source: stored.Name, Batch: uint64(b), Cursor: bytes.Repeat([]byte{byte(b)}, 60<<10)}
		if err := p.SavePosition(ctx, pos); err != nil {
			t.Fatal(err)
		}
		all = append(all, pos)
	}
	want := keptModel(all)
	if len(want) == len(all) || len(want) == 0 {
		t.Fatalf("the model keeps %d of %d: the byte bound is not exercised", len(want), len(all))
	}
	checkPositions(t, "long cursors", p, stored.Name, 0, want)
	// Saving a dropped position again drops it at once: nothing written.
	before := p.Stats().Writes
	if err := p.SavePosition(ctx, all[slices.IndexFunc(all, func(p coverage.Position) bool { return p.Batch == 0 })]); err != nil {
		t.Fatal(err)
	}
	if p.Stats().Writes != before {
		t.Fatal("a position below the bound was written")
	}
	checkPositions(t, "after a low save", p, stored.Name, 0, want)
}

func TestPositionsRefusals(t *testing.T) {
	dir := t.TempDir()
	kafka := coverage.Source{Name: "orders-kafka", Regime: coverage.BrokerManaged}
	p := openDirPositions(t, dir, Options{}, stored, kafka)
	big := coverage.Position{Source: stored.Name, Cursor: make([]byte, MaxCursorLen), Batch: coverage.MaxBatchEnd}
	if err := p.SavePosition(ctx, big); err != nil {
		t.Fatalf("a cursor of MaxCursorLen at batch MaxBatchEnd: %v", err)
	}
	for _, c := range []struct {
		name string
		pos  coverage.Position
		want error
	}{
		{"cursor too long", coverage.Position{Source: stored.Name, Cursor: make([]byte, MaxCursorLen+1)}, coverage.ErrInvalidPosition},
		{"batch past MaxBatchEnd", coverage.Position{Source: stored.Name, Cursor: []byte("x"), Batch: coverage.MaxBatchEnd + 1}, coverage.ErrInvalidPosition},
		{"broker-managed", coverage.Position{Source: kafka.Name, Cursor: []byte("x")}, coverage.ErrBrokerManaged},
		{"unknown", coverage.Position{Source: "nope", Cursor: []byte("x")}, coverage.ErrUnknownSource},
	} {
		var ce *coverage.Error
		if err := p.SavePosition(ctx, c.pos); !errors.Is(err, c.want) || !errors.As(err, &ce) {
			t.Errorf("%s: %v, want a *coverage.Error matching %v", c.name, err, c.want)
		}
	}
	keys, err := p.store.opts.Blobs.List(ctx, "")
	if err != nil || !slices.Equal(keys, []string{positionsKey("", stored.Name)}) {
		t.Fatalf("keys %v (%v): refused saves wrote", keys, err)
	}
	if _, err := OpenPositions(ctx, Options{Blobs: p.store.opts.Blobs}, stored, stored); !errors.Is(err, coverage.ErrInvalidPosition) {
		t.Errorf("a source declared twice: %v", err)
	}
	if _, err := OpenPositions(ctx, Options{}, stored); err == nil {
		t.Error("no Blobs: opened")
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if err := p.SavePosition(ctx, coverage.Position{Source: stored.Name, Cursor: []byte("x")}); !errors.Is(err, coverage.ErrClosed) {
		t.Errorf("save after Close: %v", err)
	}
	if _, err := p.Positions(ctx, stored.Name, 0); !errors.Is(err, coverage.ErrClosed) {
		t.Errorf("positions after Close: %v", err)
	}
}

// TestPositionsCorruptLeftAsIs: an unreadable positions object fails both
// calls, classified, and is not overwritten.
func TestPositionsCorruptLeftAsIs(t *testing.T) {
	other := coverage.Source{Name: "other-files", Regime: coverage.Stored}
	good := encodePositions(&positionsObject{Source: stored.Name, Partitions: []partitionPositions{{Partition: 0, Positions: []coverage.Position{{Batch: 3, Cursor: []byte("c")}}}}})
	foreign := encodePositions(&positionsObject{Source: other.Name})
	flipped := slices.Clone(good)
	flipped[len(flipped)/2] ^= 0x40
	newer := slices.Clone(good)
	newer[len(positionsMagic)] = positionsVersion + 1
	for _, c := range []struct {
		name string
		data []byte
		want error
	}{
		{"flipped bit", flipped, ErrCorruptObject},
		{"truncated", good[:len(good)-3], ErrCorruptObject},
		{"newer version", newer, ErrUnknownVersion},
		{"another source's", foreign, ErrCorruptObject},
		{"a sink object", encodeObject(sampleObject()), ErrCorruptObject},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := openDirPositions(t, t.TempDir(), Options{}, stored, other)
			blobs, key := p.store.opts.Blobs, positionsKey("", stored.Name)
			if _, err := blobs.Put(ctx, key, c.data, ""); err != nil {
				t.Fatal(err)
			}
			var ce *coverage.Error
			if err := p.SavePosition(ctx, coverage.Position{Source: stored.Name, Cursor: []byte("d"), Batch: 9}); !errors.Is(err, c.want) || !errors.As(err, &ce) {
				t.Errorf("save: %v, want a *coverage.Error matching %v", err, c.want)
			}
			if _, err := p.Positions(ctx, stored.Name, 0); !errors.Is(err, c.want) {
				t.Errorf("positions: %v, want %v", err, c.want)
			}
			if c.want == ErrCorruptObject && !errors.Is(ErrCorruptObject, coverage.ErrCorrupt) {
				t.Error("ErrCorruptObject does not match coverage.ErrCorrupt")
			}
			if data, _, err := blobs.Get(ctx, key); err != nil || !bytes.Equal(data, c.data) {
				t.Errorf("the object was changed (%v)", err)
			}
		})
	}
}

// TestPositionsBesideStore: positions objects live beside the sink objects
// under the same prefix, and the Tier does not see them.
func TestPositionsBesideStore(t *testing.T) {
	dir := t.TempDir()
	long := coverage.Source{Name: strings.Repeat("ß", 300), Regime: coverage.Stored}
	p := openDirPositions(t, dir, Options{Prefix: "prod/"}, stored, long)
	s, err := Open(ctx, Options{Blobs: p.store.opts.Blobs, Prefix: "prod/"})
	if err != nil {
		t.Fatal(err)
	}
	d := coverage.Destination{Sink: "raw", Topic: stored.Name}
	c := durable.Checkpoint{Writer: "pod-a", Name: "ck-1", Ranges: []coverage.DestinationRanges{{Destination: d, Ranges: []coverage.Range{{Start: 0, End: 5}}}}}
	if err = s.Append(ctx, c); err != nil {
		t.Fatal(err)
	}
	for _, src := range []string{stored.Name, long.Name} {
		if err := p.SavePosition(ctx, coverage.Position{Source: src, Batch: 4, Cursor: []byte("file-4")}); err != nil {
			t.Fatal(err)
		}
	}
	cov, err := s.Coverage(ctx, durable.Filter{})
	if err != nil || len(cov) != 1 || cov[d] == nil {
		t.Fatalf("coverage beside positions: %v, %v", cov, err)
	}
	keys, err := p.store.opts.Blobs.List(ctx, "prod/positions/")
	if err != nil || len(keys) != 2 || !slices.Contains(keys, positionsKey("prod/", long.Name)) {
		t.Fatalf("positions keys %v, %v", keys, err)
	}
	resume, ok, err := coverage.ResumePosition(ctx, p, coverageOf(t, cov), "raw", stored.Name, 0)
	if err != nil || !ok || string(resume.Cursor) != "file-4" {
		t.Fatalf("resume %+v, %v, %v", resume, ok, err)
	}
}

// coverageOf loads durable coverage into an in-memory coverage.Store.
func coverageOf(t *testing.T, cov map[coverage.Destination]*coverage.RangeSet) coverage.Store {
	m := coverage.NewInMemory()
	for d, set := range cov {
		for _, r := range set.Ranges() {
			if err := m.Record(ctx, d, r); err != nil {
				t.Fatal(err)
			}
		}
	}
	return m
}

func samplePositions() *positionsObject {
	return &positionsObject{Source: "landing-files", Partitions: []partitionPositions{
		{Partition: 0, Positions: []coverage.Position{{Batch: 0, Cursor: []byte{0}}, {Batch: 0, Cursor: []byte{0, 0}}, {Batch: 7, Cursor: []byte("a")}, {Batch: coverage.MaxBatchEnd, Cursor: []byte("z")}}},
		{Partition: 5, Positions: []coverage.Position{{Batch: 1 << 40, Cursor: []byte("file-\xff")}}},
	}}
}

func TestPositionsFormat(t *testing.T) {
	for _, o := range []*positionsObject{{Source: "s"}, samplePositions()} {
		b := encodePositions(o)
		got, err := decodePositions(b)
		if err != nil {
			t.Fatal(err)
		}
		if len(o.Partitions) == 0 {
			got.Partitions = nil
		}
		if !reflect.DeepEqual(got, o) || !bytes.Equal(encodePositions(got), b) {
			t.Fatalf("round trip: got %+v, want %+v", got, o)
		}
	}
	mutate := func(f func(o *positionsObject)) []byte {
		o := samplePositions()
		f(o)
		return encodePositions(o)
	}
	for _, c := range []struct {
		name string
		b    []byte
	}{
		{"positions out of order", mutate(func(o *positionsObject) { o.Partitions[0].Positions[0].Cursor = []byte{1} })},
		{"duplicate position", mutate(func(o *positionsObject) { o.Partitions[0].Positions[1].Cursor = []byte{0} })},
		{"empty cursor", mutate(func(o *positionsObject) { o.Partitions[1].Positions[0].Cursor = nil })},
		{"cursor too long", mutate(func(o *positionsObject) { o.Partitions[1].Positions[0].Cursor = make([]byte, MaxCursorLen+1) })},
		{"batch past MaxBatchEnd", mutate(func(o *positionsObject) { o.Partitions[0].Positions[3].Batch = coverage.MaxBatchEnd + 1 })},
		{"partitions out of order", mutate(func(o *positionsObject) { o.Partitions[1].Partition = 0 })},
		{"partition without positions", mutate(func(o *positionsObject) { o.Partitions[1].Positions = nil })},
		{"empty source", mutate(func(o *positionsObject) { o.Source = "" })},
		{"trailing bytes", reseal(append(append([]byte(nil), encodePositions(samplePositions())...), 0, 0, 0, 0, 0))},
	} {
		if _, err := decodePositions(c.b); !errors.Is(err, ErrCorruptObject) {
			t.Errorf("%s: %v, want ErrCorruptObject", c.name, err)
		}
	}
}

// FuzzDecodePositions: decoding never panics, every failure is classified,
// and whatever decodes encodes back to the same bytes.
func FuzzDecodePositions(f *testing.F) {
	f.Add(encodePositions(samplePositions()))
	f.Add(encodePositions(&positionsObject{Source: "s"}))
	body := encodePositions(samplePositions())
	f.Add(body[len(positionsMagic)+1 : len(body)-4])
	f.Fuzz(func(t *testing.T, b []byte) {
		positionsRoundTrip(t, b)
		// Most inputs stop at the checksum: also parse b as a body, with
		// its header and a right checksum, to reach the parser behind it.
		sealed := append([]byte(positionsMagic+"\x01"), b...)
		positionsRoundTrip(t, binary.BigEndian.AppendUint32(sealed, crc32.Checksum(sealed, castagnoli)))
	})
}

func positionsRoundTrip(t *testing.T, b []byte) {
	o, err := decodePositions(b)
	if err != nil {
		if !errors.Is(err, ErrCorruptObject) && !errors.Is(err, ErrUnknownVersion) {
			t.Fatalf("unclassified error: %v", err)
		}
		return
	}
	if again := encodePositions(o); !bytes.Equal(again, b) {
		t.Fatalf("encode(decode(b)) differs:\n%x\n%x", again, b)
	}
}
