package demo_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/covmirror/covmirror/internal/demo"
	"github.com/covmirror/covmirror/tier"
)

// TestRunWithoutDuckDB: the demo runs on its own, the gaps computed in Go
// when no DuckDB query is given, and ends with its verdict.
func TestRunWithoutDuckDB(t *testing.T) {
	var out bytes.Buffer
	err := demo.Run(context.Background(), demo.Options{Seed: 3, Batches: demo.MinBatches, Tier: tier.Settings{State: t.TempDir()}, Out: &out})
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	for _, want := range []string{"computed in Go rather than by DuckDB", "Verdict, checked against the simulated stores' own contents", "Next, each runs as printed", "  covmirror --state "} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the story lacks %q:\n%s", want, out.String())
		}
	}
}
