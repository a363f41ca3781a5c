package iceberg_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/covmirror/covmirror/compaction"
	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/iceberg"
	"github.com/covmirror/covmirror/internal/faultio"
	"github.com/covmirror/covmirror/internal/tabletest"
)

// hookCatalog runs a hook around the first commit that reaches it: before
// it (another writer moves the table, so the commit conflicts) or after it
// landed (and the answer is then lost).
type hookCatalog struct {
	catalog.Catalog
	before, after func()
	calls         atomic.Int32
}

func (c *hookCatalog) LoadTable(ctx context.Context, id table.Identifier) (*table.Table, error) {
	tbl, err := c.Catalog.LoadTable(ctx, id)
	if err != nil {
		return nil, err
	}
	return table.New(tbl.Identifier(), tbl.Metadata(), tbl.MetadataLocation(), tbl.FS, c), nil
}

func (c *hookCatalog) CommitTable(ctx context.Context, id table.Identifier, reqs []table.Requirement, updates []table.Update) (table.Metadata, string, error) {
	first := c.calls.Add(1) == 1
	if first && c.before != nil {
		c.before()
	}
	meta, loc, err := c.Catalog.CommitTable(ctx, id, reqs, updates)
	if first && err == nil && c.after != nil {
		c.after()
		return nil, "", errors.New("unexpected EOF")
	}
	return meta, loc, err
}

func cp(writer, name string, start uint64) durable.Checkpoint {
	return durable.Checkpoint{Name: name, Writer: writer, Ranges: []coverage.DestinationRanges{{
		Destination: coverage.Destination{Sink: "lake", Topic: "t"}, Ranges: []coverage.Range{{Start: start, End: start + 10}}}}}
}

