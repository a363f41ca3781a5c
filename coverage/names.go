package coverage

import (
	"strconv"
	"strings"
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
