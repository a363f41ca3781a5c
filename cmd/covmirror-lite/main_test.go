package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/gapstate"
	"github.com/covmirror/covmirror/internal/lite"
	"github.com/covmirror/covmirror/local"
)

func runLite(args ...string) (stdout, stderr string, code int) {
	var out, errOut bytes.Buffer
	err := run(context.Background(), args, &out, &errOut)
	if err != nil {
		errOut.WriteString(err.Error())
	}
	return out.String(), errOut.String(), lite.ExitCode(err)
}

// TestRecordThenInspect: what record printed is in the local tier after the
// process's store closed, and inspect reads it back, as covmirror does.
func TestRecordThenInspect(t *testing.T) {
	state := t.TempDir()
	for _, r := range []string{"1:5", "5:9", "12:13"} {
		out, errOut, code := runLite("--state", state, "record", "--sink", "lake", "--topic", "orders", "--partition", "3", "--range", r)
		if code != 0 || !strings.HasPrefix(out, "recorded lake/orders/3 ") {
			t.Fatalf("record %s: exit %d, %q %q", r, code, out, errOut)
		}
	}
	out, errOut, code := runLite("--state", state, "inspect", "--json")
	if code != 0 {
		t.Fatalf("inspect: exit %d: %s", code, errOut)
	}
	var diag local.Diagnostics
	if err := json.Unmarshal([]byte(out), &diag); err != nil {
		t.Fatalf("inspect --json printed %q: %v", out, err)
	}
	want := []coverage.Range{{Start: 1, End: 9}, {Start: 12, End: 13}}
	if len(diag.Destinations) != 1 || !equalRanges(diag.Destinations[0].Covered, want) {
		t.Fatalf("inspect after three records: %+v, want lake/orders/3 covering %v", diag.Destinations, want)
	}
}

