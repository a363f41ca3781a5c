package iceberg

import (
	"context"
	"fmt"
	"testing"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/internal/faultio"
)

// TestMergeManifests appends checkpoints, one manifest each, and merges
// them: one manifest is left, with every data file and so every range; a
// merge whose manifests can never be written commits nothing and loses
// nothing, one write failing once is retried, and a second merge has
// nothing to do.
func TestMergeManifests(t *testing.T) {
	ctx := context.Background()
	inner := embeddedCatalog(t)
	inj := faultio.New(1)
	tbl, err := Open(ctx, faultio.WrapCatalog(inner, inj), Options{})
	if err != nil {
		t.Fatal(err)
	}
	const checkpoints = 6
	for i := range checkpoints {
		c := durable.Checkpoint{Name: fmt.Sprintf("pod/%d", i), Writer: "pod"}
		for _, sink := range []string{"raw", "lake"} {
			d := coverage.Destination{Sink: sink, Topic: "orders", Partition: int32(i % 2)}
			r := coverage.Range{Start: uint64(i) * 10, End: uint64(i)*10 + 5}
			c.Ranges = append(c.Ranges, coverage.DestinationRanges{Destination: d, Ranges: []coverage.Range{r}})
		}
		if err := tbl.Append(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	want, err := tbl.Coverage(ctx, durable.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	manifests := func() int {
		t.Helper()
		meta, err := tbl.Load(ctx)
		if err != nil {
			t.Fatal(err)
		}
		fs, err := meta.FS(ctx)
		if err != nil {
			t.Fatal(err)
		}
		list, err := meta.CurrentSnapshot().Manifests(fs)
		if err != nil {
			t.Fatal(err)
		}
		return len(list)
	}
	same := func(when string) {
		t.Helper()
		got, err := tbl.Coverage(ctx, durable.Filter{})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Fatalf("%s: %d destinations, want %d", when, len(got), len(want))
		}
		for d, set := range want {
			if g := got[d]; g == nil || !g.Equal(set) {
				t.Fatalf("%s: %s covers %v, want %s", when, d, g, set.String())
			}
		}
	}
	if n := manifests(); n != checkpoints {
		t.Fatalf("%d checkpoints left %d manifests, want one each", checkpoints, n)
	}

	inj.Add(faultio.Rule{Op: faultio.Create, Match: "/metadata/"})
	if _, err := tbl.MergeManifests(ctx); err == nil {
		t.Fatal("a merge whose manifests could never be written returned nil")
	}
	inj.Clear()
	same("after a failed merge")
	if n := manifests(); n != checkpoints {
		t.Fatalf("a failed merge left %d manifests, want the %d there were", n, checkpoints)
	}

	// One failed write (or one that landed but answered failure) is
	// retried.
	inj.Add(faultio.Rule{Op: faultio.Create, Match: "/metadata/", Nth: 1, AfterSuccess: true})
	merge, err := tbl.MergeManifests(ctx)
	inj.Clear()
	if err != nil {
		t.Fatal(err)
	}
	if merge.Merged != checkpoints || merge.Written != 1 {
		t.Fatalf("the merge replaced %d manifests with %d, want %d with 1", merge.Merged, merge.Written, checkpoints)
	}
	if n := manifests(); n != 1 {
		t.Fatalf("%d manifests after the merge, want 1", n)
	}
	same("after the merge")
	if merge, err := tbl.MergeManifests(ctx); err != nil || merge != (ManifestMerge{}) {
		t.Fatalf("a second merge did %+v, %v; want nothing", merge, err)
	}
}
