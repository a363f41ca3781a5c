package benthos_test

import (
	"slices"
	"sync"
	"testing"
)

// TestSinksWrittenOnlyOnceRawHoldsIt: the planner takes raw to hold every
// batch a sink holds (a sink is written only once raw is durable). Under
// the documented layout, fan_out_sequential with raw first and the sinks
// in a fan_out after it, lake is never written a message raw does not
// hold yet, though raw refuses each message once; under a plain fan_out
// it is (the layout the docs no longer give).
func TestSinksWrittenOnlyOnceRawHoldsIt(t *testing.T) {
	for _, c := range []struct {
		name   string
		layout func(raw, lake obj) obj
		ahead  bool
	}{
		{"fan_out", func(raw, lake obj) obj { return fanOut(raw, lake) }, true},
		{"raw first", func(raw, lake obj) obj {
			return obj{"broker": obj{"pattern": "fan_out_sequential", "outputs": []obj{raw, fanOut(lake)}}}
		}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			raw := newSinkServer(t, func(_ uint64, attempt int) bool { return attempt == 1 })
			var mu sync.Mutex
			var ahead []uint64
			lake := newSinkServer(t, func(id uint64, _ int) bool {
				if _, ok := slices.BinarySearch(raw.ids(), id); !ok {
					mu.Lock()
					ahead = append(ahead, id)
					mu.Unlock()
				}
				return false
			})
			state := t.TempDir()
			run(t, stream(t, generate(10, 5), c.layout(
				covmirrorOutput("raw", true, state, httpOutput(raw)),
				covmirrorOutput("lake", false, state, httpOutput(lake)))))
			if got := len(ahead) > 0; got != c.ahead {
				t.Fatalf("%s: lake written before raw held %v (want ahead: %v)", c.name, ahead, c.ahead)
			}
			if got := committed(t, state); !slices.Equal(got["raw"], upTo(10)) || !slices.Equal(got["lake"], upTo(10)) {
				t.Fatalf("%s: coverage %v", c.name, got)
			}
		})
	}
}
