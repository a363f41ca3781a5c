// Package durabletest is the conformance suite every durable tier runs: the
// union under concurrent appends from independent clients, an append
// retried after a lost answer, never a range that was not appended, names
// bound to what they carried, and bad input refused without a write.
package durabletest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/internal/testseed"
)

// Harness tells the suite how to get tiers of one backend.
type Harness struct {
	// New makes a fresh, empty storage location and returns a function that
	// opens a client of it. Each call of the returned function gives an
	// independent client, as another process would have; the suite closes
	// none (register cleanups with t).
	New func(t *testing.T) (open func(t *testing.T) durable.Tier)

	// Seed fixes the randomized scenarios; zero takes the test run's seed
	// (-seed or COVMIRROR_SEED), else a fresh one. The seed in use is
	// logged either way.
	Seed uint64

	// Light runs the scenarios with a tenth of their appends, for backends
	// where an append is a slow commit. The checks are the same.
	Light bool
}

func (h Harness) ops(n int) int {
	if h.Light {
		return max(n/10, 4)
	}
	return n
}

// Run runs every scenario against the harness's backend.
func Run(t *testing.T, h Harness) {
	t.Run("AppendsAgainstModel", func(t *testing.T) { testAgainstModel(t, h) })
	t.Run("ConcurrentWritersUnion", func(t *testing.T) { testConcurrentWriters(t, h) })
	t.Run("RetryAfterLostAnswer", func(t *testing.T) { testRetry(t, h) })
	t.Run("NameBoundToPayload", func(t *testing.T) { testNameReused(t, h) })
	t.Run("BadInputWritesNothing", func(t *testing.T) { testBadInput(t, h) })
	t.Run("HostileNamesStayApart", func(t *testing.T) { testHostileNames(t, h) })
	runStates(t, h) // every tier keeps gap states
}

var ctx = context.Background()

func seed(t *testing.T, h Harness) uint64 {
	return testseed.SeedOr(t, h.Seed)
}

// model is what the tier must hold: per destination, the batches appended.
type model map[coverage.Destination]*coverage.RangeSet

func (m model) add(c durable.Checkpoint) {
	for _, dr := range c.Ranges {
		set := m[dr.Destination]
		if set == nil {
			set = new(coverage.RangeSet)
			m[dr.Destination] = set
		}
		for _, r := range dr.Ranges {
			_ = set.Add(r)
		}
	}
}

// check compares the tier's coverage for f with the model's.
func (m model) check(t *testing.T, what string, tier durable.Tier, f durable.Filter) {
	t.Helper()
	got, err := tier.Coverage(ctx, f)
	if err != nil {
		t.Fatalf("%s: coverage %+v: %v", what, f, err)
	}
	for d, want := range m {
		if !f.Match(d) {
			continue
		}
		g := got[d]
		if g == nil {
			g = new(coverage.RangeSet)
		}
		if !g.Equal(want) {
			t.Fatalf("%s: %s covers %v, appended %v", what, d, g.String(), want.String())
		}
	}
	for d, g := range got {
		if !f.Match(d) {
			t.Fatalf("%s: filter %+v returned %s", what, f, d)
		}
		if m[d] == nil && g.Len() > 0 {
			t.Fatalf("%s: %s covers %v, never appended (a lead)", what, d, g.String())
		}
	}
}

func randomCheckpoint(rng *rand.Rand, writer, name string, sinks []string) durable.Checkpoint {
	c := durable.Checkpoint{Name: name, Writer: writer}
	for range 1 + rng.IntN(4) {
		d := coverage.Destination{Sink: sinks[rng.IntN(len(sinks))], Topic: []string{"orders", "users"}[rng.IntN(2)], Partition: int32(rng.IntN(3))}
		var rs []coverage.Range
		for range 1 + rng.IntN(4) {
			start := uint64(rng.IntN(1000))
			rs = append(rs, coverage.Range{Start: start, End: start + 1 + uint64(rng.IntN(20))})
		}
		c.Ranges = append(c.Ranges, coverage.DestinationRanges{Destination: d, Ranges: rs})
	}
	return c
}

func testAgainstModel(t *testing.T, h Harness) {
	open := h.New(t)
	tier := open(t)
	rng := rand.New(rand.NewPCG(seed(t, h), 0))
	m := model{}
	m.check(t, "empty", tier, durable.Filter{})
	sinks := []string{"raw", "lake", "search"}
	for i := range h.ops(60) {
		c := randomCheckpoint(rng, []string{"pod-a", "pod-b"}[rng.IntN(2)], fmt.Sprintf("ck-%d", i), sinks)
		if err := tier.Append(ctx, c); err != nil {
			t.Fatalf("append %d: %v", i, err)
		}
		m.add(c)
		what := fmt.Sprintf("after append %d", i)
		m.check(t, what, tier, durable.Filter{})
		p := int32(rng.IntN(3))
		m.check(t, what, tier, durable.Filter{Sink: sinks[rng.IntN(3)]})
		m.check(t, what, tier, durable.Filter{Topic: "orders", Partition: &p})
		m.check(t, what, tier, durable.Filter{Sink: "lake", Topic: "users", Partition: &p})
		m.check(t, what, tier, durable.Filter{Partitions: randomPartitions(rng)})
	}
	m.check(t, "from another client", open(t), durable.Filter{})
	checkPartitions(t, m, tier)
}

