package iceberg

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
)

// faultyCatalog is the real embedded catalog with switches for the faults a
// remote catalog shows: loads that fail, commits that fail before reaching
// it, and commits that land but whose answer is lost (a cut connection).
// Tables it loads commit through it, so that commits can be intercepted.
type faultyCatalog struct {
	catalog.Catalog
	loadsFail, commitsFail, answersLost atomic.Int32 // how many more to fail
	commits                             atomic.Int32 // commits that reached the catalog
	// loadsFailAfterLoss: a lost answer also fails this many loads after it
	// (the connection stays down for the lookup that follows).
	loadsFailAfterLoss atomic.Int32
}

func (c *faultyCatalog) LoadTable(ctx context.Context, id table.Identifier) (*table.Table, error) {
	if c.loadsFail.Add(-1) >= 0 {
		return nil, errors.New("dial tcp: connect: connection refused")
	}
	tbl, err := c.Catalog.LoadTable(ctx, id)
	if err != nil {
		return nil, err
	}
	return table.New(tbl.Identifier(), tbl.Metadata(), tbl.MetadataLocation(), tbl.FS, c), nil
}

func (c *faultyCatalog) CommitTable(ctx context.Context, id table.Identifier, reqs []table.Requirement, updates []table.Update) (table.Metadata, string, error) {
	if c.commitsFail.Add(-1) >= 0 {
		return nil, "", errors.New("write tcp: broken pipe")
	}
	meta, loc, err := c.Catalog.CommitTable(ctx, id, reqs, updates)
	if err == nil {
		c.commits.Add(1)
		if c.answersLost.Add(-1) >= 0 {
			c.loadsFail.Store(c.loadsFailAfterLoss.Load())
			return nil, "", errors.New("unexpected EOF")
		}
	}
	return meta, loc, err
}

func openFaulty(t *testing.T) (*Table, *faultyCatalog) {
	t.Helper()
	props, err := EmbeddedProps(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	inner, err := OpenCatalog(context.Background(), "", props)
	if err != nil {
		t.Fatal(err)
	}
	cat := &faultyCatalog{Catalog: inner}
	tbl, err := Open(context.Background(), cat, Options{CommitTimeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return tbl, cat
}

func oneRange(name string, start uint64) durable.Checkpoint {
	return durable.Checkpoint{Name: name, Writer: "pod", Ranges: []coverage.DestinationRanges{{
		Destination: coverage.Destination{Sink: "lake", Topic: "t"}, Ranges: []coverage.Range{{Start: start, End: start + 1}}}}}
}

// A commit refused while the catalog also stops answering loads is retried
// from the metadata in hand until both come back, and lands once.
func TestAppendRetriesThroughFailingCommitsAndLoads(t *testing.T) {
	ctx := context.Background()
	tbl, cat := openFaulty(t)
	if err := tbl.Append(ctx, oneRange("pod/1", 1)); err != nil {
		t.Fatal(err)
	}
	cat.commitsFail.Store(2)
	cat.loadsFail.Store(2)
	if err := tbl.Append(ctx, oneRange("pod/2", 3)); err != nil {
		t.Fatalf("append through two refused commits and two failed loads: %v", err)
	}
	assertSnapshots(t, tbl, 2)
}

// A commit that landed but whose answer was lost is found by its name on
// the next load and not committed again.
func TestAppendFindsACommitWhoseAnswerWasLost(t *testing.T) {
	ctx := context.Background()
	tbl, cat := openFaulty(t)
	cat.answersLost.Store(1)
	if err := tbl.Append(ctx, oneRange("pod/1", 1)); err != nil {
		t.Fatal(err)
	}
	if n := cat.commits.Load(); n != 1 {
		t.Fatalf("%d commits reached the catalog, want 1", n)
	}
	assertSnapshots(t, tbl, 1)
}

// A commit whose answer was lost, looked for by a load that fails too,
// then retried on the old metadata and refused as a conflict (the table
// moved: by the commit itself), is found by the reload after the conflict
// and not committed a second time. Committing it again put its data files
// in the table twice, which every later rewrite of the sink then refused.
func TestAppendFindsALostCommitAfterAFailedLoadAndAConflict(t *testing.T) {
	ctx := context.Background()
	tbl, cat := openFaulty(t)
	cat.answersLost.Store(1)
	cat.loadsFailAfterLoss.Store(1)
	if err := tbl.Append(ctx, oneRange("pod/1", 1)); err != nil {
		t.Fatal(err)
	}
	if n := cat.commits.Load(); n != 1 {
		t.Fatalf("%d commits reached the catalog, want 1: the lost commit was committed again", n)
	}
	assertSnapshots(t, tbl, 1)
}

func assertSnapshots(t *testing.T, tbl *Table, want int) {
	t.Helper()
	loaded, err := tbl.Load(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if n := len(loaded.Metadata().Snapshots()); n != want {
		t.Fatalf("%d snapshots, want %d", n, want)
	}
}
