package lite

import (
	"bytes"
	"context"
	"flag"
	"strings"
	"testing"

	"github.com/covmirror/covmirror/internal/settings"
	"github.com/covmirror/covmirror/local"
)

// TestRecordIntoAHeldStore: while another process (a serving pod, another
// record) holds the local tier, record fails (exit 1), prints nothing, and
// says what to do for a record: retry, or record through the pod's API.
// The local tier's own advice is inspect's, which records nothing.
func TestRecordIntoAHeldStore(t *testing.T) {
	dir := t.TempDir()
	held, err := local.Open(local.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	var out, errOut bytes.Buffer
	sh := &Shell{Prog: "covmirror-lite", Table: Table(), Stdout: &out, Stderr: &errOut,
		Summary: func(name string) string { return Summaries[name] }}
	sh.Set = settings.New(sh.Table, nil)
	sh.Set.Register(flag.NewFlagSet("g", flag.ContinueOnError), "")
	err = Record(context.Background(), sh, dir, []string{"--sink", "lake", "--topic", "t", "--range", "1:5"})
	if err == nil || ExitCode(err) != 1 || out.Len() > 0 {
		t.Fatalf("record into a held store: %v, printed %q; want exit 1 and nothing printed", err, out.String())
	}
	for _, want := range []string{"nothing was recorded", "retry", "POST /v1/records"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("record into a held store: %q does not say %q", err, want)
		}
	}
}
