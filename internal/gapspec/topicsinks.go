package gapspec

import (
	"strings"

	"github.com/covmirror/covmirror/coverage"
)

// parseTopicSinks reads topic-sinks=(T=A,B;U=): datadriven splits the
// value at its commas, so it is joined again and split at the semicolons
// between topics, each entry coverage.AddTopicSinks'.
func parseTopicSinks(vals []string) (map[string][]string, error) {
	out := map[string][]string{}
	for _, entry := range strings.Split(strings.Join(vals, ","), ";") {
		if err := coverage.AddTopicSinks(out, entry); err != nil {
			return nil, err
		}
	}
	return out, nil
}
