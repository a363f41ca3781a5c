package doctest

import (
	"strings"
	"testing"
)

// TestParseRefusesFencesItWouldNotSee: a fence Markdown renders as code
// but Parse would skip (indented by one to three spaces, as in a list
// item, or opened with tildes) is an error, so that a command block cannot
// join a page without the doc test running it.
func TestParseRefusesFencesItWouldNotSee(t *testing.T) {
	for _, page := range []string{
		"text\n\n   ```sh\n   covmirror nosuch\n   ```\n",
		" ```sh\ncovmirror nosuch\n```\n",
		"~~~sh\ncovmirror nosuch\n~~~\n",
		"  ~~~\ncovmirror nosuch\n  ~~~\n",
	} {
		blocks, err := Parse("page.md", page)
		if err == nil {
			t.Errorf("%q: %d blocks and no error, want the fence refused", page, len(blocks))
		} else if !strings.Contains(err.Error(), "page.md:") {
			t.Errorf("%q: %v, want the page and line named", page, err)
		}
	}
	// Inside a block, such lines are its text.
	blocks, err := Parse("page.md", "```text\n ```sh\n~~~\n```\n")
	if err != nil || len(blocks) != 1 || blocks[0].Text != " ```sh\n~~~\n" {
		t.Errorf("fence-like lines inside a block: %+v, %v", blocks, err)
	}
}
