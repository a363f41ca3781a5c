package reconcile

import "testing"

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
