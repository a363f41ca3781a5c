package coverage

import (
	"fmt"
	"strings"
	"testing"
)

// TestNamesQuotesAndBounds: each name prints quoted, a comma, a space or a
// forged line break inside one escaped or inside its quotes, and a long
// list prints its first MaxNamesShown names and how many more.
func TestNamesQuotesAndBounds(t *testing.T) {
	if got, want := Names([]string{"lake", "a, b", "x\ny"}), `"lake", "a, b", "x\ny"`; got != want {
		t.Errorf("Names = %s; want %s", got, want)
	}
	if got := Names(nil); got != "none" {
		t.Errorf("Names(nil) = %q", got)
	}
	var many []string
	for i := range MaxNamesShown + 5 {
		many = append(many, fmt.Sprintf("s%d", i))
	}
	got := Names(many)
	if strings.Contains(got, `"s20"`) || !strings.Contains(got, `"s19"`) || !strings.HasSuffix(got, " and 5 more") {
		t.Errorf("Names of %d = %s", len(many), got)
	}
}
