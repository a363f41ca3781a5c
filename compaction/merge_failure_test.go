package compaction

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/iceberg"
)

// failMergeCatalog fails every commit of a snapshot that no covmirror
// writer stamped (the manifest merge's), as a flaky store would.
type failMergeCatalog struct{ catalog.Catalog }

func (c *failMergeCatalog) LoadTable(ctx context.Context, id table.Identifier) (*table.Table, error) {
	tbl, err := c.Catalog.LoadTable(ctx, id)
	if err != nil {
		return nil, err
	}
	return table.New(tbl.Identifier(), tbl.Metadata(), tbl.MetadataLocation(), tbl.FS, c), nil
}

func (c *failMergeCatalog) CommitTable(ctx context.Context, id table.Identifier, reqs []table.Requirement, ups []table.Update) (table.Metadata, string, error) {
	for _, u := range ups {
		if u.Action() == "add-snapshot" {
			// the merge's snapshot carries no covmirror writer
			if !strings.Contains(fmt.Sprintf("%v", u), iceberg.SummaryWriter) {
				return nil, "", errors.New("injected: the store timed out")
			}
		}
	}
	return c.Catalog.CommitTable(ctx, id, reqs, ups)
}

// TestCompactWhenTheMergeFails: a compaction whose sinks were all
// rewritten, then whose merge of manifests kept failing, reports the sinks
// compacted and the merge's error in its result, not as its own failure.
func TestCompactWhenTheMergeFails(t *testing.T) {
	props, err := iceberg.EmbeddedProps(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	inner, err := iceberg.OpenCatalog(ctx, "", props)
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := iceberg.Open(ctx, &failMergeCatalog{Catalog: inner}, iceberg.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 4 {
		c := durable.Checkpoint{Name: fmt.Sprintf("c%d", i), Writer: "pod"}
		for _, s := range []string{"raw", "lake"} {
			c.Ranges = append(c.Ranges, coverage.DestinationRanges{Destination: coverage.Destination{Sink: s, Topic: "t"},
				Ranges: []coverage.Range{{Start: uint64(i) * 10, End: uint64(i)*10 + 5}}})
		}
		if err := tbl.Append(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	before := dataFiles(t, tbl)
	res, err := Compact(ctx, tbl, Options{MinSmallFiles: 2})
	after := dataFiles(t, tbl)
	if err != nil || res.Sinks != 2 || after >= before || res.ManifestMergeError == "" || res.ManifestsMerged != 0 {
		t.Fatalf("data files %d -> %d; result %+v, %v: want both sinks compacted, nil, and the merge's error in the result", before, after, res, err)
	}
}
