package recovery

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/internal/testseed"
)

// testSeed returns the seed for a randomized test, logged with the command
// that replays it (internal/testseed).
func testSeed(t *testing.T) uint64 { return testseed.Seed(t) }

// TestPlanReportsReferenceHoles is the regression: raw covers [0,5) and
// [6,10) (its record of batch 5 was lost), lake [0,5). The plan used to say
// only "lake lacks [6,10)": batch 5, acked at the source and missing from
// lake, was reported nowhere. Now raw's hole is a verify-reference task;
// once verified and re-recorded, lake's gap there appears.
func TestPlanReportsReferenceHoles(t *testing.T) {
	e := newEnv(t)
	m := e.Owner(t, "", "pod-a")
	defer m.Close()
	raw := coverage.Destination{Sink: coverage.RawSink, Topic: "orders"}
	lake := raw.WithSink("lake")
	record(t, m, raw, 0, 5)
	record(t, m, raw, 6, 10)
	record(t, m, lake, 0, 5)
	if err := m.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	tasks, err := Plan(ctx, e.Table, PlanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := []Task{{lake, rg(6, 10), KindReplay}, {raw, rg(5, 6), KindVerifyReference}}
	if !slices.Equal(tasks, want) {
		t.Fatalf("plan %v, want %v", tasks, want)
	}
	r := &rawHolding{held: rg(0, 10)}
	done, err := Recover(ctx, tasks, r, m)
	if err != nil || done != 2 {
		t.Fatalf("recover: %d done, %v", done, err)
	}
	if err := m.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	tasks, err = Plan(ctx, e.Table, PlanOptions{})
	if want := []Task{{lake, rg(5, 6), KindReplay}}; err != nil || !slices.Equal(tasks, want) {
		t.Fatalf("plan after verifying raw: %v, %v; want %v", tasks, err, want)
	}
}

// rawHolding is a replayer over a raw that durably holds the batches of
// held and nothing else; it can verify the reference.
type rawHolding struct {
	held     coverage.Range
	verified []Task
}

func (r *rawHolding) Replay(_ context.Context, task Task) error {
	if task.Range.Start < r.held.Start || task.Range.End > r.held.End {
		return fmt.Errorf("raw lacks part of %s", task.Range)
	}
	return nil
}

func (r *rawHolding) VerifyReference(_ context.Context, task Task) ([]coverage.Range, error) {
	r.verified = append(r.verified, task)
	lo, hi := max(task.Range.Start, r.held.Start), min(task.Range.End, r.held.End)
	if lo >= hi {
		return nil, nil
	}
	return []coverage.Range{{Start: lo, End: hi}}, nil
}

// verifierFunc is a replayer whose VerifyReference is a function.
type verifierFunc func(context.Context, Task) ([]coverage.Range, error)

func (verifierFunc) Replay(context.Context, Task) error { return nil }
func (f verifierFunc) VerifyReference(ctx context.Context, task Task) ([]coverage.Range, error) {
	return f(ctx, task)
}

// TestRecoverRecordsOnlyVerified: a reference hole [10,20) of which raw
// holds only [12,15) and [17,18): exactly those are recorded, and the rest
// stays a hole the next plan reports again.
func TestRecoverRecordsOnlyVerified(t *testing.T) {
	e := newEnv(t)
	m := e.Owner(t, "", "pod-a")
	defer m.Close()
	raw := coverage.Destination{Sink: coverage.RawSink, Topic: "orders", Partition: 3}
	record(t, m, raw, 0, 10)
	record(t, m, raw, 20, 30)
	if err := m.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	tasks, err := Plan(ctx, e.Table, PlanOptions{})
	if want := []Task{{raw, rg(10, 20), KindVerifyReference}}; err != nil || !slices.Equal(tasks, want) {
		t.Fatalf("plan %v, %v; want %v", tasks, err, want)
	}
	done, err := Recover(ctx, tasks, verifierFunc(func(context.Context, Task) ([]coverage.Range, error) {
		return []coverage.Range{rg(12, 15), rg(17, 18)}, nil
	}), m)
	if err != nil || done != 1 {
		t.Fatalf("recover: %d done, %v", done, err)
	}
	if err := m.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if got, want := committed(t, e, raw), []coverage.Range{rg(0, 10), rg(12, 15), rg(17, 18), rg(20, 30)}; !slices.Equal(got, want) {
		t.Fatalf("raw committed %v, want %v", got, want)
	}
	tasks, err = Plan(ctx, e.Table, PlanOptions{})
	want := []Task{{raw, rg(10, 12), KindVerifyReference}, {raw, rg(15, 17), KindVerifyReference}, {raw, rg(18, 20), KindVerifyReference}}
	if err != nil || !slices.Equal(tasks, want) {
		t.Fatalf("plan after a partial verification %v, %v; want %v", tasks, err, want)
	}
}

// TestRecoverRefusesBadVerification: a verifier's failure, or an answer
// outside the task's range, records nothing and stops recovery.
func TestRecoverRefusesBadVerification(t *testing.T) {
	raw := coverage.Destination{Sink: coverage.RawSink, Topic: "t"}
	lake := raw.WithSink("lake")
	tasks := []Task{{lake, rg(0, 2), KindReplay}, {raw, rg(10, 20), KindVerifyReference}, {lake, rg(5, 6), KindReplay}}
	for name, answer := range map[string]func() ([]coverage.Range, error){
		"outside": func() ([]coverage.Range, error) { return []coverage.Range{rg(12, 14), rg(19, 21)}, nil },
		"invalid": func() ([]coverage.Range, error) { return []coverage.Range{rg(12, 14), rg(15, 15)}, nil },
		"failed":  func() ([]coverage.Range, error) { return []coverage.Range{rg(12, 14)}, errors.New("raw unreachable") },
	} {
		store := coverage.NewInMemory()
		done, err := Recover(ctx, tasks, verifierFunc(func(context.Context, Task) ([]coverage.Range, error) { return answer() }), store)
		rawSet, _ := store.Covered(ctx, raw)
		lakeSet, _ := store.Covered(ctx, lake)
		if done != 1 || err == nil || !rawSet.IsEmpty() || lakeSet.String() != "{[0,2)}" {
			t.Errorf("%s: done %d, err %v, raw %s, lake %s", name, done, err, rawSet.String(), lakeSet.String())
		}
	}
}

// TestRecoverWithoutVerifier: a plain ReplayFunc leaves verify-reference
// tasks undone and uncounted, replays the rest, and says so in its error.
func TestRecoverWithoutVerifier(t *testing.T) {
	raw := coverage.Destination{Sink: coverage.RawSink, Topic: "t"}
	lake := raw.WithSink("lake")
	tasks := []Task{{lake, rg(0, 2), KindReplay}, {raw, rg(10, 20), KindVerifyReference}, {lake, rg(5, 6), ""}}
	store := coverage.NewInMemory()
	done, err := Recover(ctx, tasks, ReplayFunc(func(context.Context, Task) error { return nil }), store)
	rawSet, _ := store.Covered(ctx, raw)
	lakeSet, _ := store.Covered(ctx, lake)
	if done != 2 || !errors.Is(err, ErrCannotVerifyReference) || !strings.Contains(err.Error(), "1 verify-reference task") ||
		!rawSet.IsEmpty() || lakeSet.String() != "{[0,2) [5,6)}" {
		t.Fatalf("done %d, err %v, raw %s, lake %s", done, err, rawSet.String(), lakeSet.String())
	}
	if _, err := Recover(ctx, []Task{{lake, rg(0, 1), "rewrite"}}, ReplayFunc(func(context.Context, Task) error { return nil }), store); err == nil {
		t.Fatal("an unknown task kind was accepted")
	}
}

// TestPlanNoReference: a table with rows but none of the reference is an
// error naming the reference and the sinks there are; an empty table is not.
func TestPlanNoReference(t *testing.T) {
	e := newEnv(t)
	if tasks, err := Plan(ctx, e.Table, PlanOptions{Reference: "rwa"}); err != nil || len(tasks) != 0 {
		t.Fatalf("empty table: %v, %v", tasks, err)
	}
	m := e.Owner(t, "", "pod-a")
	defer m.Close()
	record(t, m, coverage.Destination{Sink: "raw", Topic: "t"}, 0, 5)
	record(t, m, coverage.Destination{Sink: "lake", Topic: "t"}, 0, 5)
	if err := m.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	_, err := Plan(ctx, e.Table, PlanOptions{Reference: "rwa"})
	var nre *NoReferenceError
	if !errors.Is(err, ErrNoReference) || !errors.As(err, &nre) || !slices.Equal(nre.Sinks, []string{"lake", "raw"}) || !strings.Contains(err.Error(), `"rwa"`) {
		t.Fatalf("plan against a misspelled reference: %v", err)
	}
}

// planModel is the reference model: coverage as sets of batch ids.
type planModel struct {
	bits  map[coverage.Destination]map[uint64]bool
	acked map[TopicPartition]coverage.Extent
}

// extents is the model's acked extents, as the options take them.
func (m planModel) extents() []coverage.Extent {
	var out []coverage.Extent
	for _, e := range m.acked {
		out = append(out, e)
	}
	return out
}

// want is the model's plan, one range per maximal run, by destination and
// kind: for the reference, per partition any destination has bits of, the
// batches it lacks between the lowest and the highest batch any destination
// of the partition holds (the reference's or a sink's: raw held them all)
// and, where the acked extent is known, over all of it as well; for every sink with rows of the topic, the
// reference's batches it lacks.
func (m planModel) want() map[Task]bool {
	out := map[Task]bool{}
	add := func(d coverage.Destination, kind TaskKind, missing func(b uint64) bool, lo, hi uint64) {
		for b := lo; b < hi; {
			if !missing(b) {
				b++
				continue
			}
			s := b
			for b < hi && missing(b) {
				b++
			}
			out[Task{d, rg(s, b), kind}] = true
		}
	}
	refs := map[TopicPartition]bool{}
	sinks := map[string]map[string]bool{}
	for d := range m.bits {
		refs[TopicPartition{Topic: d.Topic, Partition: d.Partition}] = true
		if d.Sink != coverage.RawSink {
			if sinks[d.Topic] == nil {
				sinks[d.Topic] = map[string]bool{}
			}
			sinks[d.Topic][d.Sink] = true
		}
	}
	for tp := range m.acked {
		refs[tp] = true
	}
	for tp := range refs {
		d := coverage.Destination{Sink: coverage.RawSink, Topic: tp.Topic, Partition: tp.Partition}
		ref := m.bits[d]
		lo, hi, any := uint64(0), uint64(0), false
		for dd, bits := range m.bits {
			if dd.Topic != tp.Topic || dd.Partition != tp.Partition {
				continue
			}
			for b := range bits {
				if !any || b < lo {
					lo = b
				}
				if !any || b+1 > hi {
					hi = b + 1
				}
				any = true
			}
		}
		if e, ok := m.acked[tp]; ok && e.End > e.Start {
			if !any {
				lo, hi = e.Start, e.End
			}
			lo, hi = min(lo, e.Start), max(hi, e.End)
		}
		add(d, KindVerifyReference, func(b uint64) bool { return !ref[b] }, lo, hi)
		for sink := range sinks[tp.Topic] {
			cov := m.bits[d.WithSink(sink)]
			add(d.WithSink(sink), KindReplay, func(b uint64) bool { return ref[b] && !cov[b] }, lo, hi)
		}
	}
	return out
}

// merged joins adjacent tasks of one destination and kind back into the
// runs they were split from, checking each is at most maxBatches.
func merged(t *testing.T, tasks []Task, maxBatches uint64) map[Task]bool {
	t.Helper()
	out := map[Task]bool{}
	var cur Task
	for i, task := range tasks {
		if task.Range.Len() == 0 || task.Range.Len() > maxBatches {
			t.Fatalf("task %v: want 1..%d batches", task, maxBatches)
		}
		if i > 0 && (task.Destination.Compare(cur.Destination) < 0 || task.Destination == cur.Destination && task.Range.Start < cur.Range.End) {
			t.Fatalf("tasks out of order or overlapping at %v after %v", task, cur)
		}
		if i > 0 && task.Destination == cur.Destination && task.Kind == cur.Kind && task.Range.Start == cur.Range.End {
			cur.Range.End = task.Range.End
			continue
		}
		if i > 0 {
			out[cur] = true
		}
		cur = task
	}
	if len(tasks) > 0 {
		out[cur] = true
	}
	return out
}

// randomModel draws coverage for a few sinks, topics and partitions, each a
// random scatter of ranges over [0,60) (so holes everywhere), and sometimes
// acked ends.
func randomModel(r *rand.Rand) planModel {
	m := planModel{bits: map[coverage.Destination]map[uint64]bool{}, acked: map[TopicPartition]coverage.Extent{}}
	for _, sink := range []string{coverage.RawSink, "lake", "search"} {
		for _, topic := range []string{"orders", "users"} {
			for part := range int32(2) {
				if r.IntN(4) == 0 {
					continue
				}
				d := coverage.Destination{Sink: sink, Topic: topic, Partition: part}
				for range r.IntN(5) {
					s := r.Uint64N(60)
					e := s + 1 + r.Uint64N(12)
					if m.bits[d] == nil {
						m.bits[d] = map[uint64]bool{}
					}
					for b := s; b < e; b++ {
						m.bits[d][b] = true
					}
				}
			}
		}
	}
	if r.IntN(2) == 0 {
		for range r.IntN(3) {
			tp := TopicPartition{Topic: []string{"orders", "users"}[r.IntN(2)], Partition: int32(r.IntN(2))}
			e := coverage.Extent{Topic: tp.Topic, Partition: tp.Partition, End: r.Uint64N(80)}
			if r.IntN(2) == 0 {
				e.Start = r.Uint64N(e.End + 1) // a declared start; sometimes empty
			}
			m.acked[tp] = e
		}
	}
	return m
}

// sets is the model's coverage as the table returns it.
func (m planModel) sets(t *testing.T) map[coverage.Destination]*coverage.RangeSet {
	out := map[coverage.Destination]*coverage.RangeSet{}
	for d, bits := range m.bits {
		set := new(coverage.RangeSet)
		for b := range bits {
			if err := set.Add(rg(b, b+1)); err != nil {
				t.Fatal(err)
			}
		}
		out[d] = set
	}
	return out
}

func checkPlan(t *testing.T, m planModel, tasks []Task, maxBatches uint64) {
	t.Helper()
	got, want := merged(t, tasks, maxBatches), m.want()
	for task := range want {
		if !got[task] {
			t.Errorf("missing %v", task)
		}
	}
	for task := range got {
		if !want[task] {
			t.Errorf("extra %v", task)
		}
	}
}

// TestPlanModel: for random coverage with random holes, Plan's tasks are
// exactly the model's reference holes and sink gaps, split at MaxBatches and
// ordered. Many rounds run on the planner alone, a few through a real table
// written by a Mirror, where Resume's reference assignment is checked too.
func TestPlanModel(t *testing.T) {
	seed := testSeed(t)
	r := rand.New(rand.NewPCG(seed, 0))
	for round := range 500 {
		m := randomModel(r)
		maxBatches := 1 + r.Uint64N(20)
		tasks, err := PlanCoverage(m.sets(t), PlanOptions{Reference: coverage.RawSink, MaxBatches: maxBatches, Extents: m.extents()})
		if err != nil {
			var nre *NoReferenceError
			if errors.As(err, &nre) && !slices.ContainsFunc(nre.Sinks, func(s string) bool { return s == coverage.RawSink }) {
				continue // no raw rows at all: rightly refused
			}
			t.Fatalf("round %d: %v", round, err)
		}
		checkPlan(t, m, tasks, maxBatches)
		if t.Failed() {
			t.Fatalf("round %d: model %v acked %v\ntasks %v", round, m.sets(t), m.acked, tasks)
		}
	}
	for round := range 3 {
		m := randomModel(r)
		m.bits[coverage.Destination{Sink: coverage.RawSink, Topic: "orders"}] = map[uint64]bool{3: true, 9: true}
		e := newEnv(t)
		w := e.Owner(t, "", "pod-a")
		for d, set := range m.sets(t) {
			for rr := range set.All() {
				record(t, w, d, rr.Start, rr.End)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		tasks, err := Plan(ctx, e.Table, PlanOptions{MaxBatches: 7, Extents: m.extents()})
		if err != nil {
			t.Fatalf("table round %d: %v", round, err)
		}
		checkPlan(t, m, tasks, 7)
		for tp := range map[TopicPartition]bool{{Topic: "orders", Partition: 0}: true, {Topic: "users", Partition: 1}: true} {
			as, err := Resume(ctx, e.Table, tp.Topic, tp.Partition, ResumeOptions{Sinks: []string{"lake"}, Extents: m.extents()})
			if err != nil {
				t.Fatal(err)
			}
			wantRef := map[Task]bool{}
			for task := range m.want() {
				if task.Kind == KindVerifyReference && task.Destination.Topic == tp.Topic && task.Destination.Partition == tp.Partition {
					wantRef[task] = true
				}
			}
			gotRef := map[Task]bool{}
			for _, task := range mustTasks(t, as[0]) {
				gotRef[task] = true
			}
			if as[0].Kind != KindVerifyReference || len(gotRef) != len(wantRef) {
				t.Errorf("resume %v: reference %+v, want %v", tp, as[0], wantRef)
			}
			for task := range wantRef {
				if !gotRef[task] {
					t.Errorf("resume %v: reference lacks %v", tp, task)
				}
			}
		}
		if t.Failed() {
			t.Fatalf("table round %d: model %v acked %v\ntasks %v", round, m.sets(t), m.acked, tasks)
		}
	}
}

// Raw's own records of a partition's first batches can be lost (a crash
// before the first checkpoint) while later ones land. With the source's
// acked end known, the stretch from the stream's start is a reference hole:
// the source acked it, so raw holds it, and a sink that missed one of those
// batches would otherwise never be replayed. Resume says the same; with
// a later start the stream begins later and nothing below it is a hole.
func TestPlanSeesLeadingReferenceHole(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	raw := coverage.Destination{Sink: coverage.RawSink, Topic: "orders"}
	later := []coverage.Range{{Start: 3, End: 10}}
	if err := e.Table.Append(ctx, durable.Checkpoint{Name: "pod/1", Writer: "pod", Ranges: []coverage.DestinationRanges{
		{Destination: raw, Ranges: later}, {Destination: raw.WithSink("lake"), Ranges: later}}}); err != nil {
		t.Fatal(err)
	}
	acked := []coverage.Extent{{Topic: "orders", End: 10}}
	tasks, err := Plan(ctx, e.Table, PlanOptions{Sinks: []string{"lake"}, Extents: acked})
	if err != nil {
		t.Fatal(err)
	}
	want := []Task{{Destination: raw, Range: rg(0, 3), Kind: KindVerifyReference}}
	if !slices.Equal(tasks, want) {
		t.Fatalf("raw committed from batch 3, source acked [0,10): plan %v, want %v", tasks, want)
	}
	later3, err := Plan(ctx, e.Table, PlanOptions{Sinks: []string{"lake"}, Extents: []coverage.Extent{{Topic: "orders", Start: 3, End: 10}}})
	if err != nil || len(later3) != 0 {
		t.Fatalf("stream starting at batch 3: plan %v, %v; want none", later3, err)
	}
	as, err := Resume(ctx, e.Table, "orders", 0, ResumeOptions{Sinks: []string{"lake"}, Extents: acked})
	if err != nil {
		t.Fatal(err)
	}
	if got := as[0].Replay; !slices.Equal(got, []coverage.Range{rg(0, 3)}) {
		t.Fatalf("resume: raw's holes %v, want [0,3)", got)
	}
	// The lake's share waits for raw's verification: replay is measured
	// against raw's committed coverage only.
	if got := as[1].Replay; len(got) != 0 {
		t.Fatalf("resume: lake's replay %v before raw's [0,3) is verified, want none", got)
	}
	if err := e.Table.Append(ctx, durable.Checkpoint{Name: "verify/1", Writer: "verifier", Ranges: []coverage.DestinationRanges{
		{Destination: raw, Ranges: []coverage.Range{rg(0, 3)}}}}); err != nil {
		t.Fatal(err)
	}
	if as, err = Resume(ctx, e.Table, "orders", 0, ResumeOptions{Sinks: []string{"lake"}, Extents: acked}); err != nil {
		t.Fatal(err)
	}
	if got := as[1].Replay; !slices.Equal(got, []coverage.Range{rg(0, 3)}) {
		t.Fatalf("resume after raw's verification: lake's replay %v, want [0,3)", got)
	}
	tasks, err = Plan(ctx, e.Table, PlanOptions{Sinks: []string{"lake"}, Extents: acked})
	if err != nil {
		t.Fatal(err)
	}
	if want := []Task{{Destination: raw.WithSink("lake"), Range: rg(0, 3), Kind: KindReplay}}; !slices.Equal(tasks, want) {
		t.Fatalf("after raw's verification: plan %v, want only %v", tasks, want)
	}
}

// TestPlanSeesReferenceHolesUnderSinks: a sink is written only once raw is
// durable, so raw held every batch a sink covers. Raw's record of [0,6) of
// orders/0 was lost while lake covers [0,10) and search [3,10), and no
// acked end is known: raw's hole [0,6) used to be reported nowhere, and with
// it search's gap [0,3). Orders/1, which only lake has rows of, is one whole
// hole of raw (it was reported nowhere either). Once raw is verified and
// re-recorded, search's gap appears. Resume says the same.
func TestPlanSeesReferenceHolesUnderSinks(t *testing.T) {
	e := newEnv(t)
	m := e.Owner(t, "", "pod-a")
	defer m.Close()
	raw := coverage.Destination{Sink: coverage.RawSink, Topic: "orders"}
	raw1 := raw
	raw1.Partition = 1
	lake, search := raw.WithSink("lake"), raw.WithSink("search")
	record(t, m, raw, 6, 10)
	record(t, m, lake, 0, 10)
	record(t, m, search, 3, 10)
	record(t, m, raw1.WithSink("lake"), 20, 24)
	if err := m.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	tasks, err := Plan(ctx, e.Table, PlanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := []Task{{raw, rg(0, 6), KindVerifyReference}, {raw1, rg(20, 24), KindVerifyReference}}
	if !slices.Equal(tasks, want) {
		t.Fatalf("plan %v, want %v", tasks, want)
	}
	for _, tp := range []struct {
		d    coverage.Destination
		want []coverage.Range
	}{{raw, []coverage.Range{rg(0, 6)}}, {raw1, []coverage.Range{rg(20, 24)}}} {
		as, err := Resume(ctx, e.Table, tp.d.Topic, tp.d.Partition, ResumeOptions{Sinks: []string{"lake", "search"}})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(as[0].Replay, tp.want) || len(as[1].Replay)+len(as[2].Replay) != 0 {
			t.Fatalf("resume %s: %+v; want raw's holes %v and no replay before they are verified", tp.d, as, tp.want)
		}
	}
	r := &rawHolding{held: rg(0, 30)}
	if done, err := Recover(ctx, tasks, r, m); err != nil || done != 2 {
		t.Fatalf("recover: %d done, %v", done, err)
	}
	if err := m.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	tasks, err = Plan(ctx, e.Table, PlanOptions{})
	if want := []Task{{search, rg(0, 3), KindReplay}, {raw1.WithSink("search"), rg(20, 24), KindReplay}}; err != nil || !slices.Equal(tasks, want) {
		t.Fatalf("plan after verifying raw: %v, %v; want %v", tasks, err, want)
	}
}

func mustTasks(t *testing.T, a Assignment) []Task {
	t.Helper()
	tasks, err := a.Tasks(0, 0)
	if err != nil {
		t.Fatal(err)
	}
	return tasks
}

// A hole of 10^18 batches (one stray record far from the rest) must not
// become 10^14 tasks in memory: Plan returns its first MaxTasks tasks, in
// order, and says how much more is planned after them.
func TestPlanCapsItsTasks(t *testing.T) {
	raw := coverage.Destination{Sink: coverage.RawSink, Topic: "orders"}
	far := uint64(1_000_000_000_000_000_000)
	set, err := coverage.NewRangeSet(rg(0, 1), rg(far, far+1))
	if err != nil {
		t.Fatal(err)
	}
	all := map[coverage.Destination]*coverage.RangeSet{raw: &set}
	for _, maxTasks := range []int{1, 7, 100_000} {
		tasks, err := PlanCoverage(all, PlanOptions{Reference: coverage.RawSink, MaxBatches: 10_000, MaxTasks: maxTasks})
		if !errors.Is(err, ErrPlanTruncated) || len(tasks) != maxTasks {
			t.Fatalf("max %d tasks: %d tasks, err %v; want %d and ErrPlanTruncated", maxTasks, len(tasks), err, maxTasks)
		}
		for i, task := range tasks {
			if want := rg(1+uint64(i)*10_000, 1+uint64(i+1)*10_000); task.Range != want || task.Kind != KindVerifyReference {
				t.Fatalf("task %d: %v, want %s verify-reference", i, task, want)
			}
		}
		left := far - 1 - uint64(maxTasks)*10_000
		if !strings.Contains(err.Error(), strconv.FormatUint(left, 10)+" batches more") {
			t.Fatalf("the error does not say %d batches are left: %v", left, err)
		}
	}
	// Tasks as large as the gaps need no cap: one task per gap.
	tasks, err := PlanCoverage(all, PlanOptions{Reference: coverage.RawSink, MaxBatches: math.MaxUint64, MaxTasks: -1})
	if err != nil || len(tasks) != 1 || tasks[0].Range != rg(1, far) {
		t.Fatalf("unbounded tasks: %v, %v; want the one hole [1,%d)", tasks, err, far)
	}
}
