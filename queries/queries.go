package queries

import (
	"embed"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/covmirror/covmirror/compaction"
	"github.com/covmirror/covmirror/coverage"
)

//go:embed sql/*.sql
var files embed.FS

// ErrUnknownQuery: no canned query has that name; Names lists them.
var ErrUnknownQuery = errors.New("unknown query")

// DefaultSmallFileBytes is the files query's small-file threshold when
// Params.SmallFileBytes is zero: compaction's, so that the query counts the
// files a compaction would rewrite.
const DefaultSmallFileBytes = compaction.DefaultSmallFileSize

// Names lists the canned queries, sorted.
func Names() []string {
	entries, _ := files.ReadDir("sql")
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		names = append(names, strings.TrimSuffix(e.Name(), ".sql"))
	}
	slices.Sort(names)
	return names
}

// Text is the SQL of the named query, as embedded.
func Text(name string) (string, error) {
	b, err := files.ReadFile("sql/" + name + ".sql")
	if err != nil {
		return "", fmt.Errorf("%w %q: the queries are %s", ErrUnknownQuery, name, strings.Join(Names(), ", "))
	}
	return string(b), nil
}

// Params are a query's parameters. Zero values: Reference is
// coverage.RawSink, SmallFileBytes is DefaultSmallFileBytes, an empty Sink
// or Topic or a nil Partition matches everything, and no Extents are known.
type Params struct {
	Reference      string
	Sink           string
	Topic          string
	Partition      *int32
	SmallFileBytes int64
	// Extents are the source's acked extents, at most one per (topic,
	// partition) (coverage.ValidateExtents): the reference's holes are
	// looked for over each as well, so a lost first or last stretch of a
	// partition is a hole of the reference. They are bound as the
	// acked_extents relation, not as a $name parameter.
	Extents []coverage.Extent
}

// values maps each parameter name to its bound value; nil binds NULL.
func (p Params) values() map[string]any {
	v := map[string]any{"reference": p.Reference, "sink": nil, "topic": nil, "partition": nil, "small_file_bytes": p.SmallFileBytes}
	if p.Reference == "" {
		v["reference"] = coverage.RawSink
	}
	if p.SmallFileBytes == 0 {
		v["small_file_bytes"] = int64(DefaultSmallFileBytes)
	}
	if p.Sink != "" {
		v["sink"] = p.Sink
	}
	if p.Topic != "" {
		v["topic"] = p.Topic
	}
	if p.Partition != nil {
		v["partition"] = *p.Partition
	}
	return v
}

// paramPattern finds a query's $name parameters outside comments.
var paramPattern = regexp.MustCompile(`\$([a-z_]+)`)

// parameters lists the distinct parameter names sql uses, in order of first use.
func parameters(sql string) []string {
	var names []string
	for _, line := range strings.Split(sql, "\n") {
		if code, _, _ := strings.Cut(line, "--"); code != "" {
			for _, m := range paramPattern.FindAllStringSubmatch(code, -1) {
				if !slices.Contains(names, m[1]) {
					names = append(names, m[1])
				}
			}
		}
	}
	return names
}
