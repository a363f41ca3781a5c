package coverage

import (
	"errors"
	"strconv"
	"strings"
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

// TestValidName: the write surfaces' rule refuses NUL, C0 and C1
// controls, DEL and invalid UTF-8, and takes any other UTF-8.
func TestValidName(t *testing.T) {
	for _, bad := range []string{"a\x00b", "t\nforged", "\x1b[2J", "a\x7f", "a\u0085", "a\u009b2J", "\xff"} {
		err := ValidName("topic", bad)
		if !errors.Is(err, ErrInvalidDestination) {
			t.Errorf("ValidName(%q) = %v, want ErrInvalidDestination", bad, err)
		} else if strings.ContainsAny(err.Error(), "\x00\n\x1b\x7f\u0085\u009b") {
			t.Errorf("ValidName(%q) prints the name raw: %q", bad, err)
		}
		d := Destination{Sink: "lake", Topic: bad}
		if bad != "\xff" && bad != "a\x00b" && d.Validate() != nil {
			t.Errorf("Destination.Validate refuses %q: a store holding it would not read", bad)
		}
		if ValidateNew(d, Range{Start: 1, End: 2}) == nil {
			t.Errorf("ValidateNew takes topic %q", bad)
		}
		if ValidateNew(Destination{Sink: bad, Topic: "t"}, Range{Start: 1, End: 2}) == nil {
			t.Errorf("ValidateNew takes sink %q", bad)
		}
	}
	for _, good := range []string{"orders", "ordres é", "a/b", "\u202eevil", "日本"} {
		if err := ValidateNew(Destination{Sink: "lake", Topic: good}, Range{Start: 1, End: 2}); err != nil {
			t.Errorf("ValidateNew refuses topic %q: %v", good, err)
		}
	}
}
