package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/gapstate"
	"github.com/covmirror/covmirror/recovery"
	"github.com/covmirror/covmirror/tier"
)

// The commands' tests run on a tier that keeps gap states: the tier itself
// where it implements durable.StateStore, else fileStates beside it, a
// stand-in with the contract's semantics (validate all first, one copy per
// ID, filter as Coverage's). Once every tier keeps states it never wraps.
func init() {
	openTier = func(ctx context.Context, s tier.Settings, writing bool) (durable.Tier, io.Closer, error) {
		t, c, err := tier.Open(ctx, s, writing)
		if err != nil {
			return t, c, err
		}
		if _, err := durable.StatesOf(t); err == nil {
			return t, c, nil
		}
		state := s.State
		if state == "" {
			state = tier.DefaultState
		}
		return &fileStates{Tier: t, path: filepath.Join(state, "gap-states-test.json")}, c, nil
	}
}

// fileStates adds a StateStore to a tier that lacks one, kept in a JSON
// file.
type fileStates struct {
	durable.Tier
	path string
}

func (f *fileStates) load() ([]gapstate.Event, error) {
	b, err := os.ReadFile(f.path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	var events []gapstate.Event
	return events, json.Unmarshal(b, &events)
}

func (f *fileStates) AppendStates(_ context.Context, events []gapstate.Event) error {
	if err := durable.ValidateStates(events); err != nil {
		return err
	}
	have, err := f.load()
	if err != nil {
		return err
	}
	ids := map[string]bool{}
	for _, e := range have {
		ids[e.ID] = true
	}
	for _, e := range events {
		if !ids[e.ID] {
			ids[e.ID] = true
			have = append(have, e)
		}
	}
	b, err := json.Marshal(have)
	if err != nil {
		return err
	}
	return os.WriteFile(f.path, b, 0o644)
}

func (f *fileStates) States(_ context.Context, filter durable.Filter) ([]gapstate.Event, error) {
	have, err := f.load()
	var out []gapstate.Event
	for _, e := range have {
		if filter.Match(e.Destination) {
			out = append(out, e)
		}
	}
	return out, err
}

// hideStates is a tier whose StateStore, if any, is hidden: one that keeps
// no gap states.
type hideStates struct{ durable.Tier }

// TestStateCommandsRecordWhatTheySay: each command records one event of its
// state, --json prints it, and it is the event the tier returns; the
// plan's tasks never hold a batch in a state, gaps lists it with its
// decision, and a reopen returns it to the plan.
func TestStateCommandsRecordWhatTheySay(t *testing.T) {
	state := t.TempDir()
	mustRun(t, state, "record", "--sink", "raw", "--topic", "orders", "--range", "0:10")
	mustRun(t, state, "record", "--sink", "lake", "--topic", "orders", "--range", "0:2")
	mustRun(t, state, "checkpoint")
	var printed []gapstate.Event
	for _, c := range []struct {
		cmd  string
		st   gapstate.State
		args []string
	}{
		{"refuse", gapstate.Refused, []string{"--sink", "lake", "--range", "2-4", "--reason", "HTTP 400: bad schema"}},
		{"unrecoverable", gapstate.Unrecoverable, []string{"--start", "6", "--end", "8", "--reason", "retention expired", "--by", "retention-job"}},
		{"waive", gapstate.Waived, []string{"--sink", "lake", "--range", "7:9", "--reason", "accepted by the owner"}},
	} {
		out := mustRun(t, state, append([]string{c.cmd, "--topic", "orders", "--partition", "0", "--json"}, c.args...)...)
		var e gapstate.Event
		if err := json.Unmarshal([]byte(out), &e); err != nil {
			t.Fatalf("%s --json printed %q: %v", c.cmd, out, err)
		}
		if e.State != c.st || e.Validate() != nil {
			t.Fatalf("%s recorded %+v", c.cmd, e)
		}
		printed = append(printed, e)
	}
	if printed[1].Sink != "raw" || printed[1].By != "retention-job" || printed[0].By != gapstate.DefaultBy() {
		t.Fatalf("unrecoverable's default sink or --by: %+v, %+v", printed[1], printed[0])
	}
	primary, closer, err := openTier(context.Background(), tier.Settings{State: state}, false)
	if err != nil {
		t.Fatal(err)
	}
	store, err := durable.StatesOf(primary)
	if err != nil {
		t.Fatal(err)
	}
	stored, err := store.States(context.Background(), durable.Filter{})
	_ = closer.Close()
	if err != nil || len(stored) != len(printed) {
		t.Fatalf("stored %+v, %v; printed %d events", stored, err, len(printed))
	}
	for _, e := range printed {
		found := false
		for _, s := range stored {
			found = found || (s.ID == e.ID && s.Destination == e.Destination && s.Range == e.Range && s.State == e.State && s.Reason == e.Reason && s.By == e.By && s.At.Equal(e.At))
		}
		if !found {
			t.Fatalf("printed %+v, not among the stored %+v", e, stored)
		}
	}
	// lake lacks [2,10): refused [2,4), replay [4,6), unrecoverable by raw
	// [6,7), waived [7,9) (latest), replay [9,10).
	var gaps []recovery.Gap
	if err := json.Unmarshal([]byte(mustRun(t, state, "gaps", "--all", "--json")), &gaps); err != nil {
		t.Fatal(err)
	}
	want := "2-4 refused,4-6 replay,6-7 unrecoverable,7-9 waived,9-10 replay"
	if got := gapsText(gaps); got != want {
		t.Fatalf("gaps --all: %s, want %s", got, want)
	}
	var tasks []recovery.Gap
	if err := json.Unmarshal([]byte(mustRun(t, state, "plan", "--json")), &tasks); err != nil {
		t.Fatal(err)
	}
	if got := gapsText(tasks); got != "4-6 replay,9-10 replay" {
		t.Fatalf("plan: %s", got)
	}
	mustRun(t, state, "reopen", "--sink", "lake", "--topic", "orders", "--partition", "0", "--range", "0-10", "--reason", "fixed")
	if err := json.Unmarshal([]byte(mustRun(t, state, "plan", "--json")), &tasks); err != nil {
		t.Fatal(err)
	}
	if got := gapsText(tasks); got != "2-10 replay" {
		t.Fatalf("plan after reopening the whole partition: %s", got)
	}
}

func gapsText(gaps []recovery.Gap) string {
	var parts []string
	for _, g := range gaps {
		if g.Kind.Held() != (g.Decision != nil) {
			parts = append(parts, "decision?")
		}
		parts = append(parts, fmt.Sprintf("%d-%d %s", g.Start, g.End, g.Kind))
	}
	return strings.Join(parts, ",")
}

// TestStateCommandsRefuseBadInput: no reason, no range, a range twice, a
// bad state text: exit 2, nothing recorded; a tier without gap states:
// exit 1 saying so.
func TestStateCommandsRefuseBadInput(t *testing.T) {
	state := t.TempDir()
	base := []string{"--sink", "lake", "--topic", "orders", "--partition", "0"}
	for _, args := range [][]string{
		{"refuse", "--range", "1-2"},
		{"waive", "--range", "1-2", "--reason", "  "},
		{"reopen", "--reason", "x"},
		{"refuse", "--range", "1-2", "--start", "1", "--end", "2", "--reason", "x"},
		{"refuse", "--range", "2-1", "--reason", "x"},
		{"refuse", "--range", "1-x", "--reason", "x"},
		{"refuse", "--range", "1-2", "--reason", "x", "--by", "a\x1b[2Jb"},
		{"refuse", "--range", "1-2", "--reason", "a\x1b[31m"},
	} {
		_, _, err := runCLI(t, state, append(args, base...)...)
		if exitCode(err) != 2 {
			t.Errorf("%q: exit %d (%v), want 2", args, exitCode(err), err)
		}
		if err != nil && strings.ContainsAny(err.Error(), "\x1b") {
			t.Errorf("%q: the message prints a control character: %q", args, err.Error())
		}
	}
	if _, err := os.Stat(filepath.Join(state, "gap-states-test.json")); err == nil {
		t.Fatal("a refused command line recorded something")
	}
	_, _, err := runCLI(t, state, "refuse", "--topic", "orders", "--partition", "0", "--range", "1-2", "--reason", "x")
	if exitCode(err) != 2 || !strings.Contains(err.Error(), "--sink is required") {
		t.Errorf("refuse without --sink: %v", err)
	}

	saved := openTier
	t.Cleanup(func() { openTier = saved })
	openTier = func(ctx context.Context, s tier.Settings, writing bool) (durable.Tier, io.Closer, error) {
		tr, c, err := tier.Open(ctx, s, writing)
		return hideStates{tr}, c, err
	}
	_, _, err = runCLI(t, state, append([]string{"refuse", "--range", "1-2", "--reason", "x"}, base...)...)
	if exitCode(err) != 1 || !errors.Is(err, durable.ErrNoStates) {
		t.Fatalf("refuse on a tier without gap states: exit %d, %v", exitCode(err), err)
	}
}
