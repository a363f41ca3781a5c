package fleetsim

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
)

// ErrCoverageMismatch: after the run, the tier's committed coverage was
// not exactly the union of what the pods recorded. More is a lead (silent
// loss once a planner trusts it); less, after every pod drained, is a
// checkpoint that reported success and did not land.
var ErrCoverageMismatch = errors.New("committed coverage is not the union of what the pods recorded")

// Result is what one Run measured. Times are the clock's: fake time in a
// synctest bubble, real time outside one.
type Result struct {
	Pods, RealPods, PartitionsPerPod, Sinks int
	Interval                                time.Duration
	Rounds                                  int

	// Elapsed is from the start of the rounds to the end of the last
	// checkpoint begun in them.
	Elapsed time.Duration
	// Checkpoints landed whole in the rounds; Failed returned an error
	// (their ranges stayed pending); Skipped ticks passed while a
	// checkpoint ran.
	Checkpoints, Failed, Skipped int
	// DrainCheckpoints ran after the rounds, one pod at a time.
	DrainCheckpoints int
	// P50, P99 and Max are the checkpoints' latencies in the rounds,
	// failed ones too.
	P50, P99, Max time.Duration
	// Tier is what the tier's counters (Options.Stats) added in the rounds.
	Tier Counters
	// CPU is the process's CPU time (user and system) over the rounds: real
	// time spent, whatever the clock.
	CPU time.Duration
	// Compactions ran while pods ran; CompactionFailures of them failed.
	Compactions, CompactionFailures int
	// Destinations and Batches are what the pods recorded: destinations
	// with coverage, batches per partition summed.
	Destinations int
	Batches      uint64
	// Extra are Options.Extra's figures.
	Extra map[string]float64 `json:",omitempty"`
}

// Offered is the checkpoints a second the pods asked for: one per pod per
// interval.
func (r Result) Offered() float64 { return float64(r.Pods) / r.Interval.Seconds() }

// Achieved is the checkpoints a second that landed in the rounds.
func (r Result) Achieved() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Checkpoints) / r.Elapsed.Seconds()
}

// Bound is the updates a second one key allows when each update's read and
// write serialize on it: 1/Window. Zero without a window.
func (r Result) Bound() float64 {
	if r.Tier.Window <= 0 {
		return 0
	}
	return 1 / r.Tier.Window.Seconds()
}

// per is n over the checkpoints that landed.
func (r Result) per(n int64) float64 { return float64(n) / float64(max(r.Checkpoints, 1)) }

// WrittenPer, ReadPer and RequestsPer are the tier's bytes and requests
// per landed checkpoint.
func (r Result) WrittenPer() float64  { return r.per(r.Tier.BytesWritten) }
func (r Result) ReadPer() float64     { return r.per(r.Tier.BytesRead) }
func (r Result) RequestsPer() float64 { return r.per(r.Tier.Requests) }

