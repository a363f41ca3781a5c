package iceberg

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/internal/faultio"
)

// hookCatalog runs a one-shot hook before forwarding a CommitTable.
type hookCatalog struct {
	catalog.Catalog
	mu   sync.Mutex
	hook func()
	log  func(string)
	// restLike maps a failed requirement to table.ErrCommitFailed, as a
	// REST catalog does (HTTP 409 -> rest.ErrCommitFailed).
	restLike bool
	// lieOnce: the next commit lands, and reports a failure (a lost answer)
	lieOnce atomic.Bool
}

func (c *hookCatalog) arm(f func()) { c.mu.Lock(); c.hook = f; c.mu.Unlock() }

func (c *hookCatalog) CommitTable(ctx context.Context, id table.Identifier, reqs []table.Requirement, ups []table.Update) (table.Metadata, string, error) {
	c.mu.Lock()
	h := c.hook
	c.hook = nil
	c.mu.Unlock()
	if h != nil {
		h()
	}
	m, loc, err := c.Catalog.CommitTable(ctx, id, reqs, ups)
	if err == nil && c.lieOnce.Swap(false) {
		err = errors.New("injected: answer lost (the commit landed)")
	}
	if err != nil && c.restLike && strings.Contains(err.Error(), "requirement failed") {
		err = fmt.Errorf("%w: %w", table.ErrCommitFailed, err)
	}
	if c.log != nil {
		c.log(fmt.Sprintf("CommitTable hook=%v err=%v", h != nil, err))
	}
	return m, loc, err
}

func (c *hookCatalog) LoadTable(ctx context.Context, id table.Identifier) (*table.Table, error) {
	tbl, err := c.Catalog.LoadTable(ctx, id)
	if err != nil {
		return nil, err
	}
	return table.New(tbl.Identifier(), tbl.Metadata(), tbl.MetadataLocation(), tbl.FS, c), nil
}

func testCommit(name string, sinks []string, start uint64) durable.Checkpoint {
	c := durable.Checkpoint{Name: name, Writer: "pod"}
	for _, s := range sinks {
		d := coverage.Destination{Sink: s, Topic: "t", Partition: 0}
		c.Ranges = append(c.Ranges, coverage.DestinationRanges{Destination: d, Ranges: []coverage.Range{{Start: start, End: start + 5}}})
	}
	return c
}

// TestMergeRacingRewrite lands a checkpoint and a rewrite of one sink (a
// concurrent compaction) while a merge commits. Where iceberg-go rebuilds
// the merge on the newer snapshot, the merge's check after its commit must
// compare with that snapshot, not the one it started from, and pass: the
// rewrite removed files, the merge did not.
func TestMergeRacingRewrite(t *testing.T) {
	for _, rest := range []bool{false, true} {
		for _, retries := range []string{"", "4"} {
			t.Run(fmt.Sprintf("restLike=%v/retries=%s", rest, retries), func(t *testing.T) { mergeRacingRewrite(t, rest, retries) })
		}
	}
}

