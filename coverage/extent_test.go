package coverage

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestParseExtents(t *testing.T) {
	got, err := ParseExtents(strings.NewReader(`[{"topic":"b","partition":1,"end":7},{"topic":"a","partition":0,"start":3,"end":3}]`))
	if err != nil {
		t.Fatal(err)
	}
	want := []Extent{{Topic: "a", Partition: 0, Start: 3, End: 3}, {Topic: "b", Partition: 1, End: 7}}
	if len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	if _, ok := got[0].Range(); ok {
		t.Fatal("an extent with start == end is empty")
	}
	if r, ok := got[1].Range(); !ok || r != (Range{Start: 0, End: 7}) {
		t.Fatalf("range %v %v", r, ok)
	}
}

func TestParseExtentsRefuses(t *testing.T) {
	for _, in := range []string{
		``, `null`, `{}`, `[{}]`,
		`[{"topic":"a","partition":0}]`,                                             // no end
		`[{"partition":0,"end":1}]`,                                                 // no topic
		`[{"topic":"a","end":1}]`,                                                   // no partition
		`[{"topic":"","partition":0,"end":1}]`,                                      // empty topic
		`[{"topic":"a","partition":-1,"end":1}]`,                                    // negative partition
		`[{"topic":"a","partition":0,"start":5,"end":4}]`,                           // inverted
		`[{"topic":"a","partition":0,"end":-1}]`,                                    // negative end
		`[{"topic":"a","partition":0,"end":1.5}]`,                                   // fractional
		`[{"topic":"a","partition":0,"end":9223372036854775808}]`,                   // past MaxBatchEnd
		`[{"topic":"a","partition":0,"end":1,"sink":"raw"}]`,                        // unknown field
		`[{"topic":"a","partition":0,"end":1},{"topic":"a","partition":0,"end":2}]`, // twice
		`[{"topic":"a","partition":0,"end":1}] []`,                                  // trailing data
		`[{"topic":"a\u0000","partition":0,"end":1}]`,                               // NUL in topic
	} {
		got, err := ParseExtents(strings.NewReader(in))
		if !errors.Is(err, ErrInvalidExtent) {
			t.Errorf("ParseExtents(%s) = %v, %v; want ErrInvalidExtent", in, got, err)
		} else if strings.Contains(err.Error(), "struct") || strings.Contains(err.Error(), "coverage.") || strings.Contains(err.Error(), "Go value") {
			// The error is for whoever wrote the JSON: no Go type in it.
			t.Errorf("ParseExtents(%s): %v names a Go type", in, err)
		}
	}
}

// An extent without "start" takes its topic's declared start; an explicit
// one, 0 included, is kept; an end below the declared start is refused.
func TestParseExtentsStarting(t *testing.T) {
	starts := map[string]uint64{"orders": 100}
	got, err := ParseExtentsStarting(strings.NewReader(`[{"topic":"orders","partition":0,"end":150},{"topic":"orders","partition":1,"start":0,"end":5},{"topic":"users","partition":0,"end":7}]`), starts)
	if err != nil {
		t.Fatal(err)
	}
	want := []Extent{{Topic: "orders", Start: 100, End: 150}, {Topic: "orders", Partition: 1, End: 5}, {Topic: "users", End: 7}}
	if !slices.Equal(got, want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	if _, err := ParseExtentsStarting(strings.NewReader(`[{"topic":"orders","partition":0,"end":50}]`), starts); !errors.Is(err, ErrInvalidExtent) {
		t.Fatalf("end 50 below the declared start 100: %v, want ErrInvalidExtent", err)
	}
}
