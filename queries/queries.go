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

// The canned queries, and under sql/parts/ the CTEs several of them share,
// each written once and expanded where a query says {{name}}.
//
//go:embed sql/*.sql sql/parts/*.sql
var files embed.FS

// parts are the shared CTEs, in expansion order: a part may name the
// parts after it.
var parts = []string{"held", "gap_ctes", "selected", "sinks", "span"}

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
		if !e.IsDir() { // parts/ holds fragments, not queries
			names = append(names, strings.TrimSuffix(e.Name(), ".sql"))
		}
	}
	slices.Sort(names)
	return names
}

// Text is the SQL of the named query, as embedded, with the shared CTEs
// expanded: the text DuckDB runs.
func Text(name string) (string, error) {
	b, err := files.ReadFile("sql/" + name + ".sql")
	if err != nil || strings.Contains(name, "/") {
		return "", fmt.Errorf("%w %q: the queries are %s", ErrUnknownQuery, name, strings.Join(Names(), ", "))
	}
	text := string(b)
	for _, part := range parts {
		cte, err := files.ReadFile("sql/parts/" + part + ".sql")
		if err != nil {
			return "", fmt.Errorf("queries: the shared CTEs %s are not embedded: %w", part, err)
		}
		text = strings.ReplaceAll(text, "{{"+part+"}}", strings.TrimSpace(stripComments(string(cte))))
	}
	return text, nil
}

// stripComments drops a part's leading comment lines, which describe it
// where it is kept, not where it is expanded.
func stripComments(text string) string {
	lines := strings.Split(text, "\n")
	for len(lines) > 0 && strings.HasPrefix(lines[0], "--") {
		lines = lines[1:]
	}
	return strings.Join(lines, "\n")
}

// Params are a query's parameters. Zero values: Reference is
// coverage.RawSink, SmallFileBytes is DefaultSmallFileBytes, an empty Sink
// or Topic or a nil Partition matches everything, and no Extents or Sinks
// are known.
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
	// Sinks are sinks every topic is written to, as
	// recovery.PlanOptions.Sinks: besides the sinks with rows of a topic,
	// each lacks the reference's ranges of every topic it has no rows of.
	// They select nothing (Sink does), and are bound as the named_sinks
	// relation. Zero value: only the sinks with rows.
	Sinks []string
	// TopicSinks are the named sinks per topic, in place of Sinks for its
	// keys (coverage.SinksFor: an empty list names none for its topic),
	// bound as named_sinks rows with their topic. Zero value: Sinks for
	// every topic.
	TopicSinks map[string][]string
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