// A commit retried while another writer appends and compacts the table
// between its attempts (the compaction rewrites every file, the other
// writer's and the earlier ones): the retry, rebuilt on fresh metadata with
// the files written once, keeps every row of everyone, adds its own once
// where its first attempt's outcome is known, and is found by name, not
// appended again, where the answer was lost and the compaction came after
// it landed.
func TestAppendRetryAcrossACompaction(t *testing.T) {
	ctx := context.Background()
	for _, lost := range []bool{false, true} {
		t.Run(fmt.Sprintf("answer lost %v", lost), func(t *testing.T) {
			dir := t.TempDir()
			other := tabletest.EmbeddedTableIn(t, dir)
			for i := range 3 {
				if err := other.Append(ctx, cp("b", fmt.Sprintf("b%d", i), uint64(100*i))); err != nil {
					t.Fatal(err)
				}
			}
			props, err := iceberg.EmbeddedProps(dir)
			if err != nil {
				t.Fatal(err)
			}
			inner, err := iceberg.OpenCatalog(ctx, "", props)
			if err != nil {
				t.Fatal(err)
			}
			hc := &hookCatalog{Catalog: inner}
			mine, err := iceberg.Open(ctx, hc, iceberg.Options{CommitTimeout: 20 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			moveAndCompact := func() {
				if err := other.Append(ctx, cp("b", "b3", 300)); err != nil {
					t.Error(err)
				}
				res, err := compaction.Compact(ctx, other, compaction.Options{MinSmallFiles: 1})
				if err != nil {
					t.Error(err)
				}
				t.Logf("compaction between attempts: %+v", res)
			}
			if lost {
				hc.after = moveAndCompact
			} else {
				hc.before = moveAndCompact
			}
			if err := mine.Append(ctx, cp("a", "a0", 1000)); err != nil {
				t.Fatalf("append: %v", err)
			}
			if !lost && mine.CommitConflicts() == 0 {
				t.Errorf("the first attempt did not conflict: the test did not test a retry")
			}
			got, err := other.Coverage(ctx, durable.Filter{})
			if err != nil {
				t.Fatal(err)
			}
			var want coverage.RangeSet
			for _, s := range []uint64{0, 100, 200, 300, 1000} {
				_ = want.Add(coverage.Range{Start: s, End: s + 10})
			}
			d := coverage.Destination{Sink: "lake", Topic: "t"}
			if len(got) != 1 || got[d] == nil || got[d].String() != want.String() {
				t.Errorf("coverage %v, want exactly %s %v (union of both writers)", got, d, want)
			}
			tbl, err := other.Load(ctx)
			if err != nil {
				t.Fatal(err)
			}
			snaps := 0
			for _, s := range tbl.Metadata().Snapshots() {
				if s.Summary != nil && s.Summary.Properties[iceberg.SummaryCheckpoint] == "a0" {
					snaps++
				}
			}
			if snaps != 1 {
				t.Errorf("a0 committed in %d snapshots, want 1", snaps)
			}
			rows := 0
			if err := iceberg.ReadRows(ctx, tbl, durable.Filter{}, false, func(r iceberg.Row) error {
				if r.Range.Start >= 1000 {
					rows++
				}
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			if rows != 1 {
				t.Errorf("a0's range is in %d rows, want 1", rows)
			}
		})
	}
}

// A commit that lost to another writer fails again at each write of its
// retry in turn (the manifest, the manifest list, the metadata file:
// refused, or carried out and reported failed): the append lands once or
// fails, and a failed one, appended again as may-have-landed, lands once;
// the table never holds less than both writers' rows, nor anything else.
func TestAppendRetryFaultAtEveryStep(t *testing.T) {
	ctx := context.Background()
	type variant struct {
		op    faultio.Op
		after bool
	}
	for _, v := range []variant{{faultio.Create, false}, {faultio.Write, false}, {faultio.Close, false}, {faultio.Close, true}} {
		for n := 1; n <= 4; n++ { // a commit writes two files under metadata/ here (the catalog writes the metadata file itself)
			t.Run(fmt.Sprintf("%s after %v nth %d", v.op, v.after, n), func(t *testing.T) {
				dir := t.TempDir()
				other := tabletest.EmbeddedTableIn(t, dir)
				if err := other.Append(ctx, cp("b", "b0", 0)); err != nil {
					t.Fatal(err)
				}
				props, err := iceberg.EmbeddedProps(dir)
				if err != nil {
					t.Fatal(err)
				}
				inner, err := iceberg.OpenCatalog(ctx, "", props)
				if err != nil {
					t.Fatal(err)
				}
				inj := faultio.New(1)
				hc := &hookCatalog{Catalog: faultio.WrapCatalog(inner, inj)}
				mine, err := iceberg.Open(ctx, hc, iceberg.Options{CommitTimeout: 10 * time.Second})
				if err != nil {
					t.Fatal(err)
				}
				hc.before = func() {
					if err := other.Append(ctx, cp("b", "b1", 100)); err != nil {
						t.Error(err)
					}
					inj.Add(faultio.Rule{Op: v.op, Match: "/metadata/", Nth: n, AfterSuccess: v.after})
				}
				c := cp("a", "a0", 1000)
				err = mine.Append(ctx, c)
				t.Logf("append: %v; faults %v", err, inj.Events())
				if err != nil {
					inj.Clear()
					c.MayHaveLanded = true
					if err := mine.Append(ctx, c); err != nil {
						t.Fatalf("append again as may-have-landed: %v", err)
					}
				}
				got, err := other.Coverage(ctx, durable.Filter{})
				if err != nil {
					t.Fatal(err)
				}
				var want coverage.RangeSet
				for _, s := range []uint64{0, 100, 1000} {
					_ = want.Add(coverage.Range{Start: s, End: s + 10})
				}
				d := coverage.Destination{Sink: "lake", Topic: "t"}
				if len(got) != 1 || got[d] == nil || got[d].String() != want.String() {
					t.Errorf("coverage %v, want exactly %s %v", got, d, want)
				}
				tbl, err := other.Load(ctx)
				if err != nil {
					t.Fatal(err)
				}
				snaps := 0
				for _, s := range tbl.Metadata().Snapshots() {
					if s.Summary != nil && s.Summary.Properties[iceberg.SummaryCheckpoint] == "a0" {
						snaps++
					}
				}
				if snaps != 1 {
					t.Errorf("a0 committed in %d snapshots, want 1", snaps)
				}
			})
		}
	}
}
