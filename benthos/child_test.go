package benthos_test

import (
	"strings"
	"testing"
)

// TestChildAckingWhatTheSinkLacksIsRefused: a child that acknowledges a
// message its sink does not hold (a fallback whose dead-letter output
// took it, drop_on, a switch dropping what no case matches) would make
// coverage claim the sink holds it; the output refuses it, nested in a
// broker too, and accepts a strict switch and one with a catch-all case.
func TestChildAckingWhatTheSinkLacksIsRefused(t *testing.T) {
	lake := newSinkServer(t, func(id uint64, _ int) bool { return id%3 == 0 })
	dlq := newSinkServer(t, nil)
	sw := func(strict bool, checks ...string) obj {
		var cases []obj
		for _, c := range checks {
			cases = append(cases, obj{"check": c, "output": httpOutput(lake)})
		}
		return obj{"switch": obj{"strict_mode": strict, "cases": cases}}
	}
	for _, c := range []struct {
		name, want string
		child      obj
	}{
		{"fallback", "fallback", obj{"fallback": []obj{httpOutput(lake), httpOutput(dlq)}}},
		{"drop_on", "drop_on", obj{"drop_on": obj{"error": true, "output": httpOutput(lake)}}},
		{"switch", "strict_mode", sw(false, "this.id % 3 == 1", "this.id % 3 == 2")},
		{"nested", "output.broker.outputs.1: a fallback", obj{"broker": obj{"pattern": "fan_out", "outputs": []obj{
			httpOutput(lake), {"fallback": []obj{httpOutput(lake), httpOutput(dlq)}}}}}},
		{"strict switch", "", sw(true, "this.id % 3 == 1", "this.id % 3 == 2")},
		{"catch-all switch", "", sw(false, "this.id % 3 == 1", "")},
	} {
		t.Run(c.name, func(t *testing.T) {
			state := t.TempDir()
			err := runErr(t, stream(t, generate(30, 5), fanOut(
				covmirrorOutput("raw", true, state, obj{"drop": obj{}}),
				covmirrorOutput("lake", false, state, c.child))))
			if c.want != "" {
				if err == nil || !strings.Contains(err.Error(), c.want) {
					t.Fatalf("a %s child: err %v, want a config error naming %q", c.name, err, c.want)
				}
				return
			}
			if err != nil {
				t.Fatalf("a %s child: %v", c.name, err)
			}
			if got := committed(t, state)["lake"]; !subset(got, lake.ids()) {
				t.Fatalf("a %s child: coverage %s, but lake holds %s", c.name, short(got), short(lake.ids()))
			}
		})
	}
}

// TestRawWithoutReferenceIsRefused: an output of sink raw that is not the
// reference would acknowledge a failed write to raw, so the source would
// move on before raw holds the message: a config error.
func TestRawWithoutReferenceIsRefused(t *testing.T) {
	raw := newSinkServer(t, func(uint64, int) bool { return true })
	err := runErr(t, stream(t, generate(3, 1), covmirrorOutput("raw", false, t.TempDir(), httpOutput(raw))))
	if err == nil || !strings.Contains(err.Error(), "reference: true") {
		t.Fatalf("sink raw without reference: err %v, want a config error asking for reference: true", err)
	}
}
