package gapmetrics

// The test environment: internal/podtest's coverage table behind a catalog
// that can be switched off, and pods checkpointing into it.

import (
	"context"
	"testing"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/internal/podtest"
)

var ctx = context.Background()

func rg(start, end uint64) coverage.Range { return coverage.Range{Start: start, End: end} }

type env = podtest.Env

var errDown = podtest.ErrDown

func newEnv(t *testing.T) *env { t.Helper(); return podtest.New(t) }
