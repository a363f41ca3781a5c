//go:build integration

package iceberg

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	ice "github.com/apache/iceberg-go"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/internal/childproc"
	"github.com/covmirror/covmirror/internal/seaweedtest"
	"github.com/covmirror/covmirror/internal/testseed"
)

const (
	childPropsEnv = "COVMIRROR_CHILD_PROPS"
	childNSEnv    = "COVMIRROR_CHILD_NAMESPACE"
	childBaseEnv  = "COVMIRROR_CHILD_BASE"
)

func TestMain(m *testing.M) {
	childproc.Main(m, map[string]func() error{"sinkwriter": sinkWriter})
}

var lakehouse = coverage.Destination{Sink: "lakehouse", Topic: "orders"}

// sinkWriter writes ten batches at a time through a TableSink until it is
// killed.
func sinkWriter() error {
	ctx := context.Background()
	var props map[string]string
	if err := json.Unmarshal([]byte(os.Getenv(childPropsEnv)), &props); err != nil {
		return err
	}
	cat, err := OpenCatalog(ctx, "", props)
	if err != nil {
		return err
	}
	cov, err := Open(ctx, cat, Options{Namespace: []string{os.Getenv(childNSEnv)}})
	if err != nil {
		return err
	}
	base, _ := strconv.ParseUint(os.Getenv(childBaseEnv), 10, 64)
	s, err := NewTableSink(TableSinkOptions{Coverage: cov, Sink: []string{os.Getenv(childNSEnv), "lakehouse"}, Writer: "writer"})
	if err != nil {
		return err
	}
	for i := uint64(0); ; i++ {
		r := coverage.Range{Start: base + i*10, End: base + i*10 + 10}
		if err := s.Write(ctx, fmt.Sprintf("writer/%d", r.Start), lakehouse, r, sinkRows(r)); err != nil {
			return err
		}
	}
}

// requireBothOrNeither fails t unless the sink table holds exactly the
// batches the coverage table covers for it.
func requireBothOrNeither(t *testing.T, cov *Table, what string) *coverage.RangeSet {
	t.Helper()
	held := sinkBatches(t, cov, []string{cov.ident[0], "lakehouse"})
	all, err := cov.Coverage(context.Background(), durable.Filter{Sink: lakehouse.Sink})
	if err != nil {
		t.Fatal(err)
	}
	covered := all[lakehouse]
	if covered == nil {
		covered = new(coverage.RangeSet)
	}
	if !covered.Equal(held) {
		t.Fatalf("%s: the sink table holds %s but coverage says %s", what, held, covered)
	}
	return held
}

func snapshots(t *testing.T, cov *Table, ident []string) int {
	t.Helper()
	tbl, err := cov.cat.LoadTable(context.Background(), ident)
	if err != nil {
		t.Fatal(err)
	}
	return len(tbl.Metadata().Snapshots())
}

// TestExactlyOnceSeaweedFS: on the REST catalog a sink table and the
// coverage table are committed together; a transaction built on stale
// metadata changes neither; and a client killed at random moments around
// the commit leaves both or neither, ten times.
func TestExactlyOnceSeaweedFS(t *testing.T) {
	ctx := context.Background()
	server := seaweedtest.Start(t)
	cov := openREST(t, server)
	ident := createSinkTable(t, cov)
	s := newTableSink(t, TableSinkOptions{Coverage: cov, Sink: ident, Writer: "pod"})
	for i := range uint64(3) {
		r := coverage.Range{Start: 1 + i*5, End: 6 + i*5}
		if err := s.Write(ctx, fmt.Sprintf("pod/%d", i), lakehouse, r, sinkRows(r)); err != nil {
			t.Fatal(err)
		}
	}
	if held := requireBothOrNeither(t, cov, "after three writes"); held.String() != "{[1,16)}" {
		t.Fatalf("the sink table holds %s", held)
	}
	// A write already landed is found by name and not committed again.
	if err := s.Write(ctx, "pod/2", lakehouse, coverage.Range{Start: 11, End: 16}, sinkRows(coverage.Range{Start: 11, End: 16})); err != nil {
		t.Fatal(err)
	}
	if n := snapshots(t, cov, ident); n != 3 {
		t.Fatalf("the sink table has %d snapshots after a repeated write, want 3", n)
	}

	// Stale: both transactions built, then another writer commits to the
	// coverage table; the commit of the stale pair must change neither.
	staleCov, _ := cov.Load(ctx)
	staleSink, _ := cov.cat.LoadTable(ctx, ident)
	r := coverage.Range{Start: 100, End: 105}
	covFiles, err := cov.writeFiles(ctx, staleCov, "stale", 0, func(schema *arrow.Schema) (arrow.RecordBatch, error) {
		return buildRecord(schema, durable.Checkpoint{Name: "stale", Writer: "pod", Ranges: []coverage.DestinationRanges{{Destination: lakehouse, Ranges: []coverage.Range{r}}}}, time.Now(), nil)
	})
	if err != nil {
		t.Fatal(err)
	}
	sinkFiles, err := writeVerified(ctx, staleSink, "stale", sinkRows(r))
	if err != nil {
		t.Fatal(err)
	}
	if err := cov.Append(ctx, durable.Checkpoint{Name: "other", Writer: "other", Ranges: []coverage.DestinationRanges{{
		Destination: coverage.Destination{Sink: "raw", Topic: "orders"}, Ranges: []coverage.Range{{Start: 1, End: 200}}}}}); err != nil {
		t.Fatal(err)
	}
	covSnaps, sinkSnaps := snapshots(t, cov, cov.ident), snapshots(t, cov, ident)
	err = commitBoth(ctx, cov.cat, staleSink, sinkFiles, staleCov, covFiles, ice.Properties{SummaryCheckpoint: "stale"})
	if err == nil {
		t.Fatal("a transaction on stale metadata committed")
	}
	t.Logf("the stale transaction: %v", err)
	if snapshots(t, cov, cov.ident) != covSnaps || snapshots(t, cov, ident) != sinkSnaps {
		t.Fatal("the stale transaction changed a table")
	}
	requireBothOrNeither(t, cov, "after the stale transaction")

	// Killed around the commit.
	propsJSON, _ := json.Marshal(server.Props())
	rng := rand.New(rand.NewPCG(testseed.Seed(t), 0))
	var last *coverage.RangeSet
	for kill := range 10 {
		child := childproc.Start(t, "sinkwriter", childPropsEnv+"="+string(propsJSON), childNSEnv+"="+cov.ident[0],
			childBaseEnv+"="+strconv.Itoa(1000*(kill+1)))
		child.KillAfter(t, time.Duration(300+rng.IntN(700))*time.Millisecond, fmt.Sprintf("kill %d", kill))
		last = requireBothOrNeither(t, cov, fmt.Sprintf("after kill %d", kill))
	}
	t.Logf("after 10 kills the sink table and the coverage both hold %d batches", last.Batches())
}
