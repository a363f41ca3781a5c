package settings

import (
	"flag"
	"maps"
	"strings"
	"testing"
)

// TestMapSeparator: a Map with a Separator splits its variable there, so
// that its values may hold commas; its usage says so.
func TestMapSeparator(t *testing.T) {
	table := []Setting{{Key: "topic-sinks", Kind: Map, Entry: "TOPIC", Separator: ";", Commands: []string{"serve"}, Usage: "sinks",
		Add: func(m map[string]string, kv string) error {
			k, v, _ := strings.Cut(kv, "=")
			m[k] = v
			return nil
		}}}
	t.Setenv("COVMIRROR_TOPIC_SINKS", "orders=pg,es;clicks=")
	set := New(table, nil)
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	set.Register(fs, "serve")
	if err := Parse(fs, nil, func(string) bool { return true }); err != nil {
		t.Fatal(err)
	}
	if err := set.Err(); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"orders": "pg,es", "clicks": ""}
	if got := set.Map("topic-sinks"); !maps.Equal(got, want) {
		t.Errorf("COVMIRROR_TOPIC_SINKS: %q, want %q", got, want)
	}
	if use := fs.Lookup("topic-sinks").Usage; !strings.Contains(use, "COVMIRROR_TOPIC_SINKS, entries separated by ;") {
		t.Errorf("usage %q does not say the separator", use)
	}
}
