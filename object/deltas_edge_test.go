package object

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
)

func oneRange(writer, name, sink string, start uint64) durable.Checkpoint {
	return durable.Checkpoint{Writer: writer, Name: name, Ranges: []coverage.DestinationRanges{{
		Destination: coverage.Destination{Sink: sink, Topic: "orders", Partition: 3},
		Ranges:      []coverage.Range{{Start: start, End: start + 10}}}}}
}

// TestFoldTakesEveryWriterInTurn: past MaxFoldDeltas a Fold takes each
// writer's deltas in turn, so a writer early in key order that appends
// MaxFoldDeltas checkpoints between two folds never keeps a later
// writer's waiting, and the backlog stays within what one fold takes.
func TestFoldTakesEveryWriterInTurn(t *testing.T) {
	dir := t.TempDir()
	w := openDeltas(t, dir)
	blobs, err := OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer blobs.Close()
	folder, err := Open(ctx, Options{Blobs: blobs, Layout: LayoutDeltas, MaxFoldDeltas: 4})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Append(ctx, oneRange("z", "z-0", "lake", 0)); err != nil {
		t.Fatal(err)
	}
	for round := range 50 {
		for i := range 4 {
			if err := w.Append(ctx, oneRange("a", fmt.Sprintf("a-%d-%d", round, i), "lake", uint64(100+round*10))); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := folder.Fold(ctx); err != nil {
			t.Fatal(err)
		}
	}
	keys, err := folder.listDeltas(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		if strings.HasPrefix(k, deltasDir+nameKey("z")+"/") {
			t.Fatalf("after 50 folds of 4 with 4 new deltas of writer \"a\" each time, writer \"z\"'s delta is still unfolded: %v", keys)
		}
	}
	if len(keys) > 4 {
		t.Fatalf("after 50 folds of 4 with 4 new deltas each time, %d deltas wait: %v", len(keys), keys)
	}
}

// TestUnreadableDeltaLeftOutOfReads: the package promises that an object
// that cannot be read fails the reads of its sink "while other sinks go
// on". A delta carries any sinks, and every read reads every delta
// whatever its filter, so one delta that cannot be read (here one written
// by a newer build, version 2, as in a rolling upgrade) fails every read
// of every sink, the recovery planner's and a new owner's among them.
func TestUnreadableDeltaLeftOutOfReads(t *testing.T) {
	dir := t.TempDir()
	s := openDeltas(t, dir)
	if err := s.Append(ctx, oneRange("pod-a", "ck-1", "lake", 0)); err != nil {
		t.Fatal(err)
	}
	// A newer build's delta for sink "search": this build reads version 1.
	if err := s.Append(ctx, oneRange("pod-b", "ck-1", "search", 0)); err != nil {
		t.Fatal(err)
	}
	keys, err := s.opts.Blobs.List(ctx, namePrefix("", "pod-b", "ck-1"))
	if err != nil || len(keys) != 1 {
		t.Fatalf("pod-b's delta: %v, %v", keys, err)
	}
	key := keys[0]
	data, _, err := s.opts.Blobs.Get(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	newer := append([]byte{}, data...)
	newer[len(deltaMagic)] = frameVer + 1
	if err := s.opts.Blobs.Delete(ctx, key); err != nil {
		t.Fatal(err)
	}
	if _, err := s.opts.Blobs.Put(ctx, key, newer, ""); err != nil {
		t.Fatal(err)
	}
	p := int32(3)
	got, err := s.Coverage(ctx, durable.Filter{Sink: "lake", Topic: "orders", Partition: &p})
	if err != nil {
		t.Fatalf("a read of sink lake, which the unreadable delta does not carry: %v", err)
	}
	if len(got) != 1 {
		t.Fatalf("lake: %v", got)
	}
}

// hookBlobs runs before(key) ahead of each Delete.
type hookBlobs struct {
	Blobs
	before func(key string)
}

func (h *hookBlobs) Delete(ctx context.Context, key string) error {
	if h.before != nil {
		h.before(key)
	}
	return h.Blobs.Delete(ctx, key)
}

// TestReusedNameAfterFoldNeverLost: a name reused with another
// payload is ErrNameReused while its delta is there, but once a fold
// deleted the delta a plain Append (no MayHaveLanded) of the same name
// with another payload creates the key again and returns nil, though the
// fold log still names it. With two folders, as the package allows, the
// slower one, which read the first payload before the other deleted it,
// then deletes the second payload's delta, which no base holds: an
// acknowledged append is lost. A caller that reuses a name is at fault,
// but the contract is ErrNameReused and nothing written, not nil and
// nothing kept.
func TestReusedNameAfterFoldNeverLost(t *testing.T) {
	dir := t.TempDir()
	w := openDeltas(t, dir)
	fast := openDeltas(t, dir)
	inner, err := OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer inner.Close()
	hook := &hookBlobs{Blobs: inner}
	slow, err := Open(ctx, Options{Blobs: hook, Layout: LayoutDeltas})
	if err != nil {
		t.Fatal(err)
	}
	first := oneRange("pod-a", "ck-1", "lake", 0)
	second := oneRange("pod-a", "ck-1", "lake", 1000)
	if err := w.Append(ctx, first); err != nil {
		t.Fatal(err)
	}
	var reuse error
	hook.before = func(key string) {
		if !strings.HasPrefix(key, deltasDir) {
			return
		}
		hook.before = nil
		// The slow folder has read the delta and written its base; the
		// fast one folds and deletes it meanwhile, and the name is reused.
		if _, err := fast.Fold(ctx); err != nil {
			t.Fatal(err)
		}
		reuse = w.Append(ctx, second)
	}
	if _, err := slow.Fold(ctx); err != nil {
		t.Fatal(err)
	}
	if errors.Is(reuse, durable.ErrNameReused) {
		return // the contract: refused, nothing written
	}
	if reuse != nil {
		t.Fatalf("the reused name: %v", reuse)
	}
	got, err := w.Coverage(ctx, durable.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	d := second.Ranges[0].Destination
	if g := got[d]; g == nil || !g.ContainsRange(second.Ranges[0].Ranges[0]) {
		t.Fatalf("the reused name's Append returned nil, and %v is not read: %v", second.Ranges[0].Ranges[0], got[d])
	}
}

// TestPrefixUnderALayoutDirRefused: two deployments share a bucket, one with
// no prefix and one under "deltas/" (a valid Prefix). The second one's
// sink objects sit at deltas/sinks/<sink>, two segments under deltas/,
// which the first one lists as deltas: every read of the first one fails.
func TestPrefixUnderALayoutDirRefused(t *testing.T) {
	dir := t.TempDir()
	blobs, err := OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer blobs.Close()
	top, err := Open(ctx, Options{Blobs: blobs, Layout: LayoutDeltas})
	if err != nil {
		t.Fatal(err)
	}
	nested, err := Open(ctx, Options{Blobs: blobs, Prefix: "deltas/"})
	if err != nil {
		return // refused: fine
	}
	if err := top.Append(ctx, oneRange("pod-a", "ck-1", "lake", 0)); err != nil {
		t.Fatal(err)
	}
	if err := nested.Append(ctx, oneRange("pod-b", "ck-1", "lake", 0)); err != nil {
		t.Fatal(err)
	}
	if _, err := top.Coverage(ctx, durable.Filter{}); err != nil {
		t.Fatalf("the deployment with no prefix, beside one under \"deltas/\": %v", err)
	}
}
