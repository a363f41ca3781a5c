package recovery

// The test environment: internal/podtest's coverage table behind a catalog
// that can be switched off, and pods checkpointing into it.

import (
	"context"
	"testing"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/internal/podtest"
	"github.com/covmirror/covmirror/mirror"
)

var ctx = context.Background()

func rg(start, end uint64) coverage.Range { return coverage.Range{Start: start, End: end} }

type env = podtest.Env

func newEnv(t *testing.T) *env { t.Helper(); return podtest.New(t) }

func record(t *testing.T, m *mirror.Mirror, d coverage.Destination, start, end uint64) {
	t.Helper()
	podtest.Record(t, m, d, start, end)
}

func committed(t *testing.T, e *env, d coverage.Destination) []coverage.Range {
	t.Helper()
	return podtest.Committed(t, e.Table, d)
}

var appendAt = podtest.AppendAt
