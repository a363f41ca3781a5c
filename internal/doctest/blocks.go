package doctest

import (
	"bufio"
	"fmt"
	"strings"
)

// Block is one fenced block of a Markdown page.
type Block struct {
	Page   string // the page's path, relative to the repository's root
	Line   int    // the opening fence's line, from 1
	Lang   string // the fence's language: sh, go, ini, ... ("" for none)
	Marker string // the `<!-- doctest: ... -->` line before the fence, trimmed to its words
	Text   string // the block's lines, each ending in a newline
}

func (b Block) String() string { return fmt.Sprintf("%s:%d (%s)", b.Page, b.Line, b.Lang) }

const markerPrefix, markerSuffix = "<!-- doctest:", "-->"

// Parse returns the fenced blocks of a Markdown page. A fence opens with
// ``` at the start of a line and closes at the next line that is ``` alone;
// an unclosed fence is an error, as is a marker followed by no fence.
func Parse(page, text string) ([]Block, error) {
	var blocks []Block
	var open *Block
	marker, markerLine := "", 0
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case open != nil && strings.TrimSpace(line) == "```":
			blocks = append(blocks, *open)
			open = nil
		case open != nil:
			open.Text += line + "\n"
		case hiddenFence(line):
			return nil, fmt.Errorf("%s:%d: a fence opens with ``` at the line's start: an indented or ~~~ fence is code Markdown shows but the doc test would not run", page, n)
		case strings.HasPrefix(line, "```"):
			open = &Block{Page: page, Line: n, Lang: strings.TrimSpace(strings.TrimPrefix(line, "```")), Marker: marker}
			marker = ""
		case strings.HasPrefix(line, markerPrefix):
			if marker != "" {
				return nil, fmt.Errorf("%s:%d: a doctest marker with no fence after it", page, markerLine)
			}
			if !strings.HasSuffix(line, markerSuffix) {
				return nil, fmt.Errorf("%s:%d: a doctest marker is one line, ending in %s", page, n, markerSuffix)
			}
			marker = strings.TrimSpace(strings.TrimSuffix(strings.TrimPrefix(line, markerPrefix), markerSuffix))
			markerLine = n
		case marker != "":
			return nil, fmt.Errorf("%s:%d: a doctest marker must be on the line before its fence", page, markerLine)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if open != nil {
		return nil, fmt.Errorf("%s:%d: a fence that never closes", page, open.Line)
	}
	if marker != "" {
		return nil, fmt.Errorf("%s:%d: a doctest marker with no fence after it", page, markerLine)
	}
	return blocks, nil
}

// hiddenFence reports whether line opens a fence Markdown renders (up to
// three spaces of indent, ``` or ~~~) that Parse's ``` at the line's start
// would not see.
func hiddenFence(line string) bool {
	trimmed := strings.TrimLeft(line, " ")
	if len(line)-len(trimmed) > 3 {
		return false
	}
	return strings.HasPrefix(trimmed, "~~~") || (trimmed != line && strings.HasPrefix(trimmed, "```"))
}

// Commands returns a command block's commands: its lines with a trailing
// backslash joined to the next, blank lines and whole-line comments left
// out, and a trailing "  # comment" cut (a comment starts after two
// spaces, so a # inside a command stays).
func Commands(text string) []string {
	var cmds []string
	cur := ""
	for line := range strings.Lines(text) {
		line = strings.TrimRight(line, "\n")
		if i := strings.Index(line, "   #"); i >= 0 {
			line = line[:i]
		} else if i := strings.Index(line, "  #"); i >= 0 {
			line = line[:i]
		}
		line = strings.TrimSpace(line)
		if cont, ok := strings.CutSuffix(line, `\`); ok {
			cur += strings.TrimSpace(cont) + " "
			continue
		}
		cur += line
		if c := strings.TrimSpace(cur); c != "" && !strings.HasPrefix(c, "#") {
			cmds = append(cmds, c)
		}
		cur = ""
	}
	return cmds
}
