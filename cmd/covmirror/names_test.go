package main

import (
	"slices"
	"strings"
	"testing"
)

// TestSinkNamesAreExact: --sinks takes each name as its exact bytes: "
// lake" is another sink than "lake", never trimmed into it.
func TestSinkNamesAreExact(t *testing.T) {
	got, err := parseSinks(" lake,search ")
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{" lake", "search "}; !slices.Equal(got, want) {
		t.Fatalf("parseSinks: %q, want %q", got, want)
	}
}

// TestStartAndSourceNamesAreExact: --stream-start TOPIC=N and --source
// NAME=REGIME take the name as its exact bytes (" orders" is another topic
// than "orders"), and every message quotes it, so that a control
// character prints as an escape.
func TestStartAndSourceNamesAreExact(t *testing.T) {
	starts := map[string]string{}
	for _, kv := range []string{" orders=5", "orders =6", "orders=7", "оrders=8"} { // the last with a Cyrillic о
		if err := addStart(starts, kv); err != nil {
			t.Fatalf("addStart(%q): %v", kv, err)
		}
	}
	if len(starts) != 4 || starts[" orders"] != "5" || starts["orders "] != "6" || starts["orders"] != "7" {
		t.Fatalf("addStart merged or trimmed names: %q", starts)
	}
	sources := map[string]string{}
	for _, kv := range []string{" files=stored", "files =stored", "files=broker-managed"} {
		if err := addSource(sources, kv); err != nil {
			t.Fatalf("addSource(%q): %v", kv, err)
		}
	}
	if len(sources) != 3 || sources[" files"] != "stored" || sources["files"] != "broker-managed" {
		t.Fatalf("addSource merged or trimmed names: %q", sources)
	}
	const evil = "a\x1b[2J\nb"
	for _, err := range []error{
		addStart(map[string]string{evil: "1"}, evil+"=1"),
		addStart(map[string]string{}, evil+"=x"),
		addSource(map[string]string{evil: "stored"}, evil+"=stored"),
		addSource(map[string]string{}, evil+"=bogus"),
	} {
		if err == nil {
			t.Fatalf("no error for a name %q given twice or a bad value", evil)
		}
		if strings.ContainsAny(err.Error(), "\x1b\n") {
			t.Errorf("a message prints a name unquoted: %q", err.Error())
		}
	}
}

// TestListeningFlagsReadOneForm: serve --addr and --metrics-listen and
// reconcile --metrics-addr refuse a value that is not PORT, :PORT or
// HOST:PORT as a usage error naming the forms.
func TestListeningFlagsReadOneForm(t *testing.T) {
	for _, args := range [][]string{
		{"serve", "--addr", "localhost"},
		{"serve", "--metrics-listen", "9091x"},
		{"reconcile", "--checker", "s.kind=http", "--checker", "s.url=http://127.0.0.1:1/x", "--every", "1h", "--metrics-addr", "host:"},
	} {
		_, _, err := runCLI(t, t.TempDir(), args...)
		if exitCode(err) != 2 || !strings.Contains(err.Error(), ":PORT (every interface)") {
			t.Errorf("%q: exit %d %v; want 2 naming the forms", args, exitCode(err), err)
		}
	}
}
