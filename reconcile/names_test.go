package reconcile

import (
	"strings"
	"testing"
)

// TestConfigSinkNamesAreExact: a checker entry's sink is its exact bytes
// (" lake" and "lake " are other sinks than "lake", never trimmed into it),
// and a key is one of the known keys exactly.
func TestConfigSinkNamesAreExact(t *testing.T) {
	entries := map[string]string{}
	for _, kv := range []string{" lake.kind=sql", "lake .kind=sql", "lake.kind=sql"} {
		if err := AddConfigEntry(entries, kv); err != nil {
			t.Fatalf("AddConfigEntry(%q): %v", kv, err)
		}
	}
	for _, k := range []string{" lake.kind", "lake .kind", "lake.kind"} {
		if _, ok := entries[k]; !ok {
			t.Fatalf("entry %q missing: the sink was trimmed into another: %q", k, entries)
		}
	}
	if err := AddConfigEntry(map[string]string{}, "lake. kind=sql"); err == nil {
		t.Fatal(`key " kind" was taken as "kind"`)
	}
}

// TestConfigKeysPrintedSafely: a sink name with a terminal's escape or an
// outer space is printed quoted in every configuration error, never raw.
func TestConfigKeysPrintedSafely(t *testing.T) {
	for _, sink := range []string{"a\x1b[2J", " lake", "lake ", "la ke"} {
		for _, kv := range []string{sink + ".kind=nope", sink + ".dsn=x", sink + ".bogus=1"} {
			err := AddConfigEntry(map[string]string{}, kv)
			if err == nil {
				entries := map[string]string{}
				_ = AddConfigEntry(entries, kv)
				_, err = ParseConfig(entries)
			}
			if err == nil {
				t.Errorf("%q accepted", kv)
				continue
			}
			if msg := err.Error(); strings.Contains(msg, "\x1b") || !strings.Contains(msg, `"reconcile.`) {
				t.Errorf("%q: the error does not print the key quoted: %v", kv, err)
			}
		}
	}
}
