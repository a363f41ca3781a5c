package fleetsim

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/local"
	"github.com/covmirror/covmirror/mirror"
)

// pod is one pod's share of the fleet: its destinations, the batches its
// sinks recorded (the model the final check compares with) and, for a
// simulated pod, what it has not yet checkpointed.
type pod struct {
	id     int
	name   string
	rng    *rand.Rand
	opts   *Options
	dests  []coverage.Destination // partition-major: partition k's sinks at k*Sinks...
	order  []int                  // dests' indexes in destination order
	next   []uint64               // per owned partition: the next batch id
	model  [][]coverage.Range     // per destination: every recorded range, ascending, merged
	tier   durable.Tier
	mirror *mirror.Mirror // set for a real pod

	pending [][]coverage.Range // per destination, a simulated pod's ranges not yet landed
	seq     int                // checkpoints named so far

	latencies           []time.Duration
	ok, failed, skipped int
	recordedBatches     uint64
	drainCheckpoints    int
}

func newPod(o *Options, id int, tier durable.Tier) *pod {
	p := &pod{id: id, name: fmt.Sprintf("pod-%04d", id), rng: rand.New(rand.NewPCG(o.Seed, uint64(id)+1)), opts: o, tier: tier}
	first := id * o.PartitionsPerPod
	for k := range o.PartitionsPerPod {
		g := first + k
		topic := fmt.Sprintf("topic-%03d", g/o.PartitionsPerTopic)
		for s := range o.Sinks {
			p.dests = append(p.dests, coverage.Destination{Sink: sinkName(s), Topic: topic, Partition: int32(g % o.PartitionsPerTopic)})
		}
	}
	p.order = make([]int, len(p.dests))
	for i := range p.order {
		p.order[i] = i
	}
	slices.SortFunc(p.order, func(a, b int) int { return p.dests[a].Compare(p.dests[b]) })
	p.next = make([]uint64, o.PartitionsPerPod)
	p.model = make([][]coverage.Range, len(p.dests))
	p.pending = make([][]coverage.Range, len(p.dests))
	return p
}

// sinkName is the s-th sink's name: raw first.
func sinkName(s int) string {
	if s == 0 {
		return coverage.RawSink
	}
	return fmt.Sprintf("sink-%d", s)
}

// openReal makes p a real pod: a Mirror over a Pebble store in memory.
func (p *pod) openReal() error {
	l, err := local.Open(local.Options{Dir: p.name, FS: vfs.NewMem(), Logger: p.opts.Logger})
	if err != nil {
		return fmt.Errorf("fleetsim: %s's local tier: %w", p.name, err)
	}
	m, err := mirror.New(mirror.Options{Local: l, Durable: p.tier, Writer: p.name, Interval: p.opts.Interval,
		ExpireEvery: -1, Logger: p.opts.Logger})
	if err != nil {
		_ = l.Close()
		return fmt.Errorf("fleetsim: %s's mirror: %w", p.name, err)
	}
	p.mirror = m
	return nil
}

// add appends r to a destination's ascending list, joining it to the last
// range it touches. Batch ids only grow per partition, so the list stays
// merged.
func add(list []coverage.Range, r coverage.Range) []coverage.Range {
	if n := len(list); n > 0 && list[n-1].End == r.Start {
		list[n-1].End = r.End
		return list
	}
	return append(list, r)
}

// generate draws one interval's batches for every partition the pod owns
// and records what each sink holds: raw every batch, each other sink every
// batch it did not fail. A simulated pod keeps them pending; a real pod's
// are returned, for its local tier.
func (p *pod) generate() []coverage.Entry {
	o := p.opts
	var entries []coverage.Entry
	for k := range p.next {
		n := uint64(1 + p.rng.IntN(2*o.Batches-1))
		start := p.next[k] + 1 // batch ids from 1
		p.next[k] += n
		p.recordedBatches += n
		for s := range o.Sinks {
			i := k*o.Sinks + s
			emit := func(r coverage.Range) {
				p.model[i] = add(p.model[i], r)
				if p.mirror != nil {
					entries = append(entries, coverage.Entry{Destination: p.dests[i], Range: r})
				} else {
					p.pending[i] = add(p.pending[i], r)
				}
			}
			if s == 0 || o.SinkFailure == 0 {
				emit(coverage.Range{Start: start, End: start + n})
				continue
			}
			run := start
			for b := start; b < start+n; b++ {
				if p.rng.Float64() < o.SinkFailure {
					if b > run {
						emit(coverage.Range{Start: run, End: b})
					}
					run = b + 1
				}
			}
			if run < start+n {
				emit(coverage.Range{Start: run, End: start + n})
			}
		}
	}
	return entries
}