// String is the result as lines for a terminal.
func (r Result) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d pods (%d real) x %d partitions x %d sinks, every %v for %d rounds\n",
		r.Pods, r.RealPods, r.PartitionsPerPod, r.Sinks, r.Interval, r.Rounds)
	fmt.Fprintf(&b, "  checkpoints/s offered %.1f, achieved %.1f (%d landed, %d failed, %d ticks skipped, %d drained after)\n",
		r.Offered(), r.Achieved(), r.Checkpoints, r.Failed, r.Skipped, r.DrainCheckpoints)
	fmt.Fprintf(&b, "  latency p50 %v, p99 %v, max %v; lost races %d (%.2f/ckpt)\n",
		r.P50.Round(time.Millisecond), r.P99.Round(time.Millisecond), r.Max.Round(time.Millisecond), r.Tier.LostRaces, r.per(r.Tier.LostRaces))
	fmt.Fprintf(&b, "  per checkpoint: %.0f B written, %.0f B read, %.1f requests; retained %d\n",
		r.WrittenPer(), r.ReadPer(), r.RequestsPer(), r.Tier.Retained)
	if r.Tier.Window > 0 {
		fmt.Fprintf(&b, "  one key's read-to-write window %v: at most %.1f updates/s serialized\n", r.Tier.Window.Round(time.Millisecond), r.Bound())
	}
	fmt.Fprintf(&b, "  CPU %.1f s; compactions %d (%d failed); %d destinations, %d batches recorded\n",
		r.CPU.Seconds(), r.Compactions, r.CompactionFailures, r.Destinations, r.Batches)
	for _, k := range slices.Sorted(maps.Keys(r.Extra)) {
		fmt.Fprintf(&b, "  %s %.2f\n", k, r.Extra[k])
	}
	return b.String()
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// Run runs the fleet: every pod checkpoints into the tier for the rounds
// (and the compactor runs beside them), then each pod alone checkpoints
// what failed checkpoints left, the compactor runs once more, and the
// tier's committed coverage, read through a fresh handle, must be exactly
// the union of what the pods recorded (ErrCoverageMismatch otherwise).
//
// Inside a synctest bubble the tier's waits pass in fake time; the
// figures are then the modelled latencies', and CPU the real cost.
func Run(ctx context.Context, opts Options) (Result, error) {
	opts.EnsureDefaults()
	if err := opts.Validate(); err != nil {
		return Result{}, err
	}
	res := Result{Pods: opts.Pods, RealPods: opts.RealPods, PartitionsPerPod: opts.PartitionsPerPod, Sinks: opts.Sinks,
		Interval: opts.Interval, Rounds: opts.Rounds}
	pods := make([]*pod, opts.Pods)
	for i := range pods {
		tier, err := opts.OpenTier(ctx, i)
		if err != nil {
			return res, fmt.Errorf("fleetsim: opening pod %d's tier: %w", i, err)
		}
		pods[i] = newPod(&opts, i, tier)
	}
	// The real pods are spread over the fleet, not its first shares.
	for k := range opts.RealPods {
		if err := pods[k*opts.Pods/opts.RealPods].openReal(); err != nil {
			closePods(pods)
			return res, err
		}
	}
	defer closePods(pods)

	var before Counters
	if opts.Stats != nil {
		before = opts.Stats()
	}
	cpu0 := cpuTime()
	start := time.Now()
	stop := make(chan struct{})
	compacted := make(chan struct{})
	go func() {
		defer close(compacted)
		if opts.Compactor == nil {
			return
		}
		t := time.NewTicker(opts.CompactEvery)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
			}
			res.Compactions++
			if err := opts.Compactor(ctx); err != nil {
				res.CompactionFailures++
				opts.Logger.Warn("fleetsim: compaction failed", "err", err)
			}
		}
	}()
	var wg sync.WaitGroup
	finished := make([]time.Time, len(pods))
	errs := make([]error, len(pods))
	for i, p := range pods {
		wg.Go(func() { finished[i], errs[i] = p.run(ctx, start) })
	}
	wg.Wait()
	close(stop)
	<-compacted
	res.CPU = cpuTime() - cpu0
	if opts.Stats != nil {
		res.Tier = opts.Stats().sub(before)
	}
	if opts.Extra != nil {
		res.Extra = opts.Extra()
	}
	if err := errors.Join(errs...); err != nil {
		return res, err
	}
	var lat []time.Duration
	for i, p := range pods {
		res.Elapsed = max(res.Elapsed, finished[i].Sub(start))
		res.Checkpoints += p.ok
		res.Failed += p.failed
		res.Skipped += p.skipped
		res.Batches += p.recordedBatches
		lat = append(lat, p.latencies...)
	}
	slices.Sort(lat)
	if n := len(lat); n > 0 {
		res.P50, res.P99, res.Max = lat[n/2], lat[min(n-1, n*99/100)], lat[n-1]
	}
	opts.Logger.Info("fleetsim: rounds done; draining", "failed", res.Failed)

	for _, p := range pods {
		if err := p.drain(ctx); err != nil {
			return res, err
		}
		res.DrainCheckpoints += p.drainCheckpoints
	}
	if opts.Compactor != nil {
		if err := opts.Compactor(ctx); err != nil {
			return res, fmt.Errorf("fleetsim: the final compaction: %w", err)
		}
	}
	reader, err := opts.OpenTier(ctx, -1)
	if err != nil {
		return res, fmt.Errorf("fleetsim: opening the reader's tier: %w", err)
	}
	res.Destinations, err = check(ctx, reader, pods)
	return res, err
}

func closePods(pods []*pod) {
	for _, p := range pods {
		if p != nil && p.mirror != nil {
			_ = p.mirror.Close()
			p.mirror = nil
		}
	}
}

// check compares the tier's coverage with every pod's model, exactly. It
// returns how many destinations have coverage.
func check(ctx context.Context, tier durable.Tier, pods []*pod) (int, error) {
	got, err := tier.Coverage(ctx, durable.Filter{})
	if err != nil {
		return 0, fmt.Errorf("fleetsim: reading the committed coverage from %s: %w", tier.Name(), err)
	}
	var bad []string
	mismatches, recorded := 0, 0
	for _, p := range pods {
		for i, d := range p.dests {
			want := p.model[i]
			var have []coverage.Range
			if set := got[d]; set != nil {
				have = set.Ranges()
			}
			if len(want) > 0 {
				recorded++
			}
			if !slices.Equal(want, have) {
				if mismatches++; len(bad) < 5 {
					bad = append(bad, fmt.Sprintf("%s (%s): recorded %v, committed %v", d, p.name, want, have))
				}
			}
		}
	}
	held := 0
	for _, set := range got {
		if set != nil && !set.IsEmpty() {
			held++
		}
	}
	// With every pod's destinations equal, any more held are destinations
	// no pod recorded: leads.
	if mismatches == 0 && held != recorded {
		mismatches = held - recorded
		bad = append(bad, fmt.Sprintf("the tier holds coverage of %d destinations no pod recorded", held-recorded))
	}
	if mismatches > 0 {
		return held, fmt.Errorf("fleetsim: %s: %w: %d destinations differ: %s", tier.Name(), ErrCoverageMismatch, mismatches, strings.Join(bad, "; "))
	}
	return recorded, nil
}
