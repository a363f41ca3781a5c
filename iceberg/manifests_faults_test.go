package iceberg

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	ice "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
)

// TestMergeWithDeleteFiles: another engine deleted rows (a position delete
// file); MergeManifests refuses with ErrDeleteFiles and commits nothing.
func TestMergeWithDeleteFiles(t *testing.T) {
	ctx := context.Background()
	inner := embeddedCatalog(t)
	tbl, err := Open(ctx, inner, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		c := testCommit(fmt.Sprintf("c%d", i), []string{"raw"}, uint64(i)*10)
		c.Ranges[0].Ranges = append(c.Ranges[0].Ranges, coverage.Range{Start: uint64(i)*10 + 7, End: uint64(i)*10 + 8})
		if err := tbl.Append(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	cur, _ := tbl.Load(ctx)
	txn := cur.NewTransaction()
	if err := txn.SetProperties(map[string]string{table.WriteDeleteModeKey: table.WriteModeMergeOnRead}); err != nil {
		t.Fatal(err)
	}
	if _, err := txn.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	cur, _ = tbl.Load(ctx)
	txn = cur.NewTransaction()
	if err := txn.Delete(ctx, ice.EqualTo(ice.Reference(ColRangeStart), int64(7)), nil); err != nil {
		t.Fatalf("delete: %v", err)
	}
	if _, err := txn.Commit(ctx); err != nil {
		t.Fatalf("delete commit: %v", err)
	}
	cur, _ = tbl.Load(ctx)
	before := cur.CurrentSnapshot().SnapshotID
	if m, err := tbl.MergeManifests(ctx); !errors.Is(err, ErrDeleteFiles) || m != (ManifestMerge{}) {
		t.Fatalf("a merge over a delete file did %+v, %v; want nothing and ErrDeleteFiles", m, err)
	}
	after, err := tbl.Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if id := after.CurrentSnapshot().SnapshotID; id != before {
		t.Fatalf("the refused merge committed snapshot %d", id)
	}
}

type readFailIO struct {
	icebergio.WriteFileIO
	fail *atomic.Bool
}

func (f readFailIO) Open(name string) (icebergio.File, error) {
	if f.fail.Load() && strings.HasSuffix(name, ".avro") {
		return nil, fmt.Errorf("injected read failure of %s", name)
	}
	return f.WriteFileIO.Open(name)
}

type readFailCatalog struct {
	catalog.Catalog
	fail      atomic.Bool
	afterNext atomic.Bool // fail reads once the next commit succeeds
}

func (c *readFailCatalog) fsf(inner table.FSysF) table.FSysF {
	return func(ctx context.Context) (icebergio.IO, error) {
		fs, err := inner(ctx)
		if err != nil {
			return nil, err
		}
		return readFailIO{WriteFileIO: fs.(icebergio.WriteFileIO), fail: &c.fail}, nil
	}
}

func (c *readFailCatalog) LoadTable(ctx context.Context, id table.Identifier) (*table.Table, error) {
	tbl, err := c.Catalog.LoadTable(ctx, id)
	if err != nil {
		return nil, err
	}
	return table.New(tbl.Identifier(), tbl.Metadata(), tbl.MetadataLocation(), c.fsf(tbl.FS), c), nil
}

func (c *readFailCatalog) CommitTable(ctx context.Context, id table.Identifier, reqs []table.Requirement, ups []table.Update) (table.Metadata, string, error) {
	m, loc, err := c.Catalog.CommitTable(ctx, id, reqs, ups)
	if err == nil && c.afterNext.Swap(false) {
		c.fail.Store(true)
	}
	return m, loc, err
}

// TestMergePostCheckReadFailure: the check after the merge's commit cannot
// read the committed snapshot's manifests, and MergeManifests says so
// (ErrMergeUnverified) rather than return nil.
func TestMergePostCheckReadFailure(t *testing.T) {
	ctx := context.Background()
	inner := embeddedCatalog(t)
	rc := &readFailCatalog{Catalog: inner}
	tbl, err := Open(ctx, rc, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if err := tbl.Append(ctx, testCommit(fmt.Sprintf("c%d", i), []string{"raw"}, uint64(i)*10)); err != nil {
			t.Fatal(err)
		}
	}
	rc.afterNext.Store(true)
	m, err := tbl.MergeManifests(ctx)
	verified := !rc.fail.Load()
	rc.fail.Store(false)
	t.Logf("merge %+v err=%v; reads of manifests were failing after the commit: %v", m, err, !verified)
	_, rerr := tbl.Coverage(ctx, durable.Filter{})
	t.Logf("coverage readable again: %v", rerr)
	if err == nil && !verified {
		t.Errorf("MergeManifests returned nil although its post-commit check could not read the committed snapshot")
	}
}

// TestMergeConflictTimeout: every merge commit loses to a checkpoint, and
// the merge gives up with ErrCommitTimeout, as every other commit does.
func TestMergeConflictTimeout(t *testing.T) {
	ctx := context.Background()
	inner := embeddedCatalog(t)
	hc := &hookCatalog{Catalog: inner}
	tbl, err := Open(ctx, hc, Options{CommitTimeout: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	{
		// keep the checkpoints' own manifest merging out of the way
		cur, _ := tbl.Load(ctx)
		txn := cur.NewTransaction()
		if err := txn.SetProperties(map[string]string{table.ManifestMergeEnabledKey: "false"}); err != nil {
			t.Fatal(err)
		}
		if _, err := txn.Commit(ctx); err != nil {
			t.Fatal(err)
		}
	}
	other, err := Open(ctx, inner, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if err := tbl.Append(ctx, testCommit(fmt.Sprintf("c%d", i), []string{"raw"}, uint64(i)*10)); err != nil {
			t.Fatal(err)
		}
	}
	n := 0
	var rearm func()
	rearm = func() {
		n++
		if err := other.Append(ctx, testCommit(fmt.Sprintf("x%d", n), []string{"raw"}, 1e6+uint64(n)*10)); err != nil {
			t.Error(err)
		}
		hc.arm(rearm)
	}
	hc.arm(rearm)
	start := time.Now()
	m, err := tbl.MergeManifests(ctx)
	hc.arm(nil)
	t.Logf("after %s and %d lost races: %+v err=%v", time.Since(start), n, m, err)
	if err == nil {
		t.Fatal("merge returned nil")
	}
	if !errors.Is(err, ErrCommitTimeout) {
		t.Errorf("a merge that kept conflicting until CommitTimeout is not ErrCommitTimeout: %v", err)
	}
}

// TestMergeLostAnswer: the merge's commit lands but its answer is lost; the
// next attempt finds it merged, checks it, and reports success.
func TestMergeLostAnswer(t *testing.T) {
	ctx := context.Background()
	inner := embeddedCatalog(t)
	hc := &hookCatalog{Catalog: inner}
	tbl, err := Open(ctx, hc, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if err := tbl.Append(ctx, testCommit(fmt.Sprintf("c%d", i), []string{"raw"}, uint64(i)*10)); err != nil {
			t.Fatal(err)
		}
	}
	want, err := tbl.Coverage(ctx, durable.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	hc.lieOnce.Store(true)
	if _, err := tbl.MergeManifests(ctx); err != nil {
		t.Fatalf("a merge whose answer was lost once: %v, want nil (the next attempt finds it merged)", err)
	}
	cur, err := tbl.Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !isMerge(cur.CurrentSnapshot()) {
		t.Fatalf("the current snapshot is a %s, want the merge", cur.CurrentSnapshot().Summary.Operation)
	}
	got, err := tbl.Coverage(ctx, durable.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	sameCoverage(t, got, want)
	if m, err := tbl.MergeManifests(ctx); err != nil || m != (ManifestMerge{}) {
		t.Fatalf("merging again did %+v, %v; want nothing", m, err)
	}
}