// record draws one interval's batches; a real pod records them in its
// local tier, after its sinks' acks as a pipeline does.
func (p *pod) record(ctx context.Context) error {
	entries := p.generate()
	if p.mirror == nil || len(entries) == 0 {
		return nil
	}
	_, err := p.mirror.RecordBatch(ctx, entries)
	return err
}

// checkpoint runs one checkpoint: a real pod's Mirror.Checkpoint, or a
// simulated pod's Append of everything pending under a fresh name. It
// reports whether it landed whole.
func (p *pod) checkpoint(ctx context.Context) (bool, error) {
	if p.mirror != nil {
		_, err := p.mirror.Checkpoint(ctx)
		return err == nil, nil // a failed checkpoint stays pending in the Mirror
	}
	// In destination order, as a real pod's local tier hands its pending
	// ranges over.
	c := durable.Checkpoint{Writer: p.name}
	for _, i := range p.order {
		if rs := p.pending[i]; len(rs) > 0 {
			// A copy: the tier may keep what it was given, and pending grows in place.
			c.Ranges = append(c.Ranges, coverage.DestinationRanges{Destination: p.dests[i], Ranges: slices.Clone(rs)})
		}
	}
	if len(c.Ranges) == 0 {
		return true, nil
	}
	p.seq++
	c.Name = fmt.Sprintf("ckpt-%06d", p.seq)
	err := p.tier.Append(ctx, c)
	var partial *durable.PartialError
	switch {
	case err == nil:
		clear(p.pending)
		return true, nil
	case errors.Is(err, durable.ErrNameReused), errors.Is(err, durable.ErrInvalidCheckpoint), errors.Is(err, coverage.ErrInvalidRange):
		return false, fmt.Errorf("fleetsim: %s: %w", p.name, err) // the harness's defect, not the tier's load
	case errors.As(err, &partial):
		landed := map[coverage.Destination]bool{}
		for _, d := range partial.Landed {
			landed[d] = true
		}
		for i, d := range p.dests {
			if landed[d] {
				p.pending[i] = nil
			}
		}
	}
	// Kept pending: the next checkpoint carries it under another name,
	// harmless if this one landed after all (a union).
	return false, nil
}

// run is the pod's rounds: at each tick of its phase it records the
// intervals since its last tick and checkpoints. A tick that passed while a
// checkpoint ran is skipped.
func (p *pod) run(ctx context.Context, start time.Time) (time.Time, error) {
	o := p.opts
	phase := time.Duration(p.rng.Int64N(int64(o.Interval) + 1))
	origin := start.Add(phase)
	end := start.Add(time.Duration(o.Rounds) * o.Interval)
	last := -1 // the last tick recorded
	tick := 0
	finished := start
	for {
		at := origin.Add(time.Duration(tick) * o.Interval)
		if !at.Before(end) {
			return finished, nil
		}
		if err := wait(ctx, time.Until(at)); err != nil {
			return finished, err
		}
		for range tick - last {
			if err := p.record(ctx); err != nil {
				return finished, fmt.Errorf("fleetsim: %s: recording: %w", p.name, err)
			}
		}
		p.skipped += tick - last - 1
		last = tick
		began := time.Now()
		ok, err := p.checkpoint(ctx)
		if err != nil {
			return finished, err
		}
		finished = time.Now()
		p.latencies = append(p.latencies, finished.Sub(began))
		if ok {
			p.ok++
		} else {
			p.failed++
		}
		tick = int(finished.Sub(origin)/o.Interval) + 1
	}
}

// drain checkpoints until nothing is pending, at most DrainAttempts times.
func (p *pod) drain(ctx context.Context) error {
	for range p.opts.DrainAttempts {
		if p.mirror == nil && !p.anyPending() {
			return nil
		}
		p.drainCheckpoints++
		ok, err := p.checkpoint(ctx)
		if err != nil {
			return err
		}
		if ok {
			// Nothing was recorded since: everything pending landed.
			return nil
		}
	}
	return fmt.Errorf("fleetsim: %s: its ranges did not land in %d checkpoints alone on the tier", p.name, p.opts.DrainAttempts)
}

func (p *pod) anyPending() bool {
	for _, rs := range p.pending {
		if len(rs) > 0 {
			return true
		}
	}
	return false
}
