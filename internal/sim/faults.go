package sim

import (
	"context"
	"errors"
	"maps"
	"math/rand/v2"
	"slices"
	"sync"

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"

	"github.com/covmirror/covmirror/internal/faultio"
)

// Rates are the probabilities of each fault while faults are on; a run
// draws its own from its seed, so that some runs are calm and some stormy.
type Rates struct {
	LocalWrite    float64 // a write, sync, create, rename ... of the local tier's filesystem fails
	Warehouse     float64 // a create, write or close of a warehouse file fails
	WarehouseLost float64 // ... is carried out, and failure reported anyway
	CatalogLoad   float64 // a table load fails
	CatalogCommit float64 // a commit is refused before it reaches the catalog
	AnswerLost    float64 // a commit lands, and its answer is lost
	SinkWrite     float64 // a sink write is refused (besides outages)
	RawWrite      float64 // a raw write is refused: the batch is not acked

	// The object backend's faults, drawn only by runs on it (from a stream
	// of their own, so that the iceberg runs' draws are unchanged).
	ObjectGet         float64 // a Get of a sink object fails
	ObjectPut         float64 // a Put is refused before it is applied: an error of unknown outcome
	ObjectPutLost     float64 // a Put is applied, and its answer lost
	ObjectPrecond     float64 // a Put is refused with a spurious ErrPrecondition, nothing written
	ObjectList        float64 // a List fails
	ObjectMaxAttempts int     // the object store's MaxAttempts: low ones let faults reach the Mirror

	// The faults at the durable.Tier seam and the PostgreSQL tier's, drawn
	// only by runs on it (from a stream of their own, likewise).
	TierAppend          float64 // an Append is refused before it reaches the tier: nothing written
	TierAppendLost      float64 // an Append is applied, and its answer lost
	TierRead            float64 // a Coverage or Landed fails
	PostgresAbort       float64 // an Append's transaction is aborted as a serialization failure, 1 to 4 times in a row
	PostgresMaxAttempts int     // the PostgreSQL tier's MaxAttempts: low ones let the aborts reach the Mirror

	// The gap state store's faults, drawn by every run from a stream of
	// their own.
	StateAppend     float64 // an AppendStates is refused before it reaches the store
	StateAppendLost float64 // an AppendStates is applied, and its answer lost
	StateRead       float64 // a States read fails
}

func drawRates(r *rand.Rand) Rates {
	p := func(max float64) float64 {
		if r.IntN(4) == 0 {
			return 0 // this layer calm for the whole run
		}
		return r.Float64() * max
	}
	// A checkpoint makes some 30 warehouse operations and a few hundred
	// filesystem writes: these maxima fail a good share of them.
	return Rates{LocalWrite: p(0.02), Warehouse: p(0.01), WarehouseLost: p(0.005), CatalogLoad: p(0.1),
		CatalogCommit: p(0.15), AnswerLost: p(0.15), SinkWrite: p(0.1), RawWrite: p(0.05)}
}

// faults injects faults into the layers under the pod while on, and
// counts them by kind. Pebble and iceberg-go call it from their own
// goroutines, so its random draws are its own (one stream per layer):
// the run's sequence of steps stays the seed's whatever those goroutines do.
type faults struct {
	rates Rates
	ware  *faultio.Injector

	mu       sync.Mutex
	on       bool
	fsRand   *rand.Rand
	catRnd   *rand.Rand
	objRnd   *rand.Rand
	tierRnd  *rand.Rand
	stateRnd *rand.Rand
	counts   map[string]int
}

func newFaults(seed uint64, rates Rates) *faults {
	return &faults{rates: rates, ware: faultio.New(seed ^ 0x57a3),
		fsRand: rand.New(rand.NewPCG(seed, 0xf5)), catRnd: rand.New(rand.NewPCG(seed, 0xca7)),
		objRnd: rand.New(rand.NewPCG(seed, 0x0b1)), tierRnd: rand.New(rand.NewPCG(seed, 0x7e1)),
		stateRnd: rand.New(rand.NewPCG(seed, 0x57a)),
		counts:   map[string]int{}}
}

// set turns faults on or off in every layer.
func (f *faults) set(on bool) {
	f.mu.Lock()
	f.on = on
	f.mu.Unlock()
	f.ware.Clear()
	if on {
		for _, op := range []faultio.Op{faultio.Create, faultio.Write, faultio.Close} {
			// A rule of probability zero would fail every operation.
			if f.rates.Warehouse > 0 {
				f.ware.Add(faultio.Rule{Op: op, Prob: f.rates.Warehouse})
			}
			if f.rates.WarehouseLost > 0 {
				f.ware.Add(faultio.Rule{Op: op, Prob: f.rates.WarehouseLost, AfterSuccess: true})
			}
		}
	}
}