func mergeRacingRewrite(t *testing.T, restLike bool, retries string) {
	ctx := context.Background()
	inner := embeddedCatalog(t)
	hc := &hookCatalog{Catalog: inner}
	hc.log = func(s string) { t.Log(s) }
	hc.restLike = restLike
	tbl, err := Open(ctx, hc, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if retries != "" {
		// commit.retry.num-retries, as an operator or another engine sets it
		cur, err := tbl.Load(ctx)
		if err != nil {
			t.Fatal(err)
		}
		txn := cur.NewTransaction()
		if err := txn.SetProperties(map[string]string{table.CommitNumRetriesKey: retries}); err != nil {
			t.Fatal(err)
		}
		if _, err := txn.Commit(ctx); err != nil {
			t.Fatal(err)
		}
	}
	other, err := Open(ctx, inner, Options{}) // a second process
	if err != nil {
		t.Fatal(err)
	}
	for i := range 4 {
		if err := tbl.Append(ctx, testCommit(fmt.Sprintf("c%d", i), []string{"raw", "lake"}, uint64(i)*10)); err != nil {
			t.Fatal(err)
		}
	}
	pre, _ := tbl.Load(ctx)
	preSnap := pre.CurrentSnapshot().SnapshotID
	var hookErr error
	hc.arm(func() {
		if err := other.Append(ctx, testCommit("late", []string{"lake"}, 1000)); err != nil {
			hookErr = err
			return
		}
		hookErr = rewriteOneSink(ctx, other, "raw", 99)
	})
	merge, err := tbl.MergeManifests(ctx)
	if hookErr != nil {
		t.Fatalf("hook: %v", hookErr)
	}
	t.Logf("merge result %+v err=%v", merge, err)
	got, cerr := tbl.Coverage(ctx, durable.Filter{})
	if cerr != nil {
		t.Fatal(cerr)
	}
	if cur, err := tbl.Load(ctx); err == nil {
		for _, snap := range cur.Metadata().Snapshots() {
			t.Logf("snapshot %d parent %v op %s props %v", snap.SnapshotID, snap.ParentSnapshotID, snap.Summary.Operation, snap.Summary.Properties[SummaryCheckpoint])
		}
		by, _ := DataFilesBySink(ctx, cur)
		for s, g := range by {
			t.Logf("sink %s: %d files", s, len(g))
		}
	}
	late := coverage.Destination{Sink: "lake", Topic: "t"}
	t.Logf("lake covers %v (the late checkpoint 1000..1005 is committed)", got[late])
	if err != nil && errors.Is(err, ErrUnverifiedWrite) {
		// What would the advised rollback restore?
		old, _ := tbl.Load(ctx)
		snap := old.SnapshotByID(preSnap)
		if snap == nil {
			t.Fatalf("snapshot %d gone", preSnap)
		}
		tasks, perr := old.Scan(table.WithSnapshotID(preSnap)).PlanFiles(ctx)
		if perr != nil {
			t.Fatal(perr)
		}
		t.Errorf("merge reported a dropped file although none was dropped by the merge: %v", err)
		t.Errorf("the advised rollback target snapshot %d has %d data files; current table holds the late checkpoint, which that snapshot does not", preSnap, len(tasks))
	}
}

// TestMergeRacingAppends appends checkpoints from several goroutines while
// merges run: no appended range may vanish.
func TestMergeRacingAppends(t *testing.T) {
	for _, mode := range []string{"sql", "rest+retries"} {
		t.Run(mode, func(t *testing.T) { mergeRacingAppends(t, mode == "rest+retries") })
	}
}

func mergeRacingAppends(t *testing.T, rest bool) {
	ctx := context.Background()
	inner := embeddedCatalog(t)
	tbl, err := Open(ctx, inner, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if rest {
		cur, err := tbl.Load(ctx)
		if err != nil {
			t.Fatal(err)
		}
		txn := cur.NewTransaction()
		if err := txn.SetProperties(map[string]string{table.CommitNumRetriesKey: "4"}); err != nil {
			t.Fatal(err)
		}
		if _, err := txn.Commit(ctx); err != nil {
			t.Fatal(err)
		}
	}
	var mcat catalog.Catalog = inner
	if rest {
		mcat = &hookCatalog{Catalog: inner, restLike: true}
	}
	const writers, per = 3, 30
	var wg sync.WaitGroup
	errs := make(chan error, writers*per+100)
	done := make(chan struct{})
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tw, err := Open(ctx, inner, Options{})
			if err != nil {
				errs <- err
				return
			}
			for i := range per {
				c := testCommit(fmt.Sprintf("w%d/%d", w, i), []string{fmt.Sprintf("s%d", w), "shared"}, uint64(w*100000+i*10))
				c.Writer = fmt.Sprintf("pod%d", w)
				if err := tw.Append(ctx, c); err != nil {
					errs <- fmt.Errorf("append %s: %w", c.Name, err)
				}
			}
		}()
	}
	merges, mergeErrs := 0, 0
	var mwg sync.WaitGroup
	mwg.Add(1)
	go func() {
		defer mwg.Done()
		tm, err := Open(ctx, mcat, Options{})
		if err != nil {
			errs <- err
			return
		}
		for {
			select {
			case <-done:
				return
			default:
			}
			m, err := tm.MergeManifests(ctx)
			if err != nil {
				mergeErrs++
				t.Logf("merge error: %v", err)
			} else if m.Merged > 0 {
				merges++
			}
		}
	}()
	wg.Wait()
	close(done)
	mwg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("%v", err)
	}
	got, err := tbl.Coverage(ctx, durable.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	for w := range writers {
		for i := range per {
			r := coverage.Range{Start: uint64(w*100000 + i*10), End: uint64(w*100000+i*10) + 5}
			for _, s := range []string{fmt.Sprintf("s%d", w), "shared"} {
				d := coverage.Destination{Sink: s, Topic: "t"}
				if got[d] == nil || !got[d].ContainsRange(r) {
					t.Errorf("LOST: %s %v appended (nil) but not covered", d, r)
				}
			}
		}
	}
	t.Logf("%d merges committed, %d merge errors", merges, mergeErrs)
}

// TestMergeFaults merges under a metadata fault at each position, failing
// and landing but reporting failure: coverage stays exact and a later merge
// goes through.
func TestMergeFaults(t *testing.T) {
	ctx := context.Background()
	inner := embeddedCatalog(t)
	inj := faultio.New(1)
	tbl, err := Open(ctx, faultio.WrapCatalog(&seqTxCatalog{Catalog: inner}, inj), Options{CommitTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	next := 0
	for _, op := range []faultio.Op{faultio.Create, faultio.Write, faultio.Close} {
		for nth := 1; nth <= 5; nth++ {
			for _, after := range []bool{false, true} {
				for range 3 {
					next++
					if err := tbl.Append(ctx, testCommit(fmt.Sprintf("c%d", next), []string{"raw", "lake"}, uint64(next)*10)); err != nil {
						t.Fatal(err)
					}
				}
				want, err := tbl.Coverage(ctx, durable.Filter{})
				if err != nil {
					t.Fatal(err)
				}
				inj.Clear()
				before := len(inj.Events())
				inj.Add(faultio.Rule{Op: op, Match: "/metadata/", Nth: nth, AfterSuccess: after})
				m, err := tbl.MergeManifests(ctx)
				inj.Clear()
				fired := len(inj.Events()) - before
				ok := err == nil || errors.Is(err, faultio.ErrInjected) || errors.Is(err, ErrUnverifiedWrite) || errors.Is(err, coverage.ErrUnavailable) || errors.Is(err, ErrCommitTimeout)
				t.Logf("%s nth=%d after=%v: fired=%d merge=%+v err=%v", op, nth, after, fired, m, err)
				if !ok {
					t.Errorf("unclassified error: %v", err)
				}
				if fired > 0 && err == nil {
					t.Logf("  (fault fired, merge returned nil)")
				}
				got, err := tbl.Coverage(ctx, durable.Filter{})
				if err != nil {
					t.Fatal(err)
				}
				sameCoverage(t, got, want)
				cur, _ := tbl.Load(ctx)
				fs, _ := cur.FS(ctx)
				list, err := cur.CurrentSnapshot().Manifests(fs)
				if err != nil {
					t.Fatal(err)
				}
				t.Logf("  manifests now %d, op %s", len(list), cur.CurrentSnapshot().Summary.Operation)
			}
		}
	}
}
