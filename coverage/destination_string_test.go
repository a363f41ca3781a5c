package coverage

import (
	"strconv"
	"testing"
	"unicode"
)

// TestDestinationStringQuotesWhatATerminalActsOn: a topic name may hold
// any UTF-8 but NUL, so a C1 control (U+009B is a terminal's CSI), a line
// or paragraph separator, a bidi override or a zero-width character is a
// valid topic; String quotes such a name, so that it prints escaped and
// reads back as its exact bytes. Plain names, non-ASCII letters included,
// print as they are.
func TestDestinationStringQuotesWhatATerminalActsOn(t *testing.T) {
	for _, topic := range []string{"a\u0085b", "a\u009b2Jb", "a\u2028b", "a\u2029b", "a\u202eb", "a\u200bb", "a\u00a0b", "a\ufeffb", "a\u061cb"} {
		d := Destination{Sink: "lake", Topic: topic, Partition: 3}
		if err := d.Validate(); err != nil {
			t.Fatalf("topic %q: %v", topic, err)
		}
		s := d.String()
		for _, c := range s {
			if !unicode.IsPrint(c) {
				t.Errorf("topic %q prints as %q: %U as itself", topic, s, c)
				break
			}
		}
		if want := "lake/" + strconv.Quote(topic) + "/3"; s != want {
			t.Errorf("topic %q prints as %q; want %q", topic, s, want)
		}
	}
	for _, topic := range []string{"orders", "café", "注文", "a-b_c.d"} {
		if s, want := (Destination{Sink: "lake", Topic: topic}).String(), "lake/"+topic+"/0"; s != want {
			t.Errorf("topic %q prints as %q; want %q", topic, s, want)
		}
	}
}
