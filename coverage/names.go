package coverage

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxNamesShown bounds how many names Names prints: the names are the
// callers', and a message must not grow with them.
const MaxNamesShown = 20

// Names is a list of sink (or topic) names for a message: each quoted
// (strconv.Quote), so that a space, a comma or a character a terminal acts
// on cannot make one name read as two or forge a line, comma-separated,
// the first MaxNamesShown of them and how many more; "none" for none.
func Names(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	shown := names[:min(len(names), MaxNamesShown)]
	q := make([]string, len(shown))
	for i, n := range shown {
		q[i] = strconv.Quote(n)
	}
	s := strings.Join(q, ", ")
	if more := len(names) - len(shown); more > 0 {
		s += " and " + strconv.Itoa(more) + " more"
	}
	return s
}

// ValidName is the one rule every write surface applies to a sink, topic
// or source name it is given (the command line's record and state
// commands, the record API, the Benthos output, the Go and Python
// clients): valid UTF-8 holding no control character, that is no NUL, C0
// or C1 control and no DEL. No broker or sink names anything with one, and
// one printed raw would forge a line of output or act on a terminal.
//
// Reading does not apply it (Destination.Validate is the weaker rule): a
// store written before this rule stays readable, its names printed
// quoted (Destination.String, QuoteName).
func ValidName(what, name string) error {
	if !utf8.ValidString(name) {
		return fmt.Errorf("%w: %s name %q is not valid UTF-8: names are UTF-8 text", ErrInvalidDestination, what, name)
	}
	if i := strings.IndexFunc(name, unicode.IsControl); i >= 0 {
		c, _ := utf8.DecodeRuneInString(name[i:])
		return fmt.Errorf("%w: %s name %q has the control character %U at byte %d: names hold no NUL, C0 or C1 control or DEL", ErrInvalidDestination, what, name, c, i)
	}
	return nil
}

// ValidateNew is ValidateRecord for a range a write surface is given from
// outside: its sink and topic names also pass ValidName.
func ValidateNew(d Destination, r Range) error {
	if err := ValidateRecord(d, r); err != nil {
		return err
	}
	if err := ValidName("sink", d.Sink); err != nil {
		return NewError("record", d, r, err)
	}
	if err := ValidName("topic", d.Topic); err != nil {
		return NewError("record", d, r, err)
	}
	return nil
}

// QuoteName is a name as text output shows it: as it is when every
// character prints as itself, else quoted (strconv.Quote), as
// Destination.String shows a sink or topic.
func QuoteName(s string) string { return quoteIfNeeded(s) }