// draw reports whether a fault of kind strikes with probability p, and
// counts it.
func (f *faults) draw(r *rand.Rand, kind string, p float64) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.on || p == 0 || r.Float64() >= p {
		return false
	}
	f.counts[kind]++
	return true
}

// drawN is draw for a fault that comes in runs: with probability p, a
// run of 1 to max, else 0. Nothing is counted: the caller counts what of
// the run struck (add).
func (f *faults) drawN(r *rand.Rand, p float64, max int) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.on || p == 0 || r.Float64() >= p {
		return 0
	}
	return 1 + r.IntN(max)
}

// add counts n faults of kind.
func (f *faults) add(kind string, n int) {
	if n <= 0 {
		return
	}
	f.mu.Lock()
	f.counts[kind] += n
	f.mu.Unlock()
}

// sim draws a fault of the simulated pipeline itself, from the step stream.
func (f *faults) sim(r *rand.Rand, kind string, p float64) bool { return f.draw(r, kind, p) }

// fs is the local tier's errorfs injector: writes of every kind may fail.
func (f *faults) fs() errorfs.Injector {
	return errorfs.InjectorFunc(func(op errorfs.Op) error {
		if op.Kind.ReadOrWrite() != errorfs.OpIsWrite {
			return nil
		}
		if f.draw(f.fsRand, "local "+fsOpNames[op.Kind], f.rates.LocalWrite) {
			return errorfs.ErrInjected
		}
		return nil
	})
}

// fsOpNames name errorfs's write operations in the fault counts.
var fsOpNames = map[errorfs.OpKind]string{
	errorfs.OpCreate: "create", errorfs.OpLink: "link", errorfs.OpRemove: "remove", errorfs.OpRemoveAll: "remove-all",
	errorfs.OpRename: "rename", errorfs.OpReuseForWrite: "reuse", errorfs.OpMkdirAll: "mkdir", errorfs.OpLock: "lock",
	errorfs.OpFileClose: "close", errorfs.OpFileWrite: "write", errorfs.OpFileWriteAt: "write", errorfs.OpFileSync: "sync",
	errorfs.OpFileSyncData: "sync", errorfs.OpFileSyncTo: "sync", errorfs.OpFileFlush: "flush", errorfs.OpFilePreallocate: "preallocate",
}

// Counts are the faults injected so far, by kind.
func (f *faults) Counts() map[string]int {
	f.mu.Lock()
	out := maps.Clone(f.counts)
	f.mu.Unlock()
	for _, e := range f.ware.Events() {
		kind := "warehouse " + e.Op.String()
		if e.AfterSuccess {
			kind += " (done, answer lost)"
		}
		out[kind]++
	}
	return out
}

var errCatalogDown = errors.New("sim: injected catalog fault")

// faultCatalog is the real catalog with the faults a remote catalog shows:
// loads that fail, commits refused before they reach it, and commits that
// land but whose answer is lost. It sits under faultio's wrapper, whose
// tables commit through it.
type faultCatalog struct {
	catalog.Catalog
	f *faults
}

func (c *faultCatalog) LoadTable(ctx context.Context, id table.Identifier) (*table.Table, error) {
	if c.f.draw(c.f.catRnd, "catalog load refused", c.f.rates.CatalogLoad) {
		return nil, errors.Join(errCatalogDown, errors.New("dial tcp: connect: connection refused"))
	}
	return c.Catalog.LoadTable(ctx, id)
}

func (c *faultCatalog) CommitTable(ctx context.Context, id table.Identifier, reqs []table.Requirement, updates []table.Update) (table.Metadata, string, error) {
	if c.f.draw(c.f.catRnd, "catalog commit refused", c.f.rates.CatalogCommit) {
		return nil, "", errors.Join(errCatalogDown, errors.New("write tcp: broken pipe"))
	}
	meta, loc, err := c.Catalog.CommitTable(ctx, id, reqs, updates)
	if err == nil && c.f.draw(c.f.catRnd, "catalog commit landed, answer lost", c.f.rates.AnswerLost) {
		return nil, "", errors.Join(errCatalogDown, errors.New("unexpected EOF"))
	}
	return meta, loc, err
}

// sortedKinds lists counts' kinds in order.
func sortedKinds(counts map[string]int) []string { return slices.Sorted(maps.Keys(counts)) }
