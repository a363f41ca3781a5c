package pod

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/gapstate"
	"github.com/covmirror/covmirror/local"
	"github.com/covmirror/covmirror/mirror"
	"github.com/covmirror/covmirror/tier"
)

// downTier is a real durable tier behind a switch: while down, Append and
// Landed fail before they reach it, as a tier whose network is cut.
type downTier struct {
	durable.Tier
	down   atomic.Bool
	landed atomic.Int64 // Landed calls that reached the tier
}

var errCut = errors.New("injected: connection refused")

func (t *downTier) Append(ctx context.Context, c durable.Checkpoint) error {
	if t.down.Load() {
		return errCut
	}
	return t.Tier.Append(ctx, c)
}

// AppendStates and States keep the inner tier's gap states reachable
// through the switch, cut with the rest.
func (t *downTier) AppendStates(ctx context.Context, events []gapstate.Event) error {
	if t.down.Load() {
		return errCut
	}
	s, err := durable.StatesOf(t.Tier)
	if err != nil {
		return err
	}
	return s.AppendStates(ctx, events)
}

func (t *downTier) States(ctx context.Context, f durable.Filter) ([]gapstate.Event, error) {
	if t.down.Load() {
		return nil, errCut
	}
	s, err := durable.StatesOf(t.Tier)
	if err != nil {
		return nil, err
	}
	return s.States(ctx, f)
}

func (t *downTier) Landed(ctx context.Context, writer, name string) (bool, error) {
	if t.down.Load() {
		return false, errCut
	}
	t.landed.Add(1)
	return t.Tier.Landed(ctx, writer, name)
}

// TestReadinessReasons walks a pod's readiness through the states /readyz
// reports, on a real local tier, Mirror and object tier with the tier's
// network cut and restored. The clock is readiness's own, set ahead of the
// Mirror's by an offset in hours, so that no step depends on how long the
// test runs.
func TestReadinessReasons(t *testing.T) {
	ctx := context.Background()
	ts := tier.Settings{Kind: tier.Object, State: t.TempDir(), Writer: "pod-a"}
	ts.EnsureDefaults()
	inner, closer, err := tier.Open(ctx, ts, true)
	if err != nil {
		t.Fatal(err)
	}
	defer closer.Close()
	dt := &downTier{Tier: inner}
	store, err := local.Open(local.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	m, err := mirror.New(mirror.Options{Local: store, Durable: dt, Writer: "pod-a", Interval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	var ahead time.Duration
	r := &readiness{store: store, mirror: m, tier: dt, writer: "pod-a", interval: time.Hour, maxAge: 3 * time.Hour,
		started: time.Now(), now: func() time.Time { return time.Now().Add(ahead) }}
	check := func(step string, want ...string) {
		t.Helper()
		got := r.reasons(ctx)
		ok := len(got) == len(want)
		for i := 0; ok && i < len(want); i++ {
			ok = strings.HasPrefix(got[i], want[i])
		}
		if !ok {
			t.Fatalf("%s: reasons %q, want ones starting %q", step, got, want)
		}
	}
	record := func(start uint64) {
		t.Helper()
		if err := m.Record(ctx, coverage.Destination{Sink: "raw", Topic: "t"}, coverage.Range{Start: start, End: start + 10}); err != nil {
			t.Fatal(err)
		}
	}

	check("a fresh pod (the tier answers a ping)")
	if dt.landed.Load() != 1 {
		t.Fatalf("a fresh pod pinged the tier %d times, want 1", dt.landed.Load())
	}
	record(0)
	if _, err := m.Checkpoint(ctx); err != nil {
		t.Fatal(err)
	}
	ahead = 30 * time.Minute
	check("half an interval after a checkpoint reached the tier")
	if dt.landed.Load() != 1 {
		t.Fatal("a checkpoint within the interval did not spare the ping")
	}

	dt.down.Store(true)
	ahead = 2 * time.Hour
	check("the tier cut, two intervals on", "durable-tier: ")
	if got := r.reasons(ctx)[0]; !strings.Contains(got, dt.Name()) || !strings.Contains(got, errCut.Error()) {
		t.Fatalf("the durable-tier reason %q names neither the tier nor the error", got)
	}
	record(10)
	if _, err := m.Checkpoint(ctx); err == nil {
		t.Fatal("a checkpoint into a cut tier succeeded")
	}
	ahead = 4 * time.Hour
	check("a failed checkpoint, past the age bound", "durable-tier: ", "checkpoint-age: ")
	if got := r.reasons(ctx)[1]; !strings.Contains(got, "1 failed in a row") || !strings.Contains(got, errCut.Error()) {
		t.Fatalf("the checkpoint-age reason %q lacks the failures", got)
	}

	dt.down.Store(false)
	ahead += 2 * time.Second // past the reuse of the last failed ping
	check("the tier back, the age still past", "checkpoint-age: ")
	if _, err := m.Checkpoint(ctx); err != nil {
		t.Fatal(err)
	}
	ahead = 0
	check("the pending checkpoint landed")

	r.draining.Store(true)
	check("shutting down", "shutting-down: ")
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	check("the local tier closed", "shutting-down: ", "local-tier: ")
	if err := r.live(); err != nil {
		t.Fatalf("/healthz of a pod whose store closed at shutdown: %v", err)
	}
}