// randomPartitions is a few partitions, some of them never written to
// (randomCheckpoint writes partitions 0 to 2 of orders and users), some
// listed twice.
func randomPartitions(rng *rand.Rand) []coverage.TopicPartition {
	var out []coverage.TopicPartition
	for range 1 + rng.IntN(4) {
		tp := coverage.TopicPartition{Topic: []string{"orders", "users", "absent"}[rng.IntN(3)], Partition: int32(rng.IntN(5))}
		out = append(out, tp)
		if rng.IntN(4) == 0 {
			out = append(out, tp)
		}
	}
	return out
}

// checkPartitions checks Filter.Partitions: selected and unselected
// partitions, an empty list (no restriction), duplicates, the other fields
// combined by AND, and a list longer than a tier may name one by one.
func checkPartitions(t *testing.T, m model, tier durable.Tier) {
	t.Helper()
	tp := func(topic string, p int32) coverage.TopicPartition {
		return coverage.TopicPartition{Topic: topic, Partition: p}
	}
	one := int32(1)
	var many []coverage.TopicPartition
	for p := range int32(100) {
		many = append(many, tp("absent", p))
	}
	many = append(many, tp("orders", 2), tp("users", 0))
	cases := []struct {
		what string
		f    durable.Filter
	}{
		{"one partition", durable.Filter{Partitions: []coverage.TopicPartition{tp("orders", 1)}}},
		{"two partitions", durable.Filter{Partitions: []coverage.TopicPartition{tp("users", 2), tp("orders", 0)}}},
		{"an unwritten partition", durable.Filter{Partitions: []coverage.TopicPartition{tp("orders", 7)}}},
		{"an unwritten topic", durable.Filter{Partitions: []coverage.TopicPartition{tp("absent", 1)}}},
		{"an empty list", durable.Filter{Partitions: []coverage.TopicPartition{}}},
		{"a partition listed twice", durable.Filter{Partitions: []coverage.TopicPartition{tp("users", 1), tp("users", 1), tp("orders", 2)}}},
		{"with a sink", durable.Filter{Sink: "raw", Partitions: []coverage.TopicPartition{tp("users", 1), tp("orders", 1)}}},
		{"with a topic", durable.Filter{Topic: "orders", Partitions: []coverage.TopicPartition{tp("users", 1), tp("orders", 1)}}},
		{"with a partition", durable.Filter{Partition: &one, Partitions: []coverage.TopicPartition{tp("users", 1), tp("orders", 2)}}},
		{"many partitions", durable.Filter{Partitions: many}},
	}
	for _, c := range cases {
		m.check(t, "partitions: "+c.what, tier, c.f)
	}
}

