package iceberg

import (
	"context"
	"errors"
	"fmt"
	iofs "io/fs"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	ice "github.com/apache/iceberg-go"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/internal/faultio"
	"github.com/covmirror/covmirror/internal/testseed"
)

// TestRandomFaults runs appends, rewrites, merges of manifests and
// TableSink writes with faults from faultio, chosen from a seed
// (internal/testseed: -seed or COVMIRROR_SEED replays one), checking after
// every step that the table never holds a range that was not appended,
// that an Append or a Write returning nil has every range in the table,
// and that TableSink's coverage never leads its sink table.
func TestRandomFaults(t *testing.T) {
	seed := testseed.Seed(t)
	rng := rand.New(rand.NewPCG(seed, 1))
	ctx := context.Background()
	props, err := EmbeddedProps(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	inner, err := OpenCatalog(ctx, "", props)
	if err != nil {
		t.Fatal(err)
	}
	inj := faultio.New(seed)
	cat := faultio.WrapCatalog(&seqTxCatalog{Catalog: inner}, inj)
	tbl, err := Open(ctx, cat, Options{CommitTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ident := createSinkTable(t, tbl)
	ts := newTableSink(t, TableSinkOptions{Coverage: tbl, Sink: ident, Writer: "sinkpod"})
	sinks := []string{"raw", "lake", "../x", "wh"}
	sinkDest := coverage.Destination{Sink: "lakehouse", Topic: "t"}
	attempted := map[coverage.Destination]*coverage.RangeSet{}
	mustHave := map[coverage.Destination]*coverage.RangeSet{}
	add := func(m map[coverage.Destination]*coverage.RangeSet, d coverage.Destination, r coverage.Range) {
		if m[d] == nil {
			m[d] = new(coverage.RangeSet)
		}
		_ = m[d].Add(r)
	}
	next, failed, injected := uint64(0), 0, 0
	defer func() { t.Logf("%d operations failed, %d faults injected", failed, injected) }()
	for step := range 30 {
		inj.Clear()
		fault := "none"
		if rng.IntN(3) > 0 {
			rule := faultio.Rule{Op: faultio.Op(1 + rng.IntN(3)), Nth: 1 + rng.IntN(2), AfterSuccess: rng.IntN(3) == 0}
			switch rng.IntN(3) {
			case 0:
				rule.Match = faultio.PartitionMatch(ColSinkKey, PathKey(sinks[rng.IntN(len(sinks))]))
			case 1:
				rule.Match = "/metadata/"
			default:
				rule.Match = "/data/"
			}
			inj.Add(rule)
			fault = fmt.Sprintf("%+v", rule)
		}
		var op string
		var opErr error
		switch k := rng.IntN(6); {
		case k <= 2:
			c := durable.Checkpoint{Name: fmt.Sprintf("c%d", step), Writer: "pod"}
			for _, s := range sinks {
				if rng.IntN(2) == 0 {
					continue
				}
				r := coverage.Range{Start: next, End: next + 1 + uint64(rng.IntN(5))}
				d := coverage.Destination{Sink: s, Topic: "t"}
				c.Ranges = append(c.Ranges, coverage.DestinationRanges{Destination: d, Ranges: []coverage.Range{r}})
				add(attempted, d, r)
			}
			next += 10
			if len(c.Ranges) == 0 {
				continue
			}
			op, opErr = "append", tbl.Append(ctx, c)
			if opErr == nil {
				for _, dr := range c.Ranges {
					add(mustHave, dr.Destination, dr.Ranges[0])
				}
			}
		case k == 3:
			r := coverage.Range{Start: next, End: next + 3}
			next += 10
			add(attempted, sinkDest, r)
			op, opErr = "tablesink", ts.Write(ctx, fmt.Sprintf("w%d", step), sinkDest, r, sinkRows(r))
			if opErr == nil {
				add(mustHave, sinkDest, r)
			}
		case k == 4:
			op, opErr = "rewrite", rewriteOneSink(ctx, tbl, sinks[rng.IntN(len(sinks))], step)
		default:
			_, opErr = tbl.MergeManifests(ctx)
			op = "merge manifests"
		}
		if opErr != nil && !errors.Is(opErr, faultio.ErrInjected) && !errors.Is(opErr, ErrUnverifiedWrite) &&
			!errors.Is(opErr, coverage.ErrUnavailable) && !errors.Is(opErr, ErrCommitTimeout) {
			t.Errorf("seed %d step %d: %s under %s: unclassified error %v", seed, step, op, fault, opErr)
		}
		if opErr != nil {
			failed++
		}
		injected = len(inj.Events())
		inj.Clear()
		got, err := tbl.Coverage(ctx, durable.Filter{})
		if err != nil {
			t.Fatalf("seed %d step %d: reading: %v", seed, step, err)
		}
		for d, set := range got {
			if a := attempted[d]; !covers(a, set) {
				t.Fatalf("seed %d step %d: %s under %s (%v): %s covers %s, only %v was appended", seed, step, op, fault, opErr, d, set.String(), a)
			}
		}
		for d, set := range mustHave {
			if g := got[d]; !covers(g, set) {
				t.Fatalf("seed %d step %d: %s under %s: %s must cover %s (returned nil), table has %v", seed, step, op, fault, d, set.String(), g)
			}
		}
		if cov := got[sinkDest]; cov != nil {
			if held := sinkBatches(t, tbl, ident); !covers(held, cov) {
				t.Fatalf("seed %d step %d: coverage %s leads the sink table %s", seed, step, cov.String(), held.String())
			}
		}
	}
}

// rewriteOneSink rewrites one sink's files into merged rows, as compaction
// does.
func rewriteOneSink(ctx context.Context, t *Table, sink string, step int) error {
	base, err := t.Load(ctx)
	if err != nil {
		return err
	}
	tasks, err := DataFiles(ctx, base)
	if err != nil {
		return err
	}
	c := durable.Checkpoint{Name: fmt.Sprintf("rw%d", step), Writer: "compaction"}
	var inputs []ice.DataFile
	for _, task := range tasks {
		if s, _ := SinkOf(task.File); s == sink {
			inputs = append(inputs, task.File)
		}
	}
	if len(inputs) < 2 {
		return nil
	}
	before, err := ReadCoverage(ctx, base, durable.Filter{Sink: sink})
	if err != nil {
		return err
	}
	for d, set := range before {
		c.Ranges = append(c.Ranges, coverage.DestinationRanges{Destination: d, Ranges: set.Ranges()})
	}
	_, err = t.Rewrite(ctx, base, inputs, c, nil)
	return err
}

// covers reports whether every range of sub is in set.
func covers(set, sub *coverage.RangeSet) bool {
	for _, r := range sub.Ranges() {
		if set == nil || !set.ContainsRange(r) {
			return false
		}
	}
	return true
}

// A commit the process has no permission to write is reported at once, not
// retried for CommitTimeout (a one-shot command spent two minutes on it):
// no retry mends a permission. Nothing lands, and once the permission is
// back the same commit lands.
func TestPermissionDeniedIsNotRetried(t *testing.T) {
	ctx := context.Background()
	props, err := EmbeddedProps(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	inner, err := OpenCatalog(ctx, "", props)
	if err != nil {
		t.Fatal(err)
	}
	inj := faultio.New(1)
	tbl, err := Open(ctx, faultio.WrapCatalog(inner, inj), Options{CommitTimeout: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	inj.Add(faultio.Rule{Op: faultio.Create, Match: "/metadata/", Err: iofs.ErrPermission})
	c := durable.Checkpoint{Name: "pod/1", Writer: "pod", Ranges: []coverage.DestinationRanges{{
		Destination: coverage.Destination{Sink: "raw", Topic: "t"}, Ranges: []coverage.Range{{Start: 0, End: 10}}}}}
	err = tbl.Append(ctx, c)
	if !errors.Is(err, iofs.ErrPermission) || !strings.Contains(err.Error(), "retrying cannot") {
		t.Fatalf("append into metadata the process may not write: %v; want the permission error, said at once", err)
	}
	if n := len(inj.Events()); n != 1 {
		t.Fatalf("%d writes were tried (%v); want 1: a permission is not retried", n, inj.Events())
	}
	if got, err := tbl.Coverage(ctx, durable.Filter{}); err != nil || len(got) != 0 {
		t.Fatalf("a refused commit left rows: %v %v", got, err)
	}
	inj.Clear()
	c.MayHaveLanded = true
	if err := tbl.Append(ctx, c); err != nil {
		t.Fatalf("the same commit once the permission is back: %v", err)
	}
}