func equalRanges(a, b []coverage.Range) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestCovmirrorsConfigFile: covmirror-lite takes the state directory from
// covmirror's file, skips covmirror's own keys, and still refuses a key
// neither binary has, naming the line; nothing is recorded then.
func TestCovmirrorsConfigFile(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	conf := "state = " + state + "\nwriter = pod-a\ncatalog.type = sql\nstart.orders = 100\nsinks = raw,lake\n" +
		"reconcile.lake.kind = sql\nmirror-every = 1m\ndurable = iceberg\n"
	path := filepath.Join(dir, "covmirror.conf")
	if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, errOut, code := runLite("--config", path, "record", "--sink", "raw", "--topic", "orders", "--range", "100:101"); code != 0 {
		t.Fatalf("record with covmirror's file: exit %d, %q %q", code, out, errOut)
	}
	if _, err := os.Stat(filepath.Join(state, "local")); err != nil {
		t.Fatalf("the file's state directory was not used: %v", err)
	}
	bad := filepath.Join(dir, "typo.conf")
	other := filepath.Join(dir, "other")
	if err := os.WriteFile(bad, []byte("stat = "+other+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, errOut, code := runLite("--config", bad, "--state", other, "record", "--sink", "raw", "--topic", "orders", "--range", "1:2")
	if code != 2 || !strings.Contains(errOut, "typo.conf:1") || !strings.Contains(errOut, `"stat"`) {
		t.Fatalf("a key neither binary takes: exit %d, %q; want 2 naming the line", code, errOut)
	}
	if _, err := os.Stat(other); err == nil {
		t.Fatal("a refused file still recorded")
	}
}

// TestUsage: mistakes are usage errors (exit 2) that say what to do, a
// command only covmirror runs names covmirror, and --help exits 0.
func TestUsage(t *testing.T) {
	state := t.TempDir()
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{nil, 2, "no command given"},
		{[]string{"gaps"}, 2, "covmirror runs every command"},
		{[]string{"--state", state, "record", "--sink", "lake", "--topic", "t"}, 2, "--range START:END is required"},
		{[]string{"--state", state, "record", "--sink", "lake", "--topic", "t", "--range", "5:5"}, 2, "record"},
		{[]string{"--state", state, "record", "--sink", "lake", "--topic", "t", "--range", "1:2", "--range", "3:4"}, 2, "--range"},
		{[]string{"--writer", "x", "version"}, 2, "covmirror-lite --help lists the flags"},
		{[]string{"--log-level", "loud", "version"}, 2, "loud"},
		{[]string{"record", "--help"}, 0, "usage: covmirror-lite record"},
		{[]string{"--help"}, 0, "commands (covmirror's, in a small binary)"},
		{[]string{"version"}, 0, "covmirror-lite "},
		{[]string{"--version"}, 0, "\ngo:     " + runtime.Version() + "\n"},
		{[]string{"version", "--json"}, 0, `"go_version":"` + runtime.Version() + `"`},
		{[]string{"version", "--yaml"}, 2, "-yaml"},
	} {
		out, errOut, code := runLite(c.args...)
		if code != c.code || !strings.Contains(out+errOut, c.want) {
			t.Errorf("covmirror-lite %q: exit %d, %q %q; want exit %d saying %q", c.args, code, out, errOut, c.code, c.want)
		}
	}
	if d, err := local.Open(local.Options{Dir: lite.LocalDir(state)}); err == nil {
		diag, _ := d.Diagnostics(context.Background())
		_ = d.Close()
		if len(diag.Destinations) != 0 {
			t.Errorf("refused records were recorded: %+v", diag.Destinations)
		}
	}
}

// TestInspectURLToken: inspect --url sends --token-file's token, and an
// unusable token file is refused before anything is sent, without quoting
// the token.
func TestInspectURLToken(t *testing.T) {
	const tok = "0123456789abcdef0123456789abcdef"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+tok {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		_ = json.NewEncoder(w).Encode(local.Diagnostics{Dir: "pod", PendingBatches: 7})
	}))
	defer srv.Close()
	dir := t.TempDir()
	good, loose := filepath.Join(dir, "token"), filepath.Join(dir, "loose")
	if err := os.WriteFile(good, []byte(tok+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(loose, []byte(tok+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(loose, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, errOut, code := runLite("inspect", "--url", srv.URL, "--token-file", good); code != 0 || !strings.Contains(out, "7 batches pending") {
		t.Fatalf("inspect --url with the token: exit %d, %q %q", code, out, errOut)
	}
	if _, errOut, code := runLite("inspect", "--url", srv.URL); code != 1 || !strings.Contains(errOut, "401") {
		t.Fatalf("inspect --url without the token: exit %d, %q; want 1 with the 401", code, errOut)
	}
	out, errOut, code := runLite("inspect", "--url", srv.URL, "--token-file", loose)
	if code != 2 || !strings.Contains(errOut, "chmod 600") || strings.Contains(out+errOut, tok) {
		t.Fatalf("inspect --url with a token file others can read: exit %d, %q %q; want 2, a chmod hint and no token", code, out, errOut)
	}
}

// TestInspectListsStates: gap states the local tier keeps are listed by
// inspect, as text and JSON, pending until shipped, and are no coverage.
func TestInspectListsStates(t *testing.T) {
	state := t.TempDir()
	s, err := local.Open(local.Options{Dir: lite.LocalDir(state)})
	if err != nil {
		t.Fatal(err)
	}
	ev := gapstate.Event{ID: "ev-1", Destination: coverage.Destination{Sink: "lake", Topic: "orders", Partition: 3},
		Range: coverage.Range{Start: 5, End: 9}, State: gapstate.Refused, Reason: "400: bad row", By: "pod-a", At: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	if err := s.RecordStates(context.Background(), []gapstate.Event{ev}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := runLite("--state", state, "inspect")
	if code != 0 || !strings.Contains(out, `state refused lake/orders/3 [5,9) by "pod-a" at 2026-01-02T03:04:05Z (pending): "400: bad row"`) || !strings.Contains(out, "0 destinations") {
		t.Fatalf("inspect: exit %d, %q %q; want the refused state listed, pending, and no destination", code, out, errOut)
	}
	out, errOut, code = runLite("--state", state, "inspect", "--json")
	var diag local.Diagnostics
	if err := json.Unmarshal([]byte(out), &diag); code != 0 || err != nil {
		t.Fatalf("inspect --json: exit %d, %v: %q %q", code, err, out, errOut)
	}
	if len(diag.States) != 1 || diag.States[0].ID != "ev-1" || diag.States[0].Shipped || len(diag.Destinations) != 0 {
		t.Fatalf("inspect --json: states %+v, destinations %+v; want ev-1 pending and no destination", diag.States, diag.Destinations)
	}
}

// TestGlobalFlagsAfterTheCommand: record --state DIR records under DIR, as
// --state DIR record does, and a control character in a name is refused.
func TestGlobalFlagsAfterTheCommand(t *testing.T) {
	state := t.TempDir()
	if out, errOut, code := runLite("record", "--sink", "lake", "--topic", "orders", "--range", "1:3", "--state", state); code != 0 || !strings.HasPrefix(out, "recorded") {
		t.Fatalf("record --state DIR: exit %d %q %q", code, out, errOut)
	}
	if out, errOut, code := runLite("--state", state, "inspect", "--json"); code != 0 || !strings.Contains(out, `"orders"`) {
		t.Fatalf("inspect: exit %d %q %q", code, out, errOut)
	}
	if _, errOut, code := runLite("record", "--sink", "lake", "--topic", "o\nx", "--range", "1:3", "--state", state); code != 2 || !strings.Contains(errOut, "control character") {
		t.Fatalf("record of a control-character topic: exit %d %q", code, errOut)
	}
}