func testConcurrentWriters(t *testing.T, h Harness) {
	open := h.New(t)
	rng := rand.New(rand.NewPCG(seed(t, h), 1))
	const writers = 4
	per := h.ops(20)
	checkpoints := make([][]durable.Checkpoint, writers)
	m := model{}
	for w := range writers {
		for i := range per {
			// Every writer appends to the same few sink objects or files.
			c := randomCheckpoint(rng, fmt.Sprintf("pod-%d", w), fmt.Sprintf("ck-%d", i), []string{"raw", "lake"})
			checkpoints[w] = append(checkpoints[w], c)
			m.add(c)
		}
	}
	tiers := make([]durable.Tier, writers)
	for w := range tiers {
		tiers[w] = open(t)
	}
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Go(func() {
			for _, c := range checkpoints[w] {
				if err := tiers[w].Append(ctx, c); err != nil {
					errs <- fmt.Errorf("writer %d, %s: %w", w, c.Name, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	m.check(t, "after concurrent appends", open(t), durable.Filter{})
}

func testRetry(t *testing.T, h Harness) {
	tier := h.New(t)(t)
	d := coverage.Destination{Sink: "lake", Topic: "orders"}
	c := durable.Checkpoint{Name: "ck-1", Writer: "pod-a", Ranges: []coverage.DestinationRanges{{Destination: d, Ranges: []coverage.Range{{Start: 0, End: 10}, {Start: 20, End: 30}}}}}
	if ok, err := tier.Landed(ctx, "pod-a", "ck-1"); ok || err != nil {
		t.Fatalf("landed before any append: %v, %v", ok, err)
	}
	if err := tier.Append(ctx, c); err != nil {
		t.Fatal(err)
	}
	// The answer was lost: the writer asks, then appends again.
	if ok, err := tier.Landed(ctx, "pod-a", "ck-1"); !ok || err != nil {
		t.Fatalf("landed after the append: %v, %v", ok, err)
	}
	if ok, err := tier.Landed(ctx, "pod-b", "ck-1"); ok || err != nil {
		t.Fatalf("another writer's name landed: %v, %v", ok, err)
	}
	c.MayHaveLanded = true
	if err := tier.Append(ctx, c); err != nil {
		t.Fatalf("append retried after a lost answer: %v", err)
	}
	m := model{}
	m.add(c)
	m.check(t, "after the retry", tier, durable.Filter{})
	// Another writer may use the same name for its own checkpoint.
	other := c
	other.Writer, other.MayHaveLanded = "pod-b", true
	other.Ranges = []coverage.DestinationRanges{{Destination: d, Ranges: []coverage.Range{{Start: 10, End: 20}}}}
	if err := tier.Append(ctx, other); err != nil {
		t.Fatalf("another writer's checkpoint of the same name: %v", err)
	}
	m.add(other)
	m.check(t, "after another writer's checkpoint", tier, durable.Filter{})
}

func testNameReused(t *testing.T, h Harness) {
	tier := h.New(t)(t)
	d := coverage.Destination{Sink: "lake", Topic: "orders"}
	c := durable.Checkpoint{Name: "ck-1", Writer: "pod-a", Ranges: []coverage.DestinationRanges{{Destination: d, Ranges: []coverage.Range{{Start: 0, End: 10}}}}}
	if err := tier.Append(ctx, c); err != nil {
		t.Fatal(err)
	}
	reused := c
	reused.MayHaveLanded = true
	reused.Ranges = []coverage.DestinationRanges{{Destination: d, Ranges: []coverage.Range{{Start: 0, End: 20}}}}
	if err := tier.Append(ctx, reused); !errors.Is(err, durable.ErrNameReused) {
		t.Fatalf("the same writer and name with other ranges: %v, want ErrNameReused", err)
	}
	m := model{}
	m.add(c)
	m.check(t, "after a reused name", tier, durable.Filter{})
}

func testBadInput(t *testing.T, h Harness) {
	tier := h.New(t)(t)
	good := coverage.Destination{Sink: "lake", Topic: "orders"}
	one := func(d coverage.Destination, r coverage.Range) []coverage.DestinationRanges {
		return []coverage.DestinationRanges{{Destination: d, Ranges: []coverage.Range{r}}}
	}
	cases := []struct {
		name string
		c    durable.Checkpoint
		want error
	}{
		{"no name", durable.Checkpoint{Writer: "w", Ranges: one(good, coverage.Range{Start: 1, End: 2})}, durable.ErrInvalidCheckpoint},
		{"no writer", durable.Checkpoint{Name: "n", Ranges: one(good, coverage.Range{Start: 1, End: 2})}, durable.ErrInvalidCheckpoint},
		{"empty range", durable.Checkpoint{Name: "n", Writer: "w", Ranges: one(good, coverage.Range{Start: 2, End: 2})}, coverage.ErrInvalidRange},
		{"range past MaxBatchEnd", durable.Checkpoint{Name: "n", Writer: "w", Ranges: one(good, coverage.Range{Start: 1, End: coverage.MaxBatchEnd + 1})}, coverage.ErrInvalidRange},
		{"no sink", durable.Checkpoint{Name: "n", Writer: "w", Ranges: one(coverage.Destination{Topic: "t"}, coverage.Range{Start: 1, End: 2})}, coverage.ErrInvalidDestination},
		{"negative partition", durable.Checkpoint{Name: "n", Writer: "w", Ranges: one(coverage.Destination{Sink: "s", Topic: "t", Partition: -1}, coverage.Range{Start: 1, End: 2})}, coverage.ErrInvalidDestination},
	}
	for _, c := range cases {
		if err := tier.Append(ctx, c.c); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
	model{}.check(t, "after bad input", tier, durable.Filter{})
}

func testHostileNames(t *testing.T, h Harness) {
	tier := h.New(t)(t)
	names := []string{"a/b", "a%2Fb", "a_b", "..", ".", "A/B", "sink with spaces", "ünïcode", "a\\b", "x?y#z", "LPT1", string(make([]byte, 0)) + "long-" + fmt.Sprint(make([]int, 40))}
	m := model{}
	for i, sink := range names {
		c := durable.Checkpoint{Name: fmt.Sprintf("ck-%d", i), Writer: "pod-a", Ranges: []coverage.DestinationRanges{
			{Destination: coverage.Destination{Sink: sink, Topic: sink, Partition: int32(i)}, Ranges: []coverage.Range{{Start: uint64(i) * 10, End: uint64(i)*10 + 5}}},
		}}
		if err := tier.Append(ctx, c); err != nil {
			t.Fatalf("sink %q: %v", sink, err)
		}
		m.add(c)
	}
	m.check(t, "hostile names", tier, durable.Filter{})
	for _, sink := range names {
		m.check(t, "hostile names by sink", tier, durable.Filter{Sink: sink})
	}
}
