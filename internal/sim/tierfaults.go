package sim

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/gapstate"
)

// drawTierRates draws the faults at the durable.Tier seam and the
// PostgreSQL tier's MaxAttempts from a stream of the seed's own, as
// drawObjectRates does: the step stream, and so the iceberg and object
// runs of the same seed, stay as they were.
func drawTierRates(seed uint64, rates *Rates) {
	r := rand.New(rand.NewPCG(seed, 0x7e2))
	p := func(max float64) float64 {
		if r.IntN(4) == 0 {
			return 0 // this fault absent for the whole run
		}
		return r.Float64() * max
	}
	rates.TierAppend, rates.TierAppendLost, rates.TierRead = p(0.2), p(0.2), p(0.1)
	rates.PostgresAbort = p(0.3)
	// Aborted transactions are run again up to MaxAttempts: at 10 (the
	// default) an injected run of aborts is nearly always absorbed; at 1
	// every one reaches the Mirror as an error (rolled back, so the
	// checkpoint stays pending).
	rates.PostgresMaxAttempts = []int{1, 2, 3, 10}[r.IntN(4)]
}

var errTierDown = errors.New("sim: injected durable tier fault")

// faultTier is any durable tier behind the faults of the seam itself: an
// Append refused before it reaches the tier (nothing written), an Append
// applied whose answer is lost (the tier returned nil; the caller sees an
// error of unknown outcome), and a Coverage or Landed that fails. It draws
// from the faults' tier stream: the pods, the planner and the replicator
// call it from the step's goroutine alone, so a seed replays the same
// faults at the same calls. It keeps the inner tier's gap states behind
// the same faults (AppendStates as Append, States as Coverage), and hides
// its other optional capabilities (snapshot expiry, last writes); the sim
// uses none of them through it.
type faultTier struct {
	durable.Tier
	f *faults
}

func (t *faultTier) Append(ctx context.Context, c durable.Checkpoint) error {
	if t.f.draw(t.f.tierRnd, "tier append refused", t.f.rates.TierAppend) {
		return fmt.Errorf("append %q of %q to %s: %w", c.Name, c.Writer, t.Name(), errors.Join(errTierDown, errors.New("dial tcp: connect: connection refused")))
	}
	if err := t.Tier.Append(ctx, c); err != nil {
		return err
	}
	if t.f.draw(t.f.tierRnd, "tier append landed, answer lost", t.f.rates.TierAppendLost) {
		return fmt.Errorf("append %q of %q to %s: outcome unknown: %w", c.Name, c.Writer, t.Name(), errors.Join(errTierDown, errors.New("unexpected EOF")))
	}
	return nil
}

func (t *faultTier) Coverage(ctx context.Context, f durable.Filter) (map[coverage.Destination]*coverage.RangeSet, error) {
	if t.f.draw(t.f.tierRnd, "tier coverage failed", t.f.rates.TierRead) {
		return nil, fmt.Errorf("coverage of %s: %w", t.Name(), errors.Join(errTierDown, errors.New("read tcp: connection reset by peer")))
	}
	return t.Tier.Coverage(ctx, f)
}

func (t *faultTier) Landed(ctx context.Context, writer, name string) (bool, error) {
	if t.f.draw(t.f.tierRnd, "tier landed failed", t.f.rates.TierRead) {
		return false, fmt.Errorf("landed %q of %q on %s: %w", name, writer, t.Name(), errors.Join(errTierDown, errors.New("read tcp: connection reset by peer")))
	}
	return t.Tier.Landed(ctx, writer, name)
}

var _ durable.StateStore = (*faultTier)(nil)

// AppendStates is the inner tier's, behind Append's faults: refused before
// it reaches the tier, or applied and its answer lost. An inner tier that
// keeps no states says so (durable.ErrNoStates).
func (t *faultTier) AppendStates(ctx context.Context, events []gapstate.Event) error {
	s, err := durable.StatesOf(t.Tier)
	if err != nil {
		return err
	}
	if t.f.draw(t.f.tierRnd, "tier append states refused", t.f.rates.TierAppend) {
		return fmt.Errorf("append %d gap states to %s: %w", len(events), t.Name(), errors.Join(errTierDown, errors.New("dial tcp: connect: connection refused")))
	}
	if err := s.AppendStates(ctx, events); err != nil {
		return err
	}
	if t.f.draw(t.f.tierRnd, "tier append states landed, answer lost", t.f.rates.TierAppendLost) {
		return fmt.Errorf("append %d gap states to %s: outcome unknown: %w", len(events), t.Name(), errors.Join(errTierDown, errors.New("unexpected EOF")))
	}
	return nil
}

// States is the inner tier's, behind Coverage's read fault.
func (t *faultTier) States(ctx context.Context, f durable.Filter) ([]gapstate.Event, error) {
	s, err := durable.StatesOf(t.Tier)
	if err != nil {
		return nil, err
	}
	if t.f.draw(t.f.tierRnd, "tier states failed", t.f.rates.TierRead) {
		return nil, fmt.Errorf("gap states of %s: %w", t.Name(), errors.Join(errTierDown, errors.New("read tcp: connection reset by peer")))
	}
	return s.States(ctx, f)
}
