package coverage

import (
	"errors"
	"strings"
	"testing"
)

// TestParseExtentsIsAsStrictAsRecords: the record API refuses a field given
// twice, a field in another case and a string that is not UTF-8 (rules
// duplicate-field, unknown-field, invalid-utf8), so one body has one
// meaning. ParseExtents is documented as strict ("no other field") but
// takes all three: a second "end" silently replaces the first (here a
// lower one, which hides the stretch above it), "End" is read as "end",
// and a topic's invalid bytes become U+FFFD, another topic.
func TestParseExtentsIsAsStrictAsRecords(t *testing.T) {
	for _, body := range []string{
		`[{"topic":"orders","partition":0,"end":40,"end":30}]`,
		`[{"topic":"orders","partition":0,"End":30}]`,
		"[{\"topic\":\"ord\xffers\",\"partition\":0,\"end\":30}]",
	} {
		es, err := ParseExtents(strings.NewReader(body))
		if !errors.Is(err, ErrInvalidExtent) {
			t.Errorf("%q: %+v, %v; want ErrInvalidExtent", body, es, err)
		}
	}
}
